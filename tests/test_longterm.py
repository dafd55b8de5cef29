"""The long-term store suite: runs on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from memstrata import ManualClock, MemoryInput, MemoryManager, MemoryType, Slot, Status
from memstrata.errors import (
    MemoryNotFoundError,
    NotInConflictError,
)
from memstrata.memory._schema import memories, memory_events, memory_vectors
from memstrata.reading.stance import stance_of, stored_stance


def count(mm: MemoryManager, table=memories, user: str | None = None) -> int:
    query = select(func.count()).select_from(table)
    if user is not None:
        query = query.where(table.c.user_id == user)
    with mm.db.read() as conn:
        return int(conn.execute(query).scalar_one())


def test_remember_then_get_round_trips_every_field(manager: MemoryManager, clock: ManualClock):
    decision = manager.remember(
        "alice",
        "I prefer window seats on long flights",
        type="preference",
        scope="travel",
        confidence=0.9,
        importance=0.7,
        session_id="s1",
        task_id="t1",
        step_id="3",
        metadata={"lang": "en"},
    )
    assert decision.outcome == "written" and decision.stored
    record = manager.get("alice", decision.record_id)
    assert record.content == "I prefer window seats on long flights"
    assert record.type is MemoryType.PREFERENCE and record.scope == "travel"
    assert record.status is Status.ACTIVE
    assert (record.session_id, record.task_id, record.step_id) == ("s1", "t1", "3")
    assert record.confidence == pytest.approx(0.9)
    # the caller's metadata, the reader's readings of what the user stated, and its stance
    assert {k: v for k, v in record.metadata.items()
            if k not in ("read_by", "readings", "stance")} == {"lang": "en"}
    assert record.metadata["read_by"] == manager.reader.version
    assert stored_stance(record.metadata, record.content) == stance_of(record.content)
    assert record.created_at == clock.now() and record.valid_from == clock.now()
    assert record.valid_to is None
    assert record.expires_at == clock.now() + manager.settings.retention.ttl_for(
        MemoryType.PREFERENCE
    )
    assert count(manager, memory_vectors) == 1


def test_write_policy_decisions_are_returned_with_reasons(manager: MemoryManager):
    first = manager.remember("u", "My daughter is allergic to peanuts", type="profile")
    assert first.outcome == "written"
    exact = manager.remember("u", "my daughter is allergic to peanuts ", type="profile")
    assert exact.outcome == "reinforced" and exact.record_id == first.record_id
    assert "exact duplicate" in exact.reason
    near = manager.remember("u", "My daughter is allergic to peanuts.", type="profile")
    assert near.outcome == "reinforced" and near.record_id == first.record_id
    assert manager.remember("u", "Thanks, see you!").outcome == "dropped_not_memorable"
    mood = manager.remember("u", "This restaurant is awful")
    assert mood.outcome == "dropped_not_memorable" and "mood" in mood.reason
    low = manager.remember("u", "Maybe likes jazz", confidence=0.2)
    assert low.outcome == "dropped_low_confidence"
    temp = manager.remember("u", "current step: comparing prices", ephemeral=True)
    assert temp.outcome == "dropped_not_memorable"
    guess = manager.remember("u", "Retrying the API fixes timeouts", type="experience")
    assert guess.outcome == "dropped_not_memorable" and "verified" in guess.reason
    lesson = manager.remember(
        "u", "Retrying the API fixes timeouts", type="experience", verified=True
    )
    assert lesson.outcome == "written"
    assert count(manager) == 2
    reinforced = manager.get("u", first.record_id)
    assert reinforced.metadata["reinforced"] == 2


def test_near_duplicate_with_a_flipped_number_is_not_merged(manager: MemoryManager):
    a = manager.remember("u", "My budget for the trip is 2000 euros", type="preference")
    b = manager.remember("u", "My budget for the trip is 3000 euros", type="preference")
    assert a.outcome == b.outcome == "written"


def test_slot_conflict_is_pending_until_resolved(manager: MemoryManager):
    old = manager.remember(
        "u", "I pay with Alipay", type="profile", slot=("u", "payment method", "Alipay")
    )
    new = manager.remember(
        "u", "I pay with a Visa card", type="profile", slot=("u", "payment method", "Visa")
    )
    assert new.outcome == "conflict" and new.related_ids == (old.record_id,)
    groups = manager.conflicts("u")
    assert len(groups) == 1
    assert {r.id for r in groups[0]} == {old.record_id, new.record_id}
    assert all(r.status is Status.PENDING_CONFIRMATION for r in groups[0])
    same = manager.remember(
        "u", "Visa is how I pay", type="profile", slot=("u", "Payment Method", "visa")
    )
    assert same.outcome == "reinforced" and same.record_id == new.record_id

    kept = manager.resolve_conflict("u", new.record_id)
    assert kept.status is Status.ACTIVE
    loser = manager.get("u", old.record_id)
    assert loser.status is Status.SUPERSEDED and loser.superseded_by == new.record_id
    assert manager.conflicts("u") == []
    with pytest.raises(NotInConflictError):
        manager.resolve_conflict("u", new.record_id)
    hits = manager.recall("u", "how do I pay?", record_use=False)
    assert [h.id for h in hits] == [new.record_id]


def test_explicit_correction_supersedes_and_keeps_history(
    manager: MemoryManager, clock: ManualClock
):
    first = manager.remember(
        "u", "I live in Berlin", type="profile", slot=("u", "city", "Berlin")
    )
    clock.advance(days=30)
    second = manager.remember(
        "u", "Actually I moved to Munich", type="profile", slot=("u", "city", "Munich"),
        correction=True,
    )
    assert second.outcome == "corrected" and second.related_ids == (first.record_id,)
    chain = manager.history("u", second.record_id)
    assert [r.id for r in chain] == [first.record_id, second.record_id]
    assert chain[0].status is Status.SUPERSEDED
    assert chain[0].valid_to == chain[1].valid_from == clock.now()
    assert chain[1].supersedes == first.record_id
    assert manager.history("u", first.record_id) == chain
    assert [r.value for r in (x.slot for x in manager.lookup("u", attribute="city")) if r] == [
        "Munich"
    ]


def test_newest_wins_mode_supersedes_without_confirmation(
    db_url: str, embedder, clock: ManualClock, tmp_path
):
    from memstrata import ConflictPolicy

    with MemoryManager.open(
        db_url, embedder=embedder, clock=clock, conflict=ConflictPolicy("newest_wins"),
        index_dir=tmp_path / "ix",
    ) as mm:
        mm.remember("u", "Tea please", type="preference", slot=("u", "drink", "tea"))
        d = mm.remember("u", "Coffee please", type="preference", slot=("u", "drink", "coffee"))
        assert d.outcome == "corrected"
        assert mm.conflicts("u") == []


def test_recall_ranks_filters_and_thresholds(manager: MemoryManager):
    manager.remember_many(
        "u",
        [
            MemoryInput(content="I prefer window seats on long flights", type="preference",
                        scope="travel"),
            MemoryInput(content="Book quiet hotels away from nightlife", type="preference",
                        scope="travel"),
            MemoryInput(content="My laptop is a ThinkPad X1 Carbon", type="profile",
                        scope="tech"),
            MemoryInput(content="The quarterly report is due every March", type="rule",
                        scope="work"),
        ],
    )
    hits = manager.recall("u", "which seat should I book on the plane?", record_use=False)
    assert hits and hits[0].content == "I prefer window seats on long flights"
    assert all(h.relevance >= manager.settings.retrieval.min_relevance for h in hits)
    assert hits == sorted(hits, key=lambda h: -h.score)
    # scopes are scenes: nothing crosses unless asked
    tech = manager.recall("u", "which seat should I book on the plane?", scope="tech",
                          record_use=False)
    assert all(h.record.scope == "tech" for h in tech)
    only_rules = manager.recall("u", "report deadline", types=["rule"], record_use=False)
    assert [h.record.type for h in only_rules] == [MemoryType.RULE]
    assert len(manager.recall("u", "travel preferences", k=1, record_use=False)) <= 1
    # noise is worse than absence
    assert manager.recall("u", "quantum chromodynamics lattice gauge", record_use=False) == []
    assert manager.recall("nobody", "anything") == []


def test_recall_counts_as_use_and_extends_expiry(manager: MemoryManager, clock: ManualClock):
    d = manager.remember("u", "I am vegetarian", type="preference")
    before = manager.get("u", d.record_id)
    clock.advance(days=100)
    manager.recall("u", "what do I eat?", record_use=False)
    assert manager.get("u", d.record_id).access_count == 0
    hits = manager.recall("u", "what food does the user eat? vegetarian")
    assert hits[0].id == d.record_id and hits[0].record.access_count == 1
    after = manager.get("u", d.record_id)
    assert after.access_count == 1 and after.last_accessed_at == clock.now()
    assert after.expires_at is not None and before.expires_at is not None
    assert after.expires_at > before.expires_at
    assert after.expires_at == clock.now() + manager.settings.retention.ttl_for(
        MemoryType.PREFERENCE
    )


def test_decay_ranks_older_equal_memories_lower(manager: MemoryManager, clock: ManualClock):
    old = manager.remember("u", "Team standup happens at 9am on Mondays", type="knowledge",
                           scope="a")
    clock.advance(days=150)  # within the knowledge TTL, well into its half-life
    new = manager.remember("u", "Team standup happens at 9am on Mondays", type="knowledge",
                           scope="b")
    hits = manager.recall("u", "when is the team standup?", record_use=False)
    assert [h.id for h in hits[:2]] == [new.record_id, old.record_id]
    assert hits[1].decay < hits[0].decay == pytest.approx(1.0)
    assert hits[1].relevance == pytest.approx(hits[0].relevance, abs=1e-3)


def test_expiry_is_honoured_at_recall(manager: MemoryManager, clock: ManualClock):
    ttl = manager.settings.retention.ttl_for(MemoryType.EXPERIENCE)
    grace = manager.settings.retention.grace
    d = manager.remember("u", "The billing API times out under load; retry with backoff",
                         type="experience", verified=True)
    pinned = manager.remember("u", "Billing API keys rotate monthly", type="experience",
                              verified=True)
    manager.pin("u", pinned.record_id)
    clock.advance(ttl + timedelta(days=1))
    hits = {h.id: h for h in manager.recall("u", "billing API timeouts", record_use=False)}
    assert hits[d.record_id].status_weight == manager.settings.retrieval.weight_of(
        Status.DEMOTED
    )
    assert hits[pinned.record_id].status_weight == 1.0
    clock.advance(grace)
    hits = {h.id: h for h in manager.recall("u", "billing API timeouts", record_use=False)}
    assert d.record_id not in hits and pinned.record_id in hits


def test_users_never_see_each_other(manager: MemoryManager):
    secret = manager.remember("alice", "My bank PIN hint is the cat's name", type="profile")
    manager.remember("bob", "Bob likes sailing", type="preference")
    assert manager.recall("bob", "bank PIN hint cat name", min_relevance=0.0) != []
    assert all(h.record.user_id == "bob" for h in manager.recall(
        "bob", "bank PIN hint cat name", min_relevance=0.0))
    for call in (
        lambda: manager.get("bob", secret.record_id),
        lambda: manager.history("bob", secret.record_id),
        lambda: manager.forget("bob", secret.record_id),
        lambda: manager.pin("bob", secret.record_id),
    ):
        with pytest.raises(MemoryNotFoundError):
            call()
    assert manager.get("alice", secret.record_id).content.startswith("My bank")
    # a duplicate across users is two records, not a reinforcement
    assert manager.remember("bob", "My bank PIN hint is the cat's name",
                            type="profile").outcome == "written"


def test_forget_removes_everywhere_and_records_without_content(manager: MemoryManager):
    a = manager.remember("u", "I live in Berlin", type="profile", slot=("u", "city", "Berlin"))
    b = manager.remember("u", "I moved to Munich", type="profile",
                         slot=("u", "city", "Munich"), correction=True)
    keep = manager.remember("u", "I like the Munich beer gardens", type="preference")
    assert manager.recall("u", "Munich", record_use=False)
    wm = manager.working("u", "s1")
    wm.set("city", "Munich")
    wm.promote("city", type="profile", slot=("u", "city", "Munich"))
    deleted = manager.forget("u", b.record_id, reason="user asked")
    assert set(deleted) == {a.record_id, b.record_id}
    assert "city" not in wm
    for rid in deleted:
        with pytest.raises(MemoryNotFoundError):
            manager.get("u", rid)
    assert count(manager, memory_vectors) == 1
    assert manager.keyword_index.size("u") == 1
    hits = manager.recall("u", "where do I live? Berlin Munich", min_relevance=0.0,
                          record_use=False)
    assert [h.id for h in hits] == [keep.record_id]
    with manager.db.read() as conn:
        events = conn.execute(
            select(memory_events).where(memory_events.c.action == "forgotten")
        ).all()
    assert {e.memory_id for e in events} == set(deleted)
    for e in events:
        assert "Berlin" not in str(e.details) and "Munich" not in str(e.details)
        assert e.reason == "user asked"


def test_forget_user_erases_every_layer(manager: MemoryManager):
    manager.remember("gone", "I like green tea", type="preference")
    manager.episodic.append_turn("gone", "s1", "user", "hello there, I like green tea")
    task = manager.episodic.start_task("gone", "plan a trip")
    manager.episodic.record_step("gone", task.task_id, {"thought": "search flights"})
    manager.working("gone", "s1").set("budget", 2000)
    manager.remember("stay", "I like black coffee", type="preference")
    counts = manager.forget_user("gone")
    assert counts["memories"] == 1 and counts["turns"] == 1 and counts["tasks"] == 1
    assert counts["working_sessions"] == 1
    assert count(manager, user="gone") == 0
    assert count(manager, memory_vectors, user="gone") == 0
    assert manager.recall("gone", "green tea") == []
    assert manager.vector_index.watermark("gone") is None
    assert manager.working("gone", "s1").get("budget") is None
    assert manager.episodic.turns("gone") == []
    assert [h.content for h in manager.recall("stay", "coffee")] == ["I like black coffee"]
    with manager.db.read() as conn:
        erased = conn.execute(
            select(memory_events).where(memory_events.c.action == "user_erased")
        ).one()
    assert "green tea" not in str(erased.details)


def test_pin_stops_decay(manager: MemoryManager, clock: ManualClock):
    d = manager.remember("u", "My blood type is O negative", type="knowledge")
    manager.pin("u", d.record_id)
    clock.advance(days=3000)
    hit = manager.recall("u", "blood type", record_use=False)[0]
    assert hit.decay == 1.0 and hit.record.pinned


def test_batch_write_sees_its_own_earlier_items(manager: MemoryManager):
    decisions = manager.remember_many(
        "u",
        [
            {"content": "I live in Paris", "type": "profile", "slot": ("u", "city", "Paris")},
            {"content": "I live in Lyon", "type": "profile", "slot": ("u", "city", "Lyon")},
            {"content": "I enjoy long walks by the river", "type": "preference"},
            {"content": "I enjoy long walks by the river", "type": "preference"},
        ],
    )
    assert [d.outcome for d in decisions] == ["written", "conflict", "written", "reinforced"]
    assert decisions[1].related_ids == (decisions[0].record_id,)
    assert decisions[3].record_id == decisions[2].record_id


def test_second_manager_on_same_database_sees_new_writes(
    db_url: str, embedder, clock: ManualClock, tmp_path
):
    with (
        MemoryManager.open(db_url, embedder=embedder, clock=clock,
                           index_dir=tmp_path / "a") as a,
        MemoryManager.open(db_url, embedder=embedder, clock=clock,
                           index_dir=tmp_path / "b") as b,
    ):
        a.remember("u", "I collect vintage fountain pens", type="preference")
        assert [h.content for h in b.recall("u", "fountain pens")] == [
            "I collect vintage fountain pens"
        ]
        rid = b.recall("u", "fountain pens")[0].id
        b.forget("u", rid)
        assert a.recall("u", "fountain pens") == []


def test_slot_lookup_is_by_fields(manager: MemoryManager):
    manager.remember("u", "Alice is 34 years old", type="profile", slot=("alice", "age", "34"))
    manager.remember("u", "Bob is 40", type="profile", slot=Slot("bob", "age", "40"))
    ages = manager.lookup("u", attribute="age")
    assert {r.slot.value for r in ages if r.slot} == {"34", "40"}
    assert [r.slot.value for r in manager.lookup("u", subject="Alice", attribute="AGE")
            if r.slot] == ["34"]


PARAPHRASES = [
    ("I prefer aisle seats, I get up a lot", "Where should he sit on the plane?"),
    ("My daughter Emma starts school in September", "When does the kid begin classes?"),
    ("I work as a nurse at the city hospital", "What is her job?"),
    ("We adopted a golden retriever named Max", "Do they have any pets?"),
    ("I'm vegetarian", "What can I cook for dinner?"),
    ("My sister lives in Toronto", "Where is her family based?"),
    ("I hate waking up early, never book flights before 9am",
     "When should the morning flight leave?"),
]


def test_paraphrased_facts_are_recalled_and_noise_is_not(manager: MemoryManager):
    """Facts that share no word with the question still come back; unrelated questions
    get nothing (the relevance gate is on the strongest signal, not the fused one)."""
    manager.remember_many("u", [MemoryInput(content=m, type="preference")
                                for m, _ in PARAPHRASES])
    for memory, question in PARAPHRASES:
        hits = manager.recall("u", question, record_use=False)
        assert hits and hits[0].content == memory, question
    for question in ("quantum chromodynamics lattice gauge", "What is the capital of Peru?",
                     "stock prices of semiconductor companies"):
        assert manager.recall("u", question, record_use=False) == [], question


def _ranking_workload(manager: MemoryManager, clock: ManualClock) -> None:
    manager.remember("u", "The team standup is at 9am on Mondays", type="knowledge", scope="a",
                     confidence=0.7)
    clock.advance(days=120)
    manager.remember("u", "Standup moved to 9:30 because of the school run", type="event",
                     scope="b")
    manager.remember("u", "I like short standups", type="preference", scope="a",
                     confidence=0.9)
    manager.remember("u", "Never schedule meetings before the standup", type="rule",
                     scope="b", pinned=True)
    manager.remember("u", "The standup note-taker rotates weekly", type="experience",
                     scope="a", verified=True, ttl=timedelta(days=5))
    clock.advance(days=10)  # the experience is expired now: it weighs as demoted


def test_recall_hit_parts_multiply_to_the_score_and_rank_as_before(
    manager: MemoryManager, clock: ManualClock
):
    from dataclasses import replace

    from memstrata.clock import to_epoch

    _ranking_workload(manager, clock)
    # the per-record formula; comparing candidates with each other (an older statement
    # outdated by a newer one about the same thing) is tested in test_recall_current.py
    policy = replace(manager.settings.retrieval, outdated_weight=1.0)
    hits = manager.recall("u", "when is the standup meeting?", min_relevance=0.0, k=10,
                          record_use=False, policy=policy)
    assert len(hits) == 5
    assert any(h.status_weight < 1.0 for h in hits) and any(h.decay < 1.0 for h in hits)
    now = to_epoch(clock.now())
    for hit in hits:
        p, rec = hit.parts, hit.record
        assert (p.relevance * p.decay * p.confidence * p.status_weight * p.currency
                * p.range_weight == p.score == hit.score)
        assert (hit.relevance, hit.dense, hit.keyword, hit.decay, hit.status_weight) == (
            p.relevance, p.dense, p.keyword, p.decay, p.status_weight)
        # the formula recall used before it moved into RetrievalPolicy.score
        last_used = max(to_epoch(rec.created_at), to_epoch(rec.last_accessed_at or rec.created_at))
        expired = rec.expires_at is not None and rec.expires_at <= clock.now()
        before = (policy.relevance(p.dense, p.bm25)
                  * policy.decay_after(rec.type, now - last_used, pinned=rec.pinned)
                  * rec.confidence
                  * policy.weight_of(rec.status, expired=expired))
        assert hit.score == pytest.approx(before, rel=1e-12)
        assert p.keyword == policy.keyword_signal(p.bm25)
    assert [h.id for h in hits] == [h.id for h in sorted(hits, key=lambda h: (-h.score, h.id))]


class _Reversed:
    """Reorders (worst first) and drops the first-stage winner."""

    def __init__(self) -> None:
        self.offered: list[str] = []

    def rerank(self, query, hits):
        from dataclasses import replace

        self.offered = [h.id for h in hits]
        return [replace(h, score=float(i)) for i, h in enumerate(reversed(hits[1:]))]


def test_a_reranker_reorders_and_drops_among_the_candidates(
    manager: MemoryManager, clock: ManualClock
):
    _ranking_workload(manager, clock)
    plain = manager.recall("u", "when is the standup meeting?", min_relevance=0.0, k=10,
                           record_use=False)
    reranker = _Reversed()
    hits = manager.longterm.recall("u", "when is the standup meeting?", min_relevance=0.0,
                                  k=2, reranker=reranker)
    # it saw every candidate, not only the top 2, and its order and scores are final
    assert reranker.offered == [h.id for h in plain]
    assert [h.id for h in hits] == [plain[-1].id, plain[-2].id]
    assert [h.score for h in hits] == [0.0, 1.0]
    assert hits[0].parts == plain[-1].parts  # the first stage's explanation is kept
    # only what it returned counts as used
    used = {h.id for h in hits}
    for h in plain:
        assert manager.get("u", h.id).access_count == (1 if h.id in used else 0)


def test_recall_rejects_a_reranker_that_adds_or_changes_records(manager: MemoryManager,
                                                                clock: ManualClock):
    from dataclasses import replace

    from memstrata.errors import InvalidInputError

    _ranking_workload(manager, clock)
    outsider = manager.remember("u", "Quarterly taxes are due in April", type="rule")
    assert outsider.record_id is not None
    extra = manager.get("u", outsider.record_id)

    class Adds:
        def rerank(self, query, hits):
            return [*hits, replace(hits[0], record=extra)]

    class Changes:
        def rerank(self, query, hits):
            return [replace(hits[0], record=replace(hits[0].record, content="edited"))]

    class Repeats:
        def rerank(self, query, hits):
            return [hits[0], hits[0]]

    for bad in (Adds(), Changes(), Repeats()):
        with pytest.raises(InvalidInputError):
            manager.longterm.recall("u", "when is the standup meeting?", reranker=bad)
    # a rejected rerank counts nothing as used
    assert all(r.access_count == 0 for r in manager.memories("u"))


def test_slot_cap_reranker_keeps_one_hit_per_slot(manager: MemoryManager):
    from memstrata.memory.rerank import SlotCapReranker

    for scope, city in (("home", "Berlin"), ("work", "Munich")):
        manager.remember("u", f"I live in {city}", type="profile", scope=scope,
                         slot=Slot("user", "city", city))
    manager.remember("u", "I moved cities last year and live near the river", type="event")
    query = "which city do I live in?"
    plain = manager.recall("u", query, min_relevance=0.0, record_use=False)
    capped = manager.longterm.recall("u", query, min_relevance=0.0, record_use=False,
                                     reranker=SlotCapReranker())
    slotted = [h for h in plain if h.record.slot is not None]
    assert len(slotted) == 2
    assert [h.id for h in capped] == [h.id for h in plain if h.id != slotted[1].id]
    assert [h.score for h in capped] == [h.score for h in plain if h.id != slotted[1].id]
    with pytest.raises(ValueError):
        SlotCapReranker(per_slot=0)
