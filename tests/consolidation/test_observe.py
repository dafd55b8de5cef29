"""MemoryManager.observe: raw turns appended, candidates through the write policy."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from memstrata import ManualClock, MemoryManager, MemoryType, Status
from memstrata.errors import InvalidInputError, MissingUserError, UnknownScopeError
from memstrata.memory._schema import memories, turns
from memstrata.memory.embedder import Embedder


def count(mm: MemoryManager, table=memories) -> int:
    with mm.db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_observe_appends_the_turn_and_writes_an_explicit_preference(manager: MemoryManager):
    obs = manager.observe("alice", "s1", "user", "I prefer window seats on long flights.",
                          scope="travel")
    assert [d.outcome for d in obs.decisions] == ["written"]
    record = manager.get("alice", obs.written[0])
    assert record.type is MemoryType.PREFERENCE and record.scope == "travel"
    assert record.session_id == "s1" and record.metadata["turn_id"] == obs.turn_id
    (turn,) = manager.episodic.turns("alice", "s1")
    assert turn.id == obs.turn_id and turn.text == "I prefer window seats on long flights."
    assert turn.metadata == {"scope": "travel", "fast_extracted": 1}
    hits = manager.recall("alice", "which seat do I like on planes?", scope="travel")
    assert hits and hits[0].id == record.id


def test_small_talk_and_one_off_moods_are_not_written(manager: MemoryManager):
    for text in ("Hi there!", "Thanks, see you!", "This restaurant is awful", "ok cool",
                 "what's the weather like tomorrow?"):
        obs = manager.observe("alice", "s1", "user", text)
        assert obs.candidates == () and obs.decisions == ()
    mood = manager.observe("alice", "s1", "user", "I love this song!")
    assert [d.outcome for d in mood.decisions] == ["dropped_low_confidence"]
    assert count(manager) == 0
    assert count(manager, turns) == 6
    assert all(t.metadata["fast_extracted"] == 0 for t in manager.episodic.turns("alice")[:5])
    assert not any("kept_as_statement" in t.metadata for t in manager.episodic.turns("alice"))


@pytest.mark.xfail(strict=True, reason=(
    "known misreading of the frozen rules' statement judgement (reading.statements."
    "worth_keeping): a one-off request that names the user ('Book me a table for two at 8') "
    "reads as telling of the user's own state, so observe keeps it as a statement, as the "
    "nightly summarize already did; to be fixed with a trained judgement, not a pattern"))
def test_a_one_off_request_is_not_kept_as_a_statement(manager: MemoryManager):
    obs = manager.observe("alice", "s1", "user", "Book me a table for two at 8")
    assert obs.decisions == ()


def test_assistant_turns_are_stored_but_never_read_as_user_facts(manager: MemoryManager):
    obs = manager.observe("alice", "s1", "assistant", "I prefer to answer briefly.")
    assert obs.decisions == () and count(manager) == 0 and count(manager, turns) == 1


def test_an_explicit_correction_supersedes_at_once_with_history(manager: MemoryManager, clock):
    first = manager.observe("alice", "s1", "user", "I live in Berlin.")
    clock.advance(days=3)
    moved = manager.observe("alice", "s2", "user", "I moved to Munich last month.")
    assert [d.outcome for d in moved.decisions] == ["corrected"]
    old = manager.get("alice", first.written[0])
    new = manager.get("alice", moved.written[0])
    assert old.status is Status.SUPERSEDED and old.superseded_by == new.id
    assert old.valid_to == new.valid_from
    assert [r.id for r in manager.history("alice", new.id)] == [old.id, new.id]
    assert new.slot is not None and new.slot.value == "Munich"


def test_a_free_text_correction_supersedes_at_once(manager: MemoryManager, clock):
    window = manager.observe("alice", "s1", "user", "I prefer window seats on flights.",
                             scope="travel").written[0]
    trains = manager.observe("alice", "s1", "user", "I like window tables on trains.",
                             scope="food").written[0]
    clock.advance(days=2)
    obs = manager.observe("alice", "s2", "user", "Actually, not window but aisle seats.",
                          scope="travel")
    (aisle,) = obs.written
    assert obs.superseded == (window,)
    old = manager.get("alice", window)
    assert old.status is Status.SUPERSEDED and old.superseded_by == aisle
    assert manager.get("alice", aisle).supersedes == window
    assert manager.get("alice", trains).status is Status.ACTIVE  # another scope
    assert [h.id for h in manager.recall("alice", "window or aisle seat?", scope="travel")] \
        == [aisle]


def test_a_contradicting_value_opens_a_conflict_instead_of_overwriting(manager: MemoryManager):
    # a birthday is stable (the registry): a different one is a contradiction to confirm
    manager.observe("alice", "s1", "user", "My birthday is on March 3.")
    obs = manager.observe("alice", "s2", "user", "My birthday is on May 9.")
    assert [d.outcome for d in obs.decisions] == ["conflict"]
    (group,) = manager.conflicts("alice")
    assert len({r.slot.value for r in group if r.slot}) == 2
    assert all(r.status is Status.PENDING_CONFIRMATION for r in group)


def test_the_rules_open_a_conflict_for_a_city_said_without_a_change(
        db_url: str, embedder: Embedder, clock: ManualClock):
    with MemoryManager.open(db_url, embedder=embedder, clock=clock, reader="rules") as manager:
        manager.observe("alice", "s1", "user", "I live in Berlin.")
        obs = manager.observe("alice", "s2", "user", "I live in Munich.")
        assert [d.outcome for d in obs.decisions] == ["conflict"]
        (group,) = manager.conflicts("alice")
        assert {r.slot.value for r in group if r.slot} == {"Berlin", "Munich"}


def test_chinese_turns_form_memories(rules_manager: MemoryManager):
    obs = rules_manager.observe("wang", "s1", "user",
                                "我叫王小明，我住在上海，我不吃香菜。以后都用微信支付。")
    assert [d.outcome for d in obs.decisions] == ["written"] * 4
    assert {c.rule for c in obs.candidates} == {"name", "city", "dislike", "from_now_on"}
    moved = rules_manager.observe("wang", "s2", "user", "我搬到北京了")
    assert [d.outcome for d in moved.decisions] == ["corrected"]


def test_the_model_reader_forms_chinese_slots_and_keeps_the_rest(manager: MemoryManager):
    obs = manager.observe("wang", "s1", "user", "我住在上海，我不吃香菜。")
    slots = {c.slot.attribute: c.slot.value for c in obs.candidates if c.slot is not None}
    assert slots == {"city": "上海"}
    assert any(c.slot is None for c in obs.candidates)  # 不吃香菜: the rules' free text
    moved = manager.observe("wang", "s2", "user", "我搬到北京了")
    assert [d.outcome for d in moved.decisions] == ["corrected"]


def test_chinese_statements_are_not_merged_on_the_embedding_alone(manager: MemoryManager):
    # the English MiniLM scores these ~1.0 (unknown tokens); they say different things
    first = manager.observe("wang", "s1", "user", "我喜欢靠窗的座位")
    other = manager.observe("wang", "s1", "user", "我最喜欢的颜色是蓝色")
    assert [d.outcome for d in other.decisions] == ["written"]
    drinks = [manager.remember("wang", t, type="preference").outcome
              for t in ("我早上喝咖啡", "我晚上喝牛奶")]
    assert drinks == ["written", "written"]
    again = manager.observe("wang", "s2", "user", "我喜欢靠窗的座位。")
    assert [d.record_id for d in again.decisions] == [first.written[0]]


def test_a_repeated_preference_reinforces_instead_of_copying(manager: MemoryManager):
    a = manager.observe("alice", "s1", "user", "I prefer aisle seats.")
    b = manager.observe("alice", "s2", "user", "I prefer aisle seats.")
    assert [d.outcome for d in b.decisions] == ["reinforced"]
    assert b.decisions[0].record_id == a.written[0] and count(manager) == 1


@pytest.mark.parametrize(
    ("args", "options", "error"),
    [
        (("", "s1", "user", "I like tea"), {}, MissingUserError),
        (("alice", "", "user", "I like tea"), {}, InvalidInputError),
        (("alice", "s1", "", "I like tea"), {}, InvalidInputError),
        (("alice", "s1", "user", "   "), {}, InvalidInputError),
        (("alice", "s1", "user", 42), {}, InvalidInputError),
        (("alice", "s1", "user", "I like tea"), {"scope": "Bad Scope"}, UnknownScopeError),
        (("alice", "s1", "user", "I like tea"), {"metadata": ["x"]}, InvalidInputError),
    ],
)
def test_bad_input_raises_a_typed_error_and_changes_nothing(manager: MemoryManager, args,
                                                            options, error):
    with pytest.raises(error):
        manager.observe(*args, **options)
    assert count(manager) == 0 and count(manager, turns) == 0


# -- what the user says is recallable at once (issue 32 item 7) ---------------------------

def test_a_statement_no_reader_reads_is_recallable_right_after_observe(manager: MemoryManager):
    # reproduction: before, "pottery" waited for the nightly summarize and recall right
    # after observe returned nothing
    told = manager.observe("alice", "s1", "user",
                           "I've been really into pottery lately, made my first bowl")
    asked = manager.observe("alice", "s1", "user", "what's the weather like tomorrow?")
    [decision] = told.decisions
    assert decision.outcome == "written" and asked.decisions == ()
    record = manager.get("alice", told.written[0])
    assert record.type is MemoryType.KNOWLEDGE and record.source.value == "inferred"
    assert record.slot is None and record.metadata["turn_id"] == told.turn_id
    assert record.metadata["extractor"] == "statement"
    # the reader read nothing from it, so no readings are stored: recall reads it as a
    # statement the nightly summarize kept (an empty list would say "states nothing")
    assert "readings" not in record.metadata
    turn = manager.episodic.turns("alice", "s1")[0]
    assert turn.metadata["kept_as_statement"] is True and turn.metadata["fast_extracted"] == 0
    hits = manager.recall("alice", "what hobby have I picked up?")
    assert hits and hits[0].id == record.id


def test_an_implicit_change_is_read_as_the_newest_value(
        manager: MemoryManager, clock: ManualClock):
    # reproduction (bench_at_once, blind knowledge-update split heldout4): the model alone
    # read nothing from the turn, kept it as a statement whose empty readings "stated
    # nothing" to recall, and the old employer came first even after the nightly jobs. Read
    # against what the user holds (the change detector), the new employer is read - and only
    # it: the occupation's likeliest words were 字, a piece of 字节, which superseded 产品经理
    manager.observe("mei", "s1", "user", "我在腾讯做产品经理。")
    clock.advance(days=40)
    obs = manager.observe("mei", "s2", "user",
                          "入职字节快两个月了，新组节奏比之前快太多，周报都写不过来。")
    [record] = [manager.get("mei", i) for i in obs.written]
    assert record.slot is not None and record.slot.attribute == "employer"
    assert record.slot.value == "字节"
    top = manager.recall("mei", "我在哪家公司上班？", record_use=False)[0]
    assert top.record.content.startswith("入职字节")
    jobs = [r.slot.value for r in manager.memories("mei")
            if r.slot is not None and r.slot.attribute == "occupation"
            and r.status is Status.ACTIVE]
    assert jobs == ["产品经理"]


def test_someone_elses_news_is_kept_with_its_readings_and_is_not_the_users_value(
        manager: MemoryManager, clock: ManualClock):
    manager.observe("alice", "s1", "user", "I work at Siemens as an engineer.")
    clock.advance(days=2)
    obs = manager.observe("alice", "s2", "user", "my sister just got a new job at Google")
    [record] = [manager.get("alice", i) for i in obs.written]
    assert record.slot is None
    readings = record.metadata["readings"]
    assert all(r["holder"] != "user" for r in readings if r["attribute"] == "employer")
    employer = [r for r in manager.memories("alice") if r.slot is not None
                and r.slot.attribute == "employer"]
    assert [r.slot.value for r in employer if r.slot is not None] == ["Siemens"]
    assert "Siemens" in manager.recall("alice", "Where do I work?")[0].record.content


@pytest.mark.xfail(strict=True, reason=(
    "known misreading of model-1c911b2bf5ff, to be fixed with training data: it reads "
    "'been on 100mg of sertraline for about three weeks' as the user's diet now, low-carb "
    "(0.71), so the turn is a diet record, not a statement kept (the test expects the "
    "statement kept once)"))
def test_the_nightly_summarize_does_not_keep_a_statement_twice(manager: MemoryManager,
                                                               clock: ManualClock):
    from memstrata.consolidation import Consolidator

    manager.observe("alice", "s1", "user", "been on 100mg of sertraline for about three weeks")
    clock.advance(days=1)
    Consolidator(manager).run("summarize", user_id="alice")
    texts = [r.content for r in manager.memories("alice") if r.type is MemoryType.KNOWLEDGE]
    assert texts == ["been on 100mg of sertraline for about three weeks"]


def test_keep_statements_off_leaves_the_statement_to_the_nightly_summarize(
        db_url: str, embedder: Embedder, clock: ManualClock, tmp_path):
    from memstrata.consolidation import Consolidator
    from memstrata.policies import WritePolicy

    with MemoryManager.open(db_url, embedder=embedder, clock=clock, index_dir=tmp_path / "i",
                            write=WritePolicy(keep_statements=False)) as mm:
        obs = mm.observe("alice", "s1", "user", "I've been really into pottery lately")
        assert obs.decisions == () and count(mm) == 0
        clock.advance(days=1)
        Consolidator(mm).run("summarize", user_id="alice")
        assert "I've been really into pottery lately" in [
            r.content for r in mm.memories("alice") if r.type is MemoryType.KNOWLEDGE]
