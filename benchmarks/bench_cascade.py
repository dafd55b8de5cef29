"""Choose the cascade's read threshold on dev data: ``results/cascade_dev.json``.

The dev data is the model's dev split of its own training data (one line in ten, never
trained on; the rules were never tuned on it either), and the dev split of the change
cases (changes read with the right value, guards held: the blind sets' measure). For each
variant - the rules, the model, and the cascade (the model; the rules confirm a reading
under the threshold; with ``fill``, the rules' readings of attributes the model read
nothing of are added; with ``changes``, an unsure new value stands beside a sure old one
of the same attribute) at several thresholds - it reports the recall and precision of the
user's own current values (what ``observe`` writes) and F0.5, which weighs precision
twice: a value wrongly written replaces one the user holds, a value missed waits for the
next mention.

Run: ``.venv/bin/python benchmarks/bench_cascade.py``
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from bench_readers import dev_changes, dev_lines
from tqdm import tqdm

from memstrata.reading import ModelReader, RuleReader
from memstrata.reading.cascade import CascadeReader
from memstrata.reading.score import score_changes, score_lines
from memstrata.reading.types import Held, Reading


class _Cached:
    """Each reader reads each dev turn once, however many variants ask."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.cache = inner, inner.name, {}

    @property
    def version(self) -> str:
        return str(self.inner.version)

    def read(self, turn: str, held: tuple[Held, ...] = ()) -> list[Reading]:
        if turn not in self.cache:
            self.cache[turn] = self.inner.read(turn, held)
        return list(self.cache[turn])

    def ask(self, query: str) -> Any:
        return self.inner.ask(query)

    def relate(self, older: str, newer: str) -> Any:
        return self.inner.relate(older, newer)


def _f(recall: float, precision: float, beta: float = 0.5) -> float:
    if not recall or not precision:
        return 0.0
    b2 = beta * beta
    return round((1 + b2) * precision * recall / (b2 * precision + recall), 4)


def main() -> int:
    lines = [x for x in dev_lines() if x["task"] == "read"]
    changes = dev_changes()
    model, rules = _Cached(ModelReader()), _Cached(RuleReader())
    variants: dict[str, Any] = {"rules": rules, "model": model}
    for t in (0.5, 0.6, 0.7, 0.8, 0.9):
        for fill, told in ((False, False), (True, False), (False, True), (True, True)):
            name = f"cascade t={t}{' fill' if fill else ''}{' changes' if told else ''}"
            variants[name] = CascadeReader(model, rules, read_threshold=t, fill=fill,
                                           changes=told)
    out: dict[str, Any] = {}
    for name, reader in tqdm(variants.items(), desc="variants", file=sys.stdout):
        got = score_lines(reader, lines)
        row = {k: got[k] for k in ("own_all", "own_en", "own_zh", "own_said_all",
                                   "own_said_en", "own_said_zh")}
        row["f05_all"] = _f(got["own_all"] or 0.0, got["own_said_all"] or 0.0)
        row["f05_en"] = _f(got["own_en"] or 0.0, got["own_said_en"] or 0.0)
        row["f05_zh"] = _f(got["own_zh"] or 0.0, got["own_said_zh"] or 0.0)
        moved = score_changes(reader, changes)
        row.update({k: moved[k] for k in ("change_all", "change_en", "change_zh", "guard_all",
                                          "guard_en", "guard_zh")})
        out[name] = row
        print(f"{name:<22} recall {row['own_all']:.3f} precision {row['own_said_all']:.3f} "
              f"F0.5 {row['f05_all']:.3f} (en {row['f05_en']:.3f}, zh {row['f05_zh']:.3f}); "
              f"changes {row['change_all']:.3f} guards {row['guard_all']:.3f}")
    best = max(out, key=lambda k: out[k]["f05_all"])
    write_result("cascade_dev", {"dev_lines": len(lines), "dev_changes": len(changes),
                                 "model": model.version,
                                 "variants": out, "best": best})
    return 0


if __name__ == "__main__":
    sys.exit(main())
