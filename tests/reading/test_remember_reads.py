"""``remember`` stores the reader's readings with what the user states, as ``observe`` does.

Reproduces the reading-layer issue's defect: after ``remember(user, "My name is Priya")``,
"What does Priya do for a living?" returned the name statement first (4 of these 10 did,
two of them with nothing else), because nothing knew the memory named the user.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.memory.embedder import Embedder
from memstrata.types import MemoryInput, Source

#: (the user's name, a fact of theirs, a question naming them)
PEOPLE = [
    ("Priya", "I work as a pharmacist at Boots", "What does Priya do for a living?"),
    ("Tomasz", "I'm a civil engineer", "What is Tomasz's job?"),
    ("Aiko", "I live in Osaka", "Where does Aiko live?"),
    ("Daniel", "I drive a Mazda 3", "What car does Daniel drive?"),
    ("Mei", "I'm vegetarian", "What does Mei eat?"),
    ("Kofi", "I bank with Ecobank", "Which bank does Kofi use?"),
    ("Sara", "My phone is a Pixel 8", "What phone does Sara have?"),
    ("Lukas", "I go to McFit", "Which gym does Lukas go to?"),
    ("Ana", "I'm allergic to peanuts", "What is Ana allergic to?"),
    ("Ravi", "I study at IIT Bombay", "Where does Ravi study?"),
]


@pytest.fixture
def mm(db_url: str, embedder: Embedder, clock: ManualClock) -> Iterator[MemoryManager]:
    m = MemoryManager.open(db_url, embedder=embedder, clock=clock)
    yield m
    m.close()


def _meta(m: MemoryManager, record_id: str | None) -> dict[str, Any]:
    assert record_id is not None
    return dict(m.get("u", record_id).metadata)


def test_a_question_naming_the_user_finds_their_fact_not_their_name(mm: MemoryManager
                                                                    ) -> None:
    first = []
    for i, (name, fact, question) in enumerate(PEOPLE):
        user = f"u{i}"
        mm.remember(user, f"My name is {name}")
        mm.remember(user, fact)
        mm.remember(user, "I like hiking on weekends")
        hits = mm.recall(user, question, k=3)
        first.append(hits[0].content if hits else None)
    assert first == [fact for _, fact, _ in PEOPLE]


def test_remember_stores_the_readings_and_the_reader(mm: MemoryManager) -> None:
    meta = _meta(mm, mm.remember("u", "I moved to Porto last month").record_id)
    assert meta["read_by"] == mm.reader.version
    city = [r for r in meta["readings"] if r["attribute"] == "city"]
    assert [(r["value"], r["holder"], r["when"]) for r in city] == [("Porto", "user", "now")]


def test_remember_many_reads_each_stated_item(mm: MemoryManager) -> None:
    decisions = mm.remember_many("u", ["My sister lives in Lyon", "I work at Siemens"])
    read = [[(r["attribute"], r["value"], r["holder"]) for r in _meta(mm, d.record_id)[
        "readings"]] for d in decisions]
    assert read == [[("city", "Lyon", "other")], [("employer", "Siemens", "user")]]


def test_what_the_user_did_not_state_is_not_read(mm: MemoryManager) -> None:
    # a tool's result or an import speaks in no one's voice: "I" is not the user
    d = mm.remember("u", MemoryInput(content="I live in Osaka", source=Source.TOOL_RESULT))
    assert "readings" not in _meta(mm, d.record_id)


def test_readings_given_with_the_item_are_kept(mm: MemoryManager) -> None:
    given = {"read_by": "mine", "readings": []}
    d = mm.remember("u", "I live in Osaka", metadata=given)
    assert _meta(mm, d.record_id)["read_by"] == "mine"


def test_bad_input_is_refused_before_anything_is_read(mm: MemoryManager) -> None:
    from memstrata.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        mm.remember_many("u", ["I live in Osaka", {"content": "x", "confidence": "0.9"}])
    assert mm.memories("u") == []


def test_the_rules_reader_stores_no_readings(db_url: str, embedder: Embedder,
                                             clock: ManualClock) -> None:
    with MemoryManager.open(db_url, embedder=embedder, clock=clock, reader="rules") as m:
        assert "readings" not in _meta(m, m.remember("u", "I live in Osaka").record_id)
