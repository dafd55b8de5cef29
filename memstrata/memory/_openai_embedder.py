"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint.

For deployments that already run an embedding service (OpenAI, vLLM, Ollama,
text-embeddings-inference behind an OpenAI-compatible route). The same LRU
cache as the local embedder saves repeated queries. The dimension is learned
from the first response unless given; ``name`` is ``"<model>:<dim>"`` so a
change of model or dimension is detected like any other.

Token counts for context budgets are an estimate (about 0.75 words per token):
there is no tokenizer for an arbitrary remote model offline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from memstrata import telemetry
from memstrata.errors import EmbeddingError, InvalidSettingError
from memstrata.memory.embedder import EmbeddingCache, Vectors, normalize_rows

__all__ = ["OpenAIEmbedder"]

DEFAULT_BATCH = 128


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = DEFAULT_BATCH,
        cache_size: int = 20_000,
        timeout: float = 60.0,
    ) -> None:
        if not model:
            raise InvalidSettingError("an embedding model name is required")
        import openai

        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=2
        )
        self._model = model
        self._dim = dim
        self._batch = batch_size
        self._cache = EmbeddingCache(cache_size)

    @property
    def name(self) -> str:
        return f"{self._model}:{self.dim}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def count_tokens(self, text: str) -> int:
        return math.ceil(len(text.split()) / 0.75)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        with telemetry.span(f"embeddings {self._model}",
                            {"gen_ai.operation.name": "embeddings",
                             "gen_ai.request.model": self._model},
                            texts=len(texts)) as sp:
            cached = dict(zip(texts, self._cache.get_many(texts), strict=True))
            found = {t: v for t, v in cached.items() if v is not None}
            missing = [t for t, v in cached.items() if v is None]
            for start in range(0, len(missing), self._batch):
                part = missing[start : start + self._batch]
                vectors = self._request(part)
                self._cache.put_many(part, list(vectors))
                found.update(zip(part, vectors, strict=True))
            sp.set(encoded=len(missing), requests=-(-len(missing) // self._batch))
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.ascontiguousarray(np.vstack([found[t] for t in texts]), dtype=np.float32)

    def forget_cached(self, texts: Sequence[str] | None) -> None:
        self._cache.forget(texts)

    def _request(self, texts: list[str]) -> Vectors:
        o = self._openai
        try:
            response: Any = self._client.embeddings.create(model=self._model, input=texts)
        except (o.APIError, o.OpenAIError) as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc}") from exc
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise EmbeddingError(f"endpoint returned {len(data)} vectors for {len(texts)} texts")
        matrix = normalize_rows(np.asarray([d.embedding for d in data], dtype=np.float32))
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise EmbeddingError(
                f"endpoint returned dimension {matrix.shape[1]}, expected {self._dim}"
            )
        return matrix
