"""Keyword retrieval: a per-user BM25 index, derived from SQL like the vectors.

Why not SQLite FTS5 / PostgreSQL full text: BM25 statistics here are per user
(a tenant's rare word is rare *for that tenant*), ranking is identical on both
SQL backends, and the index syncs, persists and rebuilds through the same
watermark mechanism as the vector index. Terms come from
:func:`memstrata._text.tokenize` (stop words removed, English Snowball stems,
CJK unigrams + bigrams).

Postings are append-only arrays; deletions clear an ``alive`` flag and the
shard is compacted when a quarter of it is dead, and always before it is
written to disk.

The corpus statistics (how many documents, their mean length, how many hold a term)
count the records people said or were told, not the summaries the nightly jobs write:
a summary repeats its turns' words, so counting it would make those words look common
and change every other memory's keyword score each time a job runs (a nightly job must
never make recall worse, and a forgotten turn's words must not linger in the
statistics of the summaries built from it). A summary is scored with the same
statistics; a shard of summaries alone counts them.

A user's store is small at first (a dozen memories), and a word's IDF in a corpus that small
is compressed: the keyword signal the hybrid fuses (its saturation tuned on stores of
hundreds of memories) comes out weak, and the same question ranks differently as the
store grows. IDF is read as if the store held at least ``BM25.min_docs`` memories, the
ones it lacks holding none of the query's words; a store at least that large is scored
by the textbook formula.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memstrata._text import tokenize
from memstrata.memory._shards import (
    DamagedFileError,
    ShardCache,
    ShardedIndex,
    read_checked,
    write_checked,
)
from memstrata.memory.vector import NO_FILTER, Hit, IndexBatch, IndexRow, SearchFilter, Watermark
from memstrata.types import MemoryType

__all__ = ["BM25", "KeywordIndex"]

#: 2: the npz behind the self-checking header of :func:`write_checked`
_FORMAT = 2
_KIND = b"bm25"
#: what a payload that passed its checksum may still raise while it is parsed
_PARSE_ERRORS = (OSError, EOFError, ValueError, KeyError, TypeError, IndexError,
                 OverflowError, zipfile.BadZipFile)
_COMPACT_DEAD_SHARE = 0.25
_COMPACT_MIN_DEAD = 64
#: the types of record the corpus statistics leave out (see the module docstring)
_UNCOUNTED = frozenset({MemoryType.SUMMARY.value})


class BM25:
    """BM25 parameters (Okapi): term saturation ``k1`` and length normalisation ``b``."""

    __slots__ = ("b", "k1", "min_docs")

    def __init__(self, k1: float = 1.2, b: float = 0.75, min_docs: int = 0) -> None:
        if k1 < 0 or not 0.0 <= b <= 1.0 or min_docs < 0:
            raise ValueError("BM25 needs k1 >= 0, 0 <= b <= 1 and min_docs >= 0")
        self.k1 = k1
        self.b = b
        #: the corpus size IDF is read at, at least (see the module docstring)
        self.min_docs = min_docs


class KeywordShard:
    def __init__(self) -> None:
        self.docs: list[str] = []
        self.doc_pos: dict[str, int] = {}
        self.lengths = array("I")
        self.alive = bytearray()
        self.scope_codes = array("H")
        self.type_codes = array("B")
        self.scope_names: dict[str, int] = {}
        self.type_names: dict[str, int] = {}
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        self.n_alive = 0
        self.total_len = 0
        #: the live documents the statistics count (not summaries) and their length
        self.n_counted = 0
        self.counted_len = 0
        self.watermark: Watermark | None = None
        self.unsaved = 0

    def count(self) -> int:
        return self.n_alive

    def apply(self, batch: IndexBatch) -> None:
        if batch.removals:
            self.remove(batch.removals)
        self.upsert(batch.upserts)

    def nbytes(self) -> int:
        postings = sum(len(d) * 6 + 100 for d, _ in self.postings.values())
        return len(self.docs) * 120 + postings + 4096

    @staticmethod
    def _code(names: dict[str, int], name: str) -> int:
        return names.setdefault(name, len(names))

    def upsert(self, rows: Sequence[IndexRow]) -> None:
        for row in rows:
            pos = self.doc_pos.get(row.id)
            if pos is not None and self.alive[pos]:
                continue
            # new, or removed earlier and back again (an undo, a revived record): a
            # fresh document; the dead position stays dead until the next compaction
            doc = len(self.docs)
            terms = Counter(tokenize(row.text))
            self.docs.append(row.id)
            self.doc_pos[row.id] = doc
            length = sum(terms.values())
            self.lengths.append(length)
            self.alive.append(1)
            self.scope_codes.append(self._code(self.scope_names, row.scope))
            self.type_codes.append(self._code(self.type_names, row.type))
            for term, tf in terms.items():
                posting = self.postings.get(term)
                if posting is None:
                    posting = (array("I"), array("H"))
                    self.postings[term] = posting
                posting[0].append(doc)
                posting[1].append(min(tf, 65535))
            self.n_alive += 1
            self.total_len += length
            if row.type not in _UNCOUNTED:
                self.n_counted += 1
                self.counted_len += length
            self.unsaved += 1

    def remove(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            doc = self.doc_pos.get(memory_id)
            if doc is None or not self.alive[doc]:
                continue
            self.alive[doc] = 0
            self.n_alive -= 1
            self.total_len -= self.lengths[doc]
            if self._counts(doc):
                self.n_counted -= 1
                self.counted_len -= self.lengths[doc]
            self.unsaved += 1
        dead = len(self.docs) - self.n_alive
        if dead >= _COMPACT_MIN_DEAD and dead > _COMPACT_DEAD_SHARE * len(self.docs):
            self._compact()

    def _counts(self, doc: int) -> bool:
        """Does document ``doc`` count in the corpus statistics?"""
        code = self.type_codes[doc]
        return not any(self.type_names.get(name) == code for name in _UNCOUNTED)

    def _counted_mask(self, alive: np.ndarray) -> np.ndarray:
        """The live documents the statistics count; all live ones where none is counted
        (a shard of summaries alone)."""
        if self.n_counted in (0, self.n_alive):  # no live summary, or nothing but them
            return alive
        codes = [self.type_names[name] for name in _UNCOUNTED if name in self.type_names]
        return alive & ~np.isin(np.frombuffer(self.type_codes, dtype=np.uint8), codes)

    def _compact(self) -> None:
        """Rebuild without dead documents (positions change; ids do not)."""
        old_docs = self.docs
        alive = bytes(self.alive)
        remap = np.full(len(old_docs), -1, dtype=np.int64)
        keep = [d for d in range(len(old_docs)) if alive[d]]
        remap[keep] = np.arange(len(keep))
        self.docs = [old_docs[d] for d in keep]
        self.doc_pos = {memory_id: p for p, memory_id in enumerate(self.docs)}
        self.lengths = array("I", (self.lengths[d] for d in keep))
        self.scope_codes = array("H", (self.scope_codes[d] for d in keep))
        self.type_codes = array("B", (self.type_codes[d] for d in keep))
        self.alive = bytearray(b"\x01" * len(keep))
        postings: dict[str, tuple[array[int], array[int]]] = {}
        for term, (docs, tfs) in self.postings.items():
            d = np.frombuffer(docs, dtype=np.uint32)
            new = remap[d]
            live = new >= 0
            if live.any():
                postings[term] = (
                    array("I", new[live].astype(np.uint32).tobytes()),
                    array("H", np.frombuffer(tfs, dtype=np.uint16)[live].tobytes()),
                )
        self.postings = postings

    def _filter_mask(self, where: SearchFilter) -> np.ndarray:
        mask = np.frombuffer(self.alive, dtype=np.uint8).astype(bool)
        if where.scopes is not None:
            codes = [self.scope_names[s] for s in where.scopes if s in self.scope_names]
            mask &= np.isin(np.frombuffer(self.scope_codes, dtype=np.uint16), codes)
        if where.types is not None:
            codes = [self.type_names[t] for t in where.types if t in self.type_names]
            mask &= np.isin(np.frombuffer(self.type_codes, dtype=np.uint8), codes)
        return mask

    def scores(self, terms: Sequence[str], params: BM25, mask: np.ndarray) -> np.ndarray:
        n = len(self.docs)
        out = np.zeros(n, dtype=np.float32)
        if self.n_alive == 0:
            return out
        alive = np.frombuffer(self.alive, dtype=np.uint8).astype(bool)
        counted = self._counted_mask(alive)
        n, total = (self.n_counted, self.counted_len) if self.n_counted else \
            (self.n_alive, self.total_len)
        lengths = np.frombuffer(self.lengths, dtype=np.uint32)
        avgdl = max(total / n, 1.0)
        corpus = max(n, params.min_docs)
        k1, b = params.k1, params.b
        for term in dict.fromkeys(terms):
            posting = self.postings.get(term)
            if posting is None:
                continue
            docs = np.frombuffer(posting[0], dtype=np.uint32)
            live = alive[docs]
            if not live.any():
                continue
            df = int(counted[docs].sum())
            idf = math.log(1.0 + (corpus - df + 0.5) / (df + 0.5))
            tf = np.frombuffer(posting[1], dtype=np.uint16).astype(np.float32)
            norm = k1 * (1.0 - b + b * lengths[docs] / avgdl)
            out[docs] += np.where(live, idf * tf * (k1 + 1.0) / (tf + norm), 0.0)
        out[~mask] = 0.0
        return out

    def search(
        self, terms: Sequence[str], k: int, params: BM25, where: SearchFilter,
        also: Sequence[str] = (),
    ) -> tuple[list[Hit], dict[str, float]]:
        """Top-``k`` hits, and the scores of the ``also`` ids outside them (one pass)."""
        if not terms or not self.docs:
            return [], {}
        scores = self.scores(terms, params, self._filter_mask(where))
        nonzero = np.flatnonzero(scores)
        if nonzero.size == 0:
            return [], {}
        if nonzero.size > k:
            top = nonzero[np.argpartition(-scores[nonzero], k - 1)[:k]]
        else:
            top = nonzero
        top = top[np.argsort(-scores[top], kind="stable")]
        hits = [Hit(self.docs[d], float(scores[d])) for d in top]
        extra: dict[str, float] = {}
        if also:
            found = {h.id for h in hits}
            for memory_id in also:
                pos = self.doc_pos.get(memory_id)
                if memory_id not in found and pos is not None and scores[pos] > 0:
                    extra[memory_id] = float(scores[pos])
        return hits, extra

    def score_ids(self, terms: Sequence[str], ids: Sequence[str], params: BM25) -> dict[str, float]:
        if not terms:
            return {}
        positions = [self.doc_pos[i] for i in ids if i in self.doc_pos]
        if not positions:
            return {}
        mask = np.zeros(len(self.docs), dtype=bool)
        mask[positions] = True
        scores = self.scores(terms, params, mask)
        return {self.docs[p]: float(scores[p]) for p in positions if scores[p] > 0}

    def save(self, path: Path) -> None:
        """Write the shard. Removed documents are compacted away first: a file never
        keeps the terms of a record that left the index (a forgotten one above all)."""
        if self.n_alive != len(self.docs):
            self._compact()
        terms = list(self.postings)
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        for i, term in enumerate(terms):
            offsets[i + 1] = offsets[i] + len(self.postings[term][0])
        all_docs = np.empty(int(offsets[-1]), dtype=np.uint32)
        all_tfs = np.empty(int(offsets[-1]), dtype=np.uint16)
        for i, term in enumerate(terms):
            docs, tfs = self.postings[term]
            all_docs[offsets[i] : offsets[i + 1]] = np.frombuffer(docs, dtype=np.uint32)
            all_tfs[offsets[i] : offsets[i + 1]] = np.frombuffer(tfs, dtype=np.uint16)
        state = {
            "format": _FORMAT,
            "scopes": list(self.scope_names),
            "types": list(self.type_names),
            "generation": self.watermark.generation if self.watermark else None,
            "seq": self.watermark.seq if self.watermark else None,
        }
        buffer = io.BytesIO()
        np.savez(
            buffer,
            state=np.frombuffer(json.dumps(state).encode("utf-8"), dtype=np.uint8),
            docs=np.asarray(self.docs, dtype="S32"),
            lengths=np.frombuffer(self.lengths, dtype=np.uint32),
            alive=np.frombuffer(bytes(self.alive), dtype=np.uint8),
            scope_codes=np.frombuffer(self.scope_codes, dtype=np.uint16),
            type_codes=np.frombuffer(self.type_codes, dtype=np.uint8),
            terms=np.frombuffer("\x00".join(terms).encode("utf-8"), dtype=np.uint8),
            offsets=offsets,
            all_docs=all_docs,
            all_tfs=all_tfs,
        )
        write_checked(path, _KIND, _FORMAT, buffer.getvalue())

    @classmethod
    def load(cls, path: Path) -> KeywordShard | None:
        """The shard saved at ``path``; ``None`` for a file of another format.

        Raises :class:`DamagedFileError` for a file that fails its checksum or
        does not hold together (postings past the documents, arrays of different
        lengths, codes without names...): searching it would fail or mislead.
        """
        payload = read_checked(path, _KIND, _FORMAT)
        if payload is None:
            return None
        try:
            with np.load(io.BytesIO(payload), allow_pickle=False) as data:
                return cls._from_arrays(data)
        except _PARSE_ERRORS as exc:
            raise DamagedFileError(f"unreadable payload: {exc}") from exc

    @classmethod
    def _from_arrays(cls, data: Any) -> KeywordShard:
        state = json.loads(bytes(data["state"]).decode("utf-8"))
        shard = cls()
        shard.docs = [raw.decode("ascii") for raw in data["docs"]]
        shard.doc_pos = {memory_id: p for p, memory_id in enumerate(shard.docs)}
        shard.lengths = array("I", data["lengths"].astype(np.uint32).tobytes())
        shard.alive = bytearray(data["alive"].astype(np.uint8).tobytes())
        shard.scope_codes = array("H", data["scope_codes"].astype(np.uint16).tobytes())
        shard.type_codes = array("B", data["type_codes"].astype(np.uint8).tobytes())
        shard.scope_names = {str(name): i for i, name in enumerate(state["scopes"])}
        shard.type_names = {str(name): i for i, name in enumerate(state["types"])}
        raw_terms = bytes(data["terms"]).decode("utf-8")
        terms = raw_terms.split("\x00") if raw_terms else []
        offsets = data["offsets"].astype(np.int64)
        all_docs = data["all_docs"].astype(np.uint32)
        all_tfs = data["all_tfs"].astype(np.uint16)
        problem = _inconsistency(shard, terms, offsets, all_docs, all_tfs)
        if problem is not None:
            raise DamagedFileError(f"inconsistent: {problem}")
        for i, term in enumerate(terms):
            lo, hi = int(offsets[i]), int(offsets[i + 1])
            shard.postings[term] = (
                array("I", all_docs[lo:hi].tobytes()),
                array("H", all_tfs[lo:hi].tobytes()),
            )
        alive = np.frombuffer(shard.alive, dtype=np.uint8).astype(bool)
        shard.n_alive = int(alive.sum())
        lengths = np.frombuffer(shard.lengths, dtype=np.uint32)
        shard.total_len = int(lengths[alive].sum(dtype=np.int64))
        codes = [shard.type_names[name] for name in _UNCOUNTED if name in shard.type_names]
        counted = alive & ~np.isin(data["type_codes"].astype(np.uint8), codes)
        shard.n_counted = int(counted.sum())
        shard.counted_len = int(lengths[counted].sum(dtype=np.int64))
        if state.get("generation") is not None:
            shard.watermark = Watermark(str(state["generation"]), int(state["seq"]))
        return shard


def _inconsistency(
    shard: KeywordShard, terms: list[str], offsets: np.ndarray, all_docs: np.ndarray,
    all_tfs: np.ndarray,
) -> str | None:
    """What makes a parsed shard unusable, or ``None`` (cheap: vectorised checks)."""
    n = len(shard.docs)
    if len(shard.doc_pos) != n:
        return "a document appears twice"
    sizes = {len(shard.lengths), len(shard.alive), len(shard.scope_codes),
             len(shard.type_codes)}
    if sizes != {n}:
        return "per-document arrays of different lengths"
    if len(set(terms)) != len(terms) or len(offsets) != len(terms) + 1:
        return "terms and offsets disagree"
    if len(all_docs) != len(all_tfs) or (len(offsets) and (
            offsets[0] != 0 or offsets[-1] != len(all_docs) or np.any(np.diff(offsets) < 0))):
        return "posting offsets out of order"
    if len(all_docs) and int(all_docs.max()) >= n:
        return "postings point past the documents"
    if n and (int(np.frombuffer(shard.scope_codes, dtype=np.uint16).max())
              >= len(shard.scope_names)
              or int(np.frombuffer(shard.type_codes, dtype=np.uint8).max())
              >= len(shard.type_names)):
        return "scope or type codes without a name"
    if n and int(np.frombuffer(shard.alive, dtype=np.uint8).max()) > 1:
        return "alive flags other than 0 and 1"
    return None


class KeywordIndex(ShardedIndex[KeywordShard]):
    """Per-user BM25 over the indexed text of retrievable records."""

    def __init__(
        self,
        *,
        directory: Path | None,
        memory_budget_bytes: int = 512 * 1024**2,
        params: BM25 | None = None,
        save_every: int = 2000,
    ) -> None:
        self.params = params or BM25()
        self._cache: ShardCache[KeywordShard] = ShardCache(
            directory=None if directory is None else Path(directory) / "keyword",
            suffix="bm25.npz",
            budget_bytes=memory_budget_bytes,
            load=lambda path, _user: KeywordShard.load(path),
            create=KeywordShard,
            save_every=save_every,
        )

    def _empty(self) -> KeywordShard:
        return KeywordShard()

    def search(
        self, user_id: str, query: str | Sequence[str], k: int, where: SearchFilter = NO_FILTER
    ) -> list[Hit]:
        """Top-``k`` records by BM25 (``query`` as text, or as already tokenised terms)."""
        return self.search_with(user_id, query, k, where)[0]

    def search_with(
        self, user_id: str, query: str | Sequence[str], k: int,
        where: SearchFilter = NO_FILTER, also: Sequence[str] = (),
    ) -> tuple[list[Hit], dict[str, float]]:
        """:meth:`search`, plus the BM25 of the ``also`` records outside the top ``k``
        (absent when they do not match) - recall's dense candidates, scored in the
        same pass instead of a second one."""
        terms = tokenize(query) if isinstance(query, str) else list(query)
        with self._cache.locked(user_id):
            shard = self._cache.peek(user_id)
            if shard is None:
                return [], {}
            return shard.search(terms, k, self.params, where, also)

    def score_ids(
        self, user_id: str, query: str | Sequence[str], ids: Sequence[str]
    ) -> dict[str, float]:
        """BM25 of specific records (records without a match are absent)."""
        terms = tokenize(query) if isinstance(query, str) else list(query)
        with self._cache.locked(user_id):
            shard = self._cache.peek(user_id)
            if shard is None:
                return {}
            return shard.score_ids(terms, ids, self.params)
