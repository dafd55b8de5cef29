"""Every model call goes to SQL: prompt, response, tool calls, tokens, latency.

:class:`RecordingModel` wraps any :class:`~memstrata.agent.llm.LLMClient` (the
real client or a scripted one) and writes one row per ``chat`` call to
``agent_llm_calls``, tagged with the user, task, turn and purpose. Rows carry
``user_id``, so :meth:`MemoryManager.forget_user` erases them with the rest of
the user's data. The prompt is stored in full with its SHA-256, so identical
prompts (a replay, a retry) can be found by hash.

The table is created by migration 0003 and declared in :mod:`._tables`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select

from memstrata.clock import Clock, from_epoch, to_epoch
from memstrata.errors import LLMError
from memstrata.memory._db import Database
from memstrata.memory._validate import check_user

from ._tables import llm_calls
from .llm import ChatResult, LLMClient, Message

__all__ = ["CallRow", "RecordingModel", "list_calls", "llm_calls"]

@dataclass(frozen=True, slots=True)
class CallRow:
    """One recorded model call."""

    id: int
    user_id: str
    task_id: str | None
    turn: int | None
    purpose: str
    model: str
    prompt_hash: str
    messages: list[dict[str, Any]]
    tools: list[str]
    response: dict[str, Any] | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    attempts: int
    at: Any


def prompt_hash(messages: Sequence[Message], tools: Sequence[str]) -> str:
    doc = json.dumps({"m": [dict(m) for m in messages], "t": list(tools)},
                     sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(doc.encode()).hexdigest()[:57]


class RecordingModel:
    """An :class:`LLMClient` that records every call of the wrapped client.

    ``bind`` sets who and what the next calls belong to; the agent calls it
    before each model call, so the row links to the task step that used it.
    """

    def __init__(self, inner: LLMClient, *, db: Database, clock: Clock) -> None:
        self.inner = inner
        self._db = db
        self._clock = clock

    @property
    def model(self) -> str:
        return self.inner.model

    def chat_for(
        self,
        messages: Sequence[Message],
        *,
        user_id: str,
        task_id: str | None,
        turn: int | None,
        purpose: str,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> ChatResult:
        """Call the model and record the call (also when it fails)."""
        names = [str(t.get("function", {}).get("name", "")) for t in tools or ()]
        started = time.perf_counter()
        try:
            result = self.inner.chat(messages, tools=tools)
        except LLMError as exc:
            self._write(user_id, task_id, turn, purpose, messages, names, None, str(exc),
                        (time.perf_counter() - started) * 1000, 1)
            raise
        self._write(user_id, task_id, turn, purpose, messages, names, result, None,
                    (time.perf_counter() - started) * 1000, result.attempts)
        return result

    def _write(
        self, user_id: str, task_id: str | None, turn: int | None, purpose: str,
        messages: Sequence[Message], tools: list[str], result: ChatResult | None,
        error: str | None, latency_ms: float, attempts: int,
    ) -> None:
        msgs = json.loads(json.dumps([dict(m) for m in messages], default=str))
        response = None
        if result is not None:
            response = {
                "content": result.content,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments}
                    for c in result.tool_calls
                ],
                "finish_reason": result.finish_reason,
                "model": result.model,
            }
        with self._db.write() as conn:
            conn.execute(
                insert(llm_calls).values(
                    user_id=user_id,
                    task_id=task_id,
                    turn=turn,
                    purpose=purpose,
                    model=self.inner.model,
                    prompt_hash=prompt_hash(messages, tools),
                    messages=msgs,
                    tools=tools,
                    response=response,
                    error=error,
                    prompt_tokens=result.usage.prompt_tokens if result else 0,
                    completion_tokens=result.usage.completion_tokens if result else 0,
                    latency_ms=float(result.latency_ms if result and result.latency_ms
                                     else latency_ms),
                    attempts=attempts,
                    at=to_epoch(self._clock.now()),
                )
            )


def list_calls(db: Database, user_id: str, task_id: str | None = None) -> list[CallRow]:
    """The recorded model calls of a user (optionally of one task), oldest first."""
    user_id = check_user(user_id)
    query = select(llm_calls).where(llm_calls.c.user_id == user_id)
    if task_id is not None:
        query = query.where(llm_calls.c.task_id == task_id)
    with db.read() as conn:
        rows = conn.execute(query.order_by(llm_calls.c.id)).all()
    return [
        CallRow(
            id=r.id, user_id=r.user_id, task_id=r.task_id, turn=r.turn, purpose=r.purpose,
            model=r.model, prompt_hash=r.prompt_hash, messages=list(r.messages),
            tools=list(r.tools), response=None if r.response is None else dict(r.response),
            error=r.error, prompt_tokens=r.prompt_tokens,
            completion_tokens=r.completion_tokens, latency_ms=r.latency_ms,
            attempts=r.attempts, at=from_epoch(r.at),
        )
        for r in rows
    ]
