"""The embedded vector backend: exact search over one contiguous matrix per user.

Measured on this 2-core machine (384-d, one thread, see
``benchmarks/bench_index.py``): faiss' flat float16 scan runs at the memory
bandwidth limit - about 0.2 ms for 10k vectors and 3.3 ms for 100k - and is
exact, so there is no approximate index to tune or to be wrong (HNSW recall
collapses on hard data; filtered HNSW is fast but wrong). Float16 halves the
memory of float32 at no measurable loss of ranking; ``precision="float32"``
is available.

Each user's matrix is persisted (``<index_dir>/vectors/…``) so a restart
re-embeds nothing, loaded on demand, and kept in an LRU bounded by
``memory_budget_bytes``. Each query runs on one thread: two-thread BLAS calls
stall in ~4 ms steps under load; concurrency comes from the callers' threads.
"""

from __future__ import annotations

import io
import json
import zipfile
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import faiss
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.errors import DimensionMismatchError, IndexBackendError
from memstrata.memory._shards import (
    DamagedFileError,
    ShardCache,
    ShardedIndex,
    read_checked,
    write_checked,
)
from memstrata.memory.embedder import Vectors
from memstrata.memory.vector import (
    NO_FILTER,
    Hit,
    IndexBatch,
    IndexRow,
    SearchFilter,
    Watermark,
)

__all__ = ["LocalIndexOptions", "LocalVectorIndex"]

Precision = Literal["float16", "float32"]
#: 2: the npz behind the self-checking header of :func:`write_checked`
_FORMAT = 2
_KIND = b"vecs"
#: what a payload that passed its checksum may still raise while it is parsed
_PARSE_ERRORS = (OSError, EOFError, ValueError, KeyError, TypeError, IndexError,
                 OverflowError, zipfile.BadZipFile)
#: a filter admitting at least this share of rows is applied after an over-fetch
_POST_FILTER_SHARE = 0.5


class LocalIndexOptions(BaseModel):
    """Options of the local backend; unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    precision: Precision = "float16"
    memory_budget_bytes: int = Field(default=2 * 1024**3, gt=0)
    save_every: int = Field(default=2000, gt=0)


class _Codes:
    """Small-int codes for scope / type names, persisted with the shard."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self.names: list[str] = list(names)
        self.index = {name: i for i, name in enumerate(self.names)}

    def code(self, name: str) -> int:
        found = self.index.get(name)
        if found is None:
            found = len(self.names)
            self.names.append(name)
            self.index[name] = found
        return found

    def codes(self, names: frozenset[str]) -> list[int]:
        return [self.index[n] for n in names if n in self.index]


class VectorShard:
    """One user's vectors: a faiss flat index plus ids and filter codes."""

    def __init__(self, dim: int, precision: Precision) -> None:
        self.dim = dim
        self.precision = precision
        self.index: Any = _new_faiss_index(dim, precision)
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.scope_codes = array("H")
        self.type_codes = array("B")
        self.scopes = _Codes()
        self.types = _Codes()
        self.watermark: Watermark | None = None
        self.unsaved = 0

    def count(self) -> int:
        return len(self.ids)

    def apply(self, batch: IndexBatch) -> None:
        try:
            if batch.removals:
                self.remove(batch.removals)
            self.upsert(batch.upserts)
        except (RuntimeError, MemoryError) as exc:
            raise IndexBackendError(f"local vector index update failed: {exc}") from exc

    def nbytes(self) -> int:
        width = 2 if self.precision == "float16" else 4
        return len(self.ids) * (self.dim * width + 120) + 4096

    def upsert(self, rows: Sequence[IndexRow]) -> None:
        fresh = [r for r in rows if r.vector is not None and r.id not in self.pos]
        if not fresh:
            return
        matrix = np.vstack([r.vector for r in fresh if r.vector is not None]).astype(
            np.float32, copy=False
        )
        if matrix.shape[1] != self.dim:
            raise DimensionMismatchError(matrix.shape[1], self.dim)
        self.index.add(np.ascontiguousarray(matrix))
        for row in fresh:
            self.pos[row.id] = len(self.ids)
            self.ids.append(row.id)
            self.scope_codes.append(self.scopes.code(row.scope))
            self.type_codes.append(self.types.code(row.type))
        self.unsaved += len(fresh)

    def remove(self, ids: Sequence[str]) -> None:
        positions = sorted({self.pos[i] for i in ids if i in self.pos})
        if not positions:
            return
        selector = faiss.IDSelectorBatch(np.asarray(positions, dtype=np.int64))
        self.index.remove_ids(selector)
        keep = np.ones(len(self.ids), dtype=bool)
        keep[positions] = False
        self.ids = [i for i, k in zip(self.ids, keep, strict=True) if k]
        self.pos = {memory_id: p for p, memory_id in enumerate(self.ids)}
        self.scope_codes = array("H", np.frombuffer(self.scope_codes, dtype=np.uint16)[keep])
        self.type_codes = array("B", np.frombuffer(self.type_codes, dtype=np.uint8)[keep])
        self.unsaved += len(positions)

    def _mask(self, where: SearchFilter) -> np.ndarray | None:
        mask: np.ndarray | None = None
        if where.scopes is not None:
            scopes = np.frombuffer(self.scope_codes, dtype=np.uint16)
            mask = np.isin(scopes, self.scopes.codes(where.scopes))
        if where.types is not None:
            types = np.frombuffer(self.type_codes, dtype=np.uint8)
            type_mask = np.isin(types, self.types.codes(where.types))
            mask = type_mask if mask is None else mask & type_mask
        return mask

    def search(self, queries: Vectors, k: int, where: SearchFilter) -> list[list[Hit]]:
        n = len(self.ids)
        if n == 0 or k <= 0:
            return [[] for _ in range(len(queries))]
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        mask = self._mask(where)
        if mask is None:
            return self._plain(queries, min(k, n))
        admitted = int(mask.sum())
        if admitted == 0:
            return [[] for _ in range(len(queries))]
        k = min(k, admitted)
        if admitted >= _POST_FILTER_SHARE * n:
            fetch = min(n, max(k * 4, int(k * n / admitted) + k))
            scores, positions = self.index.search(queries, fetch)
            out: list[list[Hit]] = []
            for row_s, row_p in zip(scores, positions, strict=True):
                valid = row_p >= 0
                row_s, row_p = row_s[valid], row_p[valid]
                keep = mask[row_p]
                row_s, row_p = row_s[keep][:k], row_p[keep][:k]
                if len(row_p) < k:
                    break
                out.append([Hit(self.ids[p], float(s)) for s, p in zip(row_s, row_p,
                                                                         strict=True)])
            else:
                return out
        bitmap = np.packbits(mask, bitorder="little")
        params = faiss.SearchParameters()
        params.sel = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bitmap))
        scores, positions = self.index.search(queries, k, params=params)
        return self._hits(scores, positions)

    def _plain(self, queries: Vectors, k: int) -> list[list[Hit]]:
        scores, positions = self.index.search(queries, k)
        return self._hits(scores, positions)

    def _hits(self, scores: np.ndarray, positions: np.ndarray) -> list[list[Hit]]:
        ids = self.ids
        return [
            [Hit(ids[p], float(s)) for s, p in zip(row_s, row_p, strict=True) if p >= 0]
            for row_s, row_p in zip(scores, positions, strict=True)
        ]

    def save(self, path: Path) -> None:
        codes = faiss.vector_to_array(self.index.codes)
        state = {
            "format": _FORMAT,
            "dim": self.dim,
            "precision": self.precision,
            "scopes": self.scopes.names,
            "types": self.types.names,
            "generation": self.watermark.generation if self.watermark else None,
            "seq": self.watermark.seq if self.watermark else None,
        }
        buffer = io.BytesIO()
        np.savez(
            buffer,
            state=np.frombuffer(json.dumps(state).encode("utf-8"), dtype=np.uint8),
            codes=codes,
            ids=np.asarray(self.ids, dtype="S32"),
            scope_codes=np.frombuffer(self.scope_codes, dtype=np.uint16),
            type_codes=np.frombuffer(self.type_codes, dtype=np.uint8),
        )
        write_checked(path, _KIND, _FORMAT, buffer.getvalue())

    @classmethod
    def load(cls, path: Path, dim: int, precision: Precision) -> VectorShard | None:
        """The shard saved at ``path``; ``None`` for another format, dimension or
        precision (a model change: rebuilt). :class:`DamagedFileError` for a file
        that fails its checksum or does not hold together."""
        payload = read_checked(path, _KIND, _FORMAT)
        if payload is None:
            return None
        try:
            with np.load(io.BytesIO(payload), allow_pickle=False) as data:
                state = json.loads(bytes(data["state"]).decode("utf-8"))
                if state["dim"] != dim or state["precision"] != precision:
                    return None
                shard = cls(dim, precision)
                codes = np.ascontiguousarray(data["codes"], dtype=np.uint8)
                ids = [raw.decode("ascii") for raw in data["ids"]]
                scope_codes = data["scope_codes"].astype(np.uint16)
                type_codes = data["type_codes"].astype(np.uint8)
                scopes, types = _Codes(state["scopes"]), _Codes(state["types"])
                generation, seq = state.get("generation"), state.get("seq")
        except _PARSE_ERRORS as exc:
            raise DamagedFileError(f"unreadable payload: {exc}") from exc
        n = len(ids)
        if codes.size != n * shard.index.code_size:
            raise DamagedFileError("inconsistent: vector bytes do not match the ids")
        if len(set(ids)) != n or len(scope_codes) != n or len(type_codes) != n:
            raise DamagedFileError("inconsistent: per-vector arrays of different lengths")
        if n and (int(scope_codes.max()) >= len(scopes.names)
                  or int(type_codes.max()) >= len(types.names)):
            raise DamagedFileError("inconsistent: scope or type codes without a name")
        faiss.copy_array_to_vector(codes, shard.index.codes)
        shard.index.ntotal = n
        shard.ids = ids
        shard.pos = {memory_id: p for p, memory_id in enumerate(ids)}
        shard.scope_codes = array("H", scope_codes)
        shard.type_codes = array("B", type_codes)
        shard.scopes, shard.types = scopes, types
        if generation is not None:
            try:
                shard.watermark = Watermark(str(generation), int(seq))
            except (TypeError, ValueError) as exc:
                raise DamagedFileError(f"inconsistent: watermark {exc}") from exc
        return shard


def _new_faiss_index(dim: int, precision: Precision) -> Any:
    if precision == "float32":
        return faiss.IndexFlatIP(dim)
    return faiss.IndexScalarQuantizer(
        dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
    )


class LocalVectorIndex(ShardedIndex[VectorShard]):
    """Embedded exact vector index, one shard per user (the default backend)."""

    Options = LocalIndexOptions

    def __init__(
        self,
        *,
        dim: int,
        directory: Path | None,
        options: LocalIndexOptions | None = None,
    ) -> None:
        self._dim = dim
        self.options = options or LocalIndexOptions()
        faiss.omp_set_num_threads(1)
        precision = self.options.precision
        self._cache: ShardCache[VectorShard] = ShardCache(
            directory=None if directory is None else Path(directory) / "vectors",
            suffix=f"{precision}.npz",
            budget_bytes=self.options.memory_budget_bytes,
            load=lambda path, _user: VectorShard.load(path, dim, precision),
            create=lambda: VectorShard(dim, precision),
            save_every=self.options.save_every,
        )

    @property
    def dim(self) -> int:
        return self._dim

    def _empty(self) -> VectorShard:
        return VectorShard(self._dim, self.options.precision)

    def search(
        self, user_id: str, queries: Vectors, k: int, where: SearchFilter = NO_FILTER
    ) -> list[list[Hit]]:
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if queries.shape[1] != self._dim:
            raise DimensionMismatchError(int(queries.shape[1]), self._dim)
        with self._cache.locked(user_id):
            shard = self._cache.peek(user_id)
            if shard is None:
                return [[] for _ in range(len(queries))]
            return shard.search(queries, k, where)
