"""Recall quality on the LoCoMo development conversations, and recall latency.

Turn-level evidence recall@1/5/10, nDCG@10 and MRR (category 5 excluded, 95%
bootstrap intervals over questions) for dense-only, keyword-only (BM25), plain
RRF and the default hybrid (``MemoryManager.recall``), all through the public
API on real SQLite with the packaged MiniLM:

* on the evaluation's default ingest (one memory per turn, speaker + session
  date + a quote of the previous turn indexed as ``context``);
* on plain turns (no context) - what the outside reference figures measured;
* the ablation that justifies each default change: every step's paired gain
  over the step before, with its interval;
* what each part of the indexed context adds (speaker, session date, quote
  of the previous turn);
* the effect of the write policy (production default drops small talk) and of
  LoCoMo's image captions on the default;
* recall latency p50/p95 at the default k=5, without the query embedding
  (embedding cached) and with it (a fresh single-query encode each time),
  read-only and as an application calls it (the recall recorded as a use).

Ingested databases are cached under ``benchmarks/.cache/recall`` (git-ignored).
Run: ``flock /tmp/memstrata-bench.lock python benchmarks/bench_recall_quality.py``
-> ``benchmarks/results/recall_quality.json`` and ``recall_quality.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import CACHE, LOCOMO, RESULTS, machine, percentiles, write_result

from memstrata.eval import (
    DenseRetriever,
    EvalConfig,
    EvalResult,
    Evaluation,
    HybridRetriever,
    KeywordRetriever,
    RRFRetriever,
    load_dataset,
)
from memstrata.eval._report import summary_table
from memstrata.policies.retrieval import RetrievalPolicy

#: measured outside the project on the same conversations and model (issue 4)
REFERENCES = {
    "bm25": {"recall@5": 0.463, "recall@10": 0.533},
    "dense": {"recall@5": 0.416, "recall@10": 0.508},
    "rrf": {"recall@5": 0.467, "recall@10": 0.547},
    "mem0 (no LLM)": {"recall@5": 0.416, "p50_ms": 69.0},
    "chroma": {"recall@5": 0.415, "p50_ms": 20.0},
}
TARGETS = {"recall@5": 0.55, "recall@10": 0.65, "p50_ms_with_embedding": 15.0}
#: the retrieval defaults before issue 4 tuned them
PREVIOUS_POLICY = RetrievalPolicy(dense_weight=0.6, keyword_saturation=6.0, decay_floor=0.5)
PREVIOUS_BM25_B = 0.75
METRICS = ("recall@1", "recall@5", "recall@10", "ndcg@10", "mrr")


def _row(result: EvalResult, name: str) -> dict[str, Any]:
    s = result.summary(name)
    return {
        "description": s.description,
        **{m: s.overall[m].to_dict() for m in METRICS},
        "ranking_latency_ms": {k: round(v, 3) for k, v in s.latency.items()},
        "tokens_to_all_evidence_median": s.tokens_to_all_median,
        "by_category_recall@5": {
            result.category_label(c): round(v["recall@5"].mean, 4)
            for c, v in s.by_category.items()
        },
    }


def _paired(result_a: EvalResult, a: str, result_b: EvalResult, b: str) -> dict[str, Any]:
    """``a - b`` over the same questions (the runs may come from different ingests)."""
    from memstrata.eval import bootstrap_paired_difference

    ra, rb = result_a.run(a), result_b.run(b)
    assert [q.probe_id for q in ra.questions] == [q.probe_id for q in rb.questions]
    return {
        m: bootstrap_paired_difference(ra.values(m), rb.values(m), n_boot=2000).to_dict()
        for m in METRICS
    }


def _latency(ev: Evaluation, *, k: int) -> dict[str, Any]:
    """recall(k) p50/p95 without and with the query embedding, read-only."""
    from memstrata import MemoryManager
    from memstrata.memory._st_embedder import SentenceTransformerEmbedder

    probes = [(c.user, p.question) for c in ev.dataset.conversations for p in c.probes]
    memory = ev.memory
    memory.embedder.embed([q for _, q in probes])  # cached: ranking only
    for user, q in probes[:30]:
        memory.recall(user, q, k=k, record_use=False)
    ranking = []
    for user, q in probes:
        start = time.perf_counter()
        memory.recall(user, q, k=k, record_use=False)
        ranking.append(time.perf_counter() - start)
    # a second manager on the same files whose embedder caches nothing: every
    # recall pays a real single-query encode
    fresh = SentenceTransformerEmbedder(cache_size=1)
    fresh.embed(["warm up the model"])
    directory = ev.ingested.directory
    with MemoryManager.open(
        f"sqlite:///{directory / 'memory.db'}", embedder=fresh, clock=memory.clock,
        home=directory, index_dir=directory / "index", retention=memory.settings.retention,
    ) as cold:
        for user, q in probes[:30]:
            cold.recall(user, q + " ", k=k, record_use=False)
        with_embedding = []
        embed_only = []
        for user, q in probes:
            start = time.perf_counter()
            fresh.embed([q + " ?"])
            embed_only.append(time.perf_counter() - start)
            start = time.perf_counter()
            cold.recall(user, q, k=k, record_use=False)
            with_embedding.append(time.perf_counter() - start)
    # as an application calls it: a recall counts as a use (a small write per
    # recall) - on a copy, so the cached database keeps its access times
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "db"
        shutil.copytree(directory, copy)
        with MemoryManager.open(
            f"sqlite:///{copy / 'memory.db'}", embedder=fresh, clock=memory.clock, home=copy,
            index_dir=copy / "index", retention=memory.settings.retention,
        ) as used:
            for user, q in probes[:30]:
                used.recall(user, q + " ", k=k)
            with_use = []
            for user, q in probes:
                start = time.perf_counter()
                used.recall(user, q, k=k)
                with_use.append(time.perf_counter() - start)
    return {
        "k": k,
        "without_embedding": percentiles(ranking),
        "with_embedding": percentiles(with_embedding),
        "embedding_only": percentiles(embed_only),
        "with_embedding_and_use_recorded": percentiles(with_use),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(LOCOMO))
    parser.add_argument("--cache", default=str(CACHE / "recall"))
    parser.add_argument("--bootstrap", type=int, default=2000)
    args = parser.parse_args()

    dataset = load_dataset(args.data)
    base = EvalConfig.build(bootstrap=args.bootstrap, depth=50)
    baselines = [DenseRetriever(), KeywordRetriever(), RRFRetriever(), HybridRetriever()]
    started = time.perf_counter()

    # 1. plain turns, as the outside references measured them; previous defaults
    plain_cfg = base.model_copy(update={"context": ()})
    with Evaluation.open(dataset, plain_cfg, cache_dir=args.cache) as ev:
        plain = ev.evaluate([*baselines[:3], HybridRetriever(name="default")])
    with Evaluation.open(dataset, plain_cfg.model_copy(update={"bm25_b": PREVIOUS_BM25_B}),
                         cache_dir=args.cache) as ev:
        before = ev.evaluate([HybridRetriever(name="previous", policy=PREVIOUS_POLICY)])

    # 2. the evaluation's default ingest: context indexed with every turn
    with Evaluation.open(dataset, base.model_copy(update={"bm25_b": PREVIOUS_BM25_B}),
                         cache_dir=args.cache) as ev:
        enriched_old_b = ev.evaluate([
            HybridRetriever(name="previous", policy=PREVIOUS_POLICY),
            HybridRetriever(name="+fusion", policy=replace(
                PREVIOUS_POLICY, dense_weight=RetrievalPolicy().dense_weight,
                keyword_saturation=RetrievalPolicy().keyword_saturation)),
            HybridRetriever(name="+decay floor", policy=RetrievalPolicy()),
            KeywordRetriever(),
        ])
    with Evaluation.open(dataset, base, cache_dir=args.cache) as ev:
        main_result = ev.evaluate(baselines)
        latency = _latency(ev, k=RetrievalPolicy().top_k)

    # 3. what the ingest choices do to the default
    with Evaluation.open(dataset, base.model_copy(update={"write_policy": "default"}),
                         cache_dir=args.cache) as ev:
        production_write = ev.evaluate([HybridRetriever()])
        write_outcomes = ev.ingested.report.outcomes
    enrichment: dict[str, Any] = {}
    for parts in ((), ("speaker",), ("speaker", "date"), ("speaker", "date", "previous")):
        with Evaluation.open(dataset, base.model_copy(update={"context": parts}),
                             cache_dir=args.cache) as ev:
            part_result = ev.evaluate([KeywordRetriever(), HybridRetriever()])
        enrichment["+".join(parts) or "none"] = {
            name: {m: round(part_result.summary(name).overall[m].mean, 4) for m in METRICS}
            for name in ("keyword", "default")
        }
    no_caption = load_dataset(args.data, include_captions=False)
    with Evaluation.open(no_caption, base, cache_dir=args.cache) as ev:
        captions_off = ev.evaluate([HybridRetriever()])

    ablation = [
        {"step": "enrich: speaker, session date, quote of the previous turn as context",
         "from": "previous defaults on plain turns", "gain": _paired(
             enriched_old_b, "previous", before, "previous")},
        {"step": "fusion weights: dense_weight 0.6 -> 0.4, keyword_saturation 6 -> 10",
         "gain": _paired(enriched_old_b, "+fusion", enriched_old_b, "previous")},
        {"step": "decay_floor 0.5 -> 0.8",
         "gain": _paired(enriched_old_b, "+decay floor", enriched_old_b, "+fusion")},
        {"step": "BM25 b 0.75 -> 0.5 (default hybrid)",
         "gain": _paired(main_result, "default", enriched_old_b, "+decay floor")},
        {"step": "BM25 b 0.75 -> 0.5 (keyword-only)",
         "gain": _paired(main_result, "keyword", enriched_old_b, "keyword")},
        {"step": "total: previous defaults on plain turns -> default on enriched turns",
         "gain": _paired(main_result, "default", before, "previous")},
    ]
    default = main_result.summary("default").overall
    payload = {
        "benchmark": "recall_quality",
        "machine": machine(),
        "dataset": main_result.dataset | {"load_report": {
            k: v for k, v in main_result.dataset["load_report"].items()
            if k != "missing_evidence"}},
        "ingest": {k: v for k, v in main_result.ingest.items()},
        "references": REFERENCES,
        "targets": TARGETS,
        "retrievers": {r.name: _row(main_result, r.name) for r in main_result.runs},
        "retrievers_plain_turns": {r.name: _row(plain, r.name) for r in plain.runs}
        | {"previous default": _row(before, "previous")},
        "default_minus": {
            name: _paired(main_result, "default", main_result, name)
            for name in ("dense", "keyword", "rrf")
        },
        "ablation": ablation,
        "enrichment_parts": enrichment,
        "ingest_choices": {
            "production write policy (drops small talk)": {
                "write_decisions": write_outcomes,
                "default": _row(production_write, "default"),
                "minus_keep_all": _paired(production_write, "default", main_result, "default"),
            },
            "without image captions": {
                "default": _row(captions_off, "default"),
                "minus_with_captions": _paired(captions_off, "default", main_result, "default"),
            },
        },
        "latency": latency,
        "checks": {
            "recall@5 >= target": default["recall@5"].mean >= TARGETS["recall@5"],
            "recall@10 >= target": default["recall@10"].mean >= TARGETS["recall@10"],
            "CI excludes every reference recall@5": all(
                default["recall@5"].low > ref["recall@5"] for ref in REFERENCES.values()
            ),
            "CI excludes every reference recall@10": all(
                default["recall@10"].low > ref["recall@10"]
                for ref in REFERENCES.values() if "recall@10" in ref
            ),
            "p50 with embedding <= target": latency["with_embedding"]["p50_ms"]
            <= TARGETS["p50_ms_with_embedding"],
        },
        "seconds": round(time.perf_counter() - started, 1),
    }
    path = write_result("recall_quality", payload)
    md = RESULTS / "recall_quality.md"
    md.write_text(
        "# Recall quality, LoCoMo development conversations\n\n"
        "Enriched ingest (the evaluation default):\n\n" + summary_table(main_result)
        + "\n\nPlain turns (no context, as the outside references):\n\n"
        + summary_table(plain) + "\n" + summary_table(before).split("\n", 2)[2]
        .replace("`previous`", "`previous defaults`") + "\n"
    )
    print(summary_table(main_result))
    print(f"latency: {latency}")
    print(f"checks: {payload['checks']}")
    print(f"wrote {path} and {md}")


if __name__ == "__main__":
    main()
