"""The fast extractor reads changes of state however users phrase them (issue 11, item 1).

One test per general cause found on the formation benchmark's misses (typographic
apostrophes, quoted speech, conditions, verb families, work context, ambiguous "from X
to Y", naming verbs, ages in words, "from now on" and its kin, Chinese word order and
dropped subjects). The sentences are written for these tests, not taken from the
benchmark; each change has guards beside it that must stay unread.
"""

from __future__ import annotations

import pytest

from memstrata import MemoryManager
from memstrata.policies.extraction import extract


def slots(text: str) -> list[tuple[str, str]]:
    return [(e.slot.attribute, e.slot.value) for e in extract(text) if e.slot is not None]


def reads_nothing(text: str) -> bool:
    return not any(e.slot is not None or e.correction for e in extract(text))


def active(mm: MemoryManager, user: str, attribute: str) -> list[str]:
    return sorted(r.slot.value for r in mm.memories(user, statuses="active")
                  if r.slot is not None and r.slot.attribute == attribute)


@pytest.mark.parametrize(("text", "slot"), [
    ("I’ve relocated to Leipzig.", ("city", "Leipzig")),
    ("I’m a pharmacist now.", ("occupation", "pharmacist")),
    ("My name’s Roz.", ("name", "Roz")),
    ("Im vegan these days.", ("diet", "vegan")),
    ("ive moved to Leipzig", ("city", "Leipzig")),
])
def test_typographic_apostrophes_and_bare_contractions_read_like_straight_ones(
        text: str, slot: tuple[str, str]):
    assert slots(text) == [slot]
    assert extract(text)[0].correction or slot[0] in ("name", "occupation")


@pytest.mark.parametrize("text", [
    'My cousin wrote: "I moved to Leipzig last week."',
    'He keeps saying "I joined Zalando" as a joke.',
    "她说“我搬到成都了”。",
    'The email said "from now on, reply in French".',
])
def test_a_quoted_clause_is_someone_elses_words(text: str):
    assert reads_nothing(text)


def test_a_quoted_name_is_still_a_name():
    assert slots('Please call me "Roz".') == [("name", "Roz")]


@pytest.mark.parametrize("text", [
    "If we moved to Leipzig we would need a car.",
    "I'd take the train more if I moved to Leipzig.",
    "When I lived in Leipzig I cycled everywhere.",
    "如果我搬到成都，就得买车。",
    "要是我换了工作，就去成都。",
    "我搬到成都的话，会很想家。",
])
def test_a_condition_is_not_a_change(text: str):
    assert reads_nothing(text)


@pytest.mark.parametrize(("text", "city"), [
    ("We finally made the move to Leipzig.", "Leipzig"),
    ("I ended up moving to Leipzig.", "Leipzig"),
    ("I moved back to Leipzig in May.", "Leipzig"),
    ("Our whole family relocated to Leipzig.", "Leipzig"),
    ("My partner and I moved house to Leipzig.", "Leipzig"),
    ("I quit my job and moved to Leipzig.", "Leipzig"),
    ("We've settled in Leipzig.", "Leipzig"),
    ("Leipzig is home now.", "Leipzig"),
    ("Leipzig is our new home.", "Leipzig"),
    ("Hi from Leipzig, my new home!", "Leipzig"),
    ("We love our new flat in Leipzig.", "Leipzig"),
    ("We now call Leipzig home.", "Leipzig"),
    ("I've lived in Leipzig since the spring.", "Leipzig"),
    ("I've been based in Leipzig for a year.", "Leipzig"),
])
def test_the_verbs_and_phrases_of_moving_house(text: str, city: str):
    assert slots(text) == [("city", city)]


@pytest.mark.parametrize("text", [
    "Leipzig is home to a famous zoo.",
    "My aunt's new home in Leipzig is lovely.",
    "I have lived in Leipzig, Bonn and Graz.",
    "I've lived in Leipzig before.",
    "I made the move to decaf.",
    "We moved the meeting to Friday.",
    "My brother and his wife moved to Leipzig.",
    "I'm moving to Leipzig next year.",
])
def test_moving_guards(text: str):
    assert "city" not in dict(slots(text))


@pytest.mark.parametrize(("text", "employer"), [
    ("After four years at Bosch, I switched to Zalando.", "Zalando"),
    ("After six years at Bosch, I moved to Zalando.", "Zalando"),
    ("I quit my job and switched to Zalando.", "Zalando"),
    ("Zalando hired me in June.", "Zalando"),
    ("I accepted an offer from Zalando.", "Zalando"),
    ("I'm working at Zalando these days.", "Zalando"),
])
def test_a_move_between_employers_reads_where_the_sentence_is_about_work(
        text: str, employer: str):
    assert slots(text) == [("employer", employer)]


@pytest.mark.parametrize("text", [
    "I'm working at home today.",
    "Zalando almost hired me.",
    "I declined the offer from Zalando.",
    "My wife accepted an offer from Zalando.",
    "I quit my job and went to Bali.",
])
def test_employer_guards(text: str):
    assert "employer" not in dict(slots(text))


@pytest.mark.parametrize(("older", "newer", "attribute", "value"), [
    ("I work at Bosch.", "I moved from Bosch to Zalando.", "employer", "Zalando"),
    ("I work at Bosch.", "I left Bosch for Zalando.", "employer", "Zalando"),
    ("I live in Bonn.", "I left Bonn for Leipzig.", "city", "Leipzig"),
    ("I live in Bonn.", "I moved from Bonn to Leipzig.", "city", "Leipzig"),
])
def test_from_x_to_y_changes_the_attribute_whose_current_value_it_names(
        sqlite_manager: MemoryManager, clock, older: str, newer: str, attribute: str,
        value: str):
    sqlite_manager.observe("u", "s1", "user", older)
    clock.advance(days=10)
    sqlite_manager.observe("u", "s2", "user", newer)
    assert active(sqlite_manager, "u", attribute) == [value]
    other = "city" if attribute == "employer" else "employer"
    assert value not in active(sqlite_manager, "u", other)


def test_switched_to_without_a_named_current_value_forms_nothing(
        rules_manager: MemoryManager, clock):
    rules_manager.observe("u", "s1", "user", "I work at Bosch.")
    clock.advance(days=10)
    obs = rules_manager.observe("u", "s2", "user", "I switched to Android.")
    # no fact: the statement is kept whole, as unread knowledge, and changes no slot
    assert [(c.rule, c.slot) for c in obs.candidates] == [("statement", None)]
    assert active(rules_manager, "u", "employer") == ["Bosch"]


@pytest.mark.parametrize(("text", "name"), [
    ("Please address me as Roz.", "Roz"),
    ("Refer to me as Roz, please.", "Roz"),
    ("I changed my name to Roz.", "Roz"),
    ("I'd rather be called Roz.", "Roz"),
    ("Roz is fine, nobody calls me Rosalind.", "Roz"),
    ("My name is now Roz.", "Roz"),
])
def test_the_verbs_of_naming(text: str, name: str):
    assert slots(text) == [("name", name)]


@pytest.mark.parametrize("text", ["Roz is fine.", "Don't address me as Roz.",
                                  "Nobody calls me Roz.", "Bonn is fine, I call it home."])
def test_naming_guards(text: str):
    assert "name" not in dict(slots(text))


@pytest.mark.parametrize(("text", "age"), [
    ("I turned forty.", "40"), ("I just turned twenty-nine!", "29"),
    ("I'm thirty-one now.", "31"), ("我已经四十岁了。", "40"), ("我今年31了。", "31"),
    ("我上个月过了二十九岁生日。", "29"),
])
def test_ages_in_words_and_numerals(text: str, age: str):
    assert slots(text) == [("age", age)]


@pytest.mark.parametrize("text", ["I'm twenty minutes late.", "I turned one page.",
                                  "I'm two steps away.", "我儿子四十岁了。", "我明年就四十岁了。"])
def test_age_guards(text: str):
    assert "age" not in dict(slots(text))


@pytest.mark.parametrize("text", [
    "From today on, reply in French.", "From this point onwards, use metric units.",
    "Moving forward, keep replies brief.", "From now onwards answer in French.",
    "从现在起用法语回答我。", "从今往后都用法语回答。", "请从明天开始用法语回答。",
])
def test_from_now_on_and_its_kin(text: str):
    found = extract(text)
    assert [e.rule for e in found] == ["from_now_on"] and found[0].correction


@pytest.mark.parametrize("text", ["We are moving forward with the plan.",
                                  "Moving forward with the plan.", "从此我们就是朋友了。"])
def test_standing_instruction_guards(text: str):
    assert reads_nothing(text)


@pytest.mark.parametrize(("text", "slot"), [
    ("我已经在成都定居了。", ("city", "成都")),
    ("我现在在成都生活。", ("city", "成都")),
    ("我搬回成都了。", ("city", "成都")),
    ("我前阵子搬家了，搬到了成都。", ("city", "成都")),
    ("我换了份工作，现在在字节跳动。", ("employer", "字节跳动")),
    ("我离职了，去了字节跳动。", ("employer", "字节跳动")),
    ("我去字节跳动上班了。", ("employer", "字节跳动")),
    ("我被字节跳动录用了。", ("employer", "字节跳动")),
    ("我开始吃素了。", ("diet", "vegetarian")),
    ("我成了素食者。", ("diet", "vegetarian")),
    ("我又开始吃肉了。", ("diet", "not vegetarian")),
    ("我改名叫李思了。", ("name", "李思")),
    ("我把名字改成了李思。", ("name", "李思")),
    ("以后叫我小李吧。", ("name", "小李")),
])
def test_chinese_word_order_dropped_subjects_and_verb_families(
        text: str, slot: tuple[str, str]):
    assert slots(text) == [slot]
    assert extract(text)[0].correction


@pytest.mark.parametrize("text", [
    "我现在在酒店住。", "我在朋友家住。", "我在成都住了三天。", "我搬回家了。", "我去公司上班了。",
    "我被公司录用了。", "我今天不吃肉。", "我想改名叫李思。", "我女朋友去字节跳动上班了。",
    "我打算去字节跳动上班。", "我还没搬到成都。",
])
def test_chinese_guards(text: str):
    assert not [s for s in slots(text) if s[0] in ("city", "employer", "name", "diet")]


@pytest.mark.parametrize(("text", "slot"), [
    ("Porto has been home for a few months now.", ("city", "Porto")),
    ("Since relocating to Porto I cook more.", ("city", "Porto")),
    ("After moving to Porto I bought a bike.", ("city", "Porto")),
    ("I'm a Porto resident now.", ("city", "Porto")),
    ("We bought a house in Porto and moved in last week.", ("city", "Porto")),
    ("I'm living in Porto as of this month.", ("city", "Porto")),
    ("Deezer offered me a role and I accepted.", ("employer", "Deezer")),
    ("I've been working at Deezer since June.", ("employer", "Deezer")),
    ("I've gone fully vegan.", ("diet", "vegan")),
    ("I went back to eating meat.", ("diet", "not vegetarian")),
    ("I'm officially 50!", ("age", "50")),
    ("Turned 50 last week.", ("age", "50")),
    ("Just had my fiftieth birthday.", ("age", "50")),
    ("I celebrated my twenty-first birthday.", ("age", "21")),
    ("我已经在厦门住下了。", ("city", "厦门")),
    ("我搬家了，现在住厦门。", ("city", "厦门")),
    ("我搬到厦门去了。", ("city", "厦门")),
    ("我已经在美团上班了。", ("employer", "美团")),
    ("我当了律师。", ("occupation", "律师")),
])
def test_second_round_phrasings(text: str, slot: tuple[str, str]):
    """Value boundaries ("Porto I cook", "as of"), gerunds after since/after, "moved in"
    after the place, a clause that completes the one before ("and I accepted"), numbers
    run together ("Turned 50"), ordinal words, Chinese complements (住下, 搬到X去了)."""
    assert slots(text) == [slot]


@pytest.mark.parametrize("text", [
    "Before moving to Porto I lived in Lisbon.", "Deezer offered me a role.",
    "I got a flat in Porto for the summer.", "My fiftieth birthday is next week.",
    "我现在住院了。", "我现在住校。",
])
def test_second_round_guards(text: str):
    assert not [s for s in slots(text) if s[0] in ("city", "employer", "age")]


@pytest.mark.parametrize("text", [
    "Google hired me as an intern in 2015.", "Kate is my sister, she calls me every day.",
    "I'm planning my fortieth birthday party.", "From today on, the shop opens at nine.",
    "My doctor said from now on I should avoid sugar.", "以后他会来接我。",
])
def test_third_round_guards(text: str):
    """A past or temporary job, a name that is only a subject, a birthday being planned,
    a fact about someone else or someone's words after "from now on"."""
    assert reads_nothing(text)


@pytest.mark.parametrize("text", [
    "My landlord just texted: bins go out on Tuesdays from now on, not Mondays.",
    "Great news from work; the canteen serves breakfast from now on.",
    "The gym opens at 6 from now on.",
])
def test_from_now_on_inside_someone_elses_rule_is_not_an_instruction(text: str):
    """Mid-sentence "from now on" instructs the assistant only in a clause that speaks to
    it or of the user (a guard of the fourth held-out split, read as an instruction)."""
    assert [e.rule for e in extract(text)] == []


@pytest.mark.parametrize("text", [
    "Could you, from now on, answer in German?", "Please answer in German from now on.",
    "I want shorter answers from now on.", "ok so from now on no emojis please",
    "Thanks! Use metric units from now on.",
    "Stick to bullet points for everything from today on please, my screen is tiny.",
])
def test_from_now_on_in_any_position_still_instructs(text: str):
    assert [e.rule for e in extract(text)] == ["from_now_on"]


def test_a_name_offered_as_what_friends_call_the_user():
    assert slots("Kit is what my friends call me.") == [("name", "Kit")]
    assert [e.rule for e in extract("From now on, the answers should be short.")] == \
        ["from_now_on"]


@pytest.mark.parametrize(("text", "slot"), [
    # a city the gazetteer knows is capitalised; one it does not is kept as typed
    ("i moved to porto last week", ("city", "Porto")),
    ("i moved to smallville last week", ("city", "smallville")),
    ("Moved to Porto 🎉", ("city", "Porto")),
    ("We just moved to Porto :)", ("city", "Porto")),
    ("I moved to Porto (finally).", ("city", "Porto")),
    ("I moved to St. Louis.", ("city", "St. Louis")),
    ("I moved to Porto for my new job at Farfetch.", ("city", "Porto")),
    ("我们搬到厦门已经一个月了。", ("city", "厦门")),
])
def test_value_boundaries_and_lower_case(text: str, slot: tuple[str, str]):
    """Text typed in lower case has no capital to tell a place by; an emoji, an emoticon
    or a parenthesis after the value is not part of it; "St." does not end a sentence;
    "for my new job at X" names the new employer, so "moved to" stays a move."""
    assert slots(text) == [slot]


def test_lower_case_text_still_needs_a_place():
    assert reads_nothing("i moved to the next chapter")


@pytest.mark.parametrize(("text", "slot"), [
    ("我从杭州搬到厦门快半年了。", ("city", "厦门")),
    ("我和老公搬到了厦门。", ("city", "厦门")),
    ("我跟家人一起搬到厦门了。", ("city", "厦门")),
    ("我从美团跳到了字节跳动。", ("employer", "字节跳动")),
    ("我换到字节跳动工作了。", ("employer", "字节跳动")),
    ("我现在当护士了。", ("occupation", "护士")),
    ("我已经是一名会计了。", ("occupation", "会计")),
    ("叫我阿强就可以了。", ("name", "阿强")),
    ("你叫我阿强吧。", ("name", "阿强")),
    ("我的新名字是李思。", ("name", "李思")),
    ("我满四十了。", ("age", "40")),
    ("我刚过完40岁生日。", ("age", "40")),
])
def test_chinese_companions_durations_and_aspect(text: str, slot: tuple[str, str]):
    """Who moves with the user (我和老公), a duration after the place (快半年), 跳到 /
    换到X工作, 当 and 是 after an adverb, softened names (就可以了, 你叫我), 新名字,
    满 without 岁, 过完."""
    assert slots(text) == [slot]


@pytest.mark.parametrize("text", ["下周是我四十岁生日。", "以后会好的。", "我从第一章跳到第三章。",
                                  "我当过医生。", "我和朋友去厦门玩了。"])
def test_chinese_round_four_guards(text: str):
    assert reads_nothing(text)


def test_the_offline_reader_skips_a_tentative_slot():
    from memstrata.policies.contradiction import read_slots

    assert read_slots("I left Bonn for Leipzig.") == ()
    assert [s.value for s in read_slots("I moved to Leipzig.")] == ["Leipzig"]


def test_a_turn_without_its_subject_reads_as_the_user_in_lower_case() -> None:
    """Reproduction (blind knowledge-update split heldout5): "Started at Pinecrest Health
    last Monday" was stored as "I Started at ..."."""
    from memstrata.policies.extraction import extract

    found = [e for e in extract("Started at Pinecrest Health last Monday, and so far "
                                "onboarding is mostly compliance videos.") if e.slot]
    assert found and found[0].content.startswith("I started at Pinecrest Health")


@pytest.mark.parametrize("text", ["I'm British.", "I'm Chinese.", "I'm Catholic."])
def test_a_nationality_or_a_faith_is_not_a_name(text: str) -> None:
    from memstrata.policies.extraction import extract

    assert [e for e in extract(text) if e.slot and e.slot.attribute == "name"] == []


def test_a_standing_instruction_goes_on_in_the_next_sentence() -> None:
    # "Also keep it short." after "From now on, answer in German.": both are kept (the
    # second was lost before)
    read = [(e.content, e.rule, e.correction) for e in extract(
        "From now on, answer in German. Also keep it short.")]
    assert read == [("From now on, answer in German.", "from_now_on", True),
                    ("keep it short.", "from_now_on", True)]
    assert [(e.content, e.rule) for e in extract(
        "Always use metric units. Plus use 24-hour time.")] == [
        ("Always use metric units.", "always"), ("use 24-hour time.", "always")]
    # not without the "also", not after something else, not a question
    assert len(extract("From now on, answer in German. Tell me about Berlin.")) == 1
    assert [e.rule for e in extract("I moved to Berlin. Also keep it short.")] == ["moved"]
    assert len(extract("From now on, answer in German. Also can you tell me the time?")) == 1
