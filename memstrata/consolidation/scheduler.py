"""Running the jobs on a schedule: cron triggers, next run times in the memory DB.

::

    sched = ConsolidationScheduler(Consolidator(memory))
    sched.run_forever()            # `memstrata scheduler`: until SIGTERM / Ctrl-C

The scheduler is a short loop of its own. APScheduler 3 supplies only the
crontab arithmetic (its public ``CronTrigger.from_crontab(...).get_next_fire_time``);
"now" comes from the injected :class:`~memstrata.clock.Clock`.

* **Jobs** - every job of :mod:`memstrata.consolidation.jobs` registered when
  :meth:`~ConsolidationScheduler.start` runs, on the crontab
  :meth:`ScheduleSettings.cron <memstrata.consolidation.settings.ScheduleSettings.cron>`
  gives it (defaults: ``summarize`` and ``conflicts`` nightly at 03:00,
  ``expire`` hourly), in the configured time zone (default: the machine's).
* **Next run times** - one row per job in ``memstrata_scheduler_jobs`` (created
  by migration 0002): ``next_run_time`` in epoch seconds and, as ``job_state``,
  the schedule it was computed from (UTF-8 JSON: crontab and time zone). On start
  a row whose schedule is unchanged keeps its next run time - a laptop that slept
  through 03:00 finds the missed run still due - and any other row of a scheduled
  job (a changed crontab or zone, or a row APScheduler's own job store wrote) is
  replaced. Rows of jobs this process does not know are left alone.
* **A tick** - for each job whose next run time has passed: in one write
  transaction, re-read its row and move ``next_run_time`` past "now"; then hand
  the *latest* fire time that passed to a worker thread. Missed runs therefore
  coalesce (five missed nights: one run), and a fire time older than
  ``misfire_grace_seconds`` is logged as missed and not run. A job still running
  from an earlier fire time is not started twice.
* **Several schedulers** - sharing a database, they share the rows, so the one
  that moves a job's next run time runs it; the others see it not due. Each run
  also goes through :meth:`Consolidator.run_scheduled
  <memstrata.consolidation.runner.Consolidator.run_scheduled>` with its fire
  time, whose lease row remembers the slot served, so a slot runs once even
  when two schedulers read a row in the same instant.
* **Time** - :meth:`~ConsolidationScheduler.tick` processes what is due
  synchronously (tests drive it with a :class:`~memstrata.clock.ManualClock`);
  :meth:`~ConsolidationScheduler.start` runs the same step in a background
  thread that sleeps until the next due time, at most
  :data:`MAX_SLEEP_SECONDS` (a suspended machine's monotonic sleep does not
  count the suspension), and wakes at once on :meth:`~ConsolidationScheduler.wakeup`
  or shutdown.
* **Create-only** - with ``create_only=True`` (``memstrata scheduler
  --create-only``) a due slot only *queues* a partitioned run
  (:meth:`Consolidator.create_scheduled
  <memstrata.consolidation.runner.Consolidator.create_scheduled>`) and returns
  at once; ``memstrata worker`` processes, as many as needed on any hosts, do
  the work. Schedulers and workers then scale separately, and a slot still gets
  one run: its lease row records the slot when the run is created.
* **Shutdown** - :meth:`~ConsolidationScheduler.run_forever` handles SIGTERM and
  SIGINT: no new runs start, queued ones are dropped, running jobs stop after
  their current batch (the run is left ``interrupted`` and resumes next time),
  then the process exits cleanly.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from types import FrameType
from typing import Any

from sqlalchemy import Connection, insert, select, update

from memstrata.clock import Clock, from_epoch, to_epoch
from memstrata.consolidation._tables import scheduler_jobs
from memstrata.consolidation.jobs import job_names
from memstrata.consolidation.reports import RunReport
from memstrata.consolidation.runner import Consolidator
from memstrata.errors import (
    InvalidSettingError,
    MemstrataError,
    MissingDependencyError,
    StateError,
    StorageError,
)

__all__ = ["MAX_SLEEP_SECONDS", "ConsolidationScheduler"]

log = logging.getLogger("memstrata.consolidation.scheduler")

#: longest the background loop sleeps before looking at the rows and the clock again
MAX_SLEEP_SECONDS = 60.0


def _timezone(name: str | None) -> tzinfo:
    if name is not None:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    from tzlocal import get_localzone

    return get_localzone()


def _cron_trigger(crontab: str, timezone: tzinfo) -> Any:
    try:
        from apscheduler.triggers.cron import CronTrigger
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependencyError("apscheduler", "scheduler") from exc
    try:
        return CronTrigger.from_crontab(crontab, timezone=timezone)
    except ValueError as exc:
        raise InvalidSettingError(f"invalid crontab {crontab!r}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class _Schedule:
    """One job's trigger and the ``job_state`` that identifies it in its row."""

    name: str
    trigger: Any
    state: bytes

    def first_after(self, now: datetime) -> datetime:
        """The first fire time at or after ``now``."""
        fire: datetime = self.trigger.get_next_fire_time(None, now)
        return fire

    def after(self, fire: datetime, now: datetime) -> datetime:
        """The fire time following ``fire`` (``now`` only bounds APScheduler's search)."""
        following: datetime = self.trigger.get_next_fire_time(fire, now)
        return following

    def plan(self, due: datetime, now: datetime, grace: float | None
             ) -> tuple[datetime, datetime]:
        """``(fire, following)``: the latest fire time in ``[due, now]`` (``due`` is one)
        and the first after ``now``. Missed runs coalesce into ``fire``. With a grace,
        fire times older than it are not walked through; when all are, ``fire`` is
        ``due`` (the first missed)."""
        start = due
        if grace is not None and due < now - timedelta(seconds=grace):
            start = self.first_after(now - timedelta(seconds=grace))
            if start > now:
                return due, start
        fire = start
        while (following := self.after(fire, now)) <= now:
            fire = following
        return fire, following


class ConsolidationScheduler:
    """The registered jobs on their cron triggers; see the module docstring."""

    def __init__(
        self,
        consolidator: Consolidator,
        *,
        clock: Clock | None = None,
        workers: int = 1,
        on_report: Callable[[RunReport], None] | None = None,
        create_only: bool = False,
    ) -> None:
        self.consolidator = consolidator
        self.clock: Clock = clock if clock is not None else consolidator.clock
        self.settings = consolidator.settings.schedule
        self.timezone = _timezone(self.settings.timezone)
        self.reports: list[RunReport] = []
        self._db = consolidator.manager.db
        self._on_report = on_report
        self._workers = workers
        #: only queue partitioned runs at each slot; ``memstrata worker`` runs them
        self.create_only = create_only
        self._grace = self.settings.misfire_grace_seconds
        self._schedules: dict[str, _Schedule] = {}
        self._lock = threading.Lock()
        #: jobs submitted and not finished yet (a job never runs twice at once)
        self._running: set[str] = set()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._started = False

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> ConsolidationScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def start(self, *, thread: bool = True) -> None:
        """Reconcile the job rows with the settings and start; ``thread=False`` only
        reconciles (drive it with :meth:`tick`)."""
        if self._started:
            raise StateError("the scheduler is already started")
        self._schedules = {
            name: self._schedule(name, self.settings.cron(name)) for name in job_names()
        }
        self._reconcile()
        self._stopping.clear()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            self._workers, thread_name_prefix="memstrata-job")
        self._started = True
        if thread:
            self._thread = threading.Thread(target=self._loop, name="memstrata-scheduler",
                                            daemon=True)
            self._thread.start()

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop scheduling and drop queued runs; with ``wait``, let running jobs finish
        their current batch."""
        if not self._started:
            return
        self._started = False
        self._stopping.set()
        self.consolidator.request_stop()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
            self._pool = None

    def wakeup(self) -> None:
        """Make the background loop look at the clock and the rows now."""
        self._wake.set()

    def run_forever(self, stop: threading.Event | None = None, *,
                    on_started: Callable[[], None] | None = None) -> None:
        """Foreground: run until ``stop`` is set or SIGTERM / SIGINT arrives."""
        stop = stop or threading.Event()
        previous: dict[signal.Signals, Any] = {}

        def handler(signum: int, frame: FrameType | None) -> None:
            log.info("signal %s: shutting down after the current batch", signum)
            stop.set()

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, handler)
        try:
            self.start()
            if on_started is not None:
                on_started()
            while not stop.wait(1.0):
                pass
        finally:
            self.shutdown(wait=True)
            for sig, old in previous.items():
                signal.signal(sig, old)

    # ------------------------------------------------------------ jobs

    def jobs(self) -> dict[str, datetime | None]:
        """Next run time of each scheduled job, in the scheduler's time zone."""
        if not self._schedules:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(select(scheduler_jobs.c.id, scheduler_jobs.c.next_run_time)
                                .where(scheduler_jobs.c.id.in_(list(self._schedules))))
            stored = {str(r.id): r.next_run_time for r in rows}
        return {name: None if stored.get(name) is None
                else from_epoch(stored[name]).astimezone(self.timezone)
                for name in self._schedules}

    def tick(self, *, timeout: float | None = 600.0) -> list[RunReport]:
        """Run what is due at the clock's "now" and wait for it; returns those reports."""
        if not self._started:
            raise StateError("start the scheduler first (start(thread=False) for ticking)")
        futures = self._submit_due()
        done, _ = concurrent.futures.wait(futures, timeout=timeout)
        # a job's bug (not a MemstrataError, which is logged) propagates from here
        return [report for f in futures if f in done and not f.cancelled()
                and (report := f.result()) is not None]

    def _schedule(self, name: str, crontab: str) -> _Schedule:
        state = json.dumps({"cron": crontab, "timezone": str(self.timezone)},
                           sort_keys=True).encode()
        return _Schedule(name, _cron_trigger(crontab, self.timezone), state)

    def _reconcile(self) -> None:
        """Keep each row whose schedule is unchanged; (re)write the others."""
        try:
            self._write_rows()
        except StorageError:
            # two schedulers inserting the same new row at once (PostgreSQL): the
            # other's row is there now
            self._write_rows()

    def _write_rows(self) -> None:
        now = self.clock.now()
        with self._db.write() as conn:
            for name, schedule in self._schedules.items():
                row = _lock_row(conn, name)
                if row is not None and bytes(row.job_state) == schedule.state and \
                        row.next_run_time is not None:
                    continue  # keep its stored next run time: a missed run stays due
                values = {"next_run_time": to_epoch(schedule.first_after(now)),
                          "job_state": schedule.state}
                if row is None:
                    conn.execute(insert(scheduler_jobs).values(id=name, **values))
                else:
                    conn.execute(update(scheduler_jobs).where(scheduler_jobs.c.id == name)
                                 .values(**values))

    def _submit_due(self) -> list[concurrent.futures.Future[RunReport | None]]:
        """Advance every due row past "now" and submit its latest fire time."""
        now = self.clock.now()
        with self._db.read() as conn:
            due = [str(name) for name in conn.execute(
                select(scheduler_jobs.c.id).where(
                    scheduler_jobs.c.id.in_(list(self._schedules)),
                    scheduler_jobs.c.next_run_time <= to_epoch(now)))
                .scalars()]
        futures = []
        for name in due:
            if self._stopping.is_set():
                break
            fire = self._claim(self._schedules[name], now)
            if fire is None:
                continue
            late = now - fire
            if self._grace is not None and late > timedelta(seconds=self._grace):
                log.warning("scheduled %s missed its run time %s (late by %s)", name, fire, late)
                continue
            with self._lock:
                if name in self._running:
                    log.warning("scheduled %s at %s skipped: still running", name, fire)
                    continue
                self._running.add(name)
            assert self._pool is not None
            future = self._pool.submit(self._run, name, fire)
            future.add_done_callback(_log_bug)
            futures.append(future)
        return futures

    def _claim(self, schedule: _Schedule, now: datetime) -> datetime | None:
        """In one transaction: if the job is (still) due, move its row to the next fire
        time after ``now`` and return the latest fire time that passed."""
        with self._db.write() as conn:
            row = _lock_row(conn, schedule.name)
            if row is None or row.next_run_time is None or row.next_run_time > to_epoch(now):
                return None  # another scheduler took it
            stored = from_epoch(row.next_run_time).astimezone(self.timezone)
            fire, following = schedule.plan(stored, now, self._grace)
            conn.execute(update(scheduler_jobs).where(scheduler_jobs.c.id == schedule.name)
                         .values(next_run_time=to_epoch(following)))
        return fire

    def _run(self, name: str, fire: datetime) -> RunReport | None:
        try:
            if self.create_only:
                report = self.consolidator.create_scheduled(name, fire)
            else:
                report = self.consolidator.run_scheduled(name, fire)
        except MemstrataError as exc:
            log.error("scheduled %s at %s failed: %s", name, fire, exc)
            return None
        finally:
            with self._lock:
                self._running.discard(name)
        with self._lock:
            self.reports.append(report)
        log.info("%s", report.summary_line())
        if self._on_report is not None:
            self._on_report(report)
        return report

    def _next_due(self) -> datetime | None:
        with self._db.read() as conn:
            soonest = conn.execute(
                select(scheduler_jobs.c.next_run_time)
                .where(scheduler_jobs.c.id.in_(list(self._schedules)))
                .order_by(scheduler_jobs.c.next_run_time).limit(1)).scalar()
        return None if soonest is None else from_epoch(soonest)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            sleep = MAX_SLEEP_SECONDS
            try:
                self._submit_due()
                soonest = self._next_due()
            except MemstrataError as exc:  # the database is away: try again later
                log.error("scheduler: %s", exc)
            else:
                if soonest is not None:
                    ahead = (soonest - self.clock.now()).total_seconds()
                    sleep = min(max(ahead, 0.0), MAX_SLEEP_SECONDS)
            self._wake.wait(sleep)
            self._wake.clear()


def _lock_row(conn: Connection, name: str) -> Any:
    return conn.execute(select(scheduler_jobs).where(scheduler_jobs.c.id == name)
                        .with_for_update()).first()


def _log_bug(future: concurrent.futures.Future[RunReport | None]) -> None:
    """A job that raised something other than a MemstrataError has a bug: say so (in the
    background loop nobody reads the future)."""
    if not future.cancelled() and (exc := future.exception()) is not None:
        log.error("scheduled job crashed", exc_info=exc)
