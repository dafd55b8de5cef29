"""The SQL connection: engine set-up, transactions, migrations, error translation.

SQLite (the embedded default) runs in WAL mode with ``synchronous=NORMAL`` and a
busy timeout; write transactions start with ``BEGIN IMMEDIATE`` so two writers
queue instead of failing on lock upgrade. PostgreSQL goes through psycopg 3.
Every SQLAlchemy error leaving this module is a :class:`~memstrata.errors.StorageError`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, insert, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from memstrata.errors import (
    ClosedError,
    InvalidURLError,
    MissingDependencyError,
    ReadOnlyStorageError,
    SchemaVersionError,
    StorageError,
    StorageFullError,
)
from memstrata.memory._schema import meta_table, migrations_table

__all__ = ["Database", "parse_url"]

SQLITE_BUSY_TIMEOUT_MS = 30_000
SQLITE_CACHE_KIB = 32 * 1024
SQLITE_MMAP_BYTES = 256 * 1024 * 1024
_WRITE_OPTION = "memstrata_write"
#: primary result codes (the low byte of an extended code)
_SQLITE_READONLY, _SQLITE_FULL, _SQLITE_CANTOPEN = 8, 13, 14
#: PostgreSQL: read_only_sql_transaction, disk_full
_PG_READ_ONLY, _PG_DISK_FULL = "25006", "53100"


def parse_url(url: str | URL) -> URL:
    """Validate a database URL; PostgreSQL URLs are pointed at psycopg 3.

    Refused with :class:`InvalidURLError`: another PostgreSQL driver (asyncpg,
    psycopg2: the engine is synchronous psycopg 3), SQLite URI filenames
    (``file:...``, ``?uri=true``: the path would be taken literally and a
    ``./file:`` folder created), NUL or lone surrogates anywhere in the URL.
    """
    if not isinstance(url, str | URL):
        raise InvalidURLError(f"a database URL is a string, not {type(url).__name__}")
    if isinstance(url, str):
        if not url.strip():
            raise InvalidURLError("the database URL is empty")
        try:
            url.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidURLError("the database URL contains a lone surrogate") from exc
        if "\x00" in url:
            raise InvalidURLError("the database URL contains a NUL character")
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise InvalidURLError(f"cannot parse database URL {str(url)!r}: {exc}") from exc
    backend = parsed.get_backend_name()
    if backend in ("postgres", "postgresql"):
        if parsed.drivername in ("postgres", "postgresql"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        if parsed.drivername != "postgresql+psycopg":
            raise InvalidURLError(
                f"unsupported PostgreSQL driver {parsed.drivername!r}: use postgresql:// "
                "(memstrata connects through psycopg 3)"
            )
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError("psycopg", "postgres") from exc
        return parsed
    if backend == "sqlite":
        if parsed.drivername != "sqlite":
            raise InvalidURLError(f"unsupported SQLite driver {parsed.drivername!r}")
        if "uri" in parsed.query or (parsed.database or "").startswith("file:"):
            raise InvalidURLError(
                "SQLite URI filenames (file:..., ?uri=true) are not supported: "
                "use sqlite:///path/to/file.db"
            )
        return parsed
    raise InvalidURLError(
        f"unsupported database {backend!r}: memstrata runs on SQLite and PostgreSQL"
    )


class Database:
    """One engine plus the transaction helpers the stores use."""

    def __init__(self, url: str | URL, *, echo: bool = False) -> None:
        self.url = parse_url(url)
        self.dialect = self.url.get_backend_name()
        self.memory_db = self.dialect == "sqlite" and self.url.database in (None, "", ":memory:")
        self.closed = False
        #: opened read-only: a SQLite file whose directory cannot be written (see
        #: :meth:`_create_engine`); every write raises ReadOnlyStorageError
        self.read_only = False
        try:
            self.engine = self._create_engine(echo)
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot open {self.safe_url}: {exc}") from exc

    @property
    def safe_url(self) -> str:
        """The URL with any password hidden."""
        return self.url.render_as_string(hide_password=True)

    @property
    def sqlite_path(self) -> Path | None:
        if self.dialect != "sqlite" or self.memory_db or self.url.database is None:
            return None
        return Path(self.url.database).resolve()

    def _create_engine(self, echo: bool) -> Engine:
        if self.dialect == "sqlite":
            kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False}}
            if self.memory_db:
                kwargs["poolclass"] = StaticPool
            else:
                path = Path(str(self.url.database)).expanduser()
                self._check_sqlite_location(path)
                if self.read_only:
                    uri = f"file:{path.resolve()}?mode=ro&immutable=1"
                    kwargs["creator"] = lambda: sqlite3.connect(
                        uri, uri=True, check_same_thread=False)
            engine = create_engine(self.url, echo=echo, **kwargs)
            _install_sqlite_hooks(engine, wal=not self.memory_db and not self.read_only)
            return engine
        return create_engine(self.url, echo=echo, pool_pre_ping=True, pool_size=5,
                             max_overflow=10)

    def _check_sqlite_location(self, path: Path) -> None:
        """Open-time checks of a SQLite file's directory.

        SQLite in WAL mode must create ``-wal`` and ``-shm`` files beside the
        database even to read it. In a directory that cannot be written (a
        read-only medium or mount, or no permission) an existing database is
        opened read-only and *immutable* - the only way SQLite reads WAL databases
        there - so reads work and every write raises
        :class:`ReadOnlyStorageError`; if a ``-wal`` file is there, commits not yet
        checkpointed would be skipped: refused, with the reason. A database that
        does not exist yet cannot be created there: refused at open.
        """
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _os_failure(exc, f"cannot create the data directory {path.parent}") from exc
        if os.access(path.parent, os.W_OK):
            return
        if not path.exists():
            raise ReadOnlyStorageError(
                f"cannot create the database {path}: its directory is read-only "
                "(a read-only medium or mount, or no write permission)")
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise ReadOnlyStorageError(
                f"cannot open {path}: its directory is read-only and its write-ahead log "
                f"{wal.name} holds commits that only a writable directory can read; "
                "open it once where it can be written")
        self.read_only = True

    def _failure(self, exc: SQLAlchemyError, what: str) -> StorageError:
        """The most specific StorageError for a failed read or write: a full disk and
        a read-only database get their own type and say so."""
        orig = getattr(exc, "orig", None)
        code = getattr(orig, "sqlite_errorcode", None)
        primary = None if code is None else int(code) & 0xFF
        sqlstate = getattr(orig, "sqlstate", None)
        where = f"{what} on {self.safe_url}"
        said = (str(orig if orig is not None else exc).strip().splitlines() or [""])[0]
        if primary == _SQLITE_FULL or sqlstate == _PG_DISK_FULL:
            return StorageFullError(f"{where}: disk full ({said})")
        path = self.sqlite_path
        if (primary == _SQLITE_READONLY or sqlstate == _PG_READ_ONLY or (
                primary == _SQLITE_CANTOPEN and path is not None
                and not os.access(path.parent, os.W_OK))):
            return ReadOnlyStorageError(
                f"{where}: the database is read-only ({said})")
        return StorageError(f"{where}: {exc}")

    def _connect(self) -> Connection:
        """A pooled connection; a refused or failed connection says so (it is neither
        a read nor a write failure), naming the URL without its password."""
        if self.closed:
            raise ClosedError("the memory manager is closed")
        try:
            return self.engine.connect()
        except SQLAlchemyError as exc:
            raise StorageError(
                f"cannot connect to {self.safe_url}: {_first_line(exc)}") from exc

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction (deferred on SQLite: takes no write lock)."""
        conn = self._connect()
        try:
            with conn, conn.begin():
                yield conn
        except SQLAlchemyError as exc:
            raise self._failure(exc, "database read failed") from exc

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: all or nothing. ``BEGIN IMMEDIATE`` on SQLite."""
        if self.read_only:
            raise ReadOnlyStorageError(
                f"cannot write to {self.safe_url}: it was opened read-only (its directory "
                "cannot be written)")
        conn = self._connect()
        try:
            with conn:
                conn.execution_options(**{_WRITE_OPTION: True})
                with conn.begin():
                    yield conn
        except SQLAlchemyError as exc:
            raise self._failure(exc, "database write failed") from exc

    def lock_migrations(self, conn: Connection) -> None:
        """Serialise concurrent migrators (SQLite is already, by BEGIN IMMEDIATE)."""
        if self.dialect == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(727271)"))

    def migrate(self) -> int:
        """Apply pending migrations; return the schema version."""
        from memstrata.memory._migrations import MIGRATIONS, apply_migration

        latest = MIGRATIONS[-1].version
        if self.read_only:  # usable if nothing is left to apply
            with self.read() as conn:
                applied = set(conn.execute(select(migrations_table.c.version)).scalars())
            missing = {m.version for m in MIGRATIONS} - applied
            if missing:
                raise ReadOnlyStorageError(
                    f"{self.safe_url} needs migrations {sorted(missing)} but is read-only")
            if max(applied, default=0) > latest:
                raise SchemaVersionError(
                    f"database schema version {max(applied)} is newer than this memstrata "
                    f"({latest}); upgrade memstrata")
            return latest
        with self.write() as conn:
            self.lock_migrations(conn)
            migrations_table.create(conn, checkfirst=True)
            applied = set(conn.execute(select(migrations_table.c.version)).scalars())
            newest_known = max(applied, default=0)
            if newest_known > latest:
                raise SchemaVersionError(
                    f"database schema version {newest_known} is newer than this memstrata "
                    f"({latest}); upgrade memstrata"
                )
            for migration in MIGRATIONS:
                if migration.version in applied:
                    continue
                apply_migration(conn, migration, self.dialect)
                conn.execute(
                    insert(migrations_table).values(
                        version=migration.version, name=migration.name, applied_at=time.time()
                    )
                )
            if conn.execute(
                select(meta_table.c.value).where(meta_table.c.key == "db_uuid")
            ).scalar_one_or_none() is None:
                conn.execute(insert(meta_table).values(key="db_uuid", value=uuid.uuid4().hex))
        return latest

    def db_uuid(self) -> str:
        with self.read() as conn:
            return str(
                conn.execute(
                    select(meta_table.c.value).where(meta_table.c.key == "db_uuid")
                ).scalar_one()
            )

    def after_erasure(self) -> None:
        """Make erased content leave the files now (SQLite: checkpoint and truncate the
        write-ahead log, which still holds the old pages). PostgreSQL keeps dead row
        versions until VACUUM reclaims them (autovacuum, or ``VACUUM`` by the
        operator); no query can read them, but they stay in the data files until
        then - see docs/architecture.md."""
        if self.dialect != "sqlite" or self.memory_db or self.closed:
            return
        with contextlib.suppress(SQLAlchemyError), self.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def dispose(self) -> None:
        if not self.closed and self.dialect == "sqlite" and not self.memory_db:
            # let the query planner keep statistics (cheap; a no-op when nothing changed)
            with contextlib.suppress(SQLAlchemyError), self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA optimize")
        self.closed = True
        self.engine.dispose()


def _install_sqlite_hooks(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below decide how transactions start.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            if wal:
                _set_wal(cursor)
                cursor.execute("PRAGMA synchronous=NORMAL")
                # recall reads ~100 random rows per query: keep hot pages in memory
                cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
                cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
            cursor.execute("PRAGMA foreign_keys=ON")
            # deleted rows are overwritten with zeros, not left in free pages: a
            # forgotten memory must not survive in the database file
            cursor.execute("PRAGMA secure_delete=ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get(_WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


def _set_wal(cursor: Any) -> None:
    """Switch to WAL; the switch needs a moment alone with the file, so retry if busy."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _first_line(exc: SQLAlchemyError) -> str:
    """The driver's own message, without SQLAlchemy's background link and SQL echo."""
    orig = getattr(exc, "orig", None)
    text_ = str(orig if orig is not None else exc).strip()
    return text_.splitlines()[0] if text_ else type(exc).__name__


def _os_failure(exc: OSError, what: str) -> StorageError:
    """A file-system refusal at open, typed: read-only / no permission, or other."""
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return ReadOnlyStorageError(f"{what}: read-only ({exc.strerror})")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFullError(f"{what}: disk full")
    return StorageError(f"{what}: {exc.strerror or exc}")


def read_migration_sql(name: str) -> str:
    return resources.files("memstrata.memory.migrations").joinpath(name).read_text("utf-8")
