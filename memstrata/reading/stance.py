"""Whose and when a stored statement is: read once, when the memory is written.

Recall orders what it found by currency (stage 4 of :mod:`memstrata.memory.ranking`): a
newer statement that reads as the user's own change updates an older one about the same
thing, and - asked about the user now - someone else's news, a plan, the past or a one-off
weighs less than the user's own present state. What a statement says on both counts is a
:class:`Stance`, read by the frozen rules (:mod:`memstrata.policies.standing`) when the
memory is written and stored with it (``metadata["stance"]``, with a digest of the text it
was read from). Recall asks the stored stance - the question only decides whether a person
the statement is about is the one asked about - and never reads the stored text.

A memory with no stance of its own text (written before stances were stored, by a path
that stores none, or whose text changed since) is read at query time as before; the
re-read job (``memstrata reread``) stores the stances it lacks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memstrata.policies.standing import OwnState, own_state, reads_as_own_change

__all__ = ["STANCE_KEY", "Stance", "needs_stance", "stance_of", "stored_stance", "to_stored"]

#: where a memory's metadata keeps its stance
STANCE_KEY = "stance"
#: the stored form's version: a stance of another version is read again
_VERSION = 1


@dataclass(frozen=True, slots=True)
class Stance:
    """What a statement says of the user's state: whether it reads as the user's own
    change (``change``: "I moved to Munich", 调到风控组了) and whose and when it is
    (``own``: someone else's, a plan, the past, a one-off, only a question)."""

    change: bool
    own: OwnState

    def reports_own_state(self, question: str = "") -> bool:
        """Does the statement report the user's own present state, for ``question``
        (a person the question names is not someone else)?"""
        return self.own.why_not(question) is None


def stance_of(text: str) -> Stance:
    """The :class:`Stance` of ``text``, read by the rules."""
    return Stance(change=reads_as_own_change(text), own=own_state(text))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def to_stored(stance: Stance, text: str) -> dict[str, Any]:
    """``stance`` of ``text`` as JSON, for ``metadata[STANCE_KEY]``."""
    return {"v": _VERSION, "of": _digest(text), "change": stance.change,
            "own": stance.own.to_stored()}


def stored_stance(metadata: Any, text: str) -> Stance | None:
    """The stance stored in ``metadata`` if it was read from ``text`` (``None``: none
    stored, another version, malformed, or read from another text)."""
    if not isinstance(metadata, Mapping):
        return None
    raw = metadata.get(STANCE_KEY)
    if not (isinstance(raw, Mapping) and raw.get("v") == _VERSION
            and isinstance(raw.get("change"), bool) and raw.get("of") == _digest(text)):
        return None
    own = OwnState.from_stored(raw.get("own"))
    return None if own is None else Stance(change=raw["change"], own=own)


def needs_stance(metadata: Mapping[str, Any], text: str) -> bool:
    """Is a stance of ``text`` to be stored in ``metadata``: none is there, or one of
    another version or text? (A ``"stance"`` key of the caller's own - not a stance this
    module stored - is left alone: recall then reads the text, as before.)"""
    raw = metadata.get(STANCE_KEY)
    if raw is None:
        return True
    return isinstance(raw, Mapping) and "v" in raw and "of" in raw \
        and stored_stance(metadata, text) is None
