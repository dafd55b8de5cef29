"""The stance of a statement (issue 32): whose and when it is, read once by the rules when
a memory is written and stored with it, so that recall never reads stored text."""

from __future__ import annotations

import json

import pytest

from memstrata import MemoryManager
from memstrata.policies.standing import OwnState, own_state, why_not_own_state
from memstrata.reading.stance import (
    STANCE_KEY,
    needs_stance,
    stance_of,
    stored_stance,
    to_stored,
)

#: (statement, question, why it is not the user's own state now for that question)
CASES = [
    ("Setting up my new iPhone 15 tonight. How do I move my chats?", "", None),
    ("My dad finally got an iPhone 15 Pro. How do I help him?", "", "someone else"),
    ("My dad finally got an iPhone 15 Pro. How do I help him?", "What phone does my dad have?",
     None),
    ("My son Leo started at Hillview Primary this week", "Which school is Leo at?", None),
    ("My son Leo started at Hillview Primary this week", "Which school am I at?",
     "someone else"),
    ("my bf daniel just started at Google", "where does my boyfriend work now", None),
    ("Really eyeing the new MacBook Air. Should I wait for a sale?", "", "plan"),
    ("Is Verizon's coverage better than T-Mobile's?", "", "question"),
    ("大学室友跳槽去了华为，月薪直接涨到三万五，好羡慕。", "", "someone else"),
    ("大学室友跳槽去了华为，月薪直接涨到三万五，好羡慕。", "我大学室友现在在哪上班？", None),
    ("我表哥上周辞职去深圳了", "我表哥现在在哪？", None),
    ("我表哥上周辞职去深圳了", "我现在在哪？", "someone else"),
    ("比亚迪海豹提车一周了，开着是真安静。", "", None),
]


@pytest.mark.parametrize(("text", "question", "why"), CASES)
def test_the_stance_read_once_answers_every_question_as_reading_the_text_does(
        text: str, question: str, why: str | None) -> None:
    assert why_not_own_state(text, question) == why
    stance = stance_of(text)
    assert stance.own.why_not(question) == why
    stored = json.loads(json.dumps({STANCE_KEY: to_stored(stance, text)}))
    assert stored_stance(stored, text) == stance
    assert stance.reports_own_state(question) is (why is None)


def test_a_stance_read_from_another_text_or_version_is_not_used() -> None:
    text, other = "I moved to Leeds last month", "My sister moved to Porto"
    meta = {STANCE_KEY: to_stored(stance_of(text), text)}
    assert stored_stance(meta, text) is not None
    assert stored_stance(meta, other) is None  # the text changed since: read it again
    assert needs_stance(meta, other) and not needs_stance(meta, text)
    assert stored_stance({STANCE_KEY: {**meta[STANCE_KEY], "v": 0}}, text) is None
    assert stored_stance({STANCE_KEY: {**meta[STANCE_KEY], "own": [True]}}, text) is None
    assert stored_stance({}, text) is None and needs_stance({}, text)
    # a key of the caller's own is neither read nor replaced
    assert stored_stance({STANCE_KEY: "neutral"}, text) is None
    assert not needs_stance({STANCE_KEY: "neutral"}, text)


def test_a_malformed_stored_own_state_is_refused() -> None:
    good = own_state("My sister moved to Porto").to_stored()
    assert OwnState.from_stored(good) is not None
    for bad in (None, [], good[:4], [1, *good[1:]], [*good[:1], "fr", *good[2:]],
                [*good[:4], "someone else"], [*good[:2], 3, *good[3:]]):
        assert OwnState.from_stored(bad) is None


def test_every_memory_observe_and_remember_write_carries_the_stance_of_its_text(
        manager: MemoryManager) -> None:
    manager.observe("u", "s1", "user", "I live in Leeds. My sister just moved to Porto.")
    manager.observe("u", "s1", "user", "thinking about switching to Vodafone next month")
    manager.remember("u", "I'm allergic to peanuts.")
    records = manager.memories("u", limit=20)
    assert len(records) >= 2
    for r in records:
        assert stored_stance(r.metadata, r.content) == stance_of(r.content)
