"""The after-sales assistant: three tools over a small SQLite order table.

* ``query_order`` (L1, read-only, cached briefly);
* ``modify_address`` (L2: needs confirmation; refuses orders that have shipped);
* ``apply_refund`` (L2: needs confirmation).

Order ids are :class:`~memstrata.agent.tools.Grounded`: the kernel rejects an id
the user never gave, so a refund request without an order number makes the
assistant ask for it instead of inventing one.

Run it offline with the scripted model (``memstrata agent-example``), or against
any OpenAI-compatible endpoint::

    export MEMSTRATA_LLM_BASE_URL=http://localhost:11434/v1   # e.g. Ollama
    export MEMSTRATA_LLM_MODEL=qwen2.5:7b-instruct
    export MEMSTRATA_LLM_API_KEY=...                          # if the endpoint needs one
    memstrata agent-example --live "Please change the address of order A1002 to 9 Quai Voltaire"
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from memstrata.agent import (
    Agent,
    AgentSettings,
    ApprovalRequest,
    Goal,
    Grounded,
    LLMClient,
    MemoryView,
    RunContext,
    RunResult,
    tool,
)
from memstrata.testing.scripted import ScriptedLLM, call, calls, plan, say

__all__ = [
    "OrderNotFound",
    "OrderShipped",
    "Shop",
    "apply_refund",
    "build_agent",
    "create_shop",
    "modify_address",
    "query_order",
    "run_offline",
]

SCOPE = "orders"
INSTRUCTIONS = ("You are the after-sales assistant of an online shop. You can look up orders, "
                "change the shipping address of orders that have not shipped, and request "
                "refunds. Be brief and polite.")
ORDERS = [
    ("A1001", "alice", "shipped", "12 Rue Oberkampf, Paris", 59.90),
    ("A1002", "alice", "paid", "3 Avenue Foch, Lyon", 120.00),
    ("B2001", "bob", "paid", "1 Main Street, Leeds", 35.50),
]


class OrderNotFound(LookupError):
    """No such order for this customer."""


class OrderShipped(Exception):
    """The order has left the warehouse; its address can no longer change."""


@dataclass(frozen=True, slots=True)
class Shop:
    """The example's dependencies: where the order table lives."""

    db_path: Path

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.db_path, timeout=10)) as conn:
            conn.row_factory = sqlite3.Row
            with conn:
                yield conn


def create_shop(path: Path) -> Shop:
    """A fresh order table with three orders (alice: A1001 shipped, A1002 paid)."""
    shop = Shop(Path(path))
    with shop.connect() as conn:
        conn.execute("DROP TABLE IF EXISTS orders")
        conn.execute("CREATE TABLE orders (order_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, "
                     "status TEXT NOT NULL, address TEXT NOT NULL, amount REAL NOT NULL, "
                     "refund TEXT)")
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, NULL)", ORDERS)
    return shop


OrderId = Annotated[str, Grounded()]


def _order(conn: sqlite3.Connection, user_id: str, order_id: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM orders WHERE order_id = ? AND user_id = ?",
                       (order_id.strip().upper(), user_id)).fetchone()
    if row is None:
        raise OrderNotFound(f"no order {order_id!r} for this customer")
    return row  # type: ignore[no-any-return]


@tool(errors={OrderNotFound: "order_not_found"}, timeout=5,
      empty_hint="check the order number with the user")
def query_order(ctx: RunContext[Shop], order_id: OrderId) -> dict[str, Any]:
    """Look up one of the customer's orders: status, shipping address, amount, refund.

    Args:
        order_id: The order number exactly as the customer gave it, e.g. "A1001".
    """
    with ctx.deps.connect() as conn:
        return dict(_order(conn, ctx.user_id, order_id))


@tool(risk="L2", resource="order_id", timeout=5,
      errors={OrderNotFound: "order_not_found", OrderShipped: "order_shipped"})
def modify_address(ctx: RunContext[Shop], order_id: OrderId, address: str) -> dict[str, Any]:
    """Change the shipping address of an order that has not shipped yet.

    Args:
        order_id: The order number exactly as the customer gave it.
        address: The complete new shipping address.
    """
    if len(address.strip()) < 5:
        raise OrderNotFound("the new address is too short to be a full address")
    with ctx.deps.connect() as conn:
        row = _order(conn, ctx.user_id, order_id)
        if row["status"] != "paid":
            raise OrderShipped(f"order {row['order_id']} is {row['status']}; its address "
                               "can no longer be changed")
        conn.execute("UPDATE orders SET address = ? WHERE order_id = ?",
                     (address.strip(), row["order_id"]))
    return {"order_id": row["order_id"], "address": address.strip()}


@tool(risk="L2", resource="order_id", timeout=5, errors={OrderNotFound: "order_not_found"})
def apply_refund(ctx: RunContext[Shop], order_id: OrderId, reason: str) -> dict[str, Any]:
    """Request a refund for one of the customer's orders.

    Args:
        order_id: The order number exactly as the customer gave it.
        reason: Why the customer wants the refund, in their words.
    """
    with ctx.deps.connect() as conn:
        row = _order(conn, ctx.user_id, order_id)
        if row["refund"] is not None:
            return {"order_id": row["order_id"], "refund": row["refund"], "new": False}
        conn.execute("UPDATE orders SET refund = ? WHERE order_id = ?",
                     (f"requested: {reason.strip()[:200]}", row["order_id"]))
    return {"order_id": row["order_id"], "refund": "requested", "amount": row["amount"],
            "new": True}


TOOLS = [query_order, modify_address, apply_refund]


def build_agent(model: LLMClient, memory: MemoryView, *,
                confirm: Callable[[ApprovalRequest], bool] | None = None,
                settings: AgentSettings | None = None) -> Agent[Shop]:
    return Agent(model, memory=memory, tools=TOOLS, deps_type=Shop, instructions=INSTRUCTIONS,
                 confirm=confirm, settings=settings)


# ---------------------------------------------------------------- offline scripts

QUERY = "Where is my order A1001?"
ADDRESS = "Please change the delivery address of order A1002 to 9 Quai Voltaire, Paris."
REFUND = "I want a refund, the blender arrived broken."


def scripted_query() -> ScriptedLLM:
    g = Goal(intent=QUERY).sentence
    return ScriptedLLM(
        plan([("Look up order A1001", "c1", "query_order", {"order_id": "A1001"})]),
        call("query_order", {"order_id": "A1001"}, echo=g, thought="s1: look the order up"),
        say("Your order A1001 has shipped to 12 Rue Oberkampf, Paris.", echo=g))


def scripted_address() -> ScriptedLLM:
    g = Goal(intent=ADDRESS).sentence
    return ScriptedLLM(
        plan([("Check that order A1002 has not shipped", "c1", "query_order"),
              ("Change the address of A1002", "c1", "modify_address")]),
        call("query_order", {"order_id": "A1002"}, echo=g, thought="s1: is it still paid?"),
        call("modify_address", {"order_id": "A1002", "address": "9 Quai Voltaire, Paris"},
             echo=g, thought="s2: it has not shipped, change it"),
        say("Done: order A1002 will be delivered to 9 Quai Voltaire, Paris.", echo=g))


def scripted_refund() -> ScriptedLLM:
    g = Goal(intent=REFUND).sentence
    return ScriptedLLM(
        plan([("Ask the customer for the order number", "c1"),
              ("Request the refund", "c1", "apply_refund")]),
        say("I'm sorry about the blender. Which order is it? Please give me the order number.",
            echo=g))


def scripted_refund_answer() -> ScriptedLLM:
    g = Goal(intent=REFUND).sentence
    return ScriptedLLM(
        calls([("complete_subtask", {"subtask_id": "s1", "summary": "the customer gave A1002"}),
               ("apply_refund", {"order_id": "A1002", "reason": "the blender arrived broken"})],
              echo=g, thought="s1 answered; s2: request the refund"),
        say("Your refund for order A1002 (120.00) has been requested.", echo=g))


def run_offline(memory: MemoryView, shop: Shop, *, user: str = "alice",
                confirm: Callable[[ApprovalRequest], bool] = lambda request: True,
                echo: Callable[[str], None] = lambda line: None) -> dict[str, RunResult]:
    """The three paths with the scripted model; returns each path's result."""
    out: dict[str, RunResult] = {}
    agent = build_agent(ScriptedLLM(), memory, confirm=confirm)
    with agent:
        for name, text, model in (("query", QUERY, scripted_query()),
                                  ("change_address", ADDRESS, scripted_address()),
                                  ("refund_without_id", REFUND, scripted_refund())):
            echo(f"\n== {name}: {text}")
            with agent.override(model=model):
                result = agent.run(Goal(intent=text), user=user, scope=SCOPE, deps=shop)
            echo(f"   -> {result.status}: {result.output}")
            out[name] = result
        task = out["refund_without_id"].task_id
        echo("   user answers: It's order A1002.")
        with agent.override(model=scripted_refund_answer()):
            out["refund_answered"] = agent.resume(task, user=user, deps=shop,
                                                  message="It's order A1002.")
        echo(f"   -> {out['refund_answered'].status}: {out['refund_answered'].output}")
    return out
