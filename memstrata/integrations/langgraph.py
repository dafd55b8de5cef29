"""A LangGraph store on memstrata: :class:`MemstrataStore` (``pip install 'memstrata[langgraph]'``).

::

    from langgraph.graph import StateGraph
    from memstrata import MemoryManager
    from memstrata.integrations.langgraph import MemstrataStore

    memory = MemoryManager.open()
    graph = StateGraph(State).add_node(...).compile(store=MemstrataStore(memory),
                                                    checkpointer=saver)

**Namespaces.** A namespace is ``(user_id, scope, *path)``: the first label is the
memstrata user (every item belongs to exactly one user, and one user's items are
never returned for another's namespace), the second the scope (``1-64`` lower-case
letters, digits, ``_ . -``), any further labels a path inside the scope. A
namespace that does not map - one label, a malformed user id or scope, the
``langgraph`` root LangGraph reserves - raises :class:`NamespaceError`, which is
both a :class:`memstrata.errors.InvalidInputError` and LangGraph's
``InvalidNamespaceError``; nothing is written. (LangGraph's own label rules - no
empty label, no ``.`` - are checked by its ``get``/``put``/``search``/... before the
store runs and raise its plain ``InvalidNamespaceError``; ``batch`` raises
:class:`NamespaceError` for them too.) ``search`` and ``list_namespaces``
with a prefix take the user from its first label; ``search`` needs it. Labels and keys
that differ only in Unicode normalisation (NFC / NFD) are the same label, as look-alike
user ids are one user: items are stored and returned under the NFC form.

**Items are memories.** ``put(namespace, key, value)`` writes one long-term
record of the store's ``memory_type`` (default ``knowledge``) through the write
policy, as a structured fact whose slot is (namespace path, key): a second
``put`` of the same key with another value is an explicit correction - the new
record wins at once, the old one is kept as ``superseded`` history - and the
same value again only reinforces it. The dict itself is kept verbatim in the
record's metadata (``metadata["langgraph"]``: namespace, key, value, created_at),
so ``get`` returns exactly what was put; the record's text, which is embedded and
keyword-indexed, is rendered from the value (``index=[...]`` picks the fields,
``index=False`` keeps the item out of ``search(query=...)``). Store records are
pinned: they never expire or decay, like any key-value item, until deleted.
``delete`` is memstrata's ``forget``: the record, every version of it and its text
wherever it was quoted are gone. ``search(query=...)`` is memstrata's recall
(hybrid dense + keyword ranking, the retrieval policy's minimum relevance:
nothing weak is returned) and its scores; without a query, items come newest
first. TTLs are not supported (``supports_ttl = False``): memstrata's retention
policy decides lifetimes.

``batch`` runs on the caller's thread; ``abatch`` runs the same operations in a
worker thread - the bounded pool of an :class:`~memstrata.memory.AsyncMemoryManager`
when the store was built on one.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import json
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from memstrata.errors import InvalidInputError, MissingDependencyError
from memstrata.memory import AsyncMemoryManager, MemoryManager, check_scope, check_user
from memstrata.policies.retrieval import MAX_TOP_K
from memstrata.types import MemoryRecord, MemoryType, Source

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        tokenize_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("langgraph", "langgraph") from exc

__all__ = ["MemstrataStore", "NamespaceError"]

#: the metadata key holding an item's namespace, key and value
META_KEY = "langgraph"
_SUBJECT_PREFIX = "langgraph:"
_PAGE = 500
_RESERVED_ROOT = "langgraph"


class NamespaceError(InvalidInputError, InvalidNamespaceError):
    """A namespace that does not map to ``(user_id, scope, *path)``."""


def _as_ours(exc: InvalidNamespaceError) -> NamespaceError:
    return exc if isinstance(exc, NamespaceError) else NamespaceError(str(exc))


def _digest(value: Any) -> str:
    raw = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def _namespace(namespace: tuple[str, ...]) -> tuple[str, str, tuple[str, ...]]:
    """``(user_id, scope, path)`` of a full item namespace, or NamespaceError."""
    if not isinstance(namespace, tuple) or len(namespace) < 2:
        raise NamespaceError(
            f"namespace {namespace!r} does not map to memstrata: use (user_id, scope, *path)")
    return _user(namespace), _scope(namespace[1], namespace), tuple(namespace[2:])


def _canonical(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """The namespace as items are stored and compared: the user id and the scope as
    memstrata checks them, every other label in NFC. Labels that differ only in Unicode
    normalisation are one label, as look-alike user ids are one user (a put under
    ``("jose\u0301", ...)`` and a get under ``("jos\u00e9", ...)`` find the same item)."""
    user, scope, path = _namespace(namespace)
    return (user, scope, *(unicodedata.normalize("NFC", label) for label in path))


def _key(key: str) -> str:
    return unicodedata.normalize("NFC", key)


def _user(namespace: tuple[str, ...]) -> str:
    if not namespace:
        raise NamespaceError("the namespace (prefix) must start with the user id: "
                             "(user_id, scope, *path)")
    if namespace[0] == _RESERVED_ROOT:
        raise NamespaceError(f'the root label "{_RESERVED_ROOT}" is reserved by LangGraph')
    try:
        return check_user(namespace[0])
    except InvalidInputError as exc:
        raise NamespaceError(f"namespace {namespace!r}: the first label is the user id: {exc}"
                             ) from exc


def _scope(label: str, namespace: tuple[str, ...]) -> str:
    try:
        return check_scope(label, None)
    except InvalidInputError as exc:
        raise NamespaceError(f"namespace {namespace!r}: the second label is the scope: {exc}"
                             ) from exc


def _slot_parts(path: tuple[str, ...], key: str) -> tuple[str, str]:
    """The slot (subject, attribute) of an item: digests, so keys differing only in
    case (slot parts are compared case-folded) never collide."""
    return _SUBJECT_PREFIX + _digest(list(path)), _digest(key)


def _render(key: str, value: Mapping[str, Any], index: list[str] | None) -> str:
    """The text a value is found by: the chosen fields, or every leaf as
    ``field: value``."""
    if index is not None:
        texts = [t for field in index for t in get_text_at_path(value, tokenize_path(field))]
    else:
        texts = list(_leaves(value, ""))
    text = "\n".join(t for t in texts if t.strip())
    return text or key


def _leaves(value: Any, where: str) -> Iterable[str]:
    if isinstance(value, Mapping):
        for name, inner in value.items():
            yield from _leaves(inner, f"{where}.{name}" if where else str(name))
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _leaves(inner, where)
    elif value is not None:
        yield f"{where}: {value}" if where else str(value)


def _prefix_matches(namespace: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    return len(namespace) >= len(pattern) and all(
        p in ("*", n) for p, n in zip(pattern, namespace, strict=False))


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if condition.match_type == "prefix":
        return _prefix_matches(namespace, path)
    if condition.match_type == "suffix":
        return _prefix_matches(tuple(reversed(namespace)), tuple(reversed(path)))
    raise InvalidInputError(f"unknown namespace match type {condition.match_type!r}")


_OPS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


def _passes(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter: exact matches, or ``{"$gt": x}``-style comparisons."""
    for field, want in (flt or {}).items():
        have = value.get(field)
        if isinstance(want, Mapping) and want and set(want) <= _OPS:
            for op, bound in want.items():
                if not _compare(op, have, bound):
                    return False
        elif have != want:
            return False
    return True


def _compare(op: str, have: Any, bound: Any) -> bool:
    if op == "$eq":
        return bool(have == bound)
    if op == "$ne":
        return bool(have != bound)
    try:
        if op == "$gt":
            return bool(have > bound)
        if op == "$gte":
            return bool(have >= bound)
        if op == "$lt":
            return bool(have < bound)
        return bool(have <= bound)
    except TypeError:  # None or another type than the bound: no match
        return False


class MemstrataStore(BaseStore):
    """LangGraph's ``BaseStore`` over a memstrata manager (see the module docstring
    for the namespace mapping and how items become memories)."""

    supports_ttl = False

    def __init__(
        self,
        memory: MemoryManager | AsyncMemoryManager,
        *,
        memory_type: MemoryType | str = MemoryType.KNOWLEDGE,
        min_relevance: float | None = None,
    ) -> None:
        """``memory_type`` is the type of the records items become (it decides
        nothing else: they are pinned); ``min_relevance`` overrides the retrieval
        policy's threshold for ``search(query=...)``."""
        if isinstance(memory, AsyncMemoryManager):
            self._async: AsyncMemoryManager | None = memory
            self._memory = memory.manager
        elif isinstance(memory, MemoryManager):
            self._async = None
            self._memory = memory
        else:
            raise InvalidInputError("MemstrataStore needs a MemoryManager or AsyncMemoryManager")
        try:
            self._type = MemoryType(memory_type)
        except ValueError as exc:
            raise InvalidInputError(f"unknown memory type {memory_type!r}") from exc
        self._min_relevance = min_relevance

    # ------------------------------------------------------------ the two batch methods

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; one result per operation."""
        todo = list(ops)
        for op in todo:
            self._check(op)
        return [self._run(op) for op in todo]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the async manager's pool if any)."""
        todo = list(ops)
        for op in todo:  # refused here, whatever the state of the manager
            self._check(op)
        if self._async is not None:
            return await self._async.run(self.batch, todo)
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, self.batch, todo)
        return await loop.run_in_executor(None, call)

    def _check(self, op: Op) -> None:
        """Refuse a malformed batch before any operation of it runs."""
        if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
            raise InvalidInputError(f"not a LangGraph store operation: {type(op).__name__}")
        try:
            validate_op_namespace(op)
        except InvalidNamespaceError as exc:
            raise _as_ours(exc) from exc
        if isinstance(op, GetOp | PutOp):
            _namespace(op.namespace)
            if not isinstance(op.key, str) or not op.key:
                raise InvalidInputError("an item key is a non-empty string")
        if isinstance(op, PutOp):
            if op.ttl is not None:
                raise InvalidInputError("MemstrataStore does not support TTLs (ttl=None): "
                                        "memstrata's retention policy decides lifetimes")
            if op.value is not None and not isinstance(op.value, Mapping):
                raise InvalidInputError("an item value is a dict (or None to delete)")
        if isinstance(op, SearchOp):
            _user(op.namespace_prefix)
            if len(op.namespace_prefix) > 1:
                _scope(op.namespace_prefix[1], op.namespace_prefix)

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            if op.value is None:
                self._delete(op.namespace, op.key)
            else:
                self._put(op.namespace, op.key, op.value, op.index)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        return self._list_namespaces(op)

    # ------------------------------------------------------------ operations

    def _current(self, namespace: tuple[str, ...], key: str) -> MemoryRecord | None:
        namespace, key = _canonical(namespace), _key(key)
        user, scope, path = _namespace(namespace)
        subject, attribute = _slot_parts(path, key)
        # newest first; pending too: two first puts of a key racing each other can
        # leave a conflict, and the newest value is still the item's value
        for record in self._memory.lookup(user, subject=subject, attribute=attribute,
                                          scope=scope, include_pending=True, limit=10):
            meta = record.metadata.get(META_KEY)
            if isinstance(meta, dict) and _stored_namespace(meta) == namespace \
                    and _key(str(meta.get("key"))) == key:
                return record
        return None

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        record = self._current(namespace, key)
        if record is None:
            return None
        found = _item(record)
        return Item(namespace=found.namespace, key=found.key, value=found.value,
                    created_at=found.created_at, updated_at=found.updated_at)

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
             index: list[str] | bool | None) -> None:
        namespace, key = _canonical(namespace), _key(key)
        user, scope, path = _namespace(namespace)
        subject, attribute = _slot_parts(path, key)
        plain = dict(value)
        try:
            digest = _digest(plain)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"an item value must be JSON-serialisable: {exc}") from exc
        current = self._current(namespace, key)
        created = self._memory.clock.now() if current is None else _item(current).created_at
        if index is not None and index is not False and not (
                isinstance(index, list) and all(isinstance(f, str) for f in index)):
            raise InvalidInputError("index is None, False or a list of field paths")
        meta = {
            "namespace": list(namespace), "key": key, "value": plain,
            "created_at": created.isoformat(), "indexed": index is not False,
        }
        text = _render(key, plain, index if isinstance(index, list) else None)
        same = current is not None and current.slot is not None \
            and current.slot.value == digest
        decision = self._memory.remember(
            user, text, type=self._type, scope=scope, slot=(subject, attribute, digest),
            source=Source.TOOL_RESULT, metadata={META_KEY: meta}, pinned=True,
            # any new value is a correction (newest wins), also when a concurrent
            # first put of the key got in first; an unchanged value reinforces
            correction=not same,
        )
        if decision.outcome not in ("written", "reinforced", "corrected"):
            # the write policy's settings refuse it (a raised min_confidence, say)
            raise InvalidInputError(
                f"the write policy did not store item {key!r}: {decision.reason}")

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        record = self._current(namespace, key)
        if record is not None:
            user, _, _ = _namespace(namespace)
            self._memory.forget(user, record.id, reason="deleted through the LangGraph store")

    def _records(self, user: str, scope: str | None) -> Iterable[MemoryRecord]:
        """The user's store items (current versions), newest first."""
        offset = 0
        while True:
            page = self._memory.memories(user, scope=scope, types=self._type, limit=_PAGE,
                                         offset=offset)
            for record in page:
                if isinstance(record.metadata.get(META_KEY), dict):
                    yield record
            if len(page) < _PAGE:
                return
            offset += _PAGE

    def _search(self, op: SearchOp) -> list[SearchItem]:
        raw = tuple(op.namespace_prefix)
        user = _user(raw)
        scope = _scope(raw[1], raw) if len(raw) > 1 else None
        prefix = tuple(label for label in (user, scope) if label is not None) + tuple(
            unicodedata.normalize("NFC", label) for label in raw[2:])
        if isinstance(op.limit, bool) or not isinstance(op.limit, int) or op.limit < 0 \
                or isinstance(op.offset, bool) or not isinstance(op.offset, int) \
                or op.offset < 0:
            raise InvalidInputError("limit and offset are non-negative integers")
        found: list[SearchItem] = []
        want = op.offset + op.limit
        if op.query is not None:
            hits = self._memory.recall(user, op.query, scope=scope, types=self._type,
                                       k=MAX_TOP_K, min_relevance=self._min_relevance,
                                       record_use=op.refresh_ttl)
            pairs: Iterable[tuple[MemoryRecord, float | None]] = (
                (h.record, h.score) for h in hits)
        else:
            pairs = ((r, None) for r in self._records(user, scope))
        for record, score in pairs:
            meta = record.metadata.get(META_KEY)
            if not isinstance(meta, dict):
                continue  # a memory written through memstrata, not an item
            if op.query is not None and meta.get("indexed") is False:
                continue
            item = _item(record, score)
            if _prefix_matches(item.namespace, prefix) and _passes(item.value, op.filter):
                found.append(item)
                if len(found) >= want:
                    break
        return found[op.offset:want]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        conditions = tuple(_canonical_condition(c) for c in conditions)
        users = {c.path[0] for c in conditions
                 if c.match_type == "prefix" and c.path and c.path[0] != "*"}
        if len(users) > 1:
            return []  # two different users' prefixes: nothing matches both
        targets = [_user((next(iter(users)),))] if users else self._memory.users()
        seen: set[tuple[str, ...]] = set()
        for user in targets:
            for record in self._records(user, None):
                namespace = _stored_namespace(record.metadata[META_KEY])
                if all(_matches(namespace, c) for c in conditions):
                    seen.add(namespace if op.max_depth is None else namespace[:op.max_depth])
        return sorted(seen)[op.offset:op.offset + op.limit]


def _stored_namespace(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """An item's namespace as stored, canonical (items stored before labels were
    normalised kept the caller's form)."""
    stored = tuple(str(label) for label in meta.get("namespace", ()))
    try:
        return _canonical(stored)
    except InvalidInputError:
        return stored


def _canonical_condition(condition: MatchCondition) -> MatchCondition:
    """A namespace match condition with its labels compared as items are stored: the
    user label is the user id, the others NFC ("*" stays a wildcard)."""
    path = tuple(condition.path)
    labels = [label if label == "*" else unicodedata.normalize("NFC", label) for label in path]
    if condition.match_type == "prefix" and labels and labels[0] != "*":
        labels[0] = _user((labels[0],))
    return MatchCondition(match_type=condition.match_type, path=tuple(labels))


def _item(record: MemoryRecord, score: float | None = None) -> SearchItem:
    meta = record.metadata[META_KEY]
    created = datetime.fromisoformat(meta["created_at"])
    return SearchItem(namespace=_stored_namespace(meta), key=_key(meta["key"]),
                      value=dict(meta["value"]), created_at=created,
                      updated_at=max(record.updated_at, created), score=score)
