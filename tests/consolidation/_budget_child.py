"""Child process of the shared-budget tests: one worker drawing on a run's token budget.

Usage: python _budget_child.py DB_URL BASE_URL RUN_ID BUDGET CALLS CONCURRENCY TAG
   or: python _budget_child.py --worker DB_URL BASE_URL BUDGET CONCURRENCY NOW_ISO

The second form is a real consolidation worker (:class:`Worker`, run until idle)
with the run's clock, working the queued ``summarize`` run's buckets.

Opens the database (already migrated by the parent), builds the run's gate the
way the runner does (:meth:`LLMGate.for_run`: the budget row in the database)
and asks CALLS questions, CONCURRENCY at a time, through the loopback server.
Prints ``ready``, waits for a line on stdin (so the workers start together), then
prints one JSON line: the calls answered and the tokens they used.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

from memstrata import ManualClock, MemoryManager
from memstrata.clock import SystemClock
from memstrata.consolidation import ConsolidationSettings, Consolidator, Worker
from memstrata.consolidation._llm import Ask, LLMGate
from memstrata.llm import OpenAIClient, Retry, set_model_requests_allowed
from memstrata.memory import Database

QUESTION = "Summarise this conversation about trains and timetables. " * 16


def worker(url: str, base_url: str, budget: str, concurrency: str, now: str) -> None:
    settings = ConsolidationSettings.build(
        batch_users=4, partitions=4,
        llm={"model": "scripted", "base_url": base_url, "api_key": "k", "retries": 0,
             "token_budget": int(budget), "max_tokens": 50, "concurrency": int(concurrency)})
    with MemoryManager.open(url, clock=ManualClock(datetime.fromisoformat(now))) as memory:
        print("ready", flush=True)
        sys.stdin.readline()
        report = Worker(Consolidator(memory, settings=settings)).run_until_idle()
    print(json.dumps({"partitions": report.partitions}))


def main() -> None:
    if sys.argv[1] == "--worker":
        worker(*sys.argv[2:7])
        return
    url, base_url, run_id, budget, calls, concurrency, tag = sys.argv[1:8]
    set_model_requests_allowed(True)
    db = Database(url)
    client = OpenAIClient(model="scripted", base_url=base_url, api_key="k",
                          retry=Retry(max_attempts=1))
    gate = LLMGate.for_run(client, db=db, clock=SystemClock(), run_id=run_id,
                           budget=int(budget), spent=0, max_tokens=50,
                           concurrency=int(concurrency))
    print("ready", flush=True)
    sys.stdin.readline()  # the parent starts every worker at once
    asks = [Ask("You summarise.", f"{tag} {n}: {QUESTION}", f"user-{tag}-{n}", "summarize")
            for n in range(int(calls))]
    answers = gate.ask_json_many(asks)
    print(json.dumps({"answered": sum(a is not None for a in answers), "calls": gate.calls,
                      "tokens": gate.used, "disabled": gate.disabled}))
    client.close()
    db.dispose()


if __name__ == "__main__":
    main()
