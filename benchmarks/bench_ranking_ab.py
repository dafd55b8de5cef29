"""Recall's ranking of two source trees on one database: the same hits, and the time.

A change to the ranking that must not change its results (moving it into
``memstrata.memory.ranking``, issue 32; the hot-path work of issue 35) is checked
against the commit before it: the *base* tree builds one SQLite database (the first ten
cases of every knowledge-update and no-change set - a third remembered, a third
observed, a third observed with the nightly ``summarize`` between sessions - and the
first LoCoMo dev conversation remembered turn by turn), then both trees open copies of it
in fresh processes and

* ask the same questions (each case's question, its old and new statement, a question
  about now, one naming a date range, a Chinese one, every LoCoMo question of the
  conversation; ``k`` 5 and 10): the ids must be the same, in the same order, and every
  score within 1e-9;
* time ``recall(k=5)`` with the query embedding cached (the recall's own time) and, for
  every fourth question, with a fresh single-query encode, round after round interleaved,
  so machine drift hits both alike.

Run::

    git worktree add /tmp/base <commit>
    python benchmarks/bench_ranking_ab.py --base /tmp/base --label "before ..."

(``--built-by current``: the current tree builds the database, for a change that stores
something new with each memory - both trees must still rank alike.)

-> ``benchmarks/results/ranking_ab.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import LOCOMO, ab_percentiles, write_result

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r'''
import json, os, shutil, sys, tempfile, time
from datetime import UTC, datetime, timedelta
from pathlib import Path
os.environ["HF_HUB_OFFLINE"] = "1"
tree, mode, db, locomo = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4]
sys.path.insert(0, str(tree / "benchmarks"))
import bench_knowledge_update as ku
from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata.consolidation import Consolidator

cases = []
for path in sorted((tree / "benchmarks" / "data").glob("knowledge_update*.json")):
    data = json.loads(path.read_text("utf-8"))
    for c in data["cases"][:10]:
        c = {**c, "new": c.get("new", c.get("distractor"))}
        cases.append((f"{path.stem}-{c['id']}", c, data["filler"][c["lang"]]))
conversation = json.loads(Path(locomo).read_text("utf-8"))[0]

if mode == "build":
    clock = ManualClock(ku.START)
    with MemoryManager.open(f"sqlite:///{db}/m.db", clock=clock, home=db) as mm:
        nightly = Consolidator(mm)
        for n, (user, c, filler) in enumerate(cases):
            turns = ku._turns(c, filler)
            clock.set(ku.START)
            if n % 3 == 0:
                mm.remember_many(user, [MemoryInput(content=t, at=at, session_id=s)
                                        for s, at, t in turns])
                continue
            last = None
            for s, at, text in turns:
                if n % 3 == 2 and last not in (None, s):
                    clock.set(at)
                    nightly.run("summarize", user_id=user)
                clock.set(at)
                mm.observe(user, s, "user", text, at=at)
                last = s
        talk, items = conversation["conversation"], []
        for i in range(1, 100):
            if not talk.get(f"session_{i}"):
                continue
            at = datetime.strptime(talk[f"session_{i}_date_time"],
                                   "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
            items += [MemoryInput(content=f"{t['speaker']}: {t['text']}",
                                  at=at + timedelta(minutes=j), session_id=f"s{i}")
                      for j, t in enumerate(talk[f"session_{i}"])]
        clock.set(ku.START)
        mm.remember_many("locomo", items)
    print(json.dumps({"users": len(cases) + 1}))
    sys.exit(0)

probes = []
for user, c, _ in cases:
    for q in (c["question"], c["old"], c["new"], "Where do I work these days?",
              "what did I say last month?", "我现在住哪里？"):
        probes.append((user, q))
probes += [("locomo", str(qa["question"])) for qa in conversation["qa"]]
with tempfile.TemporaryDirectory() as tmp:
    copy = Path(tmp) / "db"
    shutil.copytree(db, copy)
    with MemoryManager.open(f"sqlite:///{copy}/m.db", clock=ManualClock(ku.ASK_AT),
                            home=copy) as mm:
        if mode == "hits":
            out = [[u, q, k, [[h.id, h.score] for h in mm.recall(u, q, k=k, record_use=False)]]
                   for u, q in probes for k in (5, 10)]
        else:
            for u, q in probes:  # warm: every query embedding cached
                mm.recall(u, q, record_use=False)
            out = {"own": [], "with_embedding": []}
            for u, q in probes:
                start = time.perf_counter()
                mm.recall(u, q, record_use=False)
                out["own"].append(time.perf_counter() - start)
            for u, q in probes[::4]:
                mm.longterm.forget_cached(None)  # a fresh single-query encode
                start = time.perf_counter()
                mm.recall(u, q, record_use=False)
                out["with_embedding"].append(time.perf_counter() - start)
print(json.dumps(out))
'''


def _child(tree: Path, mode: str, db: Path) -> Any:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree), mode, str(db), str(LOCOMO)],
                          cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(base: list[Any], current: list[Any]) -> dict[str, Any]:
    """Same ids in the same order, and the largest score difference."""
    if len(base) != len(current):
        return {"same_ids": False, "queries": [len(base), len(current)]}
    differing = [b[:3] for b, c in zip(base, current, strict=True)
                 if [h[0] for h in b[3]] != [h[0] for h in c[3]]]
    worst = max((abs(x[1] - y[1]) for b, c in zip(base, current, strict=True)
                 for x, y in zip(b[3], c[3], strict=False)), default=0.0)
    return {"queries": len(base), "hits": sum(len(b[3]) for b in base),
            "same_ids": not differing, "differing": differing[:20],
            "max_score_difference": worst, "scores_within_1e-9": worst <= 1e-9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="source tree to compare with")
    parser.add_argument("--label", default="base")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--name", default="ranking_ab", help="the result file's name")
    parser.add_argument("--built-by", choices=("base", "current"), default="base",
                        help="the tree that builds the database (current: with what it "
                             "stores when a memory is written, which the base tree ignores)")
    args = parser.parse_args()
    trees = {"base": args.base.resolve(), "current": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "db"
        db.mkdir()
        print(f"building the database with the {args.built_by} tree ...", flush=True)
        _child(trees[args.built_by], "build", db)
        hits = {name: _child(tree, "hits", db) for name, tree in trees.items()}
        samples: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
        for n in range(args.rounds):
            for name, tree in trees.items():
                for kind, values in _child(tree, "time", db).items():
                    samples[name].setdefault(kind, []).extend(values)
                print(f"round {n + 1}/{args.rounds}: {name} timed", flush=True)
    result: dict[str, Any] = {
        "what": "recall's ranking of two source trees on one database: hits and time",
        "base": {"tree": str(args.base), "label": args.label},
        "built_by": args.built_by,
        "workload": "the first 10 cases of every knowledge-update and no-change set "
                    "(remembered / observed / observed with the nightly summarize) and the "
                    "first LoCoMo dev conversation; recall(k=5), query embedding cached",
        "equivalence": compare(hits["base"], hits["current"]),
        "rounds": args.rounds,
        "own_time": {name: ab_percentiles(v["own"]) for name, v in samples.items()},
        "with_embedding": {name: ab_percentiles(v["with_embedding"])
                           for name, v in samples.items()},
    }
    write_result(args.name, result)
    print(json.dumps({k: result[k] for k in ("equivalence", "own_time", "with_embedding")},
                     indent=1)[:2000])


if __name__ == "__main__":
    main()
