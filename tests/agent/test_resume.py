"""Resume after a real process was killed mid-task: no subtask is done twice."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from child_resume import GOAL, make_tools

from memstrata import MemoryManager
from memstrata.agent import Agent, AgentSettings, CharCounter
from memstrata.agent.steps import Action
from memstrata.testing import ScriptedLLM, call, say

HERE = Path(__file__).parent


def test_resume_after_kill_does_no_subtask_twice(tmp_path: Path, embedder):
    db, ledger, ready, task_file = (tmp_path / "m.db", tmp_path / "ledger.db",
                                    tmp_path / "ready", tmp_path / "task")
    env = {**os.environ, "PYTHONPATH": str(HERE.parent.parent), "HF_HUB_OFFLINE": "1"}
    child = subprocess.Popen([sys.executable, str(HERE / "child_resume.py"), str(db),
                              str(ledger), str(ready), str(task_file)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert child.poll() is None, "the child died before reaching step B"
            assert time.monotonic() < deadline, "the child never reached step B"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    task_id = task_file.read_text()

    # the resumed model (a fresh process's view) first tries A again, then B and C
    model = ScriptedLLM(call("step_a", {"note": "a"}), call("step_b", {"note": "b"}),
                        call("step_c", {"note": "c"}), say("A, B and C are done."))
    with MemoryManager.open(f"sqlite:///{db}", embedder=embedder) as memory:
        found = memory.episodic.trajectory("alice", task_id)
        state = found.task.state  # saved after turn 1; the start of B was recorded after it
        assert [s["status"] for s in state["subtasks"]] == ["done", "pending", "pending"]
        assert found.steps[-1].step.outcome == "started"
        assert state["applied_step"] < found.steps[-1].step_no
        agent = Agent(model, memory=memory, tools=make_tools(ledger, None),
                      confirm=lambda r: True, token_counter=CharCounter(),
                      settings=AgentSettings(detect_drift=False))
        result = agent.resume(task_id, user="alice")
        acts = [e.item for e in agent.trajectory("alice", task_id)
                if isinstance(e.item, Action)]
    assert result.status == "done"
    assert [s["status"] for s in result.subtasks] == ["done", "done", "done"]
    # the interrupted call was reported to the model on the first resumed turn
    assert "INTERRUPTED: step_b" in model.requests[0].messages[1]["content"]  # the data block
    # A was refused as a duplicate; every side effect happened exactly once
    assert [(a.tool, a.error_type) for a in acts] == [
        ("step_a", None), ("step_a", "duplicate"), ("step_b", None), ("step_c", None)]
    with sqlite3.connect(ledger) as conn:
        rows = conn.execute("SELECT name, COUNT(*) FROM ledger GROUP BY name").fetchall()
    assert dict(rows) == {"step_a": 1, "step_b": 1, "step_c": 1}
    assert GOAL.intent in model.requests[0].messages[0]["content"]
