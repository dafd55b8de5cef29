"""Helpers shared by the consolidation tests."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from memstrata import MemoryManager
from memstrata.memory._schema import memories, memory_vectors


def rows(mm: MemoryManager, user: str | None = None) -> dict[str, dict[str, Any]]:
    """Every memory row (all statuses) by id, without ``seq`` (bookkeeping)."""
    query = select(memories)
    if user is not None:
        query = query.where(memories.c.user_id == user)
    with mm.db.read() as conn:
        out = {}
        for r in conn.execute(query):
            m = dict(r._mapping)
            m.pop("seq")
            out[m["id"]] = m
        return out


def vectors(mm: MemoryManager) -> dict[str, bytes]:
    with mm.db.read() as conn:
        return {r.memory_id: bytes(r.vector) for r in conn.execute(select(memory_vectors))}


def table(mm: MemoryManager, t: Any) -> list[dict[str, Any]]:
    with mm.db.read() as conn:
        return sorted((dict(r._mapping) for r in conn.execute(select(t))), key=repr)
