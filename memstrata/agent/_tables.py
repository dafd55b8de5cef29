"""SQL tables of the agent kernel, declared on the shared ``metadata``.

Created by migration 0003 (``memory/migrations/0003_agent_llm_calls.*.sql``).
Every table carries ``user_id``; :func:`memstrata.memory._erase.user_tables`
imports this module, so ``forget_user`` erases these rows even in a process
that never imported the agent.
"""

from __future__ import annotations

from sqlalchemy import Column, Float, Index, Integer, String, Table, Text

from memstrata._sql import USER, JSONType, metadata

__all__ = ["llm_calls"]

llm_calls = Table(
    "agent_llm_calls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", USER, nullable=False),
    Column("task_id", String(64)),
    Column("turn", Integer),
    Column("purpose", String(32), nullable=False),
    Column("model", String(200), nullable=False),
    #: sha256 of the canonical JSON of messages + tool names
    Column("prompt_hash", String(64), nullable=False),
    Column("messages", JSONType, nullable=False),
    Column("tools", JSONType, nullable=False),
    Column("response", JSONType),
    Column("error", Text),
    Column("prompt_tokens", Integer, nullable=False),
    Column("completion_tokens", Integer, nullable=False),
    Column("latency_ms", Float, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("at", Float, nullable=False),
    Index("ix_agent_llm_calls_user_task", "user_id", "task_id", "id"),
)
