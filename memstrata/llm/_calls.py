"""Every model call goes to SQL: prompt, response, tool calls, tokens, latency.

:class:`RecordingModel` wraps any :class:`~memstrata.llm.LLMClient` (the real
client or a scripted one) and writes one row per call to ``agent_llm_calls``,
tagged with the user it was made for and, for the agent, the task, turn and
purpose. The agent and the consolidation jobs both log through it. Rows carry
``user_id``, so ``MemoryManager.forget_user`` erases them with the rest of the
user's data, and ``forget`` deletes the calls that quote a forgotten memory
(:mod:`memstrata.llm._erasure`, registered in the ``memstrata.erasers`` group, so a
process that never made a call erases them too). The prompt is stored in full with its SHA-256,
so identical prompts (a replay, a retry) can be found by hash.

The table keeps the name migration 0003 gave it (``agent_llm_calls``) although
the call log now belongs to the core LLM seam: renaming it would need a
migration and buys nothing. It is written through any
:class:`~memstrata._sql.Transactions` (``memory``'s ``Database`` is one), so
this module needs nothing from the packages above the core.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Float, Index, Integer, String, Table, Text, insert, select

from memstrata import telemetry
from memstrata._sql import USER, JSONType, Transactions, metadata
from memstrata.clock import Clock, from_epoch, to_epoch
from memstrata.errors import InvalidInputError, LLMError, MissingUserError

from ._client import ChatResult, LLMClient, Message

__all__ = ["CallRow", "RecordingModel", "list_calls", "llm_calls"]

llm_calls = Table(
    "agent_llm_calls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", USER, nullable=False),
    #: the agent task the call served; None for consolidation
    Column("task_id", String(64)),
    Column("turn", Integer),
    #: what the call was for: the agent's step kind, or the consolidation item
    #: ("summarize", "lesson", "conflicts")
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

_MAX_PURPOSE = 32


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


def _check_user(user_id: object) -> str:
    """The core's own guard (``memory``'s validators sit above it): a usable user id."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise MissingUserError("a non-empty user id is required for every call on user data")
    if len(user_id) > (USER.length or 0) or any(ord(c) < 32 for c in user_id):
        raise MissingUserError("user id too long or contains control characters")
    return user_id


class RecordingModel:
    """An :class:`LLMClient` wrapper that records every call of the wrapped client.

    Calls go through :meth:`chat_for`, which says who and what the call is for,
    so each row is attributable (and erasable) per user. A failed call is
    recorded too, with its error, and the error is re-raised.
    """

    def __init__(self, inner: LLMClient, *, db: Transactions, clock: Clock,
                 redact: Callable[[str, str], str] | None = None) -> None:
        self.inner = inner
        self._db = db
        self._clock = clock
        #: (tool name, JSON arguments) -> what is stored instead: applied to the tool
        #: calls of the recorded messages and response (the caller gets them unchanged)
        self._redact = redact

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
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        """Call the model and record the call (also when it fails)."""
        user_id = _check_user(user_id)
        if not purpose or len(purpose) > _MAX_PURPOSE:
            raise InvalidInputError(f"purpose must be 1-{_MAX_PURPOSE} characters: {purpose!r}")
        names = [str(t.get("function", {}).get("name", "")) for t in tools or ()]
        model = self.inner.model
        with telemetry.span(f"chat {model}",
                            {"gen_ai.operation.name": "chat", "gen_ai.request.model": model},
                            purpose=purpose, task_id=task_id, turn=turn, tools=len(names),
                            messages=len(messages)) as sp:
            sp.set_content(user_id=user_id)
            started = time.perf_counter()
            try:
                result = self.inner.chat(messages, tools=tools, temperature=temperature,
                                         max_tokens=max_tokens)
            except LLMError as exc:
                self._write(user_id, task_id, turn, purpose, messages, names, None, str(exc),
                            (time.perf_counter() - started) * 1000, 1)
                raise
            latency_ms = (time.perf_counter() - started) * 1000
            sp.set({"gen_ai.response.model": result.model or None,
                    "gen_ai.usage.input_tokens": result.usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": result.usage.completion_tokens,
                    "gen_ai.response.finish_reasons":
                        [result.finish_reason] if result.finish_reason else None},
                   latency_ms=result.latency_ms or latency_ms, attempts=result.attempts,
                   tool_calls=len(result.tool_calls), outcome="ok")
            self._write(user_id, task_id, turn, purpose, messages, names, result, None,
                        latency_ms, result.attempts)
            return result

    def _write(
        self, user_id: str, task_id: str | None, turn: int | None, purpose: str,
        messages: Sequence[Message], tools: list[str], result: ChatResult | None,
        error: str | None, latency_ms: float, attempts: int,
    ) -> None:
        msgs = json.loads(json.dumps([dict(m) for m in messages], default=str))
        hook = self._redact
        if hook is not None:
            for m in msgs:
                for c in m.get("tool_calls") or ():
                    fn = c.get("function") if isinstance(c, dict) else None
                    if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                        fn["arguments"] = hook(str(fn.get("name", "")), fn["arguments"])
        response = None
        if result is not None:
            response = {
                "content": result.content,
                "tool_calls": [
                    {"id": c.id, "name": c.name,
                     "arguments": hook(c.name, c.arguments) if hook else c.arguments}
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
                    prompt_hash=prompt_hash(msgs, tools),  # of what is stored
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


def list_calls(db: Transactions, user_id: str, task_id: str | None = None) -> list[CallRow]:
    """The recorded model calls of a user (optionally of one task), oldest first."""
    user_id = _check_user(user_id)
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
