"""Recall latency of two source trees, interleaved on the same machine and data.

A change that must not move recall latency (the lifecycle redesign, issue 8) is
measured against the commit before it: both trees open a copy of the same
ingested LoCoMo database (``bench_recall_quality.py`` builds it under
``benchmarks/.cache/recall``) in fresh processes, round after round, so machine
drift hits both alike. Each round measures ``recall(k=5)`` with a fresh
single-query embedding per call, read-only and with the use recorded.

Run::

    git worktree add /tmp/base <commit>
    python benchmarks/bench_latency_ab.py --base /tmp/base --label "before issue 8"

-> ``benchmarks/results/latency_ab.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import CACHE, LOCOMO, ab_percentiles, write_result

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r'''
import json, os, shutil, sqlite3, sys, tempfile, time
from pathlib import Path
os.environ["HF_HUB_OFFLINE"] = "1"
from memstrata import MemoryManager
from memstrata.memory._st_embedder import SentenceTransformerEmbedder
src, data_path, drop_after = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
data = json.load(open(data_path))
questions = [str(qa["question"]) for conv in data for qa in conv.get("qa", [])[:60]]
fresh = SentenceTransformerEmbedder(cache_size=1)
fresh.embed(["warm up"])
out = {}
with tempfile.TemporaryDirectory() as tmp:
    copy = Path(tmp) / "db"
    shutil.copytree(src, copy)
    conn = sqlite3.connect(copy / "memory.db")  # an older tree refuses a newer schema
    conn.execute("DELETE FROM memstrata_migrations WHERE version > ?", (drop_after,))
    conn.commit()
    conn.close()
    with MemoryManager.open(f"sqlite:///{copy / 'memory.db'}", embedder=fresh, home=copy,
                            index_dir=copy / "index") as memory:
        users = memory.users()
        probes = [(users[i % len(users)], q) for i, q in enumerate(questions)]
        for user, q in probes[:30]:
            memory.recall(user, q + " ", k=5, record_use=False)
        for label, use in (("read_only", False), ("use_recorded", True)):
            samples = []
            for user, q in probes:
                start = time.perf_counter()
                memory.recall(user, q, k=5, record_use=use)
                samples.append(time.perf_counter() - start)
            out[label] = samples
print(json.dumps(out))
'''


def _run(tree: Path, src: Path, data: Path, drop_after: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(src), str(data), str(drop_after)],
                          cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="source tree to compare with")
    parser.add_argument("--label", default="base")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--base-schema", type=int, default=3,
                        help="newest migration the base tree knows")
    args = parser.parse_args()
    caches = sorted((CACHE / "recall").glob("*/memory.db"))
    if not caches:
        sys.exit("run bench_recall_quality.py first (it builds the ingested database)")
    src = caches[0].parent
    samples: dict[str, dict[str, list[float]]] = {"base": {}, "current": {}}
    for n in range(args.rounds):
        for name, tree, drop in (("base", args.base, args.base_schema),
                                 ("current", ROOT, 10_000)):
            got = _run(tree, src, LOCOMO, drop)
            for label, values in got.items():
                samples[name].setdefault(label, []).extend(values)
            print(f"round {n + 1}: {name} done", flush=True)
    result: dict[str, Any] = {
        "what": "recall latency, two source trees interleaved",
        "base": {"tree": str(args.base), "label": args.label},
        "workload": "recall(k=5), fresh single-query embedding each call, LoCoMo dev "
                    "(first 60 questions of each conversation), one ingested database",
        "rounds": args.rounds,
        "results": {name: {label: ab_percentiles(v) for label, v in by.items()}
                    for name, by in samples.items()},
    }
    write_result("latency_ab", result)
    print(json.dumps(result["results"], indent=1))


if __name__ == "__main__":
    main()
