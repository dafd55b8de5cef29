"""Soak: several application processes write and recall on PostgreSQL while two
``memstrata worker`` processes consolidate and new runs keep being queued.

Nothing acknowledged is lost (every returned write is a row at the end, merged
records pointing at their survivor), no read after a returned write misses it
(in the writing process or another one), every run finishes without errors and
no record is acted on twice by one run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from memstrata import MemoryManager, Status
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.consolidation._tables import actions, runs

CHILD = Path(__file__).with_name("_soak_child.py")
APPS = 3
WRITES = 12
MEMSTRATA = Path(sys.executable).with_name("memstrata")


@pytest.mark.slow
@pytest.mark.postgres
def test_apps_and_two_workers_on_postgres_lose_nothing_and_read_fresh(
        pg_url: str, tmp_path: Path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMSTRATA_PARTITION_LEASE": "2",
           "MEMSTRATA_PARTITIONS": "4"}
    with MemoryManager.open(pg_url) as mm:  # migrate once, before the processes race
        jobs = Consolidator(mm, settings=ConsolidationSettings.build(partitions=4))
        ledgers = tmp_path / "ledgers"
        ledgers.mkdir()
        logs = [(tmp_path / f"worker{n}.err").open("wb") for n in range(2)]
        workers = [subprocess.Popen([str(MEMSTRATA), "worker", "--url", pg_url], env=env,
                                    stdout=subprocess.DEVNULL, stderr=log) for log in logs]
        apps = [subprocess.Popen([sys.executable, str(CHILD), pg_url, str(n), str(WRITES),
                                  str(ledgers)], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for n in range(APPS)]
        created: list[str] = []
        try:
            while any(a.poll() is None for a in apps):
                for job in ("conflicts", "expire"):
                    if not _open(jobs, job):
                        run_id = jobs.create_run(job).run_id
                        assert run_id is not None
                        created.append(run_id)
                time.sleep(0.5)
            outputs = [a.communicate(timeout=120) for a in apps]
            deadline = time.monotonic() + 60
            while any(_open(jobs, job) for job in ("conflicts", "expire")):
                assert time.monotonic() < deadline, "the workers did not finish the runs"
                time.sleep(0.2)
        finally:
            for w in workers:
                w.send_signal(signal.SIGTERM)
            for w in workers:
                w.wait(timeout=60)
            for log in logs:
                log.close()
        for a, (_, err) in zip(apps, outputs, strict=True):
            assert a.returncode == 0, err
        summaries = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
        assert all(w.returncode == 0 for w in workers), \
            [(tmp_path / f"worker{n}.err").read_text()[-2000:] for n in range(2)]
        # every process wrote, read others' writes, and never missed a returned write
        assert [s["writes"] for s in summaries] == [WRITES] * APPS, summaries
        assert sum(s["reads"] for s in summaries) > APPS, summaries
        assert [s["stale"] for s in summaries] == [[]] * APPS
        # nothing lost: every acknowledged write is a row (live, or merged into a live one)
        written = [json.loads(line) for p in ledgers.glob("p*.jsonl")
                   for line in p.read_text().splitlines()]
        assert len(written) == sum(s["writes"] for s in summaries)
        for entry in written:
            record = mm.get(entry["user"], entry["id"])
            assert record.status is not Status.DELETED, record
        # the runs: several of each job, all finished cleanly, each record acted on once
        assert len(created) >= 2
        with mm.db.read() as conn:
            states = conn.execute(select(runs.c.status, runs.c.errors)
                                  .where(runs.c.id.in_(created))).all()
            twice = conn.execute(
                select(actions.c.run_id, actions.c.memory_id, func.count())
                .where(actions.c.run_id.in_(created), actions.c.memory_id.is_not(None))
                .group_by(actions.c.run_id, actions.c.memory_id)
                .having(func.count() > 1)).all()
        assert {s.status for s in states} == {"finished"}
        assert [s.errors for s in states if s.errors] == []
        assert twice == []


def _open(jobs: Consolidator, job: str) -> bool:
    return any(r.status in ("queued", "running") for r in jobs.runs(job=job, limit=3))
