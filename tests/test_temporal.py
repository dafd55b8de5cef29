"""Time: relative dates resolved at write time, temporal questions, ranking with a range.

Real SQLite and PostgreSQL, the real embedding model.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata.memory.briefing import dated
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.policies.temporal import DateRange, read_query, reads_as_change, resolve_date

MONDAY = date(2023, 5, 8)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to the support group yesterday.", "2023-05-07"),
        ("Last night we had sushi", "2023-05-07"),
        ("The day before yesterday I fell off my bike", "2023-05-06"),
        ("I painted a sunrise two days ago", "2023-05-06"),
        ("We adopted a puppy 3 days ago", "2023-05-05"),
        ("Last Friday I met Anna", "2023-05-05"),
        ("We went hiking last week", "2023-05-01..2023-05-07"),
        ("Last month I started pottery", "2023-04-01..2023-04-30"),
        ("I visited Rome last year", "2022-01-01..2022-12-31"),
        ("Today I signed the lease", "2023-05-08"),
        ("I ran a marathon in March", "2023-03-01..2023-03-31"),
        ("It happened in June", "2022-06-01..2022-06-30"),  # the last June before May 2023
        ("on 7 May 2023 I moved", "2023-05-07"),
        ("昨天我去了医院", "2023-05-07"),
        ("前天我们吃了火锅", "2023-05-06"),
        ("三天前我买了新手机", "2023-05-05"),
        ("上周五我见了老同学", "2023-05-05"),
        ("上个月我去了杭州", "2023-04-01..2023-04-30"),
        ("上周我一直在加班", "2023-05-01..2023-05-07"),
        ("去年我搬到了上海", "2022-01-01..2022-12-31"),
        ("2023年3月我开始学游泳", "2023-03-01..2023-03-31"),
    ],
)
def test_relative_dates_resolve_against_the_time_they_were_said(text: str, expected: str
                                                                 ) -> None:
    found = resolve_date(text, MONDAY)
    assert found is not None and found.label() == expected


@pytest.mark.parametrize("text", ["I love hiking", "I may go to Paris", "我喜欢游泳",
                                  "My number is 12345"])
def test_text_without_a_date_resolves_to_nothing(text: str) -> None:
    assert resolve_date(text, MONDAY) is None


def test_date_range_round_trips_and_rejects_garbage() -> None:
    r = DateRange(date(2023, 5, 1), date(2023, 5, 7), "last week")
    assert DateRange.from_json(r.to_json()) == r
    for bad in (None, "2023-05-01", {"start": "x", "end": "y"},
                {"start": "2023-05-07", "end": "2023-05-01"}):
        assert DateRange.from_json(bad) is None


@pytest.mark.parametrize(
    ("query", "temporal", "aggregate", "label"),
    [
        ("When did Caroline go to the support group?", True, False, None),
        ("How many days passed between the wedding and the interview?", True, True, None),
        ("What did I cook last month?", True, False, "2023-04-01..2023-04-30"),
        ("What did I do in March?", True, False, "2023-03-01..2023-03-31"),
        ("How many books did I read?", False, True, None),
        ("我什么时候去的医院？", True, False, None),
        ("Which seat do I prefer?", False, False, None),
    ],
)
def test_temporal_questions_are_recognised(query: str, temporal: bool, aggregate: bool,
                                           label: str | None) -> None:
    q = read_query(query, MONDAY)
    assert (q.temporal, q.aggregate) == (temporal, aggregate)
    assert (q.range.label() if q.range else None) == label
    assert q.keeps_evidence == (temporal or aggregate)


def test_a_bound_is_not_a_range_and_relative_ranges_are_marked() -> None:
    assert read_query("Where was Tim in the week before 16 November 2023?", MONDAY).range is None
    assert read_query("How many games had Nate won by July 10, 2022?", MONDAY).range is None
    assert read_query("Where was Tim in the week before 16 November 2023?", MONDAY).temporal
    named = read_query("What did Nate do on 25 May, 2022?", MONDAY).range
    assert named is not None and named.absolute and named.label() == "2022-05-25"
    relative = read_query("What did I write last week?", MONDAY).range
    assert relative is not None and not relative.absolute


def test_the_gate_is_lower_only_for_temporal_and_aggregate_questions() -> None:
    policy = RetrievalPolicy()
    assert policy.gate_for(keeps_evidence=False) == policy.min_relevance
    assert policy.gate_for(keeps_evidence=True) == policy.temporal_min_relevance
    assert policy.temporal_min_relevance < policy.min_relevance
    with pytest.raises(ValueError):
        RetrievalPolicy(temporal_min_relevance=1.5)
    with pytest.raises(ValueError):
        RetrievalPolicy(range_boost=0.5)


def test_change_cues() -> None:
    assert reads_as_change("I moved to Munich last month.")
    assert reads_as_change("我们搬到了杭州")
    assert not reads_as_change("I live in Munich.")
    # a state that began at some point, someone who left, something given up
    assert reads_as_change("Sam and I have been together since the summer.")
    assert reads_as_change("I've been living in Denver since the start of spring.")
    assert reads_as_change("Ever since the switch to the late shift the alarm rings at 9:15.")
    assert reads_as_change("Karen left for Google in the spring.")
    assert reads_as_change("Cancelled Planet Fitness in the end.")
    assert reads_as_change("Traded the Civic in for a used Subaru Outback last weekend.")
    assert not reads_as_change("I have lived in Denver for ten years.")


# ---------------------------------------------------------------- through the store

SAID = datetime(2026, 4, 1, 18, 0, tzinfo=UTC)  # a Wednesday


def test_remember_stores_the_absolute_date_and_the_planner_sees_it(manager: MemoryManager
                                                                   ) -> None:
    d = manager.remember("u1", MemoryInput(content="Yesterday I went to the dentist.", at=SAID))
    rec = manager.get("u1", d.record_id or "")
    assert rec.metadata["event_date"]["start"] == "2026-03-31"
    assert rec.metadata["event_date"]["end"] == "2026-03-31"
    assert dated(rec) == "Yesterday I went to the dentist. (on 2026-03-31)"
    plain = manager.remember("u1", MemoryInput(content="I like green tea.", at=SAID))
    rec = manager.get("u1", plain.record_id or "")
    assert "event_date" not in rec.metadata
    assert dated(rec) == "I like green tea."


def test_observe_resolves_against_the_turn_time(manager: MemoryManager) -> None:
    obs = manager.observe("u1", "s1", "user", "I moved to Lisbon last week.", at=SAID)
    stored = [d for d in obs.decisions if d.record_id]
    assert stored, obs.decisions
    rec = manager.get("u1", stored[0].record_id or "")
    assert rec.metadata["event_date"] == {"start": "2026-03-23", "end": "2026-03-29",
                                          "phrase": "last week"}


def test_a_caller_supplied_event_date_is_kept(manager: MemoryManager) -> None:
    d = manager.remember("u1", MemoryInput(
        content="Yesterday was great.", at=SAID,
        metadata={"event_date": {"start": "2020-01-01", "end": "2020-01-01"}}))
    assert manager.get("u1", d.record_id or "").metadata["event_date"]["start"] == "2020-01-01"


def _diary(mm: MemoryManager, clock: ManualClock) -> dict[str, str]:
    """Events said with relative dates; returns text -> record id."""
    said = [
        (datetime(2026, 2, 10, 18, tzinfo=UTC), "Yesterday I went to a pottery class."),
        (datetime(2026, 3, 2, 18, tzinfo=UTC), "Two days ago I went to a pottery class again."),
        (datetime(2026, 4, 1, 18, tzinfo=UTC), "Yesterday I went to a cooking class."),
        (datetime(2026, 3, 15, 18, tzinfo=UTC), "I watched a film about whales."),
        (datetime(2026, 3, 20, 18, tzinfo=UTC), "I bought a new lamp for the desk."),
    ]
    ids = {}
    for at, text in said:
        d = mm.remember("u1", MemoryInput(content=text, at=at))
        ids[text] = d.record_id or ""
    clock.set(datetime(2026, 6, 1, tzinfo=UTC))
    return ids


def test_a_range_in_the_question_filters_and_boosts(manager: MemoryManager,
                                                   clock: ManualClock) -> None:
    ids = _diary(manager, clock)
    hits = manager.recall("u1", "Which classes did I go to in March?", k=5, record_use=False)
    got = [h.id for h in hits]
    # said on 2 March and 1 April, both about days in March (28 Feb is outside, with a
    # day of slack it is not: the 2 March statement is about 28 February)
    assert ids["Yesterday I went to a cooking class."] in got  # said 1 April, about 31 March
    assert ids["Yesterday I went to a pottery class."] not in got  # February
    # the same question without the range ranks by relevance alone and finds February too
    plain = [h.id for h in manager.recall("u1", "Which classes did I go to?", k=5,
                                          record_use=False)]
    assert ids["Yesterday I went to a pottery class."] in plain
    # switched off (range_boost 1.0): no filter
    off = RetrievalPolicy(range_boost=1.0)
    unfiltered = [h.id for h in manager.recall("u1", "Which classes did I go to in March?",
                                               k=5, record_use=False, policy=off)]
    assert ids["Yesterday I went to a pottery class."] in unfiltered


def test_the_range_never_filters_the_answer_away(manager: MemoryManager,
                                                 clock: ManualClock) -> None:
    ids = _diary(manager, clock)
    hits = manager.recall("u1", "Which classes did I go to in 2019?", k=5, record_use=False)
    assert ids["Yesterday I went to a cooking class."] in [h.id for h in hits]


def test_a_temporal_question_keeps_weak_evidence(manager: MemoryManager,
                                                 clock: ManualClock) -> None:
    """The evidence of a "when" question often shares little with it: the temporal
    gate admits what the plain gate cuts."""
    manager.remember("u1", MemoryInput(content="We visited Oma in Hamburg over Easter.",
                                       at=SAID))
    clock.set(SAID + timedelta(days=30))
    q = "When was the last time I saw my grandmother?"
    strict = RetrievalPolicy(temporal_min_relevance=RetrievalPolicy().min_relevance)
    lenient = manager.recall("u1", q, record_use=False)
    gated = manager.recall("u1", q, record_use=False, policy=strict)
    ungated = manager.recall("u1", q, record_use=False, min_relevance=0.0)
    assert len(ungated) == 1
    top = ungated[0].parts
    assert max(top.dense, top.keyword) < strict.min_relevance  # the plain gate cuts it
    assert gated == []
    assert [h.id for h in lenient] == [ungated[0].id]


def test_the_planners_memory_lines_carry_the_resolved_date(manager: MemoryManager,
                                                           clock: ManualClock) -> None:
    from memstrata.agent.context import ContextSettings
    from memstrata.agent.memory_view import brief

    manager.remember("u1", MemoryInput(content="Yesterday I went to the dentist.", at=SAID))
    clock.set(SAID + timedelta(days=60))
    ctx = brief(manager, "u1", "default", "When did I go to the dentist?", ContextSettings())
    assert [m.text for m in ctx.memories] == ["Yesterday I went to the dentist. (on 2026-03-31)"]
