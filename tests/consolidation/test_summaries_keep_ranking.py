"""The nightly ``summarize`` does not change how the user's other memories rank (issue 33,
never worse).

Reproduces a loss of the never-worse benchmark's third split
(``knowledge_update_guard12/g12-zh-insurance-1``): a medical insurer said in one session and
pet insurance in a later one; before the jobs the insurer answered the question first,
after ``summarize`` the summaries' words made the corpus statistics move, the pet
insurance rose past the point where a newer statement outdates an older one, and the
insurer fell below it. (Since a small store's IDF is read as a hundred memories' - stronger
keyword scores - the pet insurance, which the frozen rules' stance reads as the user's own
change, outdates the insurer before the jobs too: a misreading for the reading layer. What
this test holds is that the jobs change nothing of it.)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstrata import ManualClock, MemoryManager, MemoryType
from memstrata.consolidation import Consolidator

S1 = datetime(2026, 1, 5, 19, 0, tzinfo=UTC)
TURNS = [
    ("s1", S1, "罗勒在室内怎么养才不死？"),
    ("s1", S1 + timedelta(minutes=1), "我的医疗险买的是平安的e生保，每年续保。门诊费用能报销吗？"),
    ("s1", S1 + timedelta(minutes=2), "推荐一个简单快手的面条做法"),
    ("s1", S1 + timedelta(minutes=3), "怎么快速记住别人的名字？"),
    ("s2", S1 + timedelta(days=17), "说一个关于章鱼的冷知识吧"),
    ("s2", S1 + timedelta(days=17, minutes=1), "彩虹是怎么形成的？"),
    ("s2", S1 + timedelta(days=17, minutes=2), "天空为什么是蓝色的？"),
    ("s3", S1 + timedelta(days=35), "一升等于多少毫升？"),
    ("s3", S1 + timedelta(days=35, minutes=1),
     "给我家狗子买了个宠物险，众安的，一年两百多，感觉还挺划算🐶"),
    ("s3", S1 + timedelta(days=35, minutes=2), "有什么简单的魔术可以学？"),
    ("s3", S1 + timedelta(days=35, minutes=3), "推荐一本经典小说吧？"),
]
QUESTION = "上周看急诊的单据要拿去报销，我应该找哪家保险公司？"


def _ranked(mm: MemoryManager) -> list[tuple[str, float, float]]:
    """The recalled memories that are not summaries: (text, BM25, currency), best first."""
    return [(h.content, h.parts.bm25, h.currency)
            for h in mm.recall("u", QUESTION, k=5, record_use=False)
            if h.record.type is not MemoryType.SUMMARY]


def test_summarize_leaves_the_other_memories_scores_and_order_alone(
        manager: MemoryManager, jobs: Consolidator, clock: ManualClock) -> None:
    for session, at, text in TURNS:
        clock.set(at)
        manager.observe("u", session, "user", text, at=at)
    clock.set(TURNS[-1][1] + timedelta(days=1))
    before = _ranked(manager)
    assert {text for text, _, _ in before} >= {TURNS[1][2], TURNS[8][2]}
    assert jobs.run("summarize", user_id="u").status == "finished"
    assert any(r.type is MemoryType.SUMMARY for r in manager.memories("u"))
    assert _ranked(manager) == before
