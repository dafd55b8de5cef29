"""A scripted model for tests, and the switch that forbids unplanned real model calls.

::

    model = ScriptedLLM(
        plan([("Look up the order", "c1", "query_order")]),
        call("query_order", {"order_id": "A1001"}, echo="Tell the user where A1001 is"),
        say("Order A1001 shipped yesterday.", echo="Tell the user where A1001 is"),
    )
    with forbid_model_requests():          # any real OpenAIClient call now raises
        agent = Agent(model, memory=manager, tools=[query_order])

A script item is a :class:`ChatResult` or a function of the
:class:`ScriptedRequest` (so a test can answer from what the agent sent). An
exhausted script raises :class:`~memstrata.errors.UnplannedModelCallError`,
so a test fails loudly when the agent calls the model more than planned.
Token usage is estimated at one token per four characters.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstrata.errors import UnplannedModelCallError
from memstrata.llm import (
    ChatResult,
    Message,
    ToolCall,
    Usage,
    model_requests_allowed,
    set_model_requests_allowed,
)

__all__ = [
    "ScriptedLLM",
    "ScriptedRequest",
    "allow_model_requests",
    "call",
    "calls",
    "fill",
    "forbid_model_requests",
    "plan",
    "say",
]


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]

    @property
    def system(self) -> str:
        return str(self.messages[0].get("content") or "") if self.messages else ""


Scripted = ChatResult | Callable[[ScriptedRequest], ChatResult]


def _text(echo: str | None, text: str | None) -> str | None:
    if echo is None:
        return text
    return f"Goal: {echo}" + (f"\n{text}" if text else "")


def say(text: str, *, echo: str | None = None) -> ChatResult:
    """A plain-text reply (a final answer or a question for the user)."""
    return ChatResult(content=_text(echo, text), finish_reason="stop")


def calls(items: Sequence[tuple[str, Mapping[str, Any] | str]], *, echo: str | None = None,
          thought: str | None = None) -> ChatResult:
    """Several tool calls in one turn; a ``str`` argument is sent verbatim (malformed JSON)."""
    tool_calls = tuple(
        ToolCall(id=f"call_{uuid.uuid4().hex[:10]}", name=name,
                 arguments=args if isinstance(args, str) else json.dumps(dict(args)))
        for name, args in items)
    return ChatResult(content=_text(echo, thought), tool_calls=tool_calls,
                      finish_reason="tool_calls")


def call(name: str, args: Mapping[str, Any] | str | None = None, *, echo: str | None = None,
         thought: str | None = None) -> ChatResult:
    """One tool call."""
    return calls([(name, {} if args is None else args)], echo=echo, thought=thought)


def plan(subtasks: Sequence[tuple[str, str] | tuple[str, str, str | None]
                            | tuple[str, str, str | None, Mapping[str, Any]]]) -> ChatResult:
    """A ``submit_plan`` call: (title, criterion[, tool[, args]]) per subtask."""
    items = []
    for spec in subtasks:
        item: dict[str, Any] = {"title": spec[0], "criterion": spec[1]}
        if len(spec) > 2 and spec[2] is not None:
            item["tool"] = spec[2]
        if len(spec) > 3:
            item["args"] = dict(spec[3])
        items.append(item)
    return call("submit_plan", {"subtasks": items})


def fill(**params: Any) -> ChatResult:
    """A ``fill_parameters`` call for a plan template."""
    return call("fill_parameters", params)


class ScriptedLLM:
    """An :class:`~memstrata.llm.LLMClient` that plays a script. Thread-safe."""

    def __init__(self, *script: Scripted, model: str = "scripted") -> None:
        self._script: deque[Scripted] = deque(script)
        self._model = model
        self._lock = threading.Lock()
        #: every request received, in order
        self.requests: list[ScriptedRequest] = []

    @property
    def model(self) -> str:
        return self._model

    def push(self, *items: Scripted) -> None:
        with self._lock:
            self._script.extend(items)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def chat(self, messages: Sequence[Message], *,
             tools: Sequence[Mapping[str, Any]] | None = None,
             temperature: float | None = None, max_tokens: int | None = None) -> ChatResult:
        request = ScriptedRequest([dict(m) for m in messages], [dict(t) for t in tools or ()])
        with self._lock:
            self.requests.append(request)
            if not self._script:
                raise UnplannedModelCallError(
                    f"the scripted model has no reply left for request #{len(self.requests)} "
                    f"(tools offered: {request.tool_names})")
            item = self._script.popleft()
        result = item(request) if callable(item) else item
        prompt_chars = sum(len(json.dumps(m, default=str)) for m in request.messages)
        out_chars = len(result.content or "") + sum(len(c.name) + len(c.arguments)
                                                    for c in result.tool_calls)
        return ChatResult(content=result.content, tool_calls=result.tool_calls,
                          usage=Usage(prompt_chars // 4, max(1, out_chars // 4)),
                          model=self._model, finish_reason=result.finish_reason,
                          latency_ms=0.0)


@contextlib.contextmanager
def forbid_model_requests() -> Iterator[None]:
    """Inside the block any real model call (``OpenAIClient.chat``) raises
    :class:`UnplannedModelCallError`; scripted models are unaffected."""
    before = model_requests_allowed()
    set_model_requests_allowed(False)
    try:
        yield
    finally:
        set_model_requests_allowed(before)


@contextlib.contextmanager
def allow_model_requests() -> Iterator[None]:
    """Re-allow real model calls inside the block (e.g. against OpenAICompatServer)."""
    before = model_requests_allowed()
    set_model_requests_allowed(True)
    try:
        yield
    finally:
        set_model_requests_allowed(before)
