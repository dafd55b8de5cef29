"""The current SQL schema (SQLAlchemy Core tables).

This is what the code queries. The database is brought to it by the numbered
migrations in :mod:`memstrata.memory._migrations`, which are snapshots and are
never edited; ``tests/test_migrations.py`` checks that the two agree.

Times are float epoch seconds (UTC): cheap to compare in set-based SQL on both
SQLite and PostgreSQL. Every row that holds user data carries ``user_id`` and
every query filters on it.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from memstrata._sql import ID, USER, JSONType, metadata

__all__ = [
    "ID", "USER", "JSONType", "memories", "memory_events", "memory_vectors", "meta_table",
    "metadata", "migrations_table", "pending_erasures", "task_steps", "tasks", "turns", "users",
]

meta_table = Table(
    "memstrata_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

migrations_table = Table(
    "memstrata_migrations",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("name", String(200), nullable=False),
    Column("applied_at", Float, nullable=False),
)

#: one row per user: the change sequence that derived indexes sync from
users = Table(
    "users",
    metadata,
    Column("user_id", USER, primary_key=True),
    Column("seq", BigInteger, nullable=False),
    #: changes on every erase/re-create, so a stale derived index is detected
    Column("generation", String(32), nullable=False),
    #: "name:dim" of the model that made this user's vectors
    Column("embed_model", String(200)),
    Column("created_at", Float, nullable=False),
)

memories = Table(
    "memories",
    metadata,
    Column("id", ID, primary_key=True),
    Column("user_id", USER, nullable=False),
    Column("scope", String(64), nullable=False),
    Column("type", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("context", Text),
    Column("content_hash", String(32), nullable=False),
    Column("subject", String(256)),
    Column("attribute", String(256)),
    Column("value", Text),
    #: hash of the normalised (subject, attribute): slot lookups are one index probe
    Column("slot_key", String(32)),
    Column("confidence", Float, nullable=False),
    Column("importance", Float, nullable=False),
    Column("source", String(32), nullable=False),
    Column("session_id", String(256)),
    Column("task_id", String(256)),
    Column("step_id", String(256)),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("valid_from", Float, nullable=False),
    Column("valid_to", Float),
    Column("last_accessed_at", Float),
    Column("access_count", Integer, nullable=False),
    Column("expires_at", Float),
    Column("status", String(24), nullable=False),
    Column("pinned", Boolean, nullable=False),
    Column("supersedes", ID),
    Column("superseded_by", ID),
    Column("conflict_group", ID),
    Column("metadata", JSONType, nullable=False),
    #: users.seq at the last change that derived indexes must see
    Column("seq", BigInteger, nullable=False),
    Index("ix_memories_user_seq", "user_id", "seq"),
    Index("ix_memories_user_slot", "user_id", "scope", "slot_key"),
    Index("ix_memories_user_hash", "user_id", "content_hash"),
    Index("ix_memories_status_expiry", "status", "expires_at"),
    Index("ix_memories_user_group", "user_id", "conflict_group"),
    #: a user's records newest first: without it SQLite answered "the user's latest
    #: statements" and "the user's values of a slot" through the status index, reading
    #: every user's active rows (migration 9)
    Index("ix_memories_user_valid", "user_id", "valid_from"),
)

memory_vectors = Table(
    "memory_vectors",
    metadata,
    Column(
        "memory_id", ID, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("user_id", USER, nullable=False),
    Column("model", String(200), nullable=False),
    Column("dim", Integer, nullable=False),
    #: little-endian float16
    Column("vector", LargeBinary, nullable=False),
    #: one float16 vector per sentence (``dim`` each) of a record of two or more
    #: sentences (:func:`memstrata._text.sentences`), NULL otherwise: the relevance
    #: gate admits a record when one of its sentences is close enough to the query
    Column("sentences", LargeBinary),
)

#: audit trail of changes; forget events never hold content
memory_events = Table(
    "memory_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", USER, nullable=False),
    Column("memory_id", ID),
    Column("action", String(32), nullable=False),
    Column("reason", Text, nullable=False),
    Column("at", Float, nullable=False),
    #: set when the event removes a record from derived indexes
    Column("seq", BigInteger),
    Column("details", JSONType, nullable=False),
    Index("ix_events_user_seq", "user_id", "seq"),
    Index("ix_events_user_memory", "user_id", "memory_id"),
)

#: index-file cleanups of erased users still to do (the shard file key, not the user id);
#: written in the erasing transaction, removed once the files are gone
pending_erasures = Table(
    "pending_erasures",
    metadata,
    Column("file_key", String(64), primary_key=True),
    Column("requested_at", Float, nullable=False),
)

turns = Table(
    "turns",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", USER, nullable=False),
    Column("session_id", String(256), nullable=False),
    Column("role", String(32), nullable=False),
    Column("text", Text, nullable=False),
    Column("at", Float, nullable=False),
    Column("metadata", JSONType, nullable=False),
    Index("ix_turns_user_session", "user_id", "session_id", "id"),
)

#: a task id is unique per user, not globally (migration 0005): another user's id can
#: neither be claimed nor detected
tasks = Table(
    "tasks",
    metadata,
    Column("task_id", String(64), nullable=False),
    Column("user_id", USER, nullable=False),
    Column("scope", String(64), nullable=False),
    Column("goal", JSONType, nullable=False),
    Column("status", String(16), nullable=False),
    #: the planner's task table (subtasks, criteria, attempts) as JSON
    Column("state", JSONType, nullable=False),
    Column("feedback", JSONType),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("finished_at", Float),
    #: optimistic concurrency: bumped on every update
    Column("version", Integer, nullable=False),
    PrimaryKeyConstraint("user_id", "task_id"),
    Index("ix_tasks_user_status", "user_id", "status"),
)

task_steps = Table(
    "task_steps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("task_id", String(64), nullable=False),
    Column("user_id", USER, nullable=False),
    Column("step_no", Integer, nullable=False),
    Column("payload", JSONType, nullable=False),
    Column("at", Float, nullable=False),
    ForeignKeyConstraint(["user_id", "task_id"], ["tasks.user_id", "tasks.task_id"],
                         ondelete="CASCADE"),
    UniqueConstraint("user_id", "task_id", "step_no", name="uq_task_steps_task_step"),
)
