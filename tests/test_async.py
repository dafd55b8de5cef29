"""AsyncMemoryManager: the sync façade's methods, awaitable, many tasks at once.

Real SQLite file and real PostgreSQL (``db_url``), the real embedding model. The
load test runs 100 tasks at once - writes of two users interleaved with recalls
- and then checks that nothing was lost, every write is recallable by its own
user only, and that bad input raises the sync API's typed errors.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from pathlib import Path

import pytest

from memstrata import AsyncMemoryManager, ManualClock, MemoryManager, RecallHit, Settings
from memstrata.errors import (
    ClosedError,
    EmptyContentError,
    InvalidInputError,
    MemoryNotFoundError,
    MissingUserError,
    UnknownTypeError,
)
from memstrata.memory.embedder import Embedder

FACTS = [
    "My sister Ingrid lives in Reykjavik and teaches geology",
    "I am allergic to penicillin",
    "Our wedding anniversary is on the fourth of September",
    "I drive a green 2014 Volvo estate",
    "The dog is called Biscuit and is afraid of thunderstorms",
    "I prefer aisle seats on long-haul flights",
    "My dentist appointment moved to Thursday afternoons",
    "I play the cello in a community orchestra",
    "The office wifi password rotates every Monday",
    "I never eat coriander, it tastes like soap to me",
    "My landlord is Mr. Okafor on the ground floor",
    "I run the Berlin marathon every autumn",
    "The garden shed key hangs behind the kitchen door",
    "I am learning Portuguese for a move to Lisbon",
    "My blood type is O negative",
    "We keep backups of the photo library on a NAS in the attic",
    "I take my coffee black without sugar",
    "The kids' school closes early on Wednesdays",
    "My favourite novelist is Ursula Le Guin",
    "I bank with a small credit union in Leeds",
    "The boiler service is due every November",
    "I volunteer at the food bank on Saturday mornings",
    "My passport expires in March 2029",
    "I use a standing desk and a split keyboard",
    "Grandmother's recipe for plum dumplings uses quark",
]
USERS = ["alice", "bob"]


@pytest.fixture
def amemory(db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
            ) -> MemoryManager:
    return MemoryManager.open(db_url, embedder=embedder, clock=clock,
                              index_dir=tmp_path / "index")


def test_100_concurrent_recalls_and_writes(amemory: MemoryManager,
                                           caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with AsyncMemoryManager(amemory, max_threads=4) as memory:
            # a little memory to recall from while the writes go on
            for user in USERS:
                await memory.remember(user, "I live in a flat above a bakery", scope="home")
            writes = [(user, fact) for fact in FACTS for user in USERS]  # 50 writes
            calls = []
            for i, (user, fact) in enumerate(writes):
                calls.append(memory.remember(user, fact, scope="home"))
                calls.append(memory.recall(USERS[i % 2], FACTS[(i * 7) % len(FACTS)],
                                           scope="home"))  # 50 recalls in between
            assert len(calls) == 100
            results = await asyncio.gather(*calls)
            decisions = results[0::2]
            for recalled in results[1::2]:
                assert isinstance(recalled, list)
                assert all(isinstance(h, RecallHit) for h in recalled)
            assert [d.outcome for d in decisions] == ["written"] * len(writes)
            ids = {(user, fact): d.record_id for (user, fact), d in
                   zip(writes, decisions, strict=True)}
            assert len(set(ids.values())) == len(writes)

            # nothing lost: every write is a record of its user ...
            for user in USERS:
                records = await memory.memories(user, scope="home", limit=100)
                assert {r.content for r in records} == {*FACTS,
                                                         "I live in a flat above a bakery"}
                assert {r.user_id for r in records} == {user}
            # ... and recallable by that user, from many tasks at once, as the best hit
            checks = [(user, fact) for user in USERS for fact in FACTS]
            hits = await asyncio.gather(*(memory.recall(user, fact, scope="home",
                                                        record_use=False)
                                          for user, fact in checks))
            for (user, fact), found in zip(checks, hits, strict=True):
                assert found, f"{fact!r} not recalled for {user}"
                assert found[0].record.id == ids[(user, fact)]
                assert all(h.record.user_id == user for h in found)
            # users isolated: a third user sees none of it
            assert await memory.recall("carol", FACTS[0], scope="home") == []
            assert await memory.memories("carol") == []

    with caplog.at_level(logging.WARNING, logger="memstrata"):
        asyncio.run(scenario())
    assert amemory.state.value == "closed"  # the async manager closed the one it wrapped
    # every recall recorded its use (concurrent touches of one user's rows once
    # deadlocked on PostgreSQL, and the use went unrecorded with a warning)
    assert [r.getMessage() for r in caplog.records] == []


def test_bad_input_raises_the_sync_errors_and_changes_nothing(amemory: MemoryManager
                                                              ) -> None:
    async def scenario() -> None:
        async with AsyncMemoryManager(amemory) as memory:
            await memory.remember("alice", "I am allergic to penicillin", scope="home")
            before = await memory.stats("alice")
            cases = [
                (memory.remember("", "text"), MissingUserError),
                (memory.remember("alice", "   "), EmptyContentError),
                (memory.remember("alice", "text", type="no-such-type"), UnknownTypeError),
                (memory.recall("alice", "x", k=0), InvalidInputError),
                (memory.get("alice", "0" * 32), MemoryNotFoundError),
                (memory.forget("alice", "0" * 32), MemoryNotFoundError),
                (memory.remember_many("alice", ["fine text", ""]), EmptyContentError),
                (memory.remember_many("alice", "a string, not a batch"), InvalidInputError),
            ]
            for call, error in cases:
                with pytest.raises(error):
                    await call
            assert await memory.stats("alice") == before
            # the same types as the sync API, for the same input
            with pytest.raises(MissingUserError):
                memory.manager.remember("", "text")
            with pytest.raises(InvalidInputError):
                memory.manager.remember_many("alice", "a string, not a batch")
            # a generator is a batch like a list
            made = await memory.remember_many("alice", (f for f in FACTS[:3]))
            assert [d.outcome for d in made] == ["written"] * 3

    asyncio.run(scenario())


def test_closed_manager_refuses_and_aclose_waits_for_calls_in_flight(
        amemory: MemoryManager) -> None:
    async def scenario() -> None:
        memory = AsyncMemoryManager(amemory, max_threads=2)
        await memory.remember("alice", "I play the cello in a community orchestra")
        running = [asyncio.ensure_future(memory.recall("alice", "which instrument?"))
                   for _ in range(20)]
        await asyncio.sleep(0)  # submitted to the pool before the close starts
        await memory.aclose()
        for task in running:  # every call already queued finished, none failed
            assert task.done()
            assert task.result()[0].record.content.startswith("I play the cello")
        assert amemory.state.value == "closed"
        with pytest.raises(ClosedError):
            await memory.recall("alice", "which instrument?")
        with pytest.raises(ClosedError):
            memory.working("alice", "s1")
        await memory.aclose()  # idempotent

    asyncio.run(scenario())


def test_a_cancelled_call_that_was_still_queued_never_runs(amemory: MemoryManager) -> None:
    async def scenario() -> None:
        async with AsyncMemoryManager(amemory, max_threads=1) as memory:
            busy = asyncio.ensure_future(memory.remember_many(
                "alice", [f"{fact} (note {i})" for i in range(8) for fact in FACTS]))
            await asyncio.sleep(0)  # the batch holds the only thread
            queued = asyncio.ensure_future(memory.remember("alice", "My locker code is 4711"))
            await asyncio.sleep(0)
            queued.cancel()
            with pytest.raises(asyncio.CancelledError):
                await queued
            assert not busy.done()  # it really was queued behind the batch
            await busy
            assert all("4711" not in r.content
                       for r in await memory.memories("alice", limit=1000))

    asyncio.run(scenario())


def test_open_awaited_or_as_context_manager(sqlite_url: str, embedder: Embedder,
                                            tmp_path: Path) -> None:
    async def scenario() -> None:
        settings = Settings.build(index_dir=tmp_path / "index")
        async with AsyncMemoryManager.open(sqlite_url, settings=settings,
                                           embedder=embedder) as memory:
            decision = await memory.remember("alice", "I take my coffee black")
            assert decision.outcome == "written"
            assert str(memory.manager.index_dir) == str(tmp_path / "index")
        memory2 = await AsyncMemoryManager.open(sqlite_url, embedder=embedder)
        try:
            hits = await memory2.recall("alice", "how do I take coffee?")
            assert hits[0].record.id == decision.record_id
            obs = await memory2.observe("alice", "s1", "user", "I prefer aisle seats")
            assert obs.turn_id
            memory2.working("alice", "s1").set("budget", "2000 euros")
            promoted = await memory2.promote("alice", "s1", "budget")
            assert promoted.outcome in ("written", "dropped_not_memorable")
        finally:
            await memory2.aclose()
        with pytest.raises(InvalidInputError):
            AsyncMemoryManager(memory2.manager, max_threads=0)

    asyncio.run(scenario())


def test_the_callers_context_reaches_the_worker_thread(amemory: MemoryManager) -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")
    seen: list[str] = []

    class Reranker:  # a real reranker: it runs inside recall, in the pool's thread
        def rerank(self, query: str, hits: list[RecallHit]) -> list[RecallHit]:
            seen.append(request_id.get("<unset>"))
            return hits

    async def one(memory: AsyncMemoryManager, rid: str) -> None:
        request_id.set(rid)
        await memory.recall("alice", "which instrument?", reranker=Reranker())

    async def scenario() -> None:
        async with AsyncMemoryManager(amemory, max_threads=2) as memory:
            await memory.remember("alice", "I play the cello in a community orchestra")
            await asyncio.gather(*(one(memory, f"r{i}") for i in range(6)))

    asyncio.run(scenario())
    assert sorted(seen) == [f"r{i}" for i in range(6)]


def test_async_methods_mirror_the_sync_signatures() -> None:
    mirrored = ["remember", "remember_many", "recall", "get", "history", "lookup",
                "memories", "conflicts", "pin", "resolve_conflict", "forget", "observe",
                "briefing", "forget_user", "users", "reindex", "stats"]
    for name in mirrored:
        sync = inspect.signature(getattr(MemoryManager, name))
        twin = getattr(AsyncMemoryManager, name)
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin).parameters == sync.parameters, name
    public_sync = {n for n, v in vars(MemoryManager).items()
                   if not n.startswith("_") and inspect.isfunction(v)}
    # not mirrored: open (AsyncMemoryManager.open), close (aclose), changes (jobs use
    # the sync manager: AsyncMemoryManager.manager), working (no I/O: kept sync)
    assert public_sync - set(mirrored) <= {"open", "close", "changes", "working"}
