"""``memstrata consolidate | scheduler | worker | runs | undo`` - the consolidation commands.

Loaded by :mod:`memstrata.cli` through the ``memstrata.cli`` entry point naming
this module's ``commands`` list. Every command takes ``--url`` (or
``MEMSTRATA_URL``); LLM and schedule settings come from the environment (see
:mod:`memstrata.consolidation.settings`). The job names offered are those of
:mod:`memstrata.consolidation.jobs` registered when this module is imported.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import click

from memstrata.consolidation.jobs import job_names, job_specs
from memstrata.consolidation.reports import describe_change, snippet

__all__ = ["commands"]

url_option = click.option(
    "--url", envvar="MEMSTRATA_URL", default=None,
    help="Database URL (default: $MEMSTRATA_HOME/memstrata.db).",
)


@contextmanager
def _consolidator(url: str | None, *, existing: bool = True) -> Iterator[Any]:
    """The jobs of the store at ``url``, which must exist unless ``existing`` is false (a
    mistyped ``--url`` would run the jobs on a new, empty store and report nothing)."""
    from memstrata.config import require_existing_store
    from memstrata.consolidation.runner import Consolidator
    from memstrata.memory.manager import MemoryManager

    if existing:
        require_existing_store(url)
    with MemoryManager.open(url) as memory:
        yield Consolidator(memory)


def _json(value: Any) -> str:
    return json.dumps(dataclasses.asdict(value), default=str, ensure_ascii=False, indent=2)


def _not_blank(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A click callback: refuse an empty id before anything is opened (the memory
    layer checks the rest of a user id's rules)."""
    if value is not None and not value.strip():
        raise click.BadParameter("is empty")
    return value


def _iso(when: datetime | None) -> str:
    return "-" if when is None else when.isoformat(timespec="seconds")


def _record_text(manager: Any, user_id: str, memory_id: str | None) -> str | None:
    """How to show the record an action touches: a snippet of its content (read
    from SQL, no model), ``(forgotten)`` when it is gone, ``None`` for no record."""
    from memstrata.errors import NotFoundError

    if memory_id is None:
        return None
    try:
        return repr(snippet(manager.get(user_id, memory_id).content))
    except NotFoundError:
        return "(forgotten)"


def _print_report(report: Any, *, as_json: bool, show: int, manager: Any) -> None:
    if as_json:
        click.echo(_json(report))
        return
    click.echo(report.summary_line())
    for planned in report.planned[:show]:
        text = _record_text(manager, planned.user_id, planned.memory_id)
        click.echo(f"  would {planned.describe(text)}")
    if len(report.planned) > show:
        click.echo(f"  ... and {report.total_actions - show} more (see counts)")
    for error in report.errors[:show]:
        click.echo(f"  ! {error}")


@click.command(help="Run consolidation jobs now.\n\n\b\n" + "\n".join(
    f"{spec.name}: {spec.description}" for spec in job_specs()))
@url_option
@click.option("--job", type=click.Choice([*job_names(), "all"]), default="all",
              show_default=True,
              help="Which job to run; all: " + ", ".join(job_names()) + ", in that order.")
@click.option("--dry-run", is_flag=True, help="Show the planned actions; change nothing.")
@click.option("--user", "user_id", default=None, callback=_not_blank,
              help="Only this user.")
@click.option("--json", "as_json", is_flag=True, help="Print the run reports as JSON.")
@click.option("--show", type=click.IntRange(min=0), default=20, show_default=True,
              help="Planned actions / errors shown.")
@click.option("--partitioned", is_flag=True,
              help="Create a partitioned run and work it in this process (alongside any "
                   "`memstrata worker` processes on the same database).")
@click.option("--queue", is_flag=True,
              help="Only create a partitioned run; `memstrata worker` processes run it.")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="Buckets of users of a partitioned run (default: sized from the users).")
def consolidate(url: str | None, job: str, dry_run: bool, user_id: str | None, as_json: bool,
                show: int, partitioned: bool, queue: bool, partitions: int | None) -> None:
    """Run consolidation jobs now."""
    names = list(job_names()) if job == "all" else [job]
    if (partitioned or queue or partitions) and (dry_run or user_id is not None):
        raise click.UsageError("--partitioned / --queue / --partitions run every user for real; "
                               "not with --dry-run or --user")
    with _consolidator(url) as jobs:
        for name in names:
            if partitioned or queue or partitions:
                report = jobs.create_run(name, partitions=partitions)
                if not queue and report.run_id is not None:
                    jobs.work(run_id=report.run_id)
                    report = jobs.get_run(report.run_id)
            else:
                report = jobs.run(name, dry_run=dry_run, user_id=user_id, progress=not as_json)
            _print_report(report, as_json=as_json, show=show, manager=jobs.manager)


@click.command()
@url_option
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Jobs that may run at once.")
@click.option("--create-only", is_flag=True,
              help="Only queue a partitioned run at each slot; `memstrata worker` runs it.")
def scheduler(url: str | None, workers: int, create_only: bool) -> None:
    """Run the jobs on their cron schedule, in the foreground (stop with SIGTERM / Ctrl-C)."""
    from memstrata.consolidation.scheduler import ConsolidationScheduler

    with _consolidator(url, existing=False) as jobs:  # may start before the first write
        sched = ConsolidationScheduler(
            jobs, workers=workers, create_only=create_only,
            on_report=lambda r: click.echo(r.summary_line()),
        )
        cron = jobs.settings.schedule
        crons = ", ".join(f"{name} '{cron.cron(name)}'" for name in job_names())
        click.echo(f"memstrata scheduler: started on {jobs.manager.db.safe_url} "
                   f"({crons}, time zone {sched.timezone})", nl=True)

        def started() -> None:
            for name, when in sorted(sched.jobs().items()):
                click.echo(f"  next {name}: {when}")

        sched.run_forever(on_started=started)
        click.echo("memstrata scheduler: stopped")


@click.command()
@url_option
@click.argument("run_id", required=False, callback=_not_blank)
@click.option("--job", type=click.Choice([*job_names(), "undo"]), default=None,
              help="Only runs of this job (default: every job).")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many runs to list, or actions of RUN_ID to show.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def runs(url: str | None, run_id: str | None, job: str | None, limit: int,
         as_json: bool) -> None:
    """List recent runs, or show one run and its recorded actions."""
    with _consolidator(url) as jobs:
        if run_id is None:
            reports = jobs.runs(job=job, limit=limit)
            if as_json:
                click.echo(json.dumps([dataclasses.asdict(r) for r in reports], default=str,
                                      ensure_ascii=False, indent=2))
                return
            if not reports:
                click.echo("(no runs yet)")
            for r in reports:
                undone = f" (undone by {r.undone_by})" if r.undone_by else ""
                click.echo(f"{_iso(r.started_at)}  {r.summary_line()}{undone}")
            return
        report = jobs.get_run(run_id)
        actions = jobs.actions(run_id, limit=limit)
        parts = jobs.partitions(run_id)
        if as_json:
            click.echo(json.dumps({"run": dataclasses.asdict(report),
                                   "partitions": [dataclasses.asdict(p) for p in parts],
                                   "actions": [dataclasses.asdict(a) for a in actions]},
                                  default=str, ensure_ascii=False, indent=2))
            return
        click.echo(report.summary_line())
        click.echo(f"  started {_iso(report.started_at)}, finished {_iso(report.finished_at)}"
                   + (f", undone by {report.undone_by}" if report.undone_by else ""))
        for error in report.errors:
            click.echo(f"  ! {error}")
        if parts:
            _print_partitions(report, parts)
        for a in actions:
            text = _record_text(jobs.manager, a.user_id, a.memory_id)
            click.echo(f"  #{a.id} {_iso(a.at)} batch {a.batch} {a.action} "
                       f"{a.user_id}/{a.memory_id or '-'}" + (f" {text}" if text else ""))
            click.echo(f"      {describe_change(a.before, a.after)} ({a.reason})")
        if len(actions) == limit:
            click.echo(f"  (first {limit} actions; --limit shows more)")


def _print_partitions(report: Any, parts: list[Any]) -> None:
    """Partitions, workers, progress, throughput and errors of a partitioned run."""
    from collections import Counter

    from memstrata.clock import SystemClock

    states = Counter(p.status for p in parts)
    holders = sorted({p.holder for p in parts if p.holder})
    users = sum(p.users for p in parts)
    end = report.finished_at or SystemClock().now()
    starts = [p.started_at for p in parts if p.started_at is not None]
    ends = [p.finished_at for p in parts if p.finished_at is not None]
    # worked from the first claim (a queued run may wait for workers) to the last close
    last = max(ends) if ends and len(ends) == len(parts) else SystemClock().now()
    took = max((last - min(starts)).total_seconds(), 1e-9) if starts else 1e-9
    click.echo(f"  partitions: {len(parts)} ("
               + ", ".join(f"{n} {s}" for s, n in sorted(states.items())) + ")"
               + f"; taken over {sum(max(0, p.claims - 1) for p in parts)} times")
    click.echo(f"  workers now: {len(holders)}" + (f" ({', '.join(holders)})" if holders else ""))
    click.echo(f"  progress: {users} users in {sum(p.batches for p in parts)} batches, "
               f"{users / took:.1f} users/s over {took:.1f} s of work")
    for p in parts:
        spent = "-" if p.started_at is None else \
            f"{((p.finished_at or end) - p.started_at).total_seconds():.1f} s"
        click.echo(f"    #{p.part:<4} {p.status:<8} users {p.users:<6} batches {p.batches:<5} "
                   f"claims {p.claims} {spent}" + (f" by {p.holder}" if p.holder else "")
                   + (f" ({len(p.errors)} errors)" if p.errors else ""))
        for error in p.errors[:3]:
            click.echo(f"        ! {error}")


@click.command()
@url_option
@click.option("--concurrency", type=click.IntRange(min=1), default=None,
              help="Model calls in flight per bucket (default: MEMSTRATA_LLM_CONCURRENCY or 1).")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Buckets this process works at once.")
@click.option("--job", "jobs", multiple=True, type=click.Choice(list(job_names())),
              help="Only runs of these jobs (repeatable; default: every job).")
@click.option("--until-idle", is_flag=True,
              help="Exit when no bucket is left to claim instead of polling for new runs.")
def worker(url: str | None, concurrency: int | None, threads: int, jobs: tuple[str, ...],
           until_idle: bool) -> None:
    """Work partitioned runs (start any number, on any hosts, with one database URL)."""
    from memstrata.consolidation.worker import Worker

    w = Worker(url, concurrency=concurrency, threads=threads, jobs=list(jobs) or None)
    click.echo(f"memstrata worker {w.holder}: started")
    done = w.run_until_idle() if until_idle else w.run_forever()
    click.echo(f"memstrata worker {w.holder}: stopped after {done.partitions} partitions")


@click.command()
@url_option
@click.argument("run_id", callback=_not_blank)
@click.option("--dry-run", is_flag=True, help="Show what would be reverted.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def undo(url: str | None, run_id: str, dry_run: bool, yes: bool) -> None:
    """Revert every recorded action of a run."""
    with _consolidator(url) as jobs:
        target = jobs.get_run(run_id)
        if not dry_run and not yes:
            click.confirm(f"Undo {target.summary_line()}?", abort=True)
        report = jobs.undo(run_id, dry_run=dry_run, progress=True)
        _print_report(report, as_json=False, show=20, manager=jobs.manager)


commands = [consolidate, scheduler, worker, runs, undo]
