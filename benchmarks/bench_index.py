"""Vector-index speed and exactness on real MiniLM embeddings of conversational text.

Measures the local backend (faiss flat float16, one thread per query):
* search p50/p95 at 1k / 10k / 100k vectors for one user, top-5 and top-50
  (recall's candidate pool), unfiltered and with a scope filter admitting half;
* agreement of the top-5 with exact float32 search (numpy);
* 1,000 users x 1,000 vectors in one process (shards in the LRU);
* cold load of a 100k-vector user from disk (vector + keyword shard);
* memory per 100k vectors.

Run: ``python benchmarks/bench_index.py [--quick]`` -> ``benchmarks/results/index.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from _common import embedded_corpus, percentiles, rss_mb, timed, write_result

from memstrata.memory._keyword import KeywordIndex
from memstrata.memory._local_index import LocalVectorIndex
from memstrata.memory._store import IndexRow
from memstrata.memory.vector import IndexBatch, SearchFilter, Watermark

N_QUERIES = 300


def rows_of(texts: list[str], vectors: np.ndarray, scopes: int = 2) -> list[IndexRow]:
    return [
        IndexRow(uuid.uuid4().hex, f"scope{i % scopes}", "knowledge", t, v)
        for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
    ]


def agreement(index: LocalVectorIndex, user: str, rows: list[IndexRow], matrix: np.ndarray,
              queries: np.ndarray, k: int = 5) -> float:
    exact = np.argsort(-(queries @ matrix.T), axis=1)[:, :k]
    hits = index.search(user, queries, k)
    same = 0
    for q, got in enumerate(hits):
        want = {rows[i].id for i in exact[q]}
        same += len(want & {h.id for h in got})
    return same / (k * len(queries))


def _time_searches(index: LocalVectorIndex, qs: list[np.ndarray], k: int,
                   where: SearchFilter | None) -> list[float]:
    cursor = iter(range(10**9))
    flt = where if where is not None else SearchFilter()
    return timed(lambda: index.search("u", qs[next(cursor) % len(qs)], k, flt), repeat=len(qs))


def single_user(sizes: list[int], texts: list[str], vectors: np.ndarray,
                queries: np.ndarray, workdir: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for n in sizes:
        index = LocalVectorIndex(dim=vectors.shape[1], directory=workdir / f"u{n}")
        rows = rows_of(texts[:n], vectors[:n])
        index.apply("u", IndexBatch(rows, (), Watermark("g", n)))
        half = SearchFilter(scopes=frozenset({"scope0"}))
        qs = [queries[i : i + 1] for i in range(len(queries))]
        res = {
            "top5": percentiles(_time_searches(index, qs, 5, None)),
            "top50": percentiles(_time_searches(index, qs, 50, None)),
            "top50_scope_filter_half": percentiles(_time_searches(index, qs, 50, half)),
            "top5_agreement_vs_exact_float32": round(
                agreement(index, "u", rows, vectors[:n], queries), 5),
        }
        out[str(n)] = res
        print(n, res, flush=True)
        index.close()
    return out


def many_users(texts: list[str], vectors: np.ndarray, queries: np.ndarray, workdir: Path,
               users: int, per_user: int) -> dict[str, object]:
    rng = np.random.default_rng(1)
    index = LocalVectorIndex(dim=vectors.shape[1], directory=workdir / "many")
    before = rss_mb()
    start = time.perf_counter()
    for u in range(users):
        pick = rng.choice(len(texts), size=per_user, replace=False)
        rows = [IndexRow(uuid.uuid4().hex, "s", "knowledge", texts[i], vectors[i]) for i in pick]
        index.apply(f"user{u}", IndexBatch(rows, (), Watermark("g", per_user)))
    build_s = time.perf_counter() - start
    order = rng.integers(0, users, size=len(queries) * 3)
    it = iter(range(10**9))

    def one() -> None:
        i = next(it)
        index.search(f"user{order[i % len(order)]}", queries[i % len(queries)][None, :], 5)

    res = {
        "users": users, "per_user": per_user,
        "search_top5": percentiles(timed(one, repeat=len(order))),
        "build_s": round(build_s, 2),
        "rss_growth_mb": round(rss_mb() - before, 1),
        "loaded_bytes_mb": round(index.loaded_bytes / 2**20, 1),
    }
    index.close()
    print("many users", res, flush=True)
    return res


def cold_load(texts: list[str], vectors: np.ndarray, queries: np.ndarray, workdir: Path,
              n: int) -> dict[str, object]:
    """Persist a user's shards, then load them in a fresh process: time and RSS growth."""
    directory = workdir / "cold"
    rows = rows_of(texts[:n], vectors[:n])
    vec = LocalVectorIndex(dim=vectors.shape[1], directory=directory)
    kw = KeywordIndex(directory=directory)
    vec.apply("u", IndexBatch(rows, (), Watermark("g", n)))
    kw.apply("u", IndexBatch(rows, (), Watermark("g", n)))
    vec.close()
    kw.close()
    np.save(workdir / "query.npy", queries[:1])
    runs = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, __file__, "--child-load", str(directory), str(vectors.shape[1]),
             str(workdir / "query.npy")],
            capture_output=True, text=True, check=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    best = min(runs, key=lambda r: r["vector_s"] + r["keyword_s"])
    files = {p.name.split(".", 1)[1]: round(p.stat().st_size / 2**20, 1)
             for p in directory.rglob("*.npz")}
    res = {
        "n": n,
        "vector_cold_load_and_first_search_s": round(best["vector_s"], 3),
        "keyword_cold_load_and_first_search_s": round(best["keyword_s"], 3),
        "total_cold_load_s": round(best["vector_s"] + best["keyword_s"], 3),
        "rss_growth_vector_mb": round(best["vector_mb"], 1),
        "rss_growth_keyword_mb": round(best["keyword_mb"], 1),
        "raw_vector_bytes_mb": round(n * vectors.shape[1] * 2 / 2**20, 1),
        "file_sizes_mb": files,
    }
    print("cold", res, flush=True)
    return res


def child_load(directory: str, dim: str, query_path: str) -> None:
    query = np.load(query_path)
    gc.collect()
    base = rss_mb()
    start = time.perf_counter()
    vec = LocalVectorIndex(dim=int(dim), directory=Path(directory))
    vec.search("u", query, 5)
    vector_s = time.perf_counter() - start
    after_vec = rss_mb()
    start = time.perf_counter()
    kw = KeywordIndex(directory=Path(directory))
    kw.search("u", "what did she paint last summer", 5)
    keyword_s = time.perf_counter() - start
    print(json.dumps({"vector_s": vector_s, "keyword_s": keyword_s,
                      "vector_mb": after_vec - base, "keyword_mb": rss_mb() - after_vec}))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-load":
        child_load(*sys.argv[2:5])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args()
    big = 10_000 if args.quick else 100_000
    texts, vectors = embedded_corpus(big + N_QUERIES)
    queries = vectors[big:]
    texts, vectors = texts[:big], vectors[:big]
    workdir = Path(tempfile.mkdtemp(prefix="memstrata-bench-"))
    try:
        sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
        result = {
            "backend": "local (faiss IndexScalarQuantizer fp16, exact, 1 thread)",
            "dim": int(vectors.shape[1]),
            "corpus": "LoCoMo dev sentences + random sentence pairs, real all-MiniLM-L6-v2 "
                      "embeddings",
            "single_user": single_user(sizes, texts, vectors, queries, workdir),
            "many_users": many_users(texts, vectors, queries, workdir,
                                     users=100 if args.quick else 1000, per_user=1000),
            "cold_load": cold_load(texts, vectors, queries, workdir, big),
            "targets": {"p95_ms_at_10k": 1.0, "p95_ms_at_100k": 5.0,
                        "top5_agreement": 0.99, "cold_load_100k_s": 1.0},
        }
        write_result("index_quick" if args.quick else "index", result)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
