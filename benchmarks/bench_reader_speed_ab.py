"""Two model readers' speed side by side: each turn read by one, then the other, in one
process, one thread (``results/reader_speed_ab.json``).

The same turns as ``bench_readers.py``'s speed (the first 400 statements of the formation
cases), alone and with eight values held (:data:`bench_readers.HELD`), the readers' order
alternating turn by turn so that a busy machine slows both alike.

Run: ``.venv/bin/python benchmarks/bench_reader_speed_ab.py --a DIR --b DIR [--name N]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, percentiles, write_result
from bench_readers import HELD, formation_cases
from tqdm import tqdm

from memstrata.reading import ModelReader
from memstrata.reading.types import Held


def interleaved(readers: dict[str, ModelReader], texts: list[str],
                held: tuple[Held, ...]) -> dict[str, Any]:
    samples: dict[str, list[float]] = {name: [] for name in readers}
    names = list(readers)
    for r in readers.values():
        r.read(texts[0], held)  # load
    for i, text in enumerate(tqdm(texts, desc=f"held {len(held)}", file=sys.stdout)):
        for name in names if i % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            readers[name].read(text, held)
            samples[name].append(time.perf_counter() - start)
    return {name: percentiles(s) for name, s in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="one model's files")
    parser.add_argument("--b", type=Path, required=True, help="the other's")
    parser.add_argument("--name", default="reader_speed_ab")
    args = parser.parse_args(argv)
    readers = {"a": ModelReader(args.a), "b": ModelReader(args.b)}
    texts = [c["statement"] for c in formation_cases()[:400]]
    result = {"machine": machine(),
              "versions": {k: r.version for k, r in readers.items()},
              "turns": len(texts),
              "speed": interleaved(readers, texts, ()),
              "speed_held": interleaved(readers, texts, HELD)}
    write_result(args.name, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
