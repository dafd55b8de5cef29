"""Formation that reads change (issue 11, items 1 and 3): moves, job and diet changes,
preferred names, birthdays, "from now on" anywhere - and the guards that must not
change anything; the write path never merges a statement into its opposite.

Real SQLite, the real embedding model, the real write path: each case observes an
older fact, then the change, and reads the active value of the slot and the briefing.
"""

from __future__ import annotations

import pytest

from memstrata import MemoryManager
from memstrata.policies.extraction import extract


def active(mm: MemoryManager, user: str, attribute: str) -> list[str]:
    """Values of the user's active records holding ``attribute``."""
    return sorted(r.slot.value for r in mm.memories(user, statuses="active")
                  if r.slot is not None and r.slot.attribute == attribute)


@pytest.mark.parametrize("change", ["I moved from Berlin to Munich.", "We relocated to Munich."])
def test_a_move_becomes_the_active_city_and_the_briefing_stops_saying_berlin(
        sqlite_manager: MemoryManager, clock, change: str):
    sqlite_manager.observe("u", "s1", "user", "I live in Berlin.")
    clock.advance(days=10)
    obs = sqlite_manager.observe("u", "s2", "user", change)
    assert [d.outcome for d in obs.decisions] == ["corrected"], obs.decisions
    assert active(sqlite_manager, "u", "city") == ["Munich"]
    text = "\n".join(sqlite_manager.briefing("u").lines())
    assert "Munich" in text and "Berlin" not in text.replace("from Berlin", "")


@pytest.mark.parametrize(("older", "newer", "attribute", "value"), [
    ("I work at Siemens.", "I started a new job at Google last week.", "employer", "Google"),
    ("I work as a teacher.", "I switched careers and now work as a nurse.", "occupation",
     "nurse"),
    ("I'm vegetarian.", "I went vegan in January.", "diet", "vegan"),
    # a preferred name is its own attribute: "call me Kate" does not replace "Katherine"
    ("My name is Katherine.", "Please call me Kate.", "preferred_name", "Kate"),
    ("I'm 29.", "I turned 30 yesterday!", "age", "30"),
    ("我住在北京。", "我从北京搬到了上海。", "city", "上海"),
    ("我在腾讯工作。", "我跳槽到了阿里巴巴。", "employer", "阿里巴巴"),
    ("我叫王小明。", "以后叫我小王就行。", "preferred_name", "小王"),
])
def test_changes_replace_the_older_value(sqlite_manager: MemoryManager, clock, older: str,
                                         newer: str, attribute: str, value: str):
    sqlite_manager.observe("u", "s1", "user", older)
    clock.advance(days=30)
    sqlite_manager.observe("u", "s2", "user", newer)
    assert active(sqlite_manager, "u", attribute) == [value]


@pytest.mark.parametrize("guard", [
    "Is Munich a nice place to live?",
    "My sister moved to Munich.",
    "I might move to Munich next year.",
    "I'm in Munich for a business trip this week.",
    "We're thinking about relocating to Munich.",
    "我妹妹搬到上海了。",
    "我明年可能搬到上海。",
    "我下周去上海出差。",
])
def test_guards_leave_the_city_alone(sqlite_manager: MemoryManager, clock, guard: str):
    sqlite_manager.observe("u", "s1", "user", "I live in Berlin." if guard.isascii()
                           else "我住在北京。")
    clock.advance(days=3)
    sqlite_manager.observe("u", "s2", "user", guard)
    assert active(sqlite_manager, "u", "city") == (["Berlin"] if guard.isascii() else ["北京"])


def test_from_now_on_is_read_in_any_position():
    for text in ("From now on, answer in German.", "Answer in German from now on.",
                 "Please answer in German from now on, thanks.",
                 "Could you, from now on, answer in German?",
                 "请以后都用中文回答。", "从现在开始用中文回答我。"):
        found = extract(text)
        assert [e.rule for e in found] == ["from_now_on"], text
        assert found[0].correction


def test_a_negated_statement_is_never_reinforced_into_its_opposite(
        sqlite_manager: MemoryManager, clock):
    first = sqlite_manager.remember("u", "I couldn't afford to buy an electric car this year.")
    clock.advance(days=1)
    second = sqlite_manager.remember("u", "I could afford to buy an electric car this year.")
    assert first.outcome == "written"
    assert second.outcome != "reinforced", second.reason
    assert second.record_id != first.record_id
