"""The one seam every reader of meaning goes through: the :class:`Reader` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memstrata.reading.types import Asked, Held, Reading, Relation

__all__ = ["Reader"]


class Reader(Protocol):
    """Says what text means; never decides what to do with it (the policies do).

    ``name`` and ``version`` are stored with every reading a reader makes, so a reader
    upgrade is a re-read of what the old version read.
    """

    name: str

    @property
    def version(self) -> str: ...

    def read(self, turn: str, held: Sequence[Held] = ()) -> list[Reading]:
        """Every value of a registry attribute in ``turn``: whose, when, denied or not.

        ``held`` is what the user already holds for the attributes in question (a reader
        may use it to tell a restatement or a change of a held value).
        """
        ...

    def relate(self, older: str, newer: str) -> Relation:
        """How ``newer`` stands to ``older``: same, update, contradiction, elaboration,
        unrelated, or correction (a contradiction the user makes on purpose: the older
        was wrong)."""
        ...

    def ask(self, query: str) -> Asked | None:
        """Which attribute a question asks for (None when it asks for none)."""
        ...
