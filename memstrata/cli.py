"""The ``memstrata`` command.

Core commands live here. Command groups come from the entry-point group
``memstrata.cli``: each entry point names a list of click commands (the
consolidation, evaluation and agent packages declare theirs in
``pyproject.toml``, the same hook a third-party package uses), so this file
stays small. An entry point that fails to load stops the command with its
error - a broken install is not hidden by a missing subcommand.
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import click

from memstrata.errors import MemstrataError

__all__ = ["main"]

#: entry-point group of the command groups (each names a list of click commands)
COMMANDS_GROUP = "memstrata.cli"


def _open(url: str | None, **settings: Any) -> Any:
    from memstrata.memory.manager import MemoryManager

    return MemoryManager.open(url, **settings)


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemstrataError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="memstrata")
def main() -> None:
    """memstrata - layered memory for LLM agents (SQLite + local index by default)."""


url_option = click.option(
    "--url", envvar="MEMSTRATA_URL", default=None,
    help="Database URL (default: $MEMSTRATA_HOME/memstrata.db).",
)


@main.command()
@click.option("--db", type=click.Path(path_type=Path), default=None,
              help="Where to create the demo database (default: a new temporary folder).")
def demo(db: Path | None) -> None:
    """Two users, a few sessions: what each layer kept and why, recall, history, isolation."""
    from memstrata._demo import run_demo

    if db is None:
        db = Path(tempfile.mkdtemp(prefix="memstrata-demo-")) / "demo.db"
    summary = run_demo(db)
    if not summary["isolation_ok"]:
        sys.exit(1)


@main.command()
@url_option
@click.option("--user", "user_id", default=None, help="Only this user (default: all).")
def reindex(url: str | None, user_id: str | None) -> None:
    """Re-embed with the current model where needed and rebuild the derived indexes."""
    with _open(url) as memory:
        result = memory.reindex(user_id, progress=True)
    total = sum(r["indexed"] for r in result.values())
    embedded = sum(r["reembedded"] for r in result.values())
    click.echo(f"reindexed {len(result)} users: {total} records indexed, {embedded} re-embedded")


@main.command()
@url_option
@click.option("--user", "user_id", default=None)
def stats(url: str | None, user_id: str | None) -> None:
    """Counts of records by status."""
    with _open(url) as memory:
        click.echo(json.dumps(memory.stats(user_id), indent=2))


@main.command()
@url_option
@click.argument("user_id")
@click.argument("content")
@click.option("--type", "kind", default="knowledge")
@click.option("--scope", default="default")
def remember(url: str | None, user_id: str, content: str, kind: str, scope: str) -> None:
    """Offer one memory to the write policy and print its decision."""
    with _open(url) as memory:
        d = memory.remember(user_id, content, type=kind, scope=scope)
    click.echo(f"{d.outcome}: {d.reason}" + (f" [{d.record_id}]" if d.record_id else ""))


@main.command()
@url_option
@click.argument("user_id")
@click.argument("query")
@click.option("--scope", default=None)
@click.option("-k", "k", default=None, type=int)
def recall(url: str | None, user_id: str, query: str, scope: str | None, k: int | None) -> None:
    """Recall memories for a query."""
    with _open(url) as memory:
        hits = memory.recall(user_id, query, scope=scope, k=k)
    if not hits:
        click.echo("(nothing relevant)")
    for h in hits:
        click.echo(f"{h.score:.3f}  [{h.record.type.value}/{h.record.scope}] {h.content}  "
                   f"({h.id})")


@main.command()
@url_option
@click.argument("user_id")
@click.argument("memory_id", required=False)
@click.option("--all", "everything", is_flag=True, help="Erase every record of the user.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def forget(url: str | None, user_id: str, memory_id: str | None, everything: bool,
           yes: bool) -> None:
    """Forget one memory (with its history), or --all of a user's data."""
    if everything == (memory_id is not None):
        raise click.UsageError("give a MEMORY_ID or --all")
    with _open(url) as memory:
        if everything:
            if not yes:
                click.confirm(f"Erase all data of {user_id!r}?", abort=True)
            click.echo(json.dumps(memory.forget_user(user_id)))
        else:
            assert memory_id is not None
            click.echo("forgot " + ", ".join(memory.forget(user_id, memory_id)))


def _load_commands() -> None:
    """Add every command of the ``memstrata.cli`` entry points (loading errors propagate)."""
    for ep in sorted(entry_points(group=COMMANDS_GROUP), key=lambda ep: ep.name):
        for command in ep.load():
            if not isinstance(command, click.Command):
                raise TypeError(f"entry point {ep.name} = {ep.value} lists {command!r}, "
                                f"not a click command")
            main.add_command(command)


_load_commands()
