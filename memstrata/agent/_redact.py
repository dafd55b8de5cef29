"""Secrets never reach storage: redaction of tool arguments before they are persisted.

A value is a secret when its tool declares the parameter as ``pydantic.SecretStr``
(or ``SecretBytes``), or when its name says so (``api_key``, ``password``,
``token``, ``secret``, ``authorization``, ... - case-insensitive, at any depth of
nested dicts and lists). Such values become ``"[redacted]"`` in the recorded steps
(arguments of actions, the model's tool calls, plans), in the text a person or
the model reads about a call (:class:`~memstrata.agent.toolsets.ApprovalRequest`)
and in the model-call log (:class:`memstrata.llm.RecordingModel` gets
:func:`redact_call` as its hook). The tool itself receives the real value: only
what is written down is redacted.

The trade-off: redaction is by name and type, not by content. A secret passed in
an argument named ``note`` is stored; one named ``max_tokens`` is redacted (too
eager, never too lax, is the direction of the error).
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import SecretBytes, SecretStr

if typing.TYPE_CHECKING:
    from .tools import Tool

__all__ = ["REDACTED", "SECRET_NAME", "is_secret_name", "redact", "redact_call",
           "redact_json", "secret_fields"]

REDACTED = "[redacted]"
#: argument names that hold secrets, whatever their type
SECRET_NAME = re.compile(
    r"api_?key|apikey|passw(?:or)?d|passphrase|secret|authori[sz]ation|credential"
    r"|private_?key|cookie|session_?id|bearer|token(?!s|_?count|iz)",
    re.IGNORECASE)


def is_secret_name(name: object, extra: Iterable[str] = ()) -> bool:
    text = str(name)
    return text in extra or SECRET_NAME.search(text.replace("-", "_")) is not None


def redact(value: Any, secret_names: Iterable[str] = ()) -> Any:
    """A copy of ``value`` with secret values replaced (dicts and lists, any depth)."""
    names = frozenset(secret_names)
    if isinstance(value, SecretStr | SecretBytes):
        return REDACTED
    if isinstance(value, Mapping):
        return {k: (REDACTED if v is not None and is_secret_name(k, names)
                    else redact(v, names)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, names) for v in value]
    return value


def redact_json(arguments: str, secret_names: Iterable[str] = ()) -> str:
    """Tool-call arguments (JSON text) with secret values replaced. Text that is not
    JSON but names a secret is replaced whole: it cannot be redacted field by field."""
    try:
        parsed = json.loads(arguments or "{}")
    except (json.JSONDecodeError, TypeError):
        return REDACTED if SECRET_NAME.search(arguments or "") else arguments
    cleaned = redact(parsed, secret_names)
    return arguments if cleaned == parsed else json.dumps(cleaned, ensure_ascii=False)


def _is_secret_type(annotation: Any) -> bool:
    if annotation in (SecretStr, SecretBytes):
        return True
    return any(_is_secret_type(a) for a in typing.get_args(annotation))


def secret_fields(tool: Tool | None) -> frozenset[str]:
    """Parameters of ``tool`` typed ``SecretStr``/``SecretBytes`` (also inside
    ``Optional``/``Annotated``)."""
    if tool is None:
        return frozenset()
    return frozenset(name for name, f in tool.args_model.model_fields.items()
                     if _is_secret_type(f.annotation))


def redact_call(tools: Mapping[str, Tool]) -> typing.Callable[[str, str], str]:
    """The call log's hook: (tool name, JSON arguments) -> redacted JSON arguments.
    Secret parameter names of every tool apply to every call (a plan's ``args`` carry
    other tools' arguments)."""
    every = frozenset(n for t in tools.values() for n in secret_fields(t))

    def hook(name: str, arguments: str) -> str:
        return redact_json(arguments, every)

    return hook
