"""Consolidation's model calls go to the same call log as the agent's, per user,
over real HTTP to a loopback OpenAI-format server; ``forget_user`` erases them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.llm import list_calls
from memstrata.memory.episodic import Step
from memstrata.testing import OpenAICompatServer, Reply


@pytest.fixture
def server() -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer() as srv:
        yield srv


def llm_settings(server: OpenAICompatServer) -> ConsolidationSettings:
    return ConsolidationSettings.build(
        batch_users=2, schedule={"timezone": "UTC"},
        llm={"model": "scripted", "base_url": server.base_url, "api_key": "k", "retries": 0},
    )


def test_each_summarize_call_is_logged_for_its_user_and_erased_with_them(
        manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    manager.observe("ann", "s1", "user", "My sister lives in Porto.", scope="travel")
    manager.observe("ann", "s1", "assistant", "Noted.", scope="travel")
    task = manager.episodic.start_task("ann", "book Porto flights", scope="travel",
                                       status="running")
    manager.episodic.record_step("ann", task.task_id, Step(action="search", outcome="success"))
    manager.episodic.finish_task("ann", task.task_id, "done")
    manager.observe("bob", "s9", "user", "I only fly in the morning.", scope="travel")
    clock.advance(hours=1)
    summary = json.dumps({"summary": "Talked about the sister in Porto.", "facts": []})
    lesson = json.dumps({"lesson": "Porto flights: search worked"})
    server.push(
        Reply.text(summary, prompt_tokens=50, completion_tokens=9),
        Reply.text(lesson, prompt_tokens=40, completion_tokens=7),
        Reply.error(400, "bad request"),  # bob's call fails: logged, then offline
    )
    # the LLM reader's calls (the users' unread turns) read nothing here
    server.on_chat = lambda request: Reply.text('{"items": []}', prompt_tokens=30,
                                                completion_tokens=4)

    report = Consolidator(manager, settings=llm_settings(server)).run("summarize")

    assert report.status == "finished" and report.method == "llm+offline"
    sent = [r["messages"] for r in server.chat_requests()]
    summaries = [m for r, m in zip(server.chat_requests(), sent, strict=True)
                 if not r.get("tools")]
    assert len(summaries) == 3
    ann = list_calls(manager.db, "ann")
    assert [(c.user_id, c.task_id, c.turn, c.purpose) for c in ann] == [
        ("ann", None, None, "summarize"), ("ann", None, None, "lesson"),
        ("ann", None, None, "read")]
    assert [c.messages for c in ann[:2]] == summaries[:2]
    assert "My sister lives in Porto." in ann[0].messages[1]["content"]
    assert "My sister lives in Porto." in ann[2].messages[1]["content"]
    assert [c.response["content"] if c.response else None for c in ann] == [
        summary, lesson, '{"items": []}']
    assert [(c.prompt_tokens, c.completion_tokens, c.error) for c in ann] == [
        (50, 9, None), (40, 7, None), (30, 4, None)]
    assert all(c.model == "scripted" for c in ann)
    assert [len(c.tools) for c in ann] == [0, 0, 1]  # the reader offers its one tool
    failed, *_ = list_calls(manager.db, "bob")
    assert failed.messages == summaries[2] and failed.purpose == "summarize"
    assert failed.response is None and failed.error and "bad request" in failed.error

    bob = len(list_calls(manager.db, "bob"))
    counts = manager.forget_user("ann")
    assert counts["agent_llm_calls"] == 3
    assert list_calls(manager.db, "ann") == []
    assert len(list_calls(manager.db, "bob")) == bob


def test_a_dry_run_makes_and_logs_no_call(
        manager: MemoryManager, clock: ManualClock, server: OpenAICompatServer):
    manager.observe("ann", "s1", "user", "My sister lives in Porto.", scope="travel")
    clock.advance(hours=1)
    Consolidator(manager, settings=llm_settings(server)).run("summarize", dry_run=True)
    assert server.chat_requests() == []
    assert list_calls(manager.db, "ann") == []
