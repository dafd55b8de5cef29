"""Core SQL vocabulary shared by every package that owns tables.

One :data:`metadata` holds every table memstrata declares; each table is
declared by the package that owns it (``memory`` its records, users, turns and
tasks; ``consolidation`` its runs, actions, leases and sources; the LLM seam its
call log). The numbered migrations that memory owns create them.

:class:`Transactions` is the small protocol a table owner below ``memory``
needs to write its rows: ``memory``'s ``Database`` satisfies it.
"""

from __future__ import annotations

import os
import time
from contextlib import AbstractContextManager
from typing import Any, Protocol

from sqlalchemy import JSON, Connection, Dialect, MetaData, String
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = ["ID", "USER", "JSONType", "Transactions", "metadata", "new_id"]

metadata = MetaData()



class _JSONDocument(TypeDecorator[Any]):
    """JSON on SQLite, JSONB on PostgreSQL.

    A decorator rather than ``JSON().with_variant(JSONB(), "postgresql")``: the variant
    needs the PostgreSQL dialect package at import time, and importing it pulls in every
    PostgreSQL driver module (asyncpg's among them, ~70 ms of every cold start, also on
    SQLite). Here it is imported only when a PostgreSQL connection asks for the type.
    """

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())


JSONType = _JSONDocument()

ID = String(32)
USER = String(256)


class Transactions(Protocol):
    """Read and write transactions on the system of record."""

    def read(self) -> AbstractContextManager[Connection]: ...

    def write(self) -> AbstractContextManager[Connection]: ...


def new_id() -> str:
    """32 hex digits, time-ordered (48-bit milliseconds + 80 random bits)."""
    millis = int(time.time() * 1000) & ((1 << 48) - 1)
    return f"{millis:012x}{os.urandom(10).hex()}"
