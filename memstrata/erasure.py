"""The erasure registry: every table that can hold user content says how to erase it.

``forget(user, id)`` and ``forget_user(user)`` (on :class:`~memstrata.MemoryManager`)
walk every registered :class:`Eraser` inside one write transaction, so a table
added by any package is forgotten with the rest - or the registry test fails
(``tests/test_erasure.py`` reflects the migrated database: a table with a
``user_id`` column that no eraser claims is an error).

Erasers register under the entry-point group ``memstrata.erasers`` - the
built-ins (memory's records, turns and tasks; consolidation's runs and actions;
the LLM call log) the same way a third party would - and are loaded when an
erasure runs, so a process that never imported a package still erases its
tables. An eraser that cannot be loaded stops the erasure (nothing is skipped
silently).

What an eraser receives for one forgotten memory is a :class:`Forgotten`: the
record ids (with their history), the raw conversation turns they were formed
from, and the exact texts that must not survive anywhere else (the records'
content, slot values and corrected words, the turns' text). Free text and JSON
that quote one of those texts are scrubbed (:func:`scrub`), or the row is
deleted when it has no meaning without it (a model call).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from sqlalchemy import Connection

from memstrata.errors import StorageError

__all__ = [
    "ERASER_GROUP",
    "REDACTED",
    "Eraser",
    "Forgotten",
    "contains",
    "load_erasers",
    "scrub",
    "scrubbable",
    "user_tombstone",
]

ERASER_GROUP = "memstrata.erasers"
#: what replaces a forgotten text inside a longer text that stays
REDACTED = "[forgotten]"
#: texts shorter than this are not scrubbed from other text (a one-letter slot
#: value would otherwise redact every "a" in the user's history)
MIN_SCRUB_CHARS = 4


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What one ``forget`` removes."""

    user_id: str
    #: the records deleted (the asked-for one, its versions, records formed from
    #: the same raw turns)
    memory_ids: frozenset[str]
    #: raw conversation turns deleted (the provenance of the records)
    turn_ids: frozenset[int]
    #: exact strings that must not survive in other rows, longest first
    texts: tuple[str, ...]
    #: when (epoch seconds) and why, for the content-free record of the deletion
    at: float = 0.0
    reason: str = "user request"
    #: the texts the records' vectors were made from (each record's indexed text and
    #: its sentences): dropped from embedding caches, never written anywhere
    embedded: tuple[str, ...] = ()


@runtime_checkable
class Eraser(Protocol):
    """Erases one package's user content. Runs inside the erasing transaction."""

    #: the tables it is responsible for (the registry test checks every table with
    #: a ``user_id`` column is claimed)
    tables: tuple[str, ...]

    def forget(self, conn: Connection, what: Forgotten) -> dict[str, int]:
        """Remove or scrub everything about ``what``; returns counts per table."""
        ...

    def forget_user(self, conn: Connection, user_id: str, tombstone: str) -> dict[str, int]:
        """Remove every row of the user; where a row must stay (another user's run
        that merely mentions the user), put ``tombstone`` in place of the id."""
        ...


def load_erasers() -> list[Eraser]:
    """Every registered eraser, in name order. A registration that cannot be loaded
    raises :class:`~memstrata.errors.StorageError` (an erasure never skips a table)."""
    out: list[Eraser] = []
    for ep in sorted(entry_points(group=ERASER_GROUP), key=lambda e: e.name):
        try:
            factory = ep.load()
        except ImportError as exc:
            raise StorageError(f"the eraser {ep.name!r} ({ep.value}) cannot be loaded: "
                               f"{exc}; nothing was erased") from exc
        eraser = factory()
        if not isinstance(eraser, Eraser):
            raise StorageError(f"{ep.value} is not an Eraser")
        out.append(eraser)
    if not out:
        raise StorageError(f"no erasers are registered under {ERASER_GROUP!r}: memstrata is "
                           "not installed as a package (pip install -e .)")
    return out


def user_tombstone(user_id: str, salt: str) -> str:
    """A stand-in for an erased user id: a keyed hash (the database's own id as the key),
    so whoever knows the id can check it was erased, but the records do not hold it."""
    digest = hashlib.sha256(f"{salt}\x1f{user_id}".encode()).hexdigest()[:24]
    return f"erased:{digest}"


def scrubbable(texts: Iterable[str]) -> tuple[str, ...]:
    """The texts worth scrubbing elsewhere, unique, longest first."""
    unique = {t.strip() for t in texts if isinstance(t, str)}
    return tuple(sorted((t for t in unique if len(t) >= MIN_SCRUB_CHARS),
                        key=lambda t: (-len(t), t)))


def contains(value: Any, texts: Sequence[str]) -> bool:
    """Does any string inside ``value`` (text or JSON) contain one of ``texts``?"""
    if isinstance(value, str):
        return any(t in value for t in texts)
    if isinstance(value, dict):
        return any(contains(k, texts) or contains(v, texts) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(contains(v, texts) for v in value)
    return False


def scrub(value: Any, texts: Sequence[str], replacement: str = REDACTED) -> Any:
    """``value`` (text or JSON) with every occurrence of ``texts`` replaced by
    ``replacement`` (keys too)."""
    if isinstance(value, str):
        for t in texts:
            if t in value:
                value = value.replace(t, replacement)
        return value
    if isinstance(value, dict):
        return {scrub(k, texts, replacement): scrub(v, texts, replacement)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, texts, replacement) for v in value]
    return value
