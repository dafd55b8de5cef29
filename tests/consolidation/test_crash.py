"""A job killed mid-run (a real child process, os._exit between batches or before a
commit) loses nothing; the rerun resumes the same run and does every action once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from memstrata import ManualClock, MemoryManager, Status
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.consolidation._tables import actions, runs

from ._crash_child import CRASH_EXIT

CHILD = Path(__file__).with_name("_crash_child.py")
USERS = [f"user{i}" for i in range(6)]  # 3 batches of 2


def _populate(mm: MemoryManager, clock: ManualClock) -> None:
    for user in USERS:
        assert mm.remember(user, "I like jazz.", type="preference", confidence=0.8).stored
    clock.advance(days=1)
    for user in USERS:
        assert mm.remember(user, "I don't like jazz.", type="preference",
                           confidence=0.8).stored
    clock.advance(days=200)


def _crash(url: str, job: str, point: str, clock: ManualClock) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(CHILD), url, job, point, "2", clock.now().isoformat()],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == CRASH_EXIT, done.stderr


@pytest.mark.parametrize(
    ("job", "point", "action"),
    [("expire", "after_batch", "demote"), ("expire", "before_commit", "demote"),
     ("conflicts", "after_batch", "flag_conflict")],
)
def test_a_crash_mid_job_loses_nothing_and_the_rerun_completes_once(
        manager: MemoryManager, clock: ManualClock, db_url: str, job: str, point: str,
        action: str):
    _populate(manager, clock)
    _crash(db_url, job, point, clock)
    with manager.db.read() as conn:
        (crashed,) = conn.execute(select(runs)).all()
        recorded = conn.execute(select(func.count()).select_from(actions)).scalar_one()
    committed = 2 if point == "after_batch" else 1
    assert crashed.status == "running" and crashed.batches == committed
    assert crashed.cursor == USERS[2 * committed - 1]
    assert recorded == 4 * committed  # 2 users x 2 records per committed batch
    # the rerun takes over the dead child's lease at once and resumes its run
    settings = ConsolidationSettings.build(batch_users=2)
    report = Consolidator(manager, settings=settings).run(job)
    assert report.run_id == crashed.id and report.status == "finished"
    assert report.resumed == 1 and report.counts == {action: 12}
    assert report.batches == 3 and report.users == 6
    with manager.db.read() as conn:
        per_record = conn.execute(
            select(actions.c.memory_id, func.count()).group_by(actions.c.memory_id)).all()
    assert len(per_record) == 12 and {n for _, n in per_record} == {1}
    for user in USERS:
        records = manager.memories(user, statuses=list(Status))
        assert len(records) == 2
        if job == "expire":
            assert all(r.status is Status.DEMOTED for r in records)
            assert all(r.confidence == pytest.approx(0.4) for r in records)  # halved once
        else:
            assert all(r.status is Status.PENDING_CONFIRMATION for r in records)
            assert len({r.conflict_group for r in records}) == 1
    assert Consolidator(manager, settings=settings).run(job).counts == {}
