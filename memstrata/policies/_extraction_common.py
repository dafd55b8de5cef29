"""What both languages' rules of the fast extractor share.

The candidate record (:class:`Extracted`), how a value is cleaned, how sure a reading
is (hedges, one-off reactions) and how a slot is built, plus the change words that
:func:`memstrata.policies.extraction.is_correction_text` and the English age rule
look for. Private: :mod:`memstrata.policies.extraction` is the public face, and it and
the rule modules import this one, never the reverse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memstrata.types import USER_SUBJECT, MemoryType, Slot

#: confidence of a reaction to a demonstrative ("I love this song"): below the
#: default write threshold, so the policy drops it with a reason
ONE_OFF_CONFIDENCE = 0.3
HEDGED_CONFIDENCE = 0.55


@dataclass(frozen=True, slots=True)
class Extracted:
    """One candidate memory read from an utterance."""

    content: str
    type: MemoryType
    confidence: float
    #: which rule read it (for explanations and the benchmark)
    rule: str
    slot: Slot | None = None
    #: the user corrects / replaces something said before (newest wins)
    correction: bool = False
    #: for "not X but Y": the value that is being replaced (X)
    replaces: str | None = None
    #: other attributes the slot's value may belong to ("I moved from Siemens to Google":
    #: a city or an employer); the write side picks the one whose current value the
    #: sentence names (:func:`memstrata.memory.formation.observe`)
    alternatives: tuple[str, ...] = ()
    #: keep the slot only when the sentence names the current value of one of the
    #: attributes ("I left X for Y" says nothing about which X it is)
    tentative: bool = False
    #: the reading it came from, when a reader of :mod:`memstrata.reading` made it
    #: (reader version, attribute, value, whose, when, confidence, span), stored with it
    reading: tuple[tuple[str, object], ...] = ()
    kind: Literal["extracted"] = "extracted"


_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|probably|i think|i guess|kind of|sort of)\b|也许|可能|大概",
    re.IGNORECASE,
)
_ONE_OFF_OBJECT = re.compile(
    r"^(?:this|that|these|those|it|today'?s?|tonight'?s?|here|the one)\b|^(?:这|那|今天|今晚|刚才)",
    re.IGNORECASE,
)
_TRAILING = re.compile(r"[\s.!?。！？~…]+$")
#: words that mark a newer statement as replacing an older one
_CHANGE_WORDS = re.compile(
    r"\b(?:actually|from now on|going forward|anymore|no longer|not anymore|these days|"
    r"nowadays|now|instead|changed|switched|moved|correction|i meant)\b|"
    r"其实|以后|今后|从现在开始|现在|不再|改成|改为|换成|搬到|不是.+而是|更正",
    re.IGNORECASE,
)

#: what trails a value without being part of it: an emoji, an emoticon, a parenthesis
_DECORATION = re.compile(r"(?:\s*(?:\([^)]*\)|[:;]-?[)(DPp]|[^\w\s.'’&)-]+))+$")


def _clean(value: str) -> str:
    value = _TRAILING.sub("", value.strip().strip(" \"'“”‘’`"))
    value = _TRAILING.sub("", _DECORATION.sub("", value)) or value
    return value.strip(" \"'“”‘’`")


def _confidence(base: float, obj: str, sentence: str) -> float:
    if _ONE_OFF_OBJECT.match(obj.strip()):
        return ONE_OFF_CONFIDENCE
    if _HEDGE.search(sentence):
        return min(base, HEDGED_CONFIDENCE)
    return base


#: longest attribute / value / sentence read as a memory: a chat turn is never refused
#: because the extractor read something oversized out of it - it reads nothing instead
MAX_ATTRIBUTE_CHARS = 64
MAX_VALUE_CHARS = 120
MAX_SENTENCE_CHARS = 2000


def _slot(attribute: str, value: str) -> Slot | None:
    value = value.strip()
    if not value or len(value) > MAX_VALUE_CHARS or len(attribute) > MAX_ATTRIBUTE_CHARS:
        return None
    return Slot(USER_SUBJECT, attribute, value)
