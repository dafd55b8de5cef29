"""Numbered, append-only schema migrations.

Each migration is applied once, inside the migrating transaction, and recorded
in ``memstrata_migrations``. A migration is either a SQL file per dialect in
``memory/migrations/`` (``NNNN_name.<dialect>.sql``) or a Python function.
Published migrations are never edited: a change is a new number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection

from memstrata.memory._db import read_migration_sql

__all__ = ["MIGRATIONS", "Migration", "apply_migration"]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    #: base name of the SQL files (``<sql>.<dialect>.sql``), or None with ``run``
    sql: str | None = None
    run: Callable[[Connection, str], None] | None = None


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", sql="0001_initial"),
    Migration(2, "consolidation runs, actions, leases, sources", sql="0002_consolidation"),
    Migration(3, "agent model-call log", sql="0003_agent_llm_calls"),
    Migration(4, "pending index-file cleanups of erased users", sql="0004_pending_erasures"),
    Migration(5, "task ids scoped by user: key (user_id, task_id)", sql="0005_task_ids_per_user"),
    Migration(6, "partitioned consolidation runs: partition rows", sql="0006_partitions"),
    Migration(7, "token budget of a run shared by its workers", sql="0007_llm_budgets"),
    Migration(8, "a vector per sentence of a record", sql="0008_sentence_vectors"),
    Migration(9, "the user's records newest first: index (user_id, valid_from)",
              sql="0009_memories_user_valid"),
)


def _statements(script: str) -> list[str]:
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [stmt.strip() for stmt in "\n".join(lines).split(";") if stmt.strip()]


def apply_migration(conn: Connection, migration: Migration, dialect: str) -> None:
    if migration.sql is not None:
        for statement in _statements(read_migration_sql(f"{migration.sql}.{dialect}.sql")):
            conn.exec_driver_sql(statement)
    if migration.run is not None:
        migration.run(conn, dialect)
