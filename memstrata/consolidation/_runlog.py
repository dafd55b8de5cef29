"""SQL of the run log: run rows, their checkpoints, recorded actions, listings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, func, insert, select, update

from memstrata.clock import from_epoch
from memstrata.consolidation._job import combine_methods
from memstrata.consolidation._tables import actions, runs
from memstrata.consolidation.reports import ActionRecord, Method, PlannedAction, RunReport
from memstrata.types import Status

__all__ = [
    "checkpoint",
    "create_run",
    "finish_run",
    "get_run",
    "list_actions",
    "list_runs",
    "record_actions",
    "resumable_run",
    "to_report",
]

#: errors kept per run (the count keeps going)
MAX_ERRORS_KEPT = 200


def create_run(
    conn: Connection, *, run_id: str, job: str, only_user: str | None, slot: float | None,
    holder: str, now: float, token_budget: int | None, options: dict[str, Any],
    status: str = "running", partitions: int | None = None,
) -> None:
    conn.execute(
        insert(runs).values(
            id=run_id, job=job, status=status, partitions=partitions, only_user=only_user,
            slot=slot,
            method="none", started_at=now, finished_at=None, heartbeat_at=now, holder=holder,
            cursor=None, batches=0, resumed=0, users_done=0, counts={}, errors=[],
            llm_calls=0, prompt_tokens=0, completion_tokens=0, token_budget=token_budget,
            options=options, undone_by=None,
        )
    )


def resumable_run(conn: Connection, job: str, only_user: str | None,
                  options: dict[str, Any], now: float) -> Row[Any] | None:
    """The unfinished run of ``job`` to continue (we hold the lease, so its holder is
    gone). Unfinished runs with other options are marked ``abandoned``: their
    committed batches stay valid and undoable, and this run redoes the rest."""
    found = conn.execute(
        select(runs)
        .where(runs.c.job == job, runs.c.status.in_(["running", "interrupted"]))
        .order_by(runs.c.started_at.desc(), runs.c.id.desc())
    ).all()
    chosen = None
    for row in found:
        same = row.only_user == only_user and _same_target(row.options, options)
        if chosen is None and same:
            chosen = row
            continue
        conn.execute(
            update(runs).where(runs.c.id == row.id).values(
                status="abandoned", finished_at=now,
                errors=[*list(row.errors or []), "abandoned: a run with other options started"],
            )
        )
    return chosen


def _same_target(a: dict[str, Any] | None, b: dict[str, Any]) -> bool:
    return (a or {}).get("target") == b.get("target")


def resume(conn: Connection, run_id: str, holder: str, now: float) -> None:
    conn.execute(
        update(runs).where(runs.c.id == run_id).values(
            status="running", holder=holder, heartbeat_at=now, resumed=runs.c.resumed + 1,
        )
    )


def checkpoint(
    conn: Connection,
    run_id: str,
    *,
    cursor: str,
    users: int,
    counts: dict[str, int],
    errors: Sequence[str],
    method: Method,
    llm: tuple[int, int, int],
    now: float,
) -> None:
    """Add one committed batch to the run row (inside the batch transaction)."""
    row = conn.execute(
        select(runs.c.counts, runs.c.errors, runs.c.method).where(runs.c.id == run_id)
    ).one()
    merged = dict(row.counts or {})
    for key, n in counts.items():
        merged[key] = int(merged.get(key, 0)) + int(n)
    kept = [*list(row.errors or []), *errors][:MAX_ERRORS_KEPT]
    calls, prompt, completion = llm
    conn.execute(
        update(runs).where(runs.c.id == run_id).values(
            cursor=cursor,
            batches=runs.c.batches + 1,
            users_done=runs.c.users_done + users,
            counts=merged,
            errors=kept,
            method=combine_methods(row.method, method),
            llm_calls=runs.c.llm_calls + calls,
            prompt_tokens=runs.c.prompt_tokens + prompt,
            completion_tokens=runs.c.completion_tokens + completion,
            heartbeat_at=now,
        )
    )


def finish_run(conn: Connection, run_id: str, status: str, now: float, *,
               errors: Sequence[str] = (), method: Method | None = None,
               llm: tuple[int, int, int] = (0, 0, 0)) -> None:
    row = conn.execute(
        select(runs.c.errors, runs.c.method).where(runs.c.id == run_id)
    ).one()
    values: dict[str, Any] = {"status": status, "finished_at": now, "heartbeat_at": now}
    if errors:
        values["errors"] = [*list(row.errors or []), *errors][:MAX_ERRORS_KEPT]
    if method is not None:
        values["method"] = combine_methods(row.method, method)
    calls, prompt, completion = llm
    if calls or prompt or completion:
        values["llm_calls"] = runs.c.llm_calls + calls
        values["prompt_tokens"] = runs.c.prompt_tokens + prompt
        values["completion_tokens"] = runs.c.completion_tokens + completion
    conn.execute(update(runs).where(runs.c.id == run_id).values(**values))


def record_actions(conn: Connection, run_id: str, batch: int, now: float,
                   done: Sequence[PlannedAction]) -> None:
    if not done:
        return
    conn.execute(
        insert(actions),
        [
            {
                "run_id": run_id, "user_id": a.user_id, "memory_id": a.memory_id,
                "action": a.action, "before": a.before, "after": a.after, "reason": a.reason,
                "at": now, "batch": batch,
            }
            for a in done
        ],
    )


def to_report(row: Row[Any], *, planned: tuple[PlannedAction, ...] = ()) -> RunReport:
    return RunReport(
        run_id=row.id,
        job=row.job,
        status=row.status,
        dry_run=False,
        started_at=from_epoch(row.started_at),
        finished_at=None if row.finished_at is None else from_epoch(row.finished_at),
        counts={str(k): int(v) for k, v in dict(row.counts or {}).items()},
        errors=tuple(str(e) for e in row.errors or []),
        method=row.method,
        llm_calls=int(row.llm_calls),
        prompt_tokens=int(row.prompt_tokens),
        completion_tokens=int(row.completion_tokens),
        token_budget=row.token_budget,
        users=int(row.users_done),
        batches=int(row.batches),
        resumed=int(row.resumed),
        only_user=row.only_user,
        slot=None if row.slot is None else from_epoch(row.slot),
        undone_by=row.undone_by,
        options=dict(row.options or {}),
        planned=planned,
    )


def get_run(conn: Connection, run_id: str) -> Row[Any] | None:
    return conn.execute(select(runs).where(runs.c.id == run_id)).first()


def list_runs(conn: Connection, *, job: str | None, limit: int) -> list[Row[Any]]:
    query = select(runs)
    if job is not None:
        query = query.where(runs.c.job == job)
    return list(conn.execute(query.order_by(runs.c.started_at.desc(), runs.c.id.desc())
                             .limit(limit)))


def list_actions(conn: Connection, run_id: str, *, user_id: str | None = None,
                 user_ids: list[str] | None = None, limit: int | None = None,
                 newest_first: bool = False) -> list[ActionRecord]:
    query = select(actions).where(actions.c.run_id == run_id)
    if user_id is not None:
        query = query.where(actions.c.user_id == user_id)
    if user_ids is not None:
        query = query.where(actions.c.user_id.in_(user_ids))
    query = query.order_by(actions.c.id.desc() if newest_first else actions.c.id)
    if limit is not None:
        query = query.limit(limit)
    return [
        ActionRecord(
            id=int(r.id), run_id=r.run_id, user_id=r.user_id, memory_id=r.memory_id,
            action=r.action, reason=r.reason,
            before=None if r.before is None else dict(r.before),
            after=None if r.after is None else dict(r.after),
            at=from_epoch(r.at), batch=int(r.batch),
        )
        for r in conn.execute(query)
    ]


def undone_pairs(conn: Connection, user_id: str) -> set[frozenset[str]]:
    """Pairs of the user's records that an undo took apart: a record restored from being
    superseded by (merged into) another, and records restored from one conflict group.
    The ``conflicts`` job does not join them again; a new record is new evidence."""
    pending = Status.PENDING_CONFIRMATION.value
    pairs: set[frozenset[str]] = set()
    groups: dict[tuple[str, str], set[str]] = {}
    query = (select(actions.c.run_id, actions.c.memory_id, actions.c.before)
             .join(runs, runs.c.id == actions.c.run_id)
             .where(actions.c.user_id == user_id, actions.c.action == "restore",
                    runs.c.job == "undo"))
    for run_id, memory_id, before in conn.execute(query):
        was = dict(before or {})
        if memory_id is None:
            continue
        if was.get("superseded_by"):
            pairs.add(frozenset((str(memory_id), str(was["superseded_by"]))))
        if was.get("conflict_group") and was.get("status") == pending:
            groups.setdefault((str(run_id), str(was["conflict_group"])), set()).add(
                str(memory_id))
    for members in groups.values():
        pairs |= {frozenset((x, y)) for x in members for y in members if x < y}
    return pairs


def action_users(conn: Connection, run_id: str, after: str | None,
                 limit: int | None) -> list[str]:
    query = select(actions.c.user_id).where(actions.c.run_id == run_id)
    if after is not None:
        query = query.where(actions.c.user_id > after)
    query = query.group_by(actions.c.user_id).order_by(actions.c.user_id)
    if limit is not None:
        query = query.limit(limit)
    return [str(u) for u in conn.execute(query).scalars()]


def count_actions(conn: Connection, run_id: str) -> int:
    return int(conn.execute(
        select(func.count()).select_from(actions).where(actions.c.run_id == run_id)
    ).scalar_one())
