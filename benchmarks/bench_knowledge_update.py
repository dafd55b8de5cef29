"""Knowledge-update probes: does recall put the current value first?

LongMemEval's knowledge-update category is the public model: a value is stated
in one session and changed in a later one, weeks apart, without an "actually"
cue ("I work as a nurse at St. Mary's" ... five weeks later "I started teaching
biology at Lincoln High this month"). The cases are in
``benchmarks/data/knowledge_update.json`` (46, English and Chinese, split by a
hash of the case id: 34 tuning, 12 held-out; plus 20 written after the first
look at the held-out split, ``heldout2``, with no ranking change since). Every
case is one user with filler turns in three sessions; the clock stands 100 days
after the first session.

Three ways in, all through the public API on real SQLite with the packaged MiniLM:

* ``remember`` - every turn is a memory (``remember_many`` with the turn's time
  as ``at``), as the recall lab ingests LoCoMo: free text, no slots, so only
  recall's ranking can put the new value first;
* ``observe`` - every turn goes through ``observe`` (the fast extractor forms
  what it recognises; a slot with a new value supersedes the old one at write
  time when it reads as a change);
* ``observe_nightly`` - the same, with the nightly ``summarize`` (offline, no LLM)
  run before each next session and after the last, as a deployment runs it: the
  user's unread first-person statements become memories of their own then.

Per case: the rank of the new and of the old statement in ``recall(k=5)`` (a
record is the statement when it holds its text or the clause of it that ``observe``
read - "I started at X" from "Started at X, and onboarding is ..."; a session
summary quoting it is not; until 2026-12-01 only the exact text counted, which
missed such clauses in the ``observe`` modes);
*newest first* = the new one is returned and ranked above the old one (or the
old one is not returned). Variants: ``default`` (the library) and ``before``
(the same policy with the issue-11 ranking switched off: no outdating of older
statements about the same thing, no time range, the plain gate).

Guard cases (``data/knowledge_update_guard{1,2,3}.json``, 40 each, written blind; guard1
tuned on, guard2 and guard3 first looks in ``heldout3_first_look.py --guardsN``): the
old value in session 1 and, weeks later, a statement close to it that does not change
it - someone else's change, a plan, the past, a one-off, a question, a related thing
("Bought a sonic toothbrush" for "who's my dentist?"); *old first* = the old value is
returned and ranked above that statement. Without guards a ranking that puts every
newer statement first would score 1.0 on the update cases.

The user's own name (issue 11 item 5) is probed here too: questions asked with
and without the user's name ("which seat should I book for Alice?") must give
the same top-3, and the record "My name is Alice" must never come first.

Run: ``flock /tmp/memstrata-bench.lock python benchmarks/bench_knowledge_update.py
[--heldout]`` -> ``benchmarks/results/knowledge_update.json``; the first run with
``--heldout`` also writes the first looks at ``heldout`` and ``heldout2`` into
``knowledge_update_first_looks.json`` (each once, never overwritten).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import RESULTS, record_first_look, write_result

from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata.consolidation import Consolidator
from memstrata.policies.retrieval import RetrievalPolicy

DATA = Path(__file__).parent / "data" / "knowledge_update.json"
#: the first looks, keyed by split (``heldout``, ``heldout2``, ``heldout3``, ..., ``guard2``,
#: ...); an entry is written once and never overwritten
FIRST_LOOKS = RESULTS / "knowledge_update_first_looks.json"
START = datetime(2026, 1, 5, 19, 0, tzinfo=UTC)
ASK_AT = START + timedelta(days=100)
TARGET = 0.85
#: the ranking of the issue-11 recall side switched off (what recall did before)
BEFORE = replace(RetrievalPolicy(), outdated_weight=1.0, range_boost=1.0,
                 temporal_min_relevance=RetrievalPolicy().min_relevance)
#: the default with the sentences of a record not read by the relevance gate (what
#: recall did before each sentence had its own vector)
NO_SENTENCE_GATE = replace(RetrievalPolicy(), sentence_gate=False)
VARIANTS = {"default": None, "before": BEFORE, "no_sentence_gate": NO_SENTENCE_GATE}
MODES = ("remember", "observe", "observe_nightly")

#: own-name probes: (name, lang, memories, question with the name, the same without)
NAME_CASES: list[tuple[str, list[str], str, str]] = [
    ("Alice", ["I prefer a window seat on flights.", "I'm allergic to peanuts.",
               "I like quiet hotels away from the centre."],
     "Which seat should I book for Alice?", "Which seat should I book?"),
    ("Bob", ["I always want an aisle seat.", "I like Italian food.", "I work as a nurse."],
     "Which seat should I book for Bob?", "Which seat should I book?"),
    ("Carmen", ["My favourite cuisine is Japanese.", "I run every morning.",
                "I'm saving for a new bike."],
     "What cuisine does Carmen like?", "What cuisine do I like?"),
    ("David", ["I'm allergic to shellfish.", "I drive a blue Volvo.",
               "My daughter is seven."],
     "Is David allergic to anything?", "Am I allergic to anything?"),
    ("Emma", ["My gym is open until 10pm.", "I have a meeting every Monday at 9.",
              "I prefer tea to coffee."],
     "What does Emma drink in the morning, tea or coffee?",
     "What do I drink in the morning, tea or coffee?"),
    ("Farid", ["My passport expires in June.", "I usually fly with Lufthansa.",
               "I like hiking in the Alps."],
     "When does Farid's passport expire?", "When does my passport expire?"),
    ("Grace", ["I'm vegetarian.", "My sister lives in Lisbon.", "I play chess online."],
     "Book a dinner table for Grace, any dietary needs?",
     "Book a dinner table, any dietary needs?"),
    ("Hiro", ["My shoe size is 43.", "I like minimalist design.",
              "I'm learning to surf."],
     "What shoe size should I order for Hiro?", "What shoe size should I order?"),
    ("小明", ["我喜欢靠窗的座位。", "我对花生过敏。", "我住在上海。"],
     "给小明订哪个座位？", "订哪个座位？"),
    ("李华", ["我每天早上喝绿茶。", "我在学德语。", "我的生日是五月三日。"],
     "李华早上喝什么？", "我早上喝什么？"),
]


def _day_offset(case_id: str) -> int:
    """Days between the old and the new statement: 21-56, fixed per case."""
    return 21 + int(hashlib.sha256(case_id.encode()).hexdigest(), 16) % 36


def _turns(case: dict[str, Any], filler: list[str]) -> list[tuple[str, datetime, str]]:
    """(session id, time, text) in date order: old in session 1, new in session 3."""
    seed = int(hashlib.sha256(case["id"].encode()).hexdigest(), 16)
    pool = [filler[(seed + i * 7) % len(filler)] for i in range(9)]
    new_day = _day_offset(case["id"])
    sessions = [
        ("s1", START, [pool[0], case["old"], pool[1], pool[2]]),
        ("s2", START + timedelta(days=new_day // 2), [pool[3], pool[4], pool[5]]),
        ("s3", START + timedelta(days=new_day), [pool[6], case["new"], pool[7], pool[8]]),
    ]
    out = []
    for sid, at, texts in sessions:
        for i, text in enumerate(dict.fromkeys(texts)):
            out.append((sid, at + timedelta(minutes=i), text))
    return out


def _same_statement(content: str, text: str) -> bool:
    """The record is the statement: its text, or - formed through ``observe`` - the
    clause of it that was read ("I started at X" from "Started at X, and ..."); a
    session summary quoting it is not."""
    a, b = " ".join(content.casefold().split()), " ".join(text.casefold().split())
    return a == b or (len(a) >= 12 and a.rstrip(".。!！") in b) \
        or (a.startswith("i ") and a[2:].rstrip(".。!！") in b)


def _rank_of(hits: list[Any], text: str) -> int | None:
    for i, hit in enumerate(hits):
        if hit.record.type.value != "summary" and _same_statement(hit.record.content, text):
            return i
    return None


#: the status of a statement held by several records (the clause read through ``observe``
#: and the turn kept offline): the one least far along, whatever order the store lists
#: them in ("superseded" only when every record of it is)
_STATUS_ORDER = ("active", "pending_confirmation", "demoted", "superseded")


def _status_of(records: list[Any], text: str) -> str | None:
    found = {r.status.value for r in records
             if r.type.value != "summary" and _same_statement(r.content, text)}
    return min(found, key=_STATUS_ORDER.index) if found else None


def _score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    if not n:
        return {"n": 0}
    newest_first = sum(r["newest_first"] for r in rows)
    return {
        "n": n,
        "newest_first": round(newest_first / n, 4),
        "current_at_1": round(sum(r["new_rank"] == 0 for r in rows) / n, 4),
        "new_returned": round(sum(r["new_rank"] is not None for r in rows) / n, 4),
        "old_returned": round(sum(r["old_rank"] is not None for r in rows) / n, 4),
        "old_superseded": round(sum(r["old_status"] == "superseded" for r in rows) / n, 4),
    }


def _run_cases(mm: MemoryManager, clock: ManualClock, cases: list[dict[str, Any]],
               filler: dict[str, list[str]], mode: str) -> dict[str, list[dict[str, Any]]]:
    for case in cases:
        user = f"{mode}-{case['id']}"
        turns = _turns(case, filler[case["lang"]])
        if mode == "remember":
            mm.remember_many(user, [MemoryInput(content=t, at=at, session_id=sid)
                                    for sid, at, t in turns])
        else:
            nightly = Consolidator(mm) if mode == "observe_nightly" else None
            last: str | None = None
            for sid, at, text in turns:
                if nightly is not None and last not in (None, sid):
                    clock.set(at)  # the night before the next session: fold the last one
                    nightly.run("summarize", user_id=user)
                clock.set(at)
                mm.observe(user, sid, "user", text, at=at)
                last = sid
            if nightly is not None:
                clock.set(turns[-1][1] + timedelta(hours=2))
                nightly.run("summarize", user_id=user)
    clock.set(ASK_AT)
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    for case in cases:
        user = f"{mode}-{case['id']}"
        records = mm.memories(
            user, statuses=["active", "pending_confirmation", "superseded", "demoted"],
            limit=100)
        statuses = {text: _status_of(records, text) for text in (case["old"], case["new"])}
        for name, policy in VARIANTS.items():
            hits = mm.recall(user, case["question"], record_use=False, policy=policy)
            new_rank, old_rank = _rank_of(hits, case["new"]), _rank_of(hits, case["old"])
            out[name].append({
                "id": case["id"], "lang": case["lang"], "split": case["split"],
                "new_rank": new_rank, "old_rank": old_rank,
                "newest_first": new_rank is not None
                and (old_rank is None or new_rank < old_rank),
                "old_status": statuses.get(case["old"]), "new_status": statuses.get(case["new"]),
            })
    return out


def chinese_with_e5(tmp: str, clock: ManualClock, cases: list[dict[str, Any]],
                    filler: dict[str, list[str]], splits: list[str]) -> dict[str, Any]:
    """The Chinese cases with the embedder the README tells Chinese users to choose
    (multilingual-e5-small, ``memstrata[multilingual]``): MiniLM does not read Chinese,
    so recall falls back to word overlap there (``remember`` and ``observe_nightly``)."""
    zh = [c for c in cases if c["lang"] == "zh"]
    out: dict[str, Any] = {"embedder": "e5-small"}
    with MemoryManager.open(f"sqlite:///{tmp}/ku-e5.db", clock=clock, home=tmp,
                            embedder_name="e5-small") as mm:
        for mode in ("remember", "observe_nightly"):
            clock.set(START)
            rows = _run_cases(mm, clock, zh, filler, mode)["default"]
            out[mode] = {split: _score([r for r in rows if r["split"] == split])
                         for split in splits}
            out[mode]["misses"] = [r["id"] for r in rows if not r["newest_first"]]
    return out


#: the splits written blind (each first look is its own file, written once)
BLIND = [Path(__file__).parent / "data" / f"knowledge_update_heldout{n}.json"
         for n in range(3, 40)]
#: the guard splits, written blind: a later statement close to the asked thing that
#: does not change it (someone else's change, a plan, a related thing, a one-off, the
#: past, a question); ``guard1`` is tuned on, the others are first looks
GUARDS = [Path(__file__).parent / "data" / f"knowledge_update_guard{n}.json"
          for n in range(1, 20)]


def run_guards(mm: MemoryManager, clock: ManualClock, cases: list[dict[str, Any]],
               filler: dict[str, list[str]], mode: str) -> list[dict[str, Any]]:
    """The guard cases, laid out as the update cases (the distractor where the new
    value would be): the old value must stay first - returned, and above the
    distractor when that is returned too."""
    return run_guard_variants(mm, clock, cases, filler, mode)["default"]


def run_guard_variants(mm: MemoryManager, clock: ManualClock, cases: list[dict[str, Any]],
                       filler: dict[str, list[str]], mode: str
                       ) -> dict[str, list[dict[str, Any]]]:
    """:func:`run_guards` for every policy of :data:`VARIANTS` (written once)."""
    as_updates = [{**c, "new": c["distractor"]} for c in cases]
    runs = _run_cases(mm, clock, as_updates, filler, mode)
    kinds = {c["id"]: c["kind"] for c in cases}
    return {variant: [{"id": r["id"], "lang": r["lang"], "kind": kinds[r["id"]],
                       "old_rank": r["old_rank"], "distractor_rank": r["new_rank"],
                       "old_first": r["old_rank"] is not None
                       and (r["new_rank"] is None or r["old_rank"] < r["new_rank"])}
                      for r in rows]
            for variant, rows in runs.items()}


def guard_score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Share of guard cases whose old value stays first, and how the others fail."""
    n = len(rows)
    if not n:
        return {"n": 0}
    return {
        "n": n,
        "old_first": round(sum(r["old_first"] for r in rows) / n, 4),
        "distractor_above_old": round(sum(
            r["distractor_rank"] is not None
            and (r["old_rank"] is None or r["distractor_rank"] < r["old_rank"])
            for r in rows) / n, 4),
        "old_not_returned": round(sum(r["old_rank"] is None for r in rows) / n, 4),
    }


def guard_report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`guard_score` overall, per language and per kind, and the misses."""
    return {"all": guard_score(rows),
            **{lang: guard_score([r for r in rows if r["lang"] == lang])
               for lang in ("en", "zh")},
            "by_kind": {kind: guard_score([r for r in rows if r["kind"] == kind])["old_first"]
                        for kind in sorted({r["kind"] for r in rows})},
            "misses": [r["id"] for r in rows if not r["old_first"]]}


def blind_splits_now(tmp: str, clock: ManualClock) -> dict[str, Any]:
    """The blind splits as the code stands now (``remember``, and ``observe`` with the
    nightly offline ``summarize``), with MiniLM and with
    multilingual-e5-small for every language: not first looks (those are kept in
    ``knowledge_update_first_looks.json``, keyed by split); the later splits' fixes and the
    choice of embedder may have been made after the earlier splits were seen."""
    out: dict[str, Any] = {"note": " ".join((blind_splits_now.__doc__ or "").split())}
    for embedder in ("minilm", "e5-small"):
        options: dict[str, Any] = {} if embedder == "minilm" else {"embedder_name": embedder}
        with MemoryManager.open(f"sqlite:///{tmp}/ku-blind-{embedder}.db", clock=clock,
                                home=tmp, **options) as mm:
            for path in BLIND:
                data = json.loads(path.read_text())
                split = out.setdefault(path.stem.removeprefix("knowledge_update_"), {})
                for mode in ("remember", "observe_nightly"):
                    clock.set(START)
                    runs = _run_cases(mm, clock, data["cases"], data["filler"], mode)
                    for variant, key in (("default", mode),
                                         ("no_sentence_gate", f"{mode}_no_sentence_gate")):
                        rows = runs[variant]
                        split.setdefault(embedder, {})[key] = {
                            "all": _score(rows),
                            **{lang: _score([r for r in rows if r["lang"] == lang])
                               for lang in ("en", "zh")}}
            for path in GUARDS:
                data = json.loads(path.read_text())
                split = out.setdefault(path.stem.removeprefix("knowledge_update_"), {})
                for mode in ("remember", "observe_nightly"):
                    clock.set(START)
                    guards = run_guard_variants(mm, clock, data["cases"], data["filler"], mode)
                    for variant, key in (("default", mode),
                                         ("no_sentence_gate", f"{mode}_no_sentence_gate")):
                        split.setdefault(embedder, {})[key] = guard_report(guards[variant])
    return out


def _names(mm: MemoryManager) -> dict[str, Any]:
    """Same questions with and without the user's name: same top-3?"""
    rows: dict[str, list[dict[str, Any]]] = {"profile_slot": [], "display_name": [],
                                              "name_unknown": []}
    for name, memories, with_name, without in NAME_CASES:
        for how in rows:
            user = f"name-{how}-{name}"
            if how == "profile_slot":
                mm.observe(user, "s1", "user", f"My name is {name}." if name.isascii()
                           else f"我叫{name}。")
            else:
                mm.remember(user, f"My name is {name}." if name.isascii() else f"我叫{name}。")
            mm.remember_many(user, memories)
            display = name if how == "display_name" else None
            a = [h.record.content for h in mm.recall(user, with_name, k=3, record_use=False,
                                                      display_name=display)]
            b = [h.record.content for h in mm.recall(user, without, k=3, record_use=False,
                                                      display_name=display)]
            rows[how].append({
                "name": name, "with_name": a, "without_name": b, "same_top3": a == b,
                "name_record_first": bool(a) and (a[0].startswith("我叫")
                                                  or "my name" in a[0].casefold()),
            })
    summary = {
        how: {"n": len(r), "same_top3": round(sum(x["same_top3"] for x in r) / len(r), 4),
              "name_record_first": sum(x["name_record_first"] for x in r)}
        for how, r in rows.items()
    }
    return {"summary": summary, "cases": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--heldout", action="store_true",
                        help="also evaluate the held-out splits (writes each first look once)")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    splits = ["tuning", "heldout", "heldout2"] if args.heldout else ["tuning"]
    cases = [c for c in data["cases"] if c["split"] in splits]
    started = time.perf_counter()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(START)
        with MemoryManager.open(f"sqlite:///{tmp}/ku.db", clock=clock, home=tmp) as mm:
            for mode in MODES:
                clock.set(START)
                per_variant = _run_cases(mm, clock, cases, data["filler"], mode)
                results[mode] = {
                    name: {
                        split: {
                            "all": _score([r for r in rows if r["split"] == split]),
                            **{lang: _score([r for r in rows if r["split"] == split
                                             and r["lang"] == lang]) for lang in ("en", "zh")},
                        }
                        for split in splits
                    }
                    for name, rows in per_variant.items()
                }
                results[mode]["cases"] = per_variant["default"]
            names = _names(mm)
        results["chinese_with_e5"] = chinese_with_e5(tmp, clock, cases, data["filler"], splits)
        results["blind_splits_now"] = blind_splits_now(tmp, clock)
    payload = {
        "description": __doc__.split("\n\n")[0],
        "data": str(DATA.relative_to(Path(__file__).parent)),
        "cases": {s: sum(c["split"] == s for c in cases) for s in splits},
        "target": {"newest_first": TARGET},
        "k": RetrievalPolicy().top_k,
        "results": results,
        "own_name": names,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.heldout:
        for split in ("heldout", "heldout2"):
            record_first_look(FIRST_LOOKS, split,
                              {mode: {name: results[mode][name][split] for name in VARIANTS}
                               for mode in ("remember", "observe")})
    write_result("knowledge_update", payload)
    for mode in MODES:
        for name in VARIANTS:
            for split in splits:
                print(mode, name, split, results[mode][name][split]["all"])
    print("chinese with e5", {m: results["chinese_with_e5"][m] for m in
                              ("remember", "observe_nightly")})
    print("own name", names["summary"])
    print("blind splits now", {k: {e: {m: v[e][m]["all"].get("newest_first",
                                                              v[e][m]["all"].get("old_first"))
                                       for m in v[e]}
                                   for e in v}
                               for k, v in results["blind_splits_now"].items() if k != "note"})


if __name__ == "__main__":
    main()
