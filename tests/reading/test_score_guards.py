"""Guards of a multi-valued attribute (stop 65): the alone measure held them whatever the
reader read ("another pet is no change of the one held"), so a neighbour's husky read as the
user's own new pet - which ``observe`` then keeps - never counted against a reader alone.
``guard_strict_*`` counts it; ``guard_*`` keeps its meaning, so recorded first looks compare."""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.reading import Asked, Held, Reading, Relation
from memstrata.reading.score import prior_values, score_changes


class _Reads:
    """A reader whose readings come from a table (the measure is under test, not a model)."""

    name = version = "table"

    def __init__(self, table: dict[str, list[Reading]]) -> None:
        self.table = table

    def read(self, turn: str, held: Sequence[Held] = ()) -> list[Reading]:
        return list(self.table.get(turn, []))

    def ask(self, query: str) -> Asked | None:
        return None

    def relate(self, older: str, newer: str) -> Relation:
        return Relation(kind="unrelated")


PRIOR = "I have a cat called Mochi"
SITTING = "pet-sitting my brother's husky Koda all week"
BOTH = "Mochi keeps hissing at Koda"
MINE = "Mochi is asleep on my keyboard again"


def _guard(n: int, statement: str, attribute: str = "pets") -> dict[str, object]:
    return {"id": f"g{n}", "lang": "en", "kind": "guard", "attribute": attribute,
            "prior": PRIOR, "statement": statement, "expect": None}


def _reader() -> _Reads:
    return _Reads({
        PRIOR: [Reading("pets", "cat"), Reading("pets", "Mochi")],
        # the misreading: the brother's dog as the user's own
        SITTING: [Reading("pets", "Koda")],
        BOTH: [Reading("pets", "Mochi"), Reading("pets", "Koda", holder="other")],
        MINE: [Reading("pets", "Mochi")],
    })


def test_a_new_value_of_a_multi_valued_attribute_breaks_a_guard_strictly() -> None:
    got = score_changes(_reader(), [_guard(1, SITTING), _guard(2, BOTH), _guard(3, MINE)])
    # the lenient measure holds all three, as before
    assert got["guard_all"] == 1.0 and got["guard_all_n"] == 3
    # strictly, the husky read as the user's own breaks its guard; the user's own cat
    # named again (the prior's second value) and the brother's dog read as his do not
    assert got["guard_strict_all"] == round(2 / 3, 4) and got["guard_strict_all_n"] == 3
    assert got["guard_strict_en"] == got["guard_strict_all"] and got["guard_strict_zh_n"] == 0


def test_a_single_valued_guard_reads_the_same_both_ways() -> None:
    reader = _Reads({"I live in Leeds": [Reading("city", "Leeds")],
                     "my sister moved to York": [Reading("city", "York", holder="other")],
                     "thinking of moving to York": [Reading("city", "York")]})
    cases = [{"id": f"c{n}", "lang": "zh", "kind": "guard", "attribute": "city",
              "prior": "I live in Leeds", "statement": s, "expect": None}
             for n, s in enumerate(("my sister moved to York", "thinking of moving to York"))]
    got = score_changes(reader, cases)
    assert got["guard_all"] == got["guard_strict_all"] == 0.5


def test_every_value_the_prior_says_is_the_users() -> None:
    assert prior_values(_reader(), {"prior": PRIOR}, "pets") == ["cat", "Mochi"]
    assert prior_values(_reader(), {"prior": ""}, "pets") == []
