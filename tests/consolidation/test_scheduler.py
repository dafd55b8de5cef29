"""The scheduler: real APScheduler cron triggers, next run times in SQL, driven by a ManualClock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import (
    ConsolidationScheduler,
    ConsolidationSettings,
    Consolidator,
    RunHooks,
)
from memstrata.consolidation._tables import runs
from memstrata.errors import StateError
from memstrata.memory.embedder import Embedder

NIGHT = datetime(2026, 3, 1, 1, 30, tzinfo=UTC)


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, second, tzinfo=UTC)


@pytest.fixture
def night_clock() -> ManualClock:
    return ManualClock(NIGHT)


@pytest.fixture
def night_manager(db_url: str, embedder: Embedder, night_clock: ManualClock, tmp_path: Path):
    with MemoryManager.open(db_url, embedder=embedder, clock=night_clock,
                            index_dir=tmp_path / "index") as mm:
        for user in ("alice", "bob", "carol"):
            mm.remember(user, "I like jazz.", type="preference")
        yield mm


def run_counts(mm: MemoryManager) -> dict[str, int]:
    with mm.db.read() as conn:
        return {job: n for job, n in conn.execute(
            select(runs.c.job, func.count()).group_by(runs.c.job))}


def test_cron_triggers_fire_on_schedule(night_manager: MemoryManager, night_clock: ManualClock,
                                        settings: ConsolidationSettings):
    sched = ConsolidationScheduler(Consolidator(night_manager, settings=settings))
    sched.start(thread=False)
    try:
        assert sched.jobs() == {"reread": at(1, 2, 30), "expire": at(1, 2),
                                "summarize": at(1, 3), "conflicts": at(1, 3)}
        assert sched.tick() == []
        night_clock.set(at(1, 2, 0, 1))
        (hourly,) = sched.tick()
        assert (hourly.job, hourly.status, hourly.slot) == ("expire", "finished", at(1, 2))
        night_clock.set(at(1, 3, 0, 5))
        nightly = sched.tick()
        assert sorted((r.job, r.slot) for r in nightly) == [
            ("conflicts", at(1, 3)), ("expire", at(1, 3)), ("reread", at(1, 2, 30)),
            ("summarize", at(1, 3))]
        assert all(r.status == "finished" for r in nightly)
        assert sched.tick() == []
        assert sched.jobs() == {"reread": at(2, 2, 30), "expire": at(1, 4),
                                "summarize": at(2, 3), "conflicts": at(2, 3)}
        assert run_counts(night_manager) == {"expire": 2, "summarize": 1, "conflicts": 1,
                                             "reread": 1}
    finally:
        sched.shutdown()


def test_a_sleeping_laptop_runs_a_missed_night_once(night_manager: MemoryManager,
                                                    night_clock: ManualClock,
                                                    settings: ConsolidationSettings):
    first = ConsolidationScheduler(Consolidator(night_manager, settings=settings))
    first.start(thread=False)
    first.shutdown()  # the lid closes at 01:30 on day 1 ...
    night_clock.set(at(6, 10, 15))  # ... and opens five nights later
    again = ConsolidationScheduler(Consolidator(night_manager, settings=settings))
    again.start(thread=False)
    try:
        assert again.jobs()["summarize"] == at(1, 3)  # still due: it was not replaced
        reports = again.tick()
        assert sorted((r.job, r.slot) for r in reports) == [
            ("conflicts", at(6, 3)), ("expire", at(6, 10)), ("reread", at(6, 2, 30)),
            ("summarize", at(6, 3))]
        assert run_counts(night_manager) == {"conflicts": 1, "expire": 1, "reread": 1,
                                             "summarize": 1}
        assert again.jobs() == {"reread": at(7, 2, 30), "expire": at(6, 11),
                                "summarize": at(7, 3), "conflicts": at(7, 3)}
        assert again.tick() == []
    finally:
        again.shutdown()


def test_a_run_missed_beyond_the_grace_time_is_skipped(night_manager: MemoryManager,
                                                       night_clock: ManualClock):
    settings = ConsolidationSettings.build(schedule={"timezone": "UTC",
                                                     "misfire_grace_seconds": 3600})
    sched = ConsolidationScheduler(Consolidator(night_manager, settings=settings))
    sched.start(thread=False)
    try:
        night_clock.set(at(1, 5, 30))  # 03:00 was missed by 2.5 h (> 1 h grace)
        assert [r.job for r in sched.tick()] == ["expire"]  # 05:00 is within the grace
        assert sched.jobs()["summarize"] == at(2, 3)
    finally:
        sched.shutdown()


def test_two_schedulers_racing_run_each_job_once(night_manager: MemoryManager,
                                                 night_clock: ManualClock, db_url: str,
                                                 embedder: Embedder, tmp_path: Path,
                                                 settings: ConsolidationSettings):
    slow = RunHooks(after_batch=lambda run_id, batch: time.sleep(0.1))
    with MemoryManager.open(db_url, embedder=embedder, clock=night_clock,
                            index_dir=tmp_path / "index2") as other:
        a = ConsolidationScheduler(Consolidator(night_manager, settings=settings, hooks=slow),
                                   workers=3)
        b = ConsolidationScheduler(Consolidator(other, settings=settings, hooks=slow),
                                   workers=3)
        a.start(thread=False)
        b.start(thread=False)
        try:
            night_clock.set(at(1, 3, 0, 1))
            gate = threading.Barrier(2)
            out: dict[str, list] = {}

            def tick(name: str, sched: ConsolidationScheduler) -> None:
                gate.wait()
                out[name] = sched.tick()

            threads = [threading.Thread(target=tick, args=(n, s)) for n, s in (("a", a),
                                                                               ("b", b))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert {r.status for r in out["a"] + out["b"]} <= {"finished", "skipped"}
            finished = sorted(r.job for r in out["a"] + out["b"] if r.status == "finished")
            assert finished == ["conflicts", "expire", "reread", "summarize"]
            assert run_counts(night_manager) == {"conflicts": 1, "expire": 1, "reread": 1,
                                                 "summarize": 1}
            # a scheduler that comes late for the same slot finds it done
            report = b.consolidator.run_scheduled("conflicts", at(1, 3))
            assert report.status == "skipped"
            assert run_counts(night_manager)["conflicts"] == 1
        finally:
            a.shutdown()
            b.shutdown()


def test_the_background_thread_fires_when_the_clock_gets_there(
        sqlite_manager: MemoryManager, clock: ManualClock, settings: ConsolidationSettings):
    clock.set(at(1, 1, 59, 50))
    seen = threading.Event()
    sched = ConsolidationScheduler(Consolidator(sqlite_manager, settings=settings),
                                   on_report=lambda report: seen.set())
    with sched:
        sched.start()
        assert not seen.wait(0.3)
        clock.set(at(1, 2, 0, 1))
        sched.wakeup()
        assert seen.wait(10)
    assert [r.job for r in sched.reports] == ["expire"]


def test_a_changed_crontab_replaces_the_stored_job(sqlite_manager: MemoryManager,
                                                   clock: ManualClock):
    clock.set(NIGHT)
    first = ConsolidationSettings.build(schedule={"timezone": "UTC"})
    sched = ConsolidationScheduler(Consolidator(sqlite_manager, settings=first))
    sched.start(thread=False)
    sched.shutdown()
    changed = ConsolidationSettings.build(schedule={"timezone": "UTC",
                                                    "summarize": "30 4 * * *"})
    sched = ConsolidationScheduler(Consolidator(sqlite_manager, settings=changed))
    sched.start(thread=False)
    try:
        assert sched.jobs()["summarize"] == at(1, 4, 30)
        assert sched.jobs()["conflicts"] == at(1, 3)
        with pytest.raises(StateError):
            sched.start(thread=False)
    finally:
        sched.shutdown()


def test_a_stop_request_interrupts_between_batches_and_the_next_run_resumes(
        manager: MemoryManager, clock: ManualClock, settings: ConsolidationSettings):
    for user in ("u1", "u2", "u3", "u4", "u5"):
        manager.remember(user, "I like tea.", type="preference")
    clock.advance(days=200)
    box: list[Consolidator] = []
    jobs = Consolidator(manager, settings=settings,
                        hooks=RunHooks(after_batch=lambda run_id, n: box[0].request_stop()))
    box.append(jobs)
    first = jobs.run("expire")
    assert first.status == "interrupted" and first.counts == {"demote": 2}
    rest = Consolidator(manager, settings=settings).run("expire")
    assert rest.run_id == first.run_id and rest.status == "finished"
    assert rest.counts == {"demote": 5} and rest.resumed == 1


def test_the_scheduler_command_stops_cleanly_on_sigterm(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'sched.db'}"
    exe = Path(sys.executable).with_name("memstrata")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMSTRATA_SCHEDULER_TZ": "UTC",
           "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([str(exe), "scheduler", "--url", url], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "next summarize" in line:
                break
        assert any("scheduler: started" in line for line in lines), lines
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "memstrata scheduler: stopped" in out
