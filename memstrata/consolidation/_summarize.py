"""The ``summarize`` job: ended sessions and finished tasks become one-line memories.

* A session whose last turn is older than ``session_idle_seconds`` gets one
  ``summary`` record (scope from the turns, ``session_id`` set, the turn range
  in ``metadata.turns``). If the session continues later, the next run writes
  a new summary that supersedes the old one (history kept).
* A finished task (``done`` / ``abandoned``, or ``failed`` and left alone for
  ``session_idle_seconds``) gets one ``experience`` record - a lesson such as
  "book a flight: tried search_v1: failed on timeout; search_v2 worked -> done"
  - linked by ``task_id``. A task changed since (retried) gets a new lesson
  superseding the old.
* With an LLM, the user's turns ``observe`` read no fact from (``fast_extracted``
  0) are read again by the :class:`~memstrata.reading.LLMReader`, through the run's
  gate (its token budget and call log, purpose ``read``), a batch of turns a call for
  all of a user's sessions. Its readings are checked as every reader's are (a value in
  the turn's own words, a label or digits; whose, when, denied) and form memories as
  ``observe`` forms them (:func:`~memstrata.memory.formation.candidates_from_readings`):
  only the user's own values holding now, a change of a changing attribute superseding
  the held value. A value the memory's own reader reads in the same turn as someone
  else's is not taken (a small model read "My sister moved to Shenzhen" as the user's
  city). The session call returns the summary line and the durable facts outside the
  registry ("prefers aisle seats"); its facts that name a registry attribute are not
  taken, since nothing there says whose they are or keeps the user's words (a real
  small model gave a roommate's keto as the user's diet, 上海 as "shanghai"). Without
  one (``offline_statements``),
  each such user turn that is a first-person statement - not small talk, and not
  a question unless it takes the user's own thing for granted ("how do i stop my
  iphone 15 screen from lighting up", mate60怎么打开应用分身啊) - is kept as its own
  ``inferred`` knowledge memory, dated when it was said, so recall can rank the
  newest statement about a thing first (a summary line is one record per session
  and quotes old and new alike). ``observe`` keeps such a statement at once
  (``kept_as_statement``); this keeps those of turns appended without it, or
  observed with ``WritePolicy(keep_statements=False)``.

Originals stay in episodic storage. ``consolidation_sources`` remembers what
was folded (up to which turn / task version), so the job is idempotent; the
new records pass through the same write transaction as any memory (write
policy, duplicate check, ``seq``), and everything they change is recorded.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import Connection, insert, select, update

from memstrata.clock import from_epoch
from memstrata.config import DEFAULT_SCOPE, SCOPE_PATTERN
from memstrata.consolidation._job import Applied, JobContext, UserPlan, combine_methods
from memstrata.consolidation._llm import LESSON_SYSTEM, SUMMARY_SYSTEM, Ask, GateClient
from memstrata.consolidation._summary import Turn, lesson_line, one_line, session_summary
from memstrata.consolidation._tables import sources
from memstrata.consolidation.reports import Method, PlannedAction
from memstrata.errors import LLMError, MemstrataError, ModelMismatchError
from memstrata.memory import Database, RecordTxn, WriteTxn, changed_columns, queries, superseded
from memstrata.memory.embedder import embed_with_sentences
from memstrata.memory.formation import candidates_from_readings, corrected_attributes
from memstrata.policies.extraction import canonical_attribute
from memstrata.reading import (
    Held,
    LLMReader,
    Reading,
    Relation,
    load_reader,
    registry,
    to_stored,
)
from memstrata.reading.score import value_matches
from memstrata.reading.statements import worth_keeping
from memstrata.types import MemoryInput, MemoryType, Slot, Source, Status

__all__ = ["SummarizeJob"]

_T = TypeVar("_T")
_R = TypeVar("_R")

_TRANSCRIPT_CHARS = 6000
_LLM_FACT_CONFIDENCE_CAP = 0.8


@dataclass
class _New:
    """A record to write, with where it came from."""

    action: str
    item: MemoryInput
    vector: np.ndarray | None = None
    #: one vector per sentence of a record of two or more sentences (the recall gate
    #: admits it by one of them, as it does a record written by ``remember``)
    sentences: np.ndarray | None = None
    #: (kind, source id, last item) marked as folded once written
    source: tuple[str, str, int] | None = None
    #: the previous summary / lesson of the same source, superseded by this one
    replaces: str | None = None
    reason: str = ""
    #: the session whose turns it was planned from (summary, statements, facts)
    session: str | None = None


@dataclass
class _Payload:
    new: list[_New] = field(default_factory=list)
    #: sources folded with nothing worth keeping (marked without a record)
    empty: list[tuple[str, str, int, str]] = field(default_factory=list)
    #: session -> the ids of the turns its records were planned from (re-checked at apply:
    #: a turn forgotten in between voids what was planned from it)
    turns: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass
class _SessionTodo:
    session_id: str
    last: int
    turns: list[Turn]
    #: (last item, memory id) of the previous fold of this session
    done: tuple[int, str | None] | None
    ask: Ask | None


@dataclass
class _TaskTodo:
    row: Any
    steps: list[dict[str, Any]]
    goal: dict[str, Any]
    feedback: dict[str, Any] | None
    done: tuple[int, str | None] | None
    ask: Ask | None


@dataclass
class _Todo:
    """What one user has to fold (read in one transaction; no connection kept)."""

    user_id: str
    sessions: list[_SessionTodo] = field(default_factory=list)
    tasks: list[_TaskTodo] = field(default_factory=list)
    #: (scope, attribute, value, the statement it was said in) the user holds now (read
    #: only when a model is asked)
    held: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: the LLM reader's readings of the unread user turns (:meth:`SummarizeJob._read`)
    read: _Read | None = None

    def unread(self) -> list[Turn]:
        """The user turns since each session's previous fold that ``observe`` read no fact
        from (``fast_extracted`` 0): what the LLM reader is asked to read."""
        out = []
        for s in self.sessions:
            after = -1 if s.done is None else s.done[0]
            out += [t for t in s.turns if t.id > after and t.role.lower() in ("user", "human")
                    and not t.metadata.get("fast_extracted") and t.text.strip()]
        return out

    def asks(self) -> list[Ask | None]:
        """One entry per session then per task: the question, or None (not asked)."""
        return [s.ask for s in self.sessions] + [t.ask for t in self.tasks]


@dataclass
class _Read:
    """What the LLM reader read of a user's unread turns."""

    version: str
    name: str
    #: turn id -> its checked readings (a turn absent was not read)
    readings: dict[int, list[Reading]] = field(default_factory=dict)
    #: turn id -> the stable attributes whose held value the turn sets right
    #: (:func:`~memstrata.memory.formation.corrected_attributes`)
    corrected: dict[int, frozenset[str]] = field(default_factory=dict)
    error: str | None = None


def _map(width: int, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    """``fn`` over ``items`` in order, on ``width`` threads (each in a copy of the
    caller's context, so tracing spans stay in the job's trace)."""
    if width <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    caller = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="memstrata-plan") as pool:
        return list(pool.map(lambda x: caller.copy().run(fn, x), items))


def _failed(user_id: str, exc: MemstrataError) -> UserPlan:
    plan = UserPlan(user_id)
    plan.errors.append(f"{type(exc).__name__}: {exc}")
    return plan


def _scope_of(metadata: Sequence[dict[str, Any]]) -> str:
    scopes = Counter(str(m.get("scope")) for m in metadata if m.get("scope"))
    for scope, _ in scopes.most_common():
        if SCOPE_PATTERN.match(scope):
            return scope
    return DEFAULT_SCOPE


class SummarizeJob:
    name = "summarize"
    lease = "summarize"
    plan_in_txn = False

    def users(self, conn: Connection, ctx: JobContext, after: str | None,
              limit: int | None) -> list[str]:
        return queries.episode_users(conn, after, limit)

    # ------------------------------------------------------------ plan
    #
    # Planning a user is three steps: read what is to fold (:meth:`_gather`, SQL
    # only), ask the model (no connection held), build the records and embed them
    # (:meth:`_finish`). :meth:`plan` runs them for one user with the calls one
    # after another; :meth:`plan_batch` gathers a whole batch, sends every
    # question of the batch through the gate's bounded pool at once and finishes
    # each user the same way, so both produce the same plans.

    def plan(self, conn: Connection, ctx: JobContext, user_id: str) -> UserPlan:
        todo = self._gather(conn, ctx, user_id)
        gate = ctx.model()
        answers = [None if a is None or gate is None else
                   gate.ask_json(a.system, a.prompt, user_id=a.user_id, purpose=a.purpose)
                   for a in todo.asks()]
        self._read(ctx, todo)
        return self._finish(ctx, todo, answers)

    def plan_batch(self, db: Database, ctx: JobContext, users: Sequence[str]
                   ) -> list[UserPlan]:
        """Plans of a batch, its model calls concurrent (at most ``llm.concurrency``).

        The batch's reads are a handful of statements in one read transaction
        (:meth:`_gather_many`), its records embedded in one call: per-user reads
        and embeddings would cost a transaction (and, past the connection pool, a
        connection) and an ONNX call per user. If the batch's reads fail, each
        user is read alone, so a user whose reads fail gets an empty plan with
        the error (as the runner does for :meth:`plan`); so does a user whose
        plan cannot be built."""
        gate = ctx.model()
        todos: list[_Todo | UserPlan]
        try:
            with db.read() as conn:
                todos = list(self._gather_many(conn, ctx, users))
        except MemstrataError:
            width = 1 if gate is None else min(gate.concurrency, len(users))

            def gather(user: str) -> _Todo | UserPlan:
                try:
                    with db.read() as conn:
                        return self._gather(conn, ctx, user)
                except MemstrataError as exc:
                    return _failed(user, exc)

            todos = _map(width, gather, users)
        asks = [(i, n, a) for i, t in enumerate(todos) if isinstance(t, _Todo)
                for n, a in enumerate(t.asks()) if a is not None]
        answers: dict[tuple[int, int], Any] = {}
        if gate is not None and asks:
            got = gate.ask_json_many([a for _, _, a in asks])
            answers = {(i, n): value for (i, n, _), value in zip(asks, got, strict=True)}
        if gate is not None:
            _map(gate.concurrency, lambda t: self._read(ctx, t),
                 [t for t in todos if isinstance(t, _Todo)])
        plans: list[UserPlan] = []
        for i, t in enumerate(todos):
            if not isinstance(t, _Todo):
                plans.append(t)
                continue
            try:
                plans.append(self._build(ctx, t, [answers.get((i, n))
                                                  for n in range(len(t.asks()))]))
            except MemstrataError as exc:
                plans.append(_failed(t.user_id, exc))
        try:
            self._embed(ctx, plans)
        except MemstrataError:  # each user alone, so only the failing one loses its plan
            for n, plan in enumerate(plans):
                try:
                    self._embed(ctx, [plan])
                except MemstrataError as exc:
                    plans[n] = _failed(plan.user_id, exc)
        return plans

    def _gather(self, conn: Connection, ctx: JobContext, user_id: str) -> _Todo:
        """What the user has to fold, and the question for the model about each item."""
        return self._gather_many(conn, ctx, [user_id])[0]

    def _gather_many(self, conn: Connection, ctx: JobContext, users: Sequence[str]
                     ) -> list[_Todo]:
        """:meth:`_gather` for each of ``users``, in a few statements for all of them."""
        ask = ctx.model() is not None
        folded: dict[str, dict[tuple[str, str], tuple[int, str | None]]] = {}
        for r in conn.execute(select(sources).where(sources.c.user_id.in_(list(users)))):
            folded.setdefault(str(r.user_id), {})[(r.kind, r.source_id)] = (
                int(r.last_item), r.memory_id)
        ended_before = ctx.now - ctx.settings.session_idle_seconds
        sessions = queries.ended_sessions_of(conn, users, ended_before)
        due = [(u, str(s.session_id), int(s.last)) for u in users for s in sessions.get(u, [])
               if not ((done := folded.get(u, {}).get(("session", str(s.session_id))))
                       and done[0] >= int(s.last))]
        turns_of = queries.session_turns_of(conn, due)
        settled_before = ctx.now - ctx.settings.session_idle_seconds
        tasks_of = queries.finished_tasks_of(conn, users)
        due_tasks = {u: [t for t in tasks_of.get(u, [])
                         if not (t.status == "failed"  # may still be retried
                                 and (t.finished_at or t.updated_at) > settled_before)
                         and not ((done := folded.get(u, {}).get(("task", t.task_id)))
                                  and done[0] >= int(t.version))]
                     for u in users}
        steps_of = queries.task_step_payloads_of(
            conn, [(u, str(t.task_id)) for u in users for t in due_tasks[u]])
        held = queries.held_values_of(conn, users) if ask else {}
        todos = {u: _Todo(u, held=held.get(u, [])) for u in users}
        for user_id, session_id, last in due:
            session_turns = [Turn(r.id, r.role, r.text, from_epoch(r.at), dict(r.metadata or {}))
                             for r in turns_of[(user_id, session_id)]]
            todos[user_id].sessions.append(_SessionTodo(
                session_id, last, session_turns,
                folded.get(user_id, {}).get(("session", session_id)),
                Ask(SUMMARY_SYSTEM, _transcript(session_turns), user_id, "summarize")
                if ask else None))
        for user_id in users:
            for t in due_tasks[user_id]:
                steps = steps_of[(user_id, str(t.task_id))]
                goal = dict(t.goal or {})
                feedback = None if t.feedback is None else dict(t.feedback)
                todos[user_id].tasks.append(_TaskTodo(
                    t, steps, goal, feedback, folded.get(user_id, {}).get(("task", t.task_id)),
                    Ask(LESSON_SYSTEM, _trajectory(goal, t.status, steps, feedback), user_id,
                        "lesson") if ask and steps else None))
        return [todos[u] for u in users]

    def _finish(self, ctx: JobContext, todo: _Todo, answers: Sequence[Any]) -> UserPlan:
        """The plan from what :meth:`_gather` read and the model's ``answers`` (one per
        :meth:`_Todo.asks`, None where it was not asked or gave nothing usable)."""
        plan = self._build(ctx, todo, answers)
        self._embed(ctx, [plan])
        return plan

    def _build(self, ctx: JobContext, todo: _Todo, answers: Sequence[Any]) -> UserPlan:
        """:meth:`_finish` but the embeddings (:meth:`_embed`)."""
        user_id = todo.user_id
        plan = UserPlan(user_id)
        payload = _Payload()
        n = len(todo.sessions)
        for item, answer in zip(todo.sessions, answers[:n], strict=True):
            self._plan_session(ctx, user_id, item, answer, payload, plan, todo)
        for task, answer in zip(todo.tasks, answers[n:], strict=True):
            self._plan_task(ctx, task, answer, payload, plan)
        plan.payload = payload
        for x in payload.new:
            plan.actions.append(PlannedAction(
                user_id, None, x.action, x.reason, None,
                {"content": x.item.content, "type": x.item.type.value, "scope": x.item.scope}))
        return plan

    @staticmethod
    def _embed(ctx: JobContext, plans: Sequence[UserPlan]) -> None:
        """The vectors of the plans' new records, in one embedding call."""
        pending = [x for p in plans if isinstance(p.payload, _Payload)
                   for x in p.payload.new if x.vector is None]
        if pending:
            vectors, sentences = embed_with_sentences(
                ctx.embedder, [queries.indexed_text(x.item) for x in pending],
                [x.item.content for x in pending],
                with_sentences=ctx.memory_settings.write.sentence_vectors)
            for x, v, parts in zip(pending, vectors, sentences, strict=True):
                x.vector, x.sentences = v, parts

    def _plan_session(self, ctx: JobContext, user_id: str, item: _SessionTodo, answer: Any,
                      payload: _Payload, plan: UserPlan, todo: _Todo) -> None:
        max_chars = ctx.settings.summary_max_chars
        session_turns, done = item.turns, item.done
        scope = _scope_of([dict(t.metadata) for t in session_turns])
        source = ("session", item.session_id, item.last)
        payload.turns[item.session_id] = tuple(t.id for t in session_turns)
        first = len(payload.new)
        line, facts, method = self._session_line(ctx, session_turns, max_chars, answer)
        plan.method = combine_methods(plan.method, method)
        if line is None:
            payload.empty.append((*source, "nothing but small talk"))
        else:
            payload.new.append(_New(
                "summarize_session",
                MemoryInput(
                    content=line, type=MemoryType.SUMMARY, scope=scope, confidence=0.8,
                    importance=0.4, source=Source.CONSOLIDATION, session_id=item.session_id,
                    metadata={"summary_of": "session",
                              "turns": [session_turns[0].id, session_turns[-1].id],
                              "method": method},
                    at=session_turns[-1].at, valid_from=session_turns[0].at,
                ),
                source=source, replaces=None if done is None else done[1],
                reason=f"session {item.session_id} ended ({len(session_turns)} turns)",
            ))
        if method == "offline" and ctx.settings.offline_statements:
            # only the turns since the previous fold of this session (idempotent)
            after = -1 if done is None else done[0]
            payload.new.extend(_statements(scope, item.session_id,
                                           [t for t in session_turns if t.id > after]))
        if todo.read is not None:
            payload.new.extend(_read_facts(todo, scope, item, plan))
        for fact in facts:
            if _registry_attribute(fact):
                continue  # the reader reads those, checked (whose, when, the user's words)
            extracted = _fact(fact, scope, item.session_id, session_turns)
            if extracted is None:
                plan.errors.append(f"session {item.session_id}: the model returned an "
                                   f"unusable fact {str(fact)[:120]!r}")
            else:
                payload.new.append(extracted)
        for new in payload.new[first:]:
            new.session = item.session_id

    @staticmethod
    def _read(ctx: JobContext, todo: _Todo) -> None:
        """Read the user's unread turns with the LLM reader, through the run's gate (its
        budget, its call log under ``read``), a batch of turns a call for all the user's
        sessions at once; the readings go to ``todo.read``. Nothing when no model is used
        or nothing is unread; an unanswered call leaves its turns unread."""
        gate = ctx.model()
        unread = todo.unread()
        if gate is None or not unread:
            return
        reader = LLMReader(GateClient(gate, todo.user_id, "read"))
        read = _Read(reader.version, reader.name)
        try:
            got = reader.read_many([t.text for t in unread])
        except LLMError as exc:
            read.error = str(exc)
        else:
            fast = load_reader(ctx.memory_settings.reader)
            for t, readings in zip(unread, got, strict=True):
                read.readings[t.id] = _whose_checked(readings, fast.read(t.text))
            _relate_corrections(reader, todo, read)
        todo.read = read

    def _session_line(self, ctx: JobContext, session_turns: list[Turn], max_chars: int,
                      answer: Any) -> tuple[str | None, list[dict[str, Any]], Method]:
        if isinstance(answer, dict) and isinstance(answer.get("summary"), str) \
                and answer["summary"].strip():
            head = f"Session {session_turns[0].at:%Y-%m-%d}: "
            facts = [f for f in answer.get("facts") or [] if isinstance(f, dict)]
            return one_line(head + answer["summary"], max_chars), facts, "llm"
        line = session_summary(session_turns, lambda texts: ctx.embedder.embed(texts),
                               max_chars=max_chars)
        return line, [], "offline"

    def _plan_task(self, ctx: JobContext, task: _TaskTodo, answer: Any, payload: _Payload,
                   plan: UserPlan) -> None:
        max_chars = ctx.settings.summary_max_chars
        t, steps, goal, feedback, done = task.row, task.steps, task.goal, task.feedback, \
            task.done
        line, method = None, "offline"
        if isinstance(answer, dict) and isinstance(answer.get("lesson"), str) \
                and answer["lesson"].strip():
            line, method = one_line(answer["lesson"], max_chars), "llm"
        if line is None:
            line = lesson_line(goal, t.status, steps, feedback, max_chars=max_chars)
        plan.method = combine_methods(plan.method, method)  # type: ignore[arg-type]
        source = ("task", str(t.task_id), int(t.version))
        finished = from_epoch(t.finished_at or t.updated_at)
        payload.new.append(_New(
            "lesson",
            MemoryInput(
                content=line, type=MemoryType.EXPERIENCE, scope=t.scope,
                confidence=0.9 if t.status == "done" else 0.8, importance=0.6,
                source=Source.CONSOLIDATION, task_id=t.task_id, verified=True,
                metadata={"lesson_of": "task", "task_status": t.status, "steps": len(steps),
                          "method": method},
                at=finished, valid_from=from_epoch(t.created_at),
            ),
            source=source, replaces=None if done is None else done[1],
            reason=f"task {t.task_id} finished ({t.status}, {len(steps)} steps)",
        ))

    # ------------------------------------------------------------ apply

    def apply(self, txn: RecordTxn, ctx: JobContext, plan: UserPlan) -> Applied:
        payload: _Payload = plan.payload
        out = Applied()
        if payload is None or (not payload.new and not payload.empty):
            return out
        user_id = plan.user_id
        txn.lock(user_id)  # serialise with the user's writers before checking
        folded = [n.source for n in payload.new if n.source is not None]
        folded += [(kind, source_id, last) for kind, source_id, last, _ in payload.empty]
        if not queries.sources_exist(txn.conn, user_id, folded):
            out.errors.append("the turns or tasks are gone (the user was erased); nothing "
                              "written")
            return out
        stale = self._forgotten_meanwhile(txn, user_id, payload)
        if stale:
            # planned from a turn forgotten since: nothing of that session is written or
            # marked folded (the next run folds what is left of it)
            payload = _Payload(
                new=[n for n in payload.new if n.session not in stale],
                empty=[e for e in payload.empty if not (e[0] == "session" and e[1] in stale)],
                turns={s: t for s, t in payload.turns.items() if s not in stale})
            if not payload.new and not payload.empty:
                return out
        writer = None
        if payload.new:
            try:
                writer = txn.writer(user_id, model=ctx.embedder.name)
            except ModelMismatchError as exc:
                out.errors.append(str(exc))
                return out
        for new in payload.new:
            assert writer is not None
            out.actions.extend(self._write_one(txn, writer, user_id, new, out.errors,
                                               run_id=ctx.run_id or ""))
        for kind, source_id, last, why in payload.empty:
            out.actions.append(_mark(txn.conn, user_id, kind, source_id, last, None, why,
                                     now=ctx.now, run_id=ctx.run_id or ""))
        return out

    @staticmethod
    def _forgotten_meanwhile(txn: RecordTxn, user_id: str, payload: _Payload) -> set[str]:
        """The sessions one of whose planned turns is gone (forgotten after the plan)."""
        planned = [t for ids in payload.turns.values() for t in ids]
        if not planned:
            return set()
        present = queries.turns_present(txn.conn, user_id, planned)
        return {s for s, ids in payload.turns.items() if not set(ids) <= present}

    def _write_one(self, txn: RecordTxn, writer: WriteTxn, user_id: str, new: _New,
                   errors: list[str], *, run_id: str) -> list[PlannedAction]:
        """Write one record through the write policy; record everything it changed."""
        item = new.item
        assert new.vector is not None
        watch = writer.watch_ids(item)
        before = txn.snapshot(user_id, watch)
        decision = writer.write_input(item, new.vector, new.sentences)
        done: list[PlannedAction] = []
        after = txn.snapshot(user_id, watch)
        for memory_id, old in before.items():
            b, a = changed_columns(old, after.get(memory_id, old))
            if a:
                done.append(PlannedAction(user_id, memory_id, "update",
                                          f"{new.action}: {decision.reason}", b, a))
        record_id = decision.record_id
        if decision.stored and record_id is not None:
            row = writer.pending[record_id]
            done.append(PlannedAction(
                user_id, record_id, new.action, new.reason, None,
                {"content": row["content"], "type": row["type"], "scope": row["scope"],
                 "status": row["status"]}))
            if new.replaces and new.replaces != record_id:
                done.extend(self._supersede_previous(txn, writer, user_id, new.replaces,
                                                     record_id, errors))
        elif decision.outcome.startswith("dropped"):
            errors.append(f"{new.action} for {user_id}: {decision.outcome}: {decision.reason}")
        if new.source is not None:
            kind, source_id, last = new.source
            done.append(_mark(txn.conn, user_id, kind, source_id, last, record_id, new.reason,
                              now=txn.now, run_id=run_id))
        return done

    def _supersede_previous(self, txn: RecordTxn, writer: WriteTxn, user_id: str,
                            old_id: str, new_id: str, errors: list[str]
                            ) -> list[PlannedAction]:
        current = txn.snapshot(user_id, [old_id]).get(old_id)
        if current is None or current["status"] == Status.SUPERSEDED.value:
            return []
        row = writer.pending[new_id]
        own = txn.snapshot(user_id, [old_id], ("valid_from",))[old_id]["valid_from"]
        after = superseded(by=new_id, by_valid_from=float(row["valid_from"]),
                           own_valid_from=float(own), now=txn.now)
        before = {k: current[k] for k in after}
        action = PlannedAction(user_id, old_id, "supersede",
                               "a newer summary of the same source", before, after)
        done, errs = txn.update(user_id, [action], verify=True)
        errors.extend(errs)
        if done:
            row["supersedes"] = old_id
        return done


def _mark(conn: Connection, user_id: str, kind: str, source_id: str, last: int,
          memory_id: str | None, reason: str, *, now: float, run_id: str) -> PlannedAction:
    """Record (and upsert) that a source has been folded up to ``last``."""
    where = (sources.c.user_id == user_id, sources.c.kind == kind,
             sources.c.source_id == source_id)
    old = conn.execute(select(sources).where(*where)).first()
    before = None if old is None else {
        "kind": kind, "source_id": source_id, "last_item": int(old.last_item),
        "memory_id": old.memory_id, "run_id": old.run_id, "at": float(old.at)}
    after = {"kind": kind, "source_id": source_id, "last_item": last, "memory_id": memory_id,
             "run_id": run_id, "at": now}
    if old is None:
        conn.execute(insert(sources).values(user_id=user_id, **after))
    else:
        conn.execute(update(sources).where(*where).values(**after))
    return PlannedAction(user_id, None, "mark_source", reason, before, after)


def _fact(fact: dict[str, Any], scope: str, session_id: str, session_turns: list[Turn]
          ) -> _New | None:
    kinds = {"preference": MemoryType.PREFERENCE, "profile": MemoryType.PROFILE,
             "knowledge": MemoryType.KNOWLEDGE}
    kind = kinds.get(str(fact.get("type", "knowledge")), MemoryType.KNOWLEDGE)
    try:
        confidence = min(_LLM_FACT_CONFIDENCE_CAP, float(fact.get("confidence", 0.6)))
    except (TypeError, ValueError):
        confidence = 0.6
    attribute, value = fact.get("attribute"), fact.get("value")
    slot = None
    if isinstance(attribute, str) and attribute.strip() and isinstance(value, str) \
            and value.strip():
        # the fast extractor's attribute names, so both paths fill (and supersede) one slot
        slot = Slot("user", canonical_attribute(attribute), value.strip())
    content = str(fact.get("content", "")).strip()[:1000]
    if not content:
        return None
    # a value the model read as replacing an earlier one supersedes it (history kept)
    change = fact.get("change") is True and slot is not None
    metadata: dict[str, Any] = {"extracted_by": "llm",
                                "turns": [session_turns[0].id, session_turns[-1].id]}
    if change:
        metadata["correction"] = True
    try:
        item = MemoryInput(
            content=content, type=kind, scope=scope, slot=slot, confidence=max(0.0, confidence),
            source=Source.INFERRED, session_id=session_id, correction=change,
            metadata=metadata, at=session_turns[-1].at,
        )
    except ValueError:
        return None
    return _New("extract", item, reason="read from the session by the LLM")


def _read_facts(todo: _Todo, scope: str, item: _SessionTodo, plan: UserPlan) -> list[_New]:
    """The memories of what the LLM reader read in the session's unread turns, formed as
    ``observe`` forms a reader's readings
    (:func:`~memstrata.memory.formation.candidates_from_readings`): only the user's own
    values holding now, in the user's words; someone else's change, a plan or the past
    changes nothing of the user's."""
    read = todo.read
    assert read is not None
    if read.error is not None:
        plan.errors.append(f"session {item.session_id}: the reader read nothing "
                           f"({read.error})")
        return []
    held = [Held(a, v) for sc, a, v, _ in todo.held if sc == scope]
    out: list[_New] = []
    for t in item.turns:
        readings = read.readings.get(t.id)
        if readings is None:
            continue
        stored = to_stored(readings, read.version)
        for c in candidates_from_readings(t.text, readings, held, reader_name=read.name,
                                          reader_version=read.version,
                                          corrected=read.corrected.get(t.id, ())):
            if c.reading is None:
                continue  # the rules' share of the turn, formed by ``observe``
            metadata: dict[str, Any] = {
                "extracted_by": "llm", "turns": [t.id, t.id], "turn_id": t.id,
                "read_by": read.version, "readings": stored, "reading": dict(c.reading)}
            if c.correction:
                metadata["correction"] = True
            try:
                fact = MemoryInput(
                    content=c.content[:1000], type=c.type, scope=scope, slot=c.slot,
                    confidence=min(_LLM_FACT_CONFIDENCE_CAP, c.confidence),
                    source=Source.INFERRED, session_id=item.session_id,
                    correction=c.correction, metadata=metadata, at=t.at, valid_from=t.at)
            except ValueError as exc:
                plan.errors.append(f"session {item.session_id}: an unusable reading ({exc})")
                continue
            out.append(_New("extract", fact, reason=f"read from turn {t.id} by the LLM "
                                                    "reader"))
    return out


def _relate_corrections(reader: LLMReader, todo: _Todo, read: _Read) -> None:
    """Which held name or birthday each read turn sets right, related by the LLM reader
    through the run's gate as ``observe`` relates with its reader
    (:func:`~memstrata.memory.formation.corrected_attributes`): a correction replaces the
    held value at once, anything else (a contradiction said in passing, no answer, the
    budget spent) leaves a conflict to confirm. Asked only for a turn read with a new value
    of such an attribute."""
    def relate(older: str, newer: str) -> Relation:
        try:
            return reader.relate(older, newer)
        except LLMError:
            return Relation(kind="unrelated", confidence=0.0)

    for s in todo.sessions:
        scope = _scope_of([dict(t.metadata) for t in s.turns])
        _relate_session(relate, s.turns, read,
                        [(a, v, said) for sc, a, v, said in todo.held if sc == scope])


def _relate_session(relate: Callable[[str, str], Relation], turns: Sequence[Turn],
                    read: _Read, held_here: Sequence[tuple[str, str, str]]) -> None:
    """:func:`_relate_corrections` of one session's ``turns``, with ``held_here`` the
    (attribute, value, statement) the user holds in the session's scope."""
    held = [Held(a, v) for a, v, _ in held_here]
    said = {a: statement for a, _, statement in held_here}
    for t in turns:
        readings = read.readings.get(t.id)
        if readings:
            corrected = corrected_attributes(relate, t.text, readings, held, lambda _: said)
            if corrected:
                read.corrected[t.id] = corrected


def _whose_checked(readings: list[Reading], fast: Sequence[Reading]) -> list[Reading]:
    """The LLM reader's ``readings`` of a turn but a value of the user's own that the
    memory's reader (``fast``, the one ``observe`` uses) read in the same turn as someone
    else's: whose fact it is stands only where the two readers do not disagree on it. A
    small model reads "My sister moved to Shenzhen" as the user's city; the trained reader
    does not. When a value holds (now, past, a plan) stays the LLM's to say: that is what
    it reads better ("Swapping Leeds for Bristol was the best thing for my commute")."""
    others = [f for f in fast if f.holder == "other"]
    return [r for r in readings
            if not (r.holder == "user" and any(
                f.attribute == r.attribute and value_matches(r.attribute, f.value, r.value)
                for f in others))]


def _registry_attribute(fact: dict[str, Any]) -> bool:
    """Whether a fact of the session answer names an attribute of the reading registry."""
    attribute = fact.get("attribute")
    return isinstance(attribute, str) and bool(attribute.strip()) \
        and canonical_attribute(attribute) in registry()


def _statements(scope: str, session_id: str, session_turns: Sequence[Turn]) -> list[_New]:
    """The user's unread first-person statements of a session, one memory each (offline)."""
    out = []
    for t in session_turns:
        text = t.text.strip()
        # a statement ``observe`` kept at once is a memory already
        if t.role.lower() not in ("user", "human") or t.metadata.get("fast_extracted") \
                or t.metadata.get("kept_as_statement") or not worth_keeping(text):
            continue
        try:
            item = MemoryInput(
                content=text[:1000], type=MemoryType.KNOWLEDGE, scope=scope, confidence=0.6,
                source=Source.INFERRED, session_id=session_id,
                metadata={"extracted_by": "offline", "turns": [t.id, t.id]},
                at=t.at, valid_from=t.at,
            )
        except ValueError:
            continue
        out.append(_New("extract", item, reason="an unread statement of the user, kept "
                                                "offline"))
    return out


def _transcript(session_turns: Sequence[Turn]) -> str:
    lines = []
    for t in session_turns:
        unread = t.role.lower() in ("user", "human") and not t.metadata.get("fast_extracted")
        lines.append(f"{t.role}{' [unread]' if unread else ''}: {t.text}")
    text = "\n".join(lines)
    return text[-_TRANSCRIPT_CHARS:]


def _trajectory(goal: dict[str, Any], status: str, steps: Sequence[dict[str, Any]],
                feedback: dict[str, Any] | None) -> str:
    lines = [f"goal: {goal}", f"final status: {status}"]
    for n, s in enumerate(steps, 1):
        lines.append(f"{n}. action={s.get('action')} outcome={s.get('outcome')} "
                     f"error={s.get('error_type')} observation={str(s.get('observation'))[:160]}")
    if feedback:
        lines.append(f"user feedback: {feedback}")
    return "\n".join(lines)[-_TRANSCRIPT_CHARS:]
