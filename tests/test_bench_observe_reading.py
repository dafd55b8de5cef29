"""``bench_observe_reading`` tells a miss lost on the write path from one the reader
misreads: each miss is read again by the reader alone, and the figures count those it
reads right."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    sys.path.insert(0, str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_observe_reading",
                                                  REPO / "benchmarks" / "bench_observe_reading.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_correction_left_to_confirm_counts_as_lost_after_reading() -> None:
    """A new birthday told plainly opens a conflict to confirm (no active value: a miss
    through observe) although the reader reads it; a change of city it reads and observe
    keeps is no miss; nothing is counted for a guard."""
    bench = _bench()
    cases = [
        {"id": "t-1", "lang": "en", "kind": "change", "attribute": "birthday",
         "prior": "My birthday is 16 June", "statement": "my birthday is 14 June",
         "expect": "14 June"},
        {"id": "t-2", "lang": "en", "kind": "change", "attribute": "city",
         "prior": "I live in Leeds", "statement": "we moved to Porto last month, loving it",
         "expect": "Porto"},
        {"id": "t-3", "lang": "en", "kind": "guard", "attribute": "city",
         "prior": "I live in Leeds", "statement": "my sister just moved to Porto",
         "expect": None},
    ]
    got = bench.run_set(cases, "model")
    misses = {m["id"]: m for m in got["misses"]}
    assert set(misses) == {"t-1"}
    assert misses["t-1"]["read_right_alone"] is True
    assert misses["t-1"]["active"] == []
    figures = got["figures"]
    assert figures["after_observe/change_lost_after_reading_n"] == 1
    assert figures["after_observe/guard_lost_after_reading_n"] == 0
    assert figures["after_observe/change_all"] == 0.5


def test_the_dev_cases_are_the_dev_split_of_the_blind_rounds_in_training() -> None:
    from memstrata.reading.train import is_dev

    bench = _bench()
    cases = bench.dev_cases()
    files = sorted((REPO / "benchmarks/data/reading/changes").glob("read_blind*.jsonl"))
    every = [x for p in files for x in p.read_text("utf-8").splitlines() if x.strip()]
    assert cases and all(is_dev(c["id"]) for c in cases)
    assert 0.05 < len(cases) / len(every) < 0.15  # one in ten
    assert {c["kind"] for c in cases} == {"change", "guard"}


def test_a_diet_stored_as_the_registrys_chinese_label_is_the_expected_one() -> None:
    """Reproduction (the twenty-third round through observe: a Chinese turn's new diet,
    dairy-free, read right and stored as the registry shows it, 不吃乳制品, was counted a
    miss): a diet matches the expected label in any form the registry or a writer gives."""
    from memstrata.reading import registry
    from memstrata.reading.score import value_matches

    for label, zh in registry()["diet"].labels_zh.items():
        assert value_matches("diet", zh, label) and value_matches("diet", label, zh)
        assert value_matches("diet", label.upper(), label)
    assert value_matches("diet", "plant-based", "vegan")
    assert not value_matches("diet", "不吃乳制品", "vegan")
    assert not value_matches("diet", "素食", "omnivore")
