"""The ``llm`` section of ``consolidation_workers.py``: LLM-bound ``summarize`` with workers.

10,000 users, each with one ended session of 4 turns (bulk-inserted into a
template database on a throwaway PostgreSQL cluster; every cell gets a copy).
The model is the loopback OpenAI-format server, answering every request after
a fixed 200 ms with a one-line summary and the usage a tokenizer would count.
Each cell starts W worker processes (``Worker.run_until_idle`` with
``llm.concurrency`` = C), waits until each has opened the database and loaded
the embedder, queues one partitioned run and times it from the queueing to
its end. Cells with calls in flight run on all 10,000 users; cells with one
call in flight run on 200 users a worker (the count is recorded; users/s is
users / seconds, the same measure). The baseline is today's single sequential worker: an in-process
``Consolidator.run("summarize")``, one call at a time, on its own copy.

Checked in every cell: tokens spent (the budget row every worker draws on,
and the server's own count of reported usage) within the budget, one model
call per user, zero duplicate applications (users with more than one
``summarize_session`` action in the run, or more than one summary record).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select, text

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationSettings, Consolidator, Worker
from memstrata.consolidation._budget import budgets
from memstrata.consolidation._tables import actions
from memstrata.llm import llm_calls
from memstrata.memory import Database
from memstrata.memory._schema import memories, turns
from memstrata.testing import OpenAICompatServer, Reply, approx_tokens
from memstrata.testing.postgres import PostgresServer

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DELAY = 0.2
BUDGET = 10_000_000
PARTITIONS = 16
WORKERS = (1, 2, 4)
CONCURRENCY = (1, 8, 32)

CITIES = ["Oslo", "Bergen", "Lyon", "Porto", "Graz", "Turin", "Ghent", "Split", "Krakow",
          "Seville", "Leipzig", "Aarhus"]


def _settings(base_url: str, concurrency: int) -> ConsolidationSettings:
    return ConsolidationSettings.build(
        batch_users=max(20, 2 * concurrency), partitions=PARTITIONS,
        llm={"model": "bench", "base_url": base_url, "api_key": "k", "retries": 2,
             "token_budget": BUDGET, "max_tokens": 120, "concurrency": concurrency})


def _answer(request: dict[str, Any]) -> Reply:
    transcript = request["messages"][-1]["content"]
    first = transcript.split("\n")[0].split(":", 1)[-1].strip()
    summary = json.dumps({"summary": f"Asked about {first[:80]}", "facts": []})
    return Reply.text(summary, prompt_tokens=approx_tokens(request), completion_tokens=25)


def _user(n: int) -> str:
    return f"u{n:05d}"


def generate(url: str, users: int, tmp: Path) -> float:
    """One ended session of 4 turns per user, bulk-inserted."""
    started = time.perf_counter()
    with MemoryManager.open(url, clock=ManualClock(NOW), index_dir=tmp / "gen-index"):
        pass  # migrated
    db = Database(url)
    at = (NOW - timedelta(hours=3)).timestamp()
    rows = []
    for n in range(users):
        a, b = CITIES[n % len(CITIES)], CITIES[(n * 7 + 3) % len(CITIES)]
        meta = {"scope": "travel", "fast_extracted": 0}
        for k, (role, said) in enumerate((
                ("user", f"I need a train from {a} to {b} on day {n % 28 + 1}."),
                ("assistant", "Which class would you like?"),
                ("user", f"Second class, seat {n % 90 + 1} by the window if possible."),
                ("assistant", "Done, the ticket is booked."))):
            rows.append({"user_id": _user(n), "session_id": "s1", "role": role, "text": said,
                         "at": at + k, "metadata": meta})
    with db.write() as conn:
        for i in range(0, len(rows), 5000):
            conn.execute(insert(turns), rows[i:i + 5000])
    db.dispose()
    return time.perf_counter() - started


def llm_worker_main(argv: list[str]) -> None:
    """A worker process: open, warm up, say ready, wait for go, work until idle."""
    url, index_dir, base_url, concurrency = argv[0], argv[1], argv[2], int(argv[3])
    with MemoryManager.open(url, clock=ManualClock(NOW), index_dir=Path(index_dir)) as mm:
        mm.embedder.embed(["warm up"])
        print("ready", flush=True)
        sys.stdin.readline()
        before = os.times()
        report = Worker(Consolidator(mm, settings=_settings(base_url, concurrency))
                        ).run_until_idle()
        after = os.times()
    cpu = (after.user - before.user) + (after.system - before.system)
    print(json.dumps({"partitions": report.partitions, "cpu_seconds": cpu}), flush=True)


class _Cells:
    def __init__(self, pg: PostgresServer, script: Path, template: str,
                 server: OpenAICompatServer) -> None:
        self.pg, self.script, self.template, self.server = pg, script, template, server
        self.n = 0

    def copy(self, users: int) -> str:
        import psycopg

        self.n += 1
        name = f"llm{self.n}"
        with psycopg.connect(host="127.0.0.1", port=self.pg.port, user="postgres",
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        url = self.pg.url(name)
        db = Database(url)
        with db.write() as conn:  # keep the first `users` users
            conn.execute(text("DELETE FROM turns WHERE user_id >= :last"),
                         {"last": _user(users)})
        db.dispose()
        return url

    def _reset(self) -> None:
        self.server.chat_log.clear()
        self.server.max_in_flight = 0

    def baseline(self, users: int) -> dict[str, Any]:
        """Today's single sequential worker: one process, one call at a time."""
        url = self.copy(users)
        self._reset()
        with MemoryManager.open(url, clock=ManualClock(NOW),
                                index_dir=self.pg.root / f"index{self.n}") as mm:
            mm.embedder.embed(["warm up"])
            before = os.times()
            started = time.perf_counter()
            report = Consolidator(mm, settings=_settings(self.server.base_url, 1)
                                  ).run("summarize")
            seconds = time.perf_counter() - started
            after = os.times()
            checks = self._checks(mm, str(report.run_id))
        cpu = (after.user - before.user) + (after.system - before.system)
        return {"workers": 1, "concurrency": 1, "users": report.users,
                "seconds": round(seconds, 2), "users_per_second": round(users / seconds, 2),
                "cpu_seconds_per_user": round(cpu / max(1, report.users), 4),
                "note": "this process also runs the loopback server's threads",
                "status": report.status, "method": report.method, **checks}

    def cell(self, workers: int, concurrency: int, users: int) -> dict[str, Any]:
        url = self.copy(users)
        index_dir = self.pg.root / f"index{self.n}"
        self._reset()
        procs = [subprocess.Popen(
            [sys.executable, str(self.script), "--as-llm-worker", url, str(index_dir),
             self.server.base_url, str(concurrency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(workers)]
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        with MemoryManager.open(url, clock=ManualClock(NOW), index_dir=index_dir) as mm:
            jobs = Consolidator(mm, settings=_settings(self.server.base_url, concurrency))
            started = time.perf_counter()
            run_id = str(jobs.create_run("summarize").run_id)
            for p in procs:
                assert p.stdin is not None
                p.stdin.write("go\n")
                p.stdin.flush()
            while jobs.get_run(run_id).status in ("queued", "running"):
                time.sleep(0.1)
            seconds = time.perf_counter() - started
            cpu = 0.0
            for p in procs:
                out = p.communicate(timeout=120)[0].strip().splitlines()
                cpu += json.loads(out[-1])["cpu_seconds"] if out else float("nan")
            report = jobs.get_run(run_id)
            checks = self._checks(mm, run_id)
        return {"workers": workers, "concurrency": concurrency, "users": report.users,
                "seconds": round(seconds, 2),
                "users_per_second": round(report.users / seconds, 2),
                "worker_cpu_seconds_per_user": round(cpu / max(1, report.users), 4),
                "status": report.status, "method": report.method,
                "errors": len(report.errors), **checks}

    def _checks(self, mm: MemoryManager, run_id: str) -> dict[str, Any]:
        with mm.db.read() as conn:
            budget = conn.execute(select(budgets).where(budgets.c.run_id == run_id)).one()
            calls = conn.execute(select(func.count()).select_from(llm_calls)).scalar_one()
            twice = conn.execute(select(func.count()).select_from(
                select(actions.c.user_id).where(actions.c.run_id == run_id,
                                                actions.c.action == "summarize_session")
                .group_by(actions.c.user_id).having(func.count() > 1).subquery())
            ).scalar_one()
            two_summaries = conn.execute(select(func.count()).select_from(
                select(memories.c.user_id).where(memories.c.type == "summary")
                .group_by(memories.c.user_id, memories.c.session_id)
                .having(func.count() > 1).subquery())).scalar_one()
            summaries = conn.execute(select(func.count()).select_from(memories).where(
                memories.c.type == "summary")).scalar_one()
        answered = [e for e in self.server.chat_log if e.status == 200]
        at_server = sum(e.prompt_tokens + e.completion_tokens for e in answered)
        return {
            "llm_calls_logged": calls, "requests_at_server": len(self.server.chat_log),
            "max_in_flight_at_server": self.server.max_in_flight,
            "summaries": summaries,
            "tokens": {"budget": int(budget.budget), "spent": int(budget.spent),
                       "reserved_left": int(budget.reserved), "reported_by_server": at_server,
                       "within_budget": int(budget.spent) <= int(budget.budget)},
            "duplicate_applications": int(twice) + int(two_summaries),
        }


def _users_for(workers: int, concurrency: int, total: int) -> int:
    """Users of a cell: all of them with calls in flight, 200 per worker at one call in
    flight (~4.8 users/s a worker: the full 10,000 would take ~35 min a cell)."""
    return min(total, 200 * workers) if concurrency == 1 else total


def llm_section(pg: PostgresServer, script: Path, users: int, seed: int) -> dict[str, Any]:
    template = "llm_template"
    url = pg.create_database(template)
    print(f"generating {users:,} users ...", flush=True)
    gen_seconds = generate(url, users, pg.root)
    out: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                    "note": "2 cores shared by PostgreSQL, the workers, the loopback "
                            "server and other engineers' jobs (see loadavg): CPU-bound cells "
                            "are noisy"},
        "database": "postgresql (throwaway cluster)",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"server": "memstrata.testing.OpenAICompatServer on 127.0.0.1",
                  "fixed_delay_seconds": DELAY, "answer": "one-line summary JSON, "
                  "usage = prompt chars/4 + 4 per message, 25 completion tokens"},
        "data": {"users": users, "turns_per_user": 4, "sessions_per_user": 1,
                 "generation_seconds": round(gen_seconds, 1)},
        "settings": {"partitions": PARTITIONS, "batch_users": "max(20, 2 x concurrency)",
                     "token_budget": BUDGET, "max_tokens": 120},
        "method": "users/s = users in the run / seconds from queueing the run to its "
                  "end, workers already started (opened, embedder loaded); slow cells run "
                  "on fewer users (see 'users')",
    }
    out["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]
    with OpenAICompatServer(on_chat=_answer, delay=DELAY) as server:
        cells = _Cells(pg, script, template, server)
        base = cells.baseline(min(users, 200))
        print("baseline", base, flush=True)
        out["baseline_single_sequential_worker"] = base
        grid: dict[str, Any] = {}
        for workers in WORKERS:
            for concurrency in CONCURRENCY:
                got = cells.cell(workers, concurrency, _users_for(workers, concurrency, users))
                got["speedup_vs_baseline"] = round(
                    got["users_per_second"] / base["users_per_second"], 1)
                grid[f"workers_{workers}_concurrency_{concurrency}"] = got
                print(workers, concurrency, got, flush=True)
        out["cells"] = grid
    out["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    target = grid["workers_2_concurrency_32"]
    out["target"] = {
        "goal": "concurrency 32 with 2 workers >= 50x today's single sequential worker",
        "speedup": target["speedup_vs_baseline"],
        "met": target["speedup_vs_baseline"] >= 50,
        "tokens_within_budget": all(c["tokens"]["within_budget"] for c in grid.values()),
        "duplicate_applications": sum(c["duplicate_applications"] for c in grid.values()),
    }
    return out


def _on_fresh_cluster(users: int, measure: Any) -> dict[str, Any]:
    """``measure(cells)`` on a fresh cluster with ``users`` generated, timestamped and
    with the load average before and after."""
    script = Path(__file__).with_name("consolidation_workers.py")
    with PostgresServer() as pg:
        url = pg.create_database("llm_template")
        generate(url, users, pg.root)
        with OpenAICompatServer(on_chat=_answer, delay=DELAY) as server:
            load = [round(x, 2) for x in os.getloadavg()]
            got: dict[str, Any] = measure(_Cells(pg, script, "llm_template", server))
    got["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    got["loadavg_before_after"] = [load, [round(x, 2) for x in os.getloadavg()]]
    return got


def _update_llm(change: Any, got: dict[str, Any]) -> None:
    out = Path(__file__).parent / "results" / "consolidation_workers.json"
    data = json.loads(out.read_text())
    change(data["llm"], got)
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(got, indent=2))


def full_size(workers: int, concurrency: int, users: int) -> None:
    """One cell on the full user count, stored as ``llm.full_size`` of the JSON:
    ``python benchmarks/_llm_workers.py WORKERS CONCURRENCY [USERS]``."""
    got = _on_fresh_cluster(users, lambda cells: cells.cell(workers, concurrency, users))

    def store(llm: dict[str, Any], got: dict[str, Any]) -> None:
        base = llm["baseline_single_sequential_worker"]["users_per_second"]
        got["speedup_vs_baseline"] = round(got["users_per_second"] / base, 1)
        llm["full_size"] = got

    _update_llm(store, got)


def baseline_again(users: int = 200) -> None:
    """The sequential baseline re-measured (``llm.full_size.baseline_rerun``), so the
    full-size cell is compared with a baseline taken under the same machine load:
    ``python benchmarks/_llm_workers.py baseline``."""
    got = _on_fresh_cluster(users, lambda cells: cells.baseline(users))

    def store(llm: dict[str, Any], got: dict[str, Any]) -> None:
        full = llm["full_size"]
        full["baseline_rerun"] = got
        full["speedup_vs_baseline_rerun"] = round(full["users_per_second"]
                                                  / got["users_per_second"], 1)

    _update_llm(store, got)


if __name__ == "__main__":
    if sys.argv[1] == "baseline":
        baseline_again()
    else:
        full_size(int(sys.argv[1]), int(sys.argv[2]),
                  int(sys.argv[3]) if len(sys.argv) > 3 else 10_000)
