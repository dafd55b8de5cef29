"""Fixtures of the consolidation suite: a Consolidator on the parametrised database,
small batches (so every job takes several checkpoints), no LLM unless a test
starts the loopback OpenAI-format server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.memory.embedder import Embedder
from memstrata.policies import WritePolicy

_LLM_ENV = ("MEMSTRATA_LLM_MODEL", "MEMSTRATA_LLM_BASE_URL", "MEMSTRATA_LLM_API_KEY",
            "OPENAI_API_KEY", "MEMSTRATA_LLM_TOKEN_BUDGET", "MEMSTRATA_CRON_SUMMARIZE",
            "MEMSTRATA_CRON_CONFLICTS", "MEMSTRATA_CRON_EXPIRE", "MEMSTRATA_SCHEDULER_TZ")


@pytest.fixture(autouse=True)
def _no_llm_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _LLM_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def settings() -> ConsolidationSettings:
    return ConsolidationSettings.build(batch_users=2, lease_seconds=120,
                                       schedule={"timezone": "UTC"})


@pytest.fixture
def jobs(manager: MemoryManager, settings: ConsolidationSettings) -> Iterator[Consolidator]:
    yield Consolidator(manager, settings=settings)


@pytest.fixture
def statements_at_night(db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
                        ) -> Iterator[MemoryManager]:
    """A manager whose ``observe`` keeps no unread statement (``keep_statements=False``) and
    reads with the rules: what it does not read waits for the nightly ``summarize``, as
    turns appended without ``observe`` do."""
    with MemoryManager.open(db_url, embedder=embedder, clock=clock, index_dir=tmp_path / "i",
                            reader="rules", write=WritePolicy(keep_statements=False)) as mm:
        yield mm
