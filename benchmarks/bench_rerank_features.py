"""Would a learned second stage pay? A measurement for the reranker issue, not a shipped part.

Two ways of reranking the first stage's top 30 are measured, trained only on the users of
the project's own recall data that a reranker may train on (users 1-6 of each file,
``bench_recall_own.split_of``) and scored on its held-out users (7 and 8) and on LoCoMo
dev (never trained on):

* **features**: gradient-boosted trees (scikit-learn, seeded) over what the first stage
  knows of each candidate - its score parts and ranks (``fusion``), plus its decay, status
  and currency, its length, whether it shares the best hit's session, and its word overlap
  with the best hits. Every group is measured added to the ones before, so what carries a
  gain and what does not transfer is in the JSON;
* **a cross-encoder's cost**: the packaged MiniLM (the size of the smallest cross-encoder)
  encoding 20 (question, memory) pairs on one thread, the work a cross-encoder of the top
  20 would do per recall.

The speaker of a turn is left out: the evaluation stores the assistant's turns as memories
and the data puts 99 % of its evidence on the user's, a shortcut that would not hold where
``observe`` keeps only what the user says.

Run: ``python benchmarks/bench_rerank_features.py`` -> ``results/rerank_features.json``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from _common import CACHE, LOCOMO, machine, write_result
from bench_recall_own import _lines

from memstrata._text import tokenize
from memstrata.eval import EvalConfig, Evaluation, load_dataset
from memstrata.eval._retrievers import Ranked

DEPTH = 30
#: the feature groups, each measured added to the ones before it
GROUPS = ("fusion", "decay_status_currency", "length", "session", "overlap")


class _Candidates:
    """The default recall's top ``DEPTH``, kept for the features."""

    name = "candidates"

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], list[Any]] = {}

    def retrieve(self, memory: Any, user_id: str, query: str, depth: int) -> list[Ranked]:
        hits = memory.recall(user_id, query, k=DEPTH, record_use=False)
        self.kept[(user_id, query)] = hits
        return [Ranked(h.id, h.score, relevance=h.relevance) for h in hits]


def _collect(dataset: Any, cache: Path, label: str) -> list[dict[str, Any]]:
    retriever = _Candidates()
    config = EvalConfig.build(bootstrap=10, depth=50)
    out = []
    with Evaluation.open(dataset, config, cache_dir=cache) as ev:
        run = ev.run(retriever, depth=DEPTH)
        report = ev.ingested.report
        for q in run.questions:
            if not q.evidence_ids:
                continue
            turns = report.users[q.user].record_turns
            hits = retriever.kept[(q.user, q.question)]
            out.append({"set": label, "category": q.category, "evidence": set(q.evidence_ids),
                        "hits": hits, "turns": [set(turns.get(h.id, ())) for h in hits]})
    return out


def features(hits: list[Any]) -> np.ndarray:
    """One row a candidate, the groups' columns in ``GROUPS`` order (see ``COLUMNS``)."""
    if not hits:
        return np.zeros((0, sum(COLUMNS.values())))
    dense = [h.parts.dense for h in hits]
    bm25 = [h.parts.bm25 for h in hits]
    best_score = max(h.score for h in hits) or 1.0
    best_bm25 = max(bm25) or 1.0
    dense_rank = {i: r for r, i in enumerate(np.argsort(-np.asarray(dense), kind="stable"))}
    bm25_rank = {i: r for r, i in enumerate(np.argsort(-np.asarray(bm25), kind="stable"))}
    terms = [set(tokenize(h.content)) for h in hits]
    top = hits[0].record

    def overlap(a: set[str], b: set[str]) -> float:
        return len(a & b) / max(1, len(a | b))

    rows = []
    for i, h in enumerate(hits):
        p = h.parts
        near = [overlap(terms[i], terms[j]) for j in range(min(3, len(hits))) if j != i]
        same = sum(1 for j in range(min(5, len(hits)))
                   if j != i and hits[j].record.session_id == h.record.session_id)
        days = abs((h.record.valid_from - top.valid_from).total_seconds()) / 86400
        rows.append([
            h.score / best_score, math.log(h.score + 1e-6), 1 / (i + 1), float(i < 5),
            p.dense, p.dense - max(dense), 1 / (dense_rank[i] + 1), p.bm25 / best_bm25,
            p.keyword, 1 / (bm25_rank[i] + 1), p.relevance,
            p.decay, p.status_weight, p.currency,
            math.log(1 + len(terms[i])),
            float(h.record.session_id == top.session_id), same, math.log1p(days),
            overlap(terms[i], terms[0]) if i else 1.0, max(near or [0.0]),
        ])
    return np.asarray(rows, dtype=np.float64)


COLUMNS = {"fusion": 11, "decay_status_currency": 3, "length": 1, "session": 3, "overlap": 2}


def _recall(item: dict[str, Any], order: list[int], k: int = 5) -> float:
    found: set[str] = set()
    for i in order[:k]:
        found |= item["evidence"] & item["turns"][i]
    return len(found) / len(item["evidence"])


def _labels(item: dict[str, Any]) -> np.ndarray:
    return np.asarray([float(bool(item["evidence"] & t)) for t in item["turns"]])


def _score(items: list[dict[str, Any]], model: Any, cols: int) -> dict[str, Any]:
    base, reranked, by_cat = [], [], {}
    for item in items:
        n = len(item["hits"])
        order = list(range(n))
        if model is not None and n:
            order = list(np.argsort(-model.decision_function(item["x"][:, :cols]),
                                    kind="stable"))
        b, r = _recall(item, list(range(n))), _recall(item, order)
        base.append(b)
        reranked.append(r)
        by_cat.setdefault(str(item["category"]), []).append((b, r))
    return {"questions": len(items), "recall@5_first_stage": round(statistics.fmean(base), 4),
            "recall@5_reranked": round(statistics.fmean(reranked), 4),
            "by_category": {c: {"n": len(v),
                                "first_stage": round(statistics.fmean(x for x, _ in v), 4),
                                "reranked": round(statistics.fmean(y for _, y in v), 4)}
                            for c, v in sorted(by_cat.items())}}


def cross_encoder_cost(pairs: int = 20, repeats: int = 7) -> dict[str, Any]:
    """ms for the packaged MiniLM to encode ``pairs`` question-memory pairs, one thread."""
    import torch

    from memstrata.memory.embedder import load_embedder

    torch.set_num_threads(1)
    embedder = load_embedder("minilm")
    question = "What did I decide about the flat after the landlord raised the rent?"
    memory = ("ugh the landlord wants another 200 a month from june so we're looking at places "
              "closer to my sister's, maybe something with a yard for the dog")
    times = []
    for r in range(repeats + 1):
        texts = [f"{question} [SEP] {memory} ({r}.{i})" for i in range(pairs)]
        started = time.perf_counter()
        embedder.embed(texts)
        if r:  # the first is a warm-up
            times.append((time.perf_counter() - started) * 1000)
    return {"pairs": pairs, "tokens_a_pair": embedder.count_tokens(texts[0]),
            "p50_ms": round(statistics.median(times), 1), "threads": 1,
            "model": embedder.name}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="rerank_features")
    args = parser.parse_args()
    from sklearn.ensemble import GradientBoostingClassifier

    started = time.perf_counter()
    items: dict[str, list[dict[str, Any]]] = {"train": [], "heldout": []}
    with tempfile.TemporaryDirectory() as tmp:
        for files in ("recall_*_[a-d].jsonl", "recall_*_[e-h].jsonl"):
            for split in ("train", "heldout"):
                path = Path(tmp) / f"recall_own_{split}.jsonl"
                path.write_text("\n".join(_lines(split, files)) + "\n", "utf-8")
                items[split] += _collect(load_dataset(path), CACHE / "recall_own", split)
    items["locomo_dev"] = _collect(load_dataset(LOCOMO), CACHE / "recall", "locomo_dev")
    for part in items.values():
        for item in part:
            item["x"] = features(item["hits"])
    train = [i for i in items["train"] if len(i["hits"])]
    x = np.vstack([i["x"] for i in train])
    y = np.concatenate([_labels(i) for i in train])
    results: dict[str, Any] = {"first_stage": {s: _score(v, None, 0) for s, v in items.items()}}
    cols = 0
    for group in GROUPS:
        cols += COLUMNS[group]
        model = GradientBoostingClassifier(n_estimators=150, max_depth=3, learning_rate=0.1,
                                           subsample=0.8, random_state=0)
        model.fit(x[:, :cols], y)
        results[f"+{group}"] = {s: _score(v, model, cols) for s, v in items.items()}
        print(group, {s: r["recall@5_reranked"] for s, r in results[f"+{group}"].items()},
              flush=True)
    payload = {
        "benchmark": "rerank_features",
        "machine": machine(),
        "depth": DEPTH,
        "trained_on": f"own recall data, users 1-6 of every file: {len(train)} questions, "
                      f"{len(y)} candidates, {int(y.sum())} evidence",
        "groups": list(GROUPS),
        "results": results,
        "cross_encoder_cost": cross_encoder_cost(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_result(args.out, payload)


if __name__ == "__main__":
    main()
