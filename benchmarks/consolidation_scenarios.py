"""Benchmark: how well the *offline* conflicts/dedupe method handles preference updates.

Scenario sets (``benchmarks/data/``): ``preference_updates.json`` (65 cases,
English and Chinese; the rules were tuned on it) and
``preference_updates_holdout.json`` (28 cases written afterwards, never tuned
on). Each case is an older and a newer statement of one user and scope,
labelled ``conflict`` (flag both for confirmation), ``update`` (the newer
explicitly replaces the older: supersede), ``duplicate`` (merge) or
``compatible`` (leave alone).

Two pipelines, each case as its own user on a fresh SQLite database:

* ``job_only`` - both statements are inserted as records the write path never
  judged (another process, an import), with real MiniLM vectors; then the
  ``conflicts`` job runs offline. This isolates the offline method.
* ``observe_pipeline`` - both statements arrive as user turns through
  ``MemoryManager.observe`` (fast extractor + write policy), a day apart, then
  the ``conflicts`` job runs. This is the product path; a statement the fast
  extractor does not read is not written at all (the LLM summarize job would).

Precision/recall: *conflicts flagged* (prediction "flag" vs label conflict),
*contradictions caught* (flag or supersede vs conflict or update), *corrections
superseded* (supersede vs update), *duplicates merged* (merge vs duplicate).
``job_only`` is also swept over ``duplicate_similarity``.

    flock /tmp/memstrata-bench.lock python benchmarks/consolidation_scenarios.py

Writes ``benchmarks/results/consolidation_scenarios.json``.

**Formation of changes** (issue 11 item 1, issue 12 item 5):
``formation_changes.json`` (182 cases, English and Chinese, 98 changes and 84 guards:
moves, job and career changes, diet changes, preferred names, birthdays, "from now
on" instructions; guards such as a sibling's move, "I might move next year", a
business trip). Each case is its own user: the older fact, then ten days later the
statement, both through ``observe``. A change is read when the new value is the
only active value of the slot (instructions: a correction record is formed) and the
briefing no longer quotes the older fact; a guard holds when the old value is still
the only active one (instructions: nothing is formed). Precision and recall per
language, per split; the held-out split (40%) was never tuned on and its first look
is ``heldout`` in ``results/formation_changes_first_looks.json``. A second held-out split
(``heldout2``, 64 cases) was written after the rules with deliberately different
phrasings; its first look is ``heldout2`` in the same file.
Since that first look heldout2 is a *development* split: its misses were studied and
their general causes fixed (typographic apostrophes, quoted speech, conditions, verb
families, work context, Chinese word order), so its figures are no longer blind. A
further held-out file, written without sight of the rules, gets its own first look.

    python benchmarks/consolidation_scenarios.py --formation-only [--split tuning]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from _common import record_first_look
from sqlalchemy import select

from memstrata import ManualClock, MemoryManager
from memstrata._text import content_hash
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.consolidation._tables import actions
from memstrata.memory import _store, default_embedder
from memstrata.memory._schema import memories
from memstrata.memory.embedder import Embedder

DATA = Path(__file__).parent / "data"
RESULTS = Path(__file__).parent / "results" / "consolidation_scenarios.json"
GOLD = {"conflict": "flag", "update": "supersede", "duplicate": "merge", "compatible": "none"}
START = datetime(2026, 3, 1, 9, tzinfo=UTC)


def _insert(mm: MemoryManager, user: str, text: str, kind: str, at: datetime,
            embedder: Embedder) -> str:
    """A record written without the write policy (as another process or an import would)."""
    vector = embedder.embed([text])[0]
    now = at.timestamp()
    with mm.db.write() as conn:
        state = _store.lock_user(conn, user, now)
        counter = _store.SeqCounter(state)
        memory_id = _store.new_id()
        expires = mm.settings.retention.expires_at(_type(kind), at)
        _store.insert_records(conn, [{
            "id": memory_id, "user_id": user, "scope": "default", "type": kind,
            "content": text, "context": None, "content_hash": content_hash(text),
            "subject": None, "attribute": None, "value": None, "slot_key": None,
            "confidence": 0.9, "importance": 0.5, "source": "import", "session_id": None,
            "task_id": None, "step_id": None, "created_at": now, "updated_at": now,
            "valid_from": now, "valid_to": None, "last_accessed_at": None, "access_count": 0,
            "expires_at": None if expires is None else expires.timestamp(),
            "status": "active", "pinned": False, "supersedes": None, "superseded_by": None,
            "conflict_group": None, "metadata": {}, "seq": counter.next(),
        }], [{"memory_id": memory_id, "user_id": user, "model": embedder.name,
              "dim": embedder.dim, "vector": _store.encode_vector(vector)}])
        if state.embed_model is None:
            _store.set_user_model(conn, user, embedder.name)
        counter.commit(conn)
    return memory_id


def _type(kind: str) -> Any:
    from memstrata.types import MemoryType

    return MemoryType(kind)


def _outcome(mm: MemoryManager, user: str, run_id: str | None,
             decisions: list[str]) -> str:
    """flag / supersede / merge / none for one case's user."""
    with mm.db.read() as conn:
        statuses = [r.status for r in conn.execute(
            select(memories.c.status).where(memories.c.user_id == user))]
        acted = Counter(conn.execute(select(actions.c.action).where(
            actions.c.user_id == user, actions.c.run_id == run_id)).scalars()) \
            if run_id else Counter()
    if "pending_confirmation" in statuses or "conflict" in decisions:
        return "flag"
    if acted.get("supersede") or "corrected" in decisions:
        return "supersede"
    if acted.get("merge") or "reinforced" in decisions:
        return "merge"
    return "none"


def _pr(pred: list[str], gold: list[str], predicted: set[str], relevant: set[str]
        ) -> dict[str, Any]:
    tp = sum(1 for p, g in zip(pred, gold, strict=True) if p in predicted and g in relevant)
    n_pred = sum(1 for p in pred if p in predicted)
    n_gold = sum(1 for g in gold if g in relevant)
    precision = tp / n_pred if n_pred else 1.0
    recall = tp / n_gold if n_gold else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
            "tp": tp, "predicted": n_pred, "relevant": n_gold}


def _metrics(cases: list[dict[str, Any]], predictions: list[str]) -> dict[str, Any]:
    gold = [c["label"] for c in cases]
    out: dict[str, Any] = {
        "cases": len(cases),
        "accuracy": round(sum(GOLD[g] == p for g, p in zip(gold, predictions, strict=True))
                          / len(cases), 3),
        "conflicts_flagged": _pr(predictions, gold, {"flag"}, {"conflict"}),
        "contradictions_caught": _pr(predictions, gold, {"flag", "supersede"},
                                     {"conflict", "update"}),
        "corrections_superseded": _pr(predictions, gold, {"supersede"}, {"update"}),
        "duplicates_merged": _pr(predictions, gold, {"merge"}, {"duplicate"}),
        "confusion": {g: dict(Counter(p for p, gg in zip(predictions, gold, strict=True)
                                      if gg == g)) for g in GOLD},
    }
    for lang in ("en", "zh"):
        idx = [i for i, c in enumerate(cases) if c["lang"] == lang]
        out[f"accuracy_{lang}"] = round(
            sum(GOLD[gold[i]] == predictions[i] for i in idx) / len(idx), 3) if idx else None
        lp, lg = [predictions[i] for i in idx], [gold[i] for i in idx]
        out.setdefault("by_language", {})[lang] = {
            "contradictions_caught": _pr(lp, lg, {"flag", "supersede"}, {"conflict", "update"}),
            "corrections_superseded": _pr(lp, lg, {"supersede"}, {"update"}),
            "duplicates_merged": _pr(lp, lg, {"merge"}, {"duplicate"}),
        }
    out["misses"] = [
        {"id": c["id"], "label": c["label"], "predicted": p}
        for c, p in zip(cases, predictions, strict=True) if GOLD[c["label"]] != p
    ]
    return out


def job_only(cases: list[dict[str, Any]], embedder: Embedder, duplicate_similarity: float
             ) -> tuple[list[str], float]:
    tmp = tempfile.mkdtemp(prefix="memstrata-scenarios-")
    clock = ManualClock(START)
    with MemoryManager.open(f"sqlite:///{tmp}/s.db", embedder=embedder, clock=clock,
                            index_dir=Path(tmp) / "index") as mm:
        for c in cases:
            _insert(mm, c["id"], c["older"], c["type"], START, embedder)
            _insert(mm, c["id"], c["newer"], c["type"], START + timedelta(days=1), embedder)
        clock.set(START + timedelta(days=2))
        settings = ConsolidationSettings.build(duplicate_similarity=duplicate_similarity)
        started = time.perf_counter()
        report = Consolidator(mm, settings=settings).run("conflicts")
        seconds = time.perf_counter() - started
        assert report.method in ("offline", "none"), report.method
        return [_outcome(mm, c["id"], report.run_id, []) for c in cases], seconds


def observe_pipeline(cases: list[dict[str, Any]], embedder: Embedder
                     ) -> tuple[list[str], dict[str, Any]]:
    tmp = tempfile.mkdtemp(prefix="memstrata-scenarios-")
    clock = ManualClock(START)
    decisions: dict[str, list[str]] = {}
    unread = []
    with MemoryManager.open(f"sqlite:///{tmp}/o.db", embedder=embedder, clock=clock,
                            index_dir=Path(tmp) / "index") as mm:
        for c in cases:
            first = mm.observe(c["id"], "s1", "user", c["older"])
            if not first.candidates:
                unread.append(c["id"] + ":older")
        clock.advance(days=1)
        for c in cases:
            second = mm.observe(c["id"], "s2", "user", c["newer"])
            if not second.candidates:
                unread.append(c["id"] + ":newer")
            decisions[c["id"]] = [d.outcome for d in second.decisions] + (
                ["corrected"] if second.superseded else [])
        clock.advance(days=1)
        report = Consolidator(mm).run("conflicts")
        predictions = [_outcome(mm, c["id"], report.run_id, decisions[c["id"]]) for c in cases]
    read = {lang: round(1 - sum(u.split(":")[0] in ids for u in unread) / (2 * len(ids)), 3)
            for lang in ("en", "zh")
            if (ids := {c["id"] for c in cases if c["lang"] == lang})}
    return predictions, {"statements_not_read_by_the_fast_extractor": unread,
                         "share_of_statements_read_by_language": read}


#: the first looks at the formation splits, keyed by split (``heldout``, ``heldout2``, the
#: own held-out splits; ``heldout3``, ... written blind); an entry is never overwritten
FORMATION_LOOKS = Path(__file__).parent / "results" / "formation_changes_first_looks.json"


def _norm(value: str | None) -> str:
    from memstrata.types import normalize_slot_part

    return normalize_slot_part(value or "")


def formation_case(mm: MemoryManager, clock: ManualClock, case: dict[str, Any]) -> dict[str, Any]:
    """Observe the older fact, then the statement; what is active afterwards."""
    user = case["id"]
    mm.observe(user, "s1", "user", case["prior"])
    clock.advance(days=10)
    obs = mm.observe(user, "s2", "user", case["statement"])
    clock.advance(hours=1)
    attribute = case["attribute"]
    if attribute is None:  # a standing instruction: is a correction record formed?
        formed = [d for c, d in zip(obs.candidates, obs.decisions, strict=True)
                  if d.stored and c.correction]
        changed = bool(formed)
        correct = changed if case["kind"] == "change" else not changed
        return {"id": user, "kind": case["kind"], "changed": changed, "correct": correct,
                "read_by": [c.rule for c in obs.candidates]}
    values = sorted(r.slot.value for r in mm.memories(user, statuses="active")
                    if r.slot is not None and r.slot.attribute == attribute)
    brief = "\n".join(mm.briefing(user, record_use=False).lines())
    changed = [_norm(v) for v in values] != [_norm(case["prior_value"])]
    if case["kind"] == "change":
        correct = [_norm(v) for v in values] == [_norm(case["expect"])] and \
            case["prior"] not in brief
    else:
        correct = not changed
    return {"id": user, "kind": case["kind"], "changed": changed, "correct": correct,
            "active": values, "read_by": [c.rule for c in obs.candidates]}


def _formation_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    changes = [r for r in rows if r["kind"] == "change"]
    guards = [r for r in rows if r["kind"] == "guard"]
    tp = sum(r["correct"] for r in changes)
    predicted = sum(r["changed"] for r in rows)
    return {
        "cases": len(rows), "changes": len(changes), "guards": len(guards),
        "changes_read_correctly": round(tp / len(changes), 3) if changes else None,
        "guards_held": round(sum(r["correct"] for r in guards) / len(guards), 3)
        if guards else None,
        "precision": round(tp / predicted, 3) if predicted else 1.0,
        "recall": round(tp / len(changes), 3) if changes else None,
        "misses": [{k: r[k] for k in ("id", "active", "read_by") if k in r}
                   for r in rows if not r["correct"]],
    }


def formation(embedder: Embedder, split: str | None = None) -> dict[str, Any]:
    doc = json.loads((DATA / "formation_changes.json").read_text())
    prior_values = {
        ("en", "city"): "Berlin", ("zh", "city"): "北京", ("en", "employer"): "Siemens",
        ("zh", "employer"): "腾讯", ("en", "occupation"): "teacher",
        ("zh", "occupation"): "老师", ("en", "diet"): "vegetarian", ("zh", "diet"): "vegetarian",
        ("en", "name"): "Katherine", ("zh", "name"): "王小明", ("en", "age"): "29",
        ("zh", "age"): "29"}
    out: dict[str, Any] = {}
    for name in ("tuning", "heldout", "heldout2"):
        if split is not None and name != split:
            continue
        cases = [c for c in doc["cases"] if c["split"] == name]
        tmp = tempfile.mkdtemp(prefix="memstrata-formation-")
        clock = ManualClock(START)
        with MemoryManager.open(f"sqlite:///{tmp}/f.db", embedder=embedder, clock=clock,
                                index_dir=Path(tmp) / "index") as mm:
            rows = []
            for c in cases:
                c = {**c, "prior_value": prior_values.get((c["lang"], c["attribute"]))}
                rows.append({**formation_case(mm, clock, c), "lang": c["lang"],
                             "category": c["category"]})
        entry: dict[str, Any] = {"all": _formation_metrics(rows)}
        for lang in ("en", "zh"):
            entry[lang] = _formation_metrics([r for r in rows if r["lang"] == lang])
        entry["by_category"] = {
            cat: {k: v for k, v in _formation_metrics(
                [r for r in rows if r["category"] == cat]).items() if k != "misses"}
            for cat in sorted({r["category"] for r in rows})}
        out[name] = entry
    for name in ("heldout", "heldout2"):
        if name in out:
            record_first_look(FORMATION_LOOKS, name, out[name])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--formation-only", action="store_true",
                        help="only the formation-of-changes set (printed, results not written)")
    parser.add_argument("--split", choices=("tuning", "heldout", "heldout2"), default=None)
    args = parser.parse_args()
    embedder = default_embedder()
    embedder.embed(["warm up"])
    if args.formation_only:
        found = formation(embedder, args.split)
        print(json.dumps(found, indent=1, ensure_ascii=False))
        return
    default_threshold = ConsolidationSettings().duplicate_similarity
    result: dict[str, Any] = {
        "benchmark": "preference-update scenarios, offline conflicts/dedupe method",
        "embedder": embedder.name,
        "default_duplicate_similarity": default_threshold,
        "sets": {},
    }
    for name in ("preference_updates", "preference_updates_holdout", "preference_updates_holdout2",
                 "preference_updates_near_misses"):
        doc = json.loads((DATA / f"{name}.json").read_text())
        cases = doc["cases"]
        labels = Counter((c["label"], c["lang"]) for c in cases)
        entry: dict[str, Any] = {
            "cases": len(cases),
            "by_label_and_language": {f"{k[0]}/{k[1]}": v for k, v in sorted(labels.items())},
            "tuned_on": name == "preference_updates",
        }
        predictions, seconds = job_only(cases, embedder, default_threshold)
        entry["job_only"] = _metrics(cases, predictions)
        entry["job_only"]["job_seconds"] = round(seconds, 3)
        entry["job_only_threshold_sweep"] = {}
        for threshold in (0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92):
            swept, _ = job_only(cases, embedder, threshold)
            m = _metrics(cases, swept)
            entry["job_only_threshold_sweep"][f"{threshold:.2f}"] = {
                "accuracy": m["accuracy"], "duplicates_merged": m["duplicates_merged"],
                "conflicts_flagged": m["conflicts_flagged"]}
        pipeline, notes = observe_pipeline(cases, embedder)
        entry["observe_pipeline"] = _metrics(cases, pipeline)
        entry["observe_pipeline"].update(notes)
        result["sets"][name] = entry
    result["formation_changes"] = formation(embedder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    for name, entry in result["sets"].items():
        for mode in ("job_only", "observe_pipeline"):
            m = entry[mode]
            print(f"{name:<28} {mode:<17} acc={m['accuracy']:.3f} "
                  f"flag P/R={m['conflicts_flagged']['precision']:.2f}/"
                  f"{m['conflicts_flagged']['recall']:.2f} "
                  f"caught P/R={m['contradictions_caught']['precision']:.2f}/"
                  f"{m['contradictions_caught']['recall']:.2f} "
                  f"supersede P/R={m['corrections_superseded']['precision']:.2f}/"
                  f"{m['corrections_superseded']['recall']:.2f} "
                  f"merge P/R={m['duplicates_merged']['precision']:.2f}/"
                  f"{m['duplicates_merged']['recall']:.2f}")
            print("   misses:", [(x["id"], x["predicted"]) for x in m["misses"]])


if __name__ == "__main__":
    main()
