"""Shared helpers for the benchmarks: machine info, timing, real-text corpora, JSON output.

The corpus for the speed benchmarks is built from the LoCoMo development
conversations in ``../shared/data/locomo`` (never copied into the project):
single sentences plus random pairs of sentences, embedded once with the real
packaged MiniLM and cached under ``benchmarks/.cache`` (git-ignored), so the
vectors searched are real embeddings of real conversational text.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
CACHE = ROOT / ".cache"
LOCOMO = Path(os.environ.get("MEMSTRATA_LOCOMO",
                             ROOT.parent.parent / "shared" / "data" / "locomo" / "locomo_dev.json"))


def machine() -> dict[str, Any]:
    import torch

    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)
    if not ms:
        return {}

    def pct(p: float) -> float:
        return ms[min(len(ms) - 1, max(0, round(p / 100 * (len(ms) - 1))))]

    return {"p50_ms": round(pct(50), 4), "p95_ms": round(pct(95), 4),
            "p99_ms": round(pct(99), 4), "mean_ms": round(statistics.fmean(ms), 4),
            "n": len(ms)}


def ab_percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    """p50 / p95 (ms, 3 decimals, the sample at ``int(p * n)``) and n: the figures of the
    interleaved A/B runs (``bench_latency_ab.py``, ``bench_ranking_ab.py``), kept as the
    first of them measured so their files compare."""
    ordered = sorted(samples_s)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 3)

    return {"p50_ms": at(0.50), "p95_ms": at(0.95), "n": len(ordered)}


def timed(fn: Callable[[], Any], repeat: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def rss_mb() -> float:
    """Current resident set size (Linux)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT.parent)}")
    return path


def locomo_sentences() -> list[str]:
    data = json.loads(LOCOMO.read_text())
    out: list[str] = []
    for sample in data:
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    for sentence in re.split(r"(?<=[.!?])\s+", turn.get("text", "")):
                        if len(sentence.split()) >= 4:
                            out.append(sentence.strip())
    return list(dict.fromkeys(out))


def corpus(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct realistic texts: sentences, then random sentence pairs."""
    sentences = locomo_sentences()
    rng = np.random.default_rng(seed)
    texts = list(sentences[:n])
    seen = set(texts)
    while len(texts) < n:
        i, j = rng.integers(0, len(sentences), size=2)
        text = f"{sentences[i]} {sentences[j]}"
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def embedded_corpus(n: int) -> tuple[list[str], np.ndarray]:
    """(texts, float32 unit vectors) for ``n`` texts, embedded once and cached."""
    from memstrata.memory import default_embedder

    CACHE.mkdir(parents=True, exist_ok=True)
    texts = corpus(n)
    path = CACHE / f"corpus_{n}.npy"
    if path.exists():
        vectors = np.load(path)
        if vectors.shape[0] == n:
            return texts, vectors
    embedder = default_embedder()
    chunks = []
    step = 2048
    for start in range(0, n, step):
        chunks.append(embedder.embed(texts[start : start + step]))
        print(f"  embedded {min(n, start + step)}/{n}", flush=True)
    vectors = np.vstack(chunks).astype(np.float32)
    np.save(path, vectors)
    return texts, vectors


def embedded_sentences(texts: Sequence[str], name: str) -> tuple[list[str], np.ndarray]:
    """(sentences, vectors) of the texts' sentences - what ``remember`` embeds besides
    each text (:func:`memstrata._text.sentences`) - embedded once and cached as ``name``."""
    from memstrata._text import sentences
    from memstrata.memory import default_embedder

    found = list(dict.fromkeys(s for t in texts for s in sentences(t)))
    path = CACHE / f"{name}_sentences.npy"
    if path.exists():
        vectors = np.load(path)
        if vectors.shape[0] == len(found):
            return found, vectors
    embedder = default_embedder()
    chunks = []
    step = 2048
    for start in range(0, len(found), step):
        chunks.append(embedder.embed(found[start : start + step]))
        print(f"  embedded {min(len(found), start + step)}/{len(found)} sentences", flush=True)
    vectors = np.vstack(chunks).astype(np.float32) if chunks else np.zeros((0, embedder.dim))
    np.save(path, vectors)
    return found, vectors


class PrecomputedEmbedder:
    """The real model's vectors for known texts (precomputed), the model itself otherwise.

    Lets the store benchmarks ingest 100k records without re-embedding them on
    every run; queries still go through the real model.
    """

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        from memstrata.memory import default_embedder

        self.inner = default_embedder()
        self.table = {t: v for t, v in zip(texts, vectors, strict=True)}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        known = [self.table.get(t) for t in texts]
        if all(v is not None for v in known):
            return np.vstack(known).astype(np.float32)  # type: ignore[arg-type]
        return self.inner.embed(texts)


#: the note of a first-look file (one file a benchmark, keyed by set)
LOOKS_NOTE = ("the first evaluation of each blind set, written once before any tuning on it; "
              "an entry is never overwritten")


def first_looks(path: Path) -> dict[str, Any]:
    """The first-look file ``path`` (``{"benchmark", "note", "sets": {set: entry}}``); an
    empty one when it does not exist yet."""
    if not path.exists():
        return {"benchmark": path.stem, "note": LOOKS_NOTE, "sets": {}}
    looks: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return looks


def _set_order(sets: dict[str, Any]) -> dict[str, Any]:
    """``sets`` with each kind of set (``heldout``, ``guard``) in the order it first appears,
    and the sets of a kind in numeric order."""
    kinds: list[str] = []
    keys = []
    for key in sets:
        kind = key.rstrip("0123456789")
        if kind not in kinds:
            kinds.append(kind)
        keys.append((kinds.index(kind), int(key[len(kind):] or 0), key))
    return {key: sets[key] for *_, key in sorted(keys)}


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside the first-look file ``path`` for a read, merge and replace:
    two benchmark runs finishing at once would otherwise each rewrite the whole file they
    read at the start, and one run's first looks would be lost."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _replace(path: Path, data: dict[str, Any], indent: int) -> None:
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def add_first_looks(path: Path, new: dict[str, Any]) -> list[str]:
    """Adds the entries of ``new`` that ``path`` (a flat first-look file, ``{key: entry}``)
    does not hold yet, and returns their keys: an entry is never overwritten. The file is
    read, merged and replaced under an exclusive lock, so two benchmark runs finishing at
    once (``--reader auto`` beside ``--reader model``) both keep their first looks."""
    with _locked(path):
        looks: dict[str, Any] = (json.loads(path.read_text(encoding="utf-8"))
                                 if path.exists() else {})
        added = [k for k in new if k not in looks]
        looks.update({k: new[k] for k in added})
        _replace(path, looks, indent=1)
    return added


def record_first_look(path: Path, name: str, payload: dict[str, Any]) -> bool:
    """Adds the first look at the blind set ``name`` to ``path`` unless it holds one (an
    entry is never overwritten) and says whether it did; under the same lock as
    :func:`add_first_looks`, so runs finishing at once keep each other's sets."""
    with _locked(path):
        looks = first_looks(path)
        if name in looks["sets"]:
            print(f"{path.name} holds {name} already (a first look is never overwritten); "
                  "not written")
            return False
        looks["sets"][name] = {
            "note": f"the first evaluation of the blind {name} split, written before any "
                    "tuning on it; never overwritten",
            "when": datetime.now(UTC).isoformat(timespec="seconds"), **payload}
        looks["sets"] = _set_order(looks["sets"])
        _replace(path, looks, indent=2)
    print(f"wrote {name} to {path}")
    return True


def record_section_first_look(path: Path, section: str, payload: dict[str, Any]) -> bool:
    """Adds the first look of ``section`` to the sectioned first-look file ``path``
    (``{"sections": {section: entry}}``, bench_multilingual) unless it holds one, and says
    whether it did; under the same lock as :func:`add_first_looks`."""
    with _locked(path):
        data: dict[str, Any] = (json.loads(path.read_text(encoding="utf-8"))
                                if path.exists() else {"sections": {}})
        if section in data["sections"]:
            return False
        data["sections"][section] = {
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "loadavg": list(os.getloadavg()), **payload}
        _replace(path, data, indent=2)
    return True
