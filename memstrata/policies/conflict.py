"""Conflict policy: what happens when a new statement contradicts a kept one.

For structured slots the contradiction is exact: same user, scope, subject and
attribute, a different value. The default mode ``confirm`` keeps both, links
them as one conflict group and marks both ``pending_confirmation`` so the
planner asks the user; ``newest_wins`` supersedes at once. An explicit
correction from the user ("actually, not X but Y") always wins at once, keeping
the old record as ``superseded`` for history.

For free text, :func:`texts_contradict` gives the cheap offline signals the
write path and the consolidation job share: the same statement with different
numbers, or with the negation flipped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memstrata._text import has_negation, numbers, tokenize

__all__ = ["ConflictMode", "ConflictPolicy", "SlotMatch", "SlotVerdict", "slot_verdict",
           "texts_contradict"]

ConflictMode = Literal["confirm", "newest_wins"]


@dataclass(frozen=True, slots=True)
class ConflictPolicy:
    mode: ConflictMode = "confirm"

    def __post_init__(self) -> None:
        if self.mode not in ("confirm", "newest_wins"):
            raise ValueError("mode must be 'confirm' or 'newest_wins'")


@dataclass(frozen=True, slots=True)
class SlotMatch:
    """A live record holding the same subject/attribute."""

    record_id: str
    value: str | None
    same_value: bool
    conflict_group: str | None = None


@dataclass(frozen=True, slots=True)
class SlotVerdict:
    action: Literal["new", "reinforce", "supersede", "conflict"]
    reason: str
    targets: tuple[str, ...] = ()


def slot_verdict(
    matches: Sequence[SlotMatch], *, correction: bool, policy: ConflictPolicy
) -> SlotVerdict:
    """Decide a slot write against the live records of the same slot."""
    if not matches:
        return SlotVerdict("new", "no current value for this slot")
    different = [m for m in matches if not m.same_value]
    same = [m for m in matches if m.same_value]
    if same and not correction:
        why = "the slot already holds this value"
        if different:
            why += " (one side of an open conflict; it stays open until confirmed)"
        return SlotVerdict("reinforce", why, (same[0].record_id,))
    if correction:
        return SlotVerdict(
            "supersede",
            "explicit correction: the newest statement wins, the old value is kept as history",
            tuple(m.record_id for m in matches),
        )
    if policy.mode == "newest_wins":
        return SlotVerdict(
            "supersede",
            "conflict mode newest_wins: the new value replaces the old one",
            tuple(m.record_id for m in matches),
        )
    return SlotVerdict(
        "conflict",
        "contradicts the current value; both kept pending the user's confirmation",
        tuple(m.record_id for m in different),
    )


def texts_contradict(a: str, b: str, *, min_overlap: float = 0.5) -> str | None:
    """Why two similar statements contradict, or ``None``.

    Offline and cheap: the statements must share most of their content words;
    then differing numbers or a flipped negation is a contradiction. Paraphrases
    with nothing flipped are not.

    >>> texts_contradict("My budget is 2000 euros", "My budget is 3000 euros")
    'same statement with different numbers (2000 vs 3000)'
    >>> texts_contradict("I like spicy food", "I don't like spicy food")
    'same statement with the negation flipped'
    >>> texts_contradict("I like spicy food", "I really like spicy food") is None
    True
    >>> texts_contradict("I have two children", "I have three children")
    'same statement with different numbers (2 vs 3)'
    >>> texts_contradict("I prefer tea over coffee", "I prefer coffee over tea")
    'the preference is reversed'
    """
    words_a, words_b = set(tokenize(a)), set(tokenize(b))  # stemmed: "cat" = "cats"
    if not words_a or not words_b:
        return None
    overlap = len(words_a & words_b) / min(len(words_a), len(words_b))
    if overlap < min_overlap:
        return None
    nums_a, nums_b = _figures(a), _figures(b)
    if nums_a and nums_b and nums_a != nums_b:
        return f"same statement with different numbers ({', '.join(sorted(nums_a))} vs " \
               f"{', '.join(sorted(nums_b))})"
    if has_negation(a) != has_negation(b):
        return "same statement with the negation flipped"
    over_a, over_b = _PREFER_OVER.search(a), _PREFER_OVER.search(b)
    if over_a and over_b:
        pa = (over_a["a"].casefold(), over_a["b"].casefold())
        pb = (over_b["a"].casefold(), over_b["b"].casefold())
        if pa == pb[::-1] and pa[0] != pa[1]:
            return "the preference is reversed"
    return None


_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "once": "1", "twice": "2",
}
_PREFER_OVER = re.compile(
    r"\bprefer\s+(?P<a>.+?)\s+(?:over|to|rather than|than)\s+(?P<b>.+?)[.!]?$", re.IGNORECASE
)


def _figures(text: str) -> frozenset[str]:
    """Numbers in digits and in words ("two cups" and "2 cups" say the same)."""
    words = {_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.casefold())
             if w in _NUMBER_WORDS}
    return numbers(text) | words
