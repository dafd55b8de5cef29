"""The rule reader: the hand-written rules of :mod:`memstrata.policies` behind the protocol.

Frozen: it reads exactly what the rules read (the same functions ``observe`` and recall
have called), so it is the fallback of the model reader and the baseline of the
scoreboard. A misreading is fixed with data and the model, not with a new pattern here.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.reading.registry import registry
from memstrata.reading.types import Asked, Held, Reading, Relation

__all__ = ["RuleReader"]

#: the rules' names for the registry's attributes
_FROM_RULES = {"carrier": "mobile_carrier", "internet": "home_internet"}
_RULE_VERSION = "rules-frozen-2026-12"


class RuleReader:
    """Today's rules, read through the :class:`~memstrata.reading.protocol.Reader` protocol."""

    name = "rules"

    @property
    def version(self) -> str:
        return _RULE_VERSION

    def read(self, turn: str, held: Sequence[Held] = ()) -> list[Reading]:
        from memstrata.policies.extraction import extract
        from memstrata.policies.slot_change import change_of

        reg = registry()
        out: list[Reading] = []
        seen: set[str] = set()
        for c in extract(turn, role="user"):
            if c.slot is not None:
                attr = _FROM_RULES.get(c.slot.attribute, c.slot.attribute)
                if attr in reg:
                    out.append(Reading(attribute=attr, value=c.slot.value,
                                       confidence=c.confidence, span=_span(turn, c.slot.value)))
                    seen.add(attr)
            elif c.type.value in ("preference", "rule") and c.correction:
                # a standing request with no slot: the rules keep the whole turn
                out.append(Reading(attribute="instruction", value=c.content,
                                   confidence=c.confidence))
        for h in held:
            if h.attribute in seen:
                continue
            new = change_of(turn, h.attribute, h.value)
            if new:
                out.append(Reading(attribute=h.attribute, value=new, confidence=0.8,
                                   span=_span(turn, new)))
        return out

    def relate(self, older: str, newer: str) -> Relation:
        from memstrata.policies.contradiction import Item, contradiction

        if " ".join(older.casefold().split()) == " ".join(newer.casefold().split()):
            return Relation(kind="same")
        why = contradiction(Item(older, "knowledge"), Item(newer, "knowledge"))
        return Relation(kind="contradiction" if why else "unrelated", confidence=0.8)

    def ask(self, query: str) -> Asked | None:
        from memstrata.policies.possessions import asked_possession
        from memstrata.policies.retrieval import asked_attribute

        attr = asked_attribute(query) or asked_possession(query)
        if attr is None:
            return None
        attr = _FROM_RULES.get(attr, attr)
        return Asked(attribute=attr) if attr in registry() else None


def _span(text: str, value: str) -> tuple[int, int] | None:
    at = text.casefold().find(value.casefold())
    return None if at < 0 else (at, at + len(value))
