"""Child process for test_resume: runs a task whose second side effect blocks forever,
so the parent can kill it mid-task (SIGKILL) and resume in another process."""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

from memstrata import MemoryManager
from memstrata.agent import Agent, AgentSettings, CharCounter, Goal, RunContext, tool
from memstrata.testing import ScriptedLLM, call, plan

GOAL = Goal(intent="Run the three steps A, B and C once each",
            acceptance=["A, B and C are each done once"])


def ledger(path: Path, name: str, key: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS ledger (name TEXT, key TEXT)")
        conn.execute("INSERT INTO ledger VALUES (?, ?)", (name, key))


def make_tools(ledger_path: Path, block_b: Path | None):
    def side_effect(name: str):
        @tool(name=name, risk="L2", timeout=None)
        def step(ctx: RunContext[None], note: str) -> str:
            """A side effect that must happen exactly once.

            Args:
                note: Free text.
            """
            if name == "step_b" and block_b is not None:
                block_b.write_text("ready")
                time.sleep(600)  # killed here
            ledger(ledger_path, name, ctx.idempotency_key)
            return f"{name} done"
        return step
    return [side_effect("step_a"), side_effect("step_b"), side_effect("step_c")]


PLAN = plan([("Do A", "c1", "step_a"), ("Do B", "c1", "step_b"), ("Do C", "c1", "step_c")])


def main() -> None:
    db, ledger_path, ready, task_file = (Path(a) for a in sys.argv[1:5])
    with MemoryManager.open(f"sqlite:///{db}") as memory:
        agent = Agent(ScriptedLLM(PLAN, call("step_a", {"note": "a"}),
                                  call("step_b", {"note": "b"})),
                      memory=memory, tools=make_tools(ledger_path, ready),
                      confirm=lambda r: True, token_counter=CharCounter(),
                      settings=AgentSettings(detect_drift=False))
        gen = agent.iter(GOAL, user="alice")
        next(gen)  # the task exists once its first step is recorded
        task_file.write_text(memory.episodic.list_tasks("alice")[0].task_id)
        for _ in gen:
            pass


if __name__ == "__main__":
    main()
