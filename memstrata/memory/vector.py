"""The vector-index seam and the shapes every derived index shares.

A derived index (vector or keyword) is a per-user materialised view of the SQL
records: it holds the retrievable records (active, demoted, pending) and
knows the ``(generation, seq)`` watermark of the SQL state it reflects. The
manager brings it up to date by applying the rows changed above its watermark
(:mod:`memstrata.memory._sync`); a backend never reads SQL itself, and losing
an index loses nothing - ``memstrata reindex`` rebuilds it.

Built-in backends register under the entry-point group
``memstrata.vector_backends`` (``local``, ``weaviate``), the same hook a third
party uses; :func:`load_backend` resolves a name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from memstrata import _plugins
from memstrata.errors import InvalidSettingError
from memstrata.memory._store import IndexRow
from memstrata.memory.embedder import Vectors

__all__ = [
    "BACKEND_GROUP",
    "DerivedIndex",
    "Fence",
    "Hit",
    "IndexBatch",
    "IndexRow",
    "SearchFilter",
    "VectorIndex",
    "Watermark",
    "available_backends",
    "load_backend",
]

BACKEND_GROUP = "memstrata.vector_backends"


@dataclass(frozen=True, slots=True)
class Watermark:
    """The SQL state an index reflects: user generation and change sequence."""

    generation: str
    seq: int


@dataclass(frozen=True, slots=True)
class IndexBatch:
    """Changes to apply: rows to add or replace, ids to remove, the new watermark."""

    upserts: Sequence[IndexRow]
    removals: Sequence[str]
    watermark: Watermark


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Restrict a search to some scopes and/or types (``None`` = all)."""

    scopes: frozenset[str] | None = None
    types: frozenset[str] | None = None

    def admits(self, scope: str, kind: str) -> bool:
        return (self.scopes is None or scope in self.scopes) and (
            self.types is None or kind in self.types
        )


NO_FILTER = SearchFilter()


#: asked before a derived index writes a user's state to disk: does SQL still hold
#: the user at this watermark's generation? (an erased user's shard is never written back)
Fence = Callable[[str, "Watermark | None"], bool]


class Hit(NamedTuple):
    id: str
    score: float


@runtime_checkable
class DerivedIndex(Protocol):
    """What the sync needs from any derived index."""

    def watermark(self, user_id: str) -> Watermark | None:
        """The SQL state this index reflects for the user; ``None`` if it has nothing."""
        ...

    def apply(self, user_id: str, batch: IndexBatch, *, reset: bool = False) -> None:
        """Apply changes (idempotent); ``reset`` first drops everything of the user."""
        ...

    def drop_user(self, user_id: str) -> None:
        """Forget everything about the user, in memory and on disk."""
        ...

    def loaded(self, user_id: str) -> bool:
        """Does this process hold the user's entries in memory right now?"""
        ...

    def erase(self, user_id: str, ids: Sequence[str], watermark: Watermark | None) -> None:
        """Remove these records for good, now, wherever the index keeps them (memory,
        files, server); set ``watermark`` when given (the index was current)."""
        ...

    def set_fence(self, fence: Fence) -> None:
        """Install the check made before persisting a user's state (see :data:`Fence`)."""
        ...

    def flush(self) -> None:
        """Persist pending state (a crash before this loses nothing but catch-up time)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class VectorIndex(DerivedIndex, Protocol):
    """Nearest-neighbour search over one user's vectors."""

    @property
    def dim(self) -> int: ...

    def search(
        self, user_id: str, queries: Vectors, k: int, where: SearchFilter = NO_FILTER
    ) -> list[list[Hit]]:
        """Top-``k`` by inner product for each query row (vectors are unit length)."""
        ...


def available_backends() -> dict[str, Any]:
    """The entry points of ``memstrata.vector_backends``, by name (not loaded)."""
    return _plugins.available(BACKEND_GROUP)


def load_backend(name: str) -> type[Any]:
    """The class registered under ``name`` in ``memstrata.vector_backends``.

    There is no fallback: the built-ins are found like any plugin, so an install
    without its entry points (run ``pip install -e .``) fails here, loudly. A
    backend that is not installed as a package is passed to
    :class:`~memstrata.MemoryManager` as an instance (``vector_index=``).
    """
    found = _plugins.find(BACKEND_GROUP, name)
    if found is None:
        raise InvalidSettingError(
            f"unknown vector backend {name!r}; available: {sorted(available_backends())} "
            f"(entry-point group {BACKEND_GROUP!r}; or pass an instance as vector_index=)"
        )
    loaded = found.load()
    return loaded  # type: ignore[no-any-return]
