"""SQL tables of the consolidation package (migration 0002).

They are declared on the core's shared :data:`memstrata._sql.metadata`; what
forgetting does to them is :mod:`memstrata.consolidation.erasure`, registered in
the ``memstrata.erasers`` entry-point group (so ``forget`` and ``forget_user``
reach these rows from any process).

* ``consolidation_runs`` - one row per job run: status, checkpoint cursor,
  counts by action, errors, LLM calls and tokens, the method used.
* ``consolidation_actions`` - every change a run made to a record, with the
  changed columns before and after and the reason; ``undo`` replays them
  backwards.
* ``consolidation_leases`` - one row per job: who may run it now, until when,
  and the last scheduled slot it ran for (two schedulers never run a slot twice).
* ``consolidation_sources`` - which sessions and tasks have been summarised
  (and up to which turn), so ``summarize`` is idempotent.
* ``consolidation_partitions`` (migration 0006) - the work queue of a
  partitioned run: one row per bucket of users, claimed by workers with
  ``FOR UPDATE SKIP LOCKED`` under a short heartbeated lease, with its own
  checkpoint cursor, counts and errors (:mod:`._partitions`).
* ``memstrata_scheduler_jobs`` - the scheduler's next run time per job (and, in
  ``job_state``, the crontab it was computed from), so a missed run stays due
  across restarts; the columns are those of APScheduler 3's job store, which
  created the table's first rows before the scheduler became our own loop.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    Unicode,
)

from memstrata._sql import ID, USER, JSONType, metadata

__all__ = [
    "SCHEDULER_JOBS_TABLE",
    "actions",
    "leases",
    "partitions",
    "runs",
    "scheduler_jobs",
    "sources",
]

SCHEDULER_JOBS_TABLE = "memstrata_scheduler_jobs"

runs = Table(
    "consolidation_runs",
    metadata,
    Column("id", ID, primary_key=True),
    #: summarize / expire / conflicts / undo
    Column("job", String(32), nullable=False),
    #: running / finished / failed / interrupted / abandoned
    Column("status", String(16), nullable=False),
    #: the run was restricted to one user (``--user``); NULL = all users
    Column("only_user", USER),
    #: scheduled fire time this run serves (NULL for a manual run)
    Column("slot", Float),
    #: offline / llm / llm+offline / none
    Column("method", String(16), nullable=False),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float),
    Column("heartbeat_at", Float, nullable=False),
    Column("holder", String(200), nullable=False),
    #: checkpoint: the last user whose batch committed (users go in id order)
    Column("cursor", USER),
    Column("batches", Integer, nullable=False),
    Column("resumed", Integer, nullable=False),
    Column("users_done", Integer, nullable=False),
    Column("counts", JSONType, nullable=False),
    Column("errors", JSONType, nullable=False),
    Column("llm_calls", Integer, nullable=False),
    Column("prompt_tokens", Integer, nullable=False),
    Column("completion_tokens", Integer, nullable=False),
    Column("token_budget", Integer),
    #: job options (target run of an undo, thresholds in force)
    Column("options", JSONType, nullable=False),
    #: the undo run that reverted this one
    Column("undone_by", ID),
    #: buckets of a partitioned run, worked by ``memstrata worker`` (NULL: one process)
    Column("partitions", Integer),
    Index("ix_consolidation_runs_job_status", "job", "status"),
    Index("ix_consolidation_runs_started", "started_at"),
)

actions = Table(
    "consolidation_actions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", ID, ForeignKey("consolidation_runs.id"), nullable=False),
    Column("user_id", USER, nullable=False),
    #: the record acted on (NULL for bookkeeping rows such as ``mark_source``)
    Column("memory_id", ID),
    #: demote / delete / purge / revive / merge / absorb / flag_conflict /
    #: supersede / create / update / restore ...
    Column("action", String(32), nullable=False),
    #: changed columns before (NULL: the action created the record)
    Column("before", JSONType),
    #: changed columns after (NULL: the action removed the row for good)
    Column("after", JSONType),
    Column("reason", Text, nullable=False),
    Column("at", Float, nullable=False),
    Column("batch", Integer, nullable=False),
    Index("ix_consolidation_actions_run", "run_id", "id"),
    Index("ix_consolidation_actions_user_memory", "user_id", "memory_id"),
)

leases = Table(
    "consolidation_leases",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("holder", String(200)),
    Column("acquired_at", Float),
    Column("expires_at", Float),
    Column("run_id", ID),
    #: the newest scheduled fire time a run was completed for
    Column("last_slot", Float),
)

partitions = Table(
    "consolidation_partitions",
    metadata,
    Column("run_id", ID, ForeignKey("consolidation_runs.id"), primary_key=True),
    #: the bucket: users whose stable hash modulo the run's ``partitions`` is this
    Column("part", Integer, primary_key=True, autoincrement=False),
    #: pending / running / done / failed
    Column("status", String(16), nullable=False),
    #: the worker holding it (``host:pid:random``), NULL when nobody does
    Column("holder", String(200)),
    #: the holder's lease ends here (epoch seconds) unless its heartbeat renews it
    Column("lease_until", Float),
    Column("heartbeat_at", Float),
    #: times a worker claimed it (more than 1: taken over from a dead worker)
    Column("claims", Integer, nullable=False),
    #: checkpoint: the last user of this bucket whose batch committed
    Column("cursor", USER),
    Column("users_done", Integer, nullable=False),
    Column("batches", Integer, nullable=False),
    Column("counts", JSONType, nullable=False),
    Column("errors", JSONType, nullable=False),
    #: offline / llm / llm+offline / none, as on the run row
    Column("method", String(16), nullable=False),
    Column("started_at", Float),
    Column("finished_at", Float),
    Index("ix_consolidation_partitions_claim", "status", "lease_until"),
)

sources = Table(
    "consolidation_sources",
    metadata,
    Column("user_id", USER, primary_key=True),
    #: "session" or "task"
    Column("kind", String(16), primary_key=True),
    Column("source_id", String(256), primary_key=True),
    #: the last turn id folded in (sessions), 0 for tasks
    Column("last_item", BigInteger, nullable=False),
    #: the summary / lesson record (NULL: nothing worth keeping)
    Column("memory_id", ID),
    Column("run_id", ID, nullable=False),
    Column("at", Float, nullable=False),
)

#: one row per scheduled job (the columns APScheduler 3's job store declared; kept so
#: that no migration is needed)
scheduler_jobs = Table(
    SCHEDULER_JOBS_TABLE,
    metadata,
    Column("id", Unicode(191), primary_key=True),
    Column("next_run_time", Float(25), index=True),
    Column("job_state", LargeBinary, nullable=False),
)
