"""The jobs on real SQLite and PostgreSQL: what they change, record, dry-run and undo."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select

from memstrata import ManualClock, MemoryManager, MemoryType, Status
from memstrata.consolidation import Consolidator, RunNotFoundError
from memstrata.consolidation._tables import actions, leases, runs, sources
from memstrata.errors import InvalidInputError, LeaseHeldError, StateError
from memstrata.memory._schema import memories, memory_vectors
from memstrata.memory.episodic import Step
from memstrata.policies.retrieval import RetrievalPolicy

from ._helpers import rows, table, vectors


def pref(mm: MemoryManager, user: str, text: str, **fields) -> str:
    fields.setdefault("type", "preference")
    decision = mm.remember(user, text, **fields)
    assert decision.stored, decision
    assert decision.record_id is not None
    return decision.record_id


def copy_record(mm: MemoryManager, user: str, memory_id: str, new_id: str, **changes) -> None:
    """Insert a copy of a record the way another process or an import would (no write
    policy in the way)."""
    with mm.db.write() as conn:
        row = dict(conn.execute(select(memories).where(memories.c.id == memory_id)).one()._mapping)
        vec = dict(conn.execute(select(memory_vectors)
                                .where(memory_vectors.c.memory_id == memory_id)).one()._mapping)
        row.update(id=new_id, **changes)
        vec.update(memory_id=new_id)
        conn.execute(insert(memories).values(**row))
        conn.execute(insert(memory_vectors).values(**vec))


# ---------------------------------------------------------------- conflicts


def test_a_contradicted_preference_is_flagged_not_deleted(manager: MemoryManager,
                                                          jobs: Consolidator, clock):
    a = pref(manager, "alice", "I like jazz.")
    clock.advance(days=2)
    b = pref(manager, "alice", "I don't like jazz.")
    report = jobs.run("conflicts")
    assert report.status == "finished" and report.method == "offline"
    assert report.counts == {"flag_conflict": 2}
    ra, rb = manager.get("alice", a), manager.get("alice", b)
    assert ra.status is rb.status is Status.PENDING_CONFIRMATION
    assert ra.conflict_group == rb.conflict_group is not None
    (question,) = manager.briefing("alice").confirmations
    assert "I like jazz." in question.question and {r.id for r in question.records} == {a, b}
    # the user settles it; nothing was lost meanwhile
    manager.resolve_conflict("alice", keep=b)
    assert manager.get("alice", a).status is Status.SUPERSEDED
    again = jobs.run("conflicts")
    assert again.counts == {}


def test_a_free_text_correction_supersedes_with_history(manager: MemoryManager,
                                                        jobs: Consolidator, clock):
    old = pref(manager, "alice", "I prefer window seats on flights.", scope="travel")
    clock.advance(days=5)
    # written by another path (observe would supersede at once; see test_observe)
    new = pref(manager, "alice", "Actually, not window but aisle seats.", scope="travel")
    assert manager.get("alice", old).status is Status.ACTIVE  # the write path cannot see it
    report = jobs.run("conflicts")
    assert report.counts == {"supersede": 1, "link": 1}
    was = manager.get("alice", old)
    assert was.status is Status.SUPERSEDED and was.superseded_by == new
    assert manager.get("alice", new).supersedes == old
    assert [r.id for r in manager.history("alice", new)] == [old, new]
    hits = manager.recall("alice", "window or aisle seat?", scope="travel")
    assert [h.id for h in hits] == [new]  # the derived indexes followed (seq was stamped)


def test_duplicates_merge_keeping_counts_and_provenance(manager: MemoryManager,
                                                        jobs: Consolidator, clock):
    keep = pref(manager, "bob", "I prefer hotels near the city center.", session_id="s1")
    clock.advance(days=1)
    para = pref(manager, "bob", "I like staying in hotels close to the city centre.",
                session_id="s2")
    copy_record(manager, "bob", keep, "f" * 32, session_id="s3", access_count=4,
                created_at=manager.get("bob", keep).created_at.timestamp() + 7200,
                valid_from=manager.get("bob", keep).valid_from.timestamp() + 7200)
    other = pref(manager, "bob", "I like jazz.")
    report = jobs.run("conflicts")
    assert report.counts == {"merge": 2, "absorb": 1}
    kept = manager.get("bob", keep)
    assert kept.status is Status.ACTIVE
    assert sorted(kept.metadata["merged_from"]) == sorted([para, "f" * 32])
    assert kept.metadata["reinforced"] == 2
    assert {s.get("session_id") for s in kept.metadata["sources"]} == {"s2", "s3"}
    assert kept.access_count == 4
    for dup in (para, "f" * 32):
        gone = manager.get("bob", dup)
        assert gone.status is Status.SUPERSEDED and gone.superseded_by == keep
    assert manager.get("bob", other).status is Status.ACTIVE
    hits = manager.recall("bob", "hotel location", k=5)
    assert [h.id for h in hits if h.record.type is MemoryType.PREFERENCE
            and "hotel" in h.content] == [keep]


def test_chinese_duplicates_and_contradictions(manager: MemoryManager, jobs: Consolidator,
                                               clock):
    a = pref(manager, "wang", "我每天早上跑步")
    clock.advance(days=1)
    b = pref(manager, "wang", "我习惯每天早上去跑步")
    c = pref(manager, "wang", "我喜欢靠窗的座位")
    clock.advance(days=1)
    d = pref(manager, "wang", "我不喜欢靠窗的座位")
    report = jobs.run("conflicts")
    assert report.counts == {"merge": 1, "absorb": 1, "flag_conflict": 2}
    assert manager.get("wang", b).superseded_by == a
    assert manager.get("wang", c).status is manager.get("wang", d).status \
        is Status.PENDING_CONFIRMATION


# ---------------------------------------------------------------- dry run and undo


def _populate(manager: MemoryManager, clock: ManualClock) -> dict[str, str]:
    ids = {
        "jazz": pref(manager, "alice", "I like jazz."),
        "window": pref(manager, "alice", "I prefer window seats."),
        "peanut": pref(manager, "bob", "I'm allergic to peanuts.", type="profile"),
        "old": pref(manager, "carol", "I enjoy long walks on the beach."),
    }
    clock.advance(days=1)
    ids["nojazz"] = pref(manager, "alice", "I don't like jazz.")
    ids["aisle"] = manager.observe("alice", "s1", "user", "Actually, not window but aisle.",
                                   ).written[0]
    ids["allergy"] = pref(manager, "bob", "I have a peanut allergy.", type="profile")
    manager.observe("carol", "s2", "user", "I usually travel with my dog Rex.")
    manager.observe("carol", "s2", "user", "Find me a pet-friendly hotel in Lisbon.")
    task = manager.episodic.start_task("carol", "find a pet-friendly hotel", status="running")
    manager.episodic.record_step("carol", task.task_id, Step(action="search_hotels",
                                                             outcome="failure",
                                                             error_type="timeout"))
    manager.episodic.record_step("carol", task.task_id, Step(action="search_hotels_v2",
                                                             outcome="success"))
    manager.episodic.finish_task("carol", task.task_id, "done")
    clock.advance(days=200)  # carol's walk preference expired; alice's too
    return ids


def test_a_dry_run_changes_nothing(manager: MemoryManager, jobs: Consolidator, clock):
    _populate(manager, clock)
    watched = (memories, memory_vectors, actions, runs, leases, sources)
    before = [table(manager, t) for t in watched]
    for job in ("summarize", "conflicts", "expire"):
        report = jobs.run(job, dry_run=True)
        assert report.status == "dry_run" and report.run_id is None
        assert report.planned and report.counts
        assert sum(report.counts.values()) == len(report.planned)
    assert [table(manager, t) for t in watched] == before
    assert jobs.runs() == []


def test_undo_restores_exactly(manager: MemoryManager, jobs: Consolidator, clock):
    _populate(manager, clock)
    before_rows, before_vectors = rows(manager), vectors(manager)
    before_sources = table(manager, sources)
    done = [jobs.run(job) for job in ("summarize", "conflicts", "expire")]
    assert [r.status for r in done] == ["finished"] * 3
    assert all(r.total_actions for r in done)
    assert rows(manager) != before_rows
    for report in reversed(done):
        undo = jobs.undo(report.run_id)
        assert undo.status == "finished" and undo.errors == ()
        assert jobs.get_run(report.run_id).undone_by == undo.run_id
    assert rows(manager) == before_rows
    assert vectors(manager) == before_vectors
    assert table(manager, sources) == before_sources
    # the indexes followed: recall sees exactly the restored live records
    hits = manager.recall("alice", "jazz", k=5, record_use=False)
    assert {h.record.content for h in hits} >= {"I like jazz.", "I don't like jazz."}
    with pytest.raises(StateError):
        jobs.undo(done[0].run_id)
    with pytest.raises(InvalidInputError):
        jobs.undo(jobs.runs(job="undo")[0].run_id)
    with pytest.raises(RunNotFoundError):
        jobs.undo("nope")


def test_undo_leaves_records_changed_since_alone(manager: MemoryManager, jobs: Consolidator,
                                                 clock):
    a = pref(manager, "alice", "I like jazz.")
    clock.advance(days=1)
    b = pref(manager, "alice", "I don't like jazz.")
    report = jobs.run("conflicts")
    manager.resolve_conflict("alice", keep=b)  # the user answered after the run
    undo = jobs.undo(report.run_id)
    assert len(undo.errors) == 2 and all("changed since" in e for e in undo.errors)
    assert manager.get("alice", a).status is Status.SUPERSEDED
    assert manager.get("alice", b).status is Status.ACTIVE


def test_an_undone_action_is_not_planned_again_until_new_evidence_arrives(
        manager: MemoryManager, jobs: Consolidator, clock):
    """Issue 33: ``undo`` restored the records and the next run planned the same merge and
    the same conflict again. An undo is the user's (or operator's) decision about those
    records; a new record about the same thing is new evidence and is judged as usual."""
    keep = pref(manager, "bob", "I prefer hotels near the city center.")
    clock.advance(days=1)
    para = pref(manager, "bob", "I like staying in hotels close to the city centre.")
    a = pref(manager, "bob", "I like jazz.")
    clock.advance(days=1)
    b = pref(manager, "bob", "I don't like jazz.")
    first = jobs.run("conflicts")
    assert first.counts == {"merge": 1, "absorb": 1, "flag_conflict": 2}
    jobs.undo(first.run_id)
    assert {manager.get("bob", x).status for x in (keep, para, a, b)} == {Status.ACTIVE}
    again = jobs.run("conflicts", dry_run=True)
    assert again.counts == {}, again.counts
    assert jobs.run("conflicts").counts == {}
    assert {manager.get("bob", x).status for x in (keep, para, a, b)} == {Status.ACTIVE}
    # new evidence: a third statement of the hotel preference is merged as before
    clock.advance(days=1)
    third = pref(manager, "bob", "When I travel I like a hotel close to the centre of town.")
    later = jobs.run("conflicts")
    assert later.counts.get("merge"), later.counts
    assert manager.get("bob", third).status is Status.SUPERSEDED or \
        manager.get("bob", keep).status is Status.SUPERSEDED


def test_a_conflict_the_user_settled_as_both_true_is_not_flagged_again(
        manager: MemoryManager, jobs: Consolidator, clock):
    a = pref(manager, "alice", "I like jazz.")
    clock.advance(days=1)
    b = pref(manager, "alice", "I don't like jazz.")
    assert jobs.run("conflicts").counts == {"flag_conflict": 2}
    manager.resolve_conflict("alice", keep=b, keep_others=True)
    assert {manager.get("alice", x).status for x in (a, b)} == {Status.ACTIVE}
    assert jobs.run("conflicts").counts == {}
    assert {manager.get("alice", x).status for x in (a, b)} == {Status.ACTIVE}


# ---------------------------------------------------------------- expire


def test_expiry_demotes_then_deletes_on_the_right_days(manager: MemoryManager,
                                                       jobs: Consolidator, clock: ManualClock):
    start = clock.now()
    idle = pref(manager, "alice", "I prefer green tea.", confidence=0.8)
    used = pref(manager, "alice", "I prefer aisle seats.", confidence=0.8)
    pinned = pref(manager, "alice", "I prefer vegetarian meals.", pinned=True)
    rule = pref(manager, "alice", "Never book flights before 7am.", type="rule")

    def day(n: float) -> dict[str, int]:
        clock.set(start + timedelta(days=n))
        return jobs.run("expire").counts

    assert day(100) == {}
    manager.recall("alice", "aisle seats", k=1)  # a use at day 100: expiry -> day 280
    assert day(179.9) == {}
    assert day(180.1) == {"demote": 1}
    rec = manager.get("alice", idle)
    assert rec.status is Status.DEMOTED and rec.confidence == pytest.approx(0.4)
    assert manager.recall("alice", "green tea", k=3, record_use=False)[0].id == idle
    assert day(209.9) == {}
    assert day(210.1) == {"delete": 1}
    assert manager.get("alice", idle).status is Status.DELETED
    assert idle not in {h.id for h in manager.recall("alice", "green tea", k=5)}
    assert day(240.2) == {"purge": 1}
    assert day(280.1) == {"demote": 1}  # the used one, a TTL after its last use
    assert manager.get("alice", pinned).status is Status.ACTIVE
    assert manager.get("alice", rule).status is Status.ACTIVE
    # a demoted record that is used again is revived with its old confidence
    manager.recall("alice", "aisle seats", k=1)
    assert day(281) == {"revive": 1}
    back = manager.get("alice", used)
    assert back.status is Status.ACTIVE and back.confidence == pytest.approx(0.8)
    assert day(281.5) == {}


# ---------------------------------------------------------------- summarize


def test_summarize_folds_sessions_and_trajectories_once(manager: MemoryManager,
                                                        jobs: Consolidator, clock):
    for text in ("Hi!", "I need a hotel in Lisbon for my trip in May.",
                 "I prefer quiet hotels away from nightlife.", "Thanks!"):
        manager.observe("carol", "s1", "user", text, scope="travel")
        manager.observe("carol", "s1", "assistant", "Noted.", scope="travel")
    task = manager.episodic.start_task("carol", "book the Lisbon hotel", scope="travel",
                                       status="running")
    for step in (Step(action="search_hotels", outcome="error", error_type="timeout"),
                 Step(action="search_hotels", outcome="error", error_type="timeout"),
                 Step(action="search_hotels_backup", outcome="success")):
        manager.episodic.record_step("carol", task.task_id, step)
    manager.episodic.finish_task("carol", task.task_id, "done")
    # the finished task is folded at once; the session has not ended yet
    assert jobs.run("summarize").counts == {"lesson": 1, "mark_source": 1}
    clock.advance(hours=1)
    report = jobs.run("summarize")
    # the summary line; the unread statement about the user was kept by observe at once
    assert report.counts == {"summarize_session": 1, "mark_source": 1}
    (statement,) = manager.memories("carol", types=["knowledge"])
    assert statement.content == "I need a hotel in Lisbon for my trip in May."
    assert statement.source.value == "inferred" and statement.session_id == "s1"
    (summary,) = manager.memories("carol", types=["summary"])
    assert summary.scope == "travel" and summary.session_id == "s1"
    assert "\n" not in summary.content and "Lisbon" in summary.content
    assert "Thanks" not in summary.content
    (lesson,) = manager.memories("carol", types=["experience"])
    assert lesson.task_id == task.task_id
    assert "tried search_hotels: failed on timeout (x2)" in lesson.content
    assert "search_hotels_backup worked" in lesson.content and lesson.content.endswith("done")
    assert len(manager.episodic.turns("carol", "s1")) == 8  # originals kept
    assert jobs.run("summarize").counts == {}  # idempotent
    # the session goes on: a new summary supersedes the old one
    manager.observe("carol", "s1", "user", "Also I need parking for my car.", scope="travel")
    clock.advance(hours=1)
    assert jobs.run("summarize").counts == {"summarize_session": 1, "supersede": 1,
                                            "mark_source": 1}
    (fresh,) = manager.memories("carol", types=["summary"])
    assert fresh.supersedes == summary.id and "parking" in fresh.content
    assert manager.get("carol", summary.id).status is Status.SUPERSEDED
    brief = manager.briefing("carol", "travel", goal="book a hotel in Lisbon")
    assert lesson.id in {r.id for r in brief.lessons}


def test_offline_statements_rank_the_newest_first_and_can_be_switched_off(
        statements_at_night: MemoryManager, settings, clock):
    """Without an LLM, an unread statement about the user that ``observe`` did not keep
    (``keep_statements=False``, or a turn appended without it) is its own memory after the
    nightly summarize, dated when it was said: "How do I get to work?" finds the newer
    one first (inside one summary line per session it could not)."""
    manager = statements_at_night
    jobs = Consolidator(manager, settings=settings)
    manager.observe("dan", "s1", "user", "I take the 7:40 bus to work every morning.")
    clock.advance(days=30)
    jobs.run("summarize")
    manager.observe("dan", "s2", "user", "These days I cycle to work, it takes 25 minutes.")
    manager.observe("dan", "s2", "user", "Can you find me a bike shop?")  # a request: no
    clock.advance(hours=2)
    assert jobs.run("summarize").counts == {"summarize_session": 1, "extract": 1,
                                            "mark_source": 1}
    hits = manager.recall("dan", "How do I get to work?", record_use=False)
    knowledge = [h.content for h in hits if h.record.type is MemoryType.KNOWLEDGE]
    assert knowledge[0].startswith("These days I cycle")
    off = Consolidator(manager, settings=settings.model_copy(update={
        "offline_statements": False}))
    manager.observe("erin", "s1", "user", "I take the 7:40 bus to work every morning.")
    clock.advance(hours=2)
    assert off.run("summarize").counts == {"summarize_session": 1, "mark_source": 1}


def test_a_question_that_takes_the_users_own_thing_for_granted_is_kept_offline(
        statements_at_night: MemoryManager, settings, clock):
    """Reproduction (blind knowledge-update split heldout38, through ``observe`` and the
    nightly offline summarize): the new phone is named only in a question, so the new
    value was never a memory and "my phone" was answered by the old one - while the same
    turns stored by ``remember`` ranked the new phone first. A question that takes the
    user's own thing for granted is kept now; trivia is not."""
    # the nightly path for turns ``observe`` did not keep: the rules read none of these
    manager = statements_at_night
    jobs = Consolidator(manager, settings=settings)
    manager.observe("fay", "s1", "user", "My Pixel 7 battery is dead by like 3pm every day. "
                                         "Is that normal after a year and a half?")
    clock.advance(days=30)
    jobs.run("summarize")
    manager.observe("fay", "s2", "user", "how do i stop my iphone 15 screen from lighting up "
                                         "every time i get a notif, its driving me nuts at night")
    manager.observe("fay", "s2", "user", "do goldfish really have a 3 second memory")
    # (another user: two phones named at the same moment would tie for the newest)
    manager.observe("hal", "s1", "user", "mate60怎么打开应用分身啊 设置里翻了半天没找到")
    clock.advance(hours=2)
    assert jobs.run("summarize", user_id="fay").counts == {"summarize_session": 1,
                                                           "extract": 1, "mark_source": 1}
    kept = {r.content for r in manager.memories("fay", types=["knowledge"])}
    assert not any("goldfish" in k for k in kept)
    jobs.run("summarize", user_id="hal")
    assert [r.content[:6] for r in manager.memories("hal", types=["knowledge"])] == ["mate60"]
    hits = manager.recall("fay", "How do I take a scrolling screenshot on my phone?",
                          record_use=False)
    knowledge = [h.content for h in hits if h.record.type is MemoryType.KNOWLEDGE]
    assert "iphone 15" in knowledge[0]


def test_a_statement_kept_offline_is_admitted_by_one_of_its_sentences(
        statements_at_night: MemoryManager, settings, clock):
    """Records a job writes get a vector per sentence, as ``remember``'s do: a long turn
    that states the asked thing in one sentence and asks another passes the recall gate
    by that sentence (before, a job's records had none, and such a turn was never found)."""
    # the nightly path for turns ``observe`` did not keep: the rules read none of these
    manager = statements_at_night
    jobs = Consolidator(manager, settings=settings)
    turn = ("Finally drove my new Subaru Outback home from the dealer on Friday. Any tips "
            "for keeping the seats clean with a muddy dog?")
    manager.observe("gus", "s1", "user", turn)
    clock.advance(hours=2)
    jobs.run("summarize")
    (kept,) = manager.memories("gus", types=["knowledge"])
    assert kept.content == turn
    with manager.db.read() as conn:
        parts = conn.execute(select(memory_vectors.c.sentences).where(
            memory_vectors.c.memory_id == kept.id)).scalar_one()
    assert parts is not None
    question = "What car do I drive? The parking permit form wants the make and model."
    gate_only = RetrievalPolicy(answer_asked=False)
    assert kept.id in [h.id for h in manager.recall("gus", question, record_use=False,
                                                    policy=gate_only)]
    assert kept.id not in [h.id for h in manager.recall(
        "gus", question, record_use=False, policy=replace(gate_only, sentence_gate=False))]


# ---------------------------------------------------------------- isolation, leases, erasure


def test_no_job_touches_another_users_records(manager: MemoryManager, jobs: Consolidator,
                                              clock):
    for user in ("alice", "bob"):  # the same statements, word for word
        pref(manager, user, "I like jazz.")
        pref(manager, user, "I'm allergic to peanuts.", type="profile")
        manager.observe(user, "s1", "user", "I prefer quiet hotels.")
    clock.advance(days=1)
    for user in ("alice", "bob"):
        pref(manager, user, "I don't like jazz.")
        pref(manager, user, "I have a peanut allergy.", type="profile")
    clock.advance(days=200)
    bob_before = rows(manager, "bob")
    for job in ("summarize", "conflicts", "expire"):
        report = jobs.run(job, user_id="alice")
        assert report.only_user == "alice" and report.users == 1 and report.total_actions
    assert rows(manager, "bob") == bob_before
    with manager.db.read() as conn:
        touched = set(conn.execute(select(actions.c.user_id)).scalars())
    assert touched == {"alice"}
    # a run over everyone never links records across users
    jobs.run("conflicts")
    for record in rows(manager, "bob").values():
        for link in ("superseded_by", "supersedes"):
            if record[link]:
                assert manager.get("bob", record[link]).user_id == "bob"


def test_a_job_held_by_another_process_is_refused(manager: MemoryManager,
                                                  jobs: Consolidator, clock):
    from memstrata.consolidation import _lease

    with manager.db.write() as conn:
        _lease.acquire(conn, "conflicts", "otherhost:1:abc", now=clock.now().timestamp(),
                       ttl=60)
    with pytest.raises(LeaseHeldError):
        jobs.run("conflicts")
    assert jobs.run_scheduled("conflicts", clock.now()).status == "skipped"
    assert jobs.run("expire").status == "finished"  # other jobs are not blocked
    clock.advance(seconds=61)  # the holder died without renewing: its lease lapses
    assert jobs.run("conflicts").status == "finished"


def test_forget_user_erases_the_users_consolidation_rows(manager: MemoryManager,
                                                         jobs: Consolidator, clock):
    for user in ("alice", "bob"):
        pref(manager, user, "I like jazz.")
        manager.observe(user, "s1", "user", "I prefer quiet hotels.")
        clock.advance(days=1)
        pref(manager, user, "I don't like jazz.")
    clock.advance(hours=2)
    jobs.run("summarize")
    jobs.run("conflicts")
    counts = manager.forget_user("alice")
    assert counts["consolidation_actions"] > 0 and counts["consolidation_sources"] == 1
    with manager.db.read() as conn:
        left = set(conn.execute(select(actions.c.user_id)).scalars())
        left_sources = set(conn.execute(select(sources.c.user_id)).scalars())
    assert left == {"bob"} and left_sources == {"bob"}


def test_unknown_jobs_and_users_are_rejected(jobs: Consolidator):
    with pytest.raises(InvalidInputError):
        jobs.run("defrag")
    with pytest.raises(InvalidInputError):
        jobs.run("expire", user_id="")
    assert jobs.runs() == []


def test_a_user_erased_between_planning_and_applying_stays_erased(manager: MemoryManager,
                                                                  jobs: Consolidator, clock):
    from memstrata.consolidation._conflicts import ConflictsJob
    from memstrata.consolidation._summarize import SummarizeJob
    from memstrata.memory._schema import turns, users

    pref(manager, "alice", "I like jazz.")
    clock.advance(days=1)
    pref(manager, "alice", "I don't like jazz.")
    manager.observe("alice", "s1", "user", "I prefer quiet hotels.")
    clock.advance(hours=2)
    ctx = jobs._context(dry_run=False, run_id="r1", options={}, gate=None)
    conflicts, summarize = ConflictsJob(), SummarizeJob()
    with manager.db.read() as conn:
        c_plan = conflicts.plan(conn, ctx, "alice")
        s_plan = summarize.plan(conn, ctx, "alice")
    assert c_plan.actions and s_plan.payload.new
    manager.forget_user("alice")  # lands between the plan and the batch transaction
    with manager.changes() as txn:
        assert conflicts.apply(txn, ctx, c_plan).actions == []
        assert summarize.apply(txn, ctx, s_plan).actions == []
    assert rows(manager, "alice") == {}
    with manager.db.read() as conn:
        assert conn.execute(select(users).where(users.c.user_id == "alice")).first() is None
        assert conn.execute(select(turns).where(turns.c.user_id == "alice")).first() is None


def _summary_planned_with(manager: MemoryManager, jobs: Consolidator, clock, canary: str
                          ) -> tuple[str, Any, Any, Any]:
    """A session of alice's whose first turn forms a record holding ``canary``, and the
    nightly summary of it planned (not applied): ``(record id, job, context, plan)``."""
    from memstrata.consolidation._summarize import SummarizeJob

    obs = manager.observe("alice", "s1", "user", f"My email is {canary}@example.com.")
    manager.observe("alice", "s1", "user", "I prefer quiet hotels near the sea.")
    manager.observe("alice", "s1", "user", "Can you plan a weekend in Porto for me?")
    clock.advance(hours=2)
    ctx = jobs._context(dry_run=False, run_id="r1", options={}, gate=None)
    job = SummarizeJob()
    with manager.db.read() as conn:
        planned = job.plan(conn, ctx, "alice")
    assert any(canary in n.item.content for n in planned.payload.new), "the test is wrong"
    assert obs.written
    return obs.written[0], job, ctx, planned


def test_a_memory_forgotten_between_planning_and_applying_is_not_written_back(
        manager: MemoryManager, jobs: Consolidator, clock):
    """Issue 33: the nightly summary was planned from the session's turns, a ``forget``
    removed a record and its turn before the apply, and the apply (which checked only the
    session's last turn) wrote the summary quoting the forgotten turn."""
    canary = "zqmidrun7"
    record, job, ctx, planned = _summary_planned_with(manager, jobs, clock, canary)
    manager.forget("alice", record)  # lands between the plan and the apply
    with manager.changes() as txn:
        assert job.apply(txn, ctx, planned).actions == []
    assert not any(canary in r.content
                   for r in manager.memories("alice", statuses=list(Status), limit=100))
    # the next run folds what is left of the session, without the forgotten turn
    jobs.run("summarize")
    contents = [r.content for r in manager.memories("alice", statuses=list(Status), limit=100)]
    assert any(r.startswith("Session") for r in contents), contents
    assert not any(canary in c for c in contents)


#: the other process of the test below: it forgets one record of the user, and exits
_FORGET_CHILD = """
import sys
from memstrata import MemoryManager
url, index, user, record = sys.argv[1:5]
with MemoryManager.open(url, index_dir=index) as memory:
    memory.forget(user, record)
"""


def test_a_memory_forgotten_by_another_process_between_planning_and_applying_stays_gone(
        manager: MemoryManager, jobs: Consolidator, clock, db_url: str, tmp_path) -> None:
    """Issue 33: as above with the ``forget`` in another process (another connection, its
    own index and caches), on SQLite and PostgreSQL: the apply re-checks its sources inside
    its write transaction, so what another process forgot is not written back."""
    import os
    import subprocess
    import sys

    canary = "zqotherproc3"
    record, job, ctx, planned = _summary_planned_with(manager, jobs, clock, canary)
    done = subprocess.run(
        [sys.executable, "-c", _FORGET_CHILD, db_url, str(tmp_path / "index"), "alice",
         record],
        env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
        timeout=120)
    assert done.returncode == 0, done.stderr
    with manager.changes() as txn:
        assert job.apply(txn, ctx, planned).actions == []
    jobs.run("summarize")
    contents = [r.content for r in manager.memories("alice", statuses=list(Status), limit=100)]
    assert any(r.startswith("Session") for r in contents), contents
    assert not any(canary in c for c in contents)
    with manager.db.read() as conn:
        assert not [r for r in conn.execute(select(actions)).all() if canary in str(r)]


def test_a_merge_into_a_keeper_forgotten_between_planning_and_applying_keeps_the_copy(
        manager: MemoryManager, jobs: Consolidator, clock):
    """Issue 33: the keeper of a planned merge was forgotten before the apply; the copy was
    still superseded, pointing at the deleted keeper, so recall of the fact found nothing."""
    from memstrata.consolidation._conflicts import ConflictsJob

    keep = pref(manager, "bob", "I prefer hotels near the city center.")
    clock.advance(days=1)
    para = pref(manager, "bob", "I like staying in hotels close to the city centre.")
    ctx = jobs._context(dry_run=False, run_id="r1", options={}, gate=None)
    job = ConflictsJob()
    with manager.db.read() as conn:
        planned = job.plan(conn, ctx, "bob")
    merges = [a for a in planned.actions if a.action == "merge"]
    assert merges, "the test is wrong: nothing to merge"
    keeper = str(merges[0].after["superseded_by"])
    copy = para if keeper == keep else keep
    manager.forget("bob", keeper)  # lands between the plan and the apply
    with manager.changes() as txn:
        applied = job.apply(txn, ctx, planned)
    assert applied.actions == [] and applied.errors
    assert manager.get("bob", copy).status is Status.ACTIVE
    assert [h.id for h in manager.recall("bob", "hotel location", k=5)] == [copy]


def test_summarize_reads_a_batch_together_as_it_reads_each_user(manager: MemoryManager,
                                                                 jobs: Consolidator, clock):
    """A batch is read in a few statements for all its users (one read transaction, one
    embedding call); the plans are the ones reading each user alone gives - users
    sharing session ids, a session folded before and continued, tasks done, failed
    long ago and failed just now."""
    import numpy as np

    from memstrata.consolidation._summarize import SummarizeJob

    for n, user in enumerate(("ann", "bob", "cy", "dee")):
        for k in range(n + 1):
            manager.observe(user, "s1", "user", f"I live in city number {k} of {user}.")
            manager.observe(user, "s1", "assistant", "Noted.")
        manager.observe(user, f"own-{user}", "user", f"I prefer tea number {n}.")
        if n % 2 == 0:
            task = manager.episodic.start_task(user, f"book for {user}", status="running")
            manager.episodic.record_step(user, task.task_id,
                                         Step(action="search", outcome="success"))
            manager.episodic.finish_task(user, task.task_id, "done" if n else "failed")
    clock.advance(hours=1)
    jobs.run("summarize", user_id="ann")  # ann's session folded once ...
    manager.observe("ann", "s1", "user", "Also I need parking for my car.")  # ... continued
    manager.episodic.start_task("cy", "still running", status="running")
    failed = manager.episodic.start_task("dee", "failed just now", status="running")
    manager.episodic.record_step("dee", failed.task_id, Step(action="x", outcome="error"))
    clock.advance(hours=1)
    manager.episodic.finish_task("dee", failed.task_id, "failed")
    job = SummarizeJob()
    ctx = jobs._context(dry_run=True, run_id=None, options={}, gate=None)
    users = ["ann", "bob", "cy", "dee", "nobody"]
    together = job.plan_batch(manager.db, ctx, users)
    with manager.db.read() as conn:
        alone = [job.plan(conn, ctx, u) for u in users]
    assert [p.user_id for p in together] == users
    assert sum(len(p.actions) for p in together) >= 8
    for a, b in zip(together, alone, strict=True):
        assert [(x.action, x.after) for x in a.actions] == [(x.action, x.after)
                                                          for x in b.actions]
        assert a.errors == b.errors
        news_a, news_b = (p.payload.new if p.payload else [] for p in (a, b))
        assert [(x.source, x.replaces) for x in news_a] == [(x.source, x.replaces)
                                                            for x in news_b]
        for x, y in zip(news_a, news_b, strict=True):
            assert np.allclose(x.vector, y.vector, atol=1e-5)
    # the continued session replaces its first summary; the task failed just now waits
    ann = together[0].payload.new
    assert any(x.replaces for x in ann if x.action == "summarize_session")
    dee = [x for x in together[3].payload.new if x.action == "lesson"]
    assert len(dee) == 0 and [x.action for x in together[2].payload.new].count("lesson") == 1
    # what each user reads is theirs alone
    for p in together:
        for x in p.actions:
            assert all(other not in x.after["content"] for other in users if other != p.user_id)


@pytest.mark.parametrize("held, near, question, value", [
    pytest.param(
        "I bank with Chase and their app logs me out like every two minutes, it's driving me "
        "nuts. Is there a fix?", "is ally bank legit? keep seeing ads for their high yield "
        "savings everywhere", "Which bank should I call to dispute a weird charge on my "
        "debit card?", "Chase",
        marks=pytest.mark.xfail(strict=True, reason=(
            "known, measured: every unread statement is kept (at once by observe since "
            "issue 32 item 7, before by the offline summary); dropping those the reader "
            "reads as an offer or a plan of a held attribute saved 3 of 15 such losses on "
            "the cases it was written on and none on the next 12 of each set (10 lost "
            "either way, 4 fewer updates gained; with model-5b111323b1cf): "
            "results/never_worse*.json"))),
    ("I've got a Pixel 7 and the battery has been draining really fast lately. Any settings "
     "I should check?", "honest question, is the iphone 15 pro night mode actually that much "
     "better or is it all marketing", "I need to order a case online, which phone model do I "
     "have again?", "Pixel 7"),
])
def test_a_statement_kept_as_its_own_memory_does_not_outrank_a_held_value(
        manager: MemoryManager, jobs: Consolidator, clock, held: str, near: str,
        question: str, value: str):
    """Issue 33 (bench_never_worse: 15 of 228 no-change questions lost by summarize): an
    unread statement about the attribute the user holds, kept as its own memory, that the
    reader had read as not the user's own (a bank asked about, a phone compared) outranked
    the held value. It is kept at once by ``observe`` now; right after it and after the
    nightly summary the held value comes first."""
    manager.observe("dana", "s1", "user", held)
    clock.advance(days=30)
    manager.observe("dana", "s2", "user", near)
    assert manager.recall("dana", question, k=3)[0].record.content == held
    clock.advance(days=1)
    jobs.run("summarize")
    assert manager.recall("dana", question, k=3)[0].record.content == held
