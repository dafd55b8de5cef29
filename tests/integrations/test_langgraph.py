"""MemstrataStore: LangGraph's BaseStore on memstrata.

A real LangGraph graph (``StateGraph`` compiled with the store and an in-memory
checkpointer) remembers across threads: a node in thread 1 writes through the
store, the same node in thread 2 - a fresh conversation, nothing in its
checkpoint - recalls it; another user's thread sees nothing. Then the store's
contract, sync and async, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    PutOp,
    SearchItem,
    SearchOp,
)

from memstrata import AsyncMemoryManager, ManualClock, MemoryManager
from memstrata.errors import InvalidInputError
from memstrata.integrations.langgraph import MemstrataStore, NamespaceError
from memstrata.memory.embedder import Embedder

NS = ("alice", "memories")


@pytest.fixture
def memory(db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
           ) -> Iterator[MemoryManager]:
    mm = MemoryManager.open(db_url, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index")
    yield mm
    mm.close()


@pytest.fixture
def store(memory: MemoryManager) -> MemstrataStore:
    return MemstrataStore(memory)


# ---------------------------------------------------------------- a real graph

class State(TypedDict, total=False):
    text: str
    answer: str


@dataclass
class Context:
    user_id: str


def respond(state: State, runtime: Runtime[Context]) -> State:
    """Remember what follows "remember:", answer anything else from the store."""
    assert runtime.store is not None
    namespace = (runtime.context.user_id, "memories")
    text = state["text"]
    if text.startswith("remember:"):
        fact = text.removeprefix("remember:").strip()
        runtime.store.put(namespace, f"fact-{len(fact)}", {"fact": fact})
        return {"answer": "noted"}
    hits = runtime.store.search(namespace, query=text, limit=3)
    return {"answer": hits[0].value["fact"] if hits else "I don't know"}


async def arespond(state: State, runtime: Runtime[Context]) -> State:
    assert runtime.store is not None
    namespace = (runtime.context.user_id, "memories")
    text = state["text"]
    if text.startswith("remember:"):
        fact = text.removeprefix("remember:").strip()
        await runtime.store.aput(namespace, f"fact-{len(fact)}", {"fact": fact})
        return {"answer": "noted"}
    hits = await runtime.store.asearch(namespace, query=text, limit=3)
    return {"answer": hits[0].value["fact"] if hits else "I don't know"}


def graph(store: MemstrataStore, node: object) -> object:
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("respond", node)  # type: ignore[call-overload]
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile(store=store, checkpointer=InMemorySaver())


def test_a_graph_remembers_across_threads(store: MemstrataStore, memory: MemoryManager
                                          ) -> None:
    app = graph(store, respond)
    alice = Context(user_id="alice")
    told = app.invoke({"text": "remember: I am allergic to penicillin"},  # type: ignore[attr-defined]
                      {"configurable": {"thread_id": "t1"}}, context=alice)
    assert told["answer"] == "noted"
    asked = app.invoke({"text": "Which medicine am I allergic to?"},  # type: ignore[attr-defined]
                       {"configurable": {"thread_id": "t2"}}, context=alice)
    assert asked["answer"] == "I am allergic to penicillin"
    # thread 2 knew it from memory, not from its own checkpoint
    state = app.get_state({"configurable": {"thread_id": "t2"}})  # type: ignore[attr-defined]
    assert "remember" not in state.values["text"]
    # stored as a memstrata record of alice, found by memstrata's own recall too
    hits = memory.recall("alice", "penicillin allergy")
    assert hits and hits[0].record.content == "fact: I am allergic to penicillin"
    # another user's thread sees nothing of it
    other = app.invoke({"text": "Which medicine am I allergic to?"},  # type: ignore[attr-defined]
                       {"configurable": {"thread_id": "t3"}}, context=Context(user_id="bob"))
    assert other["answer"] == "I don't know"


def test_an_async_graph_remembers_across_threads(memory: MemoryManager) -> None:
    async def scenario() -> None:
        async with AsyncMemoryManager(memory, close_manager=False) as amemory:
            app = graph(MemstrataStore(amemory), arespond)
            alice = Context(user_id="alice")
            await app.ainvoke({"text": "remember: My sister Ingrid lives in Reykjavik"},  # type: ignore[attr-defined]
                              {"configurable": {"thread_id": "t1"}}, context=alice)
            asked = await app.ainvoke({"text": "Where does Ingrid live?"},  # type: ignore[attr-defined]
                                      {"configurable": {"thread_id": "t2"}}, context=alice)
            assert asked["answer"] == "My sister Ingrid lives in Reykjavik"
            other = await app.ainvoke({"text": "Where does Ingrid live?"},  # type: ignore[attr-defined]
                                      {"configurable": {"thread_id": "t3"}},
                                      context=Context(user_id="bob"))
            assert other["answer"] == "I don't know"

    asyncio.run(scenario())


# ---------------------------------------------------------------- the contract

VALUE = {"fact": "I drive a green 2014 Volvo estate", "year": 2014, "electric": False,
         "tags": ["car", "volvo"], "nested": {"colour": "grün", "doors": 5}, "none": None}


def test_put_get_round_trips_the_dict(store: MemstrataStore) -> None:
    assert store.get(NS, "car") is None
    store.put(NS, "car", VALUE)
    item = store.get(NS, "car")
    assert isinstance(item, Item) and not isinstance(item, SearchItem)
    assert item.value == VALUE and item.key == "car" and item.namespace == NS
    assert item.created_at.tzinfo is not None and item.updated_at >= item.created_at
    # keys are case-sensitive and namespaces distinct, down to the path
    assert store.get(NS, "Car") is None
    assert store.get((*NS, "sub"), "car") is None
    store.put(NS, "Car", {"fact": "another"})
    store.put((*NS, "sub"), "car", {"fact": "deeper"})
    assert store.get(NS, "car").value == VALUE  # type: ignore[union-attr]
    assert store.get(NS, "Car").value == {"fact": "another"}  # type: ignore[union-attr]
    assert store.get((*NS, "sub"), "car").value == {"fact": "deeper"}  # type: ignore[union-attr]


def test_put_again_updates_and_keeps_history(store: MemstrataStore, memory: MemoryManager,
                                             clock: ManualClock) -> None:
    from datetime import timedelta

    store.put(NS, "city", {"fact": "I live in Munich"})
    first = store.get(NS, "city")
    store.put(NS, "city", {"fact": "I live in Munich"})  # same value: no new version
    clock.advance(timedelta(days=2))
    store.put(NS, "city", {"fact": "I moved to Lisbon"})
    item = store.get(NS, "city")
    assert item is not None and first is not None
    assert item.value == {"fact": "I moved to Lisbon"}
    assert item.created_at == first.created_at and item.updated_at > first.updated_at
    current = memory.memories("alice", scope="memories")
    assert [r.content for r in current] == ["fact: I moved to Lisbon"]
    versions = memory.history("alice", current[0].id)
    assert [v.content for v in versions] == ["fact: I live in Munich", "fact: I moved to Lisbon"]
    assert versions[0].status.value == "superseded"


def test_delete_forgets_every_version(store: MemstrataStore, memory: MemoryManager) -> None:
    store.put(NS, "pw", {"fact": "The office wifi password is hunter2"})
    store.put(NS, "pw", {"fact": "The office wifi password is swordfish"})
    store.put(NS, "keep", {"fact": "I play the cello"})
    store.delete(NS, "pw")
    assert store.get(NS, "pw") is None
    assert store.search(NS, query="office wifi password") == []
    every = memory.memories("alice", statuses=["active", "demoted", "pending_confirmation",
                                               "superseded", "deleted"], limit=1000)
    assert [r.content for r in every] == ["fact: I play the cello"]
    store.delete(NS, "pw")  # deleting what is gone is a no-op
    store.put(NS, "keep", None)  # a None value deletes too
    assert store.get(NS, "keep") is None


def test_search_ranks_filters_and_pages(store: MemstrataStore) -> None:
    facts = {
        "allergy": {"fact": "I am allergic to penicillin", "kind": "health", "n": 1},
        "cello": {"fact": "I play the cello in a community orchestra", "kind": "hobby", "n": 2},
        "marathon": {"fact": "I run the Berlin marathon every autumn", "kind": "hobby", "n": 3},
        "blood": {"fact": "My blood type is O negative", "kind": "health", "n": 4},
    }
    for key, value in facts.items():
        store.put(NS, key, value)
    store.put((*NS, "private"), "diary", {"fact": "I keep a diary about running"})
    store.put(NS, "hidden", {"fact": "I run every morning before work"}, index=False)
    store.put(NS, "picked", {"fact": "a note", "body": "the orchestra rehearses on Tuesdays"},
              index=["body"])

    hits = store.search(NS, query="what instrument do I play?")
    assert hits and hits[0].key == "cello"
    assert all(isinstance(h, SearchItem) and isinstance(h.score, float) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    running = store.search(NS, query="running a marathon")
    assert running[0].key == "marathon"
    assert "hidden" not in {h.key for h in running}  # index=False: not found by a query
    assert store.search(NS, query="orchestra rehearsal day")[0].key in ("picked", "cello")
    assert "picked" in {h.key for h in store.search(NS, query="when are rehearsals?")}
    # the namespace prefix selects; a deeper prefix only the deeper items
    assert {h.key for h in store.search((*NS, "private"), query="diary running")} == {"diary"}
    # no query: every item under the prefix, newest first, filters and pages
    listed = store.search(NS, limit=100)
    assert {h.key for h in listed} == {*facts, "diary", "hidden", "picked"}
    assert all(h.score is None for h in listed)
    health = store.search(NS, filter={"kind": "health"})
    assert {h.key for h in health} == {"allergy", "blood"}
    assert {h.key for h in store.search(NS, filter={"n": {"$gte": 2, "$lt": 4}})} \
        == {"cello", "marathon"}
    assert {h.key for h in store.search(NS, filter={"kind": {"$ne": "health"}, "n": 3})} \
        == {"marathon"}
    page1 = store.search(NS, limit=3)
    page2 = store.search(NS, limit=3, offset=3)
    assert len(page1) == 3 and not {h.key for h in page1} & {h.key for h in page2}
    # every scope of the user with a one-label prefix
    store.put(("alice", "travel"), "seat", {"fact": "I prefer aisle seats"})
    assert "seat" in {h.key for h in store.search(("alice",), limit=100)}


def test_list_namespaces(store: MemstrataStore) -> None:
    for ns in [("alice", "memories"), ("alice", "memories", "work"),
               ("alice", "travel", "2026", "spring"), ("bob", "memories")]:
        store.put(ns, "k", {"fact": f"something about {ns[-1]}"})
    everything = store.list_namespaces()
    assert everything == [("alice", "memories"), ("alice", "memories", "work"),
                          ("alice", "travel", "2026", "spring"), ("bob", "memories")]
    assert store.list_namespaces(prefix=("alice",)) == everything[:3]
    assert store.list_namespaces(prefix=("alice", "*", "work")) == [("alice", "memories", "work")]
    assert store.list_namespaces(suffix=("memories",)) == [("alice", "memories"),
                                                           ("bob", "memories")]
    assert store.list_namespaces(prefix=("alice",), max_depth=2) == [("alice", "memories"),
                                                                      ("alice", "travel")]
    assert store.list_namespaces(limit=2, offset=1) == everything[1:3]


def test_labels_that_differ_only_in_unicode_normalisation_are_one(
        store: MemstrataStore) -> None:
    # issue 34: a put under the NFD form of a user label, after one under its NFC form,
    # overwrote the item (one user, one slot) and the NFC get then found nothing
    nfc, nfd = ("jos\u00e9", "memories", "caf\u00e9"), ("jose\u0301", "memories", "cafe\u0301")
    store.put(nfc, "order", {"fact": "a flat white"})
    store.put(nfd, "order", {"fact": "an oat latte"})
    for namespace in (nfc, nfd):
        item = store.get(namespace, "order")
        assert item is not None and item.value == {"fact": "an oat latte"}
        assert tuple(item.namespace) == nfc
    assert [i.value for i in store.search(("jose\u0301",))] == [{"fact": "an oat latte"}]
    assert store.list_namespaces(prefix=("jose\u0301",)) == [nfc]
    assert store.list_namespaces(suffix=("cafe\u0301",)) == [nfc]


def test_users_are_isolated(store: MemstrataStore) -> None:
    store.put(NS, "secret", {"fact": "My blood type is O negative"})
    bob = ("bob", "memories")
    assert store.get(bob, "secret") is None
    assert store.search(bob, query="blood type") == []
    assert store.search(("bob",)) == []
    assert store.list_namespaces(prefix=("bob",)) == []


@pytest.mark.parametrize("namespace", [
    ("alice",),                      # no scope
    ("alice", "Not A Scope"),        # a malformed scope
    ("al ice\u200b", "memories"),    # a malformed user id
])
def test_namespaces_that_do_not_map_are_refused(store: MemstrataStore,
                                                memory: MemoryManager,
                                                namespace: tuple[str, ...]) -> None:
    for call in (lambda: store.put(namespace, "k", {"fact": "x"}),
                 lambda: store.get(namespace, "k"),
                 lambda: store.batch([PutOp(namespace, "k", {"fact": "x"})])):
        with pytest.raises(NamespaceError) as caught:  # memstrata's and LangGraph's type
            call()
        assert isinstance(caught.value, InvalidInputError)
        assert isinstance(caught.value, InvalidNamespaceError)
    assert memory.users() == []


@pytest.mark.parametrize("namespace", [
    ("langgraph", "memories"),       # the root LangGraph reserves
    ("alice", "mem.ories"),          # LangGraph's own label rules
])
def test_langgraphs_own_namespace_rules_hold(store: MemstrataStore, memory: MemoryManager,
                                            namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):  # checked by LangGraph before the store
        store.put(namespace, "k", {"fact": "x"})
    with pytest.raises(NamespaceError):  # operations handed to batch: checked by ours
        store.batch([PutOp(namespace, "k", {"fact": "x"})])
    assert memory.users() == []


def test_bad_input_changes_nothing(store: MemstrataStore, memory: MemoryManager) -> None:
    with pytest.raises(NamespaceError):
        store.search((), query="anything")  # a search names its user
    with pytest.raises(NamespaceError):
        store.search(("alice", "Not A Scope"), query="anything")
    with pytest.raises(InvalidInputError):
        store.put(NS, "k", {"when": object()})  # not JSON
    with pytest.raises(InvalidInputError):
        store.batch([PutOp(NS, "k", {"fact": "x"}, ttl=5.0)])  # no TTLs
    # one bad operation: the whole batch is refused before any runs
    with pytest.raises(NamespaceError):
        store.batch([PutOp(NS, "ok", {"fact": "fine"}), GetOp(("alice",), "k")])
    assert memory.users() == []
    with pytest.raises(InvalidInputError):
        MemstrataStore(memory, memory_type="no-such-type")


def test_the_async_methods(memory: MemoryManager) -> None:
    async def scenario() -> None:
        for backing in (memory, AsyncMemoryManager(memory, close_manager=False)):
            store = MemstrataStore(backing)
            ns = ("carol", "notes", type(backing).__name__.lower())
            await store.aput(ns, "a", {"fact": "I take my coffee black without sugar"})
            await store.aput(ns, "b", {"fact": "The boiler service is due every November"})
            item = await store.aget(ns, "a")
            assert item is not None and item.value["fact"].startswith("I take my coffee")
            hits = await store.asearch(ns, query="how do I drink coffee?")
            assert hits[0].key == "a" and isinstance(hits[0].score, float)
            assert ns in await store.alist_namespaces(prefix=("carol",))
            results = await store.abatch([GetOp(ns, "b"), SearchOp(ns, limit=10),
                                          PutOp(ns, "a", None)])
            assert results[0].value["fact"].startswith("The boiler")  # type: ignore[union-attr]
            assert {i.key for i in results[1]} == {"a", "b"}  # type: ignore[union-attr]
            assert results[2] is None
            await store.adelete(ns, "b")
            assert await store.aget(ns, "a") is None and await store.aget(ns, "b") is None
            if isinstance(backing, AsyncMemoryManager):
                await backing.aclose()
            with pytest.raises(NamespaceError):
                await store.aput(("carol",), "x", {"fact": "x"})

    asyncio.run(scenario())


def test_concurrent_puts_of_one_key_leave_one_current_value(memory: MemoryManager) -> None:
    async def scenario() -> None:
        async with AsyncMemoryManager(memory, max_threads=4, close_manager=False) as amemory:
            store = MemstrataStore(amemory)
            await asyncio.gather(*(store.aput(NS, "mood", {"fact": f"Version {i} of my plan"})
                                   for i in range(10)))
            item = await store.aget(NS, "mood")
            assert item is not None
            assert item.value["fact"] in {f"Version {i} of my plan" for i in range(10)}
            current = await amemory.memories("alice", scope="memories")
            assert [r.content for r in current] == [f"fact: {item.value['fact']}"]
            # every put is a version of the one item: nothing stays pending or lost
            versions = await amemory.history("alice", current[0].id)
            assert len(versions) == 10
            assert {v.status.value for v in versions} == {"active", "superseded"}

    asyncio.run(scenario())
