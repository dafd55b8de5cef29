"""Reads of memory's tables for the packages above it (consolidation, eval, agent).

``memory/`` owns the records, users, turns and tasks tables; nothing outside it
writes them or imports its private modules. The consolidation jobs read a lot
in bulk, inside their own transactions (``MemoryManager.changes()`` or
``Database.read()``), so these functions take a SQLAlchemy ``Connection`` and
return plain rows; every one filters on the user it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import Connection, Row, and_, func, or_, select, union

from memstrata._sql import new_id
from memstrata.memory import _store
from memstrata.memory._schema import memories, memory_vectors, task_steps, tasks, turns, users
from memstrata.memory._store import index_text
from memstrata.types import USER_SUBJECT, MemoryInput, Source, Status

__all__ = [
    "RECORD_FIELDS",
    "ended_sessions_of",
    "episode_users",
    "expiry_candidates",
    "finished_tasks_of",
    "held_values_of",
    "indexed_text",
    "live_records",
    "new_id",
    "previous_user",
    "readable_records",
    "session_turns_of",
    "slot_key",
    "sources_exist",
    "task_step_payloads_of",
    "user_page",
]

_LIVE = (Status.ACTIVE.value, Status.DEMOTED.value, Status.PENDING_CONFIRMATION.value)

#: the record columns :func:`live_records` returns
RECORD_FIELDS: tuple[str, ...] = (
    "id", "scope", "type", "content", "content_hash", "subject", "attribute", "value",
    "slot_key", "confidence", "importance", "source", "session_id", "task_id", "created_at",
    "updated_at", "valid_from", "valid_to", "last_accessed_at", "access_count", "expires_at",
    "status", "pinned", "supersedes", "superseded_by", "conflict_group", "metadata",
)


def slot_key(subject: str, attribute: str) -> str:
    """The key under which one structured fact's values are matched."""
    return _store.slot_key(subject, attribute)


def indexed_text(item: MemoryInput) -> str:
    """What is embedded and keyword-indexed for a memory (context, slot, content)."""
    slot = item.slot
    return index_text(item.content, item.context, slot.subject if slot else None,
                      slot.attribute if slot else None, slot.value if slot else None)


def user_page(conn: Connection, after: str | None, limit: int | None) -> list[str]:
    """Users with long-term state, in id order, strictly after ``after``."""
    query = select(users.c.user_id)
    if after is not None:
        query = query.where(users.c.user_id > after)
    query = query.order_by(users.c.user_id)
    if limit is not None:
        query = query.limit(limit)
    return [str(u) for u in conn.execute(query).scalars()]


def previous_user(conn: Connection, user_id: str) -> str | None:
    """The greatest user id below ``user_id`` (a job cursor that must not name an
    erased user moves back to it: resuming after it skips nothing)."""
    value = conn.execute(select(func.max(users.c.user_id))
                         .where(users.c.user_id < user_id)).scalar_one_or_none()
    return None if value is None else str(value)


def live_records(conn: Connection, user_id: str
                 ) -> list[tuple[dict[str, Any], np.ndarray | None]]:
    """The user's retrievable records (``RECORD_FIELDS``) with their stored vectors,
    oldest first."""
    query = (
        select(*(memories.c[c] for c in RECORD_FIELDS), memory_vectors.c.vector)
        .select_from(
            memories.outerjoin(memory_vectors, memory_vectors.c.memory_id == memories.c.id)
        )
        .where(memories.c.user_id == user_id, memories.c.status.in_(_LIVE))
        .order_by(memories.c.valid_from, memories.c.id)
    )
    out = []
    for r in conn.execute(query):
        m = dict(r._mapping)
        blob = m.pop("vector")
        m["metadata"] = dict(m["metadata"] or {})
        out.append((m, None if blob is None else _store.decode_vector(blob)))
    return out


def expiry_candidates(conn: Connection, user_id: str, now: float, purge_before: float
                      ) -> list[Row[Any]]:
    """Records the retention sweep may act on: live records past their expiry,
    demoted records used again (or pinned), and soft-deleted records older than
    ``purge_before`` (id, status, confidence, expires_at, pinned, updated_at)."""
    m = memories.c
    active, demoted, deleted = (Status.ACTIVE.value, Status.DEMOTED.value,
                                Status.DELETED.value)
    return list(conn.execute(
        select(m.id, m.status, m.confidence, m.expires_at, m.pinned, m.updated_at)
        .where(
            m.user_id == user_id,
            or_(
                and_(m.status.in_([active, demoted]), m.expires_at.is_not(None),
                     m.expires_at <= now, m.pinned.is_(False)),
                and_(m.status == demoted,
                     or_(m.expires_at.is_(None), m.expires_at > now, m.pinned.is_(True))),
                and_(m.status == deleted, m.updated_at <= purge_before),
            ),
        )
        .order_by(m.id)
    ))


def readable_records(conn: Connection, user_id: str, *, every_source: bool = False
                     ) -> list[Row[Any]]:
    """The user's live records said by the user themself (``source`` user_explicit: what
    ``observe`` formed from their turns and what they asked to ``remember``; with
    ``every_source`` all of them), with what a reader reads them with: id, content,
    metadata (decoded), subject, attribute, value, status, source; oldest first."""
    m = memories.c
    query = select(m.id, m.content, m.metadata, m.subject, m.attribute, m.value, m.status,
                   m.source).where(m.user_id == user_id, m.status.in_(_LIVE))
    if not every_source:
        query = query.where(m.source == Source.USER_EXPLICIT.value)
    return list(conn.execute(query.order_by(m.valid_from, m.id)))


# ---------------------------------------------------------------- episodes


def episode_users(conn: Connection, after: str | None, limit: int | None) -> list[str]:
    """Users with conversation turns or tasks, in id order, strictly after ``after``."""
    q1 = select(turns.c.user_id.label("u"))
    q2 = select(tasks.c.user_id.label("u"))
    if after is not None:
        q1 = q1.where(turns.c.user_id > after)
        q2 = q2.where(tasks.c.user_id > after)
    both = union(q1, q2).subquery()
    query = select(both.c.u).order_by(both.c.u)
    if limit is not None:
        query = query.limit(limit)
    return [str(u) for u in conn.execute(query).scalars()]


def ended_sessions_of(conn: Connection, user_ids: Sequence[str], ended_before: float
                      ) -> dict[str, list[Any]]:
    """Each user's sessions whose last turn is at or before ``ended_before``, oldest first
    (users with none are absent): rows of (user_id, session_id, last turn id)."""
    out: dict[str, list[Any]] = {}
    for r in conn.execute(
            select(turns.c.user_id, turns.c.session_id, func.max(turns.c.id).label("last"))
            .where(turns.c.user_id.in_(list(user_ids)))
            .group_by(turns.c.user_id, turns.c.session_id)
            .having(func.max(turns.c.at) <= ended_before)
            .order_by(turns.c.user_id, func.min(turns.c.at))):
        out.setdefault(str(r.user_id), []).append(r)
    return out


def session_turns_of(conn: Connection, wanted: Sequence[tuple[str, str, int]]
                     ) -> dict[tuple[str, str], list[Row[Any]]]:
    """The turns of each (user, session) in ``wanted`` up to its turn id, in order."""
    if not wanted:
        return {}
    up_to = {(u, s): last for u, s, last in wanted}
    out: dict[tuple[str, str], list[Row[Any]]] = {key: [] for key in up_to}
    for r in conn.execute(
            select(turns)
            .where(turns.c.user_id.in_(sorted({u for u, _, _ in wanted})),
                   turns.c.session_id.in_(sorted({s for _, s, _ in wanted})),
                   turns.c.id <= max(up_to.values()))
            .order_by(turns.c.user_id, turns.c.session_id, turns.c.at, turns.c.id)):
        key = (str(r.user_id), str(r.session_id))
        if key in up_to and r.id <= up_to[key]:
            out[key].append(r)
    return out


def held_values_of(conn: Connection, user_ids: Sequence[str]
                   ) -> dict[str, list[tuple[str, str, str, str]]]:
    """Each user's active values about themselves: (scope, attribute, value, content) of
    every active slot whose subject is the user, ``content`` the statement it was said in
    (users with none are absent)."""
    out: dict[str, list[tuple[str, str, str, str]]] = {}
    m = memories.c
    for r in conn.execute(
            select(m.user_id, m.scope, m.attribute, m.value, m.content)
            .where(m.user_id.in_(list(user_ids)), m.status == Status.ACTIVE.value,
                   m.subject == USER_SUBJECT, m.attribute.is_not(None))
            .order_by(m.user_id, m.valid_from, m.id)):
        if r.value:
            out.setdefault(str(r.user_id), []).append(
                (str(r.scope), str(r.attribute), str(r.value), str(r.content)))
    return out


def finished_tasks_of(conn: Connection, user_ids: Sequence[str]) -> dict[str, list[Row[Any]]]:
    """Each user's tasks that ended (done, abandoned, failed), oldest end first (users with
    none are absent)."""
    out: dict[str, list[Row[Any]]] = {}
    for r in conn.execute(
            select(tasks).where(tasks.c.user_id.in_(list(user_ids)),
                                tasks.c.status.in_(["done", "abandoned", "failed"]))
            .order_by(tasks.c.user_id, tasks.c.finished_at, tasks.c.task_id)):
        out.setdefault(str(r.user_id), []).append(r)
    return out


def task_step_payloads_of(conn: Connection, wanted: Sequence[tuple[str, str]]
                          ) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The recorded steps of each (user, task) in ``wanted``, in order."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {key: [] for key in wanted}
    if not wanted:
        return out
    for r in conn.execute(
            select(task_steps.c.user_id, task_steps.c.task_id, task_steps.c.payload)
            .where(task_steps.c.user_id.in_(sorted({u for u, _ in wanted})),
                   task_steps.c.task_id.in_(sorted({t for _, t in wanted})))
            .order_by(task_steps.c.user_id, task_steps.c.task_id, task_steps.c.step_no)):
        key = (str(r.user_id), str(r.task_id))
        if key in out:
            out[key].append(dict(r.payload))
    return out


def turns_present(conn: Connection, user_id: str, ids: Sequence[int]) -> set[int]:
    """Which of these turn ids the user still has (a forget or an erase removes turns)."""
    wanted = sorted(set(ids))
    found: set[int] = set()
    for i in range(0, len(wanted), 500):
        found |= {int(x) for x in conn.execute(select(turns.c.id).where(
            turns.c.user_id == user_id, turns.c.id.in_(wanted[i:i + 500]))).scalars()}
    return found


def sources_exist(conn: Connection, user_id: str,
                  folded: Sequence[tuple[str, str, int]]) -> bool:
    """Are these (kind, id, last item) sources still there? ``session`` sources need
    their last turn, ``task`` sources their task (an erased user has neither)."""
    for kind, source_id, last in folded:
        if kind == "session":
            found = conn.execute(select(turns.c.id).where(
                turns.c.user_id == user_id, turns.c.session_id == source_id,
                turns.c.id == last)).first()
        else:
            found = conn.execute(select(tasks.c.task_id).where(
                tasks.c.user_id == user_id, tasks.c.task_id == source_id)).first()
        if found is None:
            return False
    return True
