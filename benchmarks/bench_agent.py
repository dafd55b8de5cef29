"""Agent kernel benchmarks -> benchmarks/results/agent.json.

1. Kernel overhead per step, excluding the model: a 40-step scripted task over a
   memory holding 10,000 long-term records for the user. Per turn we time the
   whole turn (context build incl. memory recall, tool dispatch through the
   governed toolset, recording steps + task table in SQLite, model-call log)
   and subtract the scripted model's own time. Two variants: recall refreshed
   when the subtask changes / every 10 turns (default) and recall on every turn
   (worst case). Target: p95 <= 30 ms.
2. Context tokens per step vs naively sending the full history (same system
   block + every round verbatim), counted with the embedding model's tokenizer.
   Target: <= 25% of the naive tokens over the task.

Run: ``flock /tmp/memstrata-bench.lock python benchmarks/bench_agent.py``
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from memstrata import MemoryManager
from memstrata.agent import Agent, AgentSettings, Goal, tool
from memstrata.agent.steps import LogEntry, ModelTurn
from memstrata.memory import default_embedder
from memstrata.testing import ScriptedLLM, call, plan, say

OUT = Path(__file__).parent / "results" / "agent.json"
STEPS = 40
MEMORIES = 10_000
TOPICS = ["shipping", "refund", "address", "payment", "warranty", "delivery slot", "invoice",
          "gift wrap", "returns", "loyalty points"]


@tool(cache=False)
def search(q: str) -> list[dict[str, Any]]:
    """Search the order history.

    Args:
        q: What to look for.
    """
    return [{"order": f"A{1000 + i}", "match": q, "status": "shipped",
             "note": "delivered to the front desk, signed by the concierge"} for i in range(4)]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class TimedModel(ScriptedLLM):
    def __init__(self, *script: Any) -> None:
        super().__init__(*script)
        self.spent: list[float] = []

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return super().chat(*args, **kwargs)
        finally:
            self.spent.append(time.perf_counter() - t)


def run_task(memory: MemoryManager, user: str, refresh: int) -> dict[str, Any]:
    goal = Goal(intent="Review the customer's last forty order searches about deliveries and "
                       "summarise what went wrong", acceptance=["All forty searches reviewed"])
    model = TimedModel(plan([("Search the history", "c1", "search")]),
                       *[call("search", {"q": f"{TOPICS[i % len(TOPICS)]} problem {i}"},
                              echo=goal.sentence, thought=f"search {i}")
                         for i in range(STEPS)],
                       say("Summary: mostly late deliveries.", echo=goal.sentence))
    agent = Agent(model, memory=memory, tools=[search], settings=AgentSettings(
        max_steps=STEPS + 5, detect_drift=False, recall_refresh_turns=refresh,
        write_lessons=False))
    per_turn: list[float] = []
    mark = None
    model_before = 0.0
    gen = agent.iter(goal, user=user, scope="orders")
    result = None
    while True:
        try:
            entry: LogEntry = next(gen)
        except StopIteration as stop:
            result = stop.value
            break
        if isinstance(entry.item, ModelTurn):
            now = time.perf_counter()
            spent = sum(model.spent)
            if mark is not None:
                per_turn.append((now - mark - (spent - model_before)) * 1000)
            mark, model_before = now, spent
    assert result is not None and result.status == "done", result
    entries = agent.trajectory(user, result.task_id)
    ours, naive = [], []
    builder = agent.builder
    state_entries: list[LogEntry] = []
    task = memory.episodic.get_task(user, result.task_id)
    from memstrata.agent.goal import STATE
    state = STATE.validate_python(task.state)
    for e in entries:
        if isinstance(e.item, ModelTurn):
            ours.append(e.item.context_tokens)
            naive.append(builder.naive_tokens(goal=goal, criteria=goal.criteria(), state=state,
                                              entries=state_entries))
        state_entries.append(e)
    return {"per_turn_ms": per_turn, "ours": ours, "naive": naive,
            "context_report": result.context.report() if result.context else None}


def main() -> None:
    embedder = default_embedder()
    embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory() as tmp, MemoryManager.open(
            f"sqlite:///{Path(tmp) / 'bench.db'}", embedder=embedder) as memory:
        t = time.perf_counter()
        items = [{"content": f"Customer note {i}: the {TOPICS[i % len(TOPICS)]} for order "
                             f"A{i} needed follow-up #{i * 7919 % 10007}",
                  "type": "knowledge", "scope": "orders"} for i in range(MEMORIES)]
        memory.remember_many("bench", items)
        ingest_s = time.perf_counter() - t
        default = run_task(memory, "bench", refresh=10)
        cold = run_task(memory, "bench", refresh=1)
    steady = default["per_turn_ms"]
    worst = cold["per_turn_ms"]
    ours, naive = default["ours"], default["naive"]
    ratio = sum(ours) / sum(naive)
    out = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "memories": MEMORIES, "steps": STEPS, "ingest_seconds": round(ingest_s, 1),
        "kernel_overhead_ms": {
            "what": "per turn, model time excluded: context build (incl. recall), tool "
                    "dispatch, recording steps + task table + model-call log in SQLite",
            "default_recall_refresh": {"p50": round(statistics.median(steady), 2),
                                       "p95": round(pct(steady, 0.95), 2),
                                       "max": round(max(steady), 2), "n": len(steady)},
            "recall_every_turn": {"p50": round(statistics.median(worst), 2),
                                  "p95": round(pct(worst, 0.95), 2),
                                  "max": round(max(worst), 2), "n": len(worst)},
            "target_p95_ms": 30,
        },
        "context_tokens": {
            "counter": "all-MiniLM-L6-v2 tokenizer",
            "ours_total": sum(ours), "naive_total": sum(naive),
            "ratio_total": round(ratio, 3),
            "ours_last_step": ours[-1], "naive_last_step": naive[-1],
            "ratio_last_step": round(ours[-1] / naive[-1], 3),
            "ours_per_step_mean": round(statistics.mean(ours), 1),
            "naive_per_step_mean": round(statistics.mean(naive), 1),
            "target_ratio": 0.25,
            "last_context_report": default["context_report"],
        },
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
