"""Nothing is lost: failed writes, crashes, restarts, model changes, concurrent writers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from memstrata import MemoryManager, Status
from memstrata.errors import ModelMismatchError, StorageError
from memstrata.memory._schema import memories, memory_vectors
from memstrata.memory._st_embedder import SentenceTransformerEmbedder
from memstrata.memory.embedder import Embedder, Vectors


class CountingEmbedder:
    """The real embedder, counting how many texts the manager asks it to embed."""

    def __init__(self, inner: Embedder, name: str | None = None) -> None:
        self.inner = inner
        self.texts = 0
        self._name = name

    @property
    def name(self) -> str:
        return self._name or self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return self.inner.embed(texts)


def rows(mm: MemoryManager, table=memories) -> int:
    with mm.db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_a_failed_write_leaves_no_half_record_and_no_orphan_vector(manager: MemoryManager):
    manager.remember("u", "I like green tea", type="preference")
    with manager.db.write() as conn:  # a real database failure on one insert
        if manager.db.dialect == "sqlite":
            conn.execute(text(
                "CREATE TRIGGER boom BEFORE INSERT ON memories WHEN NEW.content = 'boom' "
                "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"))
        else:
            conn.execute(text(
                "CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN "
                "IF NEW.content = 'boom' THEN RAISE EXCEPTION 'injected failure'; END IF; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"))
            conn.execute(text("CREATE TRIGGER boom BEFORE INSERT ON memories "
                              "FOR EACH ROW EXECUTE FUNCTION boom()"))
    before = (rows(manager), rows(manager, memory_vectors), manager.keyword_index.size("u"),
              manager.vector_index.watermark("u"))
    with pytest.raises(StorageError):
        manager.remember_many("u", [
            {"content": "I like jasmine tea", "type": "preference"},
            {"content": "boom", "type": "knowledge"},
            {"content": "I like oolong tea", "type": "preference"},
        ])
    after = (rows(manager), rows(manager, memory_vectors), manager.keyword_index.size("u"),
             manager.vector_index.watermark("u"))
    assert after == before
    assert [h.content for h in manager.recall("u", "tea")] == ["I like green tea"]
    # the failure left the user writable
    assert manager.remember("u", "I like jasmine tea", type="preference").outcome == "written"


def test_a_crash_after_commit_loses_nothing(sqlite_url: str, tmp_path: Path, embedder: Embedder):
    """A child process commits, then dies without closing or flushing its index."""
    index_dir = tmp_path / "index"
    script = textwrap.dedent(f"""
        import os
        from memstrata import MemoryManager
        mm = MemoryManager.open({sqlite_url!r}, index_dir={str(index_dir)!r})
        for i in range(30):
            mm.remember("u", f"fact number {{i}} about the blue house on Elm street",
                        type="knowledge")
        print("committed", flush=True)
        os._exit(9)
    """)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 9 and "committed" in result.stdout
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index_dir) as mm:
        assert rows(mm) == 30
        hits = mm.recall("u", "fact number 17 about the blue house", k=3)
        assert hits[0].content.startswith("fact number 17 ")
        assert mm.keyword_index.size("u") == 30


def test_a_restart_re_embeds_nothing(sqlite_url: str, embedder: Embedder, tmp_path: Path):
    with MemoryManager.open(sqlite_url, embedder=embedder) as mm:
        mm.remember_many("u", [f"note {i}: the meeting room {i} has a projector"
                               for i in range(40)])
    counting = CountingEmbedder(embedder)
    with MemoryManager.open(sqlite_url, embedder=counting) as mm:
        hits = mm.recall("u", "which room has a projector?")
        assert hits
    assert counting.texts == 1  # the query, nothing else


def test_lost_index_files_are_rebuilt_from_sql_without_embedding(
    sqlite_url: str, embedder: Embedder
):
    with MemoryManager.open(sqlite_url, embedder=embedder) as mm:
        mm.remember_many("u", [f"recipe {i}: lentil soup with cumin, variant {i}"
                               for i in range(25)])
        index_dir = mm.index_dir
    assert index_dir is not None
    import shutil

    shutil.rmtree(index_dir)
    counting = CountingEmbedder(embedder)
    with MemoryManager.open(sqlite_url, embedder=counting) as mm:
        hits = mm.recall("u", "lentil soup with cumin variant 7", k=3)
        assert "variant 7" in hits[0].content
        assert mm.keyword_index.size("u") == 25
    assert counting.texts == 1


def test_a_model_change_is_detected_and_reindex_fixes_it(
    sqlite_url: str, embedder: Embedder
):
    with MemoryManager.open(sqlite_url, embedder=embedder) as mm:
        mm.remember_many("u", ["I prefer window seats", "I am allergic to peanuts"])
    other = SentenceTransformerEmbedder(name="renamed-model")
    assert other.name != embedder.name
    with MemoryManager.open(sqlite_url, embedder=other) as mm:
        with pytest.raises(ModelMismatchError):
            mm.recall("u", "seats")
        with pytest.raises(ModelMismatchError):
            mm.remember("u", "I like tea", type="preference")
        report = mm.reindex("u")
        assert report["u"] == {"reembedded": 2, "sentences_added": 0, "indexed": 2}
        assert mm.recall("u", "which seat?")[0].content == "I prefer window seats"
        assert mm.remember("u", "I like tea", type="preference").stored
        with mm.db.read() as conn:
            models = set(conn.execute(select(memory_vectors.c.model)).scalars())
        assert models == {other.name}


def test_concurrent_writers_lose_nothing_and_keep_one_value_per_slot(manager: MemoryManager):
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(10):
                manager.remember(
                    "u", f"writer {n} wrote distinct fact {i} about topic {n * 10 + i}",
                    type="knowledge",
                )
            manager.remember("u", f"My city is city-{n}", type="profile",
                             slot=("u", "city", f"city-{n}"))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    knowledge = manager.memories("u", types=["knowledge"], limit=1000)
    assert len(knowledge) == 40
    city = manager.lookup("u", attribute="city")
    active = [r for r in city if r.status is Status.ACTIVE]
    assert len(active) <= 1
    assert len(city) == 4  # one wrote first, three conflicted with it: all kept
    assert manager.keyword_index.size("u") == 44


def test_two_processes_writing_one_sqlite_file(sqlite_url: str, tmp_path: Path,
                                               embedder: Embedder):
    script = textwrap.dedent("""
        import sys
        from memstrata import MemoryManager
        url, index_dir, tag = sys.argv[1:4]
        with MemoryManager.open(url, index_dir=index_dir) as mm:
            mm.remember_many("u", [f"process {tag} remembers item {i} of its list"
                                   for i in range(60)])
            for i in range(20):
                mm.remember("u", f"process {tag} single write {i}", type="knowledge")
    """)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, sqlite_url, str(tmp_path / f"ix{t}"), t],
                         env=env, stderr=subprocess.PIPE, text=True)
        for t in ("A", "B")
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    with MemoryManager.open(sqlite_url, embedder=embedder) as mm:
        assert rows(mm) == 160
        assert mm.recall("u", "process B single write 13", k=1)[0].content == (
            "process B single write 13")
        assert mm.keyword_index.size("u") == 160
