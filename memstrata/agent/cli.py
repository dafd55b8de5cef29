"""``memstrata agent-example`` and ``memstrata agent-trace``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

__all__ = ["commands"]


@click.command("agent-example")
@click.option("--live", "message", default=None,
              help="Send MESSAGE to the model at MEMSTRATA_LLM_BASE_URL / MEMSTRATA_LLM_MODEL "
                   "instead of running the offline scripted paths.")
@click.option("--user", default="alice", show_default=True)
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=None,
              help="Where to put the example's databases (default: a new temporary folder).")
@click.option("--yes", is_flag=True, help="Confirm every L2 action without asking.")
def agent_example(message: str | None, user: str, directory: Path | None, yes: bool) -> None:
    """The after-sales assistant: query an order, change an address, ask for a refund."""
    from memstrata.agent.examples import after_sales as ex
    from memstrata.agent.llm import OpenAIClient
    from memstrata.agent.toolsets import ApprovalRequest
    from memstrata.memory.manager import MemoryManager

    directory = directory or Path(tempfile.mkdtemp(prefix="memstrata-agent-"))
    directory.mkdir(parents=True, exist_ok=True)
    shop = ex.create_shop(directory / "shop.db")

    def confirm(request: ApprovalRequest) -> bool:
        if yes:
            click.echo(f"   [confirmed] {request}")
            return True
        return click.confirm(f"   Allow {request}?", default=False)

    with MemoryManager.open(f"sqlite:///{directory / 'memory.db'}") as memory:
        if message is None:
            results = ex.run_offline(memory, shop, user=user, confirm=confirm, echo=click.echo)
            for name, r in results.items():
                click.echo(f"{name}: {json.dumps(r.metrics)}")
            return
        with OpenAIClient.from_env() as model, ex.build_agent(model, memory,
                                                              confirm=confirm) as agent:
            result = agent.run(message, user=user, scope=ex.SCOPE, deps=shop)
            click.echo(f"{result.status}: {result.output}")
            click.echo(json.dumps(result.metrics))
            click.echo(f"task id: {result.task_id} (memory: {directory / 'memory.db'})")


@click.command("agent-trace")
@click.option("--url", envvar="MEMSTRATA_URL", default=None, help="Database URL.")
@click.argument("user_id")
@click.argument("task_id")
def agent_trace(url: str | None, user_id: str, task_id: str) -> None:
    """Print a task's recorded steps (thought, action, observation, outcome, tokens)."""
    from memstrata.memory.manager import MemoryManager

    with MemoryManager.open(url) as memory:
        found = memory.episodic.trajectory(user_id, task_id)
        click.echo(f"task {task_id} [{found.task.status}] {found.task.goal.get('intent')}")
        for rec in found.steps:
            s = rec.step
            line = f"{rec.step_no:>3} {s.outcome or '':<10} {s.action or '':<24}"
            detail = s.observation if s.observation is not None else s.thought
            click.echo(f"{line} {str(detail or '')[:100]}")


commands = [agent_example, agent_trace]
