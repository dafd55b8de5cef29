"""The one facade: :class:`MemoryManager`.

::

    with MemoryManager.open() as memory:            # SQLite + local index + packaged model
        memory.remember("alice", "I prefer window seats", type="preference", scope="travel")
        hits = memory.recall("alice", "which seat?", scope="travel")

Every call that touches user data takes the user id first; there is no
"current user" state to leak between tenants.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any

from sqlalchemy import select

from memstrata import telemetry
from memstrata._progress import Progress
from memstrata.clock import Clock, SystemClock, to_epoch
from memstrata.config import DEFAULT_EMBEDDER, DEFAULT_SCOPE, Settings, require_existing_store
from memstrata.erasure import load_erasers, user_tombstone
from memstrata.errors import (
    ClosedError,
    IndexPersistError,
    InvalidSettingError,
    MemoryNotFoundError,
)
from memstrata.memory import _store
from memstrata.memory._db import Database
from memstrata.memory._erase import (
    clear_pending,
    pending_cleanups,
    plan_forget,
    record_pending,
    record_user_erased,
    tombstone_salt,
)
from memstrata.memory._keyword import BM25, KeywordIndex
from memstrata.memory._lifecycle import RecordTxn
from memstrata.memory._schema import memory_vectors
from memstrata.memory._sync import IndexSync
from memstrata.memory._validate import (
    REF_WIDTH,
    ROLES,
    check_flag,
    check_memory_id,
    check_text,
    check_user,
)
from memstrata.memory.briefing import (
    DEFAULT_CONFIRMATIONS_K,
    DEFAULT_FRESH_DAYS,
    DEFAULT_LESSONS_K,
    DEFAULT_PROFILE_K,
    Briefing,
    build_briefing,
)
from memstrata.memory.embedder import (
    CachingEmbedder,
    Embedder,
    PreparingEmbedder,
    load_embedder,
)
from memstrata.memory.episodic import EpisodicMemory
from memstrata.memory.formation import Observation, observe
from memstrata.memory.longterm import LongTermMemory
from memstrata.memory.rerank import Reranker
from memstrata.memory.vector import VectorIndex, load_backend
from memstrata.memory.working import WorkingMemory, WorkingMemoryStore
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.reading import Reader, load_reader, to_stored
from memstrata.types import (
    RETRIEVABLE,
    MemoryInput,
    MemoryRecord,
    MemoryType,
    RecallHit,
    Slot,
    Source,
    Status,
    WriteDecision,
)

__all__ = ["ManagerState", "MemoryManager", "default_embedder"]

log = logging.getLogger("memstrata")


class ManagerState(Enum):
    OPEN = "open"
    CLOSED = "closed"


def _forget_text_caches() -> None:
    """The readings the policies cached by text (the contradiction rules', the stemmer's
    words) are dropped with a forgotten memory: recomputing them costs microseconds."""
    from memstrata import _text
    from memstrata.policies import contradiction

    contradiction.forget_cached()
    _text.forget_cached()


@functools.lru_cache(maxsize=4)
def default_embedder(model_path: Path | None = None) -> Embedder:
    """The packaged all-MiniLM-L6-v2 (or the model folder given), shared by the managers
    of this process (it loads lazily). ``default_embedder()`` and
    ``default_embedder(None)`` are the same object."""
    return _shared_embedder(DEFAULT_EMBEDDER,
                            None if model_path is None else Path(model_path).resolve())


@functools.lru_cache(maxsize=4)
def _shared_embedder(name: str, model_path: Path | None) -> Embedder:
    """The embedder registered as ``name`` (``memstrata.embedders``), one per process."""
    if model_path is None:
        return load_embedder(name)
    try:
        return load_embedder(name, model_path=model_path)
    except TypeError as exc:
        raise InvalidSettingError(f"the {name!r} embedder takes no embedding_model") from exc


class MemoryManager:
    """Working, long-term and episodic memory behind one object. Thread-safe."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        vector_index: VectorIndex | None = None,
        clock: Clock | None = None,
    ) -> None:
        if embedder is None:
            # a mistyped name fails here, before the store is created or migrated, not at
            # the first write
            from memstrata import _plugins
            from memstrata.memory.embedder import EMBEDDER_GROUP, available_embedders

            if _plugins.find(EMBEDDER_GROUP, settings.embedder_name) is None:
                raise InvalidSettingError(
                    f"unknown embedder {settings.embedder_name!r}; available: "
                    f"{sorted(available_embedders())} (or pass an instance as embedder=)")
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        assert settings.url is not None
        self.db = Database(settings.url, echo=settings.echo_sql)
        try:
            self.schema_version = self.db.migrate()
        except BaseException:
            self.db.dispose()
            raise
        self._embedder = embedder
        self._vector_index = vector_index
        self._owns_vector_index = vector_index is None
        self._longterm: LongTermMemory | None = None
        self._keywords: KeywordIndex | None = None
        self._sync: IndexSync | None = None
        self._lock = threading.Lock()
        self.state = ManagerState.OPEN
        self.episodic = EpisodicMemory(db=self.db, clock=self.clock)
        try:
            self._finish_erasures()  # a forget_user that crashed before its files went
        except BaseException:
            self.db.dispose()
            raise
        self._working = WorkingMemoryStore(
            clock=self.clock,
            promoter=lambda user_id, item: self.remember(user_id, item),
            max_sessions=settings.working_max_sessions,
            max_entries=settings.working_max_entries,
            ttl_seconds=settings.working_ttl_seconds,
        )

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        embedder: Embedder | None = None,
        vector_index: VectorIndex | None = None,
        clock: Clock | None = None,
        create: bool = True,
        **settings: Any,
    ) -> MemoryManager:
        """Open (and migrate) the memory at ``url``; see :class:`~memstrata.config.Settings`.

        With ``create=False`` a SQLite store that does not exist yet is refused
        (:class:`~memstrata.errors.StoreNotFoundError`, naming the path) instead of being
        created empty: for tools that only read or change what a store holds, where a
        mistyped path would otherwise answer "nothing"."""
        check_flag(create, "create")
        if url is not None:
            settings["url"] = url
        built = Settings.build(**settings)
        if not create:
            require_existing_store(str(built.url))
        return cls(built, embedder=embedder, vector_index=vector_index, clock=clock)

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
            return
        try:  # an error is already on its way out: do not hide it behind this one
            self.close()
        except IndexPersistError as persist:
            log.warning("%s", persist)

    def close(self) -> None:
        """Persist index state and release the database. Idempotent.

        The database is always released. When index files cannot be written (a
        full disk, a read-only or misplaced index directory) every index is still
        closed and then :class:`~memstrata.errors.IndexPersistError` says for how
        many users and why: nothing is lost - SQL holds every record and their
        shards are rebuilt from it on next use - but the next start is slower and
        the operator should know. Leaving a ``with`` block on another exception
        logs it instead (a warning on the ``memstrata`` logger), so the original
        error is the one that propagates.
        """
        with self._lock:
            if self.state is ManagerState.CLOSED:
                return
            self.state = ManagerState.CLOSED
        failed: list[IndexPersistError] = []
        try:
            for index in (self._keywords, self._vector_index):
                if index is None:
                    continue
                try:
                    if index is self._vector_index and not self._owns_vector_index:
                        index.flush()
                    else:
                        index.close()
                except IndexPersistError as exc:
                    failed.append(exc)
        finally:
            self.db.dispose()
        if failed:
            raise IndexPersistError.combine(failed)

    def _check_open(self) -> None:
        if self.state is ManagerState.CLOSED:
            raise ClosedError("the memory manager is closed")

    # ------------------------------------------------------------ parts

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            path = self.settings.embedding_model
            self._embedder = _shared_embedder(self.settings.embedder_name,
                                              None if path is None else Path(path).resolve())
        return self._embedder

    @property
    def reader(self) -> Reader:
        """The reader of meaning ``observe`` uses (``settings.reader``; one per process)."""
        return load_reader(self.settings.reader)

    def _read_stated(self, items: Sequence[MemoryInput]) -> list[MemoryInput]:
        """What the user stated (``source`` user_explicit) is stored with the reader's
        readings of it, as ``observe`` stores a turn's: recall reads them (which
        attribute a memory states, whose, when) and never reads stored text again.

        Items that carry readings already (``observe``'s), or come from elsewhere (a
        tool, an import, the agent), are left as they are; so is everything under the
        rules reader (recall reads those memories with the rules, as before).
        """
        wanted = [i for i, x in enumerate(items)
                  if x.source is Source.USER_EXPLICIT and "readings" not in x.metadata]
        out = list(items)
        if not wanted:
            return out
        reader = self.reader
        if reader.name == "rules":
            return out
        for i in wanted:
            x = items[i]
            stored = to_stored(reader.read(x.content), reader.version)
            out[i] = x.model_copy(update={"metadata": {
                **x.metadata, "read_by": reader.version, "readings": stored}})
        return out

    @property
    def index_dir(self) -> Path | None:
        if self.settings.index_dir is not None:
            return self.settings.index_dir
        if self.db.memory_db or self.db.read_only:
            return None  # read-only beside the database: indexes live in memory
        path = self.db.sqlite_path
        if path is not None:
            return path.with_name(path.name + ".index")
        assert self.settings.home is not None
        return self.settings.home / "index" / self.db.db_uuid()

    @property
    def longterm(self) -> LongTermMemory:
        """The long-term layer (built on first use: it loads the embedding model)."""
        self._check_open()
        if self._longterm is None:
            with self._lock:
                if self._longterm is None:
                    self._longterm = self._build_longterm()
        return self._longterm

    def _build_longterm(self) -> LongTermMemory:
        if isinstance(self.embedder, PreparingEmbedder):
            self.embedder.prepare()  # the model loads while the indexes open
        dim = self.embedder.dim  # from the model's folder when it says it
        if self._sync is not None and self._owns_vector_index \
                and self._vector_index is not None and self._vector_index.dim != dim:
            # built by forget() for the stored vectors' dimension, not this model's
            self._vector_index.close()
            self._vector_index = None
            self._sync = None
        if self._sync is None:
            self._build_indexes(dim)
        assert self._vector_index is not None and self._keywords is not None
        assert self._sync is not None
        return LongTermMemory(
            db=self.db,
            embedder=self.embedder,
            vectors=self._vector_index,
            keywords=self._keywords,
            sync=self._sync,
            settings=self.settings,
            clock=self.clock,
        )

    def _build_indexes(self, dim: int) -> IndexSync:
        """The derived indexes and their sync; they need only the vectors' dimension."""
        directory = self.index_dir
        if self._vector_index is None:
            backend = load_backend(self.settings.vector_backend)
            options_model = getattr(backend, "Options", None)
            try:
                options = (
                    options_model(**self.settings.vector_options)
                    if options_model is not None
                    else self.settings.vector_options
                )
            except ValueError as exc:
                raise InvalidSettingError(
                    f"invalid options for vector backend {self.settings.vector_backend!r}: {exc}"
                ) from exc
            self._vector_index = backend(dim=dim, directory=directory, options=options)
        if self._keywords is None:
            self._keywords = KeywordIndex(
                directory=directory,
                memory_budget_bytes=self.settings.keyword_memory_budget_bytes,
                params=BM25(self.settings.bm25_k1, self.settings.bm25_b,
                            self.settings.bm25_min_docs),
            )
        assert self._vector_index is not None
        self._sync = IndexSync(self.db, [self._vector_index, self._keywords])
        return self._sync

    def _erasure_sync(self, dim: int | None) -> IndexSync:
        """The indexes an erasure rewrites - built without loading the model when the
        user's stored vectors say their dimension (``dim``)."""
        with self._lock:
            if self._sync is not None:
                return self._sync
            return self._build_indexes(dim if dim is not None else self.embedder.dim)

    @property
    def vector_index(self) -> VectorIndex:
        _ = self.longterm
        assert self._vector_index is not None
        return self._vector_index

    @property
    def keyword_index(self) -> KeywordIndex:
        _ = self.longterm
        assert self._keywords is not None
        return self._keywords

    # ------------------------------------------------------------ working memory

    def working(self, user_id: str, session_id: str) -> WorkingMemory:
        """The session's working memory (created on first use)."""
        self._check_open()
        user_id = check_user(user_id)
        check_text(session_id, "session id", max_len=REF_WIDTH)
        return self._working.session(user_id, session_id)

    # ------------------------------------------------------------ long-term memory

    def remember(
        self,
        user_id: str,
        item: MemoryInput | str | dict[str, Any],
        *,
        type: MemoryType | str | None = None,
        scope: str | None = None,
        slot: Slot | tuple[str, str, str] | None = None,
        confidence: float | None = None,
        importance: float | None = None,
        source: Source | str | None = None,
        session_id: str | None = None,
        task_id: str | None = None,
        step_id: str | None = None,
        context: str | None = None,
        metadata: dict[str, Any] | None = None,
        pinned: bool | None = None,
        correction: bool | None = None,
        verified: bool | None = None,
        ephemeral: bool | None = None,
        at: datetime | None = None,
        valid_from: datetime | None = None,
        ttl: timedelta | None = None,
    ) -> WriteDecision:
        """Offer one memory to the write policy and return its decision (written,
        reinforced, corrected, conflict or dropped, with the reason).

        ``item`` is the text (the keyword arguments set its fields - see
        :class:`~memstrata.types.MemoryInput`), a dict of fields, or a
        ``MemoryInput``; a keyword given here overrides the item's field.
        """
        passed = {
            "type": type, "scope": scope, "slot": slot, "confidence": confidence,
            "importance": importance, "source": source, "session_id": session_id,
            "task_id": task_id, "step_id": step_id, "context": context, "metadata": metadata,
            "pinned": pinned,
            "correction": correction, "verified": verified, "ephemeral": ephemeral,
            "at": at, "valid_from": valid_from, "ttl": ttl,
        }
        fields = {k: v for k, v in passed.items() if v is not None}
        with telemetry.span("memstrata.remember") as sp:
            sp.set_content(user_id=user_id, text=item if isinstance(item, str) else None)
            decision = self.longterm.remember(user_id, item, read=self._read_stated, **fields)
            sp.set(outcome=decision.outcome, memory_id=decision.record_id,
                   related=len(decision.related_ids),  # the type was validated by now
                   memory_type=None if type is None else str(getattr(type, "value", type)))
            sp.set_content(reason=decision.reason)
            return decision

    def remember_many(
        self, user_id: str, items: Iterable[MemoryInput | str | dict[str, Any]], *,
        progress: Progress = False,
    ) -> list[WriteDecision]:
        """Offer a batch (validated whole before anything is written); one decision
        per item, in order."""
        with telemetry.span("memstrata.remember_many") as sp:
            sp.set_content(user_id=user_id)
            decisions = self.longterm.remember_many(user_id, items, progress=progress,
                                                    read=self._read_stated)
            sp.set(_outcome_counts(decisions), items=len(decisions))
            return decisions

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
        """The few memories most worth showing for ``query`` (a question of at most
        10,000 characters), best first (nothing below the minimum relevance).
        ``scope=None`` searches every scope; ``types`` filters;
        ``k`` and ``min_relevance`` override the retrieval policy for this call;
        ``record_use=False`` is a read-only look (no access count, no expiry
        extension); ``reranker`` reorders or drops the best ``policy.candidates``
        hits before the cut to ``k`` (see :mod:`memstrata.memory.rerank`);
        ``display_name`` is the application's name for the user: a question naming
        it (or the user's ``name`` profile slot) is read as being about the user."""
        with telemetry.span("memstrata.recall", k=k, record_use=record_use,
                            scoped=scope is not None, typed=types is not None,
                            reranked=reranker is not None,
                            query_chars=len(query) if isinstance(query, str) else None) as sp:
            sp.set_content(user_id=user_id, query=query)
            hits = self.longterm.recall(user_id, query, scope=scope, types=types, k=k,
                                        min_relevance=min_relevance, policy=policy,
                                        record_use=record_use, reranker=reranker,
                                        display_name=display_name)
            sp.set(hits=len(hits), memory_ids=[h.record.id for h in hits],
                   top_score=hits[0].score if hits else None)
            return hits

    def get(self, user_id: str, memory_id: str) -> MemoryRecord:
        """One record of the user by id (:class:`MemoryNotFoundError` otherwise).

        A read of SQL only: it does not build the long-term layer (no model load),
        so ``memstrata runs`` can show what a recorded action touched."""
        self._check_open()
        user_id = check_user(user_id)
        memory_id = check_memory_id(memory_id)
        with self.db.read() as conn:
            row = _store.fetch(conn, user_id, [str(memory_id)]).get(str(memory_id))
        if row is None:
            raise MemoryNotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
        return _store.row_to_record(row)

    def history(self, user_id: str, memory_id: str) -> list[MemoryRecord]:
        """Every version of the fact ``memory_id`` belongs to, oldest first."""
        return self.longterm.history(user_id, memory_id)

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
        """Structured facts matched by fields (not by similarity), newest first."""
        return self.longterm.lookup(user_id, subject=subject, attribute=attribute,
                                    scope=scope, include_pending=include_pending, limit=limit)

    def memories(
        self,
        user_id: str,
        *,
        scope: str | Iterable[str] | None = None,
        types: MemoryType | str | Iterable[MemoryType | str] | None = None,
        statuses: Status | str | Iterable[Status | str] = tuple(RETRIEVABLE),
        pinned: bool | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """Browse records, newest first (default: the retrievable statuses)."""
        return self.longterm.list_records(user_id, scope=scope, types=types,
                                          statuses=statuses, pinned=pinned, limit=limit,
                                          offset=offset)

    def conflicts(self, user_id: str, *, scope: str | Iterable[str] | None = None
                  ) -> list[list[MemoryRecord]]:
        """Open conflicts: one list per conflict group of records pending the user's
        confirmation, oldest first within a group. Settle one with
        :meth:`resolve_conflict`."""
        return self.longterm.conflicts(user_id, scope=scope)

    def pin(self, user_id: str, memory_id: str, pinned: bool = True) -> MemoryRecord:
        """Pinned records never expire and do not decay."""
        return self.longterm.pin(user_id, memory_id, pinned)

    def resolve_conflict(self, user_id: str, keep: str, *, keep_others: bool = False,
                         reason: str = "confirmed by the user") -> MemoryRecord:
        """Settle the pending conflict ``keep`` belongs to in its favour (the others
        are superseded, kept as history), or with ``keep_others`` make all active."""
        return self.longterm.resolve_conflict(user_id, keep, keep_others=keep_others,
                                              reason=reason)

    def forget(self, user_id: str, memory_id: str, *, reason: str = "user request",
               history: bool = True) -> list[str]:
        """Forget a memory completely, now; returns the ids of the records deleted.

        With its versions (``history=False``: only this record), the raw turns it
        was formed from and the records formed from those turns; its text is
        scrubbed from events, consolidation actions, trajectories and model-call
        logs; index files are rewritten. See :mod:`memstrata.memory._erase`."""
        user_id = check_user(user_id)
        memory_id = check_memory_id(memory_id)
        check_text(reason, "the reason", empty_ok=True)
        check_flag(history, "history")
        self._check_open()
        erasers = load_erasers()
        now = to_epoch(self.clock.now())
        with self.db.write() as conn:
            before = _store.lock_user(conn, user_id, now)
            what = plan_forget(conn, user_id, memory_id, history=history)
            if what is None:
                raise MemoryNotFoundError(f"no memory {memory_id!r} for user {user_id!r}")
            what = replace(what, at=now, reason=reason)
            # the index files are rewritten below; they need the vectors' dimension,
            # not the model (``memstrata forget`` never loads it)
            dim = conn.execute(
                select(memory_vectors.c.dim).where(memory_vectors.c.user_id == user_id).limit(1)
            ).scalar_one_or_none()
            for eraser in erasers:
                eraser.forget(conn, what)
            after = _store.user_state(conn, user_id)
        ids = sorted(what.memory_ids)
        sync = self._erasure_sync(None if dim is None else int(dim))
        sync.erase(user_id, before, after, ids)
        self._working.forget_records(user_id, set(ids))
        # the embedding cache may hold the texts: this manager's embedder, or the
        # process's shared default one if it was made (never made here just for this)
        embedder = self._embedder
        if embedder is None and _shared_embedder.cache_info().currsize:
            embedder = self.embedder
        if isinstance(embedder, CachingEmbedder):
            embedder.forget_cached([*what.texts, *what.embedded])
        _forget_text_caches()
        self.db.after_erasure()
        return ids

    # ------------------------------------------------------------ formation and briefing

    def observe(
        self,
        user_id: str,
        session_id: str,
        role: str,
        text: str,
        *,
        scope: str = DEFAULT_SCOPE,
        at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        extract_memories: bool | None = None,
    ) -> Observation:
        """Append a conversation turn and form memories from it (fast, offline): the
        extractor reads preferences, corrections and profile facts, the write policy
        decides. ``role`` is one of user, assistant, system, tool (or LangChain's human,
        ai; any case); ``extract_memories`` defaults to true for the user's own turns."""
        self._check_open()
        with telemetry.span("memstrata.observe",
                            text_chars=len(text) if isinstance(text, str) else None,
                            role=role if isinstance(role, str) and role in ROLES else "other",
                            ) as sp:
            sp.set_content(user_id=user_id, session_id=session_id, text=text)
            seen = observe(self, user_id, session_id, role, text, scope=scope, at=at,
                           metadata=metadata, extract_memories=extract_memories)
            sp.set(_outcome_counts(seen.decisions), turn_id=seen.turn_id,
                   candidates=len(seen.candidates), superseded=len(seen.superseded),
                   memory_ids=list(seen.written))
            return seen

    def briefing(
        self,
        user_id: str,
        scope: str | None = None,
        goal: str | None = None,
        *,
        lessons_k: int = DEFAULT_LESSONS_K,
        profile_k: int = DEFAULT_PROFILE_K,
        confirmations_k: int = DEFAULT_CONFIRMATIONS_K,
        fresh_days: float = DEFAULT_FRESH_DAYS,
        record_use: bool = True,
    ) -> Briefing:
        """Questions to ask, lessons for ``goal`` (at most 10,000 characters, like a
        recall query) and profile facts to pin, for the planner (see
        :mod:`memstrata.memory.briefing`)."""
        self._check_open()
        return build_briefing(self, user_id, scope, goal, lessons_k=lessons_k,
                              profile_k=profile_k, confirmations_k=confirmations_k,
                              fresh_days=fresh_days, record_use=record_use)

    # ------------------------------------------------------------ lifecycle changes

    @contextmanager
    def changes(self) -> Iterator[RecordTxn]:
        """One write transaction of record lifecycle changes (the consolidation jobs'
        way to change records): :class:`~memstrata.memory.RecordTxn` locks users,
        supersedes, flags, demotes, deletes, restores and writes new records through
        the write policy, one audit event per change; ``txn.conn`` carries the
        caller's own bookkeeping in the same transaction. After the commit, the
        derived indexes this process holds catch up."""
        self._check_open()
        with self.db.write() as conn:
            txn = RecordTxn(conn, to_epoch(self.clock.now()), policies=self.settings)
            yield txn
            txn.flush()
        if self._sync is not None:
            for user_id, (before, seq) in txn.touched.items():
                if seq != before.seq:
                    self._sync.refresh(user_id)

    # ------------------------------------------------------------ whole-user operations

    def forget_user(self, user_id: str, *, reason: str = "user request") -> dict[str, int]:
        """Erase everything of the user at once, in every table any package declared,
        the index files and this process's caches and working memory.

        Crash-safe: the SQL rows go in one transaction that also records the index
        files still to delete; a crash before they are gone leaves that record, and
        the next :meth:`open` finishes the job. Fenced: a process still holding the
        user's shards never writes them back (their generation is gone from SQL).
        The erasure itself is recorded with counts only, the user id replaced by a
        keyed hash."""
        self._check_open()
        user_id = check_user(user_id)
        check_text(reason, "the reason", empty_ok=True)
        erasers = load_erasers()
        now = to_epoch(self.clock.now())
        counts: dict[str, int] = {}
        with self.db.write() as conn:
            tombstone = user_tombstone(user_id, tombstone_salt(conn))
            for eraser in erasers:
                counts.update(eraser.forget_user(conn, user_id, tombstone))
            record_user_erased(conn, user_id, tombstone, now, reason, counts)
            key = record_pending(conn, user_id, now)
        if self._sync is not None:
            self._sync.drop(user_id)
        self._finish_erasures([key])
        counts["working_sessions"] = self._working.drop_user(user_id)
        if self._longterm is not None:
            self._longterm.forget_cached(None)
        _forget_text_caches()
        self.db.after_erasure()
        return counts

    def _finish_erasures(self, keys: list[str] | None = None) -> None:
        """Delete the index files of erased users, then their pending records."""
        directory = self.index_dir
        if keys is None:
            with self.db.read() as conn:
                keys = pending_cleanups(conn)
        if not keys:
            return
        if self.db.read_only:
            log.warning("%d erased users' index files are still to delete; the database "
                        "is read-only, a writable open will do it", len(keys))
            return
        done = []
        for key in keys:
            try:
                if directory is not None:
                    for path in directory.glob(f"*/{key[:2]}/{key}.*"):
                        path.unlink(missing_ok=True)
            except OSError as exc:  # kept pending: the next open tries again
                log.warning("cannot delete the index files of an erased user: %s", exc)
                continue
            done.append(key)
        if done:
            with self.db.write() as conn:
                clear_pending(conn, done)

    def users(self) -> list[str]:
        self._check_open()
        with self.db.read() as conn:
            return _store.users_with_records(conn)

    def reindex(
        self, user_id: str | None = None, *, progress: Progress = False
    ) -> dict[str, dict[str, int]]:
        """Re-embed what the current model did not embed and rebuild the derived
        indexes from SQL, for one user or all."""
        targets = [check_user(user_id)] if user_id is not None else self.users()
        out: dict[str, dict[str, int]] = {}
        for uid in targets:
            out[uid] = self.longterm.reindex(uid, progress=progress)
        return out

    def stats(self, user_id: str | None = None) -> dict[str, Any]:
        self._check_open()
        with self.db.read() as conn:
            by_status = _store.count_by_status(conn, user_id)
            n_users = len(_store.users_with_records(conn)) if user_id is None else 1
        return {
            "database": self.db.safe_url,
            "schema_version": self.schema_version,
            "users": n_users,
            "records": sum(by_status.values()),
            "by_status": {s.value: by_status.get(s.value, 0) for s in Status},
            "index_dir": None if self.index_dir is None else str(self.index_dir),
        }



def _outcome_counts(decisions: Iterable[WriteDecision]) -> dict[str, int]:
    """``memstrata.<outcome>``: how many decisions had each write outcome."""
    counts: dict[str, int] = {}
    for d in decisions:
        counts[f"memstrata.{d.outcome}"] = counts.get(f"memstrata.{d.outcome}", 0) + 1
    return counts
