"""Working memory: per-session, in-process, bounded and short-lived.

Each session (``session:{id}:working``) is a ``cachetools.TTLCache``: entries
expire ``ttl`` seconds after they were set (default 15 minutes) and the least
recently used go first beyond ``max_entries``. It holds the current goal's
variables ("budget = 2000"), recent tool results and the last turns. It never
reaches long-term memory by itself: :meth:`WorkingMemory.promote` sends an
entry through the write policy and returns its decision.

Sessions belong to a user: the store is keyed by ``(user_id, session_id)``, so
two users with the same session id never share entries.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache, TTLCache

from memstrata.clock import Clock
from memstrata.errors import InvalidInputError, NotFoundError
from memstrata.types import MemoryInput, WriteDecision

__all__ = ["Turn", "WorkingMemory", "WorkingMemoryStore"]

Promoter = Callable[[str, MemoryInput | dict[str, Any]], WriteDecision]
_MISSING = object()
DEFAULT_TURNS_KEPT = 20


@dataclass(frozen=True, slots=True)
class Turn:
    role: str
    text: str
    at: float


def _check_key(key: Any) -> None:
    """A working-memory key is a string (a list raised a bare ``TypeError: unhashable``)."""
    if not isinstance(key, str):
        raise InvalidInputError(
            f"a working-memory key must be a string, not {type(key).__name__}")


class WorkingMemory:
    """One session's scratchpad. Thread-safe."""

    def __init__(
        self,
        user_id: str,
        session_id: str,
        *,
        max_entries: int,
        ttl_seconds: float,
        clock: Clock,
        promoter: Promoter,
        turns_kept: int = DEFAULT_TURNS_KEPT,
    ) -> None:
        self.user_id = user_id
        self.session_id = session_id
        self._clock = clock
        self._ttl = ttl_seconds
        self._entries: TTLCache[str, Any] = TTLCache(
            maxsize=max_entries, ttl=ttl_seconds, timer=self._now
        )
        self._turns: deque[Turn] = deque(maxlen=turns_kept)
        self._promoted: dict[str, str] = {}
        self._promoter = promoter
        self._lock = threading.RLock()

    def _now(self) -> float:
        return self._clock.now().timestamp()

    @property
    def key_space(self) -> str:
        return f"session:{self.session_id}:working"

    def set(self, key: str, value: Any) -> None:
        _check_key(key)
        with self._lock:
            self._entries[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        _check_key(key)
        with self._lock:
            return self._entries.get(key, default)

    def delete(self, key: str) -> bool:
        _check_key(key)
        with self._lock:
            return self._entries.pop(key, _MISSING) is not _MISSING

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            self._entries.expire()
            return len(self._entries)

    def items(self) -> list[tuple[str, Any]]:
        """Live (unexpired) entries."""
        with self._lock:
            self._entries.expire()
            return list(self._entries.items())

    def __iter__(self) -> Iterator[str]:
        return iter([key for key, _ in self.items()])

    def add_turn(self, role: str, text: str) -> None:
        with self._lock:
            self._turns.append(Turn(role, text, self._now()))

    def turns(self, last: int | None = None) -> list[Turn]:
        """Recent turns younger than the TTL, oldest first."""
        cutoff = self._now() - self._ttl
        with self._lock:
            live = [t for t in self._turns if t.at >= cutoff]
        return live if last is None else live[-last:]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._turns.clear()
            self._promoted.clear()

    def promote(self, key: str, *, content: str | None = None, **fields: Any) -> WriteDecision:
        """Send an entry through the write policy into long-term memory.

        ``content`` defaults to the value if it is text, else ``"key: value"``;
        other keyword arguments are :class:`~memstrata.MemoryInput` fields.
        """
        with self._lock:
            if key not in self._entries:  # NotFoundError is a KeyError too
                raise NotFoundError(f"no live working-memory entry {key!r} in {self.key_space}")
            value = self._entries[key]
        text = content if content is not None else (
            value if isinstance(value, str) else f"{key}: {value}"
        )
        fields.setdefault("session_id", self.session_id)
        # a dict: the write path checks it like any remember (typed errors, nothing written)
        decision = self._promoter(self.user_id, {**fields, "content": text})
        if decision.record_id is not None:
            with self._lock:
                self._promoted[key] = decision.record_id
        return decision

    def forget_records(self, record_ids: Collection[str]) -> int:
        """Drop entries that were promoted into records now forgotten."""
        with self._lock:
            doomed = [k for k, rid in self._promoted.items() if rid in record_ids]
            for key in doomed:
                self._entries.pop(key, None)
                del self._promoted[key]
            return len(doomed)


class WorkingMemoryStore:
    """All sessions of this process, in an LRU bounded by ``max_sessions``."""

    def __init__(
        self,
        *,
        clock: Clock,
        promoter: Promoter,
        max_sessions: int,
        max_entries: int,
        ttl_seconds: float,
    ) -> None:
        self._clock = clock
        self._promoter = promoter
        self._max_entries = max_entries
        self._ttl = ttl_seconds
        self._sessions: LRUCache[tuple[str, str], WorkingMemory] = LRUCache(maxsize=max_sessions)
        self._lock = threading.Lock()

    def session(self, user_id: str, session_id: str) -> WorkingMemory:
        key = (user_id, session_id)
        with self._lock:
            found = self._sessions.get(key)
            if found is None:
                found = WorkingMemory(
                    user_id,
                    session_id,
                    max_entries=self._max_entries,
                    ttl_seconds=self._ttl,
                    clock=self._clock,
                    promoter=self._promoter,
                )
                self._sessions[key] = found
            return found

    def sessions_of(self, user_id: str) -> list[WorkingMemory]:
        with self._lock:
            return [wm for (uid, _), wm in self._sessions.items() if uid == user_id]

    def forget_records(self, user_id: str, record_ids: Collection[str]) -> int:
        return sum(wm.forget_records(record_ids) for wm in self.sessions_of(user_id))

    def drop_user(self, user_id: str) -> int:
        with self._lock:
            keys = [k for k in self._sessions if k[0] == user_id]
            for key in keys:
                self._sessions[key].clear()
                del self._sessions[key]
        return len(keys)
