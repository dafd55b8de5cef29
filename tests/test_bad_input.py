"""Bad input gets a clear typed error and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
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
