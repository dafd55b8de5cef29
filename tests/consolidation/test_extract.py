"""The fast extractor: what it reads (and refuses to read) from one utterance."""

from __future__ import annotations

import pytest

from memstrata.policies.extraction import extract, is_correction_text
from memstrata.types import MemoryType


def one(text: str):
    found = extract(text)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("text", "kind", "attribute", "value"),
    [
        ("My name is Alice Smith.", MemoryType.PROFILE, "name", "Alice Smith"),
        ("I live in Berlin.", MemoryType.PROFILE, "city", "Berlin"),
        ("I'm 34 years old", MemoryType.PROFILE, "age", "34"),
        ("I work as a data scientist", MemoryType.PROFILE, "occupation", "data scientist"),
        ("I work at Google", MemoryType.PROFILE, "employer", "Google"),
        ("I'm vegetarian", MemoryType.PROFILE, "diet", "vegetarian"),
        ("My email is alice@example.com.", MemoryType.PROFILE, "email", "alice@example.com"),
        ("My favorite color is green", MemoryType.PREFERENCE, "favorite color", "green"),
        ("我叫王小明", MemoryType.PROFILE, "name", "王小明"),
        ("我住在上海", MemoryType.PROFILE, "city", "上海"),
        ("我今年30岁", MemoryType.PROFILE, "age", "30"),
        ("我是一名软件工程师", MemoryType.PROFILE, "occupation", "软件工程师"),
        ("我最喜欢的颜色是蓝色", MemoryType.PREFERENCE, "最喜欢的颜色", "蓝色"),
    ],
)
def test_profile_facts_get_a_structured_slot(text, kind, attribute, value):
    found = one(text)
    assert found.type is kind
    assert found.slot is not None
    assert (found.slot.subject, found.slot.attribute, found.slot.value) == ("user", attribute,
                                                                            value)
    assert found.confidence >= 0.8


def test_a_role_at_an_employer_gives_both_slots():
    """The employer named beside the role is held too (it was read as the occupation only)."""
    found = extract("I work as a data scientist at Siemens")
    assert [(e.slot.attribute, e.slot.value) for e in found if e.slot is not None] == [
        ("occupation", "data scientist"), ("employer", "Siemens")]


@pytest.mark.parametrize(
    "text",
    ["I prefer window seats on long flights.", "I don't like spicy food", "I hate jazz.",
     "I'd rather fly in the morning", "I always fly economy", "Please always book me window seats",
     "Never call me before 9am", "我更喜欢靠窗的座位", "我不吃辣", "我通常坐地铁上班"],
)
def test_explicit_preferences_are_read_as_free_text(text):
    found = one(text)
    assert found.type is MemoryType.PREFERENCE
    assert found.slot is None and found.confidence >= 0.8


@pytest.mark.parametrize(
    ("text", "replaces"),
    [
        ("Actually, not window but aisle.", "window"),
        ("actually my favorite color is green, not blue", "blue"),
        ("其实不是靠窗，是靠过道", "靠窗"),
        ("From now on, always use layout B.", None),
        ("以后都用微信支付。", None),
        ("不要再推荐海鲜了", None),
        ("I moved to Munich last week.", None),
        ("我搬到北京了", None),
    ],
)
def test_corrections_are_marked(text, replaces):
    found = one(text)
    assert found.correction is True
    assert found.replaces == replaces


def test_a_moved_city_corrects_the_city_slot():
    found = one("I moved to Munich last week.")
    assert found.slot is not None and found.slot.attribute == "city"
    assert found.slot.value == "Munich"


@pytest.mark.parametrize(
    "text",
    ["Hi!", "Thanks, see you!", "This restaurant is awful", "Do you like pizza?",
     "Hey, I'm tired", "Book me a flight to Tokyo", "My flight is at 5pm",
     "Actually, that sounds good", "你好", "谢谢！", "今天好累", "这家餐厅太难吃了", "你喜欢什么?",
     "Don't book that hotel", "ok"],
)
def test_small_talk_moods_questions_and_task_chatter_yield_nothing(text):
    assert extract(text) == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [("I drink two cups of coffee a day.", MemoryType.PREFERENCE),
     ("I smoke.", MemoryType.PROFILE), ("I go swimming on Thursdays.", MemoryType.PREFERENCE),
     ("我每天喝两杯咖啡", MemoryType.PREFERENCE), ("我有两个孩子", MemoryType.PROFILE)],
)
def test_habits_and_states_are_read_with_moderate_confidence(text, kind):
    found = one(text)
    assert found.type is kind and found.rule == "habitual" and 0.5 < found.confidence < 0.8


@pytest.mark.parametrize("text", ["I go to Rome tomorrow", "I need a hotel", "我要去北京",
                                  "帮我订酒店"])
def test_one_off_plans_are_not_habits(text):
    assert extract(text) == []


def test_a_new_value_said_with_now_is_a_correction():
    found = one("My email is now bob@new.com")
    assert found.correction and found.slot is not None and found.slot.value == "bob@new.com"
    assert one("I'm not vegetarian anymore.").slot.value == "not vegetarian"


def test_reactions_to_a_demonstrative_are_read_with_low_confidence():
    found = one("I love this song!")
    assert found.confidence < 0.5  # the write policy drops it, with a reason


def test_hedged_statements_get_lower_confidence():
    assert one("I think I like jazz").confidence < one("I like jazz").confidence


def test_several_clauses_give_several_candidates():
    found = extract("My name is Alice Smith and I live in Berlin. I like tea.")
    assert [f.rule for f in found] == ["name", "city", "like"]
    zh = extract("我叫李雷，我住在杭州，我不吃香菜")
    assert [f.rule for f in zh] == ["name", "city", "dislike"]


def test_only_the_users_own_turns_are_read():
    assert extract("I prefer window seats", role="assistant") == []
    assert extract("I prefer window seats", role="user")


def test_correction_words():
    assert is_correction_text("I don't drink coffee anymore")
    assert is_correction_text("以后报告都用B格式")
    assert not is_correction_text("I like jazz")


def test_oversized_reads_are_not_candidates():
    from memstrata.policies.extraction import extract

    word = "x" * 300
    assert all(c.slot is None or len(c.slot.attribute) <= 64
               for c in extract(f"My favourite {word} is blue."))
    assert all(len(c.content) <= 2000
               for c in extract("I prefer " + "very " * 5000 + "quiet hotels."))


def test_observe_of_a_turn_with_an_oversized_attribute_stores_the_turn(sqlite_manager):
    obs = sqlite_manager.observe("u", "s1", "user", "My favourite " + "x" * 300 + " is blue.")
    assert obs.turn_id > 0
