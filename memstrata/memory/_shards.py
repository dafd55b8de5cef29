"""Per-user shards of a local derived index: on-demand loading, an LRU bounded
by a memory budget, atomic persistence, per-user locks.

A shard file is a cache of SQL state, never the only copy: a missing, torn or
foreign file (another database, another user) is ignored and the shard is
rebuilt from SQL by the sync.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from memstrata.errors import ClosedError
from memstrata.memory.vector import Fence, IndexBatch, Watermark

__all__ = ["Shard", "ShardCache", "ShardedIndex", "key_file", "user_file", "user_key"]

DEFAULT_SAVE_EVERY = 2000


class Shard(Protocol):
    #: changes applied since the last save
    unsaved: int
    #: the SQL state the shard reflects
    watermark: Watermark | None

    def nbytes(self) -> int: ...

    def count(self) -> int:
        """Live records in the shard."""
        ...

    def save(self, path: Path) -> None: ...

    def apply(self, batch: IndexBatch) -> None:
        """Remove, then upsert (idempotent)."""
        ...


S = TypeVar("S", bound=Shard)


def user_key(user_id: str) -> str:
    """The name a user's shard files go by (a digest: file names hold no user id)."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:40]


def user_file(directory: Path, user_id: str, suffix: str) -> Path:
    key = user_key(user_id)
    return key_file(directory, key, suffix)


def key_file(directory: Path, key: str, suffix: str) -> Path:
    return directory / key[:2] / f"{key}.{suffix}"


class ShardCache(Generic[S]):
    """Holds loaded shards up to ``budget_bytes``; least recently used go first.

    The budget is soft in one way: the shard being used is never evicted, even
    when it alone is larger than the budget.
    """

    def __init__(
        self,
        *,
        directory: Path | None,
        suffix: str,
        budget_bytes: int,
        load: Callable[[Path, str], S | None],
        create: Callable[[], S],
        save_every: int = DEFAULT_SAVE_EVERY,
    ) -> None:
        self._dir = directory
        self._suffix = suffix
        self._budget = budget_bytes
        self._load = load
        self._create = create
        self._save_every = save_every
        self._shards: OrderedDict[str, S] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()
        self._user_locks: dict[str, threading.RLock] = {}
        self._closed = False
        #: may this shard still be written? (``None``: always) - see :meth:`_save`
        self.fence: Fence | None = None

    def path(self, user_id: str) -> Path | None:
        return None if self._dir is None else user_file(self._dir, user_id, self._suffix)

    @contextmanager
    def locked(self, user_id: str) -> Iterator[None]:
        with self._lock:
            lock = self._user_locks.setdefault(user_id, threading.RLock())
        with lock:
            yield

    def get(self, user_id: str) -> S:
        """The user's shard: from memory, else from disk, else empty. Hold ``locked``."""
        with self._lock:
            if self._closed:
                raise ClosedError("the index is closed")
            shard = self._shards.get(user_id)
            if shard is not None:
                self._shards.move_to_end(user_id)
                return shard
        path = self.path(user_id)
        loaded = self._load(path, user_id) if path is not None and path.exists() else None
        shard = loaded if loaded is not None else self._create()
        self.touch(user_id, shard)
        return shard

    def in_memory(self, user_id: str) -> bool:
        with self._lock:
            return user_id in self._shards

    def peek(self, user_id: str) -> S | None:
        """The shard if it is in memory or on disk, without creating one."""
        with self._lock:
            shard = self._shards.get(user_id)
        if shard is not None:
            return shard
        path = self.path(user_id)
        if path is None or not path.exists():
            return None
        return self.get(user_id)

    def touch(self, user_id: str, shard: S) -> None:
        """(Re)account the shard's size after a change; evict others if over budget."""
        evicted: list[tuple[str, S]] = []
        with self._lock:
            self._shards[user_id] = shard
            self._shards.move_to_end(user_id)
            self._sizes[user_id] = shard.nbytes()
            total = sum(self._sizes.values())
            while total > self._budget and len(self._shards) > 1:
                victim, victim_shard = self._shards.popitem(last=False)
                total -= self._sizes.pop(victim, 0)
                evicted.append((victim, victim_shard))
        for victim, victim_shard in evicted:
            # never wait for another user's lock here (two evicting threads would
            # deadlock); an unsaved evicted shard only costs a catch-up from SQL
            with self._lock:
                lock = self._user_locks.setdefault(victim, threading.RLock())
            if lock.acquire(blocking=False):
                try:
                    self._save(victim, victim_shard)
                finally:
                    lock.release()
        if shard.unsaved >= self._save_every:
            self._save(user_id, shard)

    def _save(self, user_id: str, shard: S, *, force: bool = False) -> None:
        """Write the shard atomically - unless the fence says SQL moved on.

        A shard reflects one generation of the user in SQL. When that user was
        erased (or reindexed) by another process, writing it back would bring
        erased memories back to disk: the fence is asked before the write, and
        again after it (an erasure committed in between deletes the file itself
        once it has committed, or the second check does).
        """
        path = self.path(user_id)
        if path is None or (shard.unsaved == 0 and not force):
            return
        if self.fence is not None and not self.fence(user_id, shard.watermark):
            self._forget_stale(user_id, shard)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        shard.save(tmp)
        os.replace(tmp, path)
        shard.unsaved = 0
        if self.fence is not None and not self.fence(user_id, shard.watermark):
            path.unlink(missing_ok=True)
            self._forget_stale(user_id, shard)

    def _forget_stale(self, user_id: str, shard: S) -> None:
        with self._lock:
            if self._shards.get(user_id) is shard:
                del self._shards[user_id]
                self._sizes.pop(user_id, None)

    def save_now(self, user_id: str) -> None:
        """Write the user's shard now if this process holds it (after an erasure)."""
        with self._lock:
            shard = self._shards.get(user_id)
        if shard is not None:
            self._save(user_id, shard, force=True)

    def drop(self, user_id: str) -> None:
        with self._lock:
            self._shards.pop(user_id, None)
            self._sizes.pop(user_id, None)
        path = self.path(user_id)
        if path is not None:
            path.unlink(missing_ok=True)

    def clear_memory(self) -> None:
        """Save and unload every shard (the next use reloads from disk)."""
        self.flush()
        with self._lock:
            self._shards.clear()
            self._sizes.clear()

    def flush(self) -> None:
        with self._lock:
            items = list(self._shards.items())
        for user_id, shard in items:
            with self.locked(user_id):
                self._save(user_id, shard)

    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        with self._lock:
            self._closed = True
            self._shards.clear()
            self._sizes.clear()

    @property
    def loaded_bytes(self) -> int:
        with self._lock:
            return sum(self._sizes.values())

    @property
    def loaded_users(self) -> int:
        with self._lock:
            return len(self._shards)


class ShardedIndex(Generic[S]):
    """What every local derived index does the same way: one shard per user in a
    :class:`ShardCache`, the sync interface, and lifecycle. Subclasses set
    ``self._cache`` and say how to make an empty shard."""

    _cache: ShardCache[S]

    def _empty(self) -> S:
        raise NotImplementedError  # pragma: no cover - every subclass defines it

    def watermark(self, user_id: str) -> Watermark | None:
        with self._cache.locked(user_id):
            shard = self._cache.peek(user_id)
            return None if shard is None else shard.watermark

    def apply(self, user_id: str, batch: IndexBatch, *, reset: bool = False) -> None:
        with self._cache.locked(user_id):
            shard = self._empty() if reset else self._cache.get(user_id)
            shard.apply(batch)
            shard.watermark = batch.watermark
            if reset:
                shard.unsaved += 1  # an empty rebuilt shard must still be written
            self._cache.touch(user_id, shard)

    def loaded(self, user_id: str) -> bool:
        return self._cache.in_memory(user_id)

    def set_fence(self, fence: Fence) -> None:
        self._cache.fence = fence

    def erase(self, user_id: str, ids: Sequence[str], watermark: Watermark | None) -> None:
        """Remove records for good and write the shard now (files never keep them)."""
        with self._cache.locked(user_id):
            shard = self._cache.peek(user_id)
            if shard is None:
                return
            shard.apply(IndexBatch((), ids, watermark or shard.watermark
                                   or Watermark("", 0)))
            if watermark is not None:
                shard.watermark = watermark
            self._cache.touch(user_id, shard)
            self._cache.save_now(user_id)

    def size(self, user_id: str) -> int:
        with self._cache.locked(user_id):
            shard = self._cache.peek(user_id)
            return 0 if shard is None else shard.count()

    def drop_user(self, user_id: str) -> None:
        with self._cache.locked(user_id):
            self._cache.drop(user_id)

    def unload(self) -> None:
        """Save and drop every shard from memory (benchmarks measure cold loads)."""
        self._cache.clear_memory()

    @property
    def loaded_bytes(self) -> int:
        return self._cache.loaded_bytes

    def flush(self) -> None:
        self._cache.flush()

    def close(self) -> None:
        self._cache.close()
