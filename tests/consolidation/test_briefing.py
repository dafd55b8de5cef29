"""MemoryManager.briefing: questions to ask, lessons for the goal, profile facts to pin."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memstrata import Briefing, ManualClock, MemoryManager
from memstrata.errors import InvalidInputError, MissingUserError


def test_open_conflicts_become_questions_newest_first(manager: MemoryManager,
                                                      clock: ManualClock):
    # a birthday is stable: a different one is a contradiction to ask about
    manager.observe("alice", "s1", "user", "My birthday is on March 3.")
    manager.observe("alice", "s1", "user", "My birthday is on May 9.")
    clock.advance(days=1)
    manager.remember("alice", "我喜欢靠窗的座位", type="preference")
    manager.remember("alice", "我不喜欢靠窗的座位", type="preference")
    from memstrata.consolidation import Consolidator

    Consolidator(manager).run("conflicts")
    brief = manager.briefing("alice")
    assert [c.question for c in brief.confirmations] == [
        "您之前说过“我喜欢靠窗的座位”，后来又说“我不喜欢靠窗的座位”。现在哪个是对的？",
        "Which is right for your birthday: 'March 3' or 'May 9'?",
    ]
    assert all(len(c.records) == 2 for c in brief.confirmations)
    assert manager.briefing("alice", confirmations_k=1).confirmations == brief.confirmations[:1]
    assert brief.lines()[0].startswith("ask: 您之前说过")


def test_lessons_relevant_to_the_goal_and_profile_facts_to_pin(manager: MemoryManager,
                                                               clock: ManualClock):
    flight = manager.remember(
        "bob", "Book a flight to Rome: tried search_flights: failed on timeout; "
        "search_flights_v2 worked -> done", type="experience", verified=True, scope="travel")
    manager.remember("bob", "Order a pizza: pizza_api worked -> done", type="experience",
                     verified=True, scope="food")
    manager.remember("bob", "Session 2026-02-01: planned a ski weekend in the Alps",
                     type="summary", scope="travel")
    name = manager.observe("bob", "s1", "user", "My name is Bob Stone.").written[0]
    city = manager.observe("bob", "s1", "user", "I live in Lyon.", scope="travel").written[0]
    manager.observe("bob", "s1", "user", "I work at Renault.", scope="work")
    pinned = manager.remember("bob", "Always use the corporate card for hotels.",
                              type="rule", scope="travel", pinned=True).record_id
    brief = manager.briefing("bob", "travel", goal="book a flight to Rome")
    assert isinstance(brief, Briefing) and brief.goal == "book a flight to Rome"
    assert brief.lessons[0].id == flight.record_id
    assert all(r.scope == "travel" for r in brief.lessons)
    assert brief.profile[0].id == pinned  # pinned first
    assert {r.id for r in brief.profile} == {pinned, name, city}  # travel + default scope
    assert manager.get("bob", flight.record_id).access_count == 1  # shown = used
    quiet = manager.briefing("bob", "travel", goal="book a flight to Rome", record_use=False)
    assert manager.get("bob", flight.record_id).access_count == 1
    assert [r.id for r in quiet.lessons] == [r.id for r in brief.lessons]


def test_without_a_goal_only_fresh_summaries_are_offered(manager: MemoryManager,
                                                        clock: ManualClock):
    manager.remember("carol", "Session 2026-03-01: looked for hotels in Porto", type="summary")
    clock.advance(days=20)
    fresh = manager.remember("carol", "Session 2026-03-21: booked the Porto hotel",
                             type="summary").record_id
    brief = manager.briefing("carol")
    assert [r.id for r in brief.lessons] == [fresh]
    assert manager.briefing("carol", fresh_days=30).lessons[1].content.endswith("Porto")
    assert clock.now() - brief.generated_at == timedelta(0)


def test_an_unknown_user_gets_an_empty_briefing_and_bad_input_a_typed_error(
        manager: MemoryManager):
    assert manager.briefing("nobody", "travel", goal="anything").empty
    with pytest.raises(MissingUserError):
        manager.briefing("")
    with pytest.raises(InvalidInputError):
        manager.briefing("alice", goal="  ")
    with pytest.raises(InvalidInputError):
        manager.briefing("alice", lessons_k=-1)
    # a list of scopes (which memories() and recall() take) was a TypeError deep inside,
    # found by the property test of bad input
    manager.remember("alice", "I prefer aisle seats.", type="preference")
    for scope in (["travel"], ("travel", "default"), 7, "Not A Scope"):
        with pytest.raises(InvalidInputError):
            manager.briefing("alice", scope)  # type: ignore[arg-type]


@pytest.mark.parametrize("said, other", [
    ("From now on always answer me in English.", "Also keep your answers short, please."),
    ("以后都用中文回答我", "以后回答都简短一点"),
])
def test_a_standing_instruction_is_a_rule_always_briefed_and_never_expires(
        manager: MemoryManager, clock: ManualClock, said: str, other: str):
    """Issue 33: "From now on always answer me in English" was a preference - not in the
    briefing, and the nightly expiry deleted it after 180 + 30 days unused."""
    from memstrata import MemoryType, Status
    from memstrata.agent import ContextSettings
    from memstrata.agent.memory_view import brief
    from memstrata.consolidation import ConsolidationSettings, Consolidator

    manager.observe("carol", "s1", "user", said)
    manager.observe("carol", "s1", "user", other)
    manager.observe("carol", "s1", "user", "I prefer aisle seats on long flights.")
    rules = manager.briefing("carol").rules
    assert {r.content for r in rules} == {said, other}
    assert all(r.type is MemoryType.RULE and r.expires_at is None for r in rules)
    assert [x for x in manager.briefing("carol").lines() if x.startswith("rule: ")]
    jobs = Consolidator(manager, settings=ConsolidationSettings.build(
        schedule={"timezone": "UTC"}))
    for _ in range(8):  # a year of nightly expiry with nothing used
        clock.advance(days=50)
        jobs.run("expire")
    kept = manager.briefing("carol", "travel")
    assert {r.content for r in kept.rules} == {said, other}
    assert all(manager.get("carol", r.id).status is Status.ACTIVE for r in kept.rules)
    # the planner sees them as the user's standing rules
    context = brief(manager, "carol", "default", "book me a flight", ContextSettings())
    assert set(context.rules) == {said, other}
