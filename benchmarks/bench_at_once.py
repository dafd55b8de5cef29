"""Recallable at once: the knowledge-update questions right after ``observe``, and after
the nightly ``summarize``, on two source trees.

Issue 32 item 7: a user's statement that no reader reads a fact from used to wait for the
nightly ``summarize`` before recall could find it. Every knowledge-update set
(``data/knowledge_update.json`` and the blind splits ``knowledge_update_heldout*.json``:
an old value, weeks of filler, the new value said in passing) and every guard set
(``knowledge_update_guard*.json``: the old value, then a statement close to it that
changes nothing) is run through ``observe`` turn by turn, as
``bench_knowledge_update.py`` does (its ``observe`` and ``observe_nightly`` modes, the
default policy), and the question is asked:

* update cases, *newest first*: the new statement is returned (``k=5``) and ranked above
  the old one;
* guard cases, *old first*: the old statement is returned and ranked above the close one.

Both trees run in fresh processes on the same machine (``--base TREE``: the commit
before the change, e.g. from ``git worktree add /tmp/base <commit>``). The splits were
all looked at before this change (they tuned the rules and the ranking); the change was
not tuned on them.

    python benchmarks/bench_at_once.py --base /tmp/base   # -> results/at_once.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import write_result

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r'''
import json, os, sys, tempfile
os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, "benchmarks")
import bench_knowledge_update as B
from memstrata import MemoryManager
from memstrata.clock import ManualClock
out = {}
with tempfile.TemporaryDirectory() as tmp:
    clock = ManualClock(B.START)
    with MemoryManager.open(f"sqlite:///{tmp}/ku.db", clock=clock, home=tmp) as mm:
        sets = [("knowledge_update", json.loads(B.DATA.read_text()))]
        sets += [(p.stem, json.loads(p.read_text())) for p in B.BLIND]
        for mode in ("observe", "observe_nightly"):
            for name, d in sets:
                clock.set(B.START)
                rows = B._run_cases(mm, clock, d["cases"], d["filler"], mode)["default"]
                out[f"{name}/{mode}"] = {"kind": "update", "n": len(rows),
                                         "right": sum(r["newest_first"] for r in rows),
                                         "wrong": [r["id"] for r in rows if not r["newest_first"]]}
            for p in B.GUARDS:
                d = json.loads(p.read_text())
                clock.set(B.START)
                rows = B.run_guard_variants(mm, clock, d["cases"], d["filler"], mode)["default"]
                out[f"{p.stem}/{mode}"] = {"kind": "guard", "n": len(rows),
                                           "right": sum(r["old_first"] for r in rows),
                                           "wrong": [r["id"] for r in rows if not r["old_first"]]}
            print(mode, file=sys.stderr, flush=True)
print(json.dumps(out))
'''


def _start(tree: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", _CHILD], cwd=tree, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = child.communicate()
    if child.returncode:
        raise RuntimeError(f"a tree's run failed:\n{err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _pooled(sets: dict[str, Any], kind: str, mode: str) -> dict[str, Any]:
    rows = [v for k, v in sets.items() if v["kind"] == kind and k.endswith(f"/{mode}")]
    n, right = sum(r["n"] for r in rows), sum(r["right"] for r in rows)
    return {"sets": len(rows), "n": n, "right": right, "rate": round(right / n, 4)}


def _summary(sets: dict[str, Any]) -> dict[str, Any]:
    return {f"{kind}/{mode}": _pooled(sets, kind, mode)
            for kind in ("update", "guard") for mode in ("observe", "observe_nightly")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="source tree to compare with")
    parser.add_argument("--label", default="before issue 32 item 7")
    args = parser.parse_args()
    started = time.perf_counter()
    trees = {"base": args.base.resolve(), "this": ROOT}
    # the two trees side by side (quality only: nothing here is timed)
    children = {name: _start(tree) for name, tree in trees.items()}
    runs = {name: _result(child) for name, child in children.items()}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.base,
                          capture_output=True, text=True, check=False).stdout.strip()
    write_result("at_once", {
        "description": __doc__.split("\n\n")[0],
        "what": "update cases: newest first (k=5); guard cases: old first; right after "
                "observe, and after the nightly summarize before each next session and "
                "after the last",
        "base": {"label": args.label, "commit": head},
        "summary": {name: _summary(sets) for name, sets in runs.items()},
        "sets": runs,
        "seconds": round(time.perf_counter() - started, 1),
    })


if __name__ == "__main__":
    main()
