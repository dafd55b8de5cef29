"""The ``memstrata`` command.

Core commands live here. Command groups come from the entry-point group
``memstrata.cli``: each entry point names a list of click commands (the
consolidation, evaluation and agent packages declare theirs in
``pyproject.toml``, the same hook a third-party package uses), so this file
stays small. An entry point that fails to load stops the command with its
error - a broken install is not hidden by a missing subcommand.

Start-up is cheap on purpose: the entry points load only when a command that is
not a core one is asked for (or the command list is shown), and every argument
is checked by a click callback - before a database is opened or a model loaded -
so a typo answers at once with exit code 2. Commands that need no embedding
(``stats``, ``forget``, ``runs``, ``undo``, ``agent-trace``) never load the model.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import click

from memstrata.errors import MemstrataError

__all__ = ["check_scope_option", "check_user_argument", "main", "url_option"]

#: entry-point group of the command groups (each names a list of click commands)
COMMANDS_GROUP = "memstrata.cli"
#: user ids: what :func:`memstrata.memory.check_user` accepts (checked here without
#: importing the memory package)
MAX_USER_ID = 256
#: the scope pattern of :data:`memstrata.config.SCOPE_PATTERN` and the memory types
#: of :class:`memstrata.types.MemoryType`, repeated because importing either module
#: costs pydantic (about 0.5 s here) before a typo could be answered;
#: ``tests/test_cli.py`` proves the copies agree
SCOPE_PATTERN = re.compile(r"\A[a-z0-9][a-z0-9_.\-]{0,63}\Z")
MEMORY_TYPES = ("profile", "preference", "knowledge", "event", "experience", "rule", "summary")


def _open(url: str | None, *, existing: bool = True) -> Any:
    """The store at ``url``; with ``existing`` (the commands that read or change what a
    store holds) a SQLite store must exist already: a mistyped ``--url`` is an error, not
    a new empty store that answers "nothing"."""
    from memstrata.config import require_existing_store
    from memstrata.memory.manager import MemoryManager

    if existing:
        require_existing_store(url)
    return MemoryManager.open(url)


def check_user_argument(_ctx: click.Context | None, _param: click.Parameter | None,
                        value: str | None) -> str | None:
    """A click callback: a user id as the memory layer accepts it."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("the user id is empty")
    if len(value) > MAX_USER_ID:
        raise click.BadParameter(f"longer than {MAX_USER_ID} characters")
    if any(ord(c) < 32 for c in value):
        raise click.BadParameter("contains control characters")
    return value


def check_scope_option(_ctx: click.Context | None, _param: click.Parameter | None,
                       value: str | None) -> str | None:
    """A click callback: a well-formed scope name."""
    if value is not None and not SCOPE_PATTERN.fullmatch(value):
        raise click.BadParameter(
            f"{value!r} is malformed: use 1-64 lower-case letters, digits, '_', '.', '-' "
            "(starting with a letter or digit)")
    return value


class _Group(click.Group):
    """Loads the entry-point commands on demand; reports memstrata errors, exit 2."""

    _loaded = False

    def _load(self) -> None:
        if not self._loaded:
            type(self)._loaded = True
            _load_commands(self)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None:
            self._load()
            found = super().get_command(ctx, cmd_name)
        return found

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load()
        return super().list_commands(ctx)

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
user_argument = click.argument("user_id", callback=check_user_argument)


@main.command()
@click.option("--db", type=click.Path(path_type=Path), default=None,
              help="Where to create the demo database (default: a new temporary folder).")
def demo(db: Path | None) -> None:
    """Two users, a few sessions: what each layer kept and why, recall, history, a task."""
    if db is not None and db.exists():
        raise click.BadParameter(f"{db} exists; the demo needs a fresh database",
                                 param_hint="'--db'")
    from memstrata._demo import run_demo

    if db is None:  # a temporary folder, removed afterwards (--db keeps one)
        with tempfile.TemporaryDirectory(prefix="memstrata-demo-") as tmp:
            summary = run_demo(Path(tmp) / "demo.db")
        click.echo("(that temporary database is removed again; --db PATH keeps one)")
    else:
        summary = run_demo(db)
    if not summary["isolation_ok"]:
        sys.exit(1)


@main.command()
@url_option
@click.option("--user", "user_id", default=None, callback=check_user_argument,
              help="Only this user (default: all).")
def reindex(url: str | None, user_id: str | None) -> None:
    """Re-embed with the current model where needed and rebuild the derived indexes."""
    with _open(url) as memory:
        if user_id is not None and user_id not in memory.users():
            click.echo(f"user {user_id!r} has no memories in {memory.db.safe_url}; "
                       "nothing to reindex", err=True)
            sys.exit(1)
        result = memory.reindex(user_id, progress=True)
    total = sum(r["indexed"] for r in result.values())
    embedded = sum(r["reembedded"] for r in result.values())
    added = sum(r["sentences_added"] for r in result.values())
    click.echo(f"reindexed {len(result)} users: {total} records indexed, {embedded} re-embedded"
               + (f", {added} given sentence vectors" if added else ""))


@main.command()
@url_option
@click.option("--user", "user_id", default=None, callback=check_user_argument,
              help="Count only this user's records (default: every user).")
def stats(url: str | None, user_id: str | None) -> None:
    """Counts of records by status (never loads the embedding model)."""
    with _open(url) as memory:
        click.echo(json.dumps(memory.stats(user_id), indent=2))


@main.command()
@url_option
@user_argument
@click.argument("content")
@click.option("--type", "kind", type=click.Choice(MEMORY_TYPES), default="knowledge",
              show_default=True, help="What kind of memory this is.")
@click.option("--scope", default="default", show_default=True, callback=check_scope_option,
              help="The scope to file it under (e.g. travel, work).")
def remember(url: str | None, user_id: str, content: str, kind: str, scope: str) -> None:
    """Offer one memory to the write policy and print its decision."""
    if not content.strip():
        raise click.BadParameter("the content is empty", param_hint="'CONTENT'")
    with _open(url, existing=False) as memory:
        d = memory.remember(user_id, content, type=kind, scope=scope)
    click.echo(f"{d.outcome}: {d.reason}" + (f" [{d.record_id}]" if d.record_id else ""))


@main.command()
@url_option
@user_argument
@click.argument("query")
@click.option("--scope", default=None, callback=check_scope_option,
              help="Search only this scope (default: every scope).")
@click.option("-k", "k", default=None, type=click.IntRange(min=1),
              help="How many memories at most (default: the retrieval policy's k).")
def recall(url: str | None, user_id: str, query: str, scope: str | None, k: int | None) -> None:
    """Recall memories for a query."""
    if not query.strip():
        raise click.BadParameter("the query is empty", param_hint="'QUERY'")
    with _open(url) as memory:
        hits = memory.recall(user_id, query, scope=scope, k=k)
    if not hits:
        click.echo("(nothing relevant)")
    for h in hits:
        click.echo(f"{h.score:.3f}  [{h.record.type.value}/{h.record.scope}] {h.content}  "
                   f"({h.id})")


@main.command()
@url_option
@user_argument
@click.argument("memory_id", required=False)
@click.option("--all", "everything", is_flag=True, help="Erase every record of the user.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def forget(url: str | None, user_id: str, memory_id: str | None, everything: bool,
           yes: bool) -> None:
    """Forget one memory (with its history), or --all of a user's data."""
    if everything == (memory_id is not None):
        raise click.UsageError("give a MEMORY_ID or --all")
    if memory_id is not None and not memory_id.strip():
        raise click.BadParameter("the memory id is empty", param_hint="'MEMORY_ID'")
    if everything and not yes:
        click.confirm(f"Erase all data of {user_id!r}?", abort=True)
    with _open(url) as memory:
        if everything:
            click.echo(json.dumps(memory.forget_user(user_id)))
        else:
            assert memory_id is not None
            click.echo("forgot " + ", ".join(memory.forget(user_id, memory_id)))


def _load_commands(group: click.Group) -> None:
    """Add every command of the ``memstrata.cli`` entry points (loading errors propagate)."""
    for ep in sorted(entry_points(group=COMMANDS_GROUP), key=lambda ep: ep.name):
        for command in ep.load():
            if not isinstance(command, click.Command):
                raise TypeError(f"entry point {ep.name} = {ep.value} lists {command!r}, "
                                f"not a click command")
            group.add_command(command)
