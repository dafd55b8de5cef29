"""Store speed through the public API, on SQLite (WAL) with the local index.

* ``remember`` batch-ingest throughput with and without embedding time, and the
  store's overhead per record as a share of the embedding time (real model);
* ``recall`` p50/p95 excluding the query embedding (the embedding cache is
  warmed with the queries first) and including it, for one user with 10k and
  100k memories, and for 1,000 users x 1,000 memories;
* cold start: first recall of a 100k-memory user after reopening the manager.

Records for the large stores are real MiniLM embeddings of real conversational
text, precomputed once (``_common.embedded_corpus``) so a run does not spend an
hour re-embedding; queries are embedded by the real model.

Run: ``python benchmarks/bench_store.py [--quick]`` -> ``benchmarks/results/store.json``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    LOCOMO,
    PrecomputedEmbedder,
    corpus,
    embedded_corpus,
    embedded_sentences,
    locomo_sentences,
    percentiles,
    write_result,
)

from memstrata import ManualClock, MemoryInput, MemoryManager, WritePolicy
from memstrata._text import sentences
from memstrata.eval import load_dataset
from memstrata.memory import default_embedder

#: ingest measures the store, not the write policy's small-talk filter
INGEST_POLICY = WritePolicy(drop_small_talk=False)


def questions(n: int) -> list[str]:
    import json

    from _common import LOCOMO

    data = json.loads(LOCOMO.read_text())
    out = [qa["question"] for sample in data for qa in sample["qa"]]
    return out[:n]


def ingest_throughput(workdir: Path, n: int, existing: tuple[list[str], np.ndarray]
                      ) -> dict[str, Any]:
    """Real model: time embedding alone, then the store path alone (vectors
    precomputed) into an empty user and into a user that already holds
    ``len(existing)`` memories (near-duplicate checks grow with the user)."""
    from memstrata.memory._st_embedder import SentenceTransformerEmbedder

    texts = corpus(n, seed=99)
    fresh = SentenceTransformerEmbedder(cache_size=1)  # no cache help
    fresh.embed(["warm up the model"])
    # what ``remember`` embeds: each text and, for one of several sentences, each sentence
    embedded = [*texts, *dict.fromkeys(s for t in texts for s in sentences(t))]
    start = time.perf_counter()
    chunks = [fresh.embed(embedded[i : i + 256]) for i in range(0, len(embedded), 256)]
    embed_s = time.perf_counter() - start
    vectors = np.vstack(chunks)
    start = time.perf_counter()
    for i in range(0, n, 256):
        fresh.embed(texts[i : i + 256])
    whole_s = time.perf_counter() - start
    old_texts, old_vectors = existing
    embedder = PrecomputedEmbedder(*_with_sentences([*embedded, *old_texts],
                                                    np.vstack([vectors, old_vectors])))
    out: dict[str, Any] = {
        "records": n,
        "embedding_ms_per_record": round(embed_s / n * 1000, 4),
        "sentences_embedded_per_record": round((len(embedded) - n) / n, 3),
        "embedding_ms_per_record_whole_only": round(whole_s / n * 1000, 4),
    }
    for label, preload in (("into_empty_user", 0), (f"into_user_with_{len(old_texts)}",
                                                    len(old_texts))):
        with MemoryManager.open(f"sqlite:///{workdir / f'ingest-{preload}.db'}",
                                embedder=embedder, write=INGEST_POLICY) as mm:
            mm.remember("warm", "warm up the store", type="knowledge")
            if preload:
                mm.remember_many("u", [MemoryInput(content=t) for t in old_texts])
            start = time.perf_counter()
            decisions = mm.remember_many("u", [MemoryInput(content=t) for t in texts])
            store_s = time.perf_counter() - start
        out[label] = {
            "written": sum(d.stored for d in decisions),
            "store_ms_per_record": round(store_s / n * 1000, 4),
            "store_overhead_share_of_embedding": round(store_s / embed_s, 4),
            "records_per_s_without_embedding": round(n / store_s, 1),
        }
    with MemoryManager.open(f"sqlite:///{workdir / 'ingest-e2e.db'}",
                            embedder=SentenceTransformerEmbedder(cache_size=1),
                            write=INGEST_POLICY) as mm:
        mm.remember("warm", "warm up the store", type="knowledge")
        start = time.perf_counter()
        mm.remember_many("u", [MemoryInput(content=t) for t in texts])
        out["records_per_s_with_embedding"] = round(n / (time.perf_counter() - start), 1)
    out["target_overhead_share"] = 0.10
    out["conversation_turns"] = turn_ingest(workdir)
    print("ingest", out, flush=True)
    return out


def turn_ingest(workdir: Path, n: int = 400) -> dict[str, Any]:
    """``remember_many`` of whole conversation turns (LoCoMo, most of several
    sentences), real model, no cache: with the sentence vectors (the default) and
    without (``WritePolicy(sentence_vectors=False)``) - what a vector per sentence
    costs a write. Each timed twice, interleaved; the faster of the two is kept."""
    from memstrata.memory._st_embedder import SentenceTransformerEmbedder

    turns = [t.text for c in load_dataset(LOCOMO).conversations for t in c.turns][:n]
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(2):
        for flag in (False, True):
            embedder = SentenceTransformerEmbedder(cache_size=1)
            embedder.embed(["warm up the model"])
            with MemoryManager.open(
                    f"sqlite:///{workdir / f'turns-{flag}-{len(times[flag])}.db'}",
                    embedder=embedder,
                    write=WritePolicy(drop_small_talk=False, sentence_vectors=flag)) as mm:
                start = time.perf_counter()
                mm.remember_many("u", [MemoryInput(content=t) for t in turns])
                times[flag].append(time.perf_counter() - start)
    per = {flag: min(v) / n * 1000 for flag, v in times.items()}
    return {
        "turns": n,
        "sentences_per_turn": round(sum(len(sentences(t)) for t in turns) / n, 2),
        "ms_per_turn_with_sentence_vectors": round(per[True], 3),
        "ms_per_turn_without": round(per[False], 3),
        "cost_of_sentence_vectors": round(per[True] / per[False] - 1, 3),
    }


def recall_latency(mm: MemoryManager, users: list[str], queries: list[str],
                   repeat: int) -> dict[str, Any]:
    embedder = mm.embedder
    embedder.embed(queries)  # warm the cache: timings below exclude the query embedding
    rng = np.random.default_rng(3)
    samples = []
    hits = 0
    for i in range(repeat):
        user = users[int(rng.integers(0, len(users)))]
        q = queries[i % len(queries)]
        start = time.perf_counter()
        found = mm.recall(user, q, record_use=False)
        samples.append(time.perf_counter() - start)
        hits += bool(found)
    with_use = []
    for i in range(min(repeat, 200)):
        user = users[int(rng.integers(0, len(users)))]
        start = time.perf_counter()
        mm.recall(user, queries[i % len(queries)])
        with_use.append(time.perf_counter() - start)
    return {"excluding_embedding": percentiles(samples),
            "excluding_embedding_with_use_recorded": percentiles(with_use),
            "share_with_results": round(hits / repeat, 3)}


def recall_including_embedding(mm: MemoryManager, user: str, n: int) -> dict[str, Any]:
    # never seen by the (process-wide) embedding cache: the memory count makes them unique
    fresh = [f"{q} (variant {i} of {user}-{mm.stats(user)['records']})"
             for i, q in enumerate(questions(n))]
    samples = []
    for q in fresh:
        start = time.perf_counter()
        mm.recall(user, q, record_use=False)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


#: sentence -> its vector, for the corpus texts (filled by main)
_SENTENCES: dict[str, np.ndarray] = {}


def _with_sentences(texts: list[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The precomputed table of ``texts`` and of the corpus sentences."""
    if not _SENTENCES:
        return texts, vectors
    return [*texts, *_SENTENCES], np.vstack([vectors, np.vstack(list(_SENTENCES.values()))])


def big_user(workdir: Path, n: int, texts: list[str], vectors: np.ndarray,
             queries: list[str]) -> dict[str, Any]:
    url = f"sqlite:///{workdir / f'user{n}.db'}"
    embedder = PrecomputedEmbedder(*_with_sentences(texts, vectors))
    clock = ManualClock()
    start = time.perf_counter()
    with MemoryManager.open(url, embedder=embedder, clock=clock, write=INGEST_POLICY) as mm:
        mm.remember_many("u", [MemoryInput(content=t) for t in texts[:n]], progress=True)
        ingest_s = time.perf_counter() - start
        warm = recall_latency(mm, ["u"], queries, repeat=400)
        warm["including_embedding"] = recall_including_embedding(mm, "u", 200)
    # cold: reopen, first recall loads the persisted shards
    with MemoryManager.open(url, embedder=embedder, clock=clock) as mm:
        mm.embedder.embed([queries[0]])
        start = time.perf_counter()
        mm.recall("u", queries[0], record_use=False)
        cold_s = time.perf_counter() - start
    res = {"memories": n, "ingest_s": round(ingest_s, 1), **warm,
           "cold_first_recall_s": round(cold_s, 3)}
    print(f"user with {n}", res, flush=True)
    return res


def many_users(workdir: Path, users: int, per_user: int, texts: list[str],
               vectors: np.ndarray, queries: list[str]) -> dict[str, Any]:
    url = f"sqlite:///{workdir / 'many.db'}"
    embedder = PrecomputedEmbedder(*_with_sentences(texts, vectors))
    rng = np.random.default_rng(5)
    start = time.perf_counter()
    with MemoryManager.open(url, embedder=embedder, clock=ManualClock(),
                            write=INGEST_POLICY) as mm:
        for u in range(users):
            pick = rng.choice(len(texts), size=per_user, replace=False)
            mm.remember_many(f"user{u}", [MemoryInput(content=texts[i]) for i in pick])
            if u % 100 == 99:
                print(f"  {u + 1}/{users} users", flush=True)
        ingest_s = time.perf_counter() - start
        res = recall_latency(mm, [f"user{u}" for u in range(users)], queries, repeat=1000)
    res = {"users": users, "per_user": per_user, "ingest_s": round(ingest_s, 1), **res}
    print("many users", res, flush=True)
    return res


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    big = 10_000 if args.quick else 100_000
    texts, vectors = embedded_corpus(big + 300)
    # the sentence vectors ``remember`` stores besides each text, precomputed as well
    _SENTENCES.update(zip(*embedded_sentences(texts, f"corpus_{big + 300}"), strict=True))
    texts, vectors = texts[:big], vectors[:big]
    queries = questions(300)
    default_embedder().embed(["warm up"])
    workdir = Path(tempfile.mkdtemp(prefix="memstrata-store-"))
    try:
        result = {
            "database": "SQLite (WAL, synchronous=NORMAL), local index",
            # the preloaded user holds records distinct from the ingested ones
            "ingest": ingest_throughput(workdir, 1000 if args.quick else 4000,
                                        (texts[-10_000:], vectors[-10_000:])),
            "recall_one_user": {
                str(n): big_user(workdir, n, texts, vectors, queries)
                for n in ([1_000, 10_000] if args.quick else [10_000, 100_000])
            },
            "recall_many_users": many_users(workdir, 100 if args.quick else 1000, 1000,
                                            texts, vectors, queries),
            "references": {
                "mem0_search_ms_excluding_embedding_at_600_per_user": 56,
                "mem0_search_ms_p50_including_embedding": 69,
            },
        }
        write_result("store_quick" if args.quick else "store", result)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    _ = locomo_sentences


if __name__ == "__main__":
    main()
