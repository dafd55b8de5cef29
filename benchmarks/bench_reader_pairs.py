"""Two readers compared case by case: which cases each gets right that the other misses.

The release rules since ``twenty_sixth_round_retrain`` judge a candidate against the
released reader on what users get, in cases rather than rates: with ``a_only`` the cases A
gets right and B misses,

    score(A over B) = (changes a_only - changes b_only) - 2 x (guards b_only - guards a_only)

- a wrong write counts as two missed ones (the exchange of ``default_reader_round24``, F0.5
of the user's own values). Three comparisons, each on the same cases for both readers:

* ``alone`` - the reader alone on the blind read sets (``score_changes`` one case at a
  time): changes read and guards held (``change``, ``guard``) and the strict forms
  (``change_kept``: the one value a write keeps is right; ``guard_strict``: no new value of
  the user's own at all);
* ``through_observe`` - the first looks of ``bench_observe_reading`` for both versions
  (``results/observe_reading_first_look.json``, or the files given with ``--looks``), right
  after ``observe`` and after the nightly jobs;
* ``dev_through_observe`` - ``bench_observe_reading --dev`` results that keep their misses
  and case ids (``--dev-a``, ``--dev-b``), when given.

Run: ``.venv/bin/python benchmarks/bench_reader_pairs.py --a DIR --b DIR [--sets ...]
[--looks FILE ...] [--dev-a FILE --dev-b FILE] [--out NAME]`` (A is the candidate, B the
released reader; the model directories hold a reader's five files).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, write_result
from tqdm import tqdm

from memstrata.reading import ModelReader
from memstrata.reading.score import score_changes

BLIND = Path(__file__).resolve().parent / "data" / "reading" / "blind"

#: the per-case outcomes of the reader alone, by the figure of ``score_changes`` they come from
ALONE = {"change": "change_all", "change_kept": "change_kept_all",
         "guard": "guard_all", "guard_strict": "guard_strict_all"}


def score(a_only: dict[str, int], b_only: dict[str, int], change: str = "change",
          guard: str = "guard") -> int:
    """Changes A gains less twice the guards A loses, in cases."""
    return (a_only[change] - b_only[change]) - 2 * (b_only[guard] - a_only[guard])


def compare(kinds: dict[str, str], right_a: dict[str, set[str]],
            right_b: dict[str, set[str]]) -> dict[str, Any]:
    """``kinds`` maps each case id to the outcome kinds it counts in (``change``...);
    ``right_x[kind]`` is the set of ids reader X gets right for that kind."""
    out: dict[str, Any] = {"n": {}, "a_only": {}, "b_only": {}, "a": {}, "b": {}}
    for kind in sorted({k for ks in kinds.values() for k in ks.split(",")}):
        ids = {i for i, ks in kinds.items() if kind in ks.split(",")}
        a, b = right_a.get(kind, set()) & ids, right_b.get(kind, set()) & ids
        out["n"][kind] = len(ids)
        out["a"][kind] = round(len(a) / len(ids), 4) if ids else None
        out["b"][kind] = round(len(b) / len(ids), 4) if ids else None
        out["a_only"][kind] = len(a - b)
        out["b_only"][kind] = len(b - a)
    out["a_only_ids"] = {k: sorted(right_a.get(k, set()) - right_b.get(k, set()))
                         for k in out["n"]}
    out["b_only_ids"] = {k: sorted(right_b.get(k, set()) - right_a.get(k, set()))
                         for k in out["n"]}
    return out


def alone_outcomes(reader: ModelReader, cases: Iterable[dict[str, Any]]
                   ) -> dict[str, set[str]]:
    """The ids of the cases the reader alone gets right, per outcome kind."""
    right: dict[str, set[str]] = {k: set() for k in ALONE}
    for case in cases:
        got = score_changes(reader, [case])
        for kind, figure in ALONE.items():
            if kind.split("_")[0] == case["kind"] and got[figure] == 1.0:
                right[kind].add(case["id"])
    return right


def observe_outcomes(cases: list[dict[str, Any]], misses: list[dict[str, Any]]
                     ) -> dict[str, dict[str, set[str]]]:
    """Per moment, the ids right through observe, from a run's misses."""
    out: dict[str, dict[str, set[str]]] = {}
    for when in ("after_observe", "after_nightly"):
        wrong = {m["id"] for m in misses if not m[when]}
        out[when] = {kind: {c["id"] for c in cases if c["kind"] == kind
                            and c["id"] not in wrong} for kind in ("change", "guard")}
    return out


def _load_sets(names: list[str]) -> dict[str, list[dict[str, Any]]]:
    return {n: [json.loads(x) for x in (BLIND / f"{n}.jsonl").read_text("utf-8").splitlines()
                if x.strip()] for n in names}


def _merged_looks(paths: list[Path]) -> dict[str, Any]:
    looks: dict[str, Any] = {}
    for p in paths:
        looks.update(json.loads(p.read_text("utf-8")))
    return looks


def _with_score(got: dict[str, Any]) -> dict[str, Any]:
    return {**got, "score": score(got["a_only"], got["b_only"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="the candidate's model directory")
    parser.add_argument("--b", type=Path, required=True, help="the released model directory")
    parser.add_argument("--sets", default="", help="comma-separated read sets (default: "
                        "every read set in data/reading/blind)")
    parser.add_argument("--looks", type=Path, nargs="*",
                        default=[RESULTS / "observe_reading_first_look.json"])
    parser.add_argument("--dev-a", type=Path, default=None)
    parser.add_argument("--dev-b", type=Path, default=None)
    parser.add_argument("--out", default="reader_pairs")
    args = parser.parse_args(argv)

    names = args.sets.split(",") if args.sets else [
        p.stem for p in sorted(BLIND.glob("read_*.jsonl"))]
    sets = _load_sets(names)
    cases = [c for n in names for c in sets[n]]
    a, b = ModelReader(args.a), ModelReader(args.b)
    result: dict[str, Any] = {"a": a.version, "b": b.version, "sets": names,
                              "cases": len(cases)}

    kinds = {c["id"]: ",".join(k for k in ALONE if k.split("_")[0] == c["kind"])
             for c in cases}
    right = [alone_outcomes(r, tqdm(cases, desc=f"alone {r.version[:18]}", unit="case",
                                    file=sys.stdout, leave=False)) for r in (a, b)]
    alone = compare(kinds, *right)
    result["alone"] = {**alone, "score": score(alone["a_only"], alone["b_only"]),
                       "score_strict": score(alone["a_only"], alone["b_only"],
                                             "change_kept", "guard_strict")}

    looks = _merged_looks([p for p in args.looks if p.is_file()])
    keys = {r.version: [f"{n}/model/{r.version}" for n in names] for r in (a, b)}
    if all(k in looks for ks in keys.values() for k in ks):
        per = [observe_outcomes(cases, [m for k in keys[r.version] for m in looks[k]["misses"]])
               for r in (a, b)]
        kinds_obs = {c["id"]: c["kind"] for c in cases}
        result["through_observe"] = {
            when: _with_score(compare(kinds_obs, per[0][when], per[1][when]))
            for when in ("after_observe", "after_nightly")}
    else:
        result["through_observe"] = None  # a version's first looks are not there
    if args.dev_a and args.dev_b:
        runs = [json.loads(p.read_text("utf-8")) for p in (args.dev_a, args.dev_b)]
        if runs[0]["case_ids"] != runs[1]["case_ids"]:
            raise SystemExit("the two dev runs are not on the same cases")
        dev = [{"id": i, "kind": k} for i, k in zip(runs[0]["case_ids"], runs[0]["case_kinds"],
                                                    strict=True)]
        per = [observe_outcomes(dev, r["misses"]) for r in runs]
        kinds_dev = {c["id"]: c["kind"] for c in dev}
        result["dev_through_observe"] = {
            when: _with_score(compare(kinds_dev, per[0][when], per[1][when]))
            for when in ("after_observe", "after_nightly")}
    write_result(args.out, result)
    brief = {"alone": {k: result["alone"][k] for k in ("a", "b", "score", "score_strict")}}
    for part in ("through_observe", "dev_through_observe"):
        if result.get(part):
            brief[part] = {w: {k: v[k] for k in ("a", "b", "a_only", "b_only", "score")}
                           for w, v in result[part].items()}
    print(json.dumps(brief, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
