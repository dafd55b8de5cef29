"""The cascade's read: what stands of the first reader's unsure readings.

The first reader here is a scripted one (its readings are given), so each rule of the
cascade is checked on its own; the rules reader behind it is the real one.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.reading import RuleReader
from memstrata.reading.cascade import CascadeReader
from memstrata.reading.types import Asked, Held, Reading, Relation

TURN = "closed the FNB account this morning, salary goes into Capitec now"


class _Scripted:
    """A first reader that reads what it is told to."""

    name = "scripted"
    version = "scripted-1"

    def __init__(self, readings: list[Reading]) -> None:
        self.readings = readings

    def read(self, turn: str, held: Sequence[Held] = ()) -> list[Reading]:
        return list(self.readings)

    def ask(self, query: str) -> Asked | None:
        return None

    def relate(self, older: str, newer: str) -> Relation:
        return Relation("unrelated", 1.0)


OLD = Reading("bank", "FNB", "user", "past", confidence=0.95)
NEW = Reading("bank", "Capitec", "user", "now", confidence=0.62)


def test_an_unsure_new_value_beside_a_sure_old_one_stands() -> None:
    cascade = CascadeReader(_Scripted([OLD, NEW]), RuleReader(), read_threshold=0.7)
    assert cascade.changes
    assert [r.value for r in cascade.read(TURN) if r.current_own] == ["Capitec"]
    assert "changes" in cascade.version


def test_without_changes_the_unsure_value_needs_the_next_reader() -> None:
    cascade = CascadeReader(_Scripted([OLD, NEW]), RuleReader(), read_threshold=0.7,
                            changes=False)
    # the rules read no bank here, so the unsure value does not stand
    assert [r.value for r in cascade.read(TURN) if r.current_own] == []
    assert [r.value for r in cascade.read(TURN)] == ["FNB"]


def test_an_unsure_value_alone_still_needs_the_next_reader() -> None:
    cascade = CascadeReader(_Scripted([NEW]), RuleReader(), read_threshold=0.7)
    assert cascade.read(TURN) == []


def test_an_unsure_old_value_confirms_nothing() -> None:
    unsure_old = Reading("bank", "FNB", "user", "past", confidence=0.5)
    cascade = CascadeReader(_Scripted([unsure_old, NEW]), RuleReader(), read_threshold=0.7)
    assert [r.value for r in cascade.read(TURN) if r.current_own] == []


def test_someone_elses_old_value_confirms_nothing() -> None:
    theirs = Reading("bank", "FNB", "other", "past", confidence=0.95)
    cascade = CascadeReader(_Scripted([theirs, NEW]), RuleReader(), read_threshold=0.7)
    assert [r.value for r in cascade.read(TURN) if r.current_own] == []
