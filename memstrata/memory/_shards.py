"""Per-user shards of a local derived index: on-demand loading, an LRU bounded
by a memory budget, atomic persistence, per-user locks.

A shard file is a cache of SQL state, never the only copy: a missing, torn or
foreign file (another database, another user) is ignored and the shard is
rebuilt from SQL by the sync.

**Self-checking files.** Every shard file starts with a fixed header - magic,
the kind of index, its format version, the payload's size and SHA-256 - and
then the payload (an ``.npz``). A truncated, empty or altered file, or one whose
payload does not hold together (postings past the documents...), is reported
by the loader as :class:`DamagedFileError`: the cache logs one warning on the
``memstrata`` logger, deletes the file and starts the shard empty, and the sync
rebuilds it from SQL (nothing is re-embedded: SQL holds the vectors). A whole
file of another format version (or from before the header existed) is rebuilt
quietly. No damage ever reaches the caller as an exception.

**Saving.** A shard is written to ``<name>.<pid>.<thread>.tmp``, fsynced and
renamed over the file. A save that fails (disk full, read-only, a file where a
folder should be) removes its tmp file *and* the now stale file - after an
erasure a stale file could still hold what was forgotten - and reports an
:class:`~memstrata.errors.IndexPersistError`: saves during work log it once and
retry later; :meth:`ShardCache.flush` and :meth:`ShardCache.close` raise it.
tmp files left by a killed process (a dead pid, or a pid younger than the
file) are deleted when a cache opens.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from memstrata.errors import ClosedError, IndexPersistError
from memstrata.memory.vector import Fence, IndexBatch, Watermark

__all__ = [
    "DamagedFileError",
    "Shard",
    "ShardCache",
    "ShardedIndex",
    "key_file",
    "read_checked",
    "remove_stale_tmp",
    "tmp_file",
    "user_file",
    "user_key",
    "write_checked",
]

DEFAULT_SAVE_EVERY = 2000
log = logging.getLogger("memstrata")

#: magic (PNG-style: a high byte and a newline catch text-mode mangling), kind,
#: format version, payload size, SHA-256 of the payload
_MAGIC = b"\x89MSHARD\n"
_HEADER = struct.Struct("<8s4sIQ32s")
_ZIP_MAGIC = b"PK\x03\x04"  # a shard written before the header existed
#: a tmp file of a live process older than that process by this much is a reused pid's
_PID_CLOCK_SLACK = 2.0
#: without /proc: a tmp file this old is stale whatever its pid (no save takes a day)
_STALE_TMP_SECONDS = 24 * 3600.0


class _StaleFileLeft(IndexPersistError):
    """A save failed and the previous file could not be removed either."""


class DamagedFileError(Exception):
    """A derived file that fails its checks (internal: the cache discards the file
    and the shard is rebuilt from SQL; it never reaches a caller)."""


def write_checked(path: Path, kind: bytes, version: int, payload: bytes) -> None:
    """Write ``payload`` behind a self-checking header, then fsync it."""
    header = _HEADER.pack(_MAGIC, kind, version, len(payload), hashlib.sha256(payload).digest())
    with open(path, "wb") as fh:
        fh.write(header)
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())


def read_checked(path: Path, kind: bytes, version: int) -> bytes | None:
    """The payload of a file written by :func:`write_checked`.

    ``None`` for a whole file of another version or kind (or from before headers):
    the caller rebuilds quietly. :class:`DamagedFileError` for a short, torn or
    altered file; :class:`FileNotFoundError` when there is none.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise DamagedFileError(f"cannot be read: {exc.strerror or exc}") from exc
    if data.startswith(_ZIP_MAGIC):
        return None
    if len(data) < _HEADER.size:
        raise DamagedFileError(f"{len(data)} bytes, shorter than its header")
    magic, got_kind, got_version, size, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC:
        raise DamagedFileError("no shard header")
    if got_kind != kind or got_version != version:
        return None
    payload = data[_HEADER.size:]
    if len(payload) != size:
        raise DamagedFileError(f"payload of {len(payload)} bytes, the header says {size}")
    if hashlib.sha256(payload).digest() != digest:
        raise DamagedFileError("checksum mismatch")
    return payload


def tmp_file(path: Path) -> Path:
    """Where a save of ``path`` writes before the rename (pid and thread: no clash)."""
    return path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def _process_start(pid: int) -> float | None:
    """Epoch seconds the process started (Linux /proc), ``None`` when it is not
    running; ``nan`` when alive but its start is unknown (no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None  # /proc works: the pid is gone
    except (OSError, ValueError, IndexError, StopIteration):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        pass  # alive, another user's
    return float("nan")


def _stale_tmp(path: Path) -> bool:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return False
    try:
        pid = int(path.name.split(".")[-3])
    except (IndexError, ValueError):
        return time.time() - mtime > _STALE_TMP_SECONDS
    start = _process_start(pid)
    if start is None:
        return True  # its writer is dead
    if start != start:  # nan: alive, start unknown
        return time.time() - mtime > _STALE_TMP_SECONDS
    return mtime < start - _PID_CLOCK_SLACK  # written by an earlier process with this pid


def remove_stale_tmp(directory: Path) -> int:
    """Delete the tmp files of saves that never finished (their process died);
    returns how many. A tmp file of a running save is left alone."""
    removed = 0
    try:
        parts = [p for p in directory.iterdir() if p.is_dir()]
    except OSError:
        return 0
    for part in parts:
        try:
            names = [p for p in part.iterdir() if p.name.endswith(".tmp")]
        except OSError:
            continue
        for tmp in names:
            if _stale_tmp(tmp):
                try:
                    tmp.unlink()
                    removed += 1
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    log.warning("cannot remove the stale index file %s: %s", tmp, exc)
    return removed


def _unlink(path: Path) -> bool:
    """Remove ``path`` if it exists; ``False`` if it could not be removed."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable (best effort: some systems cannot open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _why(exc: OSError, path: Path) -> str:
    """What an operator should read: disk full, read-only, or which path is wrong."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "disk full"
    if exc.errno == errno.EROFS:
        return f"read-only file system at {path.parent}"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied at {exc.filename or path.parent}"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        for parent in path.parents:
            if parent.exists() and not parent.is_dir():
                return f"{parent} is a file where a folder should be"
    return f"{exc.strerror or exc} ({exc.filename or path})"


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
        #: users whose last save failed -> ``unsaved`` at which to try again
        self._retry_at: dict[str, int] = {}
        self._failing = False
        self._warned: set[Path] = set()
        if directory is not None:
            remove_stale_tmp(directory)

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
        loaded = self._read(path, user_id) if path is not None and path.exists() else None
        shard = loaded if loaded is not None else self._create()
        self.touch(user_id, shard)
        return shard

    def _read(self, path: Path, user_id: str) -> S | None:
        """The shard on disk, or ``None``; a damaged file is deleted (one warning)."""
        try:
            return self._load(path, user_id)
        except FileNotFoundError:
            return None
        except DamagedFileError as exc:
            removed = _unlink(path)
            if path not in self._warned:
                self._warned.add(path)
                log.warning(
                    "index file %s is damaged (%s): %s; the user's shard is rebuilt from SQL",
                    path, exc, "discarded" if removed else "it could not be deleted",
                )
            return None

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
                    self._save_or_warn(victim, victim_shard)
                finally:
                    lock.release()
        if shard.unsaved >= max(self._save_every, self._retry_at.get(user_id, 0)):
            self._save_or_warn(user_id, shard)

    def _save_or_warn(self, user_id: str, shard: S) -> None:
        """A save in the course of work: a failure must not fail the change that SQL
        already committed. Warn once per run of failures; retry after
        ``save_every`` more changes (not on every change of a full disk)."""
        try:
            self._save(user_id, shard)
        except IndexPersistError as exc:
            self._retry_at[user_id] = shard.unsaved + self._save_every
            if not self._failing:
                self._failing = True
                log.warning("%s (index files are retried later)", exc)

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
        tmp = tmp_file(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            shard.save(tmp)
            os.replace(tmp, path)
        except OSError as exc:
            _unlink(tmp)
            # the file on disk no longer reflects SQL - and after an erasure it could
            # still hold what was forgotten: it goes too (rebuilt from SQL)
            reason = _why(exc, path)
            if not _unlink(path):
                raise _StaleFileLeft(
                    (user_id,), f"{reason}; the stale file {path} could not be removed either"
                ) from exc
            raise IndexPersistError((user_id,), reason) from exc
        _fsync_dir(path.parent)
        shard.unsaved = 0
        self._retry_at.pop(user_id, None)
        self._failing = False
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
        if shard is None:
            return
        try:
            self._save(user_id, shard, force=True)
        except _StaleFileLeft:
            raise  # the old file may keep what was just forgotten: say so
        except IndexPersistError as exc:
            log.warning("%s", exc)  # the old file is gone; nothing forgotten is left

    def drop(self, user_id: str) -> None:
        with self._lock:
            self._shards.pop(user_id, None)
            self._sizes.pop(user_id, None)
            self._retry_at.pop(user_id, None)
        path = self.path(user_id)
        if path is not None and not _unlink(path):
            raise IndexPersistError(
                (user_id,), f"the index file {path} of an erased user could not be deleted")

    def clear_memory(self) -> None:
        """Save and unload every shard (the next use reloads from disk)."""
        self.flush()
        with self._lock:
            self._shards.clear()
            self._sizes.clear()

    def flush(self) -> None:
        """Save every changed shard; every one is tried, then one
        :class:`~memstrata.errors.IndexPersistError` names how many failed."""
        with self._lock:
            items = list(self._shards.items())
        failed: list[IndexPersistError] = []
        for user_id, shard in items:
            with self.locked(user_id):
                try:
                    self._save(user_id, shard)
                except IndexPersistError as exc:
                    failed.append(exc)
        if failed:
            raise IndexPersistError.combine(failed)

    def close(self) -> None:
        """Save and unload; closed even when saving fails (the error is raised after)."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
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
