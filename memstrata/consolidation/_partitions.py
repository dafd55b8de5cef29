"""SQL of partitioned runs: the work queue that workers share through the database.

A partitioned run (``consolidation_runs.partitions`` = N) splits its users into
N buckets by a stable hash of the user id (:func:`bucket`), one row of
``consolidation_partitions`` per bucket. Any number of workers, on any hosts,
claim buckets from the same database:

* **claim** - one write transaction: pick the first claimable row (pending, or
  running under a lease that has run out) with ``SELECT … FOR UPDATE SKIP
  LOCKED`` on PostgreSQL, so concurrent claimers never wait on or double-claim
  a row; SQLite serialises claimers by ``BEGIN IMMEDIATE`` (one writer, as
  everywhere on SQLite). The row gets our holder id and a lease of
  ``partition_lease_seconds`` (seconds, not minutes).
* **heartbeat** - a thread of the worker renews the lease every third of its
  length while it works (planning may call a model for longer than a lease);
  a worker killed with ``kill -9`` stops renewing and its row is claimable
  again within one lease.
* **batches** - each batch transaction *starts* by renewing the lease
  (:func:`renew`: ``UPDATE … WHERE holder = us``), which also takes the row's
  lock until commit. A claimer skips a locked row, so a bucket is never worked
  by two workers at once even when a stalled worker's lease runs out mid-batch:
  the new holder cannot claim it until that batch commits or rolls back, and
  the stalled worker's next batch finds the row no longer its own
  (:class:`~memstrata.consolidation._lease.LeaseLostError`) and stops. The
  batch's changes, recorded actions and the bucket's checkpoint cursor commit
  together, so every record's change is applied exactly once whoever finishes
  the bucket.
* **finish** - the worker that completes the last bucket (under the run row's
  lock, so two finishing at once cannot both miss it) folds the buckets'
  counts and errors into the run row and closes the run.

Lease times are the workers' wall clocks (``time.time()``); hosts must keep
them in step (NTP), with a lease much longer than their skew.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, func, insert, or_, select, update

from memstrata.consolidation._job import combine_methods
from memstrata.consolidation._lease import LeaseLostError
from memstrata.consolidation._tables import partitions, runs
from memstrata.consolidation.reports import Method

__all__ = [
    "Claimed",
    "bucket",
    "checkpoint",
    "claim",
    "create",
    "default_count",
    "finish",
    "fold",
    "list_partitions",
    "release",
    "renew",
]

#: errors kept per partition
MAX_ERRORS_KEPT = 50
#: most buckets a run is split into by default
MAX_DEFAULT_PARTITIONS = 256


def bucket(user_id: str, partitions: int) -> int:
    """The bucket of a user: stable across processes, hosts and Python versions."""
    digest = hashlib.blake2b(user_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions


def default_count(users: int, users_per_partition: int) -> int:
    """Buckets for ``users`` users: about ``users_per_partition`` each, 1 to
    :data:`MAX_DEFAULT_PARTITIONS`."""
    return max(1, min(MAX_DEFAULT_PARTITIONS, math.ceil(users / users_per_partition)))


def create(conn: Connection, run_id: str, count: int) -> None:
    conn.execute(insert(partitions), [
        {"run_id": run_id, "part": part, "status": "pending", "holder": None,
         "lease_until": None, "heartbeat_at": None, "claims": 0, "cursor": None,
         "users_done": 0, "batches": 0, "counts": {}, "errors": [], "method": "none",
         "started_at": None, "finished_at": None}
        for part in range(count)
    ])


@dataclass(frozen=True, slots=True)
class Claimed:
    """A bucket a worker now holds."""

    run_id: str
    job: str
    part: int
    #: the run's number of buckets
    partitions: int
    #: the last user whose batch committed (resume after it)
    cursor: str | None
    #: the holder whose lease ran out, when this claim took the bucket over
    took_over: str | None
    #: tokens the run has spent so far (all workers)
    spent_tokens: int


def claim(conn: Connection, holder: str, *, now: float, ttl: float,
          run_id: str | None = None, jobs: Sequence[str] | None = None) -> Claimed | None:
    """Take the first claimable bucket (oldest run first), or ``None``."""
    claimable = or_(partitions.c.status == "pending",
                    and_(partitions.c.status == "running", partitions.c.lease_until < now))
    query = (
        select(partitions.c.run_id, partitions.c.part, partitions.c.cursor,
               partitions.c.holder, runs.c.job, runs.c.partitions, runs.c.prompt_tokens,
               runs.c.completion_tokens)
        .join(runs, runs.c.id == partitions.c.run_id)
        .where(claimable, runs.c.status.in_(["queued", "running"]))
        .order_by(runs.c.started_at, runs.c.id, partitions.c.part)
        .limit(1)
        .with_for_update(skip_locked=True, of=partitions)
    )
    if run_id is not None:
        query = query.where(partitions.c.run_id == run_id)
    if jobs is not None:
        query = query.where(runs.c.job.in_(list(jobs)))
    row = conn.execute(query).first()
    if row is None:
        return None
    conn.execute(
        update(partitions)
        .where(partitions.c.run_id == row.run_id, partitions.c.part == row.part)
        .values(status="running", holder=holder, lease_until=now + ttl, heartbeat_at=now,
                claims=partitions.c.claims + 1,
                started_at=func.coalesce(partitions.c.started_at, now))
    )
    conn.execute(update(runs).where(runs.c.id == row.run_id, runs.c.status == "queued")
                 .values(status="running", heartbeat_at=now))
    return Claimed(
        run_id=str(row.run_id), job=str(row.job), part=int(row.part),
        partitions=int(row.partitions), cursor=row.cursor,
        took_over=None if row.holder in (None, holder) else str(row.holder),
        spent_tokens=int(row.prompt_tokens) + int(row.completion_tokens),
    )


def renew(conn: Connection, run_id: str, part: int, holder: str, *, now: float,
          ttl: float) -> None:
    """Extend our lease (inside a batch: first, so the row stays locked to commit),
    or raise :class:`~memstrata.consolidation._lease.LeaseLostError`."""
    result = conn.execute(
        update(partitions)
        .where(partitions.c.run_id == run_id, partitions.c.part == part,
               partitions.c.holder == holder, partitions.c.status == "running")
        .values(lease_until=now + ttl, heartbeat_at=now)
    )
    if result.rowcount != 1:
        raise LeaseLostError(
            f"partition {part} of run {run_id} was taken over by another worker")


def checkpoint(conn: Connection, run_id: str, part: int, *, cursor: str, users: int,
               counts: dict[str, int], errors: Sequence[str], method: Method,
               lease_until: float) -> None:
    """Add one committed batch to the bucket's row (we hold its lock since :func:`renew`)
    and extend the lease from the commit: a batch longer than the lease would otherwise
    commit an expired lease, claimable before the heartbeat (blocked on the row's lock
    during the batch) renews it."""
    row = conn.execute(
        select(partitions.c.counts, partitions.c.errors, partitions.c.method)
        .where(partitions.c.run_id == run_id, partitions.c.part == part)
    ).one()
    merged = dict(row.counts or {})
    for key, n in counts.items():
        merged[key] = int(merged.get(key, 0)) + int(n)
    values: dict[str, Any] = {
        "cursor": cursor, "users_done": partitions.c.users_done + users,
        "batches": partitions.c.batches + 1, "counts": merged,
        "method": combine_methods(row.method, method),
        "lease_until": lease_until,
    }
    if errors:
        values["errors"] = [*list(row.errors or []), *errors][:MAX_ERRORS_KEPT]
    conn.execute(update(partitions)
                 .where(partitions.c.run_id == run_id, partitions.c.part == part)
                 .values(**values))


def add_llm(conn: Connection, run_id: str, llm: tuple[int, int, int]) -> None:
    """Add a batch's model calls and tokens to the run row (atomic increments)."""
    calls, prompt, completion = llm
    if calls or prompt or completion:
        conn.execute(update(runs).where(runs.c.id == run_id).values(
            llm_calls=runs.c.llm_calls + calls,
            prompt_tokens=runs.c.prompt_tokens + prompt,
            completion_tokens=runs.c.completion_tokens + completion,
        ))


def release(conn: Connection, run_id: str, part: int, holder: str, *,
            errors: Sequence[str] = ()) -> None:
    """Give a bucket back unfinished (a clean stop, a database failure): claimable again
    at once, after its checkpoint."""
    values: dict[str, Any] = {"status": "pending", "holder": None, "lease_until": None}
    if errors:
        row = conn.execute(select(partitions.c.errors).where(
            partitions.c.run_id == run_id, partitions.c.part == part)).first()
        if row is not None:
            values["errors"] = [*list(row.errors or []), *errors][:MAX_ERRORS_KEPT]
    conn.execute(
        update(partitions)
        .where(partitions.c.run_id == run_id, partitions.c.part == part,
               partitions.c.holder == holder)
        .values(**values)
    )


def finish(conn: Connection, run_id: str, part: int, holder: str, *, status: str,
           now: float, errors: Sequence[str] = ()) -> str | None:
    """Mark our bucket ``done`` (or ``failed``). When it was the run's last open
    bucket, returns the run's final status (the caller closes the run in this
    transaction); else ``None``."""
    # the run row first: finishers queue here, so the last one sees the others' rows
    conn.execute(select(runs.c.id).where(runs.c.id == run_id).with_for_update()).one()
    row = conn.execute(
        select(partitions.c.errors)
        .where(partitions.c.run_id == run_id, partitions.c.part == part,
               partitions.c.holder == holder)
    ).first()
    if row is None:
        raise LeaseLostError(
            f"partition {part} of run {run_id} was taken over by another worker")
    values: dict[str, Any] = {"status": status, "holder": None, "lease_until": None,
                              "finished_at": now}
    if errors:
        values["errors"] = [*list(row.errors or []), *errors][:MAX_ERRORS_KEPT]
    conn.execute(update(partitions)
                 .where(partitions.c.run_id == run_id, partitions.c.part == part)
                 .values(**values))
    states: dict[str, int] = {
        str(status): int(n) for status, n in conn.execute(
            select(partitions.c.status, func.count()).where(partitions.c.run_id == run_id)
            .group_by(partitions.c.status))}
    if set(states) - {"done", "failed"}:
        return None
    return "failed" if states.get("failed") else "finished"


@dataclass(frozen=True, slots=True)
class Folded:
    """The buckets' progress summed up, as the run row shows it."""

    users: int
    batches: int
    counts: dict[str, int]
    errors: list[str]
    method: Method
    claims: int


def fold(conn: Connection, run_id: str) -> Folded:
    users = batches = claims = 0
    counts: dict[str, int] = {}
    errors: list[str] = []
    method: Method = "none"
    for row in list_partitions(conn, run_id):
        users += int(row.users_done)
        batches += int(row.batches)
        claims += int(row.claims)
        for key, n in dict(row.counts or {}).items():
            counts[key] = counts.get(key, 0) + int(n)
        errors.extend(f"partition {row.part}: {e}" for e in row.errors or [])
        method = combine_methods(method, row.method)
    return Folded(users, batches, counts, errors, method, claims)


def list_partitions(conn: Connection, run_id: str) -> list[Any]:
    return list(conn.execute(select(partitions).where(partitions.c.run_id == run_id)
                             .order_by(partitions.c.part)))


def open_runs(conn: Connection, jobs: Sequence[str] | None = None) -> list[str]:
    """Partitioned runs not finished yet, oldest first."""
    query = select(runs.c.id).where(runs.c.partitions.is_not(None),
                                    runs.c.status.in_(["queued", "running"]))
    if jobs is not None:
        query = query.where(runs.c.job.in_(list(jobs)))
    return [str(r) for r in conn.execute(query.order_by(runs.c.started_at, runs.c.id))
            .scalars()]
