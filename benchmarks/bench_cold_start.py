"""Cold start: a fresh process, from its start to its first recall and its first observe.

Each run is a new ``python -c ...`` through the public API on a fresh copy of one
prepared SQLite database (300 memories of one user, its index files next to it), so
nothing is warm but the OS page cache. Measured, interleaved round by round so machine
drift hits every case alike:

* ``import numpy`` - the yardstick (this machine is shared; ratios to it are stable);
* ``import memstrata`` (lazy: names load on first use) and
  ``from memstrata import MemoryManager``;
* open + first ``recall`` (k=5) - time to the result, and to the process's exit;
* open + first ``observe`` of a turn that forms a memory;
* the command line: ``memstrata --help``, ``memstrata consolidate --help`` and a mistyped
  command (``memstrata recal``, answered with "Did you mean") - to the process's exit.

After the recall and the observe the child reports whether torch, transformers or
sentence_transformers were imported (they must not be: the ONNX export is cached by
``python -m memstrata.memory.export``). A second part measures batch throughput of the
two embedding backends on 2000 LoCoMo sentences in batches of 64, ONNX Runtime and
PyTorch interleaved.

Run::

    python benchmarks/bench_cold_start.py                   # -> results/cold_start.json
    python benchmarks/bench_cold_start.py --tree /tmp/base  # another source tree (before)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import RESULTS, locomo_sentences, write_result

ROOT = Path(__file__).resolve().parent.parent
USER = "cold-user"
HEAVY = ("torch", "transformers", "sentence_transformers")

_PREPARE = r'''
import sys
from memstrata import MemoryManager
sentences = [s for s in sys.argv[2].split("\n") if s]
with MemoryManager.open(f"sqlite:///{sys.argv[1]}/memory.db", home=sys.argv[1]) as memory:
    memory.remember_many("cold-user", sentences)
    print(len(memory.recall("cold-user", "what does the user like?", k=5)))
'''

_RECALL = r'''
import sys, time, json
from memstrata import MemoryManager
with MemoryManager.open(f"sqlite:///{sys.argv[1]}/memory.db", home=sys.argv[1]) as memory:
    hits = memory.recall("cold-user", "What did she say about her painting last summer?", k=5)
    at = time.time()
    print(json.dumps({"at": at, "hits": len(hits),
                      "loaded": {m: m in sys.modules for m in %(heavy)r}}), flush=True)
'''

_OBSERVE = r'''
import sys, time, json
from memstrata import MemoryManager
with MemoryManager.open(f"sqlite:///{sys.argv[1]}/memory.db", home=sys.argv[1]) as memory:
    obs = memory.observe("cold-user", "s-cold", "user",
                         "I prefer window seats on long flights because I sleep better.")
    at = time.time()
    print(json.dumps({"at": at, "written": len(obs.written),
                      "loaded": {m: m in sys.modules for m in %(heavy)r}}), flush=True)
'''


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(tree))
    env.pop("MEMSTRATA_MODEL_CACHE", None)
    return env


#: the command line as the console script runs it
_CLI = "from memstrata.cli import main; main()"
#: (name, arguments, the exit status expected)
_CLI_CASES = (("cli_help", ["--help"], 0), ("cli_command_help", ["consolidate", "--help"], 0),
              ("cli_unknown_command", ["recal"], 2))


def _run(code: str, args: list[str], tree: Path, expect: int = 0
         ) -> tuple[float, float | None, dict[str, Any]]:
    """(seconds to exit, seconds to the reported result, the child's report)."""
    start = time.time()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=tree, env=_env(tree),
                          capture_output=True, text=True, check=False)
    end = time.time()
    if proc.returncode != expect:
        raise RuntimeError(f"child failed: {proc.stderr[-2000:]}")
    report: dict[str, Any] = {}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if lines:
        report = json.loads(lines[-1])
    report["stderr"] = proc.stderr.strip()[-300:]
    at = report.get("at")
    return end - start, (float(at) - start if at is not None else None), report


def _stats(samples: list[float]) -> dict[str, float]:
    return {"p50_s": round(statistics.median(samples), 3), "max_s": round(max(samples), 3),
            "min_s": round(min(samples), 3), "n": len(samples)}


def cold_start(tree: Path, runs: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="cold-start-"))
    try:
        base = work / "base"
        base.mkdir()
        sentences = locomo_sentences()[:300]
        _run(_PREPARE, [str(base), "\n".join(sentences)], tree)
        times: dict[str, list[float]] = {k: [] for k in (
            "import_numpy", "import_memstrata", "import_manager", "first_recall", "recall_exit",
            "first_observe", "observe_exit", *(name for name, _, _ in _CLI_CASES))}
        reports: dict[str, dict[str, Any]] = {}
        for i in range(runs):
            times["import_numpy"].append(_run("import numpy", [], tree)[0])
            times["import_memstrata"].append(_run("import memstrata", [], tree)[0])
            times["import_manager"].append(
                _run("from memstrata import MemoryManager", [], tree)[0])
            for name, cli_args, status in _CLI_CASES:
                times[name].append(_run(_CLI, cli_args, tree, status)[0])
            for kind, code in (("recall", _RECALL), ("observe", _OBSERVE)):
                copy = work / f"{kind}-{i}"
                shutil.copytree(base, copy)
                total, first, report = _run(code % {"heavy": HEAVY}, [str(copy)], tree)
                assert first is not None
                times[f"first_{kind}"].append(first)
                times[f"{kind}_exit"].append(total)
                reports[kind] = report
                shutil.rmtree(copy)
            print(f"run {i + 1}/{runs}: " + ", ".join(
                f"{k} {v[-1]:.2f}s" for k, v in times.items()), flush=True)
        out: dict[str, Any] = {k: _stats(v) for k, v in times.items()}
        numpy_p50 = out["import_numpy"]["p50_s"]
        out["ratio_to_import_numpy_p50"] = {
            k: round(out[k]["p50_s"] / numpy_p50, 1)
            for k in ("import_memstrata", "import_manager", "first_recall", "first_observe",
                      *(name for name, _, _ in _CLI_CASES))}
        out["recall_hits"] = reports["recall"].get("hits")
        out["observe_written"] = reports["observe"].get("written")
        out["heavy_modules_loaded"] = {k: reports[k].get("loaded") for k in reports}
        out["child_stderr"] = {k: reports[k]["stderr"] for k in reports}
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def import_profile(tree: Path, top: int = 15) -> list[dict[str, Any]]:
    """The largest top-level packages under ``from memstrata import MemoryManager``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "from memstrata import MemoryManager"],
                          cwd=tree, env=_env(tree), capture_output=True, text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2].rstrip()
        depth = (len(name) - len(name.lstrip())) // 2
        name = name.strip()
        if depth == 0 or (name.startswith("memstrata.") and name.count(".") == 1):
            rows.append({"module": name, "cumulative_ms": round(int(parts[1]) / 1000, 1)})
    rows.sort(key=lambda r: -r["cumulative_ms"])
    return rows[:top]


def batch_throughput(n: int, batch: int, rounds: int) -> dict[str, Any]:
    """Texts per second through ``embed`` in batches, ONNX Runtime vs PyTorch."""
    from memstrata.memory._st_embedder import SentenceTransformerEmbedder

    texts = locomo_sentences()[:n]
    backends = {"onnx": SentenceTransformerEmbedder(cache_size=1, batch_size=batch),
                "torch": SentenceTransformerEmbedder(cache_size=1, batch_size=batch,
                                                     onnx=False)}
    for name, embedder in backends.items():
        embedder.embed(texts[:batch])  # loaded, warm
        assert embedder.backend == name, (name, embedder.backend)
    samples: dict[str, list[float]] = {k: [] for k in backends}
    cpu: dict[str, list[float]] = {k: [] for k in backends}
    for _ in range(rounds):
        for name, embedder in backends.items():
            wall, proc = time.perf_counter(), time.process_time()
            for start in range(0, len(texts), batch):
                embedder.forget_cached(None)
                embedder.embed(texts[start:start + batch])
            samples[name].append(len(texts) / (time.perf_counter() - wall))
            cpu[name].append(time.process_time() - proc)
    return {
        "workload": f"{len(texts)} LoCoMo sentences, embed() in batches of {batch}, "
                    f"{rounds} interleaved rounds, batch threads 2",
        **{name: {"texts_per_s_median": round(statistics.median(v), 1),
                  "texts_per_s": [round(x, 1) for x in v],
                  "cpu_s_median": round(statistics.median(cpu[name]), 2)}
           for name, v in samples.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, default=ROOT, help="source tree to measure")
    parser.add_argument("--label", default="current")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--batch-rounds", type=int, default=3)
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument("--out", default="cold_start")
    args = parser.parse_args()
    tree = args.tree.resolve()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree,
                            capture_output=True, text=True, check=False).stdout.strip()
    payload: dict[str, Any] = {}
    previous = RESULTS / f"{args.out}.json"
    if previous.exists():  # keep the other trees' figures (before / after)
        payload = {k: v for k, v in json.loads(previous.read_text()).items()
                   if k in ("trees", "batch_throughput")}
    trees = payload.setdefault("trees", {})
    trees[args.label] = {
        "tree": str(tree), "commit": commit,
        "cold_start": cold_start(tree, args.runs),
        "import_profile_top": import_profile(tree),
    }
    if not args.skip_batch:
        payload["batch_throughput"] = batch_throughput(2000, 64, args.batch_rounds)
    write_result(args.out, {
        "what": "fresh-process wall time to the first recall / observe on an existing "
                "SQLite memory (300 memories), p50/max over interleaved runs, vs "
                "`python -c 'import numpy'`; batch embedding throughput ONNX vs PyTorch",
        **payload,
    })


if __name__ == "__main__":
    main()
