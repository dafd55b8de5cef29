"""Long-term memory: per user and scope, structured plus vector.

Writes go: validate -> screen by the write policy (cheap drops need no
embedding) -> embed -> find near neighbours in the vector index -> one SQL
transaction that locks the user, reads the exact facts (slot values, exact
duplicates), asks the write policy and writes -> hand the committed change to
the derived indexes. A failure before commit leaves nothing behind; the
indexes only ever learn about committed rows.

Recall goes: dense and keyword candidates from the indexes -> one SQL read of
the user's state and the candidates' rows (status, expiry, the exact user) ->
if SQL has moved past what the indexes reflect (another process wrote), catch
up and rank again -> fuse, threshold, decay, weight -> top-k -> count the use.
Indexes that are not loaded yet are synced before the search.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

import numpy as np

from memstrata import _text
from memstrata._progress import Progress, ProgressBar
from memstrata.clock import Clock, from_epoch, to_epoch
from memstrata.config import Settings
from memstrata.errors import (
    DimensionMismatchError,
    EmbeddingError,
    InvalidInputError,
    MemoryNotFoundError,
    ModelMismatchError,
    NotInConflictError,
    StorageError,
)
from memstrata.memory import _store, ranking
from memstrata.memory._db import Database
from memstrata.memory._keyword import KeywordIndex
from memstrata.memory._lifecycle import RecordTxn, activated, superseded
from memstrata.memory._store import UserState, index_text
from memstrata.memory._sync import IndexSync
from memstrata.memory._validate import (
    SLOT_PART_WIDTH,
    check_flag,
    check_input,
    check_limit,
    check_memory_id,
    check_number,
    check_query,
    check_scopes,
    check_statuses,
    check_text,
    check_types,
    check_user,
)
from memstrata.memory._writer import PreparedWrite, WriteTxn, candidate_of
from memstrata.memory.embedder import (
    CachingEmbedder,
    Embedder,
    Vectors,
    embed_queries,
    embed_with_sentences,
)
from memstrata.memory.rerank import Reranker, apply_reranker
from memstrata.memory.vector import SearchFilter, VectorIndex, Watermark
from memstrata.policies import language
from memstrata.policies.possessions import asked_possession
from memstrata.policies.retrieval import (
    MAX_TOP_K,
    RetrievalPolicy,
    about_the_user,
    asked_attribute,
)
from memstrata.policies.temporal import TemporalQuery, read_query
from memstrata.policies.write import screen
from memstrata.reading import from_stored, load_reader
from memstrata.reading.stance import STANCE_KEY, needs_stance, stance_of
from memstrata.reading.stance import to_stored as stance_stored
from memstrata.types import (
    RETRIEVABLE,
    USER_SUBJECT,
    MemoryInput,
    MemoryRecord,
    MemoryType,
    RecallHit,
    Status,
    WriteDecision,
)

__all__ = ["LongTermMemory", "PartialWriteError"]

WRITE_CHUNK = 256
log = logging.getLogger("memstrata")
_RETRIEVABLE_VALUES = [s.value for s in RETRIEVABLE]
#: lookup subjects that name the speaker, whose facts are stored with subject "user"
_SELF_SUBJECTS = frozenset({USER_SUBJECT, "me", "i"})
#: profile slots (subject "user") whose value is the user's own name
NAME_ATTRIBUTES = ("name", "preferred name", "preferred_name")
#: the registry's attributes of the user's names (as stored readings name them)
_READ_NAMES = ("name", "preferred_name")


#: the threads that read what a question asks for while it is embedded (one pool per
#: process: a pool does not survive a fork)
_ASK_POOL: tuple[int, ThreadPoolExecutor] | None = None
_ASK_POOL_LOCK = threading.Lock()


def _asking(ask: Callable[[str], str | None], query: str) -> Future[str | None]:
    """``ask(query)``, started on another thread."""
    global _ASK_POOL
    with _ASK_POOL_LOCK:
        if _ASK_POOL is None or _ASK_POOL[0] != os.getpid():
            _ASK_POOL = (os.getpid(), ThreadPoolExecutor(
                max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="memstrata-ask"))
        pool = _ASK_POOL[1]
    return pool.submit(ask, query)


class PartialWriteError(StorageError):
    """A batch failed part-way: ``decisions`` holds the chunks that were committed."""

    def __init__(self, message: str, decisions: list[WriteDecision]) -> None:
        super().__init__(message)
        self.decisions = decisions


class LongTermMemory:
    def __init__(
        self,
        *,
        db: Database,
        embedder: Embedder,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        sync: IndexSync,
        settings: Settings,
        clock: Clock,
    ) -> None:
        self._db = db
        self._embedder = embedder
        self._vectors = vectors
        self._keywords = keywords
        self._sync = sync
        self._settings = settings
        self._clock = clock
        #: user id -> (the watermark it was read at, the user's own names)
        self._names: dict[str, tuple[Watermark, tuple[str, ...]]] = {}

    # ------------------------------------------------------------ write

    def coerce(self, item: MemoryInput | str | dict[str, Any], **fields: Any) -> MemoryInput:
        return check_input(
            item,
            fields,
            limit=self._settings.max_content_chars,
            allowed_scopes=self._settings.scopes,
        )

    def remember(
        self, user_id: str, item: MemoryInput | str | dict[str, Any], *,
        read: Callable[[Sequence[MemoryInput]], list[MemoryInput]] | None = None,
        **fields: Any,
    ) -> WriteDecision:
        """Offer one memory to the write policy; returns its decision."""
        return self.remember_many(user_id, [self.coerce(item, **fields)], read=read)[0]

    def remember_many(
        self,
        user_id: str,
        items: Iterable[MemoryInput | str | dict[str, Any]],
        *,
        progress: Progress = False,
        read: Callable[[Sequence[MemoryInput]], list[MemoryInput]] | None = None,
    ) -> list[WriteDecision]:
        """Offer a batch; one decision per item, in order.

        Every item is validated before anything is written. Items are stored in
        transactions of ``WRITE_CHUNK``; if storage fails part-way,
        :class:`PartialWriteError` carries the decisions of the committed chunks.
        ``read`` (the manager's) stores a reader's readings with each chunk's items
        before it is written.
        """
        user_id = check_user(user_id)
        if isinstance(items, str | bytes | dict | MemoryInput) or not isinstance(items, Iterable):
            raise InvalidInputError("remember_many takes a collection of memories")
        inputs = [self.coerce(item) for item in items]
        decisions: list[WriteDecision] = []
        with ProgressBar(progress, len(inputs), "remember") as bar:
            for start in range(0, len(inputs), WRITE_CHUNK):
                chunk = inputs[start : start + WRITE_CHUNK]
                if read is not None:
                    chunk = read(chunk)
                try:
                    decisions.extend(self._write_chunk(user_id, chunk))
                except StorageError as exc:
                    if not decisions:
                        raise
                    raise PartialWriteError(
                        f"{len(decisions)} of {len(inputs)} items were committed before: {exc}",
                        decisions,
                    ) from exc
                bar.advance(len(chunk))
        return decisions

    def _write_chunk(self, user_id: str, chunk: Sequence[MemoryInput]) -> list[WriteDecision]:
        out: list[WriteDecision | None] = [None] * len(chunk)
        candidates = [candidate_of(item) for item in chunk]
        todo: list[int] = []
        for i, candidate in enumerate(candidates):
            early = screen(candidate, self._settings.write)
            if early is None:
                todo.append(i)
            else:
                out[i] = WriteDecision(early.outcome, early.reason)
        if todo:
            self._synced(user_id)
            # whose and when each statement is, read once now: recall reads it stored
            chunk = list(chunk)
            for i in todo:
                chunk[i] = _with_stance(chunk[i])
            texts = [_indexed(chunk[i]) for i in todo]
            vectors, parts = self._embed_with_sentences(
                texts, [chunk[i].content for i in todo],
                with_sentences=self._settings.write.sentence_vectors)
            prepared = [
                PreparedWrite(chunk[i], candidates[i], vectors[j], parts[j])
                for j, i in enumerate(todo)
            ]
            self._find_near(user_id, prepared)
            now = to_epoch(self._clock.now())
            with self._db.write() as conn:
                before = _store.lock_user(conn, user_id, now)
                self._check_model(user_id, before)
                txn = WriteTxn(
                    conn=conn,
                    user_id=user_id,
                    state=before,
                    now=now,
                    model=self._embedder.name,
                    write_policy=self._settings.write,
                    conflict_policy=self._settings.conflict,
                    retention=self._settings.retention,
                )
                txn.prefetch(prepared)
                for j, i in enumerate(todo):
                    out[i] = txn.write(prepared[j])
                after = txn.finish()
            self._sync.apply_own(user_id, before, after, txn.upserts, txn.removals)
        return [d for d in out if d is not None]

    def _find_near(self, user_id: str, prepared: list[PreparedWrite]) -> None:
        threshold = self._settings.write.duplicate_similarity
        by_scope: dict[str, list[int]] = {}
        for i, p in enumerate(prepared):
            if p.item.slot is None:
                by_scope.setdefault(p.item.scope, []).append(i)
        for scope, idxs in by_scope.items():
            matrix = np.vstack([prepared[i].vector for i in idxs])
            results = self._vectors.search(
                user_id, matrix, 3, SearchFilter(scopes=frozenset({scope}))
            )
            for i, hits in zip(idxs, results, strict=True):
                prepared[i].near = [(h.id, h.score) for h in hits if h.score >= threshold]

    def _embed_with_sentences(self, texts: Sequence[str], contents: Sequence[str], *,
                              with_sentences: bool = True
                              ) -> tuple[Vectors, list[Vectors | None]]:
        """:func:`~memstrata.memory.embedder.embed_with_sentences`, checked against the
        index (every vector the embedder returned, of the index's dimension)."""
        matrix, parts = embed_with_sentences(self._embedder, texts, contents,
                                             with_sentences=with_sentences)
        for block in (matrix, *(part for part in parts if part is not None)):
            if len(block):
                self._checked(block, len(block))
        return matrix, parts

    def _checked(self, vectors: np.ndarray, n: int) -> np.ndarray:
        """Embedder output must be (n, index dim); anything else changes nothing."""
        if vectors.ndim != 2 or vectors.shape[0] != n:
            raise EmbeddingError(f"embedder returned shape {vectors.shape} for {n} texts")
        if vectors.shape[1] != self._vectors.dim:
            raise DimensionMismatchError(int(vectors.shape[1]), self._vectors.dim)
        return vectors

    def _check_model(self, user_id: str, state: UserState | None) -> None:
        if state is not None and state.embed_model not in (None, self._embedder.name):
            raise ModelMismatchError(user_id, state.embed_model, self._embedder.name)

    def _synced(self, user_id: str) -> UserState | None:
        """The user's SQL state with the indexes brought up to it - the model is
        checked first: another model's vectors have another dimension, and syncing
        them into this process's indexes would report that (a
        :class:`DimensionMismatchError`) instead of the cause, a reindex by a newer
        model (:class:`ModelMismatchError`)."""
        state = self._sync.state(user_id)
        self._check_model(user_id, state)
        return self._sync.ensure(user_id, state)

    # ------------------------------------------------------------ recall

    def recall(
        self,
        user_id: str,
        query: str,
        *,
        scope: str | Iterable[str] | None = None,
        types: MemoryType | str | Iterable[MemoryType | str] | None = None,
        k: int | None = None,
        min_relevance: float | None = None,
        policy: RetrievalPolicy | None = None,
        record_use: bool = True,
        reranker: Reranker | None = None,
        display_name: str | None = None,
    ) -> list[RecallHit]:
        """The few memories most worth showing for ``query``, best first.

        ``scope=None`` searches every scope of the user; pass a scope (or several)
        to keep scenes apart. ``record_use=False`` makes a read-only recall (no
        access count, no expiry extension) - evaluations use it so the order of
        questions cannot change the answers. A ``reranker`` gets the best
        ``policy.candidates`` hits and its answer is cut to ``top_k``
        (:mod:`memstrata.memory.rerank`); only what it returns counts as used.

        A question that names the user - ``display_name`` (the application's name
        for the user) or the value of the user's ``name`` profile slot - is read as
        a question about the user (:func:`~memstrata.policies.retrieval.about_the_user`).
        A temporal or aggregate question is gated at the policy's
        ``temporal_min_relevance`` (unless ``min_relevance`` is passed) and a date
        range it names ranks with time (:mod:`memstrata.policies.temporal`).
        Superseded values are not recalled; :meth:`history` shows them.
        """
        user_id = check_user(user_id)
        check_query(query)
        if display_name is not None:
            check_text(display_name, "display_name", max_len=SLOT_PART_WIDTH)
        scopes = check_scopes(scope, self._settings.scopes)
        kinds = check_types(types)
        check_flag(record_use, "record_use")
        if policy is not None and not isinstance(policy, RetrievalPolicy):
            raise InvalidInputError("policy must be a RetrievalPolicy")
        if reranker is not None and not callable(getattr(reranker, "rerank", None)):
            raise InvalidInputError("a reranker has a rerank(query, hits) method")
        policy = policy or self._settings.retrieval
        if k is not None:
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_TOP_K:
                raise InvalidInputError(f"k must be an integer in 1..{MAX_TOP_K}")
            policy = replace(policy, top_k=k)
        if min_relevance is not None:
            min_relevance = check_number(min_relevance, "min_relevance", 0.0, 1.0)
            policy = replace(policy, min_relevance=min_relevance)
        policy = self._fit_language(policy, query, gate=min_relevance is None)
        seen = self._index_watermark(user_id)
        if seen is None:  # indexes not loaded (or not agreeing): sync before searching
            state = self._synced(user_id)
            if state is None:
                return []
            seen = Watermark(state.generation, state.seq)
        # a reranker chooses among more than top_k
        cut = policy.top_k if reranker is None else max(policy.candidates, policy.top_k)
        names = self._user_names(user_id, seen)
        if display_name is not None:
            names = (*names, display_name)
        if names:
            query = about_the_user(query, names)
        when = read_query(query, self._clock.now())
        if when.keeps_evidence and min_relevance is None:
            policy = replace(policy, min_relevance=policy.gate_for(keeps_evidence=True))
        # what the question asks for is read while it is embedded: each is an encoder's
        # forward pass on one thread, and ONNX Runtime lets go of the GIL while it runs
        asking = _asking(self._asked, query) if policy.answer_asked else None
        try:
            qvec = self._checked(embed_queries(self._embedder, [query]), 1)[0]
        finally:
            if asking is not None:
                wait([asking])  # never left running (an embedding error is raised as is)
        asked = asking.result() if asking is not None else None
        hits, state = self._rank(user_id, query, qvec, scopes, kinds, policy, cut, when,
                                 asked)
        if state is None:
            return []
        self._check_model(user_id, state)
        if Watermark(state.generation, state.seq) != seen:
            # SQL moved on since the indexes were synced (another process wrote):
            # catch up and rank again against the current state
            self._sync.ensure(user_id, state)
            hits, _ = self._rank(user_id, query, qvec, scopes, kinds, policy, cut, when,
                                 asked)
        if reranker is not None and hits:
            hits = apply_reranker(reranker, query, hits, policy.top_k)
        if record_use and hits:
            hits = self._record_use(user_id, hits)
        return hits

    def _user_names(self, user_id: str, seen: Watermark) -> tuple[str, ...]:
        """The user's names: the values of their name profile slots, and the names their
        own statements were read to state (``remember("My name is Priya")`` stores the
        reading, not a slot); read once per change of SQL."""
        cache = self._names
        found = cache.get(user_id)
        if found is not None and found[0] == seen:
            return found[1]
        statuses = [Status.ACTIVE.value, Status.PENDING_CONFIRMATION.value]
        with self._db.read() as conn:
            rows = [row for attribute in NAME_ATTRIBUTES
                    for row in _store.list_rows(conn, user_id, scopes=None, types=None,
                                                statuses=statuses, limit=5,
                                                subject=USER_SUBJECT, attribute=attribute)]
            stating = _store.stating_rows(conn, user_id, _READ_NAMES, statuses=statuses,
                                          limit=5)
        said = [r.value for row in stating
                for r in from_stored((row.metadata or {}).get("readings"))
                if r.attribute in _READ_NAMES and r.current_own]
        names = tuple(dict.fromkeys([*(str(r.value) for r in rows if r.value), *said]))
        if len(cache) > 4096:
            cache.clear()
        cache[user_id] = (seen, names)
        return names

    def _fit_language(self, policy: RetrievalPolicy, query: str, *, gate: bool = True
                      ) -> RetrievalPolicy:
        """The dense weight and the gate for the scripts of ``query`` that the model
        covers (:mod:`memstrata.policies.language`, :meth:`RetrievalPolicy.for_coverage`);
        ``gate`` False keeps a gate the caller set."""
        scripts = language.model_scripts(self._embedder.name, getattr(self._embedder, "scripts",
                                                                      None),
                                         says=hasattr(self._embedder, "scripts"))
        weight = language.dense_weight_for(policy.dense_weight, query, scripts,
                                           getattr(self._embedder, "dense_boost", None))
        covered = language.covered_share(query, scripts)
        if not gate:
            return policy if weight == policy.dense_weight else replace(
                policy, dense_weight=weight)
        return policy.for_coverage(weight, covered)

    def _index_watermark(self, user_id: str) -> Watermark | None:
        """The SQL state both derived indexes reflect, if they agree (no SQL read)."""
        mark = self._vectors.watermark(user_id)
        return mark if mark is not None and self._keywords.watermark(user_id) == mark else None

    def candidates(
        self,
        user_id: str,
        query: str,
        qvec: np.ndarray,
        where: SearchFilter,
        n: int,
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Raw dense and keyword candidate scores (id -> score), ``n`` from each.

        The low-level hook under :meth:`recall` (evaluations compare fusions on
        it): no status, expiry or decay is applied and no use is recorded.
        """
        user_id = check_user(user_id)
        state = self._synced(user_id)
        if state is None:
            return {}, {}
        return self._candidates(user_id, query, qvec, where, n)

    def _candidates(
        self,
        user_id: str,
        query: str,
        qvec: np.ndarray,
        where: SearchFilter,
        n: int,
    ) -> tuple[dict[str, float], dict[str, float]]:
        dense = {h.id: h.score for h in self._vectors.search(user_id, qvec[None, :], n, where)[0]}
        terms = _text.tokenize(query)
        hits, extra = self._keywords.search_with(user_id, terms, n, where, also=list(dense))
        keyword = {h.id: h.score for h in hits}
        keyword.update(extra)
        return dense, keyword

    def _rank(
        self,
        user_id: str,
        query: str,
        qvec: np.ndarray,
        scopes: frozenset[str] | None,
        kinds: frozenset[MemoryType] | None,
        policy: RetrievalPolicy,
        cut: int,
        when: TemporalQuery | None = None,
        asked: str | None = None,
    ) -> tuple[list[RecallHit], UserState | None]:
        """Rank the candidates through the stages of :mod:`memstrata.memory.ranking`;
        returns the best ``cut`` hits and the user's SQL state they were read with
        (recall compares it with what the indexes had synced). One SQL read - the user's
        state and the candidates' rows in one transaction - fetches everything.
        ``asked``: the user's attribute the query asks for (:meth:`_asked`), if any."""
        where = SearchFilter(scopes, None if kinds is None else frozenset(k.value for k in kinds))
        n = max(policy.candidates, policy.top_k)
        dense, keyword = self._candidates(user_id, query, qvec, where, n)
        with self._db.read() as conn:
            found = ranking.gather(conn, user_id, list(dict.fromkeys([*dense, *keyword])),
                                   asked, scopes, policy)
        candidates = ranking.score(found.rows, dense, keyword, qvec, policy, where,
                                   self._clock.now(), self._settings.retention)
        ranking.gate(candidates, found.answers, qvec, policy)
        kept = ranking.order_by_currency(candidates, policy, cut, when=when, query=query,
                                         answers=found.answers)
        return ranking.cut(kept, cut), found.state

    def _asked(self, query: str) -> str | None:
        """The attribute of the user's own that ``query`` asks for now - a profile fact
        ("Which city do I live in?") or a thing of the user's named by its make or
        provider ("what kind of oil should I buy for my car?"; not "What phone did I have
        before?") - as the configured
        reader reads it (the model reads "我在哪个学校上学？" where the rules read nothing);
        a question for the past or for someone else's value asks for no current slot. Where
        the reader reads no attribute asked, the rules' reading of a request that needs one
        ("hiking spots within an hour of where I live", "motor oil for my car") stands:
        the rules are the model's fallback."""
        reader = load_reader(self._settings.reader)
        asked = None if reader.name == "rules" else reader.ask(query)
        if asked is None:
            return asked_attribute(query) or asked_possession(query)
        if asked.whose != "user" or asked.time != "current":
            return None
        return asked.attribute

    #: the last attempt to record a use failed (warned once; see :meth:`_record_use`)
    _use_unrecorded = False

    def _record_use(self, user_id: str, hits: list[RecallHit]) -> list[RecallHit]:
        """Count the use and extend expiries - best effort: a failed write leaves
        the hits as they are (access count and expiry unchanged)."""
        now_dt = self._clock.now()
        now = to_epoch(now_dt)
        retention = self._settings.retention
        updates = []
        for hit in hits:
            rec = hit.record
            extended = retention.extended(rec.type, rec.expires_at, now_dt)
            updates.append((rec.id, None if extended is None else to_epoch(extended)))
        try:
            with self._db.write() as conn:
                _store.touch(conn, user_id, updates, now)
        except StorageError as exc:
            # reads keep working when writes cannot (a full disk, a read-only
            # database): the hits are returned as they were; one warning per run of
            # failures, not one per recall
            if not self._use_unrecorded:
                self._use_unrecorded = True
                log.warning("recall could not record the use of its hits: %s", exc)
            return hits
        self._use_unrecorded = False
        out = []
        for hit, (_, expires) in zip(hits, updates, strict=True):
            rec = replace(
                hit.record,
                last_accessed_at=now_dt,
                access_count=hit.record.access_count + 1,
                expires_at=None if expires is None else from_epoch(expires),
            )
            out.append(replace(hit, record=rec))
        return out

    # ------------------------------------------------------------ read by id / fields

    def get(self, user_id: str, memory_id: str) -> MemoryRecord:
        user_id = check_user(user_id)
        memory_id = check_memory_id(memory_id)
        with self._db.read() as conn:
            row = _store.fetch(conn, user_id, [str(memory_id)]).get(str(memory_id))
        if row is None:
            raise MemoryNotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
        return _store.row_to_record(row)

    def history(self, user_id: str, memory_id: str) -> list[MemoryRecord]:
        """The supersession chain through this record, oldest first."""
        user_id = check_user(user_id)
        memory_id = check_memory_id(memory_id)
        with self._db.read() as conn:
            ids = _store.chain_ids(conn, user_id, str(memory_id))
            if not ids:
                raise MemoryNotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
            rows = _store.fetch(conn, user_id, ids)
        return [_store.row_to_record(rows[i]) for i in ids if i in rows]

    def lookup(
        self,
        user_id: str,
        *,
        subject: str | None = None,
        attribute: str | None = None,
        scope: str | Iterable[str] | None = None,
        include_pending: bool = True,
        limit: int = 100,
    ) -> list[MemoryRecord]:
        """Structured facts matched by fields (not by similarity), newest first.

        The speaker's own facts have the subject ``"user"`` (what ``observe``
        stores). A ``subject`` naming the speaker - ``"user"``, ``"me"``, ``"i"``
        or ``user_id`` itself, any case - matches those, and also facts stored
        under the user id literally.
        """
        user_id = check_user(user_id)
        if subject is None and attribute is None:
            raise InvalidInputError("lookup needs a subject, an attribute or both")
        for what, part in (("subject", subject), ("attribute", attribute)):
            if part is not None:
                check_text(part, what, max_len=SLOT_PART_WIDTH)
        check_flag(include_pending, "include_pending")
        limit, _ = check_limit(limit)
        statuses = [Status.ACTIVE.value, Status.DEMOTED.value]
        if include_pending:
            statuses.append(Status.PENDING_CONFIRMATION.value)
        scopes = check_scopes(scope, self._settings.scopes)
        subjects: list[str | None] = [subject]
        if subject is not None and subject.strip().casefold() in _SELF_SUBJECTS:
            subjects = [USER_SUBJECT]
        elif subject is not None and subject.strip().casefold() == user_id.strip().casefold():
            subjects = [USER_SUBJECT, subject]
        with self._db.read() as conn:
            rows = [
                row
                for name in subjects
                for row in _store.list_rows(
                    conn,
                    user_id,
                    scopes=None if scopes is None else sorted(scopes),
                    types=None,
                    statuses=statuses,
                    limit=limit,
                    subject=name,
                    attribute=attribute,
                )
            ]
        records = [_store.row_to_record(r) for r in rows]
        if len(subjects) > 1:
            records.sort(key=lambda r: (-r.valid_from.timestamp(), r.id))
        return records[:limit]

    def list_records(
        self,
        user_id: str,
        *,
        scope: str | Iterable[str] | None = None,
        types: MemoryType | str | Iterable[MemoryType | str] | None = None,
        statuses: Status | str | Iterable[Status | str] = tuple(RETRIEVABLE),
        limit: int = 100,
        offset: int = 0,
        pinned: bool | None = None,
    ) -> list[MemoryRecord]:
        """Browse records, newest first (``pinned`` filters on the pin flag)."""
        user_id = check_user(user_id)
        limit, offset = check_limit(limit, offset)
        if pinned is not None:
            check_flag(pinned, "pinned")
        scopes = check_scopes(scope, self._settings.scopes)
        kinds = check_types(types)
        wanted = check_statuses(statuses)
        with self._db.read() as conn:
            rows = _store.list_rows(
                conn,
                user_id,
                scopes=None if scopes is None else sorted(scopes),
                types=None if kinds is None else sorted(k.value for k in kinds),
                statuses=sorted(s.value for s in wanted),
                limit=limit,
                offset=offset,
                pinned=pinned,
            )
        return [_store.row_to_record(r) for r in rows]

    def conflicts(
        self, user_id: str, *, scope: str | Iterable[str] | None = None
    ) -> list[list[MemoryRecord]]:
        """Open conflicts: groups of pending records, oldest first within a group."""
        records = self.list_records(
            user_id, scope=scope, statuses=[Status.PENDING_CONFIRMATION], limit=10_000,
            types=None,
        )
        groups: dict[str, list[MemoryRecord]] = {}
        for rec in records:
            groups.setdefault(rec.conflict_group or rec.id, []).append(rec)
        return [sorted(g, key=lambda r: (r.valid_from, r.id)) for g in groups.values()]

    # ------------------------------------------------------------ change by id

    def forget_cached(self, texts: Sequence[str] | None) -> None:
        """Drop forgotten texts (``None``: everything) from the embedder's cache."""
        if isinstance(self._embedder, CachingEmbedder):
            self._embedder.forget_cached(texts)

    def pin(self, user_id: str, memory_id: str, pinned: bool = True) -> MemoryRecord:
        """Pinned records never expire and do not decay."""
        user_id = check_user(user_id)
        memory_id = check_memory_id(memory_id)
        check_flag(pinned, "pinned")
        now = to_epoch(self._clock.now())
        with self._db.write() as conn:
            txn = RecordTxn(conn, now)
            found = txn.lock(user_id) and txn.set(
                user_id, str(memory_id), "pinned" if pinned else "unpinned",
                "pinned by the caller" if pinned else "unpinned by the caller",
                {"pinned": pinned, "updated_at": now})
            if not found:
                raise MemoryNotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
            txn.flush()
        return self.get(user_id, memory_id)

    def resolve_conflict(
        self,
        user_id: str,
        keep: str,
        *,
        keep_others: bool = False,
        reason: str = "confirmed by the user",
    ) -> MemoryRecord:
        """Settle a pending conflict in favour of ``keep``.

        The other pending records of the group are superseded by it (kept as
        history), or with ``keep_others=True`` all become active (both were true).
        """
        user_id = check_user(user_id)
        keep = check_memory_id(keep, "keep (a memory id)")
        check_flag(keep_others, "keep_others")
        check_text(reason, "the reason")
        now = to_epoch(self._clock.now())
        removals: list[str] = []
        with self._db.write() as conn:
            txn = RecordTxn(conn, now)
            row = _store.fetch(conn, user_id, [str(keep)]).get(str(keep)) \
                if txn.lock(user_id) else None
            if row is None:
                raise MemoryNotFoundError(f"no memory {keep!r} for user {user_id!r}")
            if row.status != Status.PENDING_CONFIRMATION.value or not row.conflict_group:
                raise NotInConflictError(f"memory {keep!r} is not part of a pending conflict")
            before = txn.touched[user_id][0]
            others = [
                r for r in _store.group_rows(conn, user_id, row.conflict_group)
                if r.id != row.id and r.status == Status.PENDING_CONFIRMATION.value
            ]
            latest_other: Any = None
            for other in others:
                if keep_others:
                    txn.set(user_id, other.id, "conflict_resolved", reason, activated(now))
                    continue
                txn.set(user_id, other.id, "superseded", reason, superseded(
                    by=row.id, by_valid_from=float(row.valid_from),
                    own_valid_from=float(other.valid_from), now=now))
                removals.append(other.id)
                if latest_other is None or other.valid_from > latest_other.valid_from:
                    latest_other = other
            values: dict[str, Any] = activated(now)
            if latest_other is not None and row.supersedes is None:
                values["supersedes"] = latest_other.id
            txn.set(user_id, row.id, "confirmed", reason, values)
            txn.flush()
            after = replace(before, seq=txn.touched[user_id][1])
        self._sync.apply_own(user_id, before, after, (), removals)
        return self.get(user_id, keep)

    # ------------------------------------------------------------ maintenance

    def reindex(self, user_id: str, *, progress: Progress = False) -> dict[str, int]:
        """Re-embed what the current model did not embed, then rebuild the indexes."""
        user_id = check_user(user_id)
        model = self._embedder.name
        with self._db.read() as conn:
            todo = self._needing_embedding(conn, user_id, model,
                                           self._settings.write.sentence_vectors)
        new_vectors: dict[str, tuple[bytes, bytes | None]] = {}
        new_sentences: dict[str, bytes] = {}
        with ProgressBar(progress, len(todo), f"re-embed {user_id}") as bar:
            for start in range(0, len(todo), WRITE_CHUNK):
                part = todo[start : start + WRITE_CHUNK]
                self._reembed(part, new_vectors, new_sentences)
                bar.advance(len(part))
        now = to_epoch(self._clock.now())
        with self._db.write() as conn:
            state = _store.lock_user(conn, user_id, now)
            late = [row for row in self._needing_embedding(
                        conn, user_id, model, self._settings.write.sentence_vectors)
                    if row[0] not in new_vectors and row[0] not in new_sentences]
            if late:
                self._reembed(late, new_vectors, new_sentences)
            _store.replace_vectors(conn, user_id, model, self._embedder.dim, new_vectors)
            _store.set_sentences(conn, user_id, new_sentences)
            _store.set_user_model(conn, user_id, model if state.seq or new_vectors else None)
            if new_vectors:
                # other processes' indexes hold the old vectors: make them rebuild
                _store.new_generation(conn, user_id)
        records = self._sync.rebuild(user_id)
        return {"reembedded": len(new_vectors), "sentences_added": len(new_sentences),
                "indexed": records}

    @staticmethod
    def _needing_embedding(conn: Any, user_id: str, model: str, sentences: bool
                           ) -> list[tuple[str, str, str, bool]]:
        """Records to embed: without this model's vector, or with it but without the
        vectors of their sentences (written before they were stored; not with
        ``sentences`` False)."""
        return [row for row in _store.rows_needing_embedding(conn, user_id, model)
                if row[3] or (sentences and _text.sentences(row[2]))]

    def _reembed(self, rows: Sequence[tuple[str, str, str, bool]],
                 new_vectors: dict[str, tuple[bytes, bytes | None]],
                 new_sentences: dict[str, bytes]) -> None:
        """Embed ``rows`` (:meth:`_needing_embedding`): a whole record where it needs
        a vector, its sentences only where its vector stays."""
        whole = [row for row in rows if row[3]]
        only = [row for row in rows if not row[3]]
        matrix, parts = self._embed_with_sentences(
            [row[1] for row in whole], [row[2] for row in whole],
            with_sentences=self._settings.write.sentence_vectors)
        for row, vector, sentences in zip(whole, matrix, parts, strict=True):
            new_vectors[row[0]] = (_store.encode_vector(vector), None if sentences is None
                                   else _store.encode_vector(sentences))
        _, added = self._embed_with_sentences([], [row[2] for row in only])
        for row, sentences in zip(only, added, strict=True):
            if sentences is not None:
                new_sentences[row[0]] = _store.encode_vector(sentences)


def _with_stance(item: MemoryInput) -> MemoryInput:
    """``item`` with the :class:`~memstrata.reading.stance.Stance` of its text in its
    metadata, where :func:`~memstrata.reading.stance.needs_stance` says one is to be
    stored (a ``stance`` key of the caller's own is left as it is)."""
    if not needs_stance(item.metadata, item.content):
        return item
    stance = stance_stored(stance_of(item.content), item.content)
    return item.model_copy(update={"metadata": {**item.metadata, STANCE_KEY: stance}})


def _indexed(item: MemoryInput) -> str:
    slot = item.slot
    return index_text(
        item.content, item.context,
        slot.subject if slot else None, slot.attribute if slot else None,
        slot.value if slot else None,
    )


