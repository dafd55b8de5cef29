"""The OpenAI-compatible embedder against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from memstrata import MemoryManager
from memstrata.errors import EmbeddingError
from memstrata.memory._openai_embedder import OpenAIEmbedder
from memstrata.memory.embedder import Embedder
from memstrata.testing import OpenAICompatServer


@pytest.fixture
def server(embedder: Embedder) -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer(embedder=embedder, api_key="sk-test") as s:
        yield s


def test_vectors_match_the_model_behind_the_endpoint(server: OpenAICompatServer,
                                                     embedder: Embedder):
    remote = OpenAIEmbedder(model="minilm", base_url=server.base_url, api_key="sk-test")
    assert remote.dim == 384 and remote.name == "minilm:384"
    vectors = remote.embed(["hello world", "window seats", "hello world"])
    local = embedder.embed(["hello world", "window seats", "hello world"])
    assert np.allclose(vectors, local, atol=1e-5)
    before = len(server.requests)
    remote.embed(["hello world"])  # cached
    assert len(server.requests) == before


def test_endpoint_errors_are_typed(server: OpenAICompatServer):
    with pytest.raises(EmbeddingError):
        OpenAIEmbedder(model="m", base_url=server.base_url, api_key="wrong").embed(["x"])
    with pytest.raises(EmbeddingError):
        OpenAIEmbedder(model="m", base_url="http://127.0.0.1:9/v1").embed(["x"])


def test_manager_runs_on_the_remote_embedder(server: OpenAICompatServer, sqlite_url: str):
    remote = OpenAIEmbedder(model="minilm", base_url=server.base_url, api_key="sk-test")
    with MemoryManager.open(sqlite_url, embedder=remote) as mm:
        mm.remember("u", "I prefer window seats", type="preference")
        assert mm.recall("u", "which seat?")[0].content == "I prefer window seats"
