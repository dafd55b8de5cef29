"""Keeps the derived indexes (vector + keyword) in step with SQL, per user.

An index knows the ``(generation, seq)`` of the SQL state it reflects. Before a
search the manager calls :meth:`IndexSync.ensure`: one indexed SQL read of the
user row; when an index is behind it applies the rows changed above its
watermark, and when it is foreign (another generation, or ahead of SQL - a
stale file from an erased user) it is rebuilt from scratch. Writers that just
committed hand their own changes over with :meth:`IndexSync.apply_own`,
which skips the SQL read when the index was current before the write.
Several processes can share one database: each catches up from SQL.

Read order (``_read_order``): the user's state is read *before* the changed
rows. On PostgreSQL (READ COMMITTED) each statement sees its own snapshot; rows
read after the state can only be newer than it - applying them early is
harmless because applying is idempotent - whereas reading the state last could
claim a seq whose rows were committed between the two statements and never
read, leaving a record out of the index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from memstrata.errors import MemstrataError
from memstrata.memory import _store
from memstrata.memory._db import Database
from memstrata.memory._store import IndexRow, UserState
from memstrata.memory.vector import DerivedIndex, IndexBatch, Watermark

__all__ = ["IndexSync"]


class IndexSync:
    def __init__(self, db: Database, indexes: Sequence[DerivedIndex]) -> None:
        self._db = db
        self._indexes = list(indexes)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        for index in self._indexes:
            index.set_fence(self._current)

    def _current(self, user_id: str, mark: Watermark | None) -> bool:
        """The fence of persisted shards: is SQL still at this generation of the user?

        An erased user has no row (and a re-created one another generation), so a
        process still holding the old shard never writes it back to disk. A read
        that fails says no: not writing only costs a rebuild from SQL later.
        """
        if mark is None:
            return True
        try:
            with self._db.read() as conn:
                state = _store.user_state(conn, user_id)
        except MemstrataError:
            return False
        return state is not None and state.generation == mark.generation

    def _lock(self, user_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(user_id, threading.Lock())

    def state(self, user_id: str) -> UserState | None:
        with self._db.read() as conn:
            return _store.user_state(conn, user_id)

    def ensure(self, user_id: str, state: UserState | None = None) -> UserState | None:
        """Bring every index up to the current SQL state of the user."""
        if state is None:
            state = self.state(user_id)
        if state is None:
            for index in self._indexes:
                if index.watermark(user_id) is not None:
                    index.drop_user(user_id)
            return None
        target = Watermark(state.generation, state.seq)
        if all(index.watermark(user_id) == target for index in self._indexes):
            return state
        with self._lock(user_id):
            for index in self._indexes:
                self._catch_up(index, user_id, target)
        return state

    def _catch_up(
        self, index: DerivedIndex, user_id: str, target: Watermark, *, at_least: bool = False
    ) -> None:
        current = index.watermark(user_id)
        if current == target:
            return
        if (
            at_least
            and current is not None
            and current.generation == target.generation
            and current.seq >= target.seq
        ):
            return  # already past this commit (another writer's catch-up included it)
        if current is None or current.generation != target.generation or current.seq > target.seq:
            with self._db.read() as conn:
                now = _store.user_state(conn, user_id)  # first: see _read_order
                rows = _store.all_index_rows(conn, user_id)
            if now is None:
                index.drop_user(user_id)
                return
            index.apply(
                user_id,
                IndexBatch(rows, (), Watermark(now.generation, now.seq)),
                reset=True,
            )
            return
        with self._db.read() as conn:
            now = _store.user_state(conn, user_id)  # first: see _read_order
            upserts, removals = _store.changes_since(conn, user_id, current.seq)
        if now is None:
            index.drop_user(user_id)
            return
        index.apply(user_id, IndexBatch(upserts, removals, Watermark(now.generation, now.seq)))

    def apply_own(
        self,
        user_id: str,
        before: UserState,
        after: UserState,
        upserts: Sequence[IndexRow],
        removals: Sequence[str],
    ) -> None:
        """Apply a just-committed change; fall back to catching up from SQL."""
        old = Watermark(before.generation, before.seq)
        new = Watermark(after.generation, after.seq)
        with self._lock(user_id):
            for index in self._indexes:
                if index.watermark(user_id) == old:
                    index.apply(user_id, IndexBatch(upserts, removals, new))
                else:
                    self._catch_up(index, user_id, new, at_least=True)

    def refresh(self, user_id: str) -> None:
        """Catch up the indexes that hold the user *in memory* (a change committed
        elsewhere in this process); indexes that do not are caught up on next use."""
        loaded = [index for index in self._indexes if index.loaded(user_id)]
        if not loaded:
            return
        with self._db.read() as conn:
            state = _store.user_state(conn, user_id)
        if state is None:
            self.drop(user_id)
            return
        target = Watermark(state.generation, state.seq)
        with self._lock(user_id):
            for index in loaded:
                self._catch_up(index, user_id, target, at_least=True)

    def rebuild(self, user_id: str, progress: Callable[[int], None] | None = None) -> int:
        """Rebuild every index of the user from SQL; returns the number of records."""
        with self._lock(user_id):
            with self._db.read() as conn:
                state = _store.user_state(conn, user_id)  # first: see _read_order
                rows = _store.all_index_rows(conn, user_id)
            for index in self._indexes:
                if state is None:
                    index.drop_user(user_id)
                else:
                    index.apply(
                        user_id,
                        IndexBatch(rows, (), Watermark(state.generation, state.seq)),
                        reset=True,
                    )
            if progress is not None:
                progress(len(rows))
        return len(rows)

    def erase(self, user_id: str, before: UserState | None, after: UserState | None,
              ids: Sequence[str]) -> None:
        """Forgotten records leave every index now, in memory and on disk (the files
        are rewritten, not tombstoned)."""
        old = None if before is None else Watermark(before.generation, before.seq)
        new = None if after is None else Watermark(after.generation, after.seq)
        with self._lock(user_id):
            for index in self._indexes:
                current = old is not None and index.watermark(user_id) == old
                index.erase(user_id, ids, new if current else None)

    def drop(self, user_id: str) -> None:
        with self._lock(user_id):
            for index in self._indexes:
                index.drop_user(user_id)
