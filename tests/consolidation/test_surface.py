"""The package surface: __all__ is exact, names load lazily, erasure covers our tables
even in a process that never imported the jobs."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select

import memstrata.consolidation as consolidation
from memstrata import MemoryManager
from memstrata.consolidation import Consolidator
from memstrata.consolidation._tables import actions, sources
from memstrata.memory.embedder import Embedder


def test_all_lists_exactly_the_public_names():
    assert sorted(consolidation.__all__) == sorted(set(consolidation.__all__))
    for name in consolidation.__all__:
        obj = getattr(consolidation, name)
        assert obj is not None
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__.startswith("memstrata.consolidation")


def test_importing_the_tables_does_not_pull_in_the_jobs():
    code = ("import sys, memstrata.consolidation._tables; "
            "print('memstrata.consolidation.runner' in sys.modules, "
            "'memstrata.agent.llm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]


def test_forget_user_in_a_fresh_process_erases_consolidation_rows(
        tmp_path: Path, embedder: Embedder, clock):
    url = f"sqlite:///{tmp_path / 'erase.db'}"
    with MemoryManager.open(url, embedder=embedder, clock=clock) as mm:
        mm.remember("alice", "I like jazz.", type="preference")
        clock.advance(days=1)
        mm.remember("alice", "I don't like jazz.", type="preference")
        mm.observe("alice", "s1", "user", "I prefer quiet hotels.")
        clock.advance(hours=2)
        jobs = Consolidator(mm)
        jobs.run("summarize")
        jobs.run("conflicts")
    code = ("from memstrata import MemoryManager; import sys; "
            f"m = MemoryManager.open({url!r}); print(m.forget_user('alice')); m.close(); "
            "print('memstrata.consolidation.runner' in sys.modules)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.strip().endswith("False")  # the jobs were never imported there
    with MemoryManager.open(url, embedder=embedder, clock=clock) as mm, mm.db.read() as conn:
        for table in (actions, sources):
            n = conn.execute(select(func.count()).select_from(table)
                             .where(table.c.user_id == "alice")).scalar_one()
            assert n == 0, table.name
