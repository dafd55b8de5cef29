"""The :class:`Consolidator`: runs jobs safely - leased, batched, checkpointed, resumable.

::

    with MemoryManager.open(url) as memory:
        jobs = Consolidator(memory)                   # settings from the environment
        print(jobs.run("conflicts", dry_run=True).planned)
        report = jobs.run("conflicts")                # flags, merges, supersedes
        jobs.undo(report.run_id)                      # ... and back

A run goes:

1. take the job's lease row (:mod:`._lease`) - another live process holding it
   raises :class:`~memstrata.errors.LeaseHeldError`; a dead one's is taken over;
2. continue the job's unfinished run if there is one (same options), else
   start a new run row;
3. page through users in id order after the run's cursor, ``batch_users`` at a
   time; plan each user (outside the transaction when the job embeds or calls a
   model), then in **one write transaction**: renew the lease, apply every
   user's plan, record each action, advance the cursor and the counts. A crash
   loses at most the batch in flight, which the resumed run redoes - nothing is
   done twice because the actions, the changes and the cursor commit together;
4. finish: status, release the lease (remembering the scheduled slot served).

A dry run takes no lease and writes nothing: it plans every user and returns
the :class:`~memstrata.consolidation.reports.PlannedAction` list (the LLM is not
called in a dry run; plans show the offline method's judgement).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, update

from memstrata import telemetry
from memstrata._progress import Progress, ProgressBar
from memstrata._sql import new_id
from memstrata.clock import Clock, from_epoch, to_epoch
from memstrata.consolidation import _lease, _partitions, _runlog
from memstrata.consolidation._job import Job, JobContext, UserPlan, combine_methods
from memstrata.consolidation._llm import LLMGate
from memstrata.consolidation._tables import runs
from memstrata.consolidation._undo import UndoJob
from memstrata.consolidation.jobs import get_job, job_names
from memstrata.consolidation.reports import ActionRecord, Method, PlannedAction, RunReport
from memstrata.consolidation.settings import ConsolidationSettings
from memstrata.errors import (
    InvalidInputError,
    LeaseHeldError,
    MemstrataError,
    NotFoundError,
    ReadOnlyStorageError,
    SchemaVersionError,
    StateError,
    StorageError,
)
from memstrata.llm import LLMClient, RateLimit, Retry, Timeouts
from memstrata.memory import check_user

if TYPE_CHECKING:
    from memstrata.memory import Database
    from memstrata.memory.manager import MemoryManager

__all__ = ["Consolidator", "PartitionState", "RunHooks", "RunNotFoundError"]

#: planned actions a dry run hands back (its counts cover everything)
MAX_PLANNED = 10_000
#: times one worker takes a bucket back after the database failed under it, then gives up
MAX_RETRIES = 3


class RunNotFoundError(NotFoundError):
    """No consolidation run with this id."""


@dataclass(frozen=True, slots=True)
class RunHooks:
    """Callbacks at fixed points of a run, for operations and fault-injection tests.

    ``before_commit(run_id, batch)`` runs inside a batch's transaction, after
    its changes and before its commit; ``after_batch(run_id, batch)`` after the
    commit. A test kills the process in either to prove a crash loses nothing.
    """

    before_commit: Callable[[str, int], None] | None = None
    after_batch: Callable[[str, int], None] | None = None


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One bucket of a partitioned run, as ``memstrata runs RUN_ID`` shows it."""

    part: int
    #: pending / running / done / failed
    status: str
    #: the worker holding it now (``host:pid:random``)
    holder: str | None
    #: times claimed; more than one means a worker died or stopped and another went on
    claims: int
    users: int
    batches: int
    counts: dict[str, int]
    errors: tuple[str, ...]
    started_at: datetime | None
    finished_at: datetime | None
    lease_until: datetime | None


class _Heartbeat:
    """Renews a claimed bucket's lease every third of its length in a thread, so a
    slow batch (a model answering slowly) keeps it; :attr:`lost` tells the worker
    the bucket was taken over (it stalled for longer than a lease)."""

    def __init__(self, db: Database, run_id: str, part: int, holder: str, ttl: float
                 ) -> None:
        self._db, self._run, self._part, self._holder, self._ttl = db, run_id, part, holder, ttl
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True,
                                        name=f"memstrata-heartbeat-{part}")
        self.lost = False

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._done.wait(self._ttl / 3):
            try:
                with self._db.write() as conn:
                    _partitions.renew(conn, self._run, self._part, self._holder,
                                      now=time.time(), ttl=self._ttl)
            except _lease.LeaseLostError:
                self.lost = True
                return
            except MemstrataError:  # the database is busy or away: try at the next beat
                continue


class Consolidator:
    """Runs the consolidation jobs against one :class:`~memstrata.MemoryManager`."""

    def __init__(
        self,
        manager: MemoryManager,
        *,
        settings: ConsolidationSettings | None = None,
        llm: LLMClient | None = None,
        clock: Clock | None = None,
        hooks: RunHooks | None = None,
    ) -> None:
        self._manager = manager
        self.settings = settings if settings is not None else ConsolidationSettings.from_env()
        self._llm = llm
        self.clock: Clock = clock if clock is not None else manager.clock
        self._hooks = hooks or RunHooks()
        self._stop = threading.Event()

    @property
    def manager(self) -> MemoryManager:
        return self._manager

    @property
    def llm_configured(self) -> bool:
        return self._llm is not None or self.settings.llm.configured

    # ------------------------------------------------------------ public API

    def run(
        self,
        job: str,
        *,
        dry_run: bool = False,
        user_id: str | None = None,
        progress: Progress = False,
        slot: datetime | None = None,
    ) -> RunReport:
        """Run one registered job (:mod:`~memstrata.consolidation.jobs`) for every user or
        one; an unregistered name raises :class:`~memstrata.consolidation.jobs.UnknownJobError`."""
        get_job(job)
        only = None if user_id is None else check_user(user_id)
        with telemetry.span("memstrata.consolidation.job", job=job, dry_run=dry_run,
                            scheduled=slot is not None, one_user=only is not None) as sp:
            report = self._execute(self._job(job), dry_run=dry_run, only_user=only,
                                   progress=progress, slot=slot, options={})
            sp.set(_report_attributes(report))
            return report

    def run_all(self, jobs: list[str] | None = None, **options: Any) -> list[RunReport]:
        """Run several jobs in order (default: every registered job, in registration order)."""
        return [self.run(name, **options) for name in (jobs or list(job_names()))]

    def run_scheduled(self, job: str, slot: datetime) -> RunReport:
        """A scheduled run for the cron fire time ``slot``: at most one per slot across all
        schedulers; a job already running elsewhere is skipped (status ``skipped``)."""
        try:
            return self.run(job, slot=slot)
        except LeaseHeldError as exc:
            return self._skipped(job, str(exc), slot)

    def undo(self, run_id: str, *, progress: Progress = False, dry_run: bool = False
             ) -> RunReport:
        """Revert every recorded action of a run (see :mod:`._undo`)."""
        with self._manager.db.read() as conn:
            target = _runlog.get_run(conn, run_id)
        if target is None:
            raise RunNotFoundError(f"no consolidation run {run_id!r}")
        if target.job == "undo":
            raise InvalidInputError("an undo cannot be undone; run the job again instead")
        if target.undone_by is not None:
            raise StateError(f"run {run_id} was already undone by {target.undone_by}")
        with telemetry.span("memstrata.consolidation.job", job="undo", dry_run=dry_run,
                            undoes=run_id) as sp:
            report = self._execute(UndoJob(run_id, target.job), dry_run=dry_run,
                                   only_user=None, progress=progress, slot=None,
                                   options={"target": run_id})
            sp.set(_report_attributes(report))
            return report

    def runs(self, *, job: str | None = None, limit: int = 20) -> list[RunReport]:
        """Recent runs, newest first."""
        with self._manager.db.read() as conn:
            return [_runlog.to_report(r) for r in _runlog.list_runs(conn, job=job, limit=limit)]

    def get_run(self, run_id: str) -> RunReport:
        """One run; a partitioned run still being worked shows its buckets' progress."""
        with self._manager.db.read() as conn:
            row = _runlog.get_run(conn, run_id)
            if row is None:
                raise RunNotFoundError(f"no consolidation run {run_id!r}")
            if row.partitions is not None and row.status in ("queued", "running"):
                folded = _partitions.fold(conn, run_id)
                return dataclasses.replace(
                    _runlog.to_report(row), users=folded.users, batches=folded.batches,
                    counts=folded.counts, errors=tuple(folded.errors), method=folded.method)
        return _runlog.to_report(row)

    def partitions(self, run_id: str) -> list[PartitionState]:
        """The buckets of a partitioned run (empty for a run of one process)."""
        self.get_run(run_id)
        with self._manager.db.read() as conn:
            rows = _partitions.list_partitions(conn, run_id)
        return [PartitionState(
            part=int(r.part), status=r.status, holder=r.holder, claims=int(r.claims),
            users=int(r.users_done), batches=int(r.batches),
            counts={str(k): int(v) for k, v in dict(r.counts or {}).items()},
            errors=tuple(str(e) for e in r.errors or []),
            started_at=None if r.started_at is None else from_epoch(r.started_at),
            finished_at=None if r.finished_at is None else from_epoch(r.finished_at),
            lease_until=None if r.lease_until is None else from_epoch(r.lease_until),
        ) for r in rows]

    def actions(self, run_id: str, *, user_id: str | None = None, limit: int | None = None
                ) -> list[ActionRecord]:
        """The recorded actions of a run, in the order they were taken."""
        self.get_run(run_id)
        with self._manager.db.read() as conn:
            return _runlog.list_actions(conn, run_id, user_id=user_id, limit=limit)

    def request_stop(self) -> None:
        """Ask running jobs to stop after their current batch (clean shutdown)."""
        self._stop.set()

    # ------------------------------------------------------------ partitioned runs

    def create_run(self, job: str, *, partitions: int | None = None,
                   slot: datetime | None = None) -> RunReport:
        """Queue a partitioned run of ``job`` for workers (:meth:`work`, ``memstrata
        worker``) and return it (status ``queued``); nothing is applied here.

        The users are split into ``partitions`` buckets (default: the setting, or
        sized from the user count). The run holds the job's lease until its last
        bucket is done, so an in-process :meth:`run` of the job meanwhile raises
        :class:`~memstrata.errors.LeaseHeldError`, and so does a second
        :meth:`create_run`. With ``slot`` (a cron fire time) a slot that already has
        a run gives a ``skipped`` report: two schedulers create one run per slot.
        """
        spec = get_job(job)
        built = spec.factory()
        db = self._manager.db
        now = to_epoch(self.clock.now())
        slot_at = None if slot is None else to_epoch(slot)
        run_id = new_id()
        ctx = self._context(dry_run=False, run_id=run_id, options={}, gate=None)
        with db.write() as conn:
            claim = _lease.acquire(conn, built.lease, _lease.run_holder(run_id), now=now,
                                   ttl=_lease.RUN_HOLD_SECONDS, slot=slot_at)
            if claim.outcome == "slot_done":
                skipped = True
            else:
                skipped = False
                count = partitions or self.settings.partitions or _partitions.default_count(
                    len(built.users(conn, ctx, None, None)), self.settings.users_per_partition)
                budget = self.settings.llm.token_budget \
                    if spec.uses_llm and self.llm_configured else None
                _runlog.create_run(conn, run_id=run_id, job=job, only_user=None,
                                   slot=slot_at, holder=_lease.run_holder(run_id), now=now,
                                   token_budget=budget, options={}, status="queued",
                                   partitions=count)
                _partitions.create(conn, run_id, count)
                _lease.renew(conn, built.lease, _lease.run_holder(run_id), now=now,
                             ttl=_lease.RUN_HOLD_SECONDS, run_id=run_id, slot=slot_at)
        if skipped:
            return self._skipped(job, "this scheduled slot already has a run", slot)
        return self.get_run(run_id)

    def create_scheduled(self, job: str, slot: datetime) -> RunReport:
        """:meth:`create_run` for the cron fire time ``slot``; a job whose previous run
        is still open (in a process or in workers) is skipped (status ``skipped``)."""
        try:
            return self.create_run(job, slot=slot)
        except LeaseHeldError as exc:
            return self._skipped(job, str(exc), slot)

    def work(self, *, run_id: str | None = None, jobs: list[str] | None = None,
             holder: str | None = None, stop: threading.Event | None = None) -> int:
        """Claim buckets of queued partitioned runs and work them until none is
        claimable (or ``stop`` / :meth:`request_stop``); returns the buckets
        finished here. Safe in any number of processes and threads at once."""
        holder = holder or _lease.make_holder()
        finished = 0
        retried: Counter[tuple[str, int]] = Counter()
        while not self._stopped(stop):
            ttl = self.settings.partition_lease_seconds
            with self._manager.db.write() as conn:
                claimed = _partitions.claim(conn, holder, now=time.time(), ttl=ttl,
                                            run_id=run_id, jobs=jobs)
            if claimed is None:
                return finished
            outcome = self._work_partition(claimed, holder, stop)
            if outcome == "done":
                finished += 1
            elif outcome == "retry":
                retried[claimed.run_id, claimed.part] += 1
                if retried[claimed.run_id, claimed.part] >= MAX_RETRIES:
                    return finished  # the database keeps failing: let others (or later) try
        return finished

    def _stopped(self, stop: threading.Event | None) -> bool:
        return self._stop.is_set() or (stop is not None and stop.is_set())

    def _work_partition(self, claimed: _partitions.Claimed, holder: str,
                        stop: threading.Event | None) -> str:
        """Work one claimed bucket; returns ``done``, ``failed`` (a job error, kept in
        the bucket's errors), ``retry`` (the database failed mid-bucket: handed back,
        its committed batches kept), ``stopped`` (handed back) or ``lost`` (taken over)."""
        spec = get_job(claimed.job)
        job = spec.factory()
        client = self._client() if spec.uses_llm else None
        gate = None if client is None else self._gate(client, claimed.run_id,
                                                      claimed.spent_tokens)
        ctx = self._context(dry_run=False, run_id=claimed.run_id, options={}, gate=gate)
        run_id, part, count = claimed.run_id, claimed.part, claimed.partitions
        ttl = self.settings.partition_lease_seconds
        db = self._manager.db
        scan = min(10_000, self.settings.batch_users * count)

        def page(after: str | None) -> list[str]:
            mine: list[str] = []
            with db.read() as conn:
                while len(mine) < self.settings.batch_users:
                    chunk = job.users(conn, ctx, after, scan)
                    if not chunk:
                        break
                    mine.extend(u for u in chunk if _partitions.bucket(u, count) == part)
                    after = chunk[-1]
            return mine[: self.settings.batch_users]

        def guard(conn: Connection) -> None:
            _partitions.renew(conn, run_id, part, holder, now=time.time(), ttl=ttl)

        def record(conn: Connection, batch: _Batch) -> None:
            _partitions.checkpoint(conn, run_id, part, cursor=batch.users[-1],
                                   users=len(batch.users), counts=batch.counts(),
                                   errors=batch.errors, method=batch.method,
                                   lease_until=time.time() + ttl)
            _partitions.add_llm(conn, run_id, batch.llm)

        outcome = "done"
        errors: list[str] = []
        # with a model, on PostgreSQL, the next batches are planned (their calls in
        # flight) while this one is applied: the model's latency hides the writes, and
        # with two planned at once one batch's calls keep the model busy while the
        # other reads and embeds (the gate bounds the calls in flight of both). The
        # users of the batches differ, and a plan is only read until its own batch
        # applies it. Not on SQLite: each call books its tokens in a write
        # transaction, which would wait for the batch's (SQLite has one writer at a
        # time).
        batches = _Batches(self, job, ctx, ahead=gate is not None and not job.plan_in_txn
                           and db.dialect == "postgresql")
        with telemetry.span("memstrata.consolidation.partition", job=claimed.job,
                            run_id=run_id, partition=part, partitions=count) as sp, \
                _Heartbeat(db, run_id, part, holder, ttl) as beat:
            try:
                batches.fill(page, claimed.cursor)
                while batches.started:
                    if beat.lost:
                        outcome = "lost"
                        break
                    if self._stopped(stop):
                        outcome = "stopped"
                        break
                    users, planned = batches.result()
                    batches.fill(page, users[-1])
                    self._batch(job, ctx, run_id, users, guard, record, planned)
            except _lease.LeaseLostError:
                outcome = "lost"
            except (SchemaVersionError, ReadOnlyStorageError) as exc:
                outcome = "failed"
                errors.append(f"{type(exc).__name__}: {exc}")
                sp.record_error(exc)
            except StorageError as exc:  # a dropped connection, a failover, a full disk
                outcome = "retry"
                errors.append(f"retried after {type(exc).__name__}: {exc}")
                sp.record_error(exc)
            except MemstrataError as exc:
                outcome = "failed"
                errors.append(f"{type(exc).__name__}: {exc}")
                sp.record_error(exc)
            finally:
                batches.close()  # waits for calls in flight: their tokens are booked
            sp.set(outcome=outcome)
        if gate is not None and gate.disabled is not None:
            errors.append(f"llm: {gate.disabled}; the rest ran offline")
        if outcome == "lost":
            return outcome
        try:
            with db.write() as conn:
                if outcome in ("stopped", "retry"):
                    _partitions.release(conn, run_id, part, holder, errors=errors)
                    return outcome
                closing = _partitions.finish(conn, run_id, part, holder,
                                             status="done" if outcome == "done" else "failed",
                                             now=time.time(), errors=errors)
                if closing is not None:
                    self._close_partitioned(conn, job, run_id, closing)
        except _lease.LeaseLostError:  # taken over after our last batch: the taker closes it
            return "lost"
        except StorageError:
            if outcome != "retry":
                raise
            return outcome  # still away: our lease runs out and the bucket is claimed again
        return outcome

    def _close_partitioned(self, conn: Connection, job: Job, run_id: str, status: str
                           ) -> None:
        """Fold the buckets into the run row, close it and free the job's lease (in the
        last bucket's transaction)."""
        row = _runlog.get_run(conn, run_id)
        assert row is not None
        folded = _partitions.fold(conn, run_id)
        now = to_epoch(self.clock.now())
        conn.execute(update(runs).where(runs.c.id == run_id).values(
            users_done=folded.users, batches=folded.batches, counts=folded.counts,
            errors=folded.errors[:_runlog.MAX_ERRORS_KEPT], resumed=folded.claims - 1
            if folded.claims > int(row.partitions) else 0))
        _runlog.finish_run(conn, run_id, status, now, method=folded.method
                           if folded.method != "none" else "offline")
        _lease.release(conn, job.lease, _lease.run_holder(run_id), now=now,
                       slot=row.slot if status == "finished" else None)

    # ------------------------------------------------------------ internals

    def _job(self, name: str) -> Job:
        return get_job(name).factory()

    def _client(self) -> LLMClient | None:
        if self._llm is not None:
            return self._llm
        cfg = self.settings.llm
        if not cfg.configured:
            return None
        from memstrata.llm import OpenAIClient

        assert cfg.model is not None
        self._llm = OpenAIClient(
            model=cfg.model, base_url=cfg.base_url,
            api_key=None if cfg.api_key is None else cfg.api_key.get_secret_value(),
            timeouts=Timeouts(connect=cfg.connect_timeout, read=cfg.read_timeout),
            retry=Retry(max_attempts=cfg.retries + 1, base_delay=1.0, max_delay=8.0),
            rate_limit=RateLimit(cfg.requests_per_minute, cfg.tokens_per_minute),
        )
        return self._llm

    def _gate(self, client: LLMClient, run_id: str, spent: int) -> LLMGate:
        """This worker's gate to the model: the run's budget row (shared by all its
        workers), at most ``llm.concurrency`` calls in flight."""
        cfg = self.settings.llm
        return LLMGate.for_run(client, db=self._manager.db, clock=self.clock, run_id=run_id,
                               budget=cfg.token_budget, spent=spent, max_tokens=cfg.max_tokens,
                               concurrency=cfg.concurrency)

    def _context(self, *, dry_run: bool, run_id: str | None, options: dict[str, Any],
                 gate: LLMGate | None) -> JobContext:
        mm = self._manager
        return JobContext(
            db=mm.db, settings=self.settings, memory_settings=mm.settings,
            now=to_epoch(self.clock.now()), dry_run=dry_run, run_id=run_id,
            embedder_factory=lambda: mm.embedder, llm=gate, options=options,
        )

    def _pages(self, job: Job, ctx: JobContext, only_user: str | None, cursor: str | None
               ) -> tuple[int, Callable[[str | None], list[str]]]:
        batch = self.settings.batch_users
        db = self._manager.db

        def page(after: str | None) -> list[str]:
            if only_user is not None:
                return [only_user] if after is None or only_user > after else []
            with db.read() as conn:
                return job.users(conn, ctx, after, batch)

        if only_user is not None:
            total = 1 if cursor is None or only_user > cursor else 0
        else:
            with db.read() as conn:
                total = len(job.users(conn, ctx, cursor, None))
        return total, page

    def _execute(self, job: Job, *, dry_run: bool, only_user: str | None, progress: Progress,
                 slot: datetime | None, options: dict[str, Any]) -> RunReport:
        if dry_run:
            return self._dry_run(job, only_user, progress, options)
        db = self._manager.db
        now = to_epoch(self.clock.now())
        slot_at = None if slot is None else to_epoch(slot)
        holder = _lease.make_holder()
        with db.write() as conn:
            claim = _lease.acquire(conn, job.lease, holder, now=now,
                                   ttl=self.settings.lease_seconds, slot=slot_at)
            if claim.outcome == "slot_done":
                skipped = True
            else:
                skipped = False
                row = _runlog.resumable_run(conn, job.name, only_user, options, now)
                if row is not None:
                    run_id, cursor = str(row.id), row.cursor
                    spent = int(row.prompt_tokens) + int(row.completion_tokens)
                    _runlog.resume(conn, run_id, holder, now)
                else:
                    run_id, cursor, spent = new_id(), None, 0
                    budget = self.settings.llm.token_budget if self.llm_configured else None
                    _runlog.create_run(conn, run_id=run_id, job=job.name, only_user=only_user,
                                       slot=slot_at, holder=holder, now=now,
                                       token_budget=budget, options=options)
                _lease.renew(conn, job.lease, holder, now=now, ttl=self.settings.lease_seconds,
                             run_id=run_id)
        if skipped:
            return self._skipped(job.name, "this scheduled slot already ran", slot)
        uses_llm = job.name in job_names() and get_job(job.name).uses_llm  # undo: never
        client = self._client() if uses_llm else None
        gate = None if client is None else self._gate(client, run_id, spent)
        ctx = self._context(dry_run=False, run_id=run_id, options=options, gate=gate)
        try:
            status = self._batches(job, ctx, run_id, holder, only_user, cursor, progress)
        except _lease.LeaseLostError:
            raise
        except BaseException as exc:
            self._close(job, run_id, holder, "failed" if isinstance(exc, Exception)
                        else "interrupted", [f"{type(exc).__name__}: {exc}"], None)
            raise
        notes = [] if gate is None or gate.disabled is None else \
            [f"llm: {gate.disabled}; the rest ran offline"]
        self._close(job, run_id, holder, status, notes,
                    slot_at if status == "finished" else None,
                    method=None if client is not None or job.name == "undo" else "offline")
        if job.name == "undo" and status == "finished":
            self._mark_undone(str(options["target"]), run_id)
        return self.get_run(run_id)

    def _batches(self, job: Job, ctx: JobContext, run_id: str, holder: str,
                 only_user: str | None, cursor: str | None, progress: Progress) -> str:
        total, page = self._pages(job, ctx, only_user, cursor)
        ttl = self.settings.lease_seconds

        def guard(conn: Connection) -> None:
            _lease.renew(conn, job.lease, holder, now=ctx.now, ttl=ttl)

        def record(conn: Connection, batch: _Batch) -> None:
            _runlog.checkpoint(conn, run_id, cursor=batch.users[-1], users=len(batch.users),
                               counts=batch.counts(), errors=batch.errors,
                               method=batch.method, llm=batch.llm, now=ctx.now)

        with ProgressBar(progress, total, f"{job.name}", unit="user") as bar:
            while True:
                if self._stop.is_set():
                    return "interrupted"
                users = page(cursor)
                if not users:
                    return "finished"
                self._batch(job, ctx, run_id, users, guard, record)
                cursor = users[-1]
                bar.advance(len(users))

    def _batch(self, job: Job, ctx: JobContext, run_id: str, users: list[str],
               guard: Callable[[Connection], None],
               record: Callable[[Connection, _Batch], None],
               ahead: _Planned | None = None) -> _Batch:
        """One batch: plan (or take the plans made ``ahead`` while the previous batch
        was applied), then in one write transaction ``guard`` (renew the lease
        first: a lost lease changes nothing), apply, record the actions and
        ``record`` the checkpoint; commit."""
        ctx.now = to_epoch(self.clock.now()) if ahead is None else ahead.now
        ctx.batch += 1
        gate = ctx.llm
        llm_before = _llm_stats(gate)
        plans: dict[str, UserPlan] = {}
        errors: list[str] = []
        if ahead is not None:
            plans, errors = ahead.plans, list(ahead.errors)
        elif not job.plan_in_txn:
            plans = self._plan_all(job, ctx, users, errors)
        with self._manager.changes() as txn:
            conn = txn.conn
            guard(conn)
            done: list[PlannedAction] = []
            method: Method = "none"
            for user in users:
                if job.plan_in_txn:
                    txn.lock(user)  # serialise with the user's writers
                    plan = job.plan(conn, ctx, user)
                else:
                    plan = plans[user]
                applied = job.apply(txn, ctx, plan)
                done.extend(applied.actions)
                errors.extend(f"{user}: {e}" for e in [*plan.errors, *applied.errors])
                method = combine_methods(method, plan.method)
            if ahead is not None:
                llm = ahead.llm
            else:
                errors.extend(_take_errors(gate))
                after = _llm_stats(gate)
                llm = (after[0] - llm_before[0], after[1] - llm_before[1],
                       after[2] - llm_before[2])
            _runlog.record_actions(conn, run_id, ctx.batch, ctx.now, done)
            batch = _Batch(users, done, errors, method, llm)
            record(conn, batch)
            txn.flush()
            if self._hooks.before_commit is not None:
                self._hooks.before_commit(run_id, ctx.batch)
        if self._hooks.after_batch is not None:
            self._hooks.after_batch(run_id, ctx.batch)
        return batch

    def _plan_ahead(self, job: Job, ctx: JobContext, users: list[str]) -> _Planned:
        """A batch's plans, made on the planning thread while the batch before is
        applied (:meth:`_work_partition`): with its own "now", its own errors and the
        model calls it made (the applying thread makes none)."""
        ctx = dataclasses.replace(ctx, now=to_epoch(self.clock.now()))
        errors: list[str] = []
        assert ctx.llm is not None, "batches are planned ahead only with a model"
        with ctx.llm.tally() as tally:  # this batch's calls, not the other's planned at once
            plans = self._plan_all(job, ctx, users, errors)
        errors.extend(tally.errors)
        return _Planned(plans, errors, ctx.now, tally.counts)

    def _plan_all(self, job: Job, ctx: JobContext, users: list[str], errors: list[str]
                  ) -> dict[str, UserPlan]:
        """A batch's plans: through the job's ``plan_batch`` when it has one (its reads
        batched, its model calls concurrent), else user by user."""
        plan_batch = getattr(job, "plan_batch", None)
        if plan_batch is not None:
            return {p.user_id: p for p in plan_batch(self._manager.db, ctx, users)}
        return {user: self._plan(job, ctx, user, errors) for user in users}

    def _plan(self, job: Job, ctx: JobContext, user: str, errors: list[str]) -> UserPlan:
        try:
            with self._manager.db.read() as conn:
                return job.plan(conn, ctx, user)
        except MemstrataError as exc:
            errors.append(f"{user}: {type(exc).__name__}: {exc}")
            return UserPlan(user)

    def _close(self, job: Job, run_id: str, holder: str, status: str, errors: list[str],
               slot: float | None, *, method: Method | None = None) -> None:
        now = to_epoch(self.clock.now())
        with self._manager.db.write() as conn:
            _runlog.finish_run(conn, run_id, status, now, errors=errors, method=method)
            _lease.release(conn, job.lease, holder, now=now, slot=slot)

    def _mark_undone(self, target: str, undo_run: str) -> None:
        with self._manager.db.write() as conn:
            row = _runlog.get_run(conn, target)
            values: dict[str, Any] = {"undone_by": undo_run}
            if row is not None and row.status in ("running", "interrupted", "failed"):
                values["status"] = "abandoned"
            conn.execute(update(runs).where(runs.c.id == target).values(**values))

    def _dry_run(self, job: Job, only_user: str | None, progress: Progress,
                 options: dict[str, Any]) -> RunReport:
        started = self.clock.now()
        ctx = self._context(dry_run=True, run_id=None, options=options, gate=None)
        total, page = self._pages(job, ctx, only_user, None)
        planned: list[PlannedAction] = []
        counts: Counter[str] = Counter()
        errors: list[str] = []
        method: Method = "none"
        users = batches = 0
        cursor: str | None = None
        with ProgressBar(progress, total, f"{job.name} (dry run)", unit="user") as bar:
            while True:
                chunk = page(cursor)
                if not chunk:
                    break
                batches += 1
                for user in chunk:
                    plan = self._plan(job, ctx, user, errors)
                    errors.extend(f"{user}: {e}" for e in plan.errors)
                    method = combine_methods(method, plan.method)
                    counts.update(a.action for a in plan.actions)
                    room = MAX_PLANNED - len(planned)
                    if room > 0:
                        planned.extend(plan.actions[:room])
                users += len(chunk)
                cursor = chunk[-1]
                bar.advance(len(chunk))
        return RunReport(
            run_id=None, job=job.name, status="dry_run", dry_run=True, started_at=started,
            finished_at=self.clock.now(), counts=dict(counts), errors=tuple(errors),
            method=method, users=users, batches=batches, only_user=only_user,
            options=options, planned=tuple(planned),
        )

    def _skipped(self, job: str, why: str, slot: datetime | None) -> RunReport:
        now = self.clock.now()
        return RunReport(run_id=None, job=job, status="skipped", dry_run=False, started_at=now,
                         finished_at=now, counts={}, errors=(why,), method="none", slot=slot)


@dataclass(frozen=True, slots=True)
class _Planned:
    """The plans of a batch made ahead (:meth:`Consolidator._plan_ahead`)."""

    plans: dict[str, UserPlan]
    errors: list[str]
    now: float
    llm: tuple[int, int, int]


class _Batches:
    """A bucket's batches in order: pages of users, each planned ahead on background
    threads (:meth:`Consolidator._plan_ahead`, at most :attr:`DEPTH` at once) when
    ``ahead``, else planned when applied (:meth:`Consolidator._batch`)."""

    #: batches planned at once
    DEPTH = 2

    def __init__(self, runner: Consolidator, job: Job, ctx: JobContext, *, ahead: bool
                 ) -> None:
        self._runner, self._job, self._ctx = runner, job, ctx
        self._pool = ThreadPoolExecutor(max_workers=self.DEPTH,
                                        thread_name_prefix="memstrata-ahead") if ahead else None
        self._queue: deque[tuple[list[str], Future[_Planned] | None]] = deque()
        self._done = False

    @property
    def started(self) -> bool:
        """Is a batch paged (and, ahead, being planned) and not yet taken?"""
        return bool(self._queue)

    def fill(self, page: Callable[[str | None], list[str]], after: str | None) -> None:
        """Page the users after the last paged batch (``after`` if none is) until
        :attr:`DEPTH` batches are planned at once (one when not ahead) or the bucket has
        no more users."""
        if self._queue:
            after = self._queue[-1][0][-1]
        while not self._done and len(self._queue) < (1 if self._pool is None else self.DEPTH):
            users = page(after)
            if not users:
                self._done = True
                break
            future = None
            if self._pool is not None:
                caller = contextvars.copy_context()  # spans stay in the partition's trace
                future = self._pool.submit(caller.run, self._runner._plan_ahead, self._job,
                                           self._ctx, users)
            self._queue.append((users, future))
            after = users[-1]

    def result(self) -> tuple[list[str], _Planned | None]:
        """The oldest batch's users and, ahead, its plans (waits for them)."""
        users, future = self._queue.popleft()
        return users, None if future is None else future.result()

    def close(self) -> None:
        # batches not applied here: whoever works the bucket next plans them again
        while self._queue:
            future = self._queue.popleft()[1]
            if future is not None:
                with contextlib.suppress(Exception):
                    future.result()
        if self._pool is not None:
            self._pool.shutdown(wait=True)


def _take_errors(gate: LLMGate | None) -> list[str]:
    """The gate's errors so far, removed from it (``pop`` is atomic: an error added
    meanwhile by another thread stays for the next taker)."""
    taken: list[str] = []
    while gate is not None and gate.errors:
        taken.append(gate.errors.pop(0))
    return taken


@dataclass(frozen=True, slots=True)
class _Batch:
    """What one committed batch did."""

    users: list[str]
    done: list[PlannedAction]
    errors: list[str]
    method: Method
    #: model calls, prompt tokens, completion tokens
    llm: tuple[int, int, int]

    def counts(self) -> dict[str, int]:
        return dict(Counter(a.action for a in self.done))


def _llm_stats(gate: LLMGate | None) -> tuple[int, int, int]:
    if gate is None:
        return (0, 0, 0)
    return (gate.calls, gate.prompt_tokens, gate.completion_tokens)


def _report_attributes(report: RunReport) -> dict[str, telemetry.AttributeValue]:
    """A run's counts and outcome as span attributes (no user id: only counts)."""
    attributes: dict[str, telemetry.AttributeValue] = {
        "memstrata.run_id": report.run_id, "memstrata.outcome": report.status,
        "memstrata.method": report.method, "memstrata.users": report.users,
        "memstrata.batches": report.batches, "memstrata.errors": len(report.errors),
        "memstrata.resumed": report.resumed, "memstrata.llm_calls": report.llm_calls,
        "memstrata.prompt_tokens": report.prompt_tokens,
        "memstrata.completion_tokens": report.completion_tokens,
        "memstrata.actions": sum(report.counts.values()),
    }
    attributes.update((f"memstrata.action.{name}", n) for name, n in report.counts.items())
    return attributes
