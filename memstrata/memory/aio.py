"""The async façade: :class:`AsyncMemoryManager`.

::

    async with AsyncMemoryManager.open() as memory:
        await memory.remember("alice", "I prefer window seats", type="preference",
                              scope="travel")
        hits = await memory.recall("alice", "which seat?", scope="travel")

**What runs where.** The event loop only validates that the manager is open and
hands each call to a small thread pool owned by the manager
(``max_threads``, default :data:`DEFAULT_MAX_THREADS`); the call runs there
through the thread-safe :class:`~memstrata.MemoryManager`, end to end - the
embedding (ONNX Runtime or PyTorch, one thread per query), the vector and keyword
search, the SQL transactions. The pool is the capacity limiter: at most
``max_threads`` calls run at once, the rest wait in its queue, so a burst of
thousands of tasks neither spawns thousands of threads nor exhausts the
PostgreSQL connection pool.

This was chosen by measurement over SQLAlchemy's async engines (aiosqlite,
asyncpg) - ``benchmarks/bench_async.py``, ``docs/async.md``: the raw async drivers
were faster at a recall's SQL read (1.1x aiosqlite, 4.7x asyncpg), but that read
is 5-9 % of a recall; the embedding, the searches and the ranking are CPU work
that needs the threads anyway, so async SQL could save a few per cent at most -
for a second copy of the store and the write path, and a new dependency
(greenlet). aiosqlite itself runs each connection on a thread.

Every method has the same typed signature as its sync twin and raises the same
:mod:`memstrata.errors` types; bad input changes nothing. The caller's
:mod:`contextvars` (an OpenTelemetry span, for instance) are carried into the
worker thread. Cancelling an awaiting task does not stop a call already running
in the pool (a thread cannot be interrupted): a write that started still commits,
whole or not at all. :meth:`AsyncMemoryManager.aclose` refuses new calls, waits
for the running and queued ones, then closes the manager.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar

from memstrata._progress import Progress
from memstrata.clock import Clock
from memstrata.config import DEFAULT_SCOPE, Settings
from memstrata.errors import ClosedError, IndexPersistError, InvalidInputError
from memstrata.memory.briefing import (
    DEFAULT_CONFIRMATIONS_K,
    DEFAULT_FRESH_DAYS,
    DEFAULT_LESSONS_K,
    DEFAULT_PROFILE_K,
    Briefing,
)
from memstrata.memory.embedder import Embedder
from memstrata.memory.formation import Observation
from memstrata.memory.manager import ManagerState, MemoryManager
from memstrata.memory.rerank import Reranker
from memstrata.memory.vector import VectorIndex
from memstrata.memory.working import WorkingMemory
from memstrata.policies.retrieval import RetrievalPolicy
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

__all__ = ["DEFAULT_MAX_THREADS", "AsyncMemoryManager", "OpeningManager"]

#: calls running at once: two per CPU, at least 4 and at most 16 (about the
#: PostgreSQL pool of a manager: 5 + 10 overflow), so 4 on a 2-core machine.
#: Measured (``benchmarks/results/async.json``, 100 clients, 80 % recall, 2 cores,
#: load 1-5): 4 threads was the best arm on PostgreSQL and within noise of the best
#: (2) on SQLite, with about twice the throughput of the sync API called from 100
#: threads and a p95 about a quarter of it; 8 and 16 lost 5-30 %, their threads
#: only contending for the two cores. Under heavy contention from other processes
#: (a load average of 15-20) 16 did best - more threads win a larger share of the
#: CPUs - so a busy shared host may want ``max_threads=`` higher.
DEFAULT_MAX_THREADS = max(4, min(16, 2 * (os.cpu_count() or 1)))
_MAX_THREADS_LIMIT = 256

log = logging.getLogger("memstrata")

P = ParamSpec("P")
T = TypeVar("T")


class AsyncMemoryManager:
    """:class:`~memstrata.MemoryManager` for asyncio: the same typed methods,
    awaitable, safe to call from many tasks at once (see the module docstring for
    what runs where)."""

    def __init__(self, manager: MemoryManager, *, max_threads: int = DEFAULT_MAX_THREADS,
                 close_manager: bool = True) -> None:
        """Wrap an open manager. ``max_threads`` bounds the calls that run at once;
        :meth:`aclose` closes the manager too unless ``close_manager=False`` (a
        manager the sync side of the program keeps using)."""
        if not isinstance(manager, MemoryManager):
            raise InvalidInputError("AsyncMemoryManager wraps a MemoryManager")
        if isinstance(max_threads, bool) or not isinstance(max_threads, int) \
                or not 1 <= max_threads <= _MAX_THREADS_LIMIT:
            raise InvalidInputError(f"max_threads must be an integer in 1..{_MAX_THREADS_LIMIT}")
        if not isinstance(close_manager, bool):
            raise InvalidInputError("close_manager is True or False")
        self._manager = manager
        self._close_manager = close_manager
        self.max_threads = max_threads
        self._pool = ThreadPoolExecutor(max_workers=max_threads,
                                        thread_name_prefix="memstrata-aio")
        self._lock = threading.Lock()
        self.state = ManagerState.OPEN

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        vector_index: VectorIndex | None = None,
        clock: Clock | None = None,
        max_threads: int = DEFAULT_MAX_THREADS,
    ) -> OpeningManager:
        """Open (and migrate) the memory at ``url`` off the event loop.

        Use it as ``async with AsyncMemoryManager.open(url) as memory:`` or
        ``memory = await AsyncMemoryManager.open(url)`` (then ``await
        memory.aclose()``). ``settings`` is a :class:`~memstrata.config.Settings`
        (``Settings.build(...)``); ``url`` overrides its URL.
        """
        if settings is not None and not isinstance(settings, Settings):
            raise InvalidInputError("settings must be a memstrata Settings")
        values: dict[str, Any] = {} if settings is None else dict(settings)
        if url is not None:
            values["url"] = url
        built = Settings.build(**values)  # the URL and home from the environment if unset

        def make() -> AsyncMemoryManager:
            manager = MemoryManager(built, embedder=embedder, vector_index=vector_index,
                                    clock=clock)
            try:
                return cls(manager, max_threads=max_threads)
            except BaseException:
                manager.close()
                raise

        return OpeningManager(make)

    # ------------------------------------------------------------ lifecycle

    @property
    def manager(self) -> MemoryManager:
        """The sync manager underneath (for consolidation jobs and ``changes()``)."""
        return self._manager

    async def __aenter__(self) -> AsyncMemoryManager:
        return self

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            await self.aclose()
            return
        try:  # an error is already on its way out: do not hide it behind this one
            await self.aclose()
        except IndexPersistError as persist:
            log.warning("%s", persist)

    async def aclose(self) -> None:
        """Refuse new calls, let the running and queued ones finish, then close the
        manager (persist index state, release the database) unless it was wrapped
        with ``close_manager=False``. Idempotent; raises what
        :meth:`MemoryManager.close` raises."""
        with self._lock:
            if self.state is ManagerState.CLOSED:
                return
            self.state = ManagerState.CLOSED
        loop = asyncio.get_running_loop()

        def close() -> None:
            self._pool.shutdown(wait=True)
            if self._close_manager:
                self._manager.close()

        await loop.run_in_executor(None, close)

    async def _call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run one call of the sync manager in the pool, with the caller's context."""
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        call = functools.partial(ctx.run, fn, *args, **kwargs)
        with self._lock:  # the state check and the submit are one step for aclose
            if self.state is ManagerState.CLOSED:
                raise ClosedError("the memory manager is closed")
            future = loop.run_in_executor(self._pool, call)
        return await future

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a sync function (one that uses :attr:`manager`) in this manager's
        bounded pool, with the caller's context - for adapters that hold sync code
        (the LangGraph store's ``abatch``)."""
        return await self._call(fn, *args, **kwargs)

    # ------------------------------------------------------------ working memory

    def working(self, user_id: str, session_id: str) -> WorkingMemory:
        """The session's working memory - in process, no I/O, so not awaited. Its
        ``promote`` writes to long-term memory: use :meth:`promote` from async code."""
        if self.state is ManagerState.CLOSED:
            raise ClosedError("the memory manager is closed")
        return self._manager.working(user_id, session_id)

    async def promote(self, user_id: str, session_id: str, key: str, *,
                      content: str | None = None) -> WriteDecision:
        """Send a working-memory entry through the write policy (see
        :meth:`WorkingMemory.promote`)."""
        session = self.working(user_id, session_id)
        return await self._call(session.promote, key, content=content)

    # ------------------------------------------------------------ long-term memory

    async def remember(
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
        """See :meth:`MemoryManager.remember`."""
        return await self._call(
            self._manager.remember, user_id, item, type=type, scope=scope, slot=slot,
            confidence=confidence, importance=importance, source=source,
            session_id=session_id, task_id=task_id, step_id=step_id, context=context,
            metadata=metadata, pinned=pinned, correction=correction, verified=verified,
            ephemeral=ephemeral, at=at, valid_from=valid_from, ttl=ttl)

    async def remember_many(
        self, user_id: str, items: Iterable[MemoryInput | str | dict[str, Any]], *,
        progress: Progress = False,
    ) -> list[WriteDecision]:
        """See :meth:`MemoryManager.remember_many` (``items`` is read before the call
        leaves the event loop)."""
        # a generator is drained here; anything else goes as it is, so the sync
        # validation sees (and refuses) exactly what it would see
        batch = list(items) if isinstance(items, Iterator) else items
        return await self._call(self._manager.remember_many, user_id, batch, progress=progress)

    async def recall(
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
        """See :meth:`MemoryManager.recall`."""
        return await self._call(
            self._manager.recall, user_id, query, scope=scope, types=types, k=k,
            min_relevance=min_relevance, policy=policy, record_use=record_use,
            reranker=reranker, display_name=display_name)

    async def get(self, user_id: str, memory_id: str) -> MemoryRecord:
        """See :meth:`MemoryManager.get`."""
        return await self._call(self._manager.get, user_id, memory_id)

    async def history(self, user_id: str, memory_id: str) -> list[MemoryRecord]:
        """See :meth:`MemoryManager.history`."""
        return await self._call(self._manager.history, user_id, memory_id)

    async def lookup(
        self,
        user_id: str,
        *,
        subject: str | None = None,
        attribute: str | None = None,
        scope: str | Iterable[str] | None = None,
        include_pending: bool = True,
        limit: int = 100,
    ) -> list[MemoryRecord]:
        """See :meth:`MemoryManager.lookup`."""
        return await self._call(self._manager.lookup, user_id, subject=subject,
                                attribute=attribute, scope=scope,
                                include_pending=include_pending, limit=limit)

    async def memories(
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
        """See :meth:`MemoryManager.memories`."""
        return await self._call(self._manager.memories, user_id, scope=scope, types=types,
                                statuses=statuses, pinned=pinned, limit=limit, offset=offset)

    async def conflicts(self, user_id: str, *, scope: str | Iterable[str] | None = None
                        ) -> list[list[MemoryRecord]]:
        """See :meth:`MemoryManager.conflicts`."""
        return await self._call(self._manager.conflicts, user_id, scope=scope)

    async def pin(self, user_id: str, memory_id: str, pinned: bool = True) -> MemoryRecord:
        """See :meth:`MemoryManager.pin`."""
        return await self._call(self._manager.pin, user_id, memory_id, pinned)

    async def resolve_conflict(self, user_id: str, keep: str, *, keep_others: bool = False,
                               reason: str = "confirmed by the user") -> MemoryRecord:
        """See :meth:`MemoryManager.resolve_conflict`."""
        return await self._call(self._manager.resolve_conflict, user_id, keep,
                                keep_others=keep_others, reason=reason)

    async def forget(self, user_id: str, memory_id: str, *, reason: str = "user request",
                     history: bool = True) -> list[str]:
        """See :meth:`MemoryManager.forget`."""
        return await self._call(self._manager.forget, user_id, memory_id, reason=reason,
                                history=history)

    # ------------------------------------------------------------ formation and briefing

    async def observe(
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
        """See :meth:`MemoryManager.observe`."""
        return await self._call(self._manager.observe, user_id, session_id, role, text,
                                scope=scope, at=at, metadata=metadata,
                                extract_memories=extract_memories)

    async def briefing(
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
        """See :meth:`MemoryManager.briefing`."""
        return await self._call(self._manager.briefing, user_id, scope, goal,
                                lessons_k=lessons_k, profile_k=profile_k,
                                confirmations_k=confirmations_k, fresh_days=fresh_days,
                                record_use=record_use)

    # ------------------------------------------------------------ whole-user operations

    async def forget_user(self, user_id: str, *, reason: str = "user request"
                          ) -> dict[str, int]:
        """See :meth:`MemoryManager.forget_user`."""
        return await self._call(self._manager.forget_user, user_id, reason=reason)

    async def users(self) -> list[str]:
        """See :meth:`MemoryManager.users`."""
        return await self._call(self._manager.users)

    async def reindex(self, user_id: str | None = None, *, progress: Progress = False
                      ) -> dict[str, dict[str, int]]:
        """See :meth:`MemoryManager.reindex`."""
        return await self._call(self._manager.reindex, user_id, progress=progress)

    async def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """See :meth:`MemoryManager.stats`."""
        return await self._call(self._manager.stats, user_id)


class OpeningManager:
    """What :meth:`AsyncMemoryManager.open` returns: await it for the manager, or
    use it as ``async with`` (closed on exit)."""

    def __init__(self, make: Callable[[], AsyncMemoryManager]) -> None:
        self._make = make
        self._opened: AsyncMemoryManager | None = None

    async def _open(self) -> AsyncMemoryManager:
        if self._opened is not None:
            raise InvalidInputError("this open() was already awaited; call open() again")
        loop = asyncio.get_running_loop()
        self._opened = await loop.run_in_executor(None, self._make)
        return self._opened

    def __await__(self) -> Generator[Any, None, AsyncMemoryManager]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncMemoryManager:
        return await self._open()

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self._opened is not None
        await self._opened.__aexit__(exc_type, exc, tb)
