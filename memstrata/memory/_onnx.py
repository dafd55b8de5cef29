"""A faster path for single-text embeddings: the same model, run by ONNX Runtime.

Measured on this machine (one thread, all-MiniLM-L6-v2, a ~12-token query):
PyTorch eager p50 11.9 ms, ONNX Runtime p50 5.3 ms, cosine between the two
vectors >= 0.9999997. A recall and an ``observe`` are dominated by exactly this
one encode, so it halves their latency.

The ONNX graph is exported from the loaded sentence-transformers model (its
transformer plus mean pooling and L2 normalisation) on first use and cached in
``$XDG_CACHE_HOME/memstrata/models/`` (default ``~/.cache/memstrata/models``;
``MEMSTRATA_MODEL_CACHE`` overrides); nothing is downloaded. Before it is used it must
reproduce the PyTorch vectors on probe texts of several lengths (cosine >=
0.99999); if the export, the check or ONNX Runtime itself is unavailable, the
embedder silently keeps using PyTorch. Batches always use PyTorch (two threads,
padding) - this path is for the one-text calls on the latency-critical path.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["OnnxSingleEncoder", "default_cache_dir"]

_OPSET = 17
_PROBES = (
    "hi",
    "What did Caroline research about adoption agencies last week?",
    " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 30),
)
_MIN_COSINE = 0.99999


def default_cache_dir() -> Path:
    """Where exported models are cached (read from the environment when called)."""
    if os.environ.get("MEMSTRATA_MODEL_CACHE"):
        return Path(os.environ["MEMSTRATA_MODEL_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memstrata" / "models"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _fingerprint(model_dir: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(model_dir.rglob("*")):
        if path.is_file():
            stat = path.stat()
            h.update(f"{path.relative_to(model_dir)}:{stat.st_size}".encode())
    for package in ("torch", "transformers", "sentence-transformers", "onnxruntime"):
        h.update(f"{package}={_version(package)}".encode())
    h.update(f"opset={_OPSET}".encode())
    return h.hexdigest()[:24]


class OnnxSingleEncoder:
    """Encodes one text with ONNX Runtime; build with :meth:`create` (None if unusable)."""

    def __init__(self, session: Any, model: Any, input_names: list[str]) -> None:
        self._session = session
        self._model = model
        self._inputs = input_names

    @classmethod
    def create(cls, model: Any, model_dir: Path, cache_dir: Path) -> OnnxSingleEncoder | None:
        """Export (or load the cached export), check it against PyTorch, or return None."""
        try:
            import onnxruntime as ort
        except ImportError:
            return None
        if not _is_mean_pooled(model):
            return None
        path = cache_dir / f"{model_dir.name}-{_fingerprint(model_dir)}.onnx"
        try:
            if not path.exists():
                _export(model, path)
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            names = [i.name for i in session.get_inputs()]
            encoder = cls(session, model, names)
            if not encoder._matches_torch():
                path.unlink(missing_ok=True)
                return None
            return encoder
        except (OSError, RuntimeError, ValueError, ImportError, TypeError):
            path.unlink(missing_ok=True)
            return None

    def encode(self, text: str) -> np.ndarray:
        features = _features(self._model, text)
        feed = {name: features[name].numpy().astype(np.int64) for name in self._inputs}
        out = self._session.run(None, feed)[0]
        return np.asarray(out, dtype=np.float32)

    def _matches_torch(self) -> bool:
        import torch

        for text in _PROBES:
            with torch.inference_mode():
                reference = self._model.encode([text], normalize_embeddings=True,
                                               convert_to_numpy=True, show_progress_bar=False)
            ours = self.encode(text)
            cosine = float(np.dot(reference[0], ours[0]) / (
                np.linalg.norm(reference[0]) * np.linalg.norm(ours[0])))
            if cosine < _MIN_COSINE:
                return False
        return True


def _is_mean_pooled(model: Any) -> bool:
    """Only the transformer -> mean pooling (-> normalize) layout is exported."""
    modules = list(model)
    if len(modules) not in (2, 3) or not hasattr(modules[0], "auto_model"):
        return False
    pooling = modules[1]
    mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers >= 6
    if isinstance(mode, str):
        return mode == "mean"
    others = [getattr(pooling, m, False) for m in (
        "pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")]
    return bool(getattr(pooling, "pooling_mode_mean_tokens", False)) and not any(others)


def _features(model: Any, text: str) -> Any:
    prepare = getattr(model, "preprocess", None) or model.tokenize
    return prepare([text])


def _export(model: Any, path: Path) -> None:
    import torch

    transformer = model[0].auto_model

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    sample = _features(model, _PROBES[1])
    args = tuple(sample[name] for name in ("input_ids", "attention_mask", "token_type_ids"))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled().eval(),
            args,
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "token_type_ids": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
            opset_version=_OPSET,
            dynamo=False,
        )
    os.replace(tmp, path)
