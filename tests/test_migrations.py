"""Schema migrations: numbered, applied once, recorded, and matching the code's tables."""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import (
    JSON,
    Column,
    Connection,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    insert,
    inspect,
    select,
)
from sqlalchemy.sql.elements import quoted_name

import memstrata
from memstrata._sql import metadata
from memstrata.errors import SchemaVersionError
from memstrata.memory._db import Database
from memstrata.memory._migrations import MIGRATIONS
from memstrata.memory._schema import migrations_table


def _import_everything() -> None:
    """Every module that may define tables on the shared metadata."""
    for info in pkgutil.walk_packages(memstrata.__path__, "memstrata."):
        if ".examples" in info.name:
            continue
        importlib.import_module(info.name)


def test_fresh_database_gets_every_migration_once(db_url: str):
    db = Database(db_url)
    assert db.migrate() == MIGRATIONS[-1].version
    with db.read() as conn:
        first = conn.execute(select(migrations_table).order_by(migrations_table.c.version)).all()
    assert [r.version for r in first] == [m.version for m in MIGRATIONS]
    db.migrate()
    with db.read() as conn:
        again = conn.execute(select(migrations_table).order_by(migrations_table.c.version)).all()
    assert again == first
    db.dispose()


def _schema_diffs(conn: Connection, target: MetaData) -> list[Any]:
    """What separates the database on ``conn`` from ``target``; empty when they agree.

    Alembic's autogenerate compares tables, columns (type, nullability), indexes
    (name, columns, unique), unique constraints and foreign keys (target columns
    and, where the backend reflects them, ``ondelete``/``onupdate``). Two gaps are
    closed here: it does not compare primary keys (checked by column order), and
    it lets a type with no arguments match one with arguments, so ``String()``
    would pass for ``VARCHAR(32)`` (string lengths are compared here).
    Server defaults are not compared: the schema declares none (no column has a
    ``server_default``) and the migrations write none.
    """
    context = MigrationContext.configure(
        conn, opts={"compare_type": True, "compare_server_default": False}
    )
    diffs: list[Any] = list(compare_metadata(context, target))
    inspector = inspect(conn)
    tables_in_db = set(inspector.get_table_names())
    for name, table in target.tables.items():
        if name not in tables_in_db:
            continue  # reported by Alembic as add_table
        reflected = inspector.get_pk_constraint(name)["constrained_columns"]
        declared = [c.name for c in table.primary_key.columns]
        if reflected != declared:
            diffs.append(("primary_key", name, reflected, declared))
        for column in inspector.get_columns(name):
            if column["name"] not in table.c:
                continue  # reported by Alembic as remove_column
            found, declared_type = column["type"], table.c[column["name"]].type
            if (isinstance(found, String) and isinstance(declared_type, String)
                    and found.length != declared_type.length):
                diffs.append(("string_length", name, column["name"], found, declared_type))
    return diffs


def test_migrated_schema_equals_the_declared_metadata(db_url: str):
    """The migrations and the SQLAlchemy tables describe one schema, to the column type.

    No difference is filtered out. JSON (JSONB on PostgreSQL through the
    variant), BOOLEAN on SQLite and SERIAL ids reflect as declared. The
    scheduler's ``Float(25)`` reflects as FLOAT on SQLite and DOUBLE PRECISION
    on PostgreSQL; Alembic takes both as a match, rightly: each is an 8-byte
    float there, and float precision is not compared beyond that.
    """
    _import_everything()
    db = Database(db_url)
    try:
        db.migrate()
        with db.read() as conn:
            diffs = _schema_diffs(conn, metadata)
    finally:
        db.dispose()
    assert diffs == []


def _copy(source: MetaData) -> MetaData:
    target = MetaData()
    for table in source.sorted_tables:
        table.to_metadata(target)
    return target


def _index(table: Table, name: str) -> Index:
    return next(ix for ix in table.indexes if ix.name == name)


def _set_type(table: str, column: str, type_: Any) -> Callable[[MetaData], None]:
    def mutate(m: MetaData) -> None:
        m.tables[table].c[column].type = type_

    return mutate


def _nullable(m: MetaData) -> None:
    m.tables["memories"].c.context.nullable = False


def _drop_index(m: MetaData) -> None:
    table = m.tables["memories"]
    table.indexes.discard(_index(table, "ix_memories_user_seq"))


def _extra_index(m: MetaData) -> None:
    Index("ix_memories_scope", m.tables["memories"].c.scope)


def _rename_index(m: MetaData) -> None:
    _index(m.tables["turns"], "ix_turns_user_session").name = quoted_name(
        "ix_turns_by_session", None
    )


def _index_columns(m: MetaData) -> None:
    table = m.tables["tasks"]
    table.indexes.discard(_index(table, "ix_tasks_user_status"))
    Index("ix_tasks_user_status", table.c.user_id, table.c.scope)


def _unique_index(m: MetaData) -> None:
    _index(m.tables["memories"], "ix_memories_user_hash").unique = True


def _drop_unique_constraint(m: MetaData) -> None:
    table = m.tables["task_steps"]
    table.constraints.discard(
        next(c for c in table.constraints if c.name == "uq_task_steps_task_step")
    )


def _fk_ondelete(m: MetaData) -> None:
    (fk,) = m.tables["memory_vectors"].foreign_key_constraints
    fk.ondelete = None
    for element in fk.elements:
        element.ondelete = None


def _drop_fk(m: MetaData) -> None:
    table = m.tables["consolidation_actions"]
    (fk,) = table.foreign_key_constraints
    table.constraints.discard(fk)


def _primary_key(m: MetaData) -> None:
    table = m.tables["consolidation_sources"]
    table.c.source_id.primary_key = False
    table.append_constraint(PrimaryKeyConstraint(table.c.user_id, table.c.kind))


def _extra_column(m: MetaData) -> None:
    m.tables["users"].append_column(Column("plan", String(16)))


def _missing_table(m: MetaData) -> None:
    m.remove(m.tables["memstrata_meta"])


#: deliberately wrong declarations, each of which the comparison must report;
#: the dialect, where given, is the only one on which the declaration is wrong
_WRONG_DECLARATIONS: list[tuple[str, Callable[[MetaData], None], str | None]] = [
    ("varchar width", _set_type("memories", "content_hash", String(64)), None),
    ("varchar declared without length", _set_type("memories", "content_hash", String()), None),
    ("bigint declared integer", _set_type("users", "seq", Integer()), None),
    ("boolean declared integer", _set_type("memories", "pinned", Integer()), None),
    ("float declared integer", _set_type("memories", "confidence", Integer()), None),
    ("json declared text", _set_type("memories", "metadata", Text()), None),
    ("jsonb declared plain json", _set_type("memories", "metadata", JSON()), "postgresql"),
    ("blob declared text", _set_type("memory_vectors", "vector", Text()), None),
    ("nullability", _nullable, None),
    ("index missing", _drop_index, None),
    ("index extra", _extra_index, None),
    ("index name", _rename_index, None),
    ("index columns", _index_columns, None),
    ("index unique", _unique_index, None),
    ("unique constraint", _drop_unique_constraint, None),
    ("foreign key ondelete", _fk_ondelete, None),
    ("foreign key missing", _drop_fk, None),
    ("primary key columns", _primary_key, None),
    ("column extra", _extra_column, None),
    ("table missing", _missing_table, None),
]


def test_the_schema_comparison_reports_a_wrong_declaration(db_url: str):
    """The empty diff above means something: each kind of drift is caught."""
    _import_everything()
    db = Database(db_url)
    missed = []
    try:
        db.migrate()
        with db.read() as conn:
            assert _schema_diffs(conn, _copy(metadata)) == []
            for label, mutate, only_on in _WRONG_DECLARATIONS:
                wrong = _copy(metadata)
                mutate(wrong)
                if _schema_diffs(conn, wrong) == [] and only_on in (None, db.dialect):
                    missed.append(label)
    finally:
        db.dispose()
    assert missed == []


def test_a_newer_database_is_refused(sqlite_url: str):
    db = Database(sqlite_url)
    db.migrate()
    with db.write() as conn:
        conn.execute(insert(migrations_table).values(version=999, name="future", applied_at=0))
    with pytest.raises(SchemaVersionError):
        db.migrate()
    db.dispose()


def test_concurrent_first_opens_migrate_once(db_url: str):
    errors: list[BaseException] = []

    def open_db() -> None:
        try:
            d = Database(db_url)
            d.migrate()
            d.dispose()
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_db) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    db = Database(db_url)
    with db.read() as conn:
        versions = conn.execute(select(migrations_table.c.version)).scalars().all()
    assert sorted(versions) == [m.version for m in MIGRATIONS]
    db.dispose()
