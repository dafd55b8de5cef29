"""Which of a turn's readings a write keeps: at most one value of each single-valued
attribute. ``observe`` and the nightly ``summarize`` keep what this keeps
(:func:`memstrata.memory.formation.candidates_from_readings`), and the change measure
``change_kept_*`` (:func:`memstrata.reading.score.score_changes`) scores it, so a value
read in two pieces (華為 and Pura 70) or beside a second value read as holding now counts as
read only when the one kept is right.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata import _text
from memstrata.reading.registry import Registry
from memstrata.reading.types import Held, Reading

__all__ = ["one_value_each"]


def one_value_each(reg: Registry, readings: Sequence[Reading],
                   held: Sequence[Held]) -> list[Reading]:
    """At most one reading of each single-valued attribute of ``readings``: a turn that
    names the held value beside a new one ("monzo card came and the barclays account is
    closed" while Barclays is held) changes it to the new one; of several new ones, the
    reader's surest ("GP is now Dr Eze at Riverside Medical") - not whichever came last.
    Readings of multi-valued attributes all stay, in their order."""
    kept: dict[str, Reading] = {}
    for r in readings:
        if reg[r.attribute].cardinality != "single":
            continue
        best = kept.get(r.attribute)
        if best is None or _rank(r, held) > _rank(best, held):
            kept[r.attribute] = r
    return [r for r in readings
            if reg[r.attribute].cardinality != "single" or kept[r.attribute] is r]


def _rank(r: Reading, held: Sequence[Held]) -> tuple[bool, float]:
    """A new value before a restated held one, then the surer."""
    value = _text.normalize(r.value)
    restated = any(h.attribute == r.attribute and value and (
        value in _text.normalize(h.value) or _text.normalize(h.value) in value) for h in held)
    return (not restated, r.confidence)
