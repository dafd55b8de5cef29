"""The LLM method, over real HTTP to a loopback OpenAI-format server; budgets and fallbacks."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from memstrata import ManualClock, MemoryManager, Source, Status
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.memory.episodic import Step
from memstrata.testing import OpenAICompatServer, Reply


@pytest.fixture
def server() -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer() as srv:
        yield srv


def llm_settings(server: OpenAICompatServer, **llm) -> ConsolidationSettings:
    return ConsolidationSettings.build(
        batch_users=2, schedule={"timezone": "UTC"},
        llm={"model": "scripted", "base_url": server.base_url, "api_key": "k", "retries": 0,
             **llm},
    )


def session(mm: MemoryManager, user: str, sid: str, *texts: str) -> None:
    for text in texts:
        mm.observe(user, sid, "user", text, scope="travel")
        mm.observe(user, sid, "assistant", "Sure.", scope="travel")


def test_summarize_with_an_llm_reports_calls_tokens_and_reads_what_the_fast_path_missed(
        manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    session(manager, "dana", "s1", "We are planning the summer trip.",
            "My sister lives in Porto and we visit her every July.")
    task = manager.episodic.start_task("dana", "book Porto flights", scope="travel",
                                       status="running")
    manager.episodic.record_step("dana", task.task_id, Step(action="search", outcome="error",
                                                            error_type="timeout"))
    manager.episodic.record_step("dana", task.task_id, Step(action="search_v2",
                                                            outcome="success"))
    manager.episodic.finish_task("dana", task.task_id, "done")
    clock.advance(hours=1)
    server.push(
        Reply.text(json.dumps({"summary": "Planned the July visit to the sister in Porto.",
                               "facts": [{"content": "Visits her sister in Porto every July",
                                          "type": "profile", "attribute": None, "value": None,
                                          "confidence": 0.95}]}),
                   prompt_tokens=120, completion_tokens=30),
        Reply.text('```json\n{"lesson": "Porto flights: search timed out; search_v2 worked"}\n```',
                   prompt_tokens=80, completion_tokens=12),
    )
    report = Consolidator(manager, settings=llm_settings(server)).run("summarize")
    assert report.method == "llm" and report.status == "finished"
    assert (report.llm_calls, report.prompt_tokens, report.completion_tokens) == (2, 200, 42)
    assert report.token_budget == 50_000
    assert report.counts == {"summarize_session": 1, "extract": 1, "lesson": 1,
                             "mark_source": 2}
    (summary,) = manager.memories("dana", types=["summary"])
    assert summary.content == "Session 2026-03-01: Planned the July visit to the sister in Porto."
    (fact,) = manager.memories("dana", types=["profile"])
    assert fact.source is Source.INFERRED and fact.confidence == pytest.approx(0.8)
    (lesson,) = manager.memories("dana", types=["experience"])
    assert lesson.content == "Porto flights: search timed out; search_v2 worked"
    first = server.chat_requests()[0]
    assert first["model"] == "scripted" and first["max_tokens"] == 400
    transcript = first["messages"][1]["content"]
    assert "user [unread]: My sister lives in Porto" in transcript


def test_conflicts_with_an_llm_catch_what_the_offline_rules_miss(
        sqlite_manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    a = sqlite_manager.remember("eve", "I'm vegetarian.", type="profile").record_id
    clock.advance(days=1)
    b = sqlite_manager.remember("eve", "I eat steak every day.", type="preference").record_id
    offline = Consolidator(sqlite_manager, settings=ConsolidationSettings.build(
        conflict_similarity=0.3)).run("conflicts", dry_run=True)
    assert offline.counts == {}  # no shared words: the rules cannot see it
    server.push(Reply.text(json.dumps([{"pair": 1, "relation": "contradiction",
                                        "reason": "a vegetarian does not eat steak"}])))
    report = Consolidator(sqlite_manager, settings=llm_settings(server, token_budget=5000)
                          .model_copy(update={"conflict_similarity": 0.3})).run("conflicts")
    assert report.method == "llm" and report.llm_calls == 1
    assert report.counts == {"flag_conflict": 2}
    assert sqlite_manager.get("eve", a).status is Status.PENDING_CONFIRMATION
    (action,) = [x for x in Consolidator(sqlite_manager).actions(report.run_id)
                 if x.memory_id == a]
    assert action.reason == "llm: a vegetarian does not eat steak"
    assert b is not None


def test_past_the_token_budget_the_rest_runs_offline(
        sqlite_manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    session(sqlite_manager, "finn", "s1", "I need a hotel in Rome near the Colosseum.")
    session(sqlite_manager, "finn", "s2", "I want to rent a car in Sicily for a week.")
    clock.advance(hours=1)
    server.push(Reply.text(json.dumps({"summary": "Rome hotel search.", "facts": []}),
                           prompt_tokens=2900, completion_tokens=50))
    report = Consolidator(sqlite_manager, settings=llm_settings(
        server, token_budget=3000, max_tokens=50)).run("summarize")
    assert report.method == "llm+offline" and report.llm_calls == 1
    assert report.prompt_tokens + report.completion_tokens == 2950
    assert any("token budget of 3000 reached" in e for e in report.errors)
    by_session = {r.session_id: r.content
                  for r in sqlite_manager.memories("finn", types=["summary"])}
    assert by_session["s1"] == "Session 2026-03-01: Rome hotel search."
    assert "rent a car in Sicily" in by_session["s2"]  # the extractive, offline line
    assert len(server.chat_requests()) == 1


def test_a_broken_or_refusing_endpoint_falls_back_to_the_offline_method(
        sqlite_manager: MemoryManager, clock: ManualClock):
    session(sqlite_manager, "gus", "s1", "I prefer trains to planes for trips under 500 km.")
    session(sqlite_manager, "gus", "s2", "My partner is allergic to cats.")
    clock.advance(hours=1)
    with OpenAICompatServer(api_key="right") as server:  # our key is wrong: 401
        report = Consolidator(sqlite_manager, settings=llm_settings(server)).run("summarize")
    assert report.method == "offline" and report.llm_calls == 0
    assert any("credentials" in e for e in report.errors)
    assert len(sqlite_manager.memories("gus", types=["summary"])) == 2
    session(sqlite_manager, "hal", "s1", "I like quiet hotels.")
    clock.advance(hours=1)
    with OpenAICompatServer() as server:
        server.push(Reply.text("Sure! Here is a summary: the user likes quiet hotels."))
        report = Consolidator(sqlite_manager, settings=llm_settings(server)).run("summarize")
    assert report.method == "offline" and report.llm_calls == 1
    assert any("not JSON" in e for e in report.errors)


def test_a_dry_run_never_calls_the_llm(sqlite_manager: MemoryManager, clock: ManualClock,
                                       server: OpenAICompatServer):
    session(sqlite_manager, "ida", "s1", "I prefer aisle seats.", "Book the 9am train.")
    clock.advance(hours=1)
    report = Consolidator(sqlite_manager, settings=llm_settings(server)).run(
        "summarize", dry_run=True)
    assert report.counts == {"summarize_session": 1} and report.method == "offline"
    assert server.chat_requests() == []


def test_a_pair_put_forward_only_for_the_llm_is_not_judged_offline_without_its_verdict(
        sqlite_manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    """Issue 33 (bench_never_worse --loopback: the one question lost by ``conflicts``): with
    an LLM, fact records down to cosine 0.3 are put forward for the model; a pair the model
    gave no verdict on went to the offline judge, which was never meant to see pairs that
    far apart, and it superseded the user's held service with a hesitation about another."""
    mm = sqlite_manager
    mm.observe("ivy", "s1", "user",
               "I use Spotify Premium for basically everything, podcasts, playlists, all of it.")
    clock.advance(days=14)
    mm.observe("ivy", "s2", "user",
               "Kind of tempted by Apple Music because of the lossless audio thing. Not sure "
               "it's worth the hassle of moving all my playlists though.")
    clock.advance(days=1)
    server.on_chat = lambda request: Reply.text("[]")  # no verdict on any pair
    report = Consolidator(mm, settings=llm_settings(server)).run("conflicts")
    assert report.status == "finished" and report.llm_calls >= 1
    spotify = [r for r in mm.memories("ivy", statuses=("active", "superseded", "demoted",
                                                       "pending_confirmation"))
               if "Spotify" in r.content]
    assert spotify and all(r.status is Status.ACTIVE for r in spotify)
    hits = mm.recall("ivy", "What music streaming service am I using?", k=3,
                     record_use=False)
    assert hits and "Spotify" in hits[0].content
