"""Bad input gets a clear typed error and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select

from memstrata import MemoryInput, MemoryManager
from memstrata.errors import (
    ClosedError,
    ContentTooLargeError,
    DimensionMismatchError,
    EmptyContentError,
    InvalidInputError,
    InvalidSettingError,
    InvalidURLError,
    MemoryNotFoundError,
    MemstrataError,
    MissingUserError,
    UnknownScopeError,
    UnknownTypeError,
)
from memstrata.memory._schema import metadata
from memstrata.memory.embedder import Embedder, Vectors


def snapshot(mm: MemoryManager) -> dict[str, int]:
    with mm.db.read() as conn:
        return {
            name: int(conn.execute(select(func.count()).select_from(t)).scalar_one())
            for name, t in metadata.tables.items()
            if name != "memstrata_migrations"
        }


@pytest.fixture
def seeded(manager: MemoryManager) -> MemoryManager:
    manager.remember("u", "I like green tea", type="preference")
    return manager


BAD_REMEMBER: list[tuple[type[MemstrataError], str, dict[str, Any]]] = [
    (MissingUserError, "", {}),
    (MissingUserError, "x" * 300, {}),
    (MissingUserError, "a\x00b", {}),
    (EmptyContentError, "u", {"content": ""}),
    (EmptyContentError, "u", {"content": "   \n"}),
    (EmptyContentError, "u", {"content": None}),
    (ContentTooLargeError, "u", {"content": "x" * 9000}),
    (UnknownTypeError, "u", {"type": "feelings"}),
    (UnknownScopeError, "u", {"scope": "Bad Scope!"}),
    (InvalidInputError, "u", {"confidence": 1.5}),
    (InvalidInputError, "u", {"slot": ("u", "", "x")}),
    (InvalidInputError, "u", {"metadata": {"when": object()}}),
    # an unknown field inside a dict item (a typo in a keyword is Python's TypeError)
    (InvalidInputError, "u", {"content": {"content": "tea", "colour": "blue"}}),
]


@pytest.mark.parametrize(("error", "user", "fields"), BAD_REMEMBER)
def test_bad_remember_is_rejected_and_changes_nothing(
    seeded: MemoryManager, error: type[MemstrataError], user: Any, fields: dict[str, Any]
):
    before = snapshot(seeded)
    fields = dict(fields)
    content = fields.pop("content", "a perfectly fine memory about tea")
    with pytest.raises(error):
        seeded.remember(user, content, **fields)
    assert snapshot(seeded) == before


def test_one_bad_item_rejects_the_whole_batch(seeded: MemoryManager):
    before = snapshot(seeded)
    with pytest.raises(UnknownScopeError):
        seeded.remember_many("u", [
            MemoryInput(content="I like jasmine tea", type="preference"),
            {"content": "I like oolong", "scope": "NOT OK"},
        ])
    assert snapshot(seeded) == before


def test_bad_recall_arguments(seeded: MemoryManager):
    before = snapshot(seeded)
    for kwargs, error in (
        ({"query": ""}, InvalidInputError),
        ({"query": "tea", "k": 0}, InvalidInputError),
        ({"query": "tea", "k": 1000}, InvalidInputError),
        ({"query": "tea", "min_relevance": 2.0}, InvalidInputError),
        ({"query": "tea", "types": ["vibes"]}, UnknownTypeError),
        ({"query": "tea", "scope": "No Way"}, UnknownScopeError),
    ):
        query = kwargs.pop("query")
        with pytest.raises(error):
            seeded.recall("u", query, **kwargs)
    with pytest.raises(MissingUserError):
        seeded.recall(None, "tea")  # type: ignore[arg-type]
    with pytest.raises(MemoryNotFoundError):
        seeded.get("u", "0" * 32)
    assert snapshot(seeded) == before


def test_configured_scopes_are_enforced(sqlite_url: str, embedder: Embedder):
    with MemoryManager.open(sqlite_url, embedder=embedder, scopes=["travel", "food"]) as mm:
        assert mm.remember("u", "Window seats please", scope="travel").stored
        with pytest.raises(UnknownScopeError):
            mm.remember("u", "Quiet office please", scope="work")
        with pytest.raises(UnknownScopeError):
            mm.recall("u", "office", scope="work")


class WrongDimension:
    """A user-supplied embedder whose vectors do not fit the index."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.ascontiguousarray(self.inner.embed(texts)[:, :100])


def test_wrong_vector_dimension_changes_nothing(sqlite_url: str, embedder: Embedder):
    with MemoryManager.open(sqlite_url, embedder=embedder) as mm:
        mm.remember("u", "I like green tea", type="preference")
        before = snapshot(mm)
    with MemoryManager.open(sqlite_url, embedder=WrongDimension(embedder)) as mm:
        with pytest.raises(DimensionMismatchError):
            mm.remember("u", "I like black tea", type="preference")
        with pytest.raises(DimensionMismatchError):
            mm.recall("u", "tea")
        assert snapshot(mm) == before


@pytest.mark.parametrize("url", ["", "not a url", "mysql://user@host/db", "sqlite+weird:///x"])
def test_invalid_urls(url: str, embedder: Embedder):
    with pytest.raises(InvalidURLError):
        MemoryManager.open(url, embedder=embedder)


def test_invalid_settings(sqlite_url: str, embedder: Embedder):
    with pytest.raises(InvalidSettingError):
        MemoryManager.open(sqlite_url, embedder=embedder, colour="blue")
    with pytest.raises(InvalidSettingError):
        MemoryManager.open(sqlite_url, embedder=embedder, scopes=["Bad Scope"])
    with pytest.raises(InvalidSettingError):
        _ = MemoryManager.open(sqlite_url, embedder=embedder, vector_backend="nope").longterm
    with pytest.raises(InvalidSettingError):
        _ = MemoryManager.open(sqlite_url, embedder=embedder,
                               vector_options={"precision": "float8"}).longterm


def test_closed_manager_refuses_every_call(sqlite_url: str, embedder: Embedder):
    mm = MemoryManager.open(sqlite_url, embedder=embedder)
    mm.remember("u", "I like green tea", type="preference")
    mm.close()
    mm.close()  # idempotent
    for call in (
        lambda: mm.remember("u", "more tea"),
        lambda: mm.recall("u", "tea"),
        lambda: mm.working("u", "s"),
        lambda: mm.episodic.append_turn("u", "s", "user", "hi"),
        lambda: mm.stats(),
        lambda: mm.forget_user("u"),
    ):
        with pytest.raises(ClosedError):
            call()


# ---------------------------------------------------------------- hardening: every backend alike


def dump(mm: MemoryManager) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table (reflected, not declared), sorted: byte-for-byte state."""
    from sqlalchemy import MetaData

    reflected = MetaData()
    with mm.db.read() as conn:
        reflected.reflect(conn)
        return {
            name: sorted(tuple(repr(v) for v in row) for row in conn.execute(select(t)))
            for name, t in reflected.tables.items()
        }


def _rejected(mm: MemoryManager, error: type[Exception], call: Any) -> None:
    before = dump(mm)
    with pytest.raises(error):
        call()
    assert dump(mm) == before


def test_lone_surrogates_are_rejected(seeded: MemoryManager):
    for call in (
        lambda: seeded.remember("u", "I like tea \ud800"),
        lambda: seeded.remember("u", "I like tea", context="said \udfff"),
        lambda: seeded.remember("u", "I like tea", metadata={"k": "\ud800"}),
        lambda: seeded.remember("u", "I like tea", metadata={"\ud800": 1}),
        lambda: seeded.recall("u", "tea \ud800"),
        lambda: seeded.lookup("u", subject="\ud800"),
        lambda: seeded.observe("u", "s", "user", "My name is \ud800"),
        lambda: seeded.episodic.append_turn("u", "s\ud800", "user", "hi"),
        lambda: seeded.episodic.start_task("u", "book \ud800"),
    ):
        _rejected(seeded, InvalidInputError, call)
    _rejected(seeded, MissingUserError, lambda: seeded.remember("\ud800", "I like tea"))
    _rejected(seeded, MissingUserError, lambda: seeded.memories("u\udc00"))


def test_times_out_of_range_and_bad_ttl_are_rejected(seeded: MemoryManager):
    from datetime import UTC, datetime, timedelta, timezone

    far = datetime(9999, 12, 31, tzinfo=UTC)
    for call in (
        lambda: seeded.remember("u", "I like tea", at=far),
        lambda: seeded.remember("u", "I like tea", valid_from=far),
        lambda: seeded.remember("u", "I like tea", ttl=timedelta.max),
        lambda: seeded.remember("u", "I like tea", ttl=timedelta(seconds=-1)),
        lambda: seeded.remember("u", "I like tea", ttl=timedelta(0)),
        lambda: seeded.remember(
            "u", "I like tea", at=datetime.min.replace(tzinfo=timezone(timedelta(hours=5)))),
        lambda: seeded.observe("u", "s", "user", "My name is Ann", at=far),
        lambda: seeded.episodic.append_turn("u", "s", "user", "hi", at=far),
        lambda: seeded.episodic.append_turn("u", "s", "user", "hi", at="yesterday"),  # type: ignore[arg-type]
        lambda: seeded.briefing("u", fresh_days=1e12),
        lambda: seeded.briefing("u", fresh_days=float("nan")),
    ):
        _rejected(seeded, InvalidInputError, call)


def test_wrong_argument_types_get_typed_errors(seeded: MemoryManager):
    bad: Any = "0.3"
    for call in (
        lambda: seeded.recall("u", "tea", min_relevance=bad),
        lambda: seeded.recall("u", "tea", policy=bad),
        lambda: seeded.recall("u", "tea", scope=5),  # type: ignore[arg-type]
        lambda: seeded.recall("u", "tea", types=5),  # type: ignore[arg-type]
        lambda: seeded.lookup("u", subject=5),  # type: ignore[arg-type]
        lambda: seeded.memories("u", limit="x"),  # type: ignore[arg-type]
        lambda: seeded.memories("u", offset=-1),
        lambda: seeded.memories("u", statuses=5),  # type: ignore[arg-type]
        lambda: seeded.memories("u", pinned="yes"),  # type: ignore[arg-type]
        lambda: seeded.remember_many("u", 5),  # type: ignore[arg-type]
        lambda: seeded.remember_many("u", "I like tea"),
        lambda: seeded.remember("u", "I like tea", slot={"who": "u"}),  # type: ignore[arg-type]
        lambda: seeded.get("u", 5),  # type: ignore[arg-type]
        lambda: seeded.episodic.start_task("u", 5),  # type: ignore[arg-type]
        lambda: seeded.episodic.start_task("u", "x", state=5),  # type: ignore[arg-type]
        lambda: seeded.episodic.start_task("u", "x", status=[]),  # type: ignore[arg-type]
        lambda: seeded.observe("u", "s", "user", "hi", extract_memories="no"),  # type: ignore[arg-type]
    ):
        _rejected(seeded, InvalidInputError, call)


def test_negative_limit_is_rejected_on_every_backend(seeded: MemoryManager):
    _rejected(seeded, InvalidInputError, lambda: seeded.memories("u", limit=-1))
    _rejected(seeded, InvalidInputError, lambda: seeded.lookup("u", subject="u", limit=-1))
    _rejected(seeded, InvalidInputError, lambda: seeded.memories("u", limit=10**9))


def test_task_and_step_input_is_checked(seeded: MemoryManager):
    task = seeded.episodic.start_task("u", "book a flight")
    for call in (
        lambda: seeded.episodic.record_step("u", task.task_id, 5),  # type: ignore[arg-type]
        lambda: seeded.episodic.record_step("u", task.task_id, {"latency_ms": float("nan")}),
        lambda: seeded.episodic.record_step("u", task.task_id, {"thought": "a\x00b"}),
        lambda: seeded.episodic.record_step("u", task.task_id, {}, step_no=2**31),
        lambda: seeded.episodic.record_step("u", task.task_id, {}, step_no=0),
        lambda: seeded.episodic.record_step("u", "a\x00b", {}),
        lambda: seeded.episodic.start_task("u", "x", task_id="t\x00"),
        lambda: seeded.episodic.start_task("u", {"goal": float("inf")}),
    ):
        _rejected(seeded, InvalidInputError, call)


def test_async_postgres_driver_is_refused(embedder: Embedder):
    with pytest.raises(InvalidURLError):
        MemoryManager.open("postgresql+asyncpg://u@localhost/db", embedder=embedder)
    with pytest.raises(InvalidURLError):
        MemoryManager.open("postgresql+psycopg2://u@localhost/db", embedder=embedder)


def test_sqlite_uri_filenames_are_refused(tmp_path: Any, embedder: Embedder,
                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    for url in ("sqlite:///file:mem.db?uri=true", "sqlite:///file:x/y.db?mode=ro&uri=true",
                "sqlite:///file:z.db"):
        with pytest.raises(InvalidURLError):
            MemoryManager.open(url, embedder=embedder)
    assert not list(tmp_path.glob("file:*"))


def test_scope_with_trailing_newline_is_malformed(seeded: MemoryManager, sqlite_url: str,
                                                  embedder: Embedder):
    _rejected(seeded, UnknownScopeError, lambda: seeded.remember("u", "I like tea",
                                                                 scope="travel\n"))
    _rejected(seeded, UnknownScopeError, lambda: seeded.recall("u", "tea", scope="travel\n"))
    _rejected(seeded, UnknownScopeError,
              lambda: seeded.observe("u", "s", "user", "hi", scope="travel\n"))
    with pytest.raises(InvalidSettingError):
        MemoryManager.open(sqlite_url, embedder=embedder, scopes=["travel\n"])


def test_what_postgresql_refuses_is_refused_on_sqlite_too(seeded: MemoryManager):
    """NUL, NaN / Infinity and over-long fields: a typed error before any backend sees them."""
    for fields in (
        {"metadata": {"k": "a\x00b"}},
        {"metadata": {"a\x00": 1}},
        {"metadata": {"k": float("nan")}},
        {"metadata": {"k": [1.0, float("inf")]}},
        {"metadata": {"k": {"deep": float("-inf")}}},
        {"metadata": {1: "int keys become strings in JSON"}},
        {"metadata": {"k": {1, 2}}},
        {"content": "tea \x00 time"},
        {"context": "tea \x00 time"},
        {"slot": ("u", "a" * 257, "x")},
        {"slot": ("s" * 257, "drink", "x")},
        {"slot": ("u", "drink", "x\x00")},
        {"session_id": "s" * 257},
        {"task_id": "t" * 257},
        {"step_id": "t\x00"},
    ):
        fields = dict(fields)
        content = fields.pop("content", "a perfectly fine memory about tea")
        _rejected(seeded, InvalidInputError,
                  lambda c=content, f=fields: seeded.remember("u", c, **f))
    _rejected(seeded, InvalidInputError,
              lambda: seeded.episodic.append_turn("u", "s", "user", "hi", metadata={"x": "\x00"}))
    _rejected(seeded, InvalidInputError, lambda: seeded.working("u", "s" * 257))
    _rejected(seeded, InvalidInputError,
              lambda: seeded.resolve_conflict("u", "0" * 32, reason="why\x00"))
    _rejected(seeded, InvalidInputError, lambda: seeded.forget("u", "0" * 32, reason="\x00"))
    _rejected(seeded, InvalidInputError, lambda: seeded.get("u", "a\x00"))


def test_observe_validates_everything_before_the_turn_is_appended(seeded: MemoryManager):
    # the turn's own fields are checked before anything is appended ...
    _rejected(seeded, InvalidInputError,
              lambda: seeded.observe("u", "s" * 300, "user", "I prefer green tea."))
    _rejected(seeded, InvalidInputError,
              lambda: seeded.observe("u", "s", "user", "I prefer green tea.", scope="Bad"))
    assert seeded.episodic.turns("u") == []
    # ... and what the extractor reads out of a turn is never oversized (a slot wider than
    # its column used to leave half a turn on PostgreSQL): the turn is stored whole, once
    long_attr = "My favourite " + "a" * 300 + " is green tea"
    obs = seeded.observe("u", "s", "user", long_attr)
    assert [t.id for t in seeded.episodic.turns("u")] == [obs.turn_id]
    assert all(c.slot is None or len(c.slot.attribute) <= 64 for c in obs.candidates)


def test_observe_and_remember_share_one_json_check(seeded: MemoryManager):
    for meta in ({"tags": {"a", "b"}}, {"k": float("nan")}, {"k": b"bytes"}, {"k": object()}):
        _rejected(seeded, InvalidInputError,
                  lambda m=meta: seeded.observe("u", "s", "user", "hello", metadata=m))
        _rejected(seeded, InvalidInputError,
                  lambda m=meta: seeded.remember("u", "I like tea", metadata=m))


def test_look_alike_user_ids(seeded: MemoryManager):
    for lookalike in ("u\u200b", "\ufeffu", "u\u200d", "u\u2060", "u\x7f", "u\u0085"):
        _rejected(seeded, MissingUserError,
                  lambda uid=lookalike: seeded.remember(uid, "I like oolong"))
    composed, decomposed = "jos\u00e9", "jose\u0301"
    seeded.remember(composed, "I like coffee", type="preference")
    found = seeded.memories(decomposed)
    assert [r.content for r in found] == ["I like coffee"]
    assert found[0].user_id == composed
    assert seeded.users().count(composed) == 1 and decomposed not in seeded.users()


def test_the_first_hours_bad_input_is_refused_with_a_typed_error(
        seeded: MemoryManager, sqlite_url: str, tmp_path: Any):
    """Issue 34: each of these passed silently (or raised a bare ``TypeError``)."""
    # a mistyped role formed nothing and raised nothing
    with pytest.raises(InvalidInputError, match=r"unknown role 'usr' \(did you mean 'user'\?\)"):
        seeded.observe("u", "s", "usr", "I live in Leeds.")
    assert seeded.episodic.turns("u") == []
    seeded.observe("u", "s", "Human", "Hello there.")  # any case; LangChain's names too
    # a 200,000-character recall query held a worker for seconds
    _rejected(seeded, InvalidInputError, lambda: seeded.recall("u", "x" * 200_000))
    assert isinstance(seeded.recall("u", "x" * 10_000), list)  # the longest accepted
    # a briefing's goal is a recall query: capped alike, also when no lesson is wanted
    # (it was accepted whole with lessons_k=0, and named "the recall query" otherwise)
    for lessons_k in (0, 3):
        with pytest.raises(InvalidInputError, match="the goal is longer than 10000"):
            seeded.briefing("u", goal="x" * 200_000, lessons_k=lessons_k)
    # a number or a flag given as text is a caller's mistake, not coerced
    for fields in ({"confidence": "0.9"}, {"importance": "0.5"}, {"pinned": "yes"},
                   {"confidence": True}):
        _rejected(seeded, InvalidInputError,
                  lambda f=fields: seeded.remember("u", "I like tea.", **f))
    assert seeded.remember("u", "I like tea.", confidence=1).stored  # an int is a number
    # a working-memory key that is not a string
    wm = seeded.working("u", "s")
    for call in (lambda: wm.set(["x"], 1), lambda: wm.get({"x": 1}),  # type: ignore[arg-type]
                 lambda: wm.delete(3)):  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="must be a string"):
            call()
    # a mistyped embedder name fails when the store is opened, not at the first write
    with pytest.raises(InvalidSettingError, match="unknown embedder 'minilm-typo'"):
        MemoryManager.open(f"sqlite:///{tmp_path / 'other.db'}", embedder_name="minilm-typo",
                           index_dir=tmp_path / "index-other")
    assert not (tmp_path / "other.db").exists()  # nothing was created


def test_open_with_create_false_refuses_a_store_that_does_not_exist(tmp_path: Path) -> None:
    """Issue 34: opening a mistyped path created a new, empty store."""
    from memstrata.errors import StoreNotFoundError

    missing = tmp_path / "typo" / "memstrata.db"
    with pytest.raises(StoreNotFoundError, match="typo"):
        MemoryManager.open(f"sqlite:///{missing}", create=False)
    assert not missing.exists() and not missing.parent.exists()
    with pytest.raises(InvalidInputError):
        MemoryManager.open(f"sqlite:///{missing}", create="no")  # type: ignore[arg-type]
    with MemoryManager.open(f"sqlite:///{tmp_path / 'made.db'}") as mm:
        mm.stats()
    with MemoryManager.open(f"sqlite:///{tmp_path / 'made.db'}", create=False) as mm:
        assert mm.stats()["records"] == 0
