"""Consolidation workers: any number of processes, on any hosts, one database URL.

::

    Worker("postgresql+psycopg://…/memstrata").run_until_idle()   # drain the queue
    Worker(url).run_forever()        # `memstrata worker`: poll until SIGTERM / Ctrl-C

A worker works the buckets of *partitioned runs* - created by
:meth:`Consolidator.create_run <memstrata.consolidation.runner.Consolidator.create_run>`,
``memstrata consolidate --queue`` or ``memstrata scheduler --create-only`` -
claiming them through the database (:mod:`._partitions`: ``SELECT … FOR UPDATE
SKIP LOCKED`` on PostgreSQL, short heartbeated leases). Start as many as the
database and the model endpoint can take; kill any of them (even with ``kill
-9``) and the others finish its bucket within one partition lease, with every
record's change applied once. On SQLite they work, but writes are serialised
by the one-writer lock: only planning runs in parallel.

``threads`` runs that many claim loops in this process (each one bucket at a
time); ``concurrency`` is the number of model calls a bucket may have in flight
(``ConsolidationSettings.llm.concurrency``).
"""

from __future__ import annotations

import concurrent.futures
import logging
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from memstrata.consolidation import _lease
from memstrata.consolidation.jobs import get_job
from memstrata.consolidation.runner import Consolidator
from memstrata.consolidation.settings import ConsolidationSettings
from memstrata.errors import InvalidSettingError, MemstrataError
from memstrata.llm import LLMClient

__all__ = ["DEFAULT_POLL_SECONDS", "Worker", "WorkerReport"]

log = logging.getLogger("memstrata.consolidation.worker")

#: how long an idle :meth:`Worker.run_forever` waits before looking for work again
DEFAULT_POLL_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class WorkerReport:
    """What one worker did."""

    #: ``host:pid:random`` prefix of this worker's claims
    holder: str
    #: buckets it finished
    partitions: int


class Worker:
    """Claims and works buckets of partitioned runs; see the module docstring.

    Give it a database URL (it opens and closes its own
    :class:`~memstrata.MemoryManager`; ``None``: the default SQLite file) or an
    open :class:`Consolidator`.
    """

    def __init__(
        self,
        target: str | Consolidator | None,
        *,
        settings: ConsolidationSettings | None = None,
        concurrency: int | None = None,
        threads: int = 1,
        jobs: Sequence[str] | None = None,
        llm: LLMClient | None = None,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        manager_options: dict[str, Any] | None = None,
    ) -> None:
        if threads < 1:
            raise InvalidSettingError("a worker needs at least one thread")
        for name in jobs or ():
            get_job(name)
        self._target = target
        self._settings = settings
        self._concurrency = concurrency
        self._llm = llm
        self._threads = threads
        self._jobs = None if jobs is None else list(jobs)
        self._poll = poll_seconds
        self._manager_options = manager_options or {}
        self.holder = _lease.make_holder()
        self._stop = threading.Event()

    def stop(self) -> None:
        """Finish the current batch, hand the bucket back, return."""
        self._stop.set()

    def run_until_idle(self, *, run_id: str | None = None) -> WorkerReport:
        """Work until no bucket is claimable (those held by live workers are theirs)."""
        return self._with(lambda c: self._drain(c, run_id))

    def run_forever(self, stop: threading.Event | None = None, *,
                    on_started: Callable[[], None] | None = None) -> WorkerReport:
        """Foreground: work, poll when idle, until ``stop``, SIGTERM or SIGINT."""
        if stop is not None:
            def relay() -> None:
                stop.wait()
                self._stop.set()

            threading.Thread(target=relay, daemon=True).start()
        previous: dict[signal.Signals, Any] = {}

        def handler(signum: int, frame: FrameType | None) -> None:
            log.info("signal %s: stopping after the current batch", signum)
            self._stop.set()

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, handler)
        try:
            def forever(c: Consolidator) -> int:
                if on_started is not None:
                    on_started()
                done = 0
                while not self._stop.is_set():
                    try:
                        done += self._drain(c, None)
                    except MemstrataError as exc:  # the database is away: try again
                        log.error("worker: %s", exc)
                    self._stop.wait(self._poll)
                return done

            return self._with(forever)
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    # ------------------------------------------------------------ internals

    def _with(self, body: Callable[[Consolidator], int]) -> WorkerReport:
        if isinstance(self._target, Consolidator):
            return WorkerReport(self.holder, body(self._target))
        from memstrata.memory.manager import MemoryManager

        settings = self._settings if self._settings is not None \
            else ConsolidationSettings.from_env()
        if self._concurrency is not None:
            settings = settings.model_copy(update={
                "llm": settings.llm.model_copy(update={"concurrency": self._concurrency})})
        with MemoryManager.open(self._target, **self._manager_options) as memory:
            return WorkerReport(self.holder, body(
                Consolidator(memory, settings=settings, llm=self._llm)))

    def _drain(self, consolidator: Consolidator, run_id: str | None) -> int:
        if self._threads == 1:
            return consolidator.work(run_id=run_id, jobs=self._jobs, holder=self.holder,
                                     stop=self._stop)
        with concurrent.futures.ThreadPoolExecutor(
                self._threads, thread_name_prefix="memstrata-worker") as pool:
            futures = [pool.submit(consolidator.work, run_id=run_id, jobs=self._jobs,
                                   holder=f"{self.holder}-{n}", stop=self._stop)
                       for n in range(self._threads)]
            return sum(f.result() for f in futures)
