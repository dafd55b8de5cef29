"""A question that asks for one of the user's profile facts is answered by the current
value of that slot first (memstrata.policies.retrieval.asked_attribute, used by recall).

Reproduces what the nightly benchmark showed: after the offline ``summarize``, "我住在哪个
城市？" returned the session summary quoting the old city ("我住在北京…") ahead of the turn
that moved the user to 上海, and "我多大了？" returned nothing at all."""

from __future__ import annotations

import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import Consolidator
from memstrata.policies.retrieval import asked_attribute


@pytest.mark.parametrize(("query", "attribute"), [
    ("Which city do I live in?", "city"),
    ("Where do I live these days?", "city"),
    ("Where do I work?", "employer"),
    ("What is my job?", "occupation"),
    ("How old am I?", "age"),
    ("What's my diet?", "diet"),
    ("What should you call me?", "name"),
    ("我住在哪个城市？", "city"),
    ("我现在住在哪儿？", "city"),
    ("我今年多大了？", "age"),
    ("我在哪家公司工作？", "employer"),
    ("我的职业是什么？", "occupation"),
    ("我多大了？", "age"),
    ("我的饮食习惯是什么？", "diet"),
    ("我希望你怎么称呼我？", "name"),
])
def test_a_question_for_a_profile_fact_is_read(query, attribute):
    assert asked_attribute(query) == attribute


@pytest.mark.parametrize("query", [
    "Which city should I visit in May?",
    "Where does my sister work?",
    "How old is the Eiffel Tower?",
    "What should I cook tonight?",
    "北京有什么好吃的？",
])
def test_other_questions_ask_for_none(query):
    assert asked_attribute(query) is None


def test_the_current_slot_outranks_a_summary_quoting_the_old_value(manager: MemoryManager,
                                                                   clock: ManualClock):
    for text in ("我住在北京，平时坐地铁上班。", "我在腾讯工作。", "帮我订个周末的餐厅吧。"):
        manager.observe("u1", "s1", "user", text)
    Consolidator(manager).run("summarize")
    clock.advance(days=30)
    manager.observe("u1", "s2", "user", "我上个月搬到上海了，想找个新的牙医。")
    manager.observe("u1", "s2", "user", "今天是我30岁生日！")
    Consolidator(manager).run("summarize")
    hits = manager.recall("u1", "我住在哪个城市？", k=3, record_use=False)
    assert hits and hits[0].record.slot is not None and hits[0].record.slot.value == "上海"
    hits = manager.recall("u1", "我多大了？", k=3, record_use=False)
    assert hits and hits[0].record.slot is not None and hits[0].record.slot.value == "30"


def test_a_newer_statement_the_extractor_did_not_read_keeps_its_place(
        manager: MemoryManager, clock: ManualClock):
    manager.observe("u2", "s1", "user", "I live in Berlin.")
    clock.advance(days=40)
    manager.remember("u2", "We finally settled into our new flat in Munich.")
    ranked = [h.content for h in manager.recall("u2", "Which city do I live in?",
                                                record_use=False)]
    assert ranked.index("We finally settled into our new flat in Munich.") < ranked.index(
        "I live in Berlin.")


def test_without_the_slot_nothing_is_lifted(manager: MemoryManager):
    manager.remember("u3", "The weather in Lisbon is lovely in May.")
    hits = manager.recall("u3", "Which city do I live in?", record_use=False)
    assert all(h.record.slot is None for h in hits)
