"""Retention policy: how long each type of memory lives, and when use extends it.

Pure rules, no storage. A record gets ``expires_at = at + ttl(type)``; every use
(returned by a recall, reinforced by a duplicate) moves it to at least
``now + ttl``. A record past its expiry that was never used since is *expired*:
it is ranked as demoted and the consolidation sweep demotes it; if it stays
unused for a further ``grace`` period it is *purgeable* and the sweep deletes
it. Pinned records and types with no TTL never expire.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Literal

from memstrata.types import MemoryType

__all__ = ["DEFAULT_TTL", "Lifecycle", "RetentionPolicy"]

#: Profile facts live longest, experiences shortest; rules never expire.
DEFAULT_TTL: Mapping[MemoryType, timedelta | None] = MappingProxyType(
    {
        MemoryType.PROFILE: timedelta(days=730),
        MemoryType.PREFERENCE: timedelta(days=180),
        MemoryType.KNOWLEDGE: timedelta(days=180),
        MemoryType.EVENT: timedelta(days=120),
        MemoryType.EXPERIENCE: timedelta(days=60),
        MemoryType.RULE: None,
        MemoryType.SUMMARY: timedelta(days=120),
    }
)
DEFAULT_GRACE = timedelta(days=30)
DEFAULT_DEMOTED_CONFIDENCE_FACTOR = 0.5

Lifecycle = Literal["alive", "expired", "purgeable"]


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """TTL per type and the grace period between demotion and deletion."""

    ttl: Mapping[MemoryType, timedelta | None] = field(default_factory=lambda: DEFAULT_TTL)
    #: the second idle period: an expired record unused this long is deleted
    grace: timedelta = DEFAULT_GRACE
    #: confidence of a record is multiplied by this when it is demoted
    demoted_confidence_factor: float = DEFAULT_DEMOTED_CONFIDENCE_FACTOR

    def __post_init__(self) -> None:
        if self.grace < timedelta(0):
            raise ValueError("grace must not be negative")
        if not 0.0 < self.demoted_confidence_factor <= 1.0:
            raise ValueError("demoted_confidence_factor must be in (0, 1]")
        merged = dict(DEFAULT_TTL)
        merged.update(self.ttl)
        for kind, ttl in merged.items():
            if ttl is not None and ttl <= timedelta(0):
                raise ValueError(f"ttl for {kind} must be positive or None")
        object.__setattr__(self, "ttl", MappingProxyType(merged))

    def ttl_for(self, kind: MemoryType) -> timedelta | None:
        return self.ttl.get(kind)

    def expires_at(
        self, kind: MemoryType, at: datetime, *, override: timedelta | None = None
    ) -> datetime | None:
        """Expiry of a new record of ``kind`` written at ``at``."""
        ttl = override if override is not None else self.ttl_for(kind)
        return None if ttl is None else at + ttl

    def extended(
        self, kind: MemoryType, current: datetime | None, now: datetime
    ) -> datetime | None:
        """Expiry after a use at ``now``: never earlier than before."""
        if current is None:
            return None
        ttl = self.ttl_for(kind)
        candidate = now + ttl if ttl is not None else current
        return max(current, candidate)

    def lifecycle(
        self, expires_at: datetime | None, *, pinned: bool, now: datetime
    ) -> Lifecycle:
        """Where a record stands: alive, expired (demote), or purgeable (delete).

        >>> from datetime import UTC, datetime, timedelta
        >>> policy = RetentionPolicy(grace=timedelta(days=30))
        >>> end = datetime(2026, 1, 1, tzinfo=UTC)
        >>> policy.lifecycle(end, pinned=False, now=end - timedelta(days=1))
        'alive'
        >>> policy.lifecycle(end, pinned=False, now=end + timedelta(days=29))
        'expired'
        >>> policy.lifecycle(end, pinned=False, now=end + timedelta(days=30))
        'purgeable'
        >>> policy.lifecycle(end, pinned=True, now=end + timedelta(days=999))
        'alive'
        """
        if pinned or expires_at is None or now < expires_at:
            return "alive"
        if now < expires_at + self.grace:
            return "expired"
        return "purgeable"
