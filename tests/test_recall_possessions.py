"""A question for one of the user's things named by its make or provider (a car, a phone,
a laptop, a carrier, a streaming service, a bank) is answered by the newest statement of
the user's own present state that names one - even when the sentence embedding links
that name to the question no better than chance ("my Subaru Outback" is 0.14 from "What
do I drive?" under MiniLM). Reproductions from the blind knowledge-update first looks
(heldout35-37), and guards: someone else's car, a rental, a plan, a question.

Real SQLite and PostgreSQL, the real embedding model.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata.policies.possessions import asked_possession, names_possession

DAY0 = datetime(2026, 1, 5, 19, 0, tzinfo=UTC)
FILLER = ["Why is the sky blue?", "How many bones are in the adult human body?",
          "为什么天空是蓝色的？", "红烧肉怎么做才不腻？"]

#: (old, new, question): the new value was not returned or ranked below the old one
UPDATES = [
    # heldout35: the new car named on a road trip, 0.14 from the question
    ("My car's a 2016 Honda Civic, how often should I be rotating the tires?",
     "Road trip to Moab was amazing and my Subaru Outback handled the dirt roads no problem, "
     "though the dog shed all over the back seat. Any tips for getting dog hair out of car "
     "upholstery?",
     "What kind of motor oil should I be buying for my car?"),
    # heldout36: a laptop named in a how-to question of the user's own
    ("My MacBook Air M1 gets really hot when I have Zoom and Chrome open at the same time. Is "
     "that normal?",
     "how do i make the fan on my thinkpad quieter, ppl keep looking at me in the library lol",
     "What laptop do I have? I'm trying to buy a compatible charger."),
    # a carrier switched, said without the word "carrier"
    ("家里用的是电信100兆宽带，晚上打游戏老是卡，是网速不够吗？",
     "我的手机卡换成联通了，5G信号比以前好多了，流量也便宜",
     "我的手机卡是哪家运营商的？要查一下客服电话"),
    # heldout36: a car of the user's in Chinese, only the model named
    ("我开的是一辆2018年的大众朗逸，保养一次大概多少钱算合理？",
     "比亚迪海豹冬天续航掉得好厉害，北方开暖风一般掉多少啊",
     "我开的是什么车？帮我看看该买哪个型号的雨刮器"),
]

#: (old, distractor, question): the distractor names another make but is not the user's
GUARDS = [
    ("I drive a 2016 Honda Civic, about 90k miles on it. How often should I rotate the tires?",
     "got a rental tesla model 3 this week while im in phoenix for work and the whole screen "
     "thing is so weird 😂 how do u even open the glovebox",
     "My insurance renewal form wants my vehicle make and model. What do I put?"),
    ("I drive a 2016 Honda Civic.",
     "My sister finally bought a Subaru Outback, she loves it.",
     "What kind of motor oil should I be buying for my car?"),
    ("We only have Hulu at home, so when you recommend shows please stick to stuff on Hulu.",
     "thinking of maybe switching to netflix next month?? idk the price just went up again",
     "Which streaming service am I paying for right now?"),
    ("I'm on T-Mobile and the signal inside my apartment is terrible.",
     "does verizon have better coverage in rural montana than the others? or is it all bad "
     "out there",
     "Which carrier am I with? I need to look up their international roaming pass."),
]


def _ranked(manager: MemoryManager, clock: ManualClock, user: str, old: str, new: str,
            question: str) -> tuple[list[str], str, str]:
    ids = {}
    for day, text in [(0, FILLER[0]), (0, old), (0, FILLER[2]), (20, FILLER[1]),
                      (40, new), (40, FILLER[3])]:
        ids[text] = manager.remember(user, MemoryInput(
            content=text, at=DAY0 + timedelta(days=day), session_id=f"s{day}")).record_id
    clock.set(DAY0 + timedelta(days=100))
    return [h.id for h in manager.recall(user, question, record_use=False)], ids[old], ids[new]


@pytest.mark.parametrize(("old", "new", "question"), UPDATES)
def test_the_newest_thing_of_the_users_named_by_its_make_comes_first(
        manager: MemoryManager, clock: ManualClock, old: str, new: str, question: str) -> None:
    ranked, _, new_id = _ranked(manager, clock, "u", old, new, question)
    assert ranked and ranked[0] == new_id


@pytest.mark.parametrize(("old", "distractor", "question"), GUARDS)
def test_another_make_that_is_not_the_users_own_does_not_answer(
        manager: MemoryManager, clock: ManualClock, old: str, distractor: str,
        question: str) -> None:
    ranked, old_id, distractor_id = _ranked(manager, clock, "g", old, distractor, question)
    assert ranked and ranked[0] == old_id
    assert distractor_id not in ranked or ranked.index(distractor_id) > 0


@pytest.mark.parametrize(("question", "kind"), [
    ("What kind of motor oil should I be buying for my car?", "car"),
    ("which bank am I with now? setting up autopay for my car insurance", "bank"),
    ("我手机欠费停机了 我该打哪个运营商的客服电话", "carrier"),
    ("What's the keyboard shortcut to lock my laptop screen?", "laptop"),
    ("Recommend a show on the streaming service I have.", "streaming"),
    ("我自己的手机号是多少来着", None),  # a number, not the phone
    ("Where should I take my car to get the tires rotated?", None),  # a service for it
    ("What make and model should I put down for my bike?", None),
    ("我的车险下个月到期了，续保找哪家好", None),
    ("What's a good car for a family of five?", None),
    # the one the user had is not the one they have ...
    ("What phone did I have before?", None),
    ("What car did I drive in college?", None),
    ("我以前开的是什么车？", None),
    # ... but a question about now may have a past in it (these four lost their answer to a
    # first reading of "about the past" that looked for "had", "first", "ago", 之前 anywhere)
    ("my phone has had no signal all morning, which carrier's outage page should I check?",
     "carrier"),
    ("I think my debit card got skimmed at a gas station last night. What's the number to "
     "call for my bank, and should I freeze the card in the app first?", "bank"),
    ("Oil change reminder popped up on my calendar from ages ago — what kind of oil should I "
     "be buying for my car, and how often?", "car"),
    ("我家宽带是哪家的、多少兆？打客服之前想先确认一下。", "internet"),
])
def test_which_thing_a_question_asks_for(question: str, kind: str | None) -> None:
    assert asked_possession(question) == kind


@pytest.mark.parametrize(("text", "kind", "named"), [
    ("just got my Chase card in the mail", "bank", True),
    ("I'll chase it up tomorrow", "bank", False),  # a word, not the bank
    ("keep it to 2-3 sentences max", "streaming", False),
    ("what should i watch on max tonight", "streaming", True),
    ("大众点评上那家店评分很高", "car", False),
    ("上汽大众朗逸开了三年", "car", True),
    ("我搬家了，东西都移动好了", "carrier", False),
    ("移动的卡信号太差了", "carrier", True),
    ("All my accounts are at Alliant Credit Union now.", "bank", True),
    # the maker of another kind of thing: home broadband, a desktop, a credit card
    ("家里宽带刚换成电信的了，500兆，网速快多了", "carrier", False),
    ("电信的手机卡信号比移动好", "carrier", True),
    ("公司给办公室配了台新的戴尔台式机，屏幕超大", "laptop", False),
    ("Opened a Capital One credit card for the travel points.", "bank", False),
    ("Moved my checking account to Capital One.", "bank", True),
    # (guard11: a phone's hotspot while the broadband is down is no broadband provider)
    ("家里网断了两天，这两天全靠手机开热点，联通流量哗哗地掉 心疼", "internet", False),
    ("联通的千兆宽带昨天装好了，测速才六百多兆", "internet", True),
])
def test_a_make_is_read_as_written(text: str, kind: str, named: bool) -> None:
    assert names_possession(text, kind) is named
