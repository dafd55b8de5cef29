"""Schema migrations: numbered, applied once, recorded, and matching the code's tables."""

from __future__ import annotations

import importlib
import pkgutil
import threading

import pytest
from sqlalchemy import insert, inspect, select

import memstrata
from memstrata.errors import SchemaVersionError
from memstrata.memory._db import Database
from memstrata.memory._migrations import MIGRATIONS
from memstrata.memory._schema import metadata, migrations_table


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


def test_migrated_schema_matches_the_tables_the_code_uses(db_url: str):
    _import_everything()
    db = Database(db_url)
    db.migrate()
    inspector = inspect(db.engine)
    in_db = set(inspector.get_table_names())
    in_code = set(metadata.tables)
    assert in_code - in_db == set(), "tables the code uses but no migration creates"
    extra = in_db - in_code - {"apscheduler_jobs"}
    assert extra == set(), "tables a migration creates but the code does not know"
    for name, table in metadata.tables.items():
        columns = {c["name"]: c for c in inspector.get_columns(name)}
        assert set(columns) == {c.name for c in table.columns}, name
        for column in table.columns:
            assert columns[column.name]["nullable"] == column.nullable, (name, column.name)
    db.dispose()


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
