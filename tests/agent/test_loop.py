"""The loop: replanning, drift, step limit, context budget, goal first, lessons, audit."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata.agent import (
    Agent,
    AgentSettings,
    CharCounter,
    ContextSettings,
    Goal,
    MemoryView,
    StepLimitExceeded,
    ToolCrashError,
    ToolError,
    tool,
)
from memstrata.agent.context import MemoryContext
from memstrata.agent.memory_view import brief
from memstrata.agent.steps import Action, PlanMade, Reflection
from memstrata.llm import list_calls
from memstrata.testing import ScriptedLLM, call, plan, say

SETTINGS = AgentSettings(detect_drift=False)


class NotFound(Exception):
    pass


@tool(errors={NotFound: "not_found"}, cache=False)
def search(q: str) -> list[str]:
    """Search the catalogue.

    Args:
        q: What to look for.
    """
    if q.startswith("bad"):
        raise NotFound(f"nothing for {q}")
    if q.startswith("weird"):
        raise ToolError("quota exceeded", error_type="quota")
    if q.startswith("bug"):
        raise KeyError("internal bug")
    return [f"{q} result {i}" for i in range(3)]


def make(memory: Any, model: ScriptedLLM, **kw: Any) -> Agent[None]:
    kw.setdefault("settings", SETTINGS)
    kw.setdefault("token_counter", CharCounter())
    return Agent(model, memory=memory, tools=[search], **kw)


def items(agent, user, task_id, kind):
    return [e.item for e in agent.trajectory(user, task_id) if isinstance(e.item, kind)]


def test_two_consecutive_failures_trigger_one_replan(sqlite_manager):
    model = ScriptedLLM(
        plan([("Search for bad things", "c1", "search")]),
        call("search", {"q": "bad one"}), call("search", {"q": "bad two"}),
        plan([("Search for good things instead", "c1", "search")]),
        call("search", {"q": "good"}), say("Found good results."))
    agent = make(sqlite_manager, model)
    result = agent.run("Find something", user="u1")
    assert result.status == "done" and result.metrics["replans"] == 1
    plans = items(agent, "u1", result.task_id, PlanMade)
    assert [p.version for p in plans] == [1, 2]
    assert "2 consecutive failed actions" in plans[1].reason
    assert [s["status"] for s in result.subtasks] == ["abandoned", "done"]
    replan_prompt = model.requests[3].messages[1]["content"]
    assert "REPLAN" in replan_prompt and "s1 [failed]" in replan_prompt
    assert any(r.trigger == "repeated_failures" for r in result.reflections)


def test_one_failure_does_not_replan(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]), call("search", {"q": "bad"}),
                        call("search", {"q": "good"}), say("ok"))
    r = make(sqlite_manager, model).run("Find", user="u1")
    assert r.metrics["replans"] == 0 and r.status == "done"


def test_an_unregistered_error_type_triggers_a_replan(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]), call("search", {"q": "weird"}),
                        plan([("Search differently", "c1", "search")]),
                        call("search", {"q": "good"}), say("ok"))
    r = make(sqlite_manager, model).run("Find", user="u1")
    plans = items(make(sqlite_manager, ScriptedLLM()), "u1", r.task_id, PlanMade)
    assert "unregistered error type 'quota'" in plans[1].reason


def test_goal_drift_measured_by_embeddings_triggers_a_replan(sqlite_manager):
    goal = "Find a birthday present for my sister"
    off = "Goal: Explain the history of the Roman empire in detail"
    model = ScriptedLLM(
        plan([("Search presents", "c1", "search")]),
        call("search", {"q": "scarf"}, echo=goal),
        _with_content(call("search", {"q": "roman coins"}), off),
        _with_content(call("search", {"q": "roman legions"}), off),
        plan([("Search presents again", "c1", "search")]),
        call("search", {"q": "book"}, echo=goal), say("A scarf.", echo=goal))
    agent = make(sqlite_manager, model, settings=AgentSettings(drift_threshold=0.3,
                                                               drift_patience=2))
    r = agent.run(Goal(intent=goal), user="u1")
    plans = items(agent, "u1", r.task_id, PlanMade)
    assert len(plans) == 2 and "goal drift" in plans[1].reason


def _with_content(result, content):
    from dataclasses import replace
    return replace(result, content=content)


def test_the_step_limit_is_a_clean_resumable_stop(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]),
                        *[call("search", {"q": f"good {i}"}) for i in range(3)])
    agent = make(sqlite_manager, model, settings=AgentSettings(detect_drift=False, max_steps=3))
    with pytest.raises(StepLimitExceeded) as info:
        agent.run("Find", user="u1")
    err = info.value
    task = sqlite_manager.episodic.get_task("u1", err.task_id)
    assert task.status == "failed" and task.state["stop_reason"] == "step_limit"
    assert err.result.metrics["steps"] == 3 and not err.result.metrics["done"]
    assert any(r.trigger == "step_limit" for r in err.result.reflections)
    # failed is resumable
    with agent.override(model=ScriptedLLM(say("Here are the results."))):
        again = agent.resume(err.task_id, user="u1")
    assert again.status == "done"


def test_a_tool_bug_stops_the_run_after_recording_it(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]), call("search", {"q": "bug"}))
    agent = make(sqlite_manager, model)
    with pytest.raises(ToolCrashError) as info:
        agent.run("Find", user="u1")
    acts = items(agent, "u1", info.value.task_id, Action)
    assert acts[-1].error_type == "crash:KeyError"


def test_goal_block_is_always_first_and_budget_holds_with_nothing_lost(sqlite_manager):
    n = 30
    goal = Goal(intent="Collect thirty catalogue results", acceptance=["30 searches done"])
    model = ScriptedLLM(plan([("Search", "c1", "search")]),
                        *[call("search", {"q": f"item {i} " + "lorem ipsum " * 20})
                          for i in range(n)], say("Collected."))
    budget = 1500
    agent = make(sqlite_manager, model, settings=AgentSettings(
        detect_drift=False, max_steps=n + 5,
        context=ContextSettings(budget_tokens=budget)))
    result = agent.run(goal, user="u1")
    assert result.status == "done"
    counter = CharCounter()
    for request in model.requests[1:]:
        system = request.messages[0]
        assert system["role"] == "system"
        assert system["content"].startswith("## Goal\nGoal sentence (echo it first): "
                                            "Collect thirty catalogue results")
        total = sum(4 + counter.count_tokens(str(m.get("content") or ""))
                    for m in request.messages)
        assert total <= budget + 8 * len(request.messages)
    ctx = result.context
    assert ctx is not None and ctx.tokens <= budget
    assert any("finished rounds" in f.what for f in ctx.folded)
    # nothing lost: every recorded step of the shown history is verbatim, a line or folded,
    # and the folded ones are in the episodic store in full
    steps = agent.trajectory("u1", result.task_id)
    shown = {e.step_no for e in steps if e.item.kind in ("model", "action", "user")}
    last_built = set(ctx.coverage)
    missing = {s for s in shown if s < min(ctx.coverage, default=0)} | (
        {s for s in shown if s <= max(last_built)} - last_built)
    assert missing == set()
    folded = [s for s, how in ctx.coverage.items() if how == "folded"]
    full = {e.step_no: e.item for e in steps}
    assert folded and all(s in full for s in folded)
    folded_actions = [full[s] for s in folded if full[s].kind == "action"]
    assert folded_actions and all("lorem ipsum" in a.args["q"] for a in folded_actions)
    assert all(len(a.data) == 3 for a in folded_actions)  # the full result is stored


def test_a_finished_round_is_one_short_line_and_the_goal_is_said_once(sqlite_manager):
    """What keeps the context near a quarter of the naive history: a finished round's
    line is the call as code and the start of its result, at most ``max_finished_lines``
    lines are kept, and an intent that is its own goal sentence is not repeated."""
    goal = Goal(intent="Collect twelve catalogue results", acceptance=["12 searches done"])
    model = ScriptedLLM(plan([("Search", "c1", "search")]),
                        *[call("search", {"q": f"item {i}"}) for i in range(12)],
                        say("Collected."))
    agent = make(sqlite_manager, model, settings=AgentSettings(detect_drift=False,
                                                               max_steps=20))
    result = agent.run(goal, user="u1")
    assert result.status == "done"
    last = model.requests[-1].messages
    assert last[0]["content"].count("Collect twelve catalogue results") == 1  # no "Intent:"
    data = last[1]["content"].splitlines()
    start = data.index("finished_work (earlier rounds, one a line):")
    rows = [r for r in data[start + 1:] if r.startswith("- ")]
    rounds = [r for r in rows if r.startswith("- turn ")]
    assert 0 < len(rounds) <= ContextSettings().max_finished_lines
    assert any(r.startswith("- (") and "earlier rounds folded" in r for r in rows)
    for row in rounds:
        call_text, _, result_text = row[2:].partition(" → ")
        assert call_text.split(": ", 1)[1].startswith('search(q="item ')
        assert result_text.startswith("OK: 3 items") and len(result_text) <= 40


def test_lesson_is_written_for_verified_outcomes_and_forgotten_on_rejection(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]), call("search", {"q": "bad"}),
                        call("search", {"q": "good"}), say("Found it."))
    agent = make(sqlite_manager, model)
    r = agent.run(Goal(intent="Find the good catalogue item"), user="u1", scope="shop")
    assert r.lesson.outcome == "written"
    record = sqlite_manager.get("u1", r.lesson.record_id)
    assert record.type.value == "experience" and record.task_id == r.task_id
    steps = {e.step_no: e.item for e in agent.trajectory("u1", r.task_id)}
    assert steps[int(record.step_id)].kind == "final"
    assert "search" in record.content and "not_found" in record.content
    # a later task in the scope sees the lesson in its context
    model2 = ScriptedLLM(plan([("Search", "c1", "search")]), say("Done."))
    r2 = make(sqlite_manager, model2).run(Goal(intent="Find the good catalogue item again"),
                                          user="u1", scope="shop")
    assert "lessons (from past tasks)" in model2.requests[1].messages[1]["content"]
    assert r2.status == "awaiting_user"  # criterion not met: a text reply is a question
    agent.feedback("u1", r.task_id, accepted=False, comment="wrong item")
    assert sqlite_manager.memories("u1", scope="shop", types=["experience"]) == []
    assert sqlite_manager.episodic.get_task("u1", r.task_id).feedback["accepted"] is False


def test_no_lesson_when_the_goal_was_not_met(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]), say("What exactly?"))
    r = make(sqlite_manager, model).run("Find", user="u1", scope="shop")
    assert r.status == "awaiting_user" and r.lesson is None
    assert sqlite_manager.memories("u1", scope="shop") == []


def test_every_model_call_is_recorded_in_sql_and_erased_with_the_user(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]), call("search", {"q": "good"}),
                        say("ok"))
    r = make(sqlite_manager, model).run("Find", user="u1")
    rows = list_calls(sqlite_manager.db, "u1", r.task_id)
    assert [row.purpose for row in rows] == ["plan", "act", "act"]
    assert rows[1].response["tool_calls"][0]["name"] == "search"
    assert rows[1].messages[0]["role"] == "system" and rows[1].prompt_tokens > 0
    assert rows[1].prompt_hash.startswith("sha256:") and rows[1].turn == 1
    counts = sqlite_manager.forget_user("u1")
    assert counts["agent_llm_calls"] == 3
    assert list_calls(sqlite_manager.db, "u1") == []


def test_reply_without_goal_echo_is_sent_back_when_required(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]), call("search", {"q": "good"}),
                        say("done"), say("done", echo="Find"))
    agent = make(sqlite_manager, model, settings=AgentSettings(detect_drift=False,
                                                               require_echo=True))
    r = agent.run("Find", user="u1")
    assert r.status == "done" and "Begin your reply with the line 'Goal: Find'" in str(
        model.requests[-1].messages[-1]["content"])


def test_reflection_is_stored_with_the_trajectory(sqlite_manager):
    model = ScriptedLLM(plan([("Search", "c1", "search")]), call("search", {"q": "bad a"}),
                        call("search", {"q": "ok"}), call("search", {"q": "bad b"}),
                        say("ok"))
    agent = make(sqlite_manager, model)
    r = agent.run("Find", user="u1")
    refl = items(agent, "u1", r.task_id, Reflection)
    assert refl and refl[0].trigger == "repeated_failures" and refl[0].tool == "search"
    steps = {e.step_no: e.item for e in agent.trajectory("u1", r.task_id)}
    assert all(steps[s].kind == "action" and not steps[s].success for s in refl[0].evidence)
    assert refl[0].suggested_fix


def test_pending_confirmations_come_first_in_the_data_block_after_the_goal(sqlite_manager):
    sqlite_manager.remember("u1", "My delivery city is Paris", scope="shop", type="profile",
                            slot=("me", "delivery city", "Paris"))
    sqlite_manager.remember("u1", "My delivery city is Lyon", scope="shop", type="profile",
                            slot=("me", "delivery city", "Lyon"))
    assert sqlite_manager.conflicts("u1", scope="shop")
    model = ScriptedLLM(plan([("Search", "c1", "search")]), say("Which city is right?"))
    make(sqlite_manager, model).run("Find my delivery options", user="u1", scope="shop")
    system = model.requests[1].messages[0]["content"]
    assert system.startswith("## Goal") and "Paris" not in system  # stored text is data
    data = model.requests[1].messages[1]["content"]
    conf_at = data.index("pending_confirmations")
    table_at = data.index("task_table")
    assert data.startswith("<memory-data nonce=") and conf_at < table_at
    assert "Paris" in data[conf_at:table_at] and "Lyon" in data[conf_at:table_at]


def test_the_agent_reads_memory_through_the_view_profile_facts_first(sqlite_manager):
    view: MemoryView = sqlite_manager  # the manager satisfies the protocol (mypy checks)
    sqlite_manager.remember("u1", "My name is Ada", scope="shop", type="profile")
    sqlite_manager.remember("u1", "I prefer parcel lockers for deliveries", scope="shop",
                            type="preference")
    settings = ContextSettings(memories_k=3, memories_min_k=1)
    got = brief(view, "u1", "shop", "how should my parcel be delivered?", settings)
    assert isinstance(got, MemoryContext)
    texts = [m.text for m in got.memories]
    assert texts[0] == "My name is Ada" and got.memories[0].score == 1.0
    assert "I prefer parcel lockers for deliveries" in texts
    assert len(set(texts)) == len(texts) <= 3 and got.confirmations == []
