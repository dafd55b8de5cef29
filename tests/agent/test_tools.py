"""Tools: schema, validation and self-correction, risk gate, breaker, retries, cache,
parallel vs dependent calls, result summaries."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Annotated, Any

import pytest
from pydantic import Field

from memstrata.agent import (
    Agent,
    AgentSettings,
    BreakerPolicy,
    CharCounter,
    FunctionToolset,
    Goal,
    Grounded,
    Risk,
    RunContext,
    ToolResult,
    UsageError,
    tool,
)
from memstrata.agent._summary import summarize
from memstrata.agent.steps import Action
from memstrata.agent.toolsets import BreakerState, RetryBackoff
from memstrata.testing import ScriptedLLM, call, calls, plan, say

G = "Look up the weather"
FAST = AgentSettings(detect_drift=False, backoff=RetryBackoff(base=0.001, max_delay=0.002))


def make(memory, model, tools, **kw) -> Agent[Any]:
    kw.setdefault("settings", FAST)
    return Agent(model, memory=memory, tools=tools, token_counter=CharCounter(), **kw)


@tool
def weather(city: str, days: Annotated[int, Field(ge=1, le=7)] = 1) -> dict[str, Any]:
    """Forecast for a city.

    Args:
        city: City name, e.g. "Paris".
        days: How many days ahead (1-7).
    """
    return {"city": city, "days": days, "sky": "sunny"}


def actions(agent, user, task_id) -> list[Action]:
    return [e.item for e in agent.trajectory(user, task_id) if isinstance(e.item, Action)]


def test_schema_comes_from_hints_and_docstring():
    d = weather.definition()["function"]
    assert d["description"] == "Forecast for a city."
    props = d["parameters"]["properties"]
    assert props["city"] == {"type": "string", "description": 'City name, e.g. "Paris".'}
    assert props["days"]["maximum"] == 7 and d["parameters"]["required"] == ["city"]
    assert d["parameters"]["additionalProperties"] is False
    assert weather.risk is Risk.L1 and weather.cache


def test_misuse_is_a_usage_error_at_decoration_time():
    with pytest.raises(UsageError, match="no type hint"):
        @tool
        def untyped(x) -> None:  # type: ignore[no-untyped-def]
            """Doc."""
    with pytest.raises(UsageError, match="docstring"):
        @tool
        def undocumented(x: int) -> None:
            pass
    with pytest.raises(UsageError, match="risk"):
        tool(risk="L9")(weather.function)
    with pytest.raises(UsageError, match="two tools"):
        FunctionToolset([weather, weather])
    with pytest.raises(UsageError, match="MemoryManager"):
        Agent(ScriptedLLM(), memory=None, tools=[weather])


def test_validation_error_goes_back_to_the_model_which_corrects_itself(sqlite_manager):
    model = ScriptedLLM(
        plan([("Get the forecast", "c1", "weather")]),
        call("weather", {"city": "Paris", "days": 12, "colour": "x"}),
        call("weather", '{"city": "Paris", '),  # malformed JSON
        call("weather", {"city": "Paris", "days": 2}),
        say("Sunny in Paris."))
    agent = make(sqlite_manager, model, [weather])
    result = agent.run(G, user="u1")
    assert result.status == "done"
    acts = actions(agent, "u1", result.task_id)
    assert [a.error_type for a in acts] == ["validation", "malformed_arguments", None]
    assert "days" in acts[0].observation and "colour" in acts[0].observation
    # the model saw the validation message as the tool result of its own call
    tool_msgs = [m for m in model.requests[2].messages if m["role"] == "tool"]
    assert "invalid arguments for weather" in tool_msgs[-1]["content"]
    assert result.metrics["replans"] == 0  # self-correction is not a replan trigger


def _writer(log: list[str]):
    @tool(risk="L2", resource="key")
    def write(key: str, value: str) -> str:
        """Store a value.

        Args:
            key: Where.
            value: What.
        """
        log.append(f"{key}={value}")
        return "stored"
    return write


def test_l2_runs_only_after_confirmation(sqlite_manager):
    log: list[str] = []
    asked = []
    script = [plan([("Store it", "c1", "write")]), call("write", {"key": "k", "value": "v"}),
              say("Stored.")]
    agent = make(sqlite_manager, ScriptedLLM(*script), [_writer(log)],
                 confirm=lambda r: asked.append(str(r)) or True)
    assert agent.run("Store k", user="u1").status == "done"
    assert log == ["k=v"] and asked == ["write(key='k', value='v')"]
    # declined
    with agent.override(model=ScriptedLLM(*script[:2], say("Not stored.")),
                        confirm=lambda r: False):
        r = agent.run("Store k", user="u2")
    assert log == ["k=v"]
    assert actions(agent, "u2", r.task_id)[0].error_type == "denied"
    # no confirmation channel at all
    bare = make(sqlite_manager, ScriptedLLM(*script[:2], say("Cannot.")), [_writer(log)])
    r = bare.run("Store k", user="u3")
    assert log == ["k=v"] and actions(bare, "u3", r.task_id)[0].error_type == \
        "confirmation_required"


def test_l3_is_refused_unless_a_human_approves(sqlite_manager):
    wiped = []

    @tool(risk="L3")
    def wipe(table: str) -> str:
        """Delete every row of a table.

        Args:
            table: The table.
        """
        wiped.append(table)
        return "wiped"

    script = [plan([("Wipe", "c1", "wipe")]), call("wipe", {"table": "orders"})]
    agent = make(sqlite_manager, ScriptedLLM(*script, say("Refused.")), [wipe],
                 confirm=lambda r: True)  # an L2 confirmation does not unlock L3
    r = agent.run("Wipe the orders", user="u1")
    assert wiped == [] and actions(agent, "u1", r.task_id)[0].error_type == "refused"
    with agent.override(model=ScriptedLLM(*script, say("Done.")), approve=lambda r: True):
        agent.run("Wipe the orders", user="u2")
    assert wiped == ["orders"]


def test_breaker_opens_after_failures_and_recovers_after_cooldown(sqlite_manager, clock):
    healthy = threading.Event()

    class Upstream(Exception):
        pass

    @tool(timeout=None, errors={Upstream: "upstream"})
    def flaky(q: str) -> str:
        """A flaky backend.

        Args:
            q: Query.
        """
        if not healthy.is_set():
            raise Upstream("backend 502")
        return "fine"

    settings = AgentSettings(detect_drift=False, failures_before_replan=99,
                             breaker=BreakerPolicy(failure_threshold=2, cooldown=60))
    model = ScriptedLLM(plan([("Ask", "c1", "flaky")]),
                        *[call("flaky", {"q": str(i)}) for i in range(3)], say("Gave up."))
    agent = make(sqlite_manager, model, [flaky], settings=settings)
    r = agent.run("Ask the backend", user="u1")
    kinds = [a.error_type for a in actions(agent, "u1", r.task_id)]
    assert kinds == ["upstream", "upstream", "circuit_open"]
    assert agent.breaker("flaky").state is BreakerState.OPEN
    healthy.set()
    clock.advance(timedelta(seconds=61))
    assert agent.breaker("flaky").state is BreakerState.HALF_OPEN
    with agent.override(model=ScriptedLLM(plan([("Ask", "c1", "flaky")]),
                                          call("flaky", {"q": "again"}), say("Fine."))):
        r2 = agent.run("Ask the backend", user="u1")
    assert r2.status == "done" and agent.breaker("flaky").state is BreakerState.CLOSED


def test_retriable_failures_are_retried_then_given_up(sqlite_manager):
    attempts: list[int] = []

    @tool(retries=2, timeout=None)
    def unstable(ctx: RunContext[None], q: str) -> str:
        """Sometimes refuses connections.

        Args:
            q: Query.
        """
        attempts.append(ctx.retry)
        raise ConnectionError("refused")

    settings = AgentSettings(detect_drift=False, failures_before_replan=99,
                             backoff=RetryBackoff(base=0.001, max_delay=0.001))
    agent = make(sqlite_manager, ScriptedLLM(plan([("Ask", "c1", "unstable")]),
                                             call("unstable", {"q": "x"}), say("Down.")),
                 [unstable], settings=settings)
    r = agent.run("Ask", user="u1")
    a = actions(agent, "u1", r.task_id)[0]
    assert attempts == [0, 1, 2] and a.attempts == 3
    assert a.error_type == "unavailable" and a.retriable and "gave up after 3" in a.error


def test_timeout_is_a_retriable_failure_with_a_reflection(sqlite_manager):
    @tool(timeout=0.05)
    def slow(q: str) -> str:
        """Slow.

        Args:
            q: Query.
        """
        time.sleep(0.5)
        return "late"

    agent = make(sqlite_manager, ScriptedLLM(plan([("Ask", "c1", "slow")]),
                                             call("slow", {"q": "x"}), say("Timed out.")),
                 [slow])
    r = agent.run("Ask", user="u1")
    assert actions(agent, "u1", r.task_id)[0].error_type == "timeout"
    assert r.reflections and r.reflections[0].trigger == "timeout"
    assert r.reflections[0].evidence and "timeout" in r.reflections[0].root_cause


def test_identical_read_only_calls_hit_the_cache_until_a_write(sqlite_manager, clock):
    reads: list[str] = []
    log: list[str] = []

    @tool
    def read(key: str) -> str:
        """Read a value.

        Args:
            key: Which.
        """
        reads.append(key)
        return f"value of {key}"

    model = ScriptedLLM(plan([("Read", "c1", "read")]), call("read", {"key": "a"}),
                        call("read", {"key": "a"}), call("write", {"key": "a", "value": "2"}),
                        call("read", {"key": "a"}), say("ok"))
    agent = make(sqlite_manager, model, [read, _writer(log)], confirm=lambda r: True)
    r = agent.run("Read a", user="u1")
    cached = [a.cached for a in actions(agent, "u1", r.task_id) if a.tool == "read"]
    assert cached == [False, True, False] and reads == ["a", "a"]
    assert r.metrics["effective_tool_calls"] == 3 and r.metrics["tool_calls"] == 4
    clock.advance(timedelta(seconds=31))  # past the window: a fresh read
    with agent.override(model=ScriptedLLM(plan([("Read", "c1", "read")]),
                                          call("read", {"key": "a"}), say("ok"))):
        agent.run("Read a", user="u1")
    assert reads == ["a", "a", "a"]


def test_independent_calls_run_in_parallel_dependent_ones_in_order(sqlite_manager):
    barrier = threading.Barrier(2, timeout=5)
    events: list[str] = []
    lock = threading.Lock()

    @tool(cache=False, timeout=10)
    def fetch(key: str) -> str:
        """Fetch (two of these meet at a barrier: they must run at the same time).

        Args:
            key: Which.
        """
        barrier.wait()
        return key

    @tool(timeout=10, cache=False, resource="key")
    def peek(key: str) -> str:
        """Read with a resource key.

        Args:
            key: Which.
        """
        with lock:
            events.append(f"peek {key} start")
        time.sleep(0.05)
        with lock:
            events.append(f"peek {key} end")
        return key

    @tool(risk="L2", resource="key", timeout=10)
    def put(key: str) -> str:
        """Write with a resource key.

        Args:
            key: Which.
        """
        with lock:
            events.append(f"put {key}")
        return key

    model = ScriptedLLM(plan([("Fetch", "c1", "fetch")]),
                        calls([("fetch", {"key": "a"}), ("fetch", {"key": "b"})]),
                        calls([("peek", {"key": "x"}), ("put", {"key": "x"})]), say("ok"))
    agent = make(sqlite_manager, model, [fetch, peek, put], confirm=lambda r: True)
    r = agent.run("Fetch both", user="u1")
    acts = actions(agent, "u1", r.task_id)
    assert all(a.success for a in acts), [a.error for a in acts]  # the barrier was met
    assert events == ["peek x start", "peek x end", "put x"]


def test_results_are_summarized_with_totals_and_empty_hints():
    big = ToolResult.ok([{"id": i, "text": "x" * 50} for i in range(100)])
    text = summarize(big, weather, max_chars=300)
    assert text.startswith("OK: 100 items, showing") and "more not shown" in text
    assert len(text) < 500
    assert "Hint:" in summarize(ToolResult.ok([]), weather)
    long = summarize(ToolResult.ok("y" * 5000), weather, max_chars=100)
    assert "5000 characters in total" in long
    assert summarize(ToolResult.fail("boom", "upstream", retriable=True), None).startswith(
        "ERROR [upstream, retriable]")


def test_invented_identifiers_are_rejected(sqlite_manager):
    @tool
    def lookup(ref: Annotated[str, Grounded()]) -> str:
        """Look a reference up.

        Args:
            ref: The reference the user gave.
        """
        return ref

    model = ScriptedLLM(plan([("Look up", "c1", "lookup")]), call("lookup", {"ref": "Z-999"}),
                        say("Which reference do you mean?"))
    agent = make(sqlite_manager, model, [lookup])
    r = agent.run(Goal(intent="Look up my reference please"), user="u1")
    a = actions(agent, "u1", r.task_id)[0]
    assert a.error_type == "not_grounded" and "ask the user" in a.error
    assert r.status == "awaiting_user"
