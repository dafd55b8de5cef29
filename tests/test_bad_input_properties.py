"""Hostile input, generated: every public call succeeds or fails cleanly, on every backend.

For each example hypothesis draws one call of the public API with hostile values
for its parameters (lone surrogates, NUL, control and invisible characters,
look-alike user ids, over-long strings, huge / negative / NaN numbers, wrong
types, malformed scopes, datetimes and timedeltas at the edges) mixed with valid
ones, so that some calls succeed and change the database. The property:

* the call returns, or raises an ``InvalidInputError``, ``NotFoundError`` or
  ``StateError`` (the errors that say "your input"; a ``StorageError`` here
  means a backend refused what validation let through - the defect this test
  exists for), or a ``TypeError`` for an unknown keyword argument;
* a call that raised left the database as it was: every row of every table
  (reflected from the database, not from our declarations), compared before and
  after.

The same test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import MetaData, select

from memstrata import ManualClock, MemoryManager
from memstrata.errors import InvalidInputError, NotFoundError, StateError
from memstrata.memory.embedder import Embedder
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.testing import PostgresServer

EXPECTED = (InvalidInputError, NotFoundError, StateError)
EXAMPLES = 500

# ---------------------------------------------------------------- hostile values

HOSTILE_TEXT = [
    "", " ", "\n", "\x00", "a\x00b", "\ud800", "tea \udfff", "\u200b", "\ufeff", "\u202e",
    "travel\n", "Travel", "default", "travel", "a b",
    "jose\u0301", "jos\u00e9", "\U0001f375", "u\x7f", "\x1b[31m", "NaN",
]
VALID_TEXT = [
    "I like green tea", "My name is Ann", "From now on book me aisle seats",
    "I prefer window seats", "My favourite colour is blue", "actually, not tea but coffee",
]
characters = st.characters(categories=["Lu", "Ll", "Nd", "Zs", "Cc", "Cf", "Cs", "Mn", "So"])
#: over-long: scope (64), role (32), slot parts and ids (256), content (8000), turn (100,000)
long_texts = st.sampled_from([33, 65, 257, 8001, 100_001]).map(lambda n: "x" * n)
texts = st.one_of(st.sampled_from(HOSTILE_TEXT + VALID_TEXT), st.text(characters, max_size=12),
                  long_texts)
valid_texts = st.sampled_from(VALID_TEXT)


def mostly(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]
           ) -> st.SearchStrategy[Any]:
    """About four valid draws in five, so that calls also succeed and change the database
    (and a failing example shrinks towards valid values, leaving the culprit)."""
    return st.integers(0, 9).flatmap(lambda i: hostile if i >= 8 else valid)

numbers = st.one_of(
    st.sampled_from([0, 1, -1, 2**31, 2**63, 10**4000, 0.3, -0.0, 1.5, math.nan, math.inf,
                     -math.inf, 1e308, True, False]),
    st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
)
EDGE_TIMES = [
    datetime.min, datetime.max, datetime(9999, 12, 31, tzinfo=UTC),
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    datetime.max.replace(tzinfo=timezone(timedelta(hours=-14))),
    datetime(8999, 12, 31, tzinfo=UTC), datetime(1970, 1, 1), datetime(2026, 3, 1, tzinfo=UTC),
]
times = st.one_of(st.sampled_from(EDGE_TIMES), st.datetimes(timezones=st.sampled_from(
    [None, UTC, timezone(timedelta(hours=5, minutes=30))])))
durations = st.one_of(
    st.sampled_from([timedelta.max, timedelta.min, timedelta(0), timedelta(seconds=-1),
                     timedelta(days=1), timedelta(days=900 * 365 + 1)]),
    st.timedeltas(),
)
json_leaves = st.one_of(texts, numbers, st.none(), st.booleans())
json_like = st.recursive(
    json_leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(texts, inner, max_size=3)),
    max_leaves=6,
)
odd = st.sampled_from([object(), b"bytes", {1, 2}, frozenset({"a"}), (1, "a"), [[["deep"]]],
                       {1: "int key"}, {"k": {1, 2}}, lambda: None, Path("/tmp")])
anything = st.one_of(texts, numbers, st.none(), json_like, times, durations, odd)
users = mostly(st.sampled_from(["u", "v", "jose\u0301", "jos\u00e9"]), st.one_of(
    st.sampled_from(["u\u200b", "\ufeffu", "\ud800", "", " ", "u\x00", "x" * 257, 5, None]),
    texts))
scopes = mostly(st.sampled_from(["default", "travel", None]), st.one_of(
    st.sampled_from(["travel\n", "Travel", "", "x" * 65, "a b"]),
    st.lists(st.sampled_from(["default", "travel", "Bad!"]), max_size=2), anything))
memory_types = mostly(st.sampled_from(["preference", "profile", "event", None]), st.one_of(
    st.sampled_from(["feelings", 5]), st.lists(st.sampled_from(["event", "vibes"]), max_size=2),
    anything))
flags = mostly(st.booleans(), st.one_of(st.sampled_from([None, 0, 1, "yes"]), anything))
slots = mostly(st.sampled_from([("user", "drink", "tea"), ("user", "drink", "milk"), None]),
               st.one_of(st.tuples(texts, texts, texts), st.sampled_from([
                   ("u", "a" * 257, "x"), {"subject": "u"}, {"who": 1}, ("a", "b")]), anything))
small_ints = mostly(st.integers(0, 20), numbers)
unit = mostly(st.floats(0, 1), numbers)
metadata = mostly(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2),
                  st.one_of(st.dictionaries(texts, json_like, max_size=3), odd, anything))
when = mostly(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1),
                           timezones=st.just(UTC)), st.one_of(times, anything))
text_param = mostly(valid_texts, texts)


def optional(**strategies: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=strategies)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


# ---------------------------------------------------------------- the manager under test


class World:
    """A manager with a few records, a conflict and a task to aim calls at."""

    def __init__(self, mm: MemoryManager) -> None:
        self.mm = mm
        self.tables = MetaData()
        with mm.db.read() as conn:
            self.tables.reflect(conn)
        mm.remember("u", "I like green tea", type="preference")
        mm.remember("u", "x", slot=("user", "drink", "tea"), scope="travel", type="preference")
        mm.remember("u", "y", slot=("user", "drink", "coffee"), scope="travel",
                    type="preference")
        mm.observe("u", "s1", "user", "My name is Ann")
        self.task = mm.episodic.start_task("u", "book a flight").task_id
        self.ids = [r.id for r in mm.memories("u", limit=100)]

    def dump(self) -> dict[str, list[tuple[str, ...]]]:
        with self.mm.db.read() as conn:
            return {
                name: sorted(tuple(repr(v) for v in row) for row in conn.execute(select(t)))
                for name, t in self.tables.tables.items()
            }


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres",
                                                                marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, embedder: Embedder,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp(f"hostile-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'memory.db'}"
    else:
        server: PostgresServer = request.getfixturevalue("pg_server")
        url = server.create_database()
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    with MemoryManager.open(url, embedder=embedder, clock=clock, index_dir=tmp / "index",
                            home=tmp / "home") as mm:
        yield World(mm)


# ---------------------------------------------------------------- the calls

Call = Callable[[World], object]


def _id(world: World, value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "seeded":
        return world.ids[value[1] % len(world.ids)] if world.ids else "0" * 32
    return value


REMEMBER_FIELDS = optional(
    type=memory_types, scope=scopes, slot=slots, confidence=unit, importance=unit,
    source=mostly(st.sampled_from(["user_explicit", "inferred"]), anything),
    session_id=text_param, task_id=text_param, step_id=text_param, context=text_param,
    metadata=metadata, pinned=flags, correction=flags, verified=flags, ephemeral=flags,
    at=when, valid_from=when,
    ttl=mostly(st.timedeltas(timedelta(seconds=1), timedelta(days=3650)),
               st.one_of(durations, numbers)),
)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, Call]:
    user = draw(users)
    kind = draw(st.sampled_from([
        "remember", "remember_many", "recall", "lookup", "memories", "conflicts", "history",
        "get", "forget", "pin", "resolve_conflict", "observe", "working", "start_task",
        "record_step", "append_turn", "briefing",
    ]))
    if kind == "remember":
        item = draw(mostly(valid_texts, st.one_of(texts, st.dictionaries(st.sampled_from(
            ["content", "type", "scope", "colour", "metadata"]), anything, max_size=3),
            anything)))
        kw = draw(REMEMBER_FIELDS)
        return kind, lambda w: w.mm.remember(user, item, **kw)
    if kind == "remember_many":
        items = draw(mostly(st.lists(st.one_of(valid_texts, st.fixed_dictionaries(
            {"content": text_param}, optional={"scope": scopes, "metadata": metadata})),
            max_size=3), anything))
        return kind, lambda w: w.mm.remember_many(user, items)
    if kind == "recall":
        query = draw(text_param)
        kw = draw(optional(scope=scopes, types=memory_types, k=small_ints,
                           min_relevance=mostly(st.floats(0, 1), st.one_of(
                               numbers, st.just("0.3"))),
                           policy=mostly(st.just(RetrievalPolicy()), anything),
                           record_use=flags, reranker=st.one_of(st.none(), anything)))
        return kind, lambda w: w.mm.recall(user, query, **kw)
    if kind == "lookup":
        kw = draw(optional(subject=mostly(st.sampled_from(["user", "me"]), st.one_of(
                               texts, numbers)),
                           attribute=mostly(st.sampled_from(["drink", "name"]), texts),
                           scope=scopes, include_pending=flags,
                           limit=mostly(st.integers(0, 50), st.one_of(numbers, texts))))
        return kind, lambda w: w.mm.lookup(user, **kw)
    if kind == "memories":
        kw = draw(optional(scope=scopes, types=memory_types,
                           statuses=mostly(st.sampled_from(["active", "superseded"]), anything),
                           pinned=flags, limit=mostly(st.integers(0, 50), st.one_of(
                               numbers, texts)),
                           offset=small_ints))
        return kind, lambda w: w.mm.memories(user, **kw)
    if kind == "conflicts":
        kw = draw(optional(scope=scopes))
        return kind, lambda w: w.mm.conflicts(user, **kw)
    if kind in ("history", "get", "forget", "pin", "resolve_conflict"):
        target = draw(mostly(st.integers(0, 9).map(lambda i: ("seeded", i)), anything))
        if kind == "history":
            return kind, lambda w: w.mm.history(user, _id(w, target))
        if kind == "get":
            return kind, lambda w: w.mm.get(user, _id(w, target))
        if kind == "forget":
            kw = draw(optional(reason=text_param, history=flags))
            return kind, lambda w: w.mm.forget(user, _id(w, target), **kw)
        if kind == "pin":
            pinned = draw(flags)
            return kind, lambda w: w.mm.pin(user, _id(w, target), pinned)
        kw = draw(optional(keep_others=flags, reason=text_param))
        return kind, lambda w: w.mm.resolve_conflict(user, _id(w, target), **kw)
    if kind == "observe":
        session = draw(mostly(st.sampled_from(["s1", "s2"]), texts))
        role = draw(mostly(st.sampled_from(["user", "assistant"]), texts))
        text = draw(mostly(st.one_of(valid_texts, st.just(
            "My favourite " + "a" * 300 + " is green tea")), texts))
        kw = draw(optional(scope=scopes, at=when, metadata=metadata, extract_memories=flags))
        return kind, lambda w: w.mm.observe(user, session, role, text, **kw)
    if kind == "working":
        session = draw(mostly(st.sampled_from(["s1", "s2"]), texts))
        key, value = draw(texts), draw(mostly(valid_texts, anything))
        fields = draw(optional(type=memory_types, scope=scopes, metadata=metadata,
                               ttl=durations, content=text_param))
        def working(w: World) -> object:
            wm = w.mm.working(user, session)
            wm.set(key, value)
            return wm.promote(key, **fields)
        return kind, working
    if kind == "start_task":
        goal = draw(mostly(valid_texts, st.one_of(
            texts, st.dictionaries(texts, json_like, max_size=2), anything)))
        kw = draw(optional(scope=scopes, task_id=texts, state=metadata,
                           status=mostly(st.sampled_from(["pending", "running", "done"]),
                                         anything)))
        return kind, lambda w: w.mm.episodic.start_task(user, goal, **kw)
    if kind == "record_step":
        task = draw(mostly(st.none(), texts))
        step = draw(mostly(st.fixed_dictionaries({}, optional={
            "thought": text_param, "action": text_param, "args": metadata,
            "observation": mostly(valid_texts, json_like), "latency_ms": unit,
            "tokens": small_ints}), st.one_of(st.fixed_dictionaries({}, optional={
                "latency_ms": numbers, "tokens": numbers, "colour": texts,
                "observation": anything}), anything)))
        kw = draw(optional(step_no=mostly(st.integers(1, 30), numbers)))
        return kind, lambda w: w.mm.episodic.record_step(
            user, w.task if task is None else task, step, **kw)
    if kind == "append_turn":
        session = draw(mostly(st.sampled_from(["s1", "s2"]), texts))
        role = draw(mostly(st.sampled_from(["user", "assistant"]), texts))
        text = draw(text_param)
        kw = draw(optional(at=when, metadata=metadata))
        return kind, lambda w: w.mm.episodic.append_turn(user, session, role, text, **kw)
    kw = draw(optional(scope=scopes, goal=text_param, lessons_k=small_ints, profile_k=small_ints,
                       confirmations_k=small_ints, fresh_days=mostly(st.floats(0, 60), numbers),
                       record_use=flags))
    return kind, lambda w: w.mm.briefing(user, **kw)


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(call=calls())
def test_every_call_succeeds_or_fails_cleanly(world: World, call: tuple[str, Call]) -> None:
    name, run = call
    before = world.dump()
    try:
        run(world)
    except EXPECTED as exc:
        event(f"{name}: {type(exc).__name__}")
        assert world.dump() == before, f"{name} raised but changed the database"
    except TypeError as exc:  # Python's own contract: a keyword the signature does not take
        assert "unexpected keyword argument" in str(exc), f"{name}: {exc!r}"
        assert world.dump() == before
    else:
        event(f"{name}: ok")
