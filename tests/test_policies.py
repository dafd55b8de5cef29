"""The policies are pure: no storage, no model. Each rule is checked on its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstrata.policies import (
    ConflictPolicy,
    RetentionPolicy,
    RetrievalPolicy,
    WritePolicy,
    decide,
    memorability,
    texts_contradict,
)
from memstrata.policies.conflict import SlotMatch, slot_verdict
from memstrata.policies.write import Candidate, Neighbour
from memstrata.types import MemoryType, Slot, Source, Status

NOW = datetime(2026, 6, 1, tzinfo=UTC)
W = WritePolicy()
C = ConflictPolicy()


def cand(content: str, **kw: object) -> Candidate:
    fields: dict[str, object] = {"type": MemoryType.PREFERENCE, "confidence": 1.0,
                                 "source": Source.USER_EXPLICIT}
    fields.update(kw)
    return Candidate(content=content, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["Thanks!", "ok cool", "Hi! Good morning :)", "lol",
                                  "hey, thanks for yesterday!", "谢谢", "好的"])
def test_small_talk_is_not_memorable(text: str):
    assert memorability(text)[0] is False


@pytest.mark.parametrize("text", ["This restaurant is awful", "I'm so tired today",
                                  "The weather is terrible", "今天好累"])
def test_one_off_moods_are_not_memorable(text: str):
    memorable, why = memorability(text)
    assert not memorable and "mood" in why


@pytest.mark.parametrize("text", [
    "I never eat at this restaurant, it is awful",  # durable marker
    "Hey! I moved to Paris last month",  # greeting + a statement about the user
    "From now on always book aisle seats",
    "I'm allergic to shellfish",
    "以后都用支付宝付款",
])
def test_durable_statements_are_memorable(text: str):
    assert memorability(text)[0] is True


def test_write_rules_in_order():
    assert decide(cand("x y z", ephemeral=True), policy=W, conflicts=C).outcome == (
        "dropped_not_memorable")
    unverified = cand("Retry fixed it", type=MemoryType.EXPERIENCE)
    assert decide(unverified, policy=W, conflicts=C).outcome == "dropped_not_memorable"
    verified = cand("Retry fixed it", type=MemoryType.EXPERIENCE, verified=True)
    assert decide(verified, policy=W, conflicts=C).outcome == "written"
    low = cand("Likes jazz", confidence=0.3)
    assert decide(low, policy=W, conflicts=C).outcome == "dropped_low_confidence"
    assert decide(low, policy=WritePolicy(min_confidence=0.2), conflicts=C).outcome == "written"
    assert decide(cand("Thanks!"), policy=W, conflicts=C).outcome == "dropped_not_memorable"
    talk_policy = WritePolicy(drop_small_talk=False)
    assert decide(cand("Thanks!"), policy=talk_policy, conflicts=C).outcome == "written"


def test_duplicates_reinforce_unless_they_contradict():
    c = cand("My budget is 2000 euros")
    exact = Neighbour("a", 1.0, "my budget is 2000 euros", MemoryType.PREFERENCE, exact=True)
    assert decide(c, neighbours=[exact], policy=W, conflicts=C).targets == ("a",)
    near = Neighbour("b", 0.96, "My budget is 2000 EUR", MemoryType.PREFERENCE)
    assert decide(c, neighbours=[near], policy=W, conflicts=C).outcome == "reinforced"
    flipped = Neighbour("c", 0.96, "My budget is 3000 euros", MemoryType.PREFERENCE)
    assert decide(c, neighbours=[flipped], policy=W, conflicts=C).outcome == "written"
    other_type = Neighbour("d", 0.99, "My budget is 2000 euros!", MemoryType.RULE)
    assert decide(c, neighbours=[other_type], policy=W, conflicts=C).outcome == "written"
    far = Neighbour("e", 0.80, "My budget is about 2000", MemoryType.PREFERENCE)
    assert decide(c, neighbours=[far], policy=W, conflicts=C).outcome == "written"


def test_slot_verdicts():
    slot = Slot("u", "city", "Munich")
    c = cand("I live in Munich", type=MemoryType.PROFILE, slot=slot)
    assert decide(c, policy=W, conflicts=C).outcome == "written"
    same = [SlotMatch("a", "munich", True)]
    assert decide(c, slot_matches=same, policy=W, conflicts=C).outcome == "reinforced"
    other = [SlotMatch("a", "Berlin", False)]
    v = decide(c, slot_matches=other, policy=W, conflicts=C)
    assert (v.outcome, v.targets) == ("conflict", ("a",))
    corrected = cand("Actually Munich", type=MemoryType.PROFILE, slot=slot, correction=True)
    assert decide(corrected, slot_matches=other, policy=W, conflicts=C).outcome == "corrected"
    newest = ConflictPolicy("newest_wins")
    assert decide(c, slot_matches=other, policy=W, conflicts=newest).outcome == "corrected"
    # a structured fact is memorable even when it reads like small talk
    ok = cand("ok", type=MemoryType.PROFILE, slot=Slot("u", "answer", "ok"))
    assert decide(ok, policy=W, conflicts=C).outcome == "written"
    open_conflict = [SlotMatch("a", "Berlin", False, "g"), SlotMatch("b", "Munich", True, "g")]
    assert slot_verdict(open_conflict, correction=False, policy=C).action == "reinforce"
    with pytest.raises(ValueError):
        ConflictPolicy("loudest")  # type: ignore[arg-type]


def test_texts_contradict_signals():
    assert texts_contradict("My budget is 2000 euros", "My budget is 3000 euros")
    assert texts_contradict("I like spicy food", "I don't like spicy food")
    assert texts_contradict("I like spicy food", "I like spicy food a lot") is None
    assert texts_contradict("I like spicy food", "The train leaves at 9") is None


def test_retention_lifecycle():
    r = RetentionPolicy()
    ttl = r.ttl_for(MemoryType.EXPERIENCE)
    assert ttl is not None
    expires = r.expires_at(MemoryType.EXPERIENCE, NOW)
    assert expires == NOW + ttl
    assert r.expires_at(MemoryType.RULE, NOW) is None
    assert r.expires_at(MemoryType.RULE, NOW, override=timedelta(days=1)) == NOW + timedelta(1)
    assert r.lifecycle(expires, pinned=False, now=NOW) == "alive"
    assert r.lifecycle(expires, pinned=False, now=expires) == "expired"
    assert r.lifecycle(expires, pinned=False, now=expires + r.grace) == "purgeable"
    assert r.lifecycle(expires, pinned=True, now=expires + 10 * r.grace) == "alive"
    later = NOW + timedelta(days=10)
    assert r.extended(MemoryType.EXPERIENCE, expires, later) == later + ttl
    assert r.extended(MemoryType.EXPERIENCE, expires + timedelta(999), later) == expires + (
        timedelta(999))
    profile, experience = r.ttl_for(MemoryType.PROFILE), r.ttl_for(MemoryType.EXPERIENCE)
    assert profile is not None and experience is not None and profile > experience
    with pytest.raises(ValueError):
        RetentionPolicy(ttl={MemoryType.EVENT: timedelta(0)})


def test_retrieval_scoring():
    p = RetrievalPolicy()
    assert p.relevance(0.0, 0.0) == 0.0
    assert p.relevance(0.8, 0.0) == pytest.approx(p.dense_weight * 0.8)
    assert p.relevance(-0.5, 0.0) == 0.0
    assert 0 < p.keyword_signal(1.0) < p.keyword_signal(10.0) < 1.0
    hl = p.half_life[MemoryType.PREFERENCE]
    assert hl is not None
    assert p.decay(MemoryType.PREFERENCE, NOW, NOW) == 1.0
    half = p.decay(MemoryType.PREFERENCE, NOW - hl, NOW)
    assert half == pytest.approx(p.decay_floor + (1 - p.decay_floor) * 0.5)
    assert p.decay(MemoryType.PREFERENCE, NOW - 100 * hl, NOW) == pytest.approx(p.decay_floor)
    assert p.decay(MemoryType.PREFERENCE, NOW - 100 * hl, NOW, pinned=True) == 1.0
    assert p.weight_of(Status.DEMOTED) < p.weight_of(Status.PENDING_CONFIRMATION) <= (
        p.weight_of(Status.ACTIVE))
    assert p.weight_of(Status.ACTIVE, expired=True) == p.weight_of(Status.DEMOTED)
    assert p.weight_of(Status.SUPERSEDED) == 0.0
    for bad in ({"top_k": 0}, {"min_relevance": 2.0}, {"dense_weight": -1},
                {"keyword_saturation": 0}, {"decay_floor": 1.5}):
        with pytest.raises(ValueError):
            RetrievalPolicy(**bad)  # type: ignore[arg-type]


def test_the_relevance_gate_is_the_strongest_signal():
    p = RetrievalPolicy(min_relevance=0.25, dense_weight=0.4)
    assert p.admits(0.35, 0.0)  # a confident paraphrase, no shared word
    assert p.relevance(0.35, 0.0) < 0.25  # ... although its fused relevance is low
    assert p.admits(0.0, 5.0)  # a keyword match alone
    assert not p.admits(0.2, 1.0)  # neither retriever convinced


DAY = 86_400.0


def test_score_gate_rejects_what_admits_rejects():
    p = RetrievalPolicy(min_relevance=0.25, dense_weight=0.4)
    common = {"kind": MemoryType.KNOWLEDGE, "age_seconds": 0.0}
    assert p.score(dense=0.2, bm25=1.0, **common) is None  # neither retriever convinced
    assert p.score(dense=-0.3, bm25=0.0, **common) is None
    paraphrase = p.score(dense=0.35, bm25=0.0, **common)  # fused relevance < threshold
    assert paraphrase is not None and paraphrase.relevance < 0.25 <= paraphrase.gate
    keyword_only = p.score(dense=0.0, bm25=5.0, **common)
    assert keyword_only is not None and keyword_only.gate == keyword_only.keyword
    for dense, bm25 in [(0.2, 1.0), (0.35, 0.0), (0.0, 5.0), (0.25, 0.0), (0.1, 3.0)]:
        assert (p.score(dense=dense, bm25=bm25, **common) is not None) == p.admits(dense, bm25)


def test_score_parts_are_the_policy_formula():
    p = RetrievalPolicy()
    age = 200 * DAY
    parts = p.score(dense=0.6, bm25=7.5, kind=MemoryType.PREFERENCE, age_seconds=age,
                    confidence=0.8, status=Status.PENDING_CONFIRMATION)
    assert parts is not None
    assert (parts.dense, parts.bm25, parts.confidence) == (0.6, 7.5, 0.8)
    assert parts.keyword == p.keyword_signal(7.5)
    assert parts.relevance == p.relevance(0.6, 7.5)
    assert parts.decay == p.decay_after(MemoryType.PREFERENCE, age) < 1.0
    assert parts.status_weight == p.weight_of(Status.PENDING_CONFIRMATION)
    # the parts multiply, in order, to the score - exactly, not approximately
    assert parts.relevance * parts.decay * parts.confidence * parts.status_weight == parts.score


def test_score_decay_follows_type_age_and_pinning():
    p = RetrievalPolicy()
    hl = p.half_life[MemoryType.EXPERIENCE]
    assert hl is not None

    def decay(kind: MemoryType, age: float, pinned: bool = False) -> float:
        parts = p.score(dense=0.9, bm25=0.0, kind=kind, age_seconds=age, pinned=pinned)
        assert parts is not None
        return parts.decay

    assert decay(MemoryType.EXPERIENCE, 0.0) == 1.0
    assert decay(MemoryType.EXPERIENCE, hl.total_seconds()) == pytest.approx(
        p.decay_floor + (1 - p.decay_floor) * 0.5)
    assert decay(MemoryType.EXPERIENCE, 1e6 * DAY) == pytest.approx(p.decay_floor)
    assert decay(MemoryType.EXPERIENCE, 1e6 * DAY, pinned=True) == 1.0  # pinned: no decay
    assert decay(MemoryType.PROFILE, 1e6 * DAY) == 1.0  # no half-life
    assert decay(MemoryType.EXPERIENCE, -DAY) == 1.0  # a clock skew is not a bonus
    older = p.score(dense=0.9, bm25=0.0, kind=MemoryType.EXPERIENCE, age_seconds=hl.total_seconds())
    newer = p.score(dense=0.9, bm25=0.0, kind=MemoryType.EXPERIENCE, age_seconds=0.0)
    assert older is not None and newer is not None and older.score < newer.score


def test_score_status_weight_ranks_demoted_and_expired_lower():
    p = RetrievalPolicy(status_weight={Status.DEMOTED: 0.3})

    def scored(status: Status, expired: bool = False) -> float:
        parts = p.score(dense=0.7, bm25=2.0, kind=MemoryType.RULE, age_seconds=0.0,
                        status=status, expired=expired)
        assert parts is not None
        assert parts.status_weight == p.weight_of(status, expired=expired)
        return parts.score

    active = scored(Status.ACTIVE)
    assert scored(Status.DEMOTED) == pytest.approx(0.3 * active)
    assert scored(Status.ACTIVE, expired=True) == scored(Status.DEMOTED)
    assert scored(Status.DEMOTED) < scored(Status.PENDING_CONFIRMATION) < active
    assert scored(Status.SUPERSEDED) == 0.0
