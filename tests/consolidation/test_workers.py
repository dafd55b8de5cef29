"""Partitioned runs and workers: the same end state as one process, buckets claimed
through the database, a worker killed with ``kill -9`` mid-bucket finished by
another with every change applied once, undo still exact, one run per slot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, update

from memstrata import ManualClock, MemoryManager
from memstrata.cli import main as cli_main
from memstrata.consolidation import (
    ConsolidationScheduler,
    ConsolidationSettings,
    Consolidator,
    RunHooks,
    Worker,
    _partitions,
)
from memstrata.consolidation._lease import LeaseLostError
from memstrata.consolidation._partitions import bucket, default_count
from memstrata.consolidation._tables import actions, partitions
from memstrata.errors import LeaseHeldError

from ._helpers import rows

CHILD = Path(__file__).with_name("_worker_child.py")
USERS = [f"user{i:02d}" for i in range(12)]


def _populate(mm: MemoryManager, clock: ManualClock, users: list[str] = USERS) -> None:
    for user in users:
        assert mm.remember(user, "I like jazz.", type="preference", confidence=0.8).stored
    clock.advance(days=1)
    for user in users:
        assert mm.remember(user, "I don't like jazz.", type="preference",
                           confidence=0.8).stored
    clock.advance(days=200)


def _settings(**values: Any) -> ConsolidationSettings:
    return ConsolidationSettings.build(batch_users=2, partition_lease_seconds=2.0, **values)


def _per_record(mm: MemoryManager, run_id: str) -> dict[str | None, int]:
    with mm.db.read() as conn:
        return {m: int(n) for m, n in conn.execute(
            select(actions.c.memory_id, func.count()).where(actions.c.run_id == run_id)
            .group_by(actions.c.memory_id))}


def test_buckets_are_stable_and_sized_from_the_users():
    assert [bucket(u, 7) for u in USERS] == [bucket(u, 7) for u in USERS]
    assert {bucket(f"u{i}", 4) for i in range(100)} == {0, 1, 2, 3}
    assert bucket("user00", 1) == 0
    assert default_count(0, 500) == 1 and default_count(501, 500) == 2
    assert default_count(10**9, 500) == 256


@pytest.mark.parametrize("job", ["expire", "conflicts"])
def test_a_partitioned_run_ends_like_a_run_in_one_process(
        manager: MemoryManager, clock: ManualClock, tmp_path: Path, job: str):
    # the reference: the same data and times in a SQLite file, consolidated in one process
    ref_clock = ManualClock(clock.now())
    with MemoryManager.open(f"sqlite:///{tmp_path / 'ref.db'}", embedder=manager.embedder,
                            clock=ref_clock, index_dir=tmp_path / "ref-index") as ref:
        _populate(ref, ref_clock)
        expected = Consolidator(ref, settings=_settings()).run(job)
        ref_rows = _state(ref)
    _populate(manager, clock)
    jobs = Consolidator(manager, settings=_settings(partitions=4))
    queued = jobs.create_run(job)
    assert queued.status == "queued" and queued.counts == {} and queued.run_id is not None
    assert Worker(jobs, threads=2).run_until_idle().partitions == 4
    done = jobs.get_run(queued.run_id)
    assert done.status == "finished" and done.users == len(USERS)
    assert done.counts == expected.counts and done.method == "offline"
    assert expected.counts  # the job did something
    assert _state(manager) == ref_rows
    assert set(_per_record(manager, queued.run_id).values()) == {1}
    assert {p.status for p in jobs.partitions(queued.run_id)} == {"done"}


def _state(mm: MemoryManager) -> list[tuple[Any, ...]]:
    return sorted((r["user_id"], r["content"], r["status"], round(r["confidence"], 6))
                  for r in rows(mm).values())


def test_an_open_partitioned_run_holds_the_job(manager: MemoryManager, clock: ManualClock):
    _populate(manager, clock, USERS[:2])
    jobs = Consolidator(manager, settings=_settings())
    run = jobs.create_run("expire")
    with pytest.raises(LeaseHeldError, match="partitioned run open"):
        jobs.run("expire")
    with pytest.raises(LeaseHeldError):
        jobs.create_run("expire")
    Worker(jobs).run_until_idle()
    assert jobs.get_run(run.run_id).status == "finished"  # type: ignore[arg-type]
    assert jobs.run("expire").counts == {}  # the lease is free again, nothing left to do


def test_two_schedulers_create_one_run_per_slot(manager: MemoryManager, clock: ManualClock):
    _populate(manager, clock, USERS[:2])
    slot = datetime(2030, 1, 1, 3, tzinfo=clock.now().tzinfo)
    a = Consolidator(manager, settings=_settings())
    b = Consolidator(manager, settings=_settings())
    first = a.create_scheduled("expire", slot)
    second = b.create_scheduled("expire", slot)
    assert first.status == "queued" and second.status == "skipped"
    Worker(a).run_until_idle()
    assert b.create_scheduled("expire", slot).status == "skipped"  # served already
    assert b.create_scheduled("expire", slot + timedelta(hours=1)).status == "queued"


def test_a_create_only_scheduler_queues_and_workers_run(
        manager: MemoryManager, clock: ManualClock):
    _populate(manager, clock, USERS[:4])
    settings = ConsolidationSettings.build(
        batch_users=2, schedule={"timezone": "UTC", "crons": {"expire": "0 * * * *"}})
    jobs = Consolidator(manager, settings=settings)
    with ConsolidationScheduler(jobs, create_only=True) as sched:
        sched.start(thread=False)
        clock.advance(hours=1)
        reports = sched.tick()
    expire = [r for r in reports if r.job == "expire"]
    assert len(expire) == 1 and expire[0].status == "queued"
    assert jobs.get_run(expire[0].run_id).users == 0  # type: ignore[arg-type]
    # (the scheduler's shutdown asked its consolidator to stop: a worker has its own)
    Worker(Consolidator(manager, settings=settings)).run_until_idle()
    assert jobs.get_run(expire[0].run_id).status == "finished"  # type: ignore[arg-type]


def _spawn(url: str, clock: ManualClock, hang_at: int, marker: Path) -> subprocess.Popen[bytes]:
    """A worker process; its stderr goes to ``marker`` + ``.err``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with open(f"{marker}.err", "wb") as err:
        return subprocess.Popen(
            [sys.executable, str(CHILD), url, clock.now().isoformat(), str(hang_at),
             str(marker)], env=env, stdout=subprocess.DEVNULL, stderr=err)


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the worker exited early: {Path(f'{path}.err').read_text()}")
        if time.monotonic() > deadline:
            raise AssertionError("the worker never reached its batch")
        time.sleep(0.05)


def _wait_lease_expired(manager: MemoryManager, run_id: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with manager.db.read() as conn:
            leases = conn.execute(select(partitions.c.lease_until).where(
                partitions.c.run_id == run_id, partitions.c.status == "running")).scalars().all()
        if all(lease is None or lease < time.time() for lease in leases):
            return
        time.sleep(0.1)
    raise AssertionError("the dead worker's lease never ran out")


@pytest.mark.postgres
@pytest.mark.parametrize("job", ["expire", "conflicts"])
def test_a_worker_killed_mid_partition_is_finished_by_another_exactly_once(
        pg_url: str, embedder: Any, clock: ManualClock, tmp_path: Path, job: str):
    with MemoryManager.open(pg_url, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index") as manager:
        _populate(manager, clock)
        before = rows(manager)
        jobs = Consolidator(manager, settings=_settings(partitions=2))
        run_id = jobs.create_run(job).run_id
        assert run_id is not None
        marker = tmp_path / "hung"
        victim = _spawn(pg_url, clock, 2, marker)  # hangs in its 2nd batch, uncommitted
        _wait_for(marker, victim)
        with manager.db.read() as conn:
            held = conn.execute(select(partitions.c.part).where(
                partitions.c.run_id == run_id, partitions.c.status == "running")).all()
        assert len(held) == 1
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        assert victim.returncode == -signal.SIGKILL
        # until its lease runs out the dead worker's bucket is rightly not claimable (nobody
        # can tell a dead worker from a slow one): run_until_idle would leave it alone
        _wait_lease_expired(manager, run_id)
        # a second worker (another process) finishes both buckets, the dead one's too
        survivor = _spawn(pg_url, clock, 0, tmp_path / "never")
        assert survivor.wait(timeout=120) == 0, (tmp_path / "never.err").read_text()
        report = jobs.get_run(run_id)
        action = "demote" if job == "expire" else "flag_conflict"
        assert report.status == "finished"
        assert report.counts == {action: 2 * len(USERS)}, report.errors
        assert report.users == len(USERS)
        per_record = _per_record(manager, run_id)
        assert len(per_record) == 2 * len(USERS) and set(per_record.values()) == {1}
        parts = jobs.partitions(run_id)
        assert sum(p.claims for p in parts) == 3  # the killed bucket was claimed twice
        if job == "expire":
            assert all(r["confidence"] == pytest.approx(0.4) for r in rows(manager).values())
        # undo of the run is still exact
        undo = jobs.undo(run_id)
        assert undo.status == "finished"
        after = rows(manager)
        assert {k: {c: v for c, v in r.items() if c != "updated_at"}
                for k, r in after.items()} == \
            {k: {c: v for c, v in r.items() if c != "updated_at"}
             for k, r in before.items()}


def test_runs_shows_partitions_workers_and_progress(
        manager: MemoryManager, clock: ManualClock, db_url: str):
    _populate(manager, clock, USERS[:6])
    jobs = Consolidator(manager, settings=_settings(partitions=3))
    run_id = jobs.create_run("expire").run_id
    assert run_id is not None
    runner = CliRunner()
    queued = runner.invoke(cli_main, ["runs", "--url", db_url, run_id])
    assert queued.exit_code == 0, queued.output
    assert "partitions: 3 (3 pending)" in queued.output
    Worker(jobs).run_until_idle()
    shown = runner.invoke(cli_main, ["runs", "--url", db_url, run_id])
    assert shown.exit_code == 0, shown.output
    assert "partitions: 3 (3 done)" in shown.output
    assert "progress: 6 users" in shown.output and "users/s" in shown.output
    assert "demote" in shown.output


def test_consolidate_partitioned_works_the_run_in_process(
        manager: MemoryManager, clock: ManualClock, db_url: str):
    _populate(manager, clock, USERS[:4])
    # the CLI's own clock is the system's: records made 201 days "ago" by the manual clock
    # are in the future for it, so only the run's bookkeeping is compared here
    runner = CliRunner()
    out = runner.invoke(cli_main, ["consolidate", "--url", db_url, "--job", "expire",
                                   "--partitions", "2", "--partitioned"])
    assert out.exit_code == 0, out.output
    assert "finished" in out.output
    queued = runner.invoke(cli_main, ["consolidate", "--url", db_url, "--job", "expire",
                                      "--queue"])
    assert queued.exit_code == 0 and "queued" in queued.output, queued.output
    worked = runner.invoke(cli_main, ["worker", "--url", db_url, "--until-idle"])
    assert worked.exit_code == 0 and "stopped after 1 partitions" in worked.output, \
        worked.output


def test_forget_user_rewrites_partition_cursors_and_errors(
        manager: MemoryManager, clock: ManualClock):
    _populate(manager, clock, USERS[:3])
    jobs = Consolidator(manager, settings=_settings(partitions=1))
    run_id = jobs.create_run("expire").run_id
    with manager.db.write() as conn:  # a bucket stopped right after user01's batch
        conn.execute(update(partitions).where(partitions.c.run_id == run_id).values(
            cursor="user01", errors=["user01: disk full"]))
    manager.forget_user("user01")
    (part,) = jobs.partitions(run_id)  # type: ignore[arg-type]
    assert part.errors and "user01" not in part.errors[0]
    with manager.db.read() as conn:
        cursor = conn.execute(select(partitions.c.cursor)
                              .where(partitions.c.run_id == run_id)).scalar_one()
    assert cursor == "user00"  # resuming after user00 skips nothing


def test_an_expired_claim_is_taken_over_and_the_old_holder_can_change_nothing(
        manager: MemoryManager, clock: ManualClock):
    _populate(manager, clock, USERS[:2])
    jobs = Consolidator(manager, settings=_settings(partitions=1))
    run_id = jobs.create_run("expire").run_id
    with manager.db.write() as conn:
        first = _partitions.claim(conn, "host:1:a", now=time.time(), ttl=30)
    assert first is not None and first.took_over is None
    with manager.db.write() as conn:  # held: nobody else gets it
        assert _partitions.claim(conn, "host:2:b", now=time.time(), ttl=30) is None
    with manager.db.write() as conn:  # the holder stalls: its last renewal was 60 s ago
        _partitions.renew(conn, run_id, 0, "host:1:a", now=time.time() - 60, ttl=30)
    with manager.db.write() as conn:
        second = _partitions.claim(conn, "host:2:b", now=time.time(), ttl=30)
    assert second is not None and second.took_over == "host:1:a"
    for stale in (lambda c: _partitions.renew(c, run_id, 0, "host:1:a", now=time.time(),
                                              ttl=30),
                  lambda c: _partitions.finish(c, run_id, 0, "host:1:a", status="done",
                                               now=time.time())):
        with pytest.raises(LeaseLostError), manager.db.write() as conn:
            stale(conn)
    (part,) = jobs.partitions(run_id)  # type: ignore[arg-type]
    assert part.holder == "host:2:b" and part.claims == 2 and part.status == "running"


@pytest.mark.postgres
def test_a_bucket_locked_by_a_batch_is_skipped_even_when_its_lease_ran_out(
        pg_url: str, embedder: Any, clock: ManualClock, tmp_path: Path):
    with MemoryManager.open(pg_url, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index") as manager:
        _populate(manager, clock, USERS[:4])
        jobs = Consolidator(manager, settings=_settings(partitions=2))
        run_id = jobs.create_run("expire").run_id
        assert run_id is not None
        with manager.db.write() as conn:
            mine = _partitions.claim(conn, "host:1:a", now=time.time(), ttl=30)
        assert mine is not None
        with manager.db.write() as batch:  # a batch in flight holds the row's lock
            # ... and has outlived its lease (renewed 60 s ago for 30 s)
            _partitions.renew(batch, run_id, mine.part, "host:1:a", now=time.time() - 60,
                              ttl=30)
            with manager.db.write() as conn:
                other = _partitions.claim(conn, "host:2:b", now=time.time(), ttl=30)
            assert other is not None and other.part != mine.part  # skipped, not waited on
            with manager.db.write() as conn:
                assert _partitions.claim(conn, "host:3:c", now=time.time(), ttl=30) is None
        with manager.db.write() as conn:  # committed: now it is claimable
            late = _partitions.claim(conn, "host:3:c", now=time.time(), ttl=30)
        assert late is not None and late.part == mine.part and late.took_over == "host:1:a"


@pytest.mark.postgres
def test_a_connection_dropped_mid_batch_hands_the_bucket_back_and_it_finishes_once(
        pg_url: str, embedder: Any, clock: ManualClock, tmp_path: Path):
    import psycopg
    from sqlalchemy.engine import make_url

    dropped: list[int] = []

    def drop_the_batch_connection(run_id: str, batch: int) -> None:
        """The batch's transaction is open and idle while this hook runs: end its backend
        from outside, as a failover or a network cut would."""
        if dropped or batch != 2:
            return
        url = make_url(pg_url)
        with psycopg.connect(host=url.host, port=url.port, user=url.username,
                             dbname=url.database, autocommit=True) as admin:
            dropped.extend(r[0] for r in admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                "current_database() AND state = 'idle in transaction' AND pid <> "
                "pg_backend_pid()"))

    with MemoryManager.open(pg_url, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index") as manager:
        _populate(manager, clock)
        jobs = Consolidator(manager, settings=_settings(partitions=2),
                            hooks=RunHooks(before_commit=drop_the_batch_connection))
        run_id = jobs.create_run("expire").run_id
        assert run_id is not None
        assert Worker(jobs).run_until_idle().partitions == 2
        assert dropped == [True]
        report = jobs.get_run(run_id)
        assert report.status == "finished" and report.counts == {"demote": 2 * len(USERS)}
        assert set(_per_record(manager, run_id).values()) == {1}
        parts = jobs.partitions(run_id)
        assert sum(p.claims for p in parts) == 3
        assert any("retried after StorageError" in e for p in parts for e in p.errors)
        assert all(r["confidence"] == pytest.approx(0.4) for r in rows(manager).values())
