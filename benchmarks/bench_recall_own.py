"""Recall on the project's own multi-session conversations (``data/recall/``).

The data of the reranker issue: assistant conversations in English and Chinese, written
blind by helpers who read no code or results, each with about 35 questions and the turns
that answer them - single-hop (worded otherwise than the turn), multi-hop (two or three
turns of different sessions, the second sharing no words with the question), temporal,
an update (the current value and the old one) and absent (no turn answers it; counted,
not scored: recall is undefined without evidence). Users 1-6 of each file are the split a
reranker may train and be tuned on, users 7-8 the held-out split, never trained or tuned
on (``split_of``).

Turn-level evidence recall@1/5/10, nDCG@10 and MRR (95 % bootstrap intervals over
questions) of the default hybrid (``MemoryManager.recall``), the dense and the keyword
retrievers, on the evaluation's default ingest (one memory per turn with speaker, session
date and a quote of the previous turn as context), per split, category and language.

Run: ``python benchmarks/bench_recall_own.py`` -> ``benchmarks/results/recall_own.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import CACHE, ROOT, machine, write_result

from memstrata._text import tokenize
from memstrata.eval import (
    Dataset,
    DenseRetriever,
    EvalConfig,
    EvalResult,
    Evaluation,
    HybridRetriever,
    KeywordRetriever,
    load_dataset,
)

DATA = ROOT / "data" / "recall"
METRICS = ("recall@1", "recall@5", "recall@10", "ndcg@10", "mrr")
#: the users of each file a reranker may not train or be tuned on
HELDOUT_USERS = (7, 8)


def split_of(user: str) -> str:
    """``"heldout"`` for users 7 and 8 of each file (``en_a_7``), else ``"train"``."""
    number = re.search(r"_(\d+)$", user)
    return "heldout" if number and int(number.group(1)) in HELDOUT_USERS else "train"


def _lines(split: str, files: str) -> list[str]:
    out = []
    for path in sorted(DATA.glob(files)):
        for line in path.read_text("utf-8").split("\n"):
            if line.strip() and split_of(json.loads(line)["user"]) == split:
                out.append(line)
    return out


def _rows(result: EvalResult, name: str) -> dict[str, Any]:
    s = result.summary(name)
    return {
        **{m: s.overall[m].to_dict() for m in METRICS},
        "by_category": {result.category_label(c): {m: round(v[m].mean, 4) for m in METRICS}
                        | {"n": len([q for q in result.run(name).questions
                                     if q.category == c])}
                        for c, v in s.by_category.items()},
        "by_language": {lang: {m: round(v[m].mean, 4) for m in METRICS}
                        for lang, v in s.by_language.items()},
        "ranking_latency_ms": {k: round(v, 3) for k, v in s.latency.items()},
    }


def multi_hop_evidence(result: EvalResult, dataset: Dataset, k: int = 5) -> dict[str, Any]:
    """Where the default run loses multi-hop evidence: each evidence turn found in the top
    ``k`` or not, by whether it shares a BM25 term with the question (the issue's "the
    second memory shares no words with the question"), and how many questions have all,
    some or none of their evidence in the top ``k``."""
    texts = {(c.user, t.id): t.text for c in dataset.conversations for t in c.turns}
    turns = {"shares a term": [0, 0], "shares none": [0, 0]}
    questions = {"all": 0, "some": 0, "none": 0}
    for q in result.run("default").questions:
        if q.category != "multi-hop":
            continue
        asked = set(tokenize(q.question))
        found = [r is not None and r <= k for r in q.evidence_ranks]
        for turn_id, hit in zip(q.evidence_ids, found, strict=True):
            kind = "shares a term" if asked & set(tokenize(texts[(q.user, turn_id)])) \
                else "shares none"
            turns[kind][0 if hit else 1] += 1
        questions["all" if all(found) else "some" if any(found) else "none"] += 1
    return {"k": k,
            "evidence_turns": {kind: {"found": f, "missed": m,
                                      "found_share": round(f / max(1, f + m), 4)}
                               for kind, (f, m) in turns.items()},
            "questions": questions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=str(CACHE / "recall_own"))
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--out", default="recall_own")
    parser.add_argument("--files", default="recall_*.jsonl",
                        help="which files of data/recall (a glob; default: all)")
    args = parser.parse_args()

    started = time.perf_counter()
    config = EvalConfig.build(bootstrap=args.bootstrap, depth=50)
    splits: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for split in ("train", "heldout"):
            path = Path(tmp) / f"recall_own_{split}.jsonl"
            path.write_text("\n".join(_lines(split, args.files)) + "\n", "utf-8")
            dataset = load_dataset(path)
            with Evaluation.open(dataset, config, cache_dir=args.cache) as ev:
                result = ev.evaluate([HybridRetriever(), DenseRetriever(), KeywordRetriever()])
            report = result.dataset["load_report"]
            splits[split] = {
                "conversations": result.dataset["conversations"],
                "turns": result.dataset["turns"],
                "questions_scored": result.dataset["probes"],
                "questions_absent": report["excluded_without_evidence"],
                "retrievers": {r.name: _rows(result, r.name) for r in result.runs},
                "multi_hop_evidence": multi_hop_evidence(result, dataset),
            }
    payload = {
        "benchmark": "recall_own",
        "machine": machine(),
        "data": sorted(p.name for p in DATA.glob(args.files)),
        "heldout_users": list(HELDOUT_USERS),
        "splits": splits,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_result(args.out, payload)


if __name__ == "__main__":
    main()
