"""Erasure across processes, on SQLite files and PostgreSQL: real child processes on
the same database and index directory, a real SIGKILL between the erasing commit
and the file cleanup, and an undo whose restored records rank exactly as before,
in this process and in a fresh one.

The canary is a phrase only the erased user's memories hold; the files are read
as raw bytes for it (the keyword shards keep stemmed terms, the vector shards
memory ids - both are looked for)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.memory._db import Database
from memstrata.memory._schema import memories, memory_vectors, pending_erasures
from memstrata.memory._shards import user_key
from memstrata.memory.embedder import Embedder

CHILD = Path(__file__).with_name("_erasure_child.py")
CHILD_TIMEOUT = 300  # seconds: a safety net for a hung child, never an assertion

U1_TEXTS = (
    "The canary-7f3a quail nests by the old mill.",
    "My canary-7f3a quail eats millet every morning.",
    "I keep the canary-7f3a quail in a wooden hutch.",
)
U1_LATER = (
    "The canary-7f3a quail laid two eggs on Sunday.",
    "Feed the canary-7f3a quail crushed oyster shell.",
)
#: the canary as written and as the keyword index stores it (stems: canari, 7f3a, quail)
CANARY = (b"canary-7f3a", b"canari", b"quail")
U2_BEFORE = "I prefer aisle seats on long flights."
U2_AFTER = "My favourite tea is jasmine green tea."

_LLM_ENV = ("MEMSTRATA_LLM_MODEL", "MEMSTRATA_LLM_BASE_URL", "MEMSTRATA_LLM_API_KEY",
            "OPENAI_API_KEY", "MEMSTRATA_LLM_TOKEN_BUDGET")


# ---------------------------------------------------------------- helpers


@pytest.fixture
def index_dir(db_url: str, tmp_path: Path) -> Path | None:
    """SQLite: the default (``<db>.index`` beside the file, which every process
    derives alike); PostgreSQL: one directory both processes are given."""
    return None if db_url.startswith("sqlite") else tmp_path / "index"


def _open(url: str, index_dir: Path | None, embedder: Embedder | None = None,
          **kwargs: Any) -> MemoryManager:
    if index_dir is not None:
        kwargs["index_dir"] = index_dir
    return MemoryManager.open(url, embedder=embedder, **kwargs)


def _child_args(command: str, url: str, index_dir: Path | None, user: str,
                *rest: str) -> list[str]:
    where = "-" if index_dir is None else str(index_dir)
    return [sys.executable, str(CHILD), command, url, where, user, *rest]


def _run_child(*args: str, index_dir: Path | None, url: str, user: str) -> Any:
    done = subprocess.run(_child_args(args[0], url, index_dir, user, *args[1:]),
                          env=dict(os.environ), capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _store(mm: MemoryManager, user: str, text: str) -> str:
    decision = mm.remember(user, text)
    assert decision.stored and decision.record_id is not None, decision
    return decision.record_id


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _named(root: Path, key: str) -> list[Path]:
    return [p for p in _files(root) if key in p.name]


def _holding(paths: Iterable[Path], needles: Iterable[bytes]) -> list[tuple[str, bytes]]:
    wanted = list(needles)
    return [(p.name, n) for p in paths if p.exists() for n in wanted if n in p.read_bytes()]


def _sqlite_files(url: str) -> list[Path]:
    """The database file and its write-ahead log (empty for PostgreSQL)."""
    if not url.startswith("sqlite"):
        return []
    path = Path(url.removeprefix("sqlite:///"))
    return [path, path.with_name(path.name + "-wal")]


def _pending(url: str) -> list[str]:
    db = Database(url)
    try:
        with db.read() as conn:
            return list(conn.execute(select(pending_erasures.c.file_key)).scalars())
    finally:
        db.dispose()


def _count_memories(url: str, user: str) -> int:
    db = Database(url)
    try:
        with db.read() as conn:
            return int(conn.execute(select(func.count()).select_from(memories)
                                    .where(memories.c.user_id == user)).scalar_one())
    finally:
        db.dispose()


# ---------------------------------------------------------------- the fence across processes


@pytest.mark.parametrize("unsaved", [False, True], ids=["saved", "unsaved"])
def test_another_process_erasing_a_user_keeps_it_off_this_processes_disk(
        db_url: str, index_dir: Path | None, embedder: Embedder, unsaved: bool):
    """Process A (this one) holds u1's shards, saved to disk (and, ``unsaved``,
    with later changes only in memory); process B erases u1; A goes on and
    closes. Nothing of u1 is on disk afterwards, and u2 is intact."""
    key = user_key("u1")
    a = _open(db_url, index_dir, embedder)
    try:
        root = a.index_dir
        assert root is not None
        u1_ids = [_store(a, "u1", text) for text in U1_TEXTS]
        u2_before = _store(a, "u2", U2_BEFORE)
        hits = a.recall("u1", "quail", record_use=False)
        assert hits and {h.id for h in hits} <= set(u1_ids)
        a.vector_index.flush()
        a.keyword_index.flush()
        # the control: u1's two shards are on disk and the scan sees their content
        assert len(_named(root, key)) == 2
        assert {n for _, n in _holding(_named(root, key), CANARY)} == {b"canari", b"quail"}
        assert _holding(_named(root, key), [i.encode() for i in u1_ids])
        if unsaved:
            later = [_store(a, "u1", text) for text in U1_LATER]
            u1_ids += later
            # held in memory only (save_every is large): the files do not have them
            assert a.keyword_index.loaded("u1") and a.vector_index.loaded("u1")
            assert not _holding(_files(root), [i.encode() for i in later])

        counts = _run_child("forget", url=db_url, index_dir=index_dir, user="u1")
        assert counts["memories"] == len(u1_ids)
        assert not _named(root, key)  # B deleted the files A had written

        u2_after = _store(a, "u2", U2_AFTER)
        if not unsaved:
            # A's shards of u1 are of an erased generation: recall finds nothing
            assert a.recall("u1", "quail", record_use=False) == []
            assert a.memories("u1") == []
        # (unsaved: no recall of u1 here - it would drop the stale shard early; the
        # close below must refuse to write it back on its own)
    finally:
        a.close()

    assert not _named(root, key)
    needles = [*CANARY, *(i.encode() for i in u1_ids)]
    assert _holding(_files(root), needles) == []
    assert _holding(_sqlite_files(db_url), needles) == []

    with _open(db_url, index_dir, embedder) as again:
        assert u2_before in {h.id for h in again.recall("u2", "aisle seat", record_use=False)}
        assert u2_after in {h.id for h in again.recall("u2", "jasmine tea", record_use=False)}
        assert {r.id for r in again.memories("u2")} == {u2_before, u2_after}
        assert again.recall("u1", "quail", record_use=False) == []
        assert again.memories("u1") == []
        assert len(_named(root, user_key("u2"))) == 2
    assert not _named(root, key)
    assert _holding(_files(root), needles) == []
    assert _holding(_sqlite_files(db_url), needles) == []


# ---------------------------------------------------------------- SIGKILL mid-erasure


def test_a_forget_user_killed_after_its_commit_is_finished_by_the_next_open(
        db_url: str, index_dir: Path | None, embedder: Embedder, tmp_path: Path):
    key = user_key("u1")
    with _open(db_url, index_dir, embedder) as first:
        root = first.index_dir
        assert root is not None
        u1_ids = [_store(first, "u1", text) for text in U1_TEXTS]
        u2_id = _store(first, "u2", U2_BEFORE)
        assert first.recall("u1", "quail", record_use=False)
    u1_files = _named(root, key)
    assert len(u1_files) == 2  # saved when the earlier process closed

    signal_file = tmp_path / "committed"
    log = tmp_path / "child.log"
    with log.open("wb") as out:
        child = subprocess.Popen(
            _child_args("forget-then-hang", db_url, index_dir, "u1", str(signal_file)),
            env=dict(os.environ), stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + CHILD_TIMEOUT
            while not signal_file.exists():
                assert child.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the child never reached the seam"
                time.sleep(0.05)
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(timeout=CHILD_TIMEOUT) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert json.loads(signal_file.read_text()) == [key]

    # the rows went with the commit; the files and the pending record stayed
    assert _count_memories(db_url, "u1") == 0
    assert _pending(db_url) == [key]
    assert all(p.exists() for p in u1_files)

    reopened = _open(db_url, index_dir, embedder)  # nothing else: opening finishes it
    try:
        assert _named(root, key) == []
        assert _pending(db_url) == []
    finally:
        reopened.close()
    assert _holding(_files(root), [*CANARY, *(i.encode() for i in u1_ids)]) == []
    with _open(db_url, index_dir, embedder) as again:
        assert again.memories("u1") == []
        assert u2_id in {h.id for h in again.recall("u2", "aisle seat", record_use=False)}


# ---------------------------------------------------------------- undo, then recall


QUERIES = ("hotel location", "hotels in the city centre", "jazz music", "window seat")
Hits = list[tuple[str, float, float, float]]


def _copy_record(mm: MemoryManager, memory_id: str, new_id: str, **changes: Any) -> None:
    """An exact duplicate inserted past the write policy (as an import would)."""
    with mm.db.write() as conn:
        row = dict(conn.execute(select(memories).where(memories.c.id == memory_id)).one()
                   ._mapping)
        vec = dict(conn.execute(select(memory_vectors)
                                .where(memory_vectors.c.memory_id == memory_id)).one()._mapping)
        row.update(id=new_id, **changes)
        vec.update(memory_id=new_id)
        conn.execute(insert(memories).values(**row))
        conn.execute(insert(memory_vectors).values(**vec))


def _recall_all(mm: MemoryManager, user: str) -> dict[str, Hits]:
    return {q: [(h.id, h.score, h.dense, h.keyword)
                for h in mm.recall(user, q, record_use=False)] for q in QUERIES}


def _from_child(out: dict[str, list[dict[str, Any]]]) -> dict[str, Hits]:
    return {q: [(h["id"], h["score"], h["dense"], h["keyword"]) for h in hits]
            for q, hits in out.items()}


def _assert_same(got: dict[str, Hits], want: dict[str, Hits]) -> None:
    assert got.keys() == want.keys()
    for query in want:
        assert [h[0] for h in got[query]] == [h[0] for h in want[query]], query
        for g, w in zip(got[query], want[query], strict=True):
            assert g[1:] == pytest.approx(w[1:], abs=1e-6), (query, g[0])


@pytest.mark.parametrize("where", ["same_process", "fresh_process"])
def test_undo_then_recall_ranks_every_hit_as_before(
        db_url: str, embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        clock: ManualClock, where: str):
    for name in _LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    index_dir = tmp_path / "index"
    mm = _open(db_url, index_dir, embedder, clock=clock)
    try:
        keep = _store(mm, "bob", "I prefer hotels near the city center.")
        clock.advance(days=1)
        near = _store(mm, "bob", "I like staying in hotels close to the city centre.")
        exact = "f" * 32
        created = mm.get("bob", keep).created_at.timestamp()
        _copy_record(mm, keep, exact, created_at=created + 7200, valid_from=created + 7200)
        mm.reindex("bob")  # the copy bypassed the seq bookkeeping: index it like the rest
        others = [_store(mm, "bob", t) for t in ("I like jazz.", "I prefer window seats.",
                                                 "Jazz concerts on Fridays are my favourite.")]
        before = _recall_all(mm, "bob")
        seen = {h[0] for hits in before.values() for h in hits}
        assert {keep, near, exact, *others} <= seen

        jobs = Consolidator(mm, settings=ConsolidationSettings.build(batch_users=2))
        report = jobs.run("conflicts")
        assert report.status == "finished"
        assert report.counts.get("merge") == 2
        merged = _recall_all(mm, "bob")
        assert not {near, exact} & {h[0] for hits in merged.values() for h in hits}
        assert keep in {h[0] for h in merged["hotel location"]}

        undo = jobs.undo(report.run_id)
        assert undo.status == "finished" and undo.errors == ()
        if where == "same_process":
            _assert_same(_recall_all(mm, "bob"), before)
    finally:
        mm.close()
    if where == "same_process":
        return
    # a new process, then a new manager here: both read the shards the first one saved
    out = _run_child("recall", clock.now().isoformat(), *QUERIES, url=db_url,
                     index_dir=index_dir, user="bob")
    _assert_same(_from_child(out), before)
    with _open(db_url, index_dir, embedder, clock=clock) as again:
        _assert_same(_recall_all(again, "bob"), before)
