"""Time as a seam: every "now" in memstrata comes from a :class:`Clock`.

Tests and evaluations use :class:`ManualClock` so that decay, expiry and
schedules are exact; production uses :class:`SystemClock`. Times are always
timezone-aware UTC ``datetime`` in the API and float epoch seconds in SQL.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "SystemClock", "from_epoch", "to_epoch", "utc"]


@runtime_checkable
class Clock(Protocol):
    """Where memstrata reads the current time."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to; thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = utc(start) if start is not None else datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Move forward by ``delta`` (or ``timedelta(**kwargs)``) and return the new time."""
        step = delta if delta is not None else timedelta(**kwargs)
        if step < timedelta(0):
            raise ValueError("a ManualClock only moves forward")
        with self._lock:
            self._now += step
            return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (forward or backward; tests only)."""
        with self._lock:
            self._now = utc(when)


def utc(when: datetime) -> datetime:
    """``when`` as aware UTC; a naive datetime is taken to be UTC already."""
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def to_epoch(when: datetime) -> float:
    return utc(when).timestamp()


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
