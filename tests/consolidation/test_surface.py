"""The package surface: __all__ is exact, names load lazily, erasure covers our tables
even in a process that never imported the jobs, and consolidation never imports the agent."""

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


_AGENT_LOADED = "any(m == 'memstrata.agent' or m.startswith('memstrata.agent.') " \
                "for m in sys.modules)"


def test_importing_the_tables_does_not_pull_in_the_jobs_or_the_agent():
    code = ("import sys, memstrata.consolidation._tables; "
            "print('memstrata.consolidation.runner' in sys.modules, "
            f"{_AGENT_LOADED})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]


def test_consolidation_with_a_model_never_imports_the_agent(
        tmp_path: Path, embedder: Embedder, clock):
    """The LLM seam and its call log are core: consolidation work does not need the agent."""
    url = f"sqlite:///{tmp_path / 'llm.db'}"
    with MemoryManager.open(url, embedder=embedder, clock=clock) as mm:
        mm.observe("alice", "s1", "user", "I prefer quiet hotels.")
    clock.advance(hours=2)
    reply = '{"summary": "Prefers quiet hotels.", "facts": []}'
    code = ("import sys\nfrom datetime import datetime\n"
            "from memstrata import ManualClock, MemoryManager\n"
            "from memstrata.consolidation import Consolidator\n"
            "from memstrata.llm import list_calls\n"
            "from memstrata.testing import ScriptedLLM, say\n"
            f"clock = ManualClock(datetime.fromisoformat({clock.now().isoformat()!r}))\n"
            f"with MemoryManager.open({url!r}, clock=clock) as mm:\n"
            f"    model = ScriptedLLM(say({reply!r}))\n"
            "    report = Consolidator(mm, llm=model).run('summarize')\n"
            "    print(report.method, len(list_calls(mm.db, 'alice')))\n"
            f"print({_AGENT_LOADED})\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.split() == ["llm", "1", "False"]


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
