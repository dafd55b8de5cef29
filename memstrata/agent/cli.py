"""``memstrata agent-example`` and ``memstrata agent-trace``."""

from __future__ import annotations

import json
import shlex
import tempfile
from pathlib import Path
from typing import Any

import click

__all__ = ["commands"]

#: characters of an observation shown on a trace line
DETAIL_CHARS = 100


def _not_blank(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A click callback: refuse an empty id before anything is opened."""
    if value is not None and not value.strip():
        raise click.BadParameter("is empty")
    return value


def _one_line(value: Any, width: int = DETAIL_CHARS) -> str:
    """A value on one line: JSON for structures, whitespace (newlines, tabs) folded,
    cut to ``width`` with an ellipsis - so a multi-line observation keeps the columns."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def trace_command(url: str, user: str, task_id: str) -> str:
    """The ``memstrata agent-trace`` command line that shows this task, ready to paste."""
    return shlex.join(["memstrata", "agent-trace", "--url", url, user, task_id])


@click.command("agent-example")
@click.option("--live", "message", default=None,
              help="Send MESSAGE to the model at MEMSTRATA_LLM_BASE_URL / MEMSTRATA_LLM_MODEL "
                   "instead of running the offline scripted paths.")
@click.option("--user", default="alice", show_default=True, callback=_not_blank,
              help="The customer the assistant serves (the shop has orders for alice and bob).")
@click.option("--dir", "directory", type=click.Path(path_type=Path, file_okay=False),
              default=None,
              help="Where to put the example's databases (default: a new temporary folder).")
@click.option("--yes", is_flag=True, help="Confirm every L2 action without asking.")
def agent_example(message: str | None, user: str, directory: Path | None, yes: bool) -> None:
    """The after-sales assistant: query an order, change an address, ask for a refund."""
    from memstrata.agent.examples import after_sales as ex
    from memstrata.agent.toolsets import ApprovalRequest
    from memstrata.llm import OpenAIClient
    from memstrata.memory.manager import MemoryManager

    directory = (directory or Path(tempfile.mkdtemp(prefix="memstrata-agent-"))).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    shop = ex.create_shop(directory / "shop.db")
    url = f"sqlite:///{directory / 'memory.db'}"

    def confirm(request: ApprovalRequest) -> bool:
        if yes:
            click.echo(f"   [confirmed] {request}")
            return True
        return click.confirm(f"   Allow {request}?", default=False)

    with MemoryManager.open(url) as memory:
        click.echo(f"memory database: {url}")
        if message is None:
            results = ex.run_offline(memory, shop, user=user, confirm=confirm, echo=click.echo)
            click.echo("")
            for name, r in results.items():
                click.echo(f"{name}: task {r.task_id} {r.status}, {json.dumps(r.metrics)}")
            last = list(results.values())[-1]
            click.echo("\nsee a task's steps:")
            click.echo(f"  {trace_command(url, user, last.task_id)}")
            return
        with OpenAIClient.from_env() as model, ex.build_agent(model, memory,
                                                              confirm=confirm) as agent:
            result = agent.run(message, user=user, scope=ex.SCOPE, deps=shop)
            click.echo(f"{result.status}: {result.output}")
            click.echo(json.dumps(result.metrics))
            click.echo(f"task id: {result.task_id}")
            click.echo(f"see its steps:\n  {trace_command(url, user, result.task_id)}")


@click.command("agent-trace")
@click.option("--url", envvar="MEMSTRATA_URL", default=None,
              help="Database URL (default: $MEMSTRATA_HOME/memstrata.db).")
@click.argument("user_id", callback=_not_blank)
@click.argument("task_id", callback=_not_blank)
def agent_trace(url: str | None, user_id: str, task_id: str) -> None:
    """Print a task's recorded steps: number, outcome, action, tokens, and the
    observation (or, for a step with none, the thought) on one line each.

    Tokens are the prompt plus completion tokens of the model call that made the
    step ("-" for a step with no model call)."""
    from memstrata.memory.manager import MemoryManager

    with MemoryManager.open(url) as memory:
        found = memory.episodic.trajectory(user_id, task_id)
        task = found.task
        click.echo(f"task {task_id} [{task.status}] {_one_line(task.goal.get('intent'), 200)}")
        click.echo(f"user {task.user_id}, scope {task.scope}, "
                   f"started {task.created_at.isoformat(timespec='seconds')}")
        click.echo(f"{'step':>4} {'outcome':<10} {'action':<24} {'tokens':>6}  "
                   "observation / thought")
        total = 0
        for rec in found.steps:
            s = rec.step
            total += s.tokens or 0
            detail = s.observation if s.observation is not None else s.thought
            if s.error_type:
                detail = f"[{s.error_type}] {_one_line(detail)}"
            tokens = "-" if s.tokens is None else str(s.tokens)
            click.echo(f"{rec.step_no:>4} {_one_line(s.outcome, 10):<10} "
                       f"{_one_line(s.action, 24):<24} {tokens:>6}  {_one_line(detail)}")
        click.echo(f"{len(found.steps)} steps, {total} tokens")


commands = [agent_example, agent_trace]
