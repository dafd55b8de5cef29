"""Tool results shrink before they re-enter the context.

The full ``data`` is recorded in the episodic store; the model sees at most
``max_chars`` of it, with totals ("12 items, showing 5") so it knows what it
did not see, and a hint when the result is empty (noise is worse than absence,
but silence makes models retry the same query).
"""

from __future__ import annotations

import json
from typing import Any

from .tools import Tool, ToolResult

__all__ = ["DEFAULT_EMPTY_HINT", "summarize"]

DEFAULT_EMPTY_HINT = ("nothing matched; widen the query (fewer filters, a broader term, a "
                      "longer time range) or ask the user")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, list | tuple | dict | str | set) and not value)


def summarize(result: ToolResult, tool: Tool | None, *, max_chars: int | None = None) -> str:
    """One string for the model: an error line, an empty-result hint, or bounded data."""
    limit = max_chars or (tool.max_chars if tool is not None else 1200)
    tag = " (cached)" if result.cached else ""
    if not result.success:
        again = "retriable" if result.retriable else "not retriable"
        return f"ERROR [{result.error_type}, {again}]: {result.error}"[: limit + 200]
    data = result.data
    if _is_empty(data):
        hint = (tool.empty_hint if tool is not None and tool.empty_hint else DEFAULT_EMPTY_HINT)
        return f"OK{tag}: no results (0 items). Hint: {hint}"
    if tool is not None and tool.summarize is not None:
        return f"OK{tag}: " + tool.summarize(data)[:limit]
    if isinstance(data, list | tuple):
        total = len(data)
        shown: list[str] = []
        used = 0
        for item in data:
            text = _dump(item)
            if used + len(text) > limit and shown:
                break
            shown.append(text[:limit])
            used += len(text) + 1
        more = f", showing {len(shown)}; {total - len(shown)} more not shown" \
            if len(shown) < total else ""
        return f"OK{tag}: {total} items{more}: [" + ",".join(shown) + "]"
    text = data if isinstance(data, str) else _dump(data)
    if len(text) > limit:
        return f"OK{tag}: {text[:limit]}... (truncated; {len(text)} characters in total)"
    return f"OK{tag}: {text}"
