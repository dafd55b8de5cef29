"""The model reader's label spaces, shared by its trainer and its runtime.

The encoder reads a turn once; small heads read its token states:

* ``tags``: BIO over the registry attributes (``O``, then ``B-a`` / ``I-a`` per attribute),
  which words carry a value;
* per value span (its tokens' mean beside the turn's mean): ``holder``, ``when``,
  ``negated`` and, for a label attribute (a diet), the ``label``;
* on a question's mean: ``ask`` (an attribute or none), ``whose``, ``time``;
* on a pair's mean (``<s> older </s></s> newer </s>``): ``relate``.
"""

from __future__ import annotations

from memstrata.reading.registry import registry
from memstrata.reading.types import HOLDERS, RELATIONS, WHENS

__all__ = ["ASK", "FAMILY", "HOLDER", "LABELS", "MAX_TOKENS", "RELATE", "TAGS", "TIME", "WHEN",
           "attributes", "family", "tag_of"]

#: tokens a window reads (a longer turn is read in overlapping windows)
MAX_TOKENS = 128


def attributes() -> tuple[str, ...]:
    return registry().names


def _tags() -> tuple[str, ...]:
    out = ["O"]
    for a in attributes():
        out += [f"B-{a}", f"I-{a}"]
    return tuple(out)


TAGS = _tags()
HOLDER = HOLDERS
WHEN = WHENS
TIME = ("current", "past")
ASK = ("none", *attributes())
RELATE = RELATIONS
#: every label of every label attribute, one head ("diet:vegan", ...)
LABELS = tuple(f"{a.name}:{label}" for a in registry() if a.value == "label"
               for label in a.labels)


#: attributes read as one for a change: "call me Kat" changes what a user named Katherine is
#: called (the change sets call it a name change), a reply language is a standing
#: instruction
FAMILY = {"name": ("name", "preferred_name"), "language": ("language", "instruction"),
          "instruction": ("language", "instruction")}


def family(attribute: str) -> tuple[str, ...]:
    """``attribute`` and the attributes read as one with it for a change."""
    return FAMILY.get(attribute, (attribute,))


def tag_of(attribute: str, begin: bool) -> int:
    return TAGS.index(("B-" if begin else "I-") + attribute)
