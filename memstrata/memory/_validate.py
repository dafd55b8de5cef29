"""Input checks shared by every public entry point. They raise before anything changes.

One rule for every backend: what SQLite would take but PostgreSQL refuses (a NUL
character, NaN or Infinity in JSON, a value wider than its column) is refused
here, before either sees it, so data accepted on SQLite always moves to
PostgreSQL. Every check raises an :class:`~memstrata.errors.InvalidInputError`
subclass; no raw ``TypeError``/``ValueError``/``OverflowError``/
``UnicodeEncodeError`` leaves a public call because of its arguments.

* text: a ``str`` without NUL and without lone surrogates (not valid Unicode: no
  UTF-8 encoder takes them), no wider than its column in
  :mod:`memstrata.memory._schema`;
* JSON (metadata, goals, task state, steps): ``dict`` with ``str`` keys, lists,
  strings, finite numbers, booleans and ``None`` - one check, :func:`check_json`,
  for ``remember``, ``observe`` and episodic memory alike;
* times: between :data:`EARLIEST` and :data:`LATEST`; a ``ttl`` is positive and at
  most :data:`MAX_TTL` (so ``at + ttl`` never leaves Python's datetime range);
* user ids: NFC-normalised, no control or invisible format characters (see
  :func:`check_user`).
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from memstrata.clock import utc
from memstrata.config import SCOPE_PATTERN
from memstrata.errors import (
    ContentTooLargeError,
    EmptyContentError,
    InvalidInputError,
    MissingUserError,
    UnknownScopeError,
    UnknownTypeError,
)
from memstrata.memory._schema import USER, memories, tasks, turns
from memstrata.types import MemoryInput, MemoryType, Status

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_TTL",
    "ROLES",
    "check_content",
    "check_count",
    "check_flag",
    "check_input",
    "check_json",
    "check_limit",
    "check_mapping",
    "check_memory_id",
    "check_number",
    "check_query",
    "check_role",
    "check_scope",
    "check_scopes",
    "check_statuses",
    "check_text",
    "check_time",
    "check_ttl",
    "check_turn",
    "check_types",
    "check_user",
]

MAX_USER_ID = int(USER.length or 256)
#: column widths the checks enforce (SQLite does not; PostgreSQL does)
SLOT_PART_WIDTH = int(memories.c.subject.type.length or 256)  # type: ignore[attr-defined]
REF_WIDTH = int(memories.c.session_id.type.length or 256)  # type: ignore[attr-defined]
TURN_SESSION_WIDTH = int(turns.c.session_id.type.length or 256)  # type: ignore[attr-defined]
ROLE_WIDTH = int(turns.c.role.type.length or 32)  # type: ignore[attr-defined]
TASK_ID_WIDTH = int(tasks.c.task_id.type.length or 64)  # type: ignore[attr-defined]
#: the time range a stored time may take: a day inside Python's datetime range at the
#: bottom (time-zone conversion), and room for ``at + ttl`` and the grace period at the top
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
#: longest ``ttl``: ~900 years (``LATEST + MAX_TTL`` stays inside year 9999)
MAX_TTL = timedelta(days=900 * 365)
#: most rows one browse returns; also the upper bound of ``offset``
MAX_LIMIT = 10_000
MAX_OFFSET = 2**62
#: nesting depth of JSON values (PostgreSQL's JSONB and json.dumps have limits too)
MAX_JSON_DEPTH = 64
#: Unicode categories a user id may not contain: controls, invisible format
#: characters (zero-width space/joiner, BOM, bidi marks), lone surrogates
_USER_FORBIDDEN = frozenset({"Cc", "Cf", "Cs"})


def _show(value: Any) -> str:
    """A short repr for an error message; never raises (an int of 5,000 digits does)."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond sys.get_int_max_str_digits(), also inside a list
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else f"{text[:77]}..."


def _bad_chars(value: str) -> str | None:
    """Why ``value`` cannot be stored as text anywhere, or None."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode text)"
    return None


def check_text(
    value: Any, what: str, *, max_len: int | None = None, empty_ok: bool = False,
    error: type[InvalidInputError] = InvalidInputError,
) -> str:
    """A storable string: no NUL, no lone surrogate, at most ``max_len`` characters."""
    if not isinstance(value, str):
        raise error(f"{what} must be a string, not {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise error(f"{what} is empty")
    if max_len is not None and len(value) > max_len:
        raise error(f"{what} is longer than {max_len} characters")
    why = _bad_chars(value)
    if why is not None:
        raise error(f"{what} {why}")
    return value


def check_user(user_id: Any) -> str:
    """A user id, normalised to NFC; the id every table stores.

    Look-alike ids must not become separate users: ``"jose\\u0301"`` and
    ``"jos\\u00e9"`` are one user (NFC), and an id with a control or an invisible
    format character (Unicode category ``Cc``/``Cf``: zero-width space and joiner,
    BOM, bidi marks, soft hyphen) is refused rather than silently stripped.
    """
    if not isinstance(user_id, str) or not user_id.strip():
        raise MissingUserError("a non-empty user id is required for every call on user data")
    if len(user_id) > 4 * MAX_USER_ID:  # normalisation never shrinks a string by 4x
        raise MissingUserError(f"user id longer than {MAX_USER_ID} characters")
    why = _bad_chars(user_id)
    if why is not None:
        raise MissingUserError(f"user id {why}")
    uid: str = user_id
    if not unicodedata.is_normalized("NFC", uid):
        uid = unicodedata.normalize("NFC", uid)
    if len(uid) > MAX_USER_ID:
        raise MissingUserError(f"user id longer than {MAX_USER_ID} characters")
    if not uid.isascii() or not uid.isprintable():
        bad = next((c for c in uid if unicodedata.category(c) in _USER_FORBIDDEN), None)
        if bad is not None:
            raise MissingUserError(
                f"user id contains the control or invisible character U+{ord(bad):04X}"
            )
    return uid


def check_scope(scope: Any, allowed: frozenset[str] | None) -> str:
    if not isinstance(scope, str) or not SCOPE_PATTERN.fullmatch(scope):
        raise UnknownScopeError(
            f"scope {_show(scope)} is malformed: use 1-64 lower-case letters, digits, '_', '.', '-'"
        )
    if allowed is not None and scope not in allowed:
        raise UnknownScopeError(
            f"unknown scope {_show(scope)}; configured scopes: {sorted(allowed)}"
        )
    return scope


def _names(value: Any, single: type | tuple[type, ...], what: str,
           error: type[InvalidInputError]) -> list[Any]:
    if isinstance(value, single):
        return [value]
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise error(f"{what} must be a name or a collection of names, not {_show(value)}")
    return list(value)


def check_scopes(scope: str | Iterable[str] | None, allowed: frozenset[str] | None
                 ) -> frozenset[str] | None:
    if scope is None:
        return None
    names = _names(scope, str, "scope", UnknownScopeError)
    return frozenset(check_scope(s, allowed) for s in names)


def check_types(types: MemoryType | str | Iterable[MemoryType | str] | None
                ) -> frozenset[MemoryType] | None:
    if types is None:
        return None
    names = _names(types, (str, MemoryType), "types", UnknownTypeError)
    out = set()
    for name in names:
        try:
            out.add(MemoryType(name))
        except (TypeError, ValueError) as exc:
            raise UnknownTypeError(
                f"unknown memory type {_show(name)}; known: {[t.value for t in MemoryType]}"
            ) from exc
    return frozenset(out)


def check_statuses(statuses: Status | str | Iterable[Status | str]) -> frozenset[Status]:
    names = _names(statuses, (str, Status), "statuses", InvalidInputError)
    try:
        return frozenset(Status(s) for s in names)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"unknown status in {_show(names)}") from exc


def check_flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{what} must be True or False, not {_show(value)}")
    return value


def check_count(value: Any, what: str, low: int, high: int) -> int:
    """An ``int`` (not a bool) in ``low..high``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{what} must be an integer in {low}..{high}, not {_show(value)}")
    return value


def check_limit(limit: Any, offset: Any = 0) -> tuple[int, int]:
    """A browse window; the same bounds on every backend (SQLite takes -1, PostgreSQL not)."""
    return (check_count(limit, "limit", 0, MAX_LIMIT),
            check_count(offset, "offset", 0, MAX_OFFSET))


def check_number(value: Any, what: str, low: float, high: float) -> float:
    """A finite real number (not a bool, not a string) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{what} must be a number, not {_show(value)}")
    number = float(value) if not isinstance(value, int) or abs(value) < 2**63 else math.inf
    if not math.isfinite(number) or not low <= number <= high:
        raise InvalidInputError(f"{what} must be a number in [{low}, {high}], not {_show(value)}")
    return number


def check_memory_id(memory_id: Any, what: str = "memory id") -> str:
    return check_text(memory_id, what)


def check_time(when: Any, what: str) -> datetime:
    """An aware or naive (taken as UTC) datetime between EARLIEST and LATEST."""
    if not isinstance(when, datetime):
        raise InvalidInputError(f"{what} must be a datetime, not {type(when).__name__}")
    try:
        moment = utc(when)
    except (OverflowError, ValueError) as exc:
        raise InvalidInputError(f"{what} {_show(when)} cannot be converted to UTC") from exc
    if not EARLIEST <= moment <= LATEST:
        raise InvalidInputError(
            f"{what} must lie between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}, not {_show(when)}"
        )
    return moment


def check_ttl(ttl: Any) -> timedelta:
    if not isinstance(ttl, timedelta):
        raise InvalidInputError(f"ttl must be a timedelta, not {type(ttl).__name__}")
    if not timedelta(0) < ttl <= MAX_TTL:
        raise InvalidInputError(f"ttl must be positive and at most {MAX_TTL.days} days")
    return ttl


def _walk_json(value: Any, what: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise InvalidInputError(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels")
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{what} holds {_show(value)}: JSON has no NaN or Infinity")
        return
    if isinstance(value, str):
        why = _bad_chars(value)
        if why is not None:
            raise InvalidInputError(f"{what}: a string {why}")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(f"{what}: keys must be strings, not {_show(key)}")
            why = _bad_chars(key)
            if why is not None:
                raise InvalidInputError(f"{what}: a key {why}")
            _walk_json(item, what, depth + 1)
        return
    if isinstance(value, list | tuple):
        for item in value:
            _walk_json(item, what, depth + 1)
        return
    raise InvalidInputError(
        f"{what} must hold only JSON values (dict, list, str, finite numbers, bool, None), "
        f"not {type(value).__name__}"
    )


def check_json(value: Any, what: str) -> Any:
    """A JSON value both backends store alike; returns a plain copy (tuples as lists)."""
    _walk_json(value, what, 0)
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:  # e.g. an int of 5000 digits
        raise InvalidInputError(f"{what} cannot be stored as JSON: {exc}") from exc


def check_content(content: Any, limit: int) -> str:
    if not isinstance(content, str):
        raise EmptyContentError("content must be text")
    if not content.strip():
        raise EmptyContentError("content is empty")
    if len(content) > limit:
        raise ContentTooLargeError(len(content), limit)
    return check_text(content, "content")


def check_input(
    item: MemoryInput | str | dict[str, Any], fields: dict[str, Any], *,
    limit: int, allowed_scopes: frozenset[str] | None,
) -> MemoryInput:
    """Build and check a :class:`MemoryInput` from text + fields, a dict, or an input."""
    try:
        if isinstance(item, MemoryInput):
            if fields:
                item = item.model_copy(update=fields)
                item = MemoryInput.model_validate(item.model_dump())
        elif isinstance(item, str | dict):
            raw = {"content": item, **fields} if isinstance(item, str) else {**item, **fields}
            if "type" in raw:
                check_types(raw["type"])
            if "content" not in raw or raw.get("content") is None:
                raise EmptyContentError("content is required")
            item = MemoryInput.model_validate(raw)
        else:
            raise EmptyContentError(
                f"a memory is text, a dict or a MemoryInput, not {type(item).__name__}"
            )
    except PydanticValidationError as exc:
        raise InvalidInputError(f"invalid memory: {exc}") from exc
    except TypeError as exc:  # a slot dict with the wrong keys fails inside its validator
        raise InvalidInputError(f"invalid memory: {exc}") from exc
    check_content(item.content, limit)
    check_scope(item.scope, allowed_scopes)
    if item.slot is not None:
        slot = item.slot
        check_text(slot.subject, "slot subject", max_len=SLOT_PART_WIDTH)
        check_text(slot.attribute, "slot attribute", max_len=SLOT_PART_WIDTH)
        check_text(slot.value, "slot value", max_len=limit)
    for name in ("session_id", "task_id", "step_id"):
        ref = getattr(item, name)
        if ref is not None:
            check_text(ref, name, max_len=REF_WIDTH)
    if item.context is not None:
        if len(item.context) > limit:
            raise ContentTooLargeError(len(item.context), limit)
        check_text(item.context, "context", empty_ok=True)
    check_json(item.metadata, "metadata")
    if item.at is not None:
        check_time(item.at, "at")
    if item.valid_from is not None:
        check_time(item.valid_from, "valid_from")
    if item.ttl is not None:
        check_ttl(item.ttl)
    return item


#: longest conversation turn (a turn is raw material, not a memory: longer than content)
MAX_TURN_TEXT = 100_000


def check_mapping(value: Any, what: str) -> dict[str, Any]:
    """A JSON object given as a mapping; returns a plain checked copy."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a mapping, not {type(value).__name__}")
    out: dict[str, Any] = check_json(dict(value), what)
    return out


#: the roles a conversation turn may have (``observe``); "human" and "ai" are
#: LangChain's names for the first two
ROLES = ("user", "assistant", "system", "tool", "human", "ai")
#: the longest recall query accepted (a question, not a document: a long one only costs)
MAX_QUERY_CHARS = 10_000


def check_role(role: Any) -> str:
    """A turn's role, one of :data:`ROLES` (any case); a typo is an error, not a turn
    nobody reads ("usr" formed nothing and raised nothing)."""
    check_text(role, "role", max_len=ROLE_WIDTH)
    if role.strip().lower() not in ROLES:
        import difflib

        close = difflib.get_close_matches(role.strip().lower(), ROLES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidInputError(f"unknown role {role!r}{hint}; use one of {', '.join(ROLES)}")
    return str(role)


def check_query(query: Any, what: str = "the recall query") -> str:
    """A recall query: a non-empty string of at most :data:`MAX_QUERY_CHARS` characters."""
    return check_text(query, what, max_len=MAX_QUERY_CHARS)


def check_turn(session_id: Any, role: Any, text: Any, at: Any, metadata: Any
               ) -> tuple[datetime | None, dict[str, Any]]:
    """A conversation turn as ``turns`` stores it: returns its time (or None) and metadata."""
    check_text(session_id, "session id", max_len=TURN_SESSION_WIDTH)
    check_text(role, "role", max_len=ROLE_WIDTH)
    check_text(text, "the turn text", max_len=MAX_TURN_TEXT)
    when = None if at is None else check_time(at, "at")
    meta = {} if metadata is None else check_mapping(metadata, "turn metadata")
    return when, meta
