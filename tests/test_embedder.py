"""The packaged embedder: same vectors on the fast single-text path and the batch path."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memstrata.memory._st_embedder import SentenceTransformerEmbedder

TEXTS = ["hi", "What did Caroline paint last summer?",
         "I prefer window seats on long flights because I like to sleep against the wall.",
         "以后都用支付宝付款", " ".join(["a long memory about gardening and tomatoes"] * 60)]


def test_single_text_path_reproduces_the_batch_vectors(tmp_path: Path):
    fast = SentenceTransformerEmbedder(cache_size=1, onnx_cache_dir=tmp_path)
    assert fast.uses_onnx  # onnxruntime is a dependency; the export must work here
    assert list(tmp_path.glob("*.onnx"))
    batch = fast.embed(TEXTS)  # several texts: the PyTorch path
    for text, reference in zip(TEXTS, batch, strict=True):
        single = fast.embed([text])[0]
        assert abs(float(np.linalg.norm(single)) - 1.0) < 1e-5
        assert float(np.dot(single, reference)) > 0.99999, text
    # a second embedder reuses the cached export
    again = SentenceTransformerEmbedder(cache_size=1, onnx_cache_dir=tmp_path)
    assert again.uses_onnx and len(list(tmp_path.glob("*.onnx"))) == 1


def test_onnx_can_be_switched_off(tmp_path: Path):
    plain = SentenceTransformerEmbedder(cache_size=1, onnx=False, onnx_cache_dir=tmp_path)
    assert not plain.uses_onnx
    assert plain.embed(["hello"]).shape == (1, plain.dim)
    assert not list(tmp_path.glob("*.onnx"))
