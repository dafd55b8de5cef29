"""Benchmark: the reader's blind sets through ``observe`` and the nightly jobs.

``bench_readers.py`` asks a reader alone; this asks the whole write path what a user
gets. Per case of a reader set (``data/reading/blind/read_*.jsonl``: an older statement
of a value, then a change or a guard written as messy chat): a user of its own says the
prior in one session, three days later says the statement inside a session of small
talk, and then

* **right after observe** and again **after the nightly jobs** (``summarize``,
  ``conflicts``, ``expire``, run the night after):
  - a change is right when the new value is among the user's active values of the
    attribute, the old one is not (a single-valued attribute), and the top ``recall`` hit
    for the attribute's question carries the new value (current value first);
  - a guard holds when the user's active values of the attribute are what they were
    after the prior (compared value by value as below: "netflix" said again beside the
    "Netflix" held is no change; until the fifth blind round the lists had to be equal);
* standing instructions (``instruction``) have no single value to ask for: a change is
  right when a record read as an instruction was formed from the statement, a guard
  when none was.

Each miss is also read by the reader alone (as ``bench_readers`` scores it); the figures
``<when>/<kind>_lost_after_reading_n`` count the misses it reads right, lost on the write
path and not by the reading.

The values are compared as the reader scoreboard compares them
(:func:`memstrata.reading.score.value_matches`). Each set's first run on a model version
is recorded once in ``results/observe_reading_first_look.json``.

    python benchmarks/bench_observe_reading.py [--reader auto] [--sets read_blind5,...]

``--dev`` runs the dev split (one case in ten by a hash of its id, never trained on) of the
blind rounds that are training data now (``data/reading/changes/read_blind*.jsonl``) as one
set, and writes ``results/observe_reading_dev_<reader>.json``: the data on which to choose
what ``observe`` reads with (a reader, a threshold) before a blind round judges it. No first
look is recorded for it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, add_first_looks, write_result
from tqdm import tqdm

from memstrata.reading.score import change_case_attribute, value_matches

BLIND = Path(__file__).resolve().parent / "data" / "reading" / "blind"
CHANGES = BLIND.parent / "changes"


def dev_cases() -> list[dict[str, Any]]:
    """The dev split of the blind rounds' change cases that are training data now."""
    from memstrata.reading.train import is_dev

    return [case for path in sorted(CHANGES.glob("read_blind*.jsonl"))
            for case in (json.loads(x) for x in path.read_text("utf-8").splitlines()
                         if x.strip())
            if is_dev(case["id"])]
START = datetime(2026, 3, 2, 18, tzinfo=UTC)
#: what a user asks to get the value back (the benchmark's own questions)
QUESTIONS = {
    "name": ("What is my full name?", "我叫什么名字？"),
    "preferred_name": ("What should you call me?", "你应该怎么称呼我？"),
    "city": ("Which city do I live in?", "我住在哪个城市？"),
    "employer": ("Which company do I work for?", "我在哪家公司上班？"),
    "occupation": ("What is my job?", "我是做什么工作的？"),
    "school": ("Which school do I go to?", "我在哪个学校上学？"),
    "age": ("How old am I?", "我多大了？"),
    "birthday": ("When is my birthday?", "我的生日是哪天？"),
    "diet": ("What diet do I follow?", "我的饮食习惯是什么？"),
    "allergies": ("What am I allergic to?", "我对什么过敏？"),
    "partner": ("Who is my partner?", "我的另一半是谁？"),
    "children": ("What are my kids called?", "我的孩子叫什么？"),
    "pets": ("What pets do I have?", "我养了什么宠物？"),
    "car": ("What car do I drive?", "我开什么车？"),
    "phone": ("What phone do I have?", "我用什么手机？"),
    "laptop": ("What laptop do I use?", "我用什么电脑？"),
    "bank": ("Which bank am I with?", "我用哪家银行？"),
    "mobile_carrier": ("Who is my mobile carrier?", "我的手机运营商是哪家？"),
    "home_internet": ("Who is my home internet provider?", "我家宽带是哪家的？"),
    "streaming": ("Which streaming services do I have?", "我开了哪些视频会员？"),
    "gym": ("Which gym do I go to?", "我在哪家健身房办的卡？"),
    "doctor": ("Who is my doctor?", "我的医生是谁？"),
    "language": ("Which language should you answer me in?", "你应该用什么语言回答我？"),
}
SMALL_TALK = {
    "en": ("hey, back again", "Hi! What can I do for you?"),
    "zh": ("在吗", "在的，有什么可以帮你？"),
}
_FAMILY = {"name": ("name", "preferred_name"), "language": ("language", "instruction"),
           "instruction": ("language", "instruction")}


def _values(mm: Any, user: str, attrs: tuple[str, ...]) -> list[str]:
    """The user's active values of ``attrs``: a slot's value, or the values of the user's
    own, now, of a multi-valued attribute stored with a statement ("a corgi called Mochi";
    a single-valued one is a slot)."""
    from memstrata.reading import registry

    multi = {a.name for a in registry().attributes if a.cardinality == "multi"}
    out = []
    for r in mm.memories(user, statuses="active"):
        meta = r.metadata or {}
        if r.slot is not None:
            if r.slot.attribute in attrs:
                out.append(r.slot.value)
            continue
        read = meta.get("readings")
        if read is None:  # formed before readings were stored with memories
            read = [meta["reading"]] if meta.get("reading") else []
        out += [str(x["value"]) for x in read if x.get("attribute") in attrs
                and (x.get("attribute") in multi or "readings" not in meta)
                and x.get("holder", "user") == "user" and x.get("when", "now") == "now"
                and not x.get("negated")]
    return out


def _top(mm: Any, user: str, attr: str, lang: str) -> tuple[str, str]:
    """The top hit of the attribute's question: its text and its slot's value."""
    question = QUESTIONS[attr][0 if lang == "en" else 1]
    hits = mm.recall(user, question, k=3, record_use=False)
    if not hits:
        return "", ""
    slot = hits[0].record.slot
    return hits[0].content, "" if slot is None else slot.value


def _carries(attr: str, top: tuple[str, str], value: str) -> bool:
    """Does the top hit carry ``value``: its slot's value is it (a diet stored as 低碳水 is
    low-carb), or its text names it?"""
    text, slot = top
    if (slot and value_matches(attr, slot, value)) or value_matches(attr, text, value):
        return True
    return bool(value) and value.casefold() in text.casefold()


def _judge(mm: Any, case: dict[str, Any], before: list[str]) -> bool:
    attr = change_case_attribute(case)
    family = _FAMILY.get(attr, (attr,))
    user, lang = case["id"], case["lang"]
    if attr == "instruction":
        formed = [v for v in _values(mm, user, family) if v not in before]
        return bool(formed) if case["kind"] == "change" else not formed
    now = _values(mm, user, family)
    if case["kind"] == "change":
        top = _top(mm, user, attr, lang)
        expect = str(case["expect"])
        new_active = any(value_matches(attr, v, expect) for v in now)
        old_gone = attr in ("allergies", "children", "pets", "streaming") or not any(
            any(value_matches(attr, v, b) for b in before) and not value_matches(attr, v, expect)
            for v in now)
        return new_active and old_gone and _carries(attr, top, expect)
    # the same values, however often and in whatever case they are stated ("netflix" said
    # again beside the "Netflix" held is no change)
    others = [v for v in now if not any(value_matches(attr, v, b) for b in before)]
    kept = all(any(value_matches(attr, v, b) for v in now) for b in before)
    return kept and not others


def run_set(cases: list[dict[str, Any]], reader: str) -> dict[str, Any]:
    from memstrata import ManualClock, MemoryManager
    from memstrata.consolidation import ConsolidationSettings, Consolidator
    from memstrata.memory import default_embedder

    tmp = tempfile.mkdtemp(prefix="memstrata-observe-reading-")
    clock = ManualClock(START)
    rows: list[dict[str, Any]] = []
    with MemoryManager.open(f"sqlite:///{tmp}/o.db", embedder=default_embedder(), clock=clock,
                            index_dir=Path(tmp) / "index", reader=reader) as mm:
        jobs = Consolidator(mm, settings=ConsolidationSettings.build(
            schedule={"timezone": "UTC"}))
        before: dict[str, list[str]] = {}
        for case in tqdm(cases, desc="priors", unit="case", file=sys.stdout, leave=False):
            mm.observe(case["id"], "s1", "user", case["prior"])
            clock.advance(minutes=1)
            attr = change_case_attribute(case)
            before[case["id"]] = _values(mm, case["id"], _FAMILY.get(attr, (attr,)))
        clock.set(START + timedelta(days=3))
        for case in tqdm(cases, desc="statements", unit="case", file=sys.stdout, leave=False):
            greet, reply = SMALL_TALK[case["lang"]]
            mm.observe(case["id"], "s2", "user", greet)
            mm.observe(case["id"], "s2", "assistant", reply)
            mm.observe(case["id"], "s2", "user", case["statement"])
            clock.advance(minutes=1)
        for case in cases:
            attr = change_case_attribute(case)
            rows.append({"id": case["id"], "lang": case["lang"], "kind": case["kind"],
                         "attribute": attr, "expect": case["expect"],
                         "before": before[case["id"]],
                         "active": _values(mm, case["id"], _FAMILY.get(attr, (attr,))),
                         "top": " ".join(_top(mm, case["id"], attr, case["lang"])).strip()
                         if attr in QUESTIONS else None,
                         "after_observe": _judge(mm, case, before[case["id"]])})
        clock.set(START + timedelta(days=3, hours=9))
        for job in ("summarize", "conflicts", "expire"):
            jobs.run(job)
        for case, row in zip(cases, rows, strict=True):
            row["after_nightly"] = _judge(mm, case, before[case["id"]])
    _read_alone(cases, rows, reader)
    return {"figures": _figures(rows), "misses": [r for r in rows if not (
        r["after_observe"] and r["after_nightly"])]}


def _read_alone(cases: list[dict[str, Any]], rows: list[dict[str, Any]], reader: str) -> None:
    """Mark each case missed through observe with whether the reader alone reads it right
    (as ``bench_readers`` scores it: the prior's value held, the statement read): a miss
    read right alone was lost on the write path (a correction opening a conflict to
    confirm, one of two values read kept, recall ranking the old record first), not by
    the reading."""
    from memstrata.reading import load_reader
    from memstrata.reading.score import score_changes

    alone = load_reader(reader)
    for case, row in zip(cases, rows, strict=True):
        if not (row["after_observe"] and row["after_nightly"]):
            row["read_right_alone"] = not score_changes(alone, [case])["misses"]


def _figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for when in ("after_observe", "after_nightly"):
        for kind in ("change", "guard"):
            for lang in ("en", "zh", "all"):
                sel = [r for r in rows if r["kind"] == kind and lang in (r["lang"], "all")]
                out[f"{when}/{kind}_{lang}"] = (round(sum(r[when] for r in sel) / len(sel), 4)
                                                if sel else None)
                out[f"{when}/{kind}_{lang}_n"] = len(sel)
            # of the misses, how many the reader alone reads right (lost on the write path)
            out[f"{when}/{kind}_lost_after_reading_n"] = sum(
                1 for r in rows if r["kind"] == kind and not r[when]
                and r.get("read_right_alone"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reader", default="auto")
    parser.add_argument("--sets", default="", help="comma-separated set names (default all)")
    parser.add_argument("--dir", type=Path, default=BLIND, help="where the sets are")
    parser.add_argument("--dev", action="store_true",
                        help="the dev split of the blind rounds now training data")
    args = parser.parse_args(argv)
    from memstrata.reading import load_reader

    version = load_reader(args.reader).version
    if args.dev:
        cases = dev_cases()
        got = run_set(cases, args.reader)
        # the misses and the cases in order, for bench_reader_pairs' case-by-case comparison
        write_result(f"observe_reading_dev_{args.reader}",
                     {"reader": args.reader, "version": version, "cases": len(cases),
                      "sets": {"dev": got["figures"]}, "misses": got["misses"],
                      "case_ids": [c["id"] for c in cases],
                      "case_kinds": [c["kind"] for c in cases]})
        return 0
    names = [p.stem for p in sorted(args.dir.glob("read_*.jsonl"))]
    if args.sets:
        names = [n for n in names if n in args.sets.split(",")]
    look_path = RESULTS / "observe_reading_first_look.json"
    looks: dict[str, Any] = {}
    results: dict[str, Any] = {"reader": args.reader, "version": version, "sets": {}}
    for name in tqdm(names, desc="sets", unit="set", file=sys.stdout):
        cases = [json.loads(x) for x in
                 (args.dir / f"{name}.jsonl").read_text("utf-8").splitlines() if x.strip()]
        got = run_set(cases, args.reader)
        results["sets"][name] = got["figures"]
        key = f"{name}/{args.reader}/{version}"
        if args.dir == BLIND:
            looks[key] = {**got, "when": time.strftime("%Y-%m-%d")}
    if args.dir == BLIND:
        add_first_looks(look_path, looks)
        write_result(f"observe_reading_{args.reader}", results)
    else:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
