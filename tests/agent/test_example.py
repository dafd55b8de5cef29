"""The after-sales assistant: scripted paths, the live wiring via the loopback server,
and the CLI."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from memstrata.agent import Goal, OpenAIClient, Retry
from memstrata.agent.examples import after_sales as ex
from memstrata.agent.steps import Action
from memstrata.cli import main
from memstrata.testing import (
    OpenAICompatServer,
    Reply,
    ScriptedLLM,
    allow_model_requests,
    call,
    plan,
    say,
)


def order(shop: ex.Shop, order_id: str) -> sqlite3.Row:
    with shop.connect() as conn:
        return conn.execute("SELECT * FROM orders WHERE order_id = ?", (order_id,)).fetchone()


def test_the_three_paths_offline(sqlite_manager, shop):
    asked: list[str] = []
    results = ex.run_offline(sqlite_manager, shop,
                             confirm=lambda r: asked.append(str(r)) or True)
    assert results["query"].status == "done" and "A1001" in results["query"].output
    assert results["change_address"].status == "done"
    assert order(shop, "A1002")["address"] == "9 Quai Voltaire, Paris"
    refund = results["refund_without_id"]
    assert refund.status == "awaiting_user" and "order number" in refund.output
    assert results["refund_answered"].status == "done"
    assert order(shop, "A1002")["refund"].startswith("requested")
    assert asked == ["modify_address(order_id='A1002', address='9 Quai Voltaire, Paris')",
                     "apply_refund(order_id='A1002', reason='the blender arrived broken')"]
    # before the user answered, no refund tool was called and no id was invented
    agent = ex.build_agent(ScriptedLLM(), sqlite_manager)
    first = [e.item for e in agent.trajectory("alice", refund.task_id)]
    cut = next(i for i, item in enumerate(first) if item.kind == "final")
    assert not any(isinstance(i, Action) for i in first[:cut])


def test_a_shipped_order_keeps_its_address(sqlite_manager, shop):
    g = "Change the address of order A1001 to 1 Rue de Rivoli, Paris"
    model = ScriptedLLM(plan([("Change it", "c1", "modify_address")]),
                        call("modify_address", {"order_id": "A1001",
                                                "address": "1 Rue de Rivoli, Paris"}),
                        say("Sorry, order A1001 has already shipped."))
    agent = ex.build_agent(model, sqlite_manager, confirm=lambda r: True)
    r = agent.run(g, user="alice", scope=ex.SCOPE, deps=shop)
    a = [e.item for e in agent.trajectory("alice", r.task_id) if isinstance(e.item, Action)]
    assert a[0].error_type == "order_shipped" and "no longer be changed" in a[0].error
    assert order(shop, "A1001")["address"] == "12 Rue Oberkampf, Paris"
    assert r.status == "awaiting_user" and r.lesson is None


def test_an_invented_order_id_is_refused_and_the_model_asks(sqlite_manager, shop):
    model = ScriptedLLM(plan([("Refund", "c1", "apply_refund")]),
                        call("apply_refund", {"order_id": "A1002", "reason": "broken"}),
                        say("Which order is it?"))
    agent = ex.build_agent(model, sqlite_manager, confirm=lambda r: True)
    r = agent.run(Goal(intent=ex.REFUND), user="alice", scope=ex.SCOPE, deps=shop)
    a = [e.item for e in agent.trajectory("alice", r.task_id) if isinstance(e.item, Action)]
    assert a[0].error_type == "not_grounded"
    assert order(shop, "A1002")["refund"] is None and r.status == "awaiting_user"


def test_customers_only_see_their_own_orders(sqlite_manager, shop):
    model = ScriptedLLM(plan([("Look up", "c1", "query_order")]),
                        call("query_order", {"order_id": "A1001"}), say("Not yours."))
    agent = ex.build_agent(model, sqlite_manager)
    r = agent.run("Where is order A1001?", user="bob", scope=ex.SCOPE, deps=shop)
    a = [e.item for e in agent.trajectory("bob", r.task_id) if isinstance(e.item, Action)]
    assert a[0].error_type == "order_not_found"


def test_live_wiring_over_http_with_malformed_arguments_self_corrected(sqlite_manager, shop):
    g = Goal(intent=ex.QUERY).sentence
    with OpenAICompatServer() as server, allow_model_requests():
        server.push(
            Reply.tool_calls([("submit_plan", {"subtasks": [
                {"title": "Look up A1001", "criterion": "c1", "tool": "query_order"}]})]),
            Reply.tool_calls([("query_order", '{"order_id": "A1001"')], content=f"Goal: {g}"),
            Reply.error(503, "overloaded"),
            Reply.tool_calls([("query_order", {"order_id": "A1001"})], content=f"Goal: {g}"),
            Reply.text(f"Goal: {g}\nOrder A1001 has shipped."))
        model = OpenAIClient.from_env({"MEMSTRATA_LLM_BASE_URL": server.base_url,
                                       "MEMSTRATA_LLM_MODEL": "scripted"},
                                      retry=Retry(base_delay=0.01, max_delay=0.02))
        with model, ex.build_agent(model, sqlite_manager) as agent:
            r = agent.run(ex.QUERY, user="alice", scope=ex.SCOPE, deps=shop)
        sent = server.chat_requests()
    assert r.status == "done" and r.output == "Order A1001 has shipped."
    a = [e.item for e in agent.trajectory("alice", r.task_id) if isinstance(e.item, Action)]
    assert [x.error_type for x in a] == ["malformed_arguments", None]
    assert len(sent) == 5  # one 503 retried inside the client
    tool_msgs = [m for m in sent[3]["messages"] if m["role"] == "tool"]
    assert "not valid JSON" in tool_msgs[-1]["content"]
    rows = agent.calls("alice", r.task_id)
    assert rows[2].attempts == 2 and rows[-1].prompt_tokens == 10


def test_cli_runs_the_offline_example(tmp_path: Path):
    out = CliRunner().invoke(main, ["agent-example", "--yes", "--dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "awaiting_user" in out.output and "refund_answered" in out.output


def test_forget_user_erases_model_calls_in_a_process_that_never_imported_the_agent(
        sqlite_manager, tmp_path):
    model = ScriptedLLM(plan([("Look up", "c1", "query_order")]), say("Which order?"))
    ex.build_agent(model, sqlite_manager).run("Where is my order?", user="carol")
    url = sqlite_manager.db.url.render_as_string(hide_password=False)
    code = ("import sys\nfrom memstrata import MemoryManager\n"
            f"with MemoryManager.open({url!r}) as memory:\n"
            "    print(memory.forget_user('carol'))\n"
            "assert not any(m.startswith('memstrata.agent') for m in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert "'agent_llm_calls': 2" in done.stdout


def test_agent_example_prints_a_trace_command_that_works(tmp_path: Path):
    import shlex

    runner = CliRunner()
    r = runner.invoke(main, ["agent-example", "--yes", "--dir", str(tmp_path / "ex")])
    assert r.exit_code == 0, r.output
    db = tmp_path / "ex" / "memory.db"
    assert f"memory database: sqlite:///{db.resolve()}" in r.stdout
    assert "task " in r.stdout
    command = next(line.strip() for line in r.stdout.splitlines()
                   if line.strip().startswith("memstrata agent-trace"))
    argv = shlex.split(command)
    assert argv[0] == "memstrata"
    trace = runner.invoke(main, argv[1:])
    assert trace.exit_code == 0, trace.output
    lines = trace.stdout.splitlines()
    assert lines[0].startswith(f"task {argv[-1]} [done]")
    assert "tokens" in lines[2]
    assert lines[-1].endswith("tokens")


def test_agent_trace_keeps_multi_line_observations_on_one_line(sqlite_url: str, embedder):
    from memstrata import MemoryManager
    from memstrata.memory.episodic import Step

    with MemoryManager.open(sqlite_url, embedder=embedder) as mm:
        task = mm.episodic.start_task("alice", "Look up\norder A1001", status="running")
        mm.episodic.record_step("alice", task.task_id, Step(
            thought="check", action="query_order",
            observation={"order": "A1001", "note": "line one\nline two\ttabbed"},
            outcome="success", tokens=57))
        mm.episodic.record_step("alice", task.task_id, Step(thought="done\nnow",
                                                             outcome="final"))
    r = CliRunner().invoke(main, ["agent-trace", "--url", sqlite_url, "alice", task.task_id])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert len(lines) == 3 + 2 + 1  # header, user line, column heads, two steps, total
    assert "Look up order A1001" in lines[0]
    step1 = lines[3]
    # structures are shown as JSON: their newlines and tabs escaped, on one line
    assert "query_order" in step1 and " 57 " in step1 and "line one\\nline two" in step1
    assert lines[4].split()[:2] == ["2", "final"] and "done now" in lines[4]
    assert lines[-1] == "2 steps, 57 tokens"
