"""``bench_reader_pairs`` compares two readers case by case: the cases each gets right that
the other misses, and the release rules' score - changes gained less twice the guards lost."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_reader_pairs as bench  # a script's module, on the path above


def test_a_lost_guard_costs_twice_a_gained_change() -> None:
    """A gains two changes B misses and breaks one guard B holds: 2 - 2 = 0, no better.
    Cases both get right, or both miss, count for neither."""
    cases = [{"id": f"c{i}", "kind": "change"} for i in range(4)] + \
        [{"id": f"g{i}", "kind": "guard"} for i in range(3)]
    misses_a = [{"id": "c3", "after_observe": False, "after_nightly": False},
                {"id": "g0", "after_observe": False, "after_nightly": True}]
    misses_b = [{"id": "c1", "after_observe": False, "after_nightly": False},
                {"id": "c2", "after_observe": False, "after_nightly": False},
                {"id": "c3", "after_observe": False, "after_nightly": False}]
    a = bench.observe_outcomes(cases, misses_a)
    b = bench.observe_outcomes(cases, misses_b)
    kinds = {c["id"]: c["kind"] for c in cases}
    now = bench.compare(kinds, a["after_observe"], b["after_observe"])
    assert now["a_only"] == {"change": 2, "guard": 0}
    assert now["b_only"] == {"change": 0, "guard": 1}
    assert now["b_only_ids"]["guard"] == ["g0"]
    assert bench.score(now["a_only"], now["b_only"]) == 0
    night = bench.compare(kinds, a["after_nightly"], b["after_nightly"])
    assert bench.score(night["a_only"], night["b_only"]) == 2  # the guard holds by night
    assert now["a"] == {"change": 0.75, "guard": round(2 / 3, 4)}
    assert now["b"] == {"change": 0.25, "guard": 1.0}


def test_the_reader_alone_is_scored_one_case_at_a_time_with_the_strict_forms() -> None:
    """The shipped model on two plain cases: the change is read and kept, the guard about
    a sister's move holds - lenient and strict alike."""
    from memstrata.reading import load_reader

    reader = load_reader("model")
    cases = [{"id": "t-1", "lang": "en", "kind": "change", "attribute": "city",
              "prior": "I live in Leeds", "statement": "we moved to Porto last month",
              "expect": "Porto"},
             {"id": "t-2", "lang": "en", "kind": "guard", "attribute": "city",
              "prior": "I live in Leeds", "statement": "my sister just moved to Porto",
              "expect": None}]
    right = bench.alone_outcomes(reader, cases)
    assert right == {"change": {"t-1"}, "change_kept": {"t-1"}, "guard": {"t-2"},
                     "guard_strict": {"t-2"}}
