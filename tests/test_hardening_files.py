"""Derived files and operator accidents: damaged shards, a file where a folder should
be, leftover tmp files, a full disk, a read-only data directory, a half-done reindex.

Every test uses real files, real SQLite (and PostgreSQL where the shard files are the
subject), a real full file system (a small tmpfs, else a loop-mounted ext4 image) and
a real read-only mount (a read-only bind mount: root ignores ``chmod``).
"""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from memstrata import MemoryManager
from memstrata._text import tokenize
from memstrata.errors import (
    IndexPersistError,
    ModelMismatchError,
    ReadOnlyStorageError,
    StorageFullError,
)
from memstrata.memory._keyword import KeywordShard
from memstrata.memory._shards import remove_stale_tmp, tmp_file, user_file
from memstrata.memory.embedder import Embedder, Vectors

FACTS = [
    "I prefer window seats on long flights",
    "I am allergic to peanuts",
    "my dog is called Rex",
    "I work as a structural engineer in Lyon",
    "I drink my coffee black, no sugar",
]


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("memstrata") and r.levelno >= logging.WARNING]


def shard_file(index: Path, kind: str) -> Path:
    [path] = list((index / kind).rglob("*.npz"))
    return path


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    else:  # one bit flipped in the middle (array data)
        i = len(data) // 2
        path.write_bytes(data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1 :])


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


def _umount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 8 MiB file system: tmpfs, else a loop-mounted ext4 image."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if not _mount("-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)):
        image = tmp_path / "disk.img"
        with open(image, "wb") as fh:
            fh.truncate(8 * 1024 * 1024)
        made = subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True)
        if made.returncode != 0 or not _mount("-o", "loop", str(image), str(mnt)):
            pytest.fail("a small real file system is needed: run as root (mount tmpfs / loop)")
    try:
        yield mnt
    finally:
        _umount(mnt)


def fill(disk: Path) -> Path:
    """Fill the file system to the last byte; returns the filler (delete it to free)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 20, 1 << 16, 4096, 512, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    return filler


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a writable directory, the same directory mounted read-only)."""
    src, ro = tmp_path / "data", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    if not (_mount("--bind", str(src), str(ro))
            and _mount("-o", "remount,bind,ro", str(ro))):
        _umount(ro)
        pytest.fail("a read-only bind mount is needed: run as root")
    try:
        yield src, ro
    finally:
        _umount(ro)


# ------------------------------------------------------------ damaged shard files


@pytest.mark.parametrize("how", ["truncated", "empty", "bitflip"])
@pytest.mark.parametrize("kind", ["keyword", "vectors"])
def test_a_damaged_shard_is_discarded_and_rebuilt_with_one_warning(
    db_url: str, embedder: Embedder, tmp_path: Path, caplog: pytest.LogCaptureFixture,
    kind: str, how: str,
):
    index = tmp_path / "index"
    with MemoryManager.open(db_url, embedder=embedder, index_dir=index) as mm:
        mm.remember_many("u", FACTS)
    path = shard_file(index, kind)
    damage(path, how)
    caplog.set_level(logging.WARNING, logger="memstrata")
    with MemoryManager.open(db_url, embedder=embedder, index_dir=index) as mm:
        hits = mm.recall("u", "which seat do I like on a plane?", k=3)
        assert hits[0].content == FACTS[0]
        assert mm.remember("u", "I like green tea", type="preference").stored
        assert mm.keyword_index.size("u") == len(FACTS) + 1
        assert mm.vector_index.size("u") == len(FACTS) + 1
    [warning] = warnings_of(caplog)
    assert "damaged" in warning and "rebuilt from SQL" in warning
    # the rebuilt file is whole: loaded as it is, no warning, nothing rebuilt
    caplog.clear()
    with MemoryManager.open(db_url, embedder=embedder, index_dir=index) as mm:
        assert mm.recall("u", "green tea", k=1)[0].content == "I like green tea"
    assert warnings_of(caplog) == []


def test_a_keyword_file_whose_postings_point_past_its_documents_is_rebuilt(
    sqlite_url: str, embedder: Embedder, tmp_path: Path, caplog: pytest.LogCaptureFixture,
):
    index = tmp_path / "index"
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        mm.remember_many("u", FACTS)
    path = shard_file(index, "keyword")
    shard = KeywordShard.load(path)
    assert shard is not None
    term = tokenize("window seats")[0]
    docs, tfs = shard.postings[term]
    docs.append(len(shard.docs) + 1000)  # a well-formed file, checksum and all,
    tfs.append(1)                        # whose postings point past its documents
    shard.save(path)
    caplog.set_level(logging.WARNING, logger="memstrata")
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        assert mm.recall("u", "window seats", k=1)[0].content == FACTS[0]
    [warning] = warnings_of(caplog)
    assert "postings point past the documents" in warning


def test_a_file_from_before_the_header_is_rebuilt_quietly(
    sqlite_url: str, embedder: Embedder, tmp_path: Path, caplog: pytest.LogCaptureFixture,
):
    index = tmp_path / "index"
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        mm.remember_many("u", FACTS)
    path = shard_file(index, "keyword")
    with open(path, "wb") as fh:  # the old format: a bare npz
        np.savez(fh, state=np.frombuffer(b'{"format": 1}', dtype=np.uint8))
    caplog.set_level(logging.WARNING, logger="memstrata")
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        assert mm.recall("u", "window seats", k=1)[0].content == FACTS[0]
    assert warnings_of(caplog) == []
    assert KeywordShard.load(path) is not None  # rewritten in the current format


# ------------------------------------------------------------ folders, tmp files


def test_a_file_where_the_index_folder_should_be_gives_a_typed_error_at_close(
    sqlite_url: str, embedder: Embedder, tmp_path: Path
):
    index = tmp_path / "index"
    index.mkdir()
    (index / "keyword").write_text("an operator's accident")
    mm = MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index)
    mm.remember_many("u", FACTS)
    assert mm.recall("u", "window seats", k=1)[0].content == FACTS[0]
    with pytest.raises(IndexPersistError) as info:
        mm.close()
    assert str(index / "keyword") in str(info.value)
    assert "could not persist index for 1 user" in str(info.value)
    assert "rebuilt from SQL" in str(info.value)
    assert mm.db.closed
    mm.close()  # idempotent, nothing left to report
    assert list(index.rglob("*.tmp")) == []
    (index / "keyword").unlink()
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        assert mm.recall("u", "window seats", k=1)[0].content == FACTS[0]


_KILLED_SAVE = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from memstrata.memory._keyword import KeywordShard
    from memstrata.memory._shards import tmp_file, user_file
    from memstrata.memory.vector import IndexRow, Watermark
    shard = KeywordShard()
    shard.upsert([IndexRow(id="m1", text="the zebraquartz canary", scope="default",
                           type="fact", vector=None)])
    shard.watermark = Watermark("g", 1)
    path = user_file(Path(sys.argv[1]), "u", "bm25.npz")
    path.parent.mkdir(parents=True, exist_ok=True)
    shard.save(tmp_file(path))
    os.kill(os.getpid(), signal.SIGKILL)  # killed between the write and the rename
""")


def test_the_tmp_file_of_a_killed_save_is_removed_on_open(
    sqlite_url: str, embedder: Embedder, tmp_path: Path
):
    index = tmp_path / "index"
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        mm.remember_many("u", FACTS)
    child = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(index / "keyword")])
    assert child.returncode == -9
    [left] = list(index.rglob("*.tmp"))
    assert b"zebraquartz" in left.read_bytes()
    # a save in progress in a live process (this one) is left alone
    live = tmp_file(user_file(index / "keyword", "v", "bm25.npz"))
    live.parent.mkdir(parents=True, exist_ok=True)
    live.write_bytes(b"being written")
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        assert mm.recall("u", "window seats", k=1)[0].content == FACTS[0]
        assert not left.exists()
        assert live.exists()
    live.unlink()
    assert remove_stale_tmp(index / "keyword") == 0


def test_forget_user_removes_the_users_leftover_tmp_file(
    sqlite_url: str, embedder: Embedder, tmp_path: Path
):
    index = tmp_path / "index"
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        mm.remember_many("u", FACTS)
        child = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(index / "keyword")])
        assert child.returncode == -9
        assert list(index.rglob("*.tmp"))
        mm.forget_user("u")
        assert list(index.rglob("*.tmp")) == []
        assert list(index.rglob("*.npz")) == []


# ------------------------------------------------------------ a full disk


def test_a_full_index_disk_fails_saves_cleanly_and_close_says_so(
    sqlite_url: str, embedder: Embedder, small_disk: Path
):
    index = small_disk / "index"
    mm = MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index)
    mm.remember_many("u", FACTS)
    filler = fill(small_disk)
    assert mm.recall("u", "window seats", k=1)[0].content == FACTS[0]
    with pytest.raises(IndexPersistError) as info:
        mm.close()
    assert str(info.value) == \
        "could not persist index for 1 user: disk full; they will be rebuilt from SQL"
    assert info.value.user_ids == ("u",)
    assert mm.db.closed
    assert [p for p in small_disk.rglob("*") if p.is_file() and p != filler] == []
    filler.unlink()
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        assert mm.recall("u", "window seats", k=1)[0].content == FACTS[0]
    assert len(list(index.rglob("*.npz"))) == 2


def test_recall_keeps_working_on_a_full_disk(
    embedder: Embedder, small_disk: Path, caplog: pytest.LogCaptureFixture
):
    url = f"sqlite:///{small_disk / 'memory.db'}"
    mm = MemoryManager.open(url, embedder=embedder)
    mm.remember_many("u", FACTS)
    filler = fill(small_disk)
    caplog.set_level(logging.WARNING, logger="memstrata")
    hits = mm.recall("u", "which seat do I like on a plane?", k=2)
    assert hits[0].content == FACTS[0]
    assert hits[0].record.access_count == 0  # the use could not be recorded
    assert mm.recall("u", "peanuts", k=1)[0].content == FACTS[1]
    [warning] = warnings_of(caplog)  # one warning, not one per recall
    assert "disk full" in warning
    with pytest.raises(StorageFullError):
        mm.remember("u", "I like green tea", type="preference")
    with pytest.raises(IndexPersistError, match="disk full; they will be rebuilt from SQL"):
        mm.close()
    assert mm.db.closed
    filler.unlink()
    with MemoryManager.open(url, embedder=embedder) as mm:
        assert mm.recall("u", "peanuts", k=1)[0].content == FACTS[1]
        assert mm.remember("u", "I like green tea", type="preference").stored


# ------------------------------------------------------------ a read-only data directory


def test_a_read_only_data_directory_gives_a_typed_error_when_writing(
    embedder: Embedder, read_only: tuple[Path, Path]
):
    _, ro = read_only
    with pytest.raises(ReadOnlyStorageError, match="read-only"):
        MemoryManager.open(f"sqlite:///{ro / 'new' / 'memory.db'}", embedder=embedder)
    with pytest.raises(ReadOnlyStorageError, match="read-only"):
        MemoryManager.open(f"sqlite:///{ro / 'memory.db'}", embedder=embedder)


def test_an_existing_database_on_a_read_only_medium_can_be_read(
    embedder: Embedder, read_only: tuple[Path, Path], caplog: pytest.LogCaptureFixture
):
    src, ro = read_only
    with MemoryManager.open(f"sqlite:///{src / 'memory.db'}", embedder=embedder) as mm:
        mm.remember_many("u", FACTS)
    caplog.set_level(logging.WARNING, logger="memstrata")
    with MemoryManager.open(f"sqlite:///{ro / 'memory.db'}", embedder=embedder) as mm:
        assert mm.recall("u", "window seats", k=1)[0].content == FACTS[0]
        assert len(mm.memories("u")) == len(FACTS)
        with pytest.raises(ReadOnlyStorageError, match="read-only"):
            mm.remember("u", "I like green tea", type="preference")
    assert len(warnings_of(caplog)) == 1  # the use of the recall was not recorded
    assert sorted(p.name for p in ro.iterdir()) == sorted(p.name for p in src.iterdir())


# ------------------------------------------------------------ a half-done reindex


class DoubledEmbedder:
    """Another model: the real one's vectors, repeated (twice the dimension)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name + "-doubled"

    @property
    def dim(self) -> int:
        return 2 * self.inner.dim

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> Vectors:
        vectors = self.inner.embed(texts)
        return np.hstack([vectors, vectors]) / np.sqrt(2.0)


@pytest.mark.parametrize("files", ["kept", "lost"])
def test_the_old_model_during_a_reindex_gets_model_mismatch_not_dimension_mismatch(
    sqlite_url: str, embedder: Embedder, tmp_path: Path, files: str
):
    index = tmp_path / "index"
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as mm:
        mm.remember_many("u", FACTS)
        mm.remember_many("w", FACTS)
    new = DoubledEmbedder(embedder)
    with MemoryManager.open(sqlite_url, embedder=new, index_dir=tmp_path / "new") as mm:
        mm.reindex("u")  # half done: "w" still has the old model's vectors
    if files == "lost":  # the old process has no shard of "u" to start from
        for path in index.rglob("*.npz"):
            path.unlink()
    with MemoryManager.open(sqlite_url, embedder=embedder, index_dir=index) as old:
        with pytest.raises(ModelMismatchError):
            old.recall("u", "window seats")
        with pytest.raises(ModelMismatchError):
            old.remember("u", "I like green tea", type="preference")
        assert old.recall("w", "window seats", k=1)[0].content == FACTS[0]
