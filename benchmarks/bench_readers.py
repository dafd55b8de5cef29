"""The readers' scoreboard: every reader on the same sets, one JSON (``results/readers.json``).

Readers: the frozen rules, the shipped model, and the cascade (the model, with the rules
beside it for what the registry does not cover). Sets:

* ``changes`` - the dev split (one case in ten, by a hash of its id, never trained on) of
  the change cases: the blind formation splits in ``data/formation_changes*.json`` and
  the reader's earlier blind sets in ``data/reading/changes/`` (training data once their
  first looks were recorded), read by the reader alone: a change is read when the reader
  gives the user's own current value equal to the expected one, a guard holds when it
  gives no other current value of that attribute;
* ``dev`` - the model's dev split of its own training data (one line in ten, never
  trained on): own current values' recall and precision, whose / when, asked attribute,
  relations;
* ``blind`` - the sets in ``data/reading/blind/`` written after the model was frozen by
  people who saw neither the code nor the training data (first look recorded in
  ``results/readers_first_look.json`` the first time they are run; never overwritten);
* speed - the reader alone per turn on one thread (p50 / p95), and its resident memory;
  ``speed_held`` reads the same turns with eight values held (:data:`HELD`).

``--readers llm`` adds the LLM reader with the model the environment configures
(``MEMSTRATA_LLM_MODEL``, ``MEMSTRATA_LLM_BASE_URL``): a real model served on 127.0.0.1
(``../shared/tools/local-llm/``, not for CI). Its turns are read eight a call
(``read_many``) before they are scored; ``--limit N`` scores the first N cases of each set
(half of them English, half Chinese), since a small model on two cores takes about a
minute a call.

Run: ``.venv/bin/python benchmarks/bench_readers.py [--readers rules,model] [--sets ...]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, add_first_looks, percentiles, rss_mb, write_result
from tqdm import tqdm

from memstrata.reading import ModelReader, RuleReader
from memstrata.reading.cascade import CascadeReader
from memstrata.reading.score import score_changes, score_lines
from memstrata.reading.types import Held

DATA = Path(__file__).resolve().parent / "data"
READING = DATA / "reading"


class _Prefetched:
    """The LLM reader with its turns read ahead, ``read_many`` eight a call; ``read`` then
    answers from what was read (a turn not read ahead is read alone)."""

    def __init__(self, reader: Any) -> None:
        self.inner = reader
        self.name = reader.name
        self.read_ahead: dict[str, Any] = {}

    @property
    def version(self) -> str:
        return str(self.inner.version)

    def prefetch(self, texts: list[str], desc: str) -> None:
        todo = list(dict.fromkeys(t for t in texts if t and t not in self.read_ahead))
        size = self.inner.batch_size
        with tqdm(total=len(todo), desc=desc, file=sys.stdout) as bar:
            for first in range(0, len(todo), size):
                chunk = todo[first:first + size]
                for text, readings in zip(chunk, self.inner.read_many(chunk), strict=True):
                    self.read_ahead[text] = readings
                bar.update(len(chunk))

    def read(self, turn: str, held: Any = ()) -> Any:
        if turn in self.read_ahead:
            return self.read_ahead[turn]
        return self.inner.read(turn, held)

    def relate(self, older: str, newer: str) -> Any:
        return self.inner.relate(older, newer)

    def ask(self, query: str) -> Any:
        return self.inner.ask(query)


def _llm_reader() -> _Prefetched:
    from memstrata.llm import OpenAIClient, Timeouts
    from memstrata.reading import LLMReader

    client = OpenAIClient.from_env(timeouts=Timeouts(connect=10.0, read=900.0))
    return _Prefetched(LLMReader(client))


def _first(lines: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` lines, half English and half Chinese (all when 0)."""
    if not limit:
        return lines
    en = [x for x in lines if x.get("lang", "en") == "en"][:limit // 2]
    zh = [x for x in lines if x.get("lang") == "zh"][:limit - limit // 2]
    return en + zh


class _Progress:
    """A reader that ticks a progress bar on each call (the benchmark reads thousands)."""

    def __init__(self, reader: Any, bar: Any) -> None:
        self.inner, self.bar = reader, bar
        self.name = reader.name

    @property
    def version(self) -> str:
        return str(self.inner.version)

    def read(self, turn: str, held: Any = ()) -> Any:
        self.bar.update(1)
        return self.inner.read(turn, held)

    def relate(self, older: str, newer: str) -> Any:
        self.bar.update(1)
        return self.inner.relate(older, newer)

    def ask(self, query: str) -> Any:
        self.bar.update(1)
        return self.inner.ask(query)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]


def formation_cases() -> list[dict[str, Any]]:
    out = []
    for path in sorted(DATA.glob("formation_changes*.json")):
        out += json.loads(path.read_text("utf-8"))["cases"]
    return out


def dev_changes() -> list[dict[str, Any]]:
    from memstrata.reading.train import is_dev, load_changes

    return [c for c in load_changes() if is_dev(c["id"])]


def dev_lines() -> list[dict[str, Any]]:
    from memstrata.reading.train import is_dev

    lines = []
    for path in sorted((READING / "train").glob("*.jsonl")):
        lines += [x for x in _jsonl(path) if is_dev(x["id"])]
    return lines


def blind_sets() -> dict[str, tuple[str, list[dict[str, Any]]]]:
    out = {}
    for path in sorted((READING / "blind").glob("*.jsonl")):
        kind = path.stem.split("_")[0]  # ask / relate / read
        out[path.stem] = (kind, _jsonl(path))
    return out


#: what a user holds when ``speed_held`` reads a turn (eight values, as a user who has told
#: the assistant about themselves has; the model's change detector reads a turn against
#: the held values it may change)
HELD = (Held("name", "Priya Raman"), Held("city", "Leeds"), Held("employer", "Siemens"),
        Held("occupation", "engineer"), Held("diet", "vegetarian"), Held("phone", "Pixel 8"),
        Held("bank", "Barclays"), Held("car", "Honda Civic"))


def speed(reader: Any, texts: list[str], held: tuple[Held, ...] = ()) -> dict[str, Any]:
    # load, and read every turn once untimed: the first reader timed in a process otherwise
    # pays the warm-up (v23 alone 10.2 ms p50 timed first, the cascade wrapping the same
    # model 7.9 ms timed after it: results/readers_v23_speed_quiet.json)
    for t in texts:
        reader.read(t, held)
    samples = []
    for t in texts:
        start = time.perf_counter()
        reader.read(t, held)
        samples.append(time.perf_counter() - start)
    out = {**percentiles(samples), "rss_mb_after": round(rss_mb(), 1)}
    return out if held else {**out, "resident_mb_of_the_reader": _resident(reader.name)}


def _resident(name: str) -> float:
    """What loading and running the reader adds to a fresh process's resident memory."""
    import subprocess

    code = ("import sys; sys.path.insert(0, 'benchmarks'); from _common import rss_mb; "
            "from memstrata.reading import load_reader; r = load_reader(sys.argv[1]); "
            "before = rss_mb(); r.read('I moved to Porto last month.'); "
            "print(round(rss_mb() - before, 1))")
    out = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parent.parent)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", default="rules,model,cascade")
    parser.add_argument("--sets", default="changes,dev,blind,speed")
    parser.add_argument("--out", default="readers")
    parser.add_argument("--model-dir", type=Path, default=None,
                        help="another model's files (the previous model, from git history)")
    parser.add_argument("--limit", type=int, default=0,
                        help="score only the first N cases of each set (half EN, half ZH)")
    args = parser.parse_args(argv)
    readers: dict[str, Any] = {}
    for name in args.readers.split(","):
        if name == "rules":
            readers[name] = RuleReader()
        elif name == "model":
            readers[name] = ModelReader(args.model_dir)
        elif name == "llm":
            readers[name] = _llm_reader()
        else:
            readers[name] = CascadeReader(ModelReader(args.model_dir), RuleReader())
    sets = set(args.sets.split(","))
    results: dict[str, Any] = {name: {"version": r.version} for name, r in readers.items()}
    first_look_path = RESULTS / "readers_first_look.json"
    first_looks: dict[str, Any] = (json.loads(first_look_path.read_text())
                                   if first_look_path.exists() else {})
    changes = _first(dev_changes(), args.limit) if "changes" in sets else []
    dev = _first(dev_lines(), args.limit) if "dev" in sets else []
    blind = {k: (kind, _first(lines, args.limit))
             for k, (kind, lines) in blind_sets().items()} if "blind" in sets else {}
    for name, reader in readers.items():
        if isinstance(reader, _Prefetched):
            reader.prefetch([t for c in changes for t in (c.get("prior"), c["statement"])]
                            + [x["text"] for x in dev if x.get("task", "read") == "read"]
                            + [t for kind, lines in blind.values() if kind == "read"
                               for c in lines for t in (c.get("prior"), c["statement"])],
                            f"{name}: reading ahead")
        if changes:
            with tqdm(total=2 * len(changes), desc=f"{name}: changes (dev)",
                      file=sys.stdout) as bar:
                got = score_changes(_Progress(reader, bar), changes)
            results[name]["changes_dev"] = {k: v for k, v in got.items() if k != "misses"}
        if dev:
            with tqdm(total=len(dev), desc=f"{name}: dev", file=sys.stdout) as bar:
                results[name]["dev"] = score_lines(_Progress(reader, bar), dev)
        for set_name, (kind, lines) in blind.items():
            with tqdm(total=2 * len(lines), desc=f"{name}: {set_name}", file=sys.stdout) as bar:
                if kind in ("ask", "relate"):
                    got = score_lines(_Progress(reader, bar), [{**x, "task": kind} for x in lines])
                else:
                    got = score_changes(_Progress(reader, bar), lines)
            figures = {k: v for k, v in got.items() if k != "misses"}
            results[name].setdefault("blind", {})[set_name] = figures
            key = f"{set_name}/{name}/{reader.version}" + (f"/first{args.limit}"
                                                             if args.limit else "")
            if key not in first_looks:
                first_looks[key] = {"figures": figures, "misses": got.get("misses", []),
                                    "when": time.strftime("%Y-%m-%d")}
        if "speed" in sets and not isinstance(reader, _Prefetched):
            texts = [c["statement"] for c in formation_cases()[:400]]
            results[name]["speed"] = speed(reader, texts)
            results[name]["speed_held"] = speed(reader, texts, HELD)
    if blind:
        add_first_looks(first_look_path, first_looks)
    write_result(args.out, {"readers": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
