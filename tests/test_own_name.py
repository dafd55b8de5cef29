"""The user's own name: a question naming the user is about the user.

"which seat should I book for Alice?" returned "My name is Alice" ahead of
Alice's seat preference; "... for Bob?" returned nothing for Bob although the
question without "for Bob" found his aisle preference. Real SQLite and
PostgreSQL, the real embedding model.
"""

from __future__ import annotations

import pytest

from memstrata import MemoryManager
from memstrata.errors import InvalidInputError
from memstrata.policies.retrieval import about_the_user

ALICE = ["I prefer a window seat on flights.", "I'm allergic to peanuts.",
         "I like quiet hotels away from the centre."]
BOB = ["I always want an aisle seat.", "I like Italian food.", "I work as a nurse."]


def _top3(mm: MemoryManager, user: str, q: str, **kw: object) -> list[str]:
    return [h.record.content for h in mm.recall(user, q, k=3, record_use=False, **kw)]  # type: ignore[arg-type]


def test_the_name_from_the_profile_slot_is_read_as_the_user(manager: MemoryManager) -> None:
    obs = manager.observe("alice", "s1", "user", "My name is Alice.")
    assert any(d.stored for d in obs.decisions), obs.decisions  # a name slot was formed
    manager.remember_many("alice", ALICE)
    with_name = _top3(manager, "alice", "Which seat should I book for Alice?")
    without = _top3(manager, "alice", "Which seat should I book?")
    assert with_name[0] == "I prefer a window seat on flights."
    assert with_name == without
    assert all("name" not in c.casefold() for c in with_name)


def test_a_display_name_passed_by_the_application(manager: MemoryManager) -> None:
    manager.remember_many("bob", BOB)
    without = _top3(manager, "bob", "Which seat should I book?")
    assert without[0] == "I always want an aisle seat."
    assert _top3(manager, "bob", "Which seat should I book for Bob?", display_name="Bob") \
        == without
    assert _top3(manager, "bob", "What food does Bob like?", display_name="Bob")[0] \
        == "I like Italian food."


def test_another_persons_name_is_not_rewritten(manager: MemoryManager) -> None:
    manager.observe("alice", "s1", "user", "My name is Alice.")
    manager.remember_many("alice", [*ALICE, "My brother Tom prefers the aisle."])
    assert _top3(manager, "alice", "Which seat should I book for Tom?")[0] == \
        "My brother Tom prefers the aisle."


def test_a_bad_display_name_is_a_typed_error(manager: MemoryManager) -> None:
    manager.remember("bob", BOB[0])
    for bad in ("", "x" * 1000, 3):
        with pytest.raises(InvalidInputError):
            manager.recall("bob", "Which seat?", display_name=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "names", "expected"),
    [
        ("Which seat should I book for Alice?", ["Alice"], "Which seat should I book?"),
        ("Alice, what do I like?", ["Alice"], "what do I like?"),
        ("What is Alice’s favourite food?", ["Alice Smith"], "What is my favourite food?"),
        ("Where does Alicia live?", ["Alice"], "Where does Alicia live?"),
        ("Alice?", ["Alice"], "Alice?"),
        ("给小明订哪个座位？", ["小明"], "给我订哪个座位？"),
        ("Which seat?", ["A"], "Which seat?"),
        # a name that is an everyday word is the name only as an address or after "for"
        ("Will it rain? Book a table for Will.", ["Will"], "Will it rain? Book a table."),
        ("Will, which seat should I book?", ["Will"], "which seat should I book?"),
        ("which seat for alice?", ["Alice"], "which seat?"),
    ],
)
def test_about_the_user(query: str, names: list[str], expected: str) -> None:
    assert about_the_user(query, names) == expected
