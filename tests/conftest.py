"""Shared fixtures: the real embedding model, real SQLite files, a real PostgreSQL server.

``MEMSTRATA_HOME`` points every test at its own temporary data directory.
The store suite is parametrised over ``sqlite`` and ``postgres`` through the
``db_url`` fixture; the PostgreSQL cluster is started once per session from the
installed server binaries.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from memstrata import ManualClock, MemoryManager
from memstrata.memory.embedder import Embedder
from memstrata.testing import PostgresServer, find_pg_bin

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("MEMSTRATA_HOME", str(home))
    monkeypatch.delenv("MEMSTRATA_URL", raising=False)
    return home


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    from memstrata.memory import default_embedder

    model = default_embedder()
    model.embed(["warm up"])
    return model


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    if find_pg_bin() is None:
        pytest.fail("PostgreSQL server binaries are not installed; .ci/run installs them")
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop(wait_for_cleanup=False)


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    return pg_server.create_database()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    server: PostgresServer = request.getfixturevalue("pg_server")
    return server.create_database()


@pytest.fixture
def manager(db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
            ) -> Iterator[MemoryManager]:
    with MemoryManager.open(
        db_url, embedder=embedder, clock=clock, index_dir=tmp_path / "index"
    ) as mm:
        yield mm


@pytest.fixture
def rules_manager(db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
                  ) -> Iterator[MemoryManager]:
    """A manager that reads turns with the frozen rules (``reader="rules"``): for the tests
    of what the rules read, which the model reader does not have to repeat."""
    with MemoryManager.open(
        db_url, embedder=embedder, clock=clock, index_dir=tmp_path / "index", reader="rules"
    ) as mm:
        yield mm


@pytest.fixture
def sqlite_manager(sqlite_url: str, embedder: Embedder, clock: ManualClock
                   ) -> Iterator[MemoryManager]:
    with MemoryManager.open(sqlite_url, embedder=embedder, clock=clock) as mm:
        yield mm
