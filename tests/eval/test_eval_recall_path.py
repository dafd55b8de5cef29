"""The recall path the evaluation tuned: one SQL read per recall, records built for
the top-k only, stale indexes caught up (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

from memstrata import ManualClock, MemoryManager
from memstrata.memory.embedder import Embedder


def test_returned_records_are_complete(db_url: str, embedder: Embedder, clock: ManualClock,
                                       tmp_path: Path):
    with MemoryManager.open(db_url, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "i") as memory:
        memory.remember("u", "I keep bees on the roof of my flat", type="event",
                        context="Ana on 3 May 2024", metadata={"turn_id": "s1:4", "n": [1, 2]})
        memory.remember("u", "My sister lives in Porto", type="profile")
        hit = memory.recall("u", "Who keeps bees?", record_use=False)[0]
        assert hit.content == "I keep bees on the roof of my flat"
        # the caller's metadata, the reader's readings of what the user stated, and its
        # stance (whose and when it is), read when it was written
        meta = dict(hit.record.metadata)
        assert meta.pop("read_by") == memory.reader.version
        assert isinstance(meta.pop("readings"), list)
        assert meta.pop("stance")["of"]
        assert meta == {"turn_id": "s1:4", "n": [1, 2]}
        assert hit.record.context == "Ana on 3 May 2024"
        assert hit.record == memory.get("u", hit.id)
        assert hit.keyword > 0 and hit.dense > 0 and 0 < hit.relevance <= 1


def test_recall_through_stale_indexes_sees_writes_and_deletions_of_another_process(
    db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
):
    with (
        MemoryManager.open(db_url, embedder=embedder, clock=clock,
                           index_dir=tmp_path / "a") as a,
        MemoryManager.open(db_url, embedder=embedder, clock=clock,
                           index_dir=tmp_path / "b") as b,
    ):
        a.remember("u", "I collect vintage fountain pens", type="preference")
        assert len(a.recall("u", "fountain pens", record_use=False)) == 1  # a's indexes loaded
        new = b.remember("u", "My favourite fountain pen is a green Pelikan", type="preference")
        found = {h.id for h in a.recall("u", "green fountain pen", record_use=False)}
        assert new.record_id in found  # a's indexes were behind SQL: caught up, ranked again
        b.forget("u", new.record_id)
        assert new.record_id not in {h.id for h in a.recall("u", "green fountain pen",
                                                             record_use=False)}
        b.forget_user("u")
        assert a.recall("u", "fountain pens") == []
