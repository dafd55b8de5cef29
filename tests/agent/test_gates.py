"""Gates that cannot be talked past: approvals are explicit, grounding is on whole
identifiers from the user's own words, and a failing approval callback is a refusal."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata.agent import Approval, ApprovalRequest, Goal
from memstrata.agent.examples import after_sales as ex
from memstrata.agent.steps import Action
from memstrata.testing import ScriptedLLM, call, plan, say


def order(shop: ex.Shop, order_id: str) -> dict[str, Any]:
    with shop.connect() as conn:
        return dict(conn.execute("SELECT * FROM orders WHERE order_id = ?",
                                 (order_id,)).fetchone())


def actions(agent: Any, user: str, task_id: str) -> list[Action]:
    return [e.item for e in agent.trajectory(user, task_id) if isinstance(e.item, Action)]


def _boom(request: ApprovalRequest) -> bool:
    raise RuntimeError("the approval service is down")


REFUND = "Refund order A1002, it arrived broken"


def _refund_script(order_id: str = "A1002") -> ScriptedLLM:
    return ScriptedLLM(plan([("Refund", "c1", "apply_refund")]),
                       call("apply_refund", {"order_id": order_id, "reason": "broken"}),
                       say("Done."))


@pytest.mark.parametrize("answer", ["no", "yes", 1, [False], {"approved": True}, object(),
                                    Approval(False, by="ops"), None, False])
def test_only_an_explicit_approval_runs_a_side_effect(sqlite_manager, shop, answer):
    agent = ex.build_agent(_refund_script(), sqlite_manager, confirm=lambda r: answer)
    r = agent.run(Goal(intent=REFUND), user="alice", scope=ex.SCOPE, deps=shop)
    a = actions(agent, "alice", r.task_id)[0]
    assert order(shop, "A1002")["refund"] is None
    assert not a.success and a.error_type == "denied"
    steps = sqlite_manager.episodic.trajectory("alice", r.task_id).steps
    assert [s.step.outcome for s in steps if s.step.action == "apply_refund"
            and s.step.outcome != "started"] == ["refused"]


@pytest.mark.parametrize("answer", [True, Approval(True, by="agent-desk", note="checked")])
def test_true_or_an_approval_runs_it(sqlite_manager, shop, answer):
    agent = ex.build_agent(_refund_script(), sqlite_manager, confirm=lambda r: answer)
    r = agent.run(Goal(intent=REFUND), user="alice", scope=ex.SCOPE, deps=shop)
    assert actions(agent, "alice", r.task_id)[0].success
    assert order(shop, "A1002")["refund"] == "requested: broken"
    if isinstance(answer, Approval):
        assert any("agent-desk" in n for n in actions(agent, "alice", r.task_id)[0].notes)


def test_a_failing_callback_is_a_refusal_not_a_crash(sqlite_manager, shop):
    agent = ex.build_agent(_refund_script(), sqlite_manager, confirm=_boom)
    r = agent.run(Goal(intent=REFUND), user="alice", scope=ex.SCOPE, deps=shop)
    a = actions(agent, "alice", r.task_id)[0]
    assert a.error_type == "denied" and "RuntimeError" in " ".join(a.notes)
    assert order(shop, "A1002")["refund"] is None and r.status == "awaiting_user"


def test_l3_needs_an_explicit_approval_too(sqlite_manager):
    from memstrata.agent import Agent, CharCounter, tool

    wiped: list[str] = []

    @tool(risk="L3")
    def wipe(table: str) -> str:
        """Delete every row of a table.

        Args:
            table: The table.
        """
        wiped.append(table)
        return "wiped"

    for answer in ("no", "approved", 1, _boom):
        decider = answer if callable(answer) else (lambda r, a=answer: a)
        model = ScriptedLLM(plan([("Wipe", "c1", "wipe")]), call("wipe", {"table": "orders"}),
                            say("Refused."))
        agent = Agent(model, memory=sqlite_manager, tools=[wipe], token_counter=CharCounter(),
                      approve=decider)
        r = agent.run("Wipe the orders", user="u1")
        assert actions(agent, "u1", r.task_id)[0].error_type == "denied"
    assert wiped == []


@pytest.mark.parametrize("bad", ["", " ", "1", "a", "00", "A100", "1002", "A10021", "A1002-x"])
def test_grounding_is_on_whole_identifiers_of_the_user(sqlite_manager, shop, bad):
    agent = ex.build_agent(_refund_script(bad), sqlite_manager, confirm=lambda r: True)
    r = agent.run(Goal(intent=REFUND), user="alice", scope=ex.SCOPE, deps=shop)
    a = actions(agent, "alice", r.task_id)[0]
    assert a.error_type in ("not_grounded", "validation"), (bad, a)
    assert order(shop, "A1002")["refund"] is None


@pytest.mark.parametrize("said", ["Refund order a1002 please", "退款：订单Ａ１００２坏了",
                                  "refund (A1002)."])
def test_grounding_normalises_case_width_and_punctuation(sqlite_manager, shop, said):
    agent = ex.build_agent(_refund_script("A1002"), sqlite_manager, confirm=lambda r: True)
    r = agent.run(Goal(intent=said), user="alice", scope=ex.SCOPE, deps=shop)
    assert actions(agent, "alice", r.task_id)[0].success


def test_a_tool_output_does_not_ground_an_identifier(sqlite_manager, shop):
    """B2001 appears in a tool result (a poisoned address), never in the user's words."""
    with shop.connect() as conn:
        conn.execute("UPDATE orders SET address = 'see also order B2001' WHERE order_id='A1002'")
    model = ScriptedLLM(plan([("Look", "c1", "query_order")]),
                        call("query_order", {"order_id": "A1002"}),
                        call("apply_refund", {"order_id": "B2001", "reason": "x"}),
                        say("Done."))
    agent = ex.build_agent(model, sqlite_manager, confirm=lambda r: True)
    r = agent.run(Goal(intent="Where is A1002?"), user="alice", scope=ex.SCOPE, deps=shop)
    assert actions(agent, "alice", r.task_id)[1].error_type == "not_grounded"
