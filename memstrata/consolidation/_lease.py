"""The lease row that keeps two processes from running one job at once.

A lease is a row of ``consolidation_leases`` (one per job, created by
migration 0002). Taking it is one write transaction: read the row (``FOR
UPDATE`` on PostgreSQL; SQLite is serialised by ``BEGIN IMMEDIATE``), refuse if
another holder's lease has not expired, else write our holder id and a new
expiry. The holder renews it inside every batch transaction, so a batch that
commits proves the lease was still ours; a holder that lost it (it stalled for
longer than the lease) fails its batch and stops.

A crashed holder's lease is taken over when it expires, or at once when the
holder id names a process on this host that no longer exists (a laptop
rerunning after a crash need not wait out the lease).

The row also remembers the newest *scheduled slot* (cron fire time) a run was
completed for: two schedulers that both fire the 03:00 job run it once - the
second finds the lease held, or the slot already done.

A *partitioned* run (worked by ``memstrata worker`` processes, see
:mod:`._partitions`) holds its job's lease for its whole life under the holder
``run:<run id>`` (:func:`run_holder`), with no practical expiry
(:data:`RUN_HOLD_SECONDS`): its workers come and go and their own short leases
are on the partition rows. The worker that finishes the last bucket releases
it. The slot is recorded when such a run is *created*, so two schedulers create
one run per slot.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects import postgresql, sqlite

from memstrata.consolidation._tables import leases
from memstrata.errors import InvalidInputError, LeaseHeldError

__all__ = [
    "RUN_HOLD_SECONDS",
    "Claim",
    "LeaseLostError",
    "acquire",
    "make_holder",
    "release",
    "renew",
    "run_holder",
]

#: how long a partitioned run holds its job's lease: until it finishes (ten years)
RUN_HOLD_SECONDS = 10 * 365 * 86400.0
_RUN_PREFIX = "run:"


class LeaseLostError(LeaseHeldError):
    """Another process took the lease over (this one stalled past its expiry)."""


def make_holder() -> str:
    """``host:pid:random`` - unique per run, and says which process holds it."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def run_holder(run_id: str) -> str:
    """The holder id of a partitioned run's job lease."""
    return f"{_RUN_PREFIX}{run_id}"


def _holder_dead(holder: str) -> bool:
    """True when ``holder`` names a process of this host that has exited."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@dataclass(frozen=True, slots=True)
class Claim:
    """Outcome of :func:`acquire`."""

    outcome: Literal["acquired", "slot_done"]
    #: the previous holder was taken over (expired or dead)
    took_over: str | None = None


def acquire(
    conn: Connection,
    name: str,
    holder: str,
    *,
    now: float,
    ttl: float,
    slot: float | None = None,
) -> Claim:
    """Take the lease ``name`` for ``holder`` or raise :class:`LeaseHeldError`.

    With ``slot`` (a scheduled fire time), returns ``slot_done`` without taking
    the lease when a run for that slot (or a later one) already completed.
    """
    query = select(leases).where(leases.c.name == name).with_for_update()
    row = conn.execute(query).first()
    if row is None:
        # a newly registered job: its lease row is created on first use (two first
        # runs racing cannot both create it; the loser then locks the winner's row)
        if not name or len(name) > 64:
            raise InvalidInputError(f"invalid job name {name!r}")
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        conn.execute(dialect.insert(leases).values(name=name)
                     .on_conflict_do_nothing(index_elements=["name"]))
        row = conn.execute(query).one()
    took_over = None
    if row.holder is not None and row.holder != holder:
        alive = row.expires_at is not None and row.expires_at > now
        if alive and row.holder.startswith(_RUN_PREFIX):
            raise LeaseHeldError(
                f"job {name!r} has a partitioned run open ({row.holder.removeprefix(_RUN_PREFIX)})"
                " - `memstrata worker` finishes it"
            )
        if alive and not _holder_dead(row.holder):
            raise LeaseHeldError(
                f"job {name!r} is running in another process ({row.holder}) - its lease "
                f"expires in {row.expires_at - now:.0f} s"
            )
        took_over = str(row.holder)
    if slot is not None and row.last_slot is not None and row.last_slot >= slot:
        return Claim("slot_done", took_over)
    conn.execute(
        update(leases)
        .where(leases.c.name == name)
        .values(holder=holder, acquired_at=now, expires_at=now + ttl)
    )
    return Claim("acquired", took_over)


def renew(conn: Connection, name: str, holder: str, *, now: float, ttl: float,
          run_id: str | None = None, slot: float | None = None) -> None:
    """Extend our lease inside the caller's transaction, or raise :class:`LeaseLostError`;
    with ``slot``, remember it as served (a partitioned run, at its creation)."""
    values: dict[str, object] = {"expires_at": now + ttl}
    if run_id is not None:
        values["run_id"] = run_id
    if slot is not None:
        values["last_slot"] = slot
    result = conn.execute(
        update(leases).where(leases.c.name == name, leases.c.holder == holder).values(**values)
    )
    if result.rowcount != 1:
        raise LeaseLostError(f"the lease of job {name!r} was taken over by another process")


def release(conn: Connection, name: str, holder: str, *, now: float,
            slot: float | None = None) -> None:
    """Give the lease back; with ``slot``, remember that this slot's run completed."""
    values: dict[str, object] = {"holder": None, "expires_at": now, "run_id": None}
    if slot is not None:
        values["last_slot"] = slot
    conn.execute(
        update(leases).where(leases.c.name == name, leases.c.holder == holder).values(**values)
    )
