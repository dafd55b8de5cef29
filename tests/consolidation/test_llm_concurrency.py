"""Concurrent model calls inside a worker, client-side rate limits, Retry-After, retriable
errors only, and the run's token budget shared by workers in different processes.

Everything goes over real HTTP to the loopback OpenAI-format server, which counts the
requests it answers at once and logs when each arrived and what usage it reported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from memstrata import ManualClock, MemoryManager
from memstrata.clock import SystemClock
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.consolidation._budget import budgets
from memstrata.consolidation._llm import Ask, LLMGate
from memstrata.errors import LLMRateLimitError
from memstrata.llm import OpenAIClient, RateLimit, RecordingModel, Retry, llm_calls
from memstrata.memory import Database
from memstrata.testing import OpenAICompatServer, Reply, approx_tokens

CHILD = Path(__file__).with_name("_budget_child.py")
FAST = Retry(max_attempts=3, base_delay=0.01, max_delay=0.05)


def summarizer(request: dict[str, Any]) -> Reply:
    """A deterministic model: the summary names the first words the user said; usage
    as a tokenizer would count it."""
    transcript = request["messages"][-1]["content"]
    if "poison" in transcript:
        return Reply.error(400, "this request is malformed")
    first = transcript.split("\n")[0].split(":", 1)[-1].strip()
    summary = json.dumps({"summary": f"Talked about: {first[:60]}", "facts": []})
    return Reply.text(summary, prompt_tokens=approx_tokens(request), completion_tokens=20)


#: calls per user of ``populate``: the session's summary, and the reading of its unread turn
#: by the LLM reader (the summarizer's answer to it reads as no readings)
CALLS = 2


def expected_calls(mm: MemoryManager, users: list[str]) -> int:
    """The calls a summarize run makes for ``populate``'s users: a summary each, and one
    reading by the LLM reader of each user turn ``observe`` read no fact from
    (``fast_extracted`` 0: what the night asks the model to read). ``populate``'s turns
    are meant to be such turns, CALLS a user (the premise's own test below); counting
    them here keeps the tests of concurrency about concurrency whatever the shipped
    reader makes of one of them."""
    return sum(1 + sum(1 for t in mm.episodic.turns(user, "s1")
                       if t.role == "user" and not t.metadata.get("fast_extracted"))
               for user in users)


def settings(server: OpenAICompatServer, *, batch_users: int = 50, **llm: Any
             ) -> ConsolidationSettings:
    return ConsolidationSettings.build(
        batch_users=batch_users, schedule={"timezone": "UTC"},
        llm={"model": "scripted", "base_url": server.base_url, "api_key": "k", "retries": 2,
             **llm})


def populate(mm: MemoryManager, users: int, *, prefix: str = "u") -> list[str]:
    names = [f"{prefix}{n:03d}" for n in range(users)]
    for n, user in enumerate(names):
        mm.observe(user, "s1", "user", f"Trip number {n}: I need a train to city {n}.",
                   scope="travel")
        mm.observe(user, "s1", "assistant", "Sure, which day?", scope="travel")
    return names


def window_max(events: Sequence[Any], seconds: float, weight: Any = None) -> float:
    """The most requests (or ``weight`` summed) that arrived within any ``seconds``."""
    times = sorted((e.arrived, 1.0 if weight is None else weight(e)) for e in events)
    best = 0.0
    for i, (start, _) in enumerate(times):
        best = max(best, sum(w for t, w in times[i:] if t < start + seconds))
    return best


@pytest.fixture
def server() -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer(on_chat=summarizer, delay=0.1) as srv:
        yield srv


def content(mm: MemoryManager, users: list[str]) -> list[tuple[Any, ...]]:
    """What summarize left per user, without ids and clocks of the write."""
    out = []
    for user in users:
        for r in mm.memories(user, types=["summary"]):
            out.append((user, r.content, r.type.value, r.status.value, r.scope, r.session_id,
                        json.dumps(r.metadata, sort_keys=True), r.confidence))
    return sorted(out)


# ------------------------------------------------------------ concurrency in a run


def test_populate_leaves_every_turn_to_the_llm_reader(manager: MemoryManager) -> None:
    """The premise of the tests below: ``observe`` reads no fact in any of populate's
    turns, so the night asks the LLM reader about each (CALLS a user)."""
    users = populate(manager, 30)
    assert expected_calls(manager, users) == 30 * CALLS


def test_a_run_keeps_its_calls_within_the_concurrency_bound(
        manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    users = populate(manager, 24)
    calls_expected = expected_calls(manager, users)
    clock.advance(hours=1)
    report = Consolidator(manager, settings=settings(server, batch_users=12, concurrency=4)
                          ).run("summarize")
    assert report.status == "finished" and report.method == "llm"
    assert report.llm_calls == calls_expected and report.counts["summarize_session"] == 24
    assert 2 <= server.max_in_flight <= 4  # concurrent, and never past the bound
    with manager.db.read() as conn:  # the call log: one row per call
        assert conn.execute(select(func.count()).select_from(llm_calls)).scalar() \
            == calls_expected
        spent, calls = conn.execute(select(budgets.c.spent, budgets.c.calls)).one()
    assert calls == calls_expected and spent == report.prompt_tokens + report.completion_tokens
    assert sorted(u for u in users if manager.memories(u, types=["summary"])) == users


def test_concurrent_results_are_those_of_the_sequential_run(
        tmp_path: Path, embedder: Any, server: OpenAICompatServer):
    results = []
    for concurrency in (1, 8):
        clock = ManualClock()
        with MemoryManager.open(f"sqlite:///{tmp_path / f'c{concurrency}.db'}",
                                embedder=embedder, clock=clock) as mm:
            users = populate(mm, 20)
            calls_expected = expected_calls(mm, users)
            clock.advance(hours=1)
            report = Consolidator(mm, settings=settings(server, batch_users=10,
                                                        concurrency=concurrency)
                                  ).run("summarize")
            actions = Consolidator(mm).actions(str(report.run_id))
            results.append((report.counts, report.llm_calls, report.prompt_tokens,
                            content(mm, users),
                            sorted((a.user_id, a.action, a.reason) for a in actions)))
    assert results[0] == results[1]
    assert results[0][1] == calls_expected


def test_retriable_errors_are_retried_and_a_400_is_not(
        sqlite_manager: MemoryManager, clock: ManualClock):
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def flaky(request: dict[str, Any]) -> Reply:
        transcript = request["messages"][-1]["content"]
        if request.get("tools"):  # the reader's: answered as no readings, not counted
            return Reply.text('{"items": []}')
        key = "flaky" if "flaky" in transcript else "poison" if "poison" in transcript \
            else "other"
        with lock:
            seen[key] = seen.get(key, 0) + 1
            first = seen[key] == 1
        if key == "flaky" and first:
            return Reply.error(503, "overloaded")
        return summarizer(request)

    for user, text in (("a1", "I plan a flaky trip."), ("a2", "Send the poison pill."),
                       ("a3", "Hotels in Oslo."), ("a4", "Trains to Bergen.")):
        sqlite_manager.observe(user, "s1", "user", text, scope="travel")
    clock.advance(hours=1)
    with OpenAICompatServer(on_chat=flaky) as srv:
        report = Consolidator(sqlite_manager, settings=settings(srv, concurrency=4)
                              ).run("summarize")
        reads = len([r for r in srv.chat_requests() if r.get("tools")])
    assert seen == {"flaky": 2, "poison": 1, "other": 2}  # 503 retried once; 400 never
    assert report.method == "llm+offline" and report.llm_calls == 3 + reads
    assert any("rejected the request" in e for e in report.errors)
    with sqlite_manager.db.read() as conn:
        rows = conn.execute(select(llm_calls.c.user_id, llm_calls.c.attempts,
                                   llm_calls.c.error)
                            .where(llm_calls.c.purpose == "summarize")).all()
    by_user = {r.user_id: r for r in rows}
    assert len(rows) == 4  # one row per call, however many attempts
    assert by_user["a1"].attempts == 2 and by_user["a1"].error is None
    assert by_user["a2"].error is not None and "400" in by_user["a2"].error


# ------------------------------------------------------------ Retry-After and rate limits


def test_retry_after_is_waited_in_full_and_pauses_every_caller():
    with OpenAICompatServer(on_chat=lambda r: Reply.text("ok")) as srv:
        srv.push(Reply.error(429, "slow down", retry_after=1.0))
        client = OpenAIClient(model="m", base_url=srv.base_url, retry=FAST)
        hi = [{"role": "user", "content": "hi"}]
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(client.chat, hi)
            while client.limiter.paused_for() == 0 and not first.done():
                time.sleep(0.01)
            second = pool.submit(client.chat, hi)  # starts while the client is paused
            assert first.result().attempts == 2 and second.result().attempts == 1
        refused, *later = sorted(srv.chat_log, key=lambda e: e.arrived)
        assert refused.status == 429 and [e.status for e in later] == [200, 200]
        # nothing was sent before the server's Retry-After had passed (it was sent at
        # ``answered``; the client cannot have read it earlier)
        assert all(e.arrived >= refused.answered + 1.0 for e in later)


def test_a_retry_after_beyond_the_cap_is_not_retried():
    with OpenAICompatServer() as srv:
        srv.push(Reply.error(429, "come back tomorrow", retry_after=3600), Reply.text("no"))
        client = OpenAIClient(model="m", base_url=srv.base_url,
                              retry=Retry(max_attempts=3, base_delay=0.01, max_delay=0.05,
                                          max_retry_after=30))
        with pytest.raises(LLMRateLimitError, match="retry after 3600 s"):
            client.chat([{"role": "user", "content": "hi"}])
        assert len(srv.chat_log) == 1


@dataclass
class _Sent:
    """A request as the limiter let it go (its time on the limiter's clock)."""

    arrived: float
    n: int


def _record_grants(client: OpenAIClient, sent: list[_Sent], local: threading.local) -> None:
    client.limiter.on_grant = lambda now: sent.append(_Sent(now, local.n))


def test_requests_per_minute_hold():
    # the limits are checked as the limiter kept them (the time of each grant, under its
    # lock): times of arrival at the server also carry the wire's and the scheduler's
    # delays, which on a loaded machine bunch a burst with what follows it
    rpm = 600  # 10 a second; the bucket holds one second's worth
    sent: list[_Sent] = []
    local = threading.local()
    with OpenAICompatServer(on_chat=lambda r: Reply.text("ok")) as srv:
        client = OpenAIClient(model="m", base_url=srv.base_url, retry=FAST,
                              rate_limit=RateLimit(requests_per_minute=rpm))
        _record_grants(client, sent, local)

        def call(n: int) -> None:
            local.n = n
            client.chat([{"role": "user", "content": "hi"}])

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(call, range(35)))
        assert len(srv.chat_log) == len(sent) == 35
        for seconds in (0.5, 1.0, 2.0):  # burst + rate x window
            assert window_max(sent, seconds) <= 10 + 10 * seconds + 1e-6


def test_tokens_per_minute_hold():
    tpm = 120_000  # 2,000 a second
    prompt = "Which train should I take to Bergen tomorrow morning? " * 14

    def answer(request: dict[str, Any]) -> Reply:
        return Reply.text("ok", prompt_tokens=approx_tokens(request), completion_tokens=5)

    sent: list[_Sent] = []
    local = threading.local()
    cost: dict[int, int] = {}
    with OpenAICompatServer(on_chat=answer) as srv:
        client = OpenAIClient(model="m", base_url=srv.base_url, retry=FAST,
                              rate_limit=RateLimit(tokens_per_minute=tpm))
        _record_grants(client, sent, local)

        def call(n: int) -> None:
            local.n = n
            reply = client.chat([{"role": "user", "content": f"{n} {prompt}"}], max_tokens=20)
            cost[n] = reply.usage.prompt_tokens + reply.usage.completion_tokens

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(call, range(50)))
        used = sum(e.prompt_tokens + e.completion_tokens for e in srv.chat_log)
        assert len(srv.chat_log) == len(sent) == 50 and used > 4 * 2000  # unlimited: ~0.1 s
        assert sum(cost.values()) == used
        for seconds in (0.5, 1.0, 2.0):  # what was really spent, by when it was let go
            assert window_max(sent, seconds, lambda s: cost[s.n]) <= 2000 + 2000 * seconds + 1e-6


# ------------------------------------------------------------ the budget across processes


def test_the_token_budget_holds_across_worker_processes(db_url: str):
    budget, run_id = 12_000, "run-shared-budget"
    setup = Database(db_url)
    setup.migrate()
    setup.dispose()
    with OpenAICompatServer(on_chat=summarizer, delay=0.1) as srv:
        children = [subprocess.Popen(
            [sys.executable, str(CHILD), db_url, srv.base_url, run_id, str(budget), "50", "8",
             tag], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for tag in ("w1", "w2")]
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        outs = [json.loads(c.communicate(timeout=300)[0]) for c in children]
    assert [c.returncode for c in children] == [0, 0]
    answered = [e for e in srv.chat_log if e.status == 200]
    spent_at_server = sum(e.prompt_tokens + e.completion_tokens for e in answered)
    db = Database(db_url)
    with db.read() as conn:
        row = conn.execute(select(budgets).where(budgets.c.run_id == run_id)).one()
        logged = conn.execute(select(func.count()).select_from(llm_calls)).scalar()
    db.dispose()
    # alone, each worker would have spent ~50 x 300 tokens: the budget had to bind
    assert all(o["disabled"] and "token budget of 12000 reached" in o["disabled"]
               for o in outs)
    assert all(o["calls"] > 0 for o in outs), outs  # both drew on it
    assert spent_at_server == row.spent == sum(o["tokens"] for o in outs)
    assert row.spent <= budget and row.reserved == 0
    assert row.calls == len(answered) == logged == sum(o["calls"] for o in outs)


def test_worker_processes_of_one_run_share_its_budget(
        manager: MemoryManager, clock: ManualClock, db_url: str):
    """Two real workers (``Worker`` in two processes) on one queued run: together
    they stay within the run's budget, and every user is summarised exactly once."""
    users = populate(manager, 32)
    clock.advance(hours=1)
    budget = 5000
    with OpenAICompatServer(on_chat=summarizer, delay=0.05) as srv:
        queued = Consolidator(manager, settings=settings(srv, batch_users=4, token_budget=budget)
                              ).create_run("summarize", partitions=4)
        children = [subprocess.Popen(
            [sys.executable, str(CHILD), "--worker", db_url, srv.base_url, str(budget), "4",
             clock.now().isoformat()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        outs = [json.loads(c.communicate(timeout=300)[0]) for c in children]
    assert [c.returncode for c in children] == [0, 0]
    assert sum(o["partitions"] for o in outs) == 4
    report = Consolidator(manager).get_run(str(queued.run_id))
    assert report.status == "finished" and report.method == "llm+offline"
    with manager.db.read() as conn:
        row = conn.execute(select(budgets).where(budgets.c.run_id == queued.run_id)).one()
    answered = [e for e in srv.chat_log if e.status == 200]
    assert row.spent == sum(e.prompt_tokens + e.completion_tokens for e in answered)
    assert 0 < row.spent <= budget and row.reserved == 0 and row.calls == len(answered)
    assert sorted(len(manager.memories(u, types=["summary"])) for u in users) == [1] * 32
    assert report.counts["summarize_session"] == 32


def test_a_run_past_its_budget_goes_offline_without_exceeding_it(
        sqlite_manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    users = populate(sqlite_manager, 30)
    clock.advance(hours=1)
    report = Consolidator(sqlite_manager, settings=settings(
        server, concurrency=8, token_budget=4000, max_tokens=60)).run("summarize")
    assert report.method == "llm+offline" and 0 < report.llm_calls < 30
    assert report.prompt_tokens + report.completion_tokens <= 4000
    assert any("token budget of 4000 reached" in e for e in report.errors)
    # every user summarised once, by one method or the other; nothing applied twice
    assert report.counts["summarize_session"] == 30
    assert sorted(len(sqlite_manager.memories(u, types=["summary"])) for u in users) == \
        [1] * 30


def test_blocks_planned_at_once_each_count_their_own_calls_and_errors(tmp_path: Path):
    """Two batches planned at once on one gate (a worker plans two ahead): each block's
    tally has its own calls, tokens and errors; the gate's counters add up both."""
    from concurrent.futures import ThreadPoolExecutor

    def answer(request: dict[str, Any]) -> Reply:
        if "broken" in request["messages"][-1]["content"]:
            return Reply.text("not json at all", prompt_tokens=7, completion_tokens=3)
        return summarizer(request)

    db = Database(f"sqlite:///{tmp_path / 'log.db'}")
    db.migrate()
    with OpenAICompatServer(on_chat=answer, delay=0.02) as srv:
        client = OpenAIClient(model="m", base_url=srv.base_url, retry=FAST)
        gate = LLMGate(RecordingModel(client, db=db, clock=SystemClock()), 10**6, 50,
                       concurrency=4)

        def block(n: int, broken: int) -> Any:
            with gate.tally() as tally:
                gate.ask_json_many([Ask("s", f"user: trip {k}" + (" broken" if k < broken
                                                                  else ""), f"u{n}",
                                        "summarize") for k in range(6 + n)])
            return tally

        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(block, (0, 1), (1, 3))
    db.dispose()
    assert (first.calls, second.calls) == (6, 7)
    assert (len(first.errors), len(second.errors)) == (1, 3) and gate.errors == []
    assert gate.calls == first.calls + second.calls
    assert gate.prompt_tokens == first.prompt_tokens + second.prompt_tokens
    assert gate.completion_tokens == first.completion_tokens + second.completion_tokens
    assert sum(e.prompt_tokens for e in srv.chat_log) == gate.prompt_tokens


def test_a_gate_without_a_database_budget_keeps_the_same_rule(tmp_path: Path):
    db = Database(f"sqlite:///{tmp_path / 'log.db'}")
    db.migrate()
    with OpenAICompatServer(on_chat=summarizer, delay=0.05) as srv:
        client = OpenAIClient(model="m", base_url=srv.base_url, retry=FAST)
        gate = LLMGate(RecordingModel(client, db=db, clock=SystemClock()), 3000, 50,
                       concurrency=6)
        answers = gate.ask_json_many([Ask("s", f"user: trip {n} " * 40, "u", "summarize")
                                      for n in range(20)])
    db.dispose()
    assert gate.used <= 3000 and 0 < gate.calls < 20
    assert sum(a is not None for a in answers) == gate.calls
    assert gate.disabled is not None and "token budget of 3000" in gate.disabled
    assert srv.max_in_flight <= 6


# ------------------------------------------------------------ planning ahead in a worker


def test_a_worker_plans_the_next_batches_while_it_applies_one(
        manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    """On PostgreSQL the model's latency hides the writes: while a batch's transaction
    is open, the next two batches' calls are already at the server (SQLite, one writer
    at a time, plans after the commit). Either way the result is that of a run in one
    process: one summary and two calls per user, every call booked once and counted
    in its own batch (two batches planned at once each count their own)."""
    from memstrata.consolidation import RunHooks, Worker

    users = populate(manager, 30)
    calls_expected = expected_calls(manager, users)
    clock.advance(hours=1)
    seen_while_applying: list[int] = []
    ahead = manager.db.dialect == "postgresql"

    def before_commit(run_id: str, batch: int) -> None:
        if batch == 1 and ahead:  # wait (bounded) for the second and third batches' calls
            deadline = time.monotonic() + 20
            while len(server.requests) < calls_expected and time.monotonic() < deadline:
                time.sleep(0.01)
        seen_while_applying.append(len(server.requests))

    jobs = Consolidator(manager, settings=settings(server, batch_users=10, concurrency=4,
                                                   token_budget=10_000_000,
                                                   ).model_copy(update={"partitions": 1}),
                        hooks=RunHooks(before_commit=before_commit))
    run_id = str(jobs.create_run("summarize").run_id)
    assert Worker(jobs).run_until_idle().partitions == 1
    report = jobs.get_run(run_id)
    assert report.status == "finished" and report.method == "llm" and report.batches == 3
    # batches 2 and 3 asked while batch 1 was being applied (PostgreSQL), or only after it
    assert (seen_while_applying[0] == calls_expected) is ahead
    assert (seen_while_applying[0] <= 10 * CALLS) is not ahead
    assert report.llm_calls == calls_expected and report.counts["summarize_session"] == 30
    assert sorted(u for u in users if len(manager.memories(u, types=["summary"])) == 1) == users
    with manager.db.read() as conn:
        assert conn.execute(select(func.count()).select_from(llm_calls)).scalar() \
            == calls_expected
        spent, calls = conn.execute(select(budgets.c.spent, budgets.c.calls)).one()
    assert calls == calls_expected and spent == report.prompt_tokens + report.completion_tokens
