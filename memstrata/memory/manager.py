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
import threading
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstrata._progress import Progress
from memstrata.clock import Clock, SystemClock, to_epoch
from memstrata.config import Settings
from memstrata.errors import ClosedError, InvalidInputError, InvalidSettingError
from memstrata.memory import _store
from memstrata.memory._db import Database
from memstrata.memory._erase import erase_user
from memstrata.memory._keyword import BM25, KeywordIndex
from memstrata.memory._sync import IndexSync
from memstrata.memory._validate import check_user
from memstrata.memory.embedder import Embedder
from memstrata.memory.episodic import EpisodicMemory
from memstrata.memory.longterm import LongTermMemory
from memstrata.memory.vector import VectorIndex, load_backend
from memstrata.memory.working import WorkingMemory, WorkingMemoryStore
from memstrata.types import (
    MemoryInput,
    MemoryRecord,
    RecallHit,
    Status,
    WriteDecision,
)

if TYPE_CHECKING:
    from memstrata.consolidation.briefing import Briefing
    from memstrata.consolidation.formation import Observation

__all__ = ["ManagerState", "MemoryManager", "default_embedder"]


class ManagerState(Enum):
    OPEN = "open"
    CLOSED = "closed"


@functools.lru_cache(maxsize=4)
def default_embedder(model_path: Path | None = None) -> Embedder:
    """The packaged all-MiniLM-L6-v2, shared by managers of this process (loads lazily)."""
    from memstrata.memory._st_embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model_path)


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
        **settings: Any,
    ) -> MemoryManager:
        """Open (and migrate) the memory at ``url``; see :class:`~memstrata.config.Settings`."""
        if url is not None:
            settings["url"] = url
        return cls(Settings.build(**settings), embedder=embedder, vector_index=vector_index,
                   clock=clock)

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Persist index state and release the database. Idempotent."""
        with self._lock:
            if self.state is ManagerState.CLOSED:
                return
            self.state = ManagerState.CLOSED
        try:
            if self._keywords is not None:
                self._keywords.close()
            if self._vector_index is not None and self._owns_vector_index:
                self._vector_index.close()
            elif self._vector_index is not None:
                self._vector_index.flush()
        finally:
            self.db.dispose()

    def _check_open(self) -> None:
        if self.state is ManagerState.CLOSED:
            raise ClosedError("the memory manager is closed")

    # ------------------------------------------------------------ parts

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder(self.settings.embedding_model)
        return self._embedder

    @property
    def index_dir(self) -> Path | None:
        if self.settings.index_dir is not None:
            return self.settings.index_dir
        if self.db.memory_db:
            return None
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
            self._vector_index = backend(
                dim=self.embedder.dim, directory=directory, options=options
            )
        self._keywords = KeywordIndex(
            directory=directory,
            memory_budget_bytes=self.settings.keyword_memory_budget_bytes,
            params=BM25(self.settings.bm25_k1, self.settings.bm25_b),
        )
        assert self._vector_index is not None
        self._sync = IndexSync(self.db, [self._vector_index, self._keywords])
        return LongTermMemory(
            db=self.db,
            embedder=self.embedder,
            vectors=self._vector_index,
            keywords=self._keywords,
            sync=self._sync,
            settings=self.settings,
            clock=self.clock,
            on_forget=self._working.forget_records,
        )

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
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("a session id is required")
        return self._working.session(user_id, session_id)

    # ------------------------------------------------------------ long-term delegates

    def remember(
        self, user_id: str, item: MemoryInput | str | dict[str, Any], **fields: Any
    ) -> WriteDecision:
        """Offer one memory to the write policy; see :meth:`LongTermMemory.remember`."""
        return self.longterm.remember(user_id, item, **fields)

    def remember_many(
        self, user_id: str, items: Iterable[MemoryInput | str | dict[str, Any]], *,
        progress: Progress = False,
    ) -> list[WriteDecision]:
        return self.longterm.remember_many(user_id, items, progress=progress)

    def recall(self, user_id: str, query: str, **options: Any) -> list[RecallHit]:
        """Top memories for ``query``; see :meth:`LongTermMemory.recall` for options."""
        return self.longterm.recall(user_id, query, **options)

    def get(self, user_id: str, memory_id: str) -> MemoryRecord:
        return self.longterm.get(user_id, memory_id)

    def history(self, user_id: str, memory_id: str) -> list[MemoryRecord]:
        return self.longterm.history(user_id, memory_id)

    def lookup(self, user_id: str, **fields: Any) -> list[MemoryRecord]:
        return self.longterm.lookup(user_id, **fields)

    def memories(self, user_id: str, **filters: Any) -> list[MemoryRecord]:
        """Browse records (filters: scope, types, statuses, pinned, limit, offset)."""
        return self.longterm.list_records(user_id, **filters)

    def conflicts(self, user_id: str, **filters: Any) -> list[list[MemoryRecord]]:
        return self.longterm.conflicts(user_id, **filters)

    def forget(self, user_id: str, memory_id: str, **options: Any) -> list[str]:
        return self.longterm.forget(user_id, memory_id, **options)

    def pin(self, user_id: str, memory_id: str, pinned: bool = True) -> MemoryRecord:
        return self.longterm.pin(user_id, memory_id, pinned)

    def resolve_conflict(self, user_id: str, keep: str, **options: Any) -> MemoryRecord:
        return self.longterm.resolve_conflict(user_id, keep, **options)

    # ------------------------------------------------------------ formation and briefing

    def observe(self, user_id: str, session_id: str, role: str, text: str, **options: Any
                ) -> Observation:
        """Append a conversation turn and form memories from it (fast, offline);
        see :func:`memstrata.consolidation.formation.observe` for options."""
        from memstrata.consolidation.formation import observe

        self._check_open()
        return observe(self, user_id, session_id, role, text, **options)

    def briefing(self, user_id: str, scope: str | None = None, goal: str | None = None,
                 **options: Any) -> Briefing:
        """Questions to ask, lessons for ``goal`` and profile facts to pin, for the planner;
        see :func:`memstrata.consolidation.briefing.build_briefing`."""
        from memstrata.consolidation.briefing import build_briefing

        self._check_open()
        return build_briefing(self, user_id, scope, goal, **options)

    # ------------------------------------------------------------ whole-user operations

    def forget_user(self, user_id: str, *, reason: str = "user request") -> dict[str, int]:
        """Erase everything of the user at once: SQL rows, vectors, keyword index,
        working memory. The erasure is recorded (counts only)."""
        self._check_open()
        user_id = check_user(user_id)
        with self.db.write() as conn:
            counts = erase_user(conn, user_id, to_epoch(self.clock.now()), reason)
        _ = self.longterm  # the derived indexes may have files even if unused here
        assert self._sync is not None
        self._sync.drop(user_id)
        counts["working_sessions"] = self._working.drop_user(user_id)
        return counts

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

