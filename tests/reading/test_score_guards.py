"""What a reader alone is scored on, against what ``observe`` keeps (stop 65).

Guards of a multi-valued attribute: the alone measure held them whatever the reader read
("another pet is no change of the one held"), so a neighbour's husky read as the user's own
new pet - which ``observe`` then keeps - never counted against a reader alone.
``guard_strict_*`` counts it. Changes: a value read in two pieces, or beside a second value
read as holding now, counted as read if any piece matched; ``change_kept_*`` counts it only
when the one value a write keeps is right. ``change_*`` and ``guard_*`` keep their meaning, so
recorded first looks compare."""

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


def test_a_change_counts_as_kept_only_when_the_value_a_write_keeps_is_right() -> None:
    prior, split, whole = "my phone is an iPhone 13", "換咗部華為Pura 70", "got a Pixel 9 today"
    reader = _Reads({
        prior: [Reading("phone", "iPhone 13")],
        # the value read in two pieces; the write keeps the surer one, 華為
        split: [Reading("phone", "華為", confidence=0.99),
                Reading("phone", "Pura 70", confidence=0.93)],
        whole: [Reading("phone", "Pixel 9", confidence=0.9),
                Reading("phone", "iPhone 13", when="past", confidence=0.95)],
    })
    cases = [{"id": "s", "lang": "zh", "kind": "change", "attribute": "phone", "prior": prior,
              "statement": split, "expect": "華為Pura 70"},
             {"id": "w", "lang": "en", "kind": "change", "attribute": "phone", "prior": prior,
              "statement": whole, "expect": "Pixel 9"}]
    got = score_changes(reader, cases)
    assert got["change_all"] == 1.0  # "Pura 70" is most of "華為Pura 70"
    assert got["change_kept_all"] == 0.5 and got["change_kept_zh"] == 0.0
    assert got["change_kept_en"] == 1.0 and got["change_kept_all_n"] == 2
