"""What a reader says a text means: typed, immutable results of the :class:`Reader` protocol.

A :class:`Reading` is one value of one registry attribute found in a turn, with whose fact
it is, when it holds and how sure the reader is. A :class:`Relation` says how a newer
statement stands to an older one; an :class:`Asked` says which attribute a question asks
for. Readers only say what text means; the policies decide what to do with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CLASHES",
    "HOLDERS",
    "RELATIONS",
    "WHENS",
    "Asked",
    "Held",
    "Holder",
    "Reading",
    "Relation",
    "RelationKind",
    "When",
    "from_stored",
    "to_stored",
]

#: whose fact a reading is: the user's own, or someone else's (a partner, a friend ...)
Holder = Literal["user", "other"]
#: when a reading holds: now, no longer, intended, only supposed, or for one occasion
When = Literal["now", "past", "plan", "hypothetical", "one_off"]
#: how a newer statement stands to an older one; a ``correction`` is a contradiction the
#: user makes on purpose (the older was wrong: "scratch that, it's the 14th", "我从来没养过猫"),
#: so the newer value is the one to keep; a ``contradiction`` clashes with the older
#: without saying which is right
RelationKind = Literal["same", "update", "contradiction", "elaboration", "unrelated",
                       "correction"]

HOLDERS: tuple[Holder, ...] = ("user", "other")
WHENS: tuple[When, ...] = ("now", "past", "plan", "hypothetical", "one_off")
#: in the order of the model's relate head (``correction`` last: a model trained before
#: it existed has the first five outputs)
RELATIONS: tuple[RelationKind, ...] = ("same", "update", "contradiction", "elaboration",
                                       "unrelated", "correction")
#: the relations in which the newer statement clashes with the older (found as a
#: contradiction in the relate sets' measure, whether made on purpose or not)
CLASHES: frozenset[RelationKind] = frozenset({"contradiction", "correction"})


@dataclass(frozen=True, slots=True)
class Reading:
    """One value of one registry attribute read from a turn.

    ``span`` is the ``(start, end)`` character offsets of the words that carry the value
    (``None`` when no words of the turn do, as for a rule that normalises); ``value`` is in
    the user's own words and language (a registry label for closed attributes such as a
    diet, digits for an age).
    """

    attribute: str
    value: str
    holder: Holder = "user"
    when: When = "now"
    negated: bool = False
    confidence: float = 1.0
    span: tuple[int, int] | None = None

    @property
    def current_own(self) -> bool:
        """The user's own value, holding now and not denied: what a write may keep."""
        return self.holder == "user" and self.when == "now" and not self.negated


@dataclass(frozen=True, slots=True)
class Held:
    """A value the user already holds for an attribute (the ``held`` of ``read``)."""

    attribute: str
    value: str


@dataclass(frozen=True, slots=True)
class Relation:
    """How ``newer`` stands to ``older``: the same fact, an update, a contradiction, ..."""

    kind: RelationKind
    confidence: float = 1.0
    attribute: str | None = None


@dataclass(frozen=True, slots=True)
class Asked:
    """Which attribute a question asks for, whose value, and whether the current or a past one."""

    attribute: str
    whose: Holder = "user"
    time: Literal["current", "past"] = "current"
    confidence: float = 1.0


def to_stored(readings: Iterable[Reading], version: str) -> list[dict[str, Any]]:
    """Readings as they are stored with a memory (``metadata["readings"]``, JSON), each
    with the version of the reader that read it."""
    return [{"reader": version, "attribute": r.attribute, "value": r.value,
             "holder": r.holder, "when": r.when, "negated": r.negated,
             "confidence": round(r.confidence, 4),
             "span": None if r.span is None else list(r.span)} for r in readings]


def from_stored(items: object) -> list[Reading]:
    """The readings of :func:`to_stored` back (an item that is not one is skipped)."""
    out: list[Reading] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        holder, when, span = item.get("holder"), item.get("when"), item.get("span")
        if holder not in HOLDERS or when not in WHENS:
            continue
        out.append(Reading(
            str(item.get("attribute")), str(item.get("value")), holder, when,
            bool(item.get("negated")), float(item.get("confidence") or 0.0),
            (int(span[0]), int(span[1])) if isinstance(span, list) and len(span) == 2
            else None))
    return out
