"""The ``reread`` job (issue 32): a reader upgrade reads the user's memories again, like
``reindex`` for vectors - stored readings only, dry-runnable, re-checked at apply."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.consolidation.reports import PlannedAction
from memstrata.memory.embedder import Embedder
from memstrata.reading.stance import STANCE_KEY, stance_of, stored_stance
from memstrata.types import Status


@pytest.fixture
def store(db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path) -> str:
    """A store whose memories the rules formed: they store no readings."""
    with MemoryManager.open(db_url, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index", reader="rules") as m:
        m.observe("u", "s1", "user", "I live in Leeds with my partner.")
        clock.advance(days=1)
        m.observe("u", "s1", "user", "I'm allergic to peanuts.")
        m.remember("v", "My sister lives in Porto.")  # remembered: the user's words too
    return db_url


@pytest.fixture
def reader_manager(store: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
                   ) -> Iterator[MemoryManager]:
    with MemoryManager.open(store, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index") as m:
        yield m


def _own(m: MemoryManager, user: str) -> list[dict[str, object]]:
    return [r.metadata for r in m.memories(user, statuses=list(Status), limit=100)
            if r.source.value == "user_explicit"]


def test_a_reader_upgrade_reads_the_users_memories_again(
        reader_manager: MemoryManager, settings: ConsolidationSettings) -> None:
    m = reader_manager
    assert m.reader.name != "rules"
    assert all("readings" not in meta for meta in _own(m, "u"))
    jobs = Consolidator(m, settings=settings)
    dry = jobs.run("reread", dry_run=True)
    assert dry.status == "dry_run"
    assert len(dry.planned) == len(_own(m, "u")) + len(_own(m, "v"))
    assert all("readings" not in meta for meta in _own(m, "u"))  # a dry run changes nothing
    report = jobs.run("reread")
    assert report.status == "finished"
    metas = _own(m, "u")
    assert metas and all(meta["read_by"] == m.reader.version for meta in metas)
    read = {(x["attribute"], x["value"]) for meta in metas
            for x in meta["readings"]}  # type: ignore[attr-defined]
    assert ("city", "Leeds") in read and ("allergies", "peanuts") in read
    [sister] = _own(m, "v")
    assert [(x["attribute"], x["holder"]) for x in sister["readings"]  # type: ignore[attr-defined]
            if x["value"] == "Porto"] == [("city", "other")]
    # read once: the next run finds nothing to do
    assert not jobs.run("reread").planned


def test_memories_observe_read_are_not_read_again(
        manager: MemoryManager, jobs: Consolidator) -> None:
    manager.observe("u", "s1", "user", "ok so im in denver now lol")
    assert not jobs.run("reread", dry_run=True).planned


def test_a_memory_forgotten_between_planning_and_applying_is_not_written_back(
        reader_manager: MemoryManager, settings: ConsolidationSettings) -> None:
    from memstrata.consolidation._reread import RereadJob

    m = reader_manager
    jobs = Consolidator(m, settings=settings)
    ctx = jobs._context(dry_run=False, run_id="r1", options={}, gate=None)
    job = RereadJob()
    with m.db.read() as conn:
        planned = job.plan(conn, ctx, "u")
    assert planned.actions
    gone = str(planned.actions[0].memory_id)
    m.forget("u", gone)  # lands between the plan and the apply
    with m.changes() as txn:
        applied = job.apply(txn, ctx, planned)
    assert gone not in {a.memory_id for a in applied.actions}
    assert any("no longer exists" in e for e in applied.errors)
    assert gone not in {r.id for r in m.memories("u", statuses=list(Status), limit=100)}


def test_with_the_rules_configured_there_is_nothing_to_read_again(
        store: str, embedder: Embedder, clock: ManualClock, tmp_path: Path,
        settings: ConsolidationSettings) -> None:
    with MemoryManager.open(store, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index", reader="rules") as m:
        report = Consolidator(m, settings=settings).run("reread")
        # the rules store no readings, and every memory has its stance since it was written
        assert (report.status, report.planned) == ("finished", ())
        assert all(stored_stance(r.metadata, r.content) is not None
                   for r in m.memories("u", statuses=list(Status), limit=100))


def _strip_stances(m: MemoryManager, user: str) -> list[str]:
    """The user's memories as a store written before stances were stored has them."""
    records = m.memories(user, statuses=list(Status), limit=100)
    with m.changes() as txn:
        assert txn.lock(user)
        applied, errors = txn.update(user, [PlannedAction(
            user, r.id, "test", "as before stances", {"metadata": r.metadata},
            {"metadata": {k: v for k, v in r.metadata.items() if k != STANCE_KEY}})
            for r in records], verify=True)
    assert not errors and len(applied) == len(records)
    return [r.id for r in records]


def test_the_stance_of_a_memory_written_before_stances_is_stored_once(
        store: str, embedder: Embedder, clock: ManualClock, tmp_path: Path,
        settings: ConsolidationSettings) -> None:
    with MemoryManager.open(store, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index", reader="rules") as m:
        ids = _strip_stances(m, "u")
        assert all(STANCE_KEY not in r.metadata for r in m.memories("u", limit=100))
        jobs = Consolidator(m, settings=settings)
        dry = jobs.run("reread", dry_run=True)
        assert sorted(str(a.memory_id) for a in dry.planned) == sorted(ids)
        assert all("its stance stored" in a.reason for a in dry.planned)
        assert all(STANCE_KEY not in r.metadata for r in m.memories("u", limit=100))
        jobs.run("reread")
        records = m.memories("u", statuses=list(Status), limit=100)
        assert records and all(stored_stance(r.metadata, r.content) == stance_of(r.content)
                               for r in records)
        assert not jobs.run("reread").planned


def test_a_stance_key_of_the_callers_own_is_left_alone(
        manager: MemoryManager, jobs: Consolidator) -> None:
    manager.remember("u", "My sister moved to Porto.", metadata={"stance": "neutral"})
    [record] = manager.memories("u", limit=10)
    assert record.metadata["stance"] == "neutral"
    assert not jobs.run("reread", dry_run=True).planned
