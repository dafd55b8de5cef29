"""The sixth relation, ``correction`` (stop 63): a contradiction the user makes on purpose.
The relate measure still counts it as a contradiction found, so the figures of sets labelled
before it existed keep their meaning, and it is measured on its own as well."""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.reading import Asked, Held, Reading, Relation
from memstrata.reading.model import ModelReader
from memstrata.reading.score import score_lines
from memstrata.reading.types import CLASHES, RELATIONS, RelationKind


class _Says:
    """A reader whose relate answers from a table (the measure is under test, not a model)."""

    name = version = "table"

    def __init__(self, answers: dict[str, RelationKind]) -> None:
        self.answers = answers

    def read(self, turn: str, held: Sequence[Held] = ()) -> list[Reading]:
        return []

    def ask(self, query: str) -> Asked | None:
        return None

    def relate(self, older: str, newer: str) -> Relation:
        return Relation(kind=self.answers[newer])


def _pair(n: int, relation: str) -> dict[str, str]:
    return {"id": f"r{n}", "lang": "en", "task": "relate", "attribute": "birthday",
            "older": "my birthday is June 4th", "newer": f"turn {n}", "relation": relation}


def test_a_correction_is_a_contradiction_found_and_measured_on_its_own() -> None:
    lines = [_pair(1, "correction"), _pair(2, "correction"), _pair(3, "contradiction"),
             _pair(4, "update")]
    # a reader that cannot say correction (trained before it existed) finds the clashes
    # as contradictions: all found, none of the corrections told apart
    old = score_lines(_Says({"turn 1": "contradiction", "turn 2": "contradiction",
                             "turn 3": "contradiction", "turn 4": "update"}), lines)
    assert (old["contra_all"], old["contra_said_all"], old["correction_all"]) == (1.0, 1.0, 0.0)
    assert old["relate_all"] == 0.5 and old["correction_all_n"] == 2
    # one that tells them apart; a correction said of a bare contradiction is still a
    # contradiction found, an update said of a correction is not
    new = score_lines(_Says({"turn 1": "correction", "turn 2": "update",
                             "turn 3": "correction", "turn 4": "correction"}), lines)
    assert new["contra_all"] == round(2 / 3, 4) and new["contra_said_all"] == round(2 / 3, 4)
    assert new["correction_all"] == 0.5 and new["relate_all"] == 0.25


def test_the_relations_and_the_clashes() -> None:
    assert RELATIONS[-1] == "correction" and len(set(RELATIONS)) == 6
    assert set(CLASHES) == {"contradiction", "correction"}


def test_the_shipped_model_answers_only_the_relations_of_its_head() -> None:
    reader = ModelReader()
    assert reader.relations in (RELATIONS[:5], RELATIONS)
    for older, newer in [("My birthday is June 4th", "sorry, typo: my birthday is June 14th"),
                         ("I live in Leeds", "I moved to York last week")]:
        assert reader.relate(older, newer).kind in reader.relations
