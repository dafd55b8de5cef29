"""Carrying out planned column changes on memory rows, exactly and in bulk.

Every update action names the columns it changes with their values before and
after. :func:`apply_updates` optionally re-checks ``before`` against the row
(skipping, with a reason, a record that changed since it was planned), writes
the rows with one executemany per column set, and stamps ``seq`` from
``users.seq`` on every row whose status enters or leaves the retrievable set,
so the derived indexes of every process catch up. The same function undoes a
run: an undo is an update whose ``before`` is the original ``after``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from memstrata.consolidation.reports import PlannedAction
from memstrata.memory import _store
from memstrata.memory._schema import memories, users
from memstrata.memory._store import SeqCounter
from memstrata.types import RETRIEVABLE

__all__ = [
    "RECORD_COLUMNS",
    "apply_updates",
    "changed_columns",
    "is_retrievable",
    "lock_existing",
    "snapshot",
]

_RETRIEVABLE = frozenset(s.value for s in RETRIEVABLE)
#: columns an action may change (never the id, the user or the content)
RECORD_COLUMNS: tuple[str, ...] = (
    "status", "confidence", "importance", "expires_at", "last_accessed_at", "access_count",
    "pinned", "supersedes", "superseded_by", "conflict_group", "valid_to", "updated_at",
    "metadata",
)
_CHUNK = 500


def lock_existing(conn: Connection, user_id: str) -> SeqCounter | None:
    """Lock the user's row (PostgreSQL ``FOR UPDATE``) without creating it.

    ``None`` means the user was erased since the job planned: a job must not
    bring back a user row (or anything else) after ``forget_user``.
    """
    row = conn.execute(
        select(users.c.user_id, users.c.seq, users.c.generation, users.c.embed_model)
        .where(users.c.user_id == user_id)
        .with_for_update()
    ).first()
    if row is None:
        return None
    return SeqCounter(_store.UserState(user_id, int(row.seq), str(row.generation),
                                       row.embed_model))


def is_retrievable(status: Any) -> bool:
    return str(status) in _RETRIEVABLE


def _json_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def snapshot(conn: Connection, user_id: str, ids: Iterable[str],
             columns: Sequence[str] = RECORD_COLUMNS) -> dict[str, dict[str, Any]]:
    """Current values of ``columns`` for this user's records ``ids``."""
    wanted = list(dict.fromkeys(ids))
    out: dict[str, dict[str, Any]] = {}
    cols = [memories.c.id, *(memories.c[c] for c in columns)]
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        for row in conn.execute(
            select(*cols).where(_store.owned_by(user_id), memories.c.id.in_(chunk))
        ):
            m = row._mapping
            out[str(m["id"])] = {c: _json_value(m[c]) for c in columns}
    return out


def changed_columns(before: dict[str, Any], after: dict[str, Any]
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Only the columns whose values differ, as (before, after)."""
    keys = [k for k in after if before.get(k) != after.get(k)]
    return {k: before.get(k) for k in keys}, {k: after[k] for k in keys}


def _matches(current: dict[str, Any], expected: dict[str, Any]) -> bool:
    return all(_json_value(current.get(k)) == _json_value(v) for k, v in expected.items())


def apply_updates(
    conn: Connection,
    user_id: str,
    actions: Sequence[PlannedAction],
    counter: SeqCounter,
    *,
    verify: bool,
    always_stamp: bool = False,
) -> tuple[list[PlannedAction], list[str]]:
    """Write the ``after`` columns of update actions; returns (applied, errors).

    With ``verify`` each record must still hold the action's ``before`` values
    (an action whose record changed or vanished is skipped and reported).
    ``seq`` is stamped when the status crosses the retrievable boundary, or on
    every row with ``always_stamp`` (undo: the indexes must re-read the row).
    """
    todo = [a for a in actions if a.before is not None and a.after is not None and a.memory_id]
    errors: list[str] = []
    if verify and todo:
        current = snapshot(conn, user_id, [str(a.memory_id) for a in todo])
        kept = []
        for a in todo:
            row = current.get(str(a.memory_id))
            assert a.before is not None
            if row is None:
                errors.append(f"{a.action} {a.memory_id}: the record no longer exists")
            elif not _matches(row, a.before):
                errors.append(f"{a.action} {a.memory_id}: the record changed since it was "
                              f"planned; left as it is")
            else:
                kept.append(a)
        todo = kept
    groups: dict[tuple[tuple[str, ...], bool], list[dict[str, Any]]] = {}
    for a in todo:
        assert a.before is not None and a.after is not None
        stamp = always_stamp or (
            "status" in a.after
            and is_retrievable(a.before.get("status")) != is_retrievable(a.after["status"])
        )
        cols = tuple(sorted(a.after))
        params: dict[str, Any] = {"_u": user_id, "_id": a.memory_id}
        for c in cols:
            params[f"_v_{c}"] = a.after[c]
        if stamp:
            params["_v_seq"] = counter.next()
        groups.setdefault((cols, stamp), []).append(params)
    for (cols, stamp), rows in groups.items():
        values: dict[str, Any] = {c: bindparam(f"_v_{c}", type_=memories.c[c].type) for c in cols}
        if stamp:
            values["seq"] = bindparam("_v_seq", type_=memories.c.seq.type)
        stmt = (
            update(memories)
            .where(memories.c.user_id == bindparam("_u"), memories.c.id == bindparam("_id"))
            .values(values)
        )
        conn.execute(stmt, rows)
    return todo, errors


def purge(conn: Connection, user_id: str, actions: Sequence[PlannedAction],
          counter: SeqCounter, *, reason: str, now: float) -> list[PlannedAction]:
    """Hard-delete records (vectors and links go too; one content-free event each)."""
    ids = [str(a.memory_id) for a in actions if a.memory_id]
    if not ids:
        return []
    deleted = set(_store.delete_records(conn, user_id, ids, counter, action="purged",
                                        reason=reason, now=now))
    return [a for a in actions if a.memory_id in deleted]
