"""Erasing all of one user's data: every table, in one transaction."""

from __future__ import annotations

import importlib
import importlib.util

from sqlalchemy import Connection, Table, delete, func, insert, select

from memstrata.memory._schema import memory_events, metadata, users

__all__ = ["erase_user", "user_tables"]


#: modules of other packages that declare user tables on ``metadata``; imported
#: before an erasure so that a process which never imported them still erases them
SCHEMA_MODULES = ("memstrata.llm._calls", "memstrata.consolidation._tables")


def user_tables() -> list[Table]:
    """Every table with a ``user_id`` column (children before parents), but ``users``.

    Tables that other packages define on the same ``metadata`` are included
    automatically (their modules are listed in ``SCHEMA_MODULES``), so an
    erasure can never miss one.
    """
    for name in SCHEMA_MODULES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
    return [
        t for t in reversed(metadata.sorted_tables)
        if "user_id" in t.c and t is not users
    ]


def erase_user(conn: Connection, user_id: str, at: float, reason: str) -> dict[str, int]:
    """Delete every row of the user; record the erasure (counts only, no content)."""
    counts: dict[str, int] = {}
    for table in user_tables():
        n = conn.execute(
            select(func.count()).select_from(table).where(table.c.user_id == user_id)
        ).scalar_one()
        if n:
            conn.execute(delete(table).where(table.c.user_id == user_id))
        counts[table.name] = int(n)
    conn.execute(delete(users).where(users.c.user_id == user_id))
    conn.execute(
        insert(memory_events).values(
            user_id=user_id,
            memory_id=None,
            action="user_erased",
            reason=reason,
            at=at,
            seq=None,
            details=counts,
        )
    )
    return counts
