"""Forgetting: what one ``forget`` removes, memory's own eraser, and the pending
index-file cleanup of ``forget_user``.

**One memory** (:func:`plan_forget`): the record and every version of it
(its supersession chain and slot history), the raw conversation turns it was
formed from (``metadata.turn_id``; for a summary or an LLM-extracted fact the
``metadata.turns`` range of its session), and - one hop further - every other
record formed from those same turns (a session summary quoting the turn, a fact
read from it). The texts to scrub elsewhere are their contents, slot values,
corrected words and the turns' text. Every registered eraser
(:mod:`memstrata.erasure`) then runs in the same transaction.

**Memory's eraser** (:class:`MemoryEraser`, registered under
``memstrata.erasers`` as ``memory``): deletes the records (vectors cascade),
their audit events, and the turns; leaves one content-free ``forgotten`` event
per record (it carries the ``seq`` that makes every process's derived indexes
drop the record); scrubs the texts out of other events, task goals, task state
and trajectory steps.

**A whole user**: every row with the user's id goes, in one transaction, which
also records the erasure (the user id replaced by a keyed hash, counts only)
and a *pending* index cleanup (the shard file key); the files are deleted after
the commit and the pending row removed. A crash in between leaves the row:
the next ``MemoryManager.open`` finishes the cleanup (:func:`pending_cleanups`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from memstrata import _text
from memstrata.erasure import REDACTED, Forgotten, contains, scrub, scrubbable
from memstrata.memory import _store
from memstrata.memory._schema import (
    memories,
    memory_events,
    memory_vectors,
    meta_table,
    pending_erasures,
    task_steps,
    tasks,
    turns,
    users,
)
from memstrata.memory._shards import user_key
from memstrata.memory._store import SeqCounter

__all__ = [
    "MemoryEraser",
    "clear_pending",
    "pending_cleanups",
    "plan_forget",
    "record_pending",
    "record_user_erased",
    "tombstone_salt",
]


def _turn_refs(row: Any) -> tuple[str | None, set[int], tuple[int, int] | None]:
    """(session, single turn ids, turn range) a record says it was formed from."""
    meta = row.metadata or {}
    single: set[int] = set()
    if isinstance(meta.get("turn_id"), int) and meta["turn_id"] > 0:
        single.add(int(meta["turn_id"]))
    # the turns that restated it (``observe`` answered "reinforced")
    restated = meta.get("restated_turns")
    if isinstance(restated, list):
        single |= {int(t) for t in restated if isinstance(t, int) and t > 0}
    span = meta.get("turns")
    rng = None
    if isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span):
        rng = (int(span[0]), int(span[1]))
    return row.session_id, single, rng


def _turns_of(conn: Connection, user_id: str, rows: Iterable[Any]) -> set[int]:
    """The ids of the turns ``rows`` were formed from or restated by."""
    turn_ids: set[int] = set()
    for row in rows:
        session, single, rng = _turn_refs(row)
        turn_ids |= single
        if rng is not None and session is not None:
            turn_ids |= set(conn.execute(
                select(turns.c.id).where(turns.c.user_id == user_id,
                                         turns.c.session_id == session,
                                         turns.c.id >= rng[0], turns.c.id <= rng[1])
            ).scalars())
    return turn_ids


def _erased_turns(conn: Connection, user_id: str, turn_ids: set[int]) -> list[Any]:
    return list(conn.execute(
        select(turns.c.id, turns.c.session_id, turns.c.text)
        .where(turns.c.user_id == user_id, turns.c.id.in_(sorted(turn_ids)))
    ).all()) if turn_ids else []


def plan_forget(conn: Connection, user_id: str, memory_id: str, *, history: bool
                ) -> Forgotten | None:
    """Everything one ``forget`` of ``memory_id`` removes; ``None`` if no such record."""
    if history:
        ids = _store.chain_ids(conn, user_id, memory_id)
    else:
        ids = [memory_id] if _store.fetch(conn, user_id, [memory_id]) else []
    if not ids:
        return None
    rows = dict(_store.fetch(conn, user_id, ids))
    turn_ids = _turns_of(conn, user_id, rows.values())
    erased_turns = _erased_turns(conn, user_id, turn_ids)
    # one hop: other records formed from the same turns
    sessions = sorted({str(t.session_id) for t in erased_turns})
    if sessions:
        for row in conn.execute(select(memories).where(
                memories.c.user_id == user_id, memories.c.session_id.in_(sessions))):
            if row.id in rows:
                continue
            _session, single, rng = _turn_refs(row)
            hit = bool(single & turn_ids) or (
                rng is not None and any(rng[0] <= t <= rng[1] for t in turn_ids))
            if hit:
                for extra in _store.chain_ids(conn, user_id, row.id):
                    rows.setdefault(extra, row)
        rows = dict(_store.fetch(conn, user_id, list(rows)))
        # and the turns that formed or restated those records: a record erased with the
        # hop leaves no turn that said it ("My email is X" formed an email and a
        # misread gym record; forgetting the gym took the email record with it and left
        # "As I said, my email is X", which the nightly summary quoted again)
        more = _turns_of(conn, user_id, rows.values()) - turn_ids
        if more:
            turn_ids |= more
            erased_turns = _erased_turns(conn, user_id, turn_ids)
    texts: list[str] = [t.text for t in erased_turns]
    embedded: list[str] = []
    for row in rows.values():
        texts += [row.content, row.context or "", row.value or ""]
        embedded += [_store.index_text(row.content, row.context, row.subject, row.attribute,
                                       row.value), *_text.sentences(row.content)]
        replaces = (row.metadata or {}).get("replaces")
        if isinstance(replaces, str):
            texts.append(replaces)
    return Forgotten(
        user_id=user_id,
        memory_ids=frozenset(rows),
        turn_ids=frozenset(int(t.id) for t in erased_turns),
        texts=scrubbable(texts),
        embedded=tuple(dict.fromkeys(embedded)),
    )


class MemoryEraser:
    """Erases memory's tables: records, vectors, events, turns, tasks, steps, users."""

    tables = ("memories", "memory_vectors", "memory_events", "turns", "tasks", "task_steps",
              "users")

    def forget(self, conn: Connection, what: Forgotten) -> dict[str, int]:
        user_id, ids, texts = what.user_id, sorted(what.memory_ids), what.texts
        counts: dict[str, int] = {}
        if ids:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                conn.execute(delete(memory_events).where(
                    memory_events.c.user_id == user_id, memory_events.c.memory_id.in_(chunk)))
            state = _store.lock_user(conn, user_id, what.at)
            counter = SeqCounter(state)
            reason = scrub(what.reason, texts) if texts else what.reason
            deleted = _store.delete_records(conn, user_id, ids, counter, action="forgotten",
                                            reason=reason, now=what.at)
            counter.commit(conn)
            counts["memories"] = len(deleted)
        if what.turn_ids:
            counts["turns"] = conn.execute(delete(turns).where(
                turns.c.user_id == user_id, turns.c.id.in_(sorted(what.turn_ids)))).rowcount
        if texts:
            counts["memory_events"] = _scrub_rows(
                conn, memory_events, user_id, ("reason", "details"), texts)
            counts["tasks"] = _scrub_rows(conn, tasks, user_id, ("goal", "state", "feedback"),
                                          texts, key="task_id")
            counts["task_steps"] = _scrub_rows(conn, task_steps, user_id, ("payload",), texts)
        return counts

    def forget_user(self, conn: Connection, user_id: str, tombstone: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for table in (task_steps, tasks, memory_vectors, memory_events, memories, turns):
            n = conn.execute(
                select(func.count()).select_from(table).where(table.c.user_id == user_id)
            ).scalar_one()
            if n:
                conn.execute(delete(table).where(table.c.user_id == user_id))
            counts[table.name] = int(n)
        conn.execute(delete(users).where(users.c.user_id == user_id))
        return counts


def record_user_erased(conn: Connection, user_id: str, tombstone: str, at: float,
                       reason: str, counts: dict[str, int]) -> None:
    """The content-free record of a whole-user erasure (the id replaced by ``tombstone``)."""
    conn.execute(insert(memory_events).values(
        user_id=tombstone, memory_id=None, action="user_erased",
        reason=REDACTED if user_id in reason else reason, at=at, seq=None,
        details=dict(counts)))


def _scrub_rows(conn: Connection, table: Any, user_id: str, columns: Iterable[str],
                texts: tuple[str, ...], *, key: str = "id") -> int:
    """Rewrite the rows of the user whose ``columns`` quote one of ``texts``."""
    cols = list(columns)
    changed = 0
    query = select(table.c[key], *(table.c[c] for c in cols)).where(table.c.user_id == user_id)
    for row in conn.execute(query).all():
        values = {c: row._mapping[c] for c in cols}
        if not any(contains(v, texts) for v in values.values()):
            continue
        conn.execute(update(table).where(table.c.user_id == user_id,
                                         table.c[key] == row._mapping[key])
                     .values({c: scrub(v, texts) for c, v in values.items()}))
        changed += 1
    return changed


# ---------------------------------------------------------------- whole-user file cleanup


def tombstone_salt(conn: Connection) -> str:
    """The key of :func:`memstrata.erasure.user_tombstone`: this database's own id."""
    value = conn.execute(
        select(meta_table.c.value).where(meta_table.c.key == "db_uuid")).scalar_one_or_none()
    return str(value or "")


def record_pending(conn: Connection, user_id: str, at: float) -> str:
    """Record (in the erasing transaction) that the user's index files must go."""
    key = user_key(user_id)
    exists = conn.execute(select(pending_erasures.c.file_key)
                          .where(pending_erasures.c.file_key == key)).first()
    if exists is None:
        conn.execute(insert(pending_erasures).values(file_key=key, requested_at=at))
    return key


def pending_cleanups(conn: Connection) -> list[str]:
    """File keys of erasures whose index files may still be on disk."""
    return [str(k) for k in conn.execute(
        select(pending_erasures.c.file_key).order_by(pending_erasures.c.requested_at))
        .scalars()]


def clear_pending(conn: Connection, keys: Iterable[str]) -> None:
    wanted = list(keys)
    if wanted:
        conn.execute(delete(pending_erasures).where(pending_erasures.c.file_key.in_(wanted)))
