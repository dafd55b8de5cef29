"""The packaged embedder: ONNX Runtime and PyTorch give one vector space; the ONNX path
imports no torch; a corrupt or impossible export never reaches the caller."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memstrata.memory import _onnx
from memstrata.memory._onnx_embedder import read_spec
from memstrata.memory._st_embedder import SentenceTransformerEmbedder, packaged_model_path

TEXTS = ["hi", "What did Caroline paint last summer?",
         "I prefer window seats on long flights because I like to sleep against the wall.",
         "以后都用支付宝付款", "  padded   with spaces  ", "",
         " ".join(["a long memory about gardening and tomatoes"] * 60)]  # > 256 tokens


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (a64 * b64).sum(1) / (np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1))


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(cache_size=1, onnx=False)


@pytest.fixture(scope="module")
def reference(torch_embedder: SentenceTransformerEmbedder) -> np.ndarray:
    """PyTorch vectors of TEXTS, one text at a time."""
    return np.concatenate([torch_embedder.embed([t]) for t in TEXTS])


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One verified export, made once for the module; tests work on copies."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    assert SentenceTransformerEmbedder(cache_size=1, onnx_cache_dir=cache).uses_onnx
    return cache


@pytest.fixture
def cache(export_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "cache"
    shutil.copytree(export_dir, copy)
    return copy


def _entry(cache: Path) -> Path:
    spec = read_spec(packaged_model_path())
    assert spec is not None
    return _onnx.entry_dir(spec, cache)


def test_the_export_is_cached_with_its_identity_checksum_and_verification(cache: Path):
    entry = _entry(cache)
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["model"]["identity"] == _onnx.model_identity(packaged_model_path())
    assert manifest["runtime"]["onnxruntime"] == _onnx._version("onnxruntime")
    assert manifest["verification"]["verified"] is True
    assert manifest["verification"]["min_cosine"] >= _onnx.MIN_COSINE
    assert manifest["onnx"]["bytes"] == (entry / "model.onnx").stat().st_size
    # a second embedder reuses the export: no new entry, no PyTorch
    again = SentenceTransformerEmbedder(cache_size=1, onnx_cache_dir=cache)
    assert again.uses_onnx and again._model is None
    assert [p.name for p in cache.iterdir()] == [entry.name]


def test_onnx_reproduces_pytorch_single_and_batch(cache: Path, reference: np.ndarray,
                                                  torch_embedder: SentenceTransformerEmbedder):
    fast = SentenceTransformerEmbedder(cache_size=1, onnx_cache_dir=cache, batch_threads_min=4)
    assert fast.uses_onnx and fast.name == "all-MiniLM-L6-v2:384"
    single = np.concatenate([fast.embed([t]) for t in TEXTS])
    batch = fast.embed(TEXTS)  # padded to the longest, above batch_threads_min
    torch_batch = torch_embedder.embed(TEXTS)
    for ours in (single, batch):
        assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        assert _cosines(ours, reference).min() >= 0.9999999
        assert _cosines(ours, torch_batch).min() >= 0.9999999
    for text in TEXTS:
        assert fast.count_tokens(text) == torch_embedder.count_tokens(text)


def test_embedding_cache_and_forget_cached_on_the_onnx_path(cache: Path):
    fast = SentenceTransformerEmbedder(cache_size=10, onnx_cache_dir=cache)
    first = fast.embed(["remember me", "and me"])
    assert len(fast._cache) == 2
    assert np.array_equal(fast.embed(["and me"])[0], first[1])
    fast.forget_cached(["remember me"])
    assert len(fast._cache) == 1
    fast.forget_cached(None)
    assert len(fast._cache) == 0


@pytest.mark.parametrize("damage", ["bit-flip", "truncate"])
def test_a_corrupt_export_is_detected_deleted_and_never_used(
        cache: Path, damage: str, caplog: pytest.LogCaptureFixture):
    spec = read_spec(packaged_model_path())
    assert spec is not None
    onnx_file = _entry(cache) / "model.onnx"
    data = bytearray(onnx_file.read_bytes())
    if damage == "bit-flip":
        data[len(data) // 2] ^= 0x10  # inside the weights: the graph still loads
        onnx_file.write_bytes(bytes(data))
    else:
        onnx_file.write_bytes(bytes(data[: len(data) // 3]))
    with caplog.at_level(logging.WARNING, logger="memstrata"):
        assert _onnx.load(spec, cache) is None
    assert not _entry(cache).exists()
    # issue 34: it was rebuilt with no word of why
    assert any("failed a check" in r.getMessage() for r in caplog.records), caplog.records


def test_a_new_export_prunes_the_cache_of_other_environments(cache: Path):
    """Issue 34: each new environment (another onnxruntime, another model file) added an
    entry of ~90 MB that nothing ever removed."""
    import os
    import time

    spec = read_spec(packaged_model_path())
    assert spec is not None
    kept = _entry(cache)
    old = []
    for n in range(4):  # four other environments' entries, used n days ago
        other = cache / f"{kept.name.rsplit('-', 1)[0]}-{'0' * 23}{n}"
        shutil.copytree(kept, other)
        when = time.time() - 86400 * (n + 1)
        os.utime(other / "manifest.json", (when, when))
        old.append(other)
    gone = _onnx.prune(spec, cache, keep=kept)
    assert sorted(gone) == sorted(old[_onnx.KEEP_OTHERS:])
    assert kept.exists() and all(p.exists() for p in old[:_onnx.KEEP_OTHERS])


def test_a_corrupt_export_still_embeds_correctly(cache: Path, reference: np.ndarray):
    onnx_file = _entry(cache) / "model.onnx"
    data = bytearray(onnx_file.read_bytes())
    data[len(data) // 2] ^= 0x10
    onnx_file.write_bytes(bytes(data))
    embedder = SentenceTransformerEmbedder(cache_size=1, onnx_cache_dir=cache)
    vectors = np.concatenate([embedder.embed([t]) for t in TEXTS])
    assert _cosines(vectors, reference).min() >= 0.9999999
    assert embedder.backend == "onnx"  # re-exported and verified again
    manifest = json.loads((_entry(cache) / "manifest.json").read_text())
    assert _onnx.hashlib.sha256(onnx_file.read_bytes()).hexdigest() == manifest["onnx"]["sha256"]


def test_a_foreign_manifest_is_not_used(cache: Path):
    spec = read_spec(packaged_model_path())
    assert spec is not None
    manifest_path = _entry(cache) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["runtime"]["onnxruntime"] = "0.0.1"
    manifest_path.write_text(json.dumps(manifest))
    assert _onnx.load(spec, cache) is None


def test_no_export_possible_falls_back_to_pytorch(tmp_path: Path, reference: np.ndarray):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    embedder = SentenceTransformerEmbedder(cache_size=1, onnx_cache_dir=blocked / "models")
    vectors = np.concatenate([embedder.embed([t]) for t in TEXTS])
    assert embedder.backend == "torch" and not embedder.uses_onnx
    assert _cosines(vectors, reference).min() >= 0.9999999
    assert embedder.embed(TEXTS).shape == (len(TEXTS), 384)


def test_onnx_can_be_switched_off(tmp_path: Path):
    plain = SentenceTransformerEmbedder(cache_size=1, onnx=False, onnx_cache_dir=tmp_path)
    assert not plain.uses_onnx
    assert plain.embed(["hello"]).shape == (1, plain.dim)
    assert not list(tmp_path.iterdir())


def _child(code: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", MEMSTRATA_MODEL_CACHE=str(cache))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=240, check=False)


def test_a_fresh_process_recalls_without_torch(cache: Path, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    from memstrata import MemoryManager

    embedder = SentenceTransformerEmbedder(onnx_cache_dir=cache)
    with MemoryManager.open(url, home=tmp_path, embedder=embedder) as memory:
        memory.remember("u1", "I prefer window seats on long flights.")
        memory.remember("u1", "My sister Caroline paints landscapes.")
    proc = _child(f"""
        import json, sys
        from memstrata import MemoryManager
        with MemoryManager.open({url!r}, home={str(tmp_path)!r}) as memory:
            hits = memory.recall("u1", "where do I like to sit on a plane?", k=1)
            print(json.dumps({{"top": hits[0].record.content,
                              "loaded": sorted(m for m in ("torch", "transformers",
                                               "sentence_transformers") if m in sys.modules)}}))
        """, cache)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no progress bars, no library warnings
    out = json.loads(proc.stdout)
    assert out == {"top": "I prefer window seats on long flights.", "loaded": []}


def test_the_pytorch_path_loads_quietly(tmp_path: Path):
    proc = _child("""
        from memstrata.memory._st_embedder import SentenceTransformerEmbedder
        embedder = SentenceTransformerEmbedder(onnx=False)
        print(embedder.embed(["hello", "world"]).shape, embedder.backend)
        """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(2, 384) torch"
    assert proc.stderr == ""


def test_every_writer_embeds_a_record_and_its_sentences_in_one_call(embedder) -> None:
    """``embed_with_sentences`` (LongTermMemory's writes and the consolidation jobs'):
    one vector a text, and one a sentence of each content of two or more sentences."""
    from memstrata.memory.embedder import embed_with_sentences

    texts = ["One sentence only.", "Finally drove my new Subaru home. Any tips for the seats?"]
    vectors, parts = embed_with_sentences(embedder, texts, texts)
    assert vectors.shape == (2, embedder.dim)
    assert parts[0] is None and parts[1] is not None and parts[1].shape == (2, embedder.dim)
    alone = embedder.embed(["Finally drove my new Subaru home.", texts[1]])
    assert np.allclose(parts[1][0], alone[0], atol=1e-4)
    assert np.allclose(vectors[1], alone[1], atol=1e-4)
    _, none = embed_with_sentences(embedder, texts, texts, with_sentences=False)
    assert none == [None, None]
    empty, nothing = embed_with_sentences(embedder, [], ["One sentence only."])
    assert empty.shape == (0, embedder.dim) and nothing == [None]
