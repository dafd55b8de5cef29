"""Running the jobs on a schedule: APScheduler 3, cron triggers, job store in the memory DB.

::

    sched = ConsolidationScheduler(Consolidator(memory))
    sched.run_forever()            # `memstrata scheduler`: until SIGTERM / Ctrl-C

* **Triggers** - one ``CronTrigger`` per job from
  :class:`~memstrata.consolidation.settings.ScheduleSettings` (defaults:
  ``summarize`` and ``conflicts`` nightly at 03:00, ``expire`` hourly), in the
  configured time zone (default: the machine's).
* **Job store** - APScheduler's ``SQLAlchemyJobStore`` on the memory database's
  own engine (table ``memstrata_scheduler_jobs``, created by migration 0002),
  so next run times survive restarts. On start the stored jobs are kept when
  their trigger is unchanged - a laptop that slept through 03:00 finds the
  missed run still due - and replaced when the crontab changed.
* **Missed runs** - ``coalesce=True`` and ``misfire_grace_time`` from the
  settings (default two days): after five missed nights the job runs *once*.
* **Several schedulers** - APScheduler 3 does not coordinate schedulers that
  share a job store; memstrata does: every run takes the job's lease row and
  records the cron slot it served, so two schedulers firing the same 03:00 run
  it once (the other sees the lease held or the slot done).
* **Time** - the scheduler reads "now" from a :class:`~memstrata.clock.Clock`,
  so tests drive the real triggers and job store with a
  :class:`~memstrata.clock.ManualClock`; :meth:`tick` processes what is due
  synchronously.
* **Shutdown** - :meth:`run_forever` handles SIGTERM and SIGINT: no new runs
  start, running jobs stop after their current batch (the run is left
  ``interrupted`` and resumes next time), then the process exits cleanly.

Trade-off: to honour the injected clock this module overrides APScheduler's
private ``_process_jobs`` (the loop that finds due jobs) and ships its own
executor, which hands the scheduled fire time to the run; APScheduler is pinned
below 4 in ``pyproject.toml``.
"""

from __future__ import annotations

import concurrent.futures
import logging
import signal
import threading
import traceback
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo
from threading import TIMEOUT_MAX
from types import FrameType
from typing import Any

from memstrata.clock import Clock
from memstrata.consolidation._tables import SCHEDULER_JOBS_TABLE
from memstrata.consolidation.reports import RunReport
from memstrata.consolidation.runner import Consolidator
from memstrata.consolidation.settings import JOB_NAMES
from memstrata.errors import MissingDependencyError, StateError

__all__ = ["ConsolidationScheduler", "consolidation_job"]

log = logging.getLogger("memstrata.consolidation.scheduler")

_EXECUTOR = "memstrata"
_JOB_FUNC = "memstrata.consolidation.scheduler:consolidation_job"


def consolidation_job(name: str) -> None:
    """The function the job store names; runs go through the scheduler's executor.

    APScheduler stores a job as a textual function reference plus arguments;
    memstrata's executor never calls it (it calls the :class:`Consolidator`
    with the scheduled fire time), so calling it directly is a mistake.
    """
    raise StateError(f"consolidation job {name!r} must be run by ConsolidationScheduler")


def _apscheduler() -> Any:
    try:
        import apscheduler  # noqa: F401
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependencyError("apscheduler", "scheduler") from exc
    from apscheduler.events import (
        EVENT_JOB_ERROR,
        EVENT_JOB_EXECUTED,
        EVENT_JOB_MISSED,
        JobExecutionEvent,
    )
    from apscheduler.executors.base import BaseExecutor
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.base import STATE_PAUSED, STATE_STOPPED, BaseScheduler
    from apscheduler.triggers.cron import CronTrigger

    return {
        "EVENT_JOB_ERROR": EVENT_JOB_ERROR, "EVENT_JOB_EXECUTED": EVENT_JOB_EXECUTED,
        "EVENT_JOB_MISSED": EVENT_JOB_MISSED, "JobExecutionEvent": JobExecutionEvent,
        "BaseExecutor": BaseExecutor, "SQLAlchemyJobStore": SQLAlchemyJobStore,
        "STATE_PAUSED": STATE_PAUSED, "STATE_STOPPED": STATE_STOPPED,
        "BaseScheduler": BaseScheduler, "CronTrigger": CronTrigger,
    }


def _timezone(name: str | None) -> tzinfo:
    if name is not None:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    from tzlocal import get_localzone

    return get_localzone()


def _classes(ap: dict[str, Any]) -> tuple[type[Any], type[Any]]:
    """The APScheduler subclasses (built lazily: APScheduler imports only when used)."""
    base_scheduler: type[Any] = ap["BaseScheduler"]
    base_executor: type[Any] = ap["BaseExecutor"]
    job_event = ap["JobExecutionEvent"]

    class ClockedScheduler(base_scheduler):  # type: ignore[misc]
        """BaseScheduler whose notion of "now" is a memstrata Clock; loop in a thread."""

        def __init__(self, clock: Clock, **options: Any) -> None:
            self._clock = clock
            self._event = threading.Event()
            self._thread: threading.Thread | None = None
            super().__init__(**options)

        def now(self) -> datetime:
            return self._clock.now().astimezone(self.timezone)

        def start_thread(self) -> None:
            self._thread = threading.Thread(target=self._main_loop, name="memstrata-scheduler",
                                            daemon=True)
            self._thread.start()

        def shutdown(self, wait: bool = True) -> None:
            super().shutdown(wait)
            self._event.set()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join()

        def wakeup(self) -> None:
            self._event.set()

        def _main_loop(self) -> None:
            wait: float | None = TIMEOUT_MAX
            while self.state != ap["STATE_STOPPED"]:
                self._event.wait(wait)
                self._event.clear()
                if self.state == ap["STATE_STOPPED"]:
                    break
                wait = self._process_jobs()

        def _process_jobs(self) -> float | None:
            """APScheduler's due-job loop, with "now" from the clock."""
            if self.state == ap["STATE_PAUSED"]:
                return None
            now = self.now()
            next_wakeup: datetime | None = None
            with self._jobstores_lock:
                for alias, store in self._jobstores.items():
                    for job in store.get_due_jobs(now):
                        executor = self._lookup_executor(job.executor)
                        run_times = job._get_run_times(now)
                        run_times = run_times[-1:] if run_times and job.coalesce else run_times
                        if run_times:
                            executor.submit_job(job, run_times)
                            following = job.trigger.get_next_fire_time(run_times[-1], now)
                            if following:
                                job._modify(next_run_time=following)
                                store.update_job(job)
                            else:
                                self.remove_job(job.id, alias)
                    store_next = store.get_next_run_time()
                    if store_next and (next_wakeup is None or store_next < next_wakeup):
                        next_wakeup = store_next.astimezone(self.timezone)
            if next_wakeup is None:
                return None
            return float(min(max((next_wakeup - self.now()).total_seconds(), 0), TIMEOUT_MAX))

    class RunExecutor(base_executor):  # type: ignore[misc]
        """Runs scheduled jobs through the Consolidator, handing over the fire time."""

        def __init__(self, consolidator: Consolidator, clock: Clock, workers: int,
                     on_report: Callable[[RunReport], None]) -> None:
            super().__init__()
            self._consolidator = consolidator
            self._on_report = on_report
            self._clock = clock
            self._pool = concurrent.futures.ThreadPoolExecutor(
                workers, thread_name_prefix="memstrata-job")
            self._futures: set[concurrent.futures.Future[Any]] = set()
            self._futures_lock = threading.Lock()

        def _do_submit_job(self, job: Any, run_times: list[datetime]) -> None:
            future = self._pool.submit(self._run, job, run_times)
            with self._futures_lock:
                self._futures.add(future)

            def done(f: concurrent.futures.Future[Any]) -> None:
                with self._futures_lock:
                    self._futures.discard(f)
                exc = f.exception()
                if exc is not None:
                    self._run_job_error(job.id, exc, exc.__traceback__)
                else:
                    self._run_job_success(job.id, f.result())

            future.add_done_callback(done)

        def _run(self, job: Any, run_times: list[datetime]) -> list[Any]:
            events = []
            for run_time in run_times:
                late = self._clock.now() - run_time
                if job.misfire_grace_time is not None and \
                        late > timedelta(seconds=job.misfire_grace_time):
                    log.warning("run of %s at %s missed by %s", job.id, run_time, late)
                    events.append(job_event(ap["EVENT_JOB_MISSED"], job.id,
                                            job._jobstore_alias, run_time))
                    continue
                try:
                    report = self._consolidator.run_scheduled(str(job.args[0]), run_time)
                except Exception as exc:  # noqa: BLE001 - reported as a job error event
                    events.append(job_event(ap["EVENT_JOB_ERROR"], job.id, job._jobstore_alias,
                                            run_time, exception=exc,
                                            traceback="".join(traceback.format_tb(
                                                exc.__traceback__))))
                    log.error("scheduled %s failed: %s", job.id, exc)
                    continue
                self._on_report(report)
                events.append(job_event(ap["EVENT_JOB_EXECUTED"], job.id, job._jobstore_alias,
                                        run_time, retval=report))
            return events

        def wait_idle(self, timeout: float | None) -> None:
            with self._futures_lock:
                pending = list(self._futures)
            concurrent.futures.wait(pending, timeout=timeout)

        def shutdown(self, wait: bool = True) -> None:
            self._pool.shutdown(wait)

    return ClockedScheduler, RunExecutor


class ConsolidationScheduler:
    """The jobs on their cron triggers; see the module docstring."""

    def __init__(
        self,
        consolidator: Consolidator,
        *,
        clock: Clock | None = None,
        workers: int = 1,
        on_report: Callable[[RunReport], None] | None = None,
    ) -> None:
        self._ap = _apscheduler()
        self.consolidator = consolidator
        self.clock: Clock = clock if clock is not None else consolidator.clock
        self.settings = consolidator.settings.schedule
        self.timezone = _timezone(self.settings.timezone)
        self._on_report = on_report
        grace = self.settings.misfire_grace_seconds
        #: APScheduler wants whole seconds (or None: however late)
        self._grace = None if grace is None else max(1, int(grace))
        self.reports: list[RunReport] = []
        self._lock = threading.Lock()
        scheduler_cls, executor_cls = _classes(self._ap)
        self._executor = executor_cls(consolidator, self.clock, workers, self._collect)
        store = self._ap["SQLAlchemyJobStore"](
            engine=consolidator.manager.db.engine, tablename=SCHEDULER_JOBS_TABLE)
        self._scheduler = scheduler_cls(
            self.clock, timezone=self.timezone, jobstores={"default": store},
            executors={_EXECUTOR: self._executor},
            job_defaults={"coalesce": True, "max_instances": 1,
                          "misfire_grace_time": self._grace},
        )
        self._scheduler.add_listener(
            self._on_event, self._ap["EVENT_JOB_ERROR"] | self._ap["EVENT_JOB_MISSED"])
        self._started = False

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> ConsolidationScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def start(self, *, thread: bool = True) -> None:
        """Load/refresh the jobs in the store and start; ``thread=False`` only loads them
        (drive with :meth:`tick`)."""
        if self._started:
            raise StateError("the scheduler is already started")
        self._scheduler.start(paused=True)
        self._started = True
        self._reconcile()
        self._scheduler.resume()
        if thread:
            self._scheduler.start_thread()
            self._scheduler.wakeup()

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop scheduling; with ``wait``, let running jobs finish their current batch."""
        if not self._started:
            return
        self._started = False
        self.consolidator.request_stop()
        self._scheduler.shutdown(wait=wait)

    def run_forever(self, stop: threading.Event | None = None, *,
                    on_started: Callable[[], None] | None = None) -> None:
        """Foreground: run until ``stop`` is set or SIGTERM / SIGINT arrives."""
        stop = stop or threading.Event()
        previous: dict[signal.Signals, Any] = {}

        def handler(signum: int, frame: FrameType | None) -> None:
            log.info("signal %s: shutting down after the current batch", signum)
            stop.set()

        in_main = threading.current_thread() is threading.main_thread()
        if in_main:
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

    def _reconcile(self) -> None:
        cron = self._ap["CronTrigger"]
        now = self._scheduler.now()
        grace = self._grace
        for name in JOB_NAMES:
            trigger = cron.from_crontab(self.settings.cron(name), timezone=self.timezone)
            existing = self._scheduler.get_job(name)
            if existing is not None and repr(existing.trigger) == repr(trigger) and \
                    existing.misfire_grace_time == grace and existing.next_run_time is not None:
                continue  # keep its stored next run time: a missed run stays due
            self._scheduler.add_job(
                _JOB_FUNC, trigger=trigger, args=[name], id=name, name=f"memstrata {name}",
                executor=_EXECUTOR, replace_existing=True, coalesce=True, max_instances=1,
                misfire_grace_time=grace, next_run_time=trigger.get_next_fire_time(None, now),
            )

    def jobs(self) -> dict[str, datetime | None]:
        """Next run time of each job (``None`` when paused)."""
        return {job.id: job.next_run_time for job in self._scheduler.get_jobs()}

    def tick(self, *, timeout: float | None = 600.0) -> list[RunReport]:
        """Run what is due at the clock's "now" and wait for it; returns those reports."""
        if not self._started:
            raise StateError("start the scheduler first (start(thread=False) for ticking)")
        with self._lock:
            seen = len(self.reports)
        self._scheduler._process_jobs()
        self._executor.wait_idle(timeout)
        with self._lock:
            return self.reports[seen:]

    def _collect(self, report: RunReport) -> None:
        with self._lock:
            self.reports.append(report)
        log.info("%s", report.summary_line())
        if self._on_report is not None:
            self._on_report(report)

    def _on_event(self, event: Any) -> None:
        if getattr(event, "exception", None) is not None:
            log.error("scheduled %s failed: %s", event.job_id, event.exception)
        else:
            log.warning("scheduled %s missed its run time %s", event.job_id,
                        getattr(event, "scheduled_run_time", None))
