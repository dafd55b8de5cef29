"""Input checks shared by every public entry point. They raise before anything changes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from memstrata.config import SCOPE_PATTERN
from memstrata.errors import (
    ContentTooLargeError,
    EmptyContentError,
    InvalidInputError,
    MissingUserError,
    UnknownScopeError,
    UnknownTypeError,
)
from memstrata.types import MemoryInput, MemoryType, Status

__all__ = ["check_content", "check_input", "check_scope", "check_types", "check_user"]

MAX_USER_ID = 256


def check_user(user_id: Any) -> str:
    if not isinstance(user_id, str) or not user_id.strip():
        raise MissingUserError("a non-empty user id is required for every call on user data")
    if len(user_id) > MAX_USER_ID:
        raise MissingUserError(f"user id longer than {MAX_USER_ID} characters")
    if any(ord(c) < 32 for c in user_id):
        raise MissingUserError("user id contains control characters")
    return user_id


def check_scope(scope: Any, allowed: frozenset[str] | None) -> str:
    if not isinstance(scope, str) or not SCOPE_PATTERN.match(scope):
        raise UnknownScopeError(
            f"scope {scope!r} is malformed: use 1-64 lower-case letters, digits, '_', '.', '-'"
        )
    if allowed is not None and scope not in allowed:
        raise UnknownScopeError(f"unknown scope {scope!r}; configured scopes: {sorted(allowed)}")
    return scope


def check_scopes(scope: str | Iterable[str] | None, allowed: frozenset[str] | None
                 ) -> frozenset[str] | None:
    if scope is None:
        return None
    names = [scope] if isinstance(scope, str) else list(scope)
    return frozenset(check_scope(s, allowed) for s in names)


def check_types(types: MemoryType | str | Iterable[MemoryType | str] | None
                ) -> frozenset[MemoryType] | None:
    if types is None:
        return None
    names = [types] if isinstance(types, str | MemoryType) else list(types)
    out = set()
    for name in names:
        try:
            out.add(MemoryType(name))
        except ValueError as exc:
            raise UnknownTypeError(
                f"unknown memory type {name!r}; known: {[t.value for t in MemoryType]}"
            ) from exc
    return frozenset(out)


def check_statuses(statuses: Status | str | Iterable[Status | str]) -> frozenset[Status]:
    names = [statuses] if isinstance(statuses, str | Status) else list(statuses)
    try:
        return frozenset(Status(s) for s in names)
    except ValueError as exc:
        raise InvalidInputError(f"unknown status in {names!r}") from exc


def check_content(content: Any, limit: int) -> str:
    if not isinstance(content, str):
        raise EmptyContentError("content must be text")
    if not content.strip():
        raise EmptyContentError("content is empty")
    if len(content) > limit:
        raise ContentTooLargeError(len(content), limit)
    return content


def check_input(
    item: MemoryInput | str | dict[str, Any], fields: dict[str, Any], *,
    limit: int, allowed_scopes: frozenset[str] | None,
) -> MemoryInput:
    """Build and check a :class:`MemoryInput` from text + fields, a dict, or an input."""
    if isinstance(item, MemoryInput):
        if fields:
            item = item.model_copy(update=fields)
            item = MemoryInput.model_validate(item.model_dump())
    elif isinstance(item, str | dict):
        raw = {"content": item, **fields} if isinstance(item, str) else {**item, **fields}
        if "type" in raw:
            check_types(raw["type"])
        try:
            item = MemoryInput.model_validate(raw)
        except PydanticValidationError as exc:
            if "content" not in raw or raw.get("content") is None:
                raise EmptyContentError("content is required") from exc
            raise InvalidInputError(f"invalid memory: {exc}") from exc
    else:
        raise EmptyContentError(
            f"a memory is text, a dict or a MemoryInput, not {type(item).__name__}"
        )
    check_content(item.content, limit)
    check_scope(item.scope, allowed_scopes)
    if item.slot is not None:
        for part in (item.slot.subject, item.slot.attribute, item.slot.value):
            if not isinstance(part, str) or not part.strip():
                raise InvalidInputError("slot subject, attribute and value must be non-empty")
    if item.context is not None and len(item.context) > limit:
        raise ContentTooLargeError(len(item.context), limit)
    try:
        json.dumps(item.metadata)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from exc
    return item
