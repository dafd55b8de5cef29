"""Episodic memory: what happened, in order.

* **Trajectories** - per task: the goal, every step (thought, action,
  arguments, observation, outcome, error type, latency, tokens), the final
  status and the user's feedback. Stored as JSON (JSONB on PostgreSQL).
* **The task state table** - ``pending -> running -> done / failed / abandoned``
  plus the planner's own state (subtasks, attempts) as JSON, with a version
  for optimistic concurrency, so :meth:`EpisodicMemory.resume` can continue an
  interrupted task where it stopped.
* **Raw conversation turns** per session, appended in milliseconds; the
  consolidation jobs read them later.

Steps are numbered per task; recording a step number twice with the same
payload is a no-op (a retried write), with a different payload an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter
from sqlalchemy import func, insert, select, update

from memstrata.clock import Clock, from_epoch, to_epoch
from memstrata.config import DEFAULT_SCOPE
from memstrata.errors import InvalidInputError, StateError, TaskNotFoundError
from memstrata.memory._db import Database
from memstrata.memory._schema import task_steps, tasks, turns
from memstrata.memory._store import new_id
from memstrata.memory._validate import (
    MAX_TURN_TEXT,
    TASK_ID_WIDTH,
    TURN_SESSION_WIDTH,
    check_count,
    check_json,
    check_limit,
    check_mapping,
    check_scope,
    check_text,
    check_turn,
    check_user,
)

__all__ = [
    "EpisodicMemory",
    "InvalidTransitionError",
    "RecordedStep",
    "Step",
    "TaskRecord",
    "TaskStatus",
    "Trajectory",
    "TurnRecord",
]

TaskStatus = Literal["pending", "running", "done", "failed", "abandoned"]
TERMINAL: frozenset[str] = frozenset({"done", "abandoned"})
_TRANSITIONS: Mapping[str, frozenset[str]] = {
    "pending": frozenset({"running", "done", "failed", "abandoned"}),
    "running": frozenset({"pending", "done", "failed", "abandoned"}),
    "failed": frozenset({"running", "pending", "abandoned"}),
    "done": frozenset(),
    "abandoned": frozenset(),
}
MAX_TEXT = MAX_TURN_TEXT
#: step numbers are a 32-bit INTEGER column
MAX_STEP_NO = 2**31 - 1


class InvalidTransitionError(StateError):
    """A task status change the state table does not allow (e.g. done -> running)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a trajectory, as the agent loop records it."""

    thought: str | None = None
    action: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    observation: Any = None
    #: e.g. "success", "failure", "error", "refused", "final"
    outcome: str | None = None
    error_type: str | None = None
    latency_ms: float | None = None
    tokens: int | None = None
    subtask_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    kind: Literal["step"] = "step"

    __pydantic_config__ = ConfigDict(extra="forbid")


_STEP = TypeAdapter(Step)


@dataclass(frozen=True, slots=True)
class RecordedStep:
    step_no: int
    at: datetime
    step: Step


@dataclass(frozen=True, slots=True)
class TaskRecord:
    task_id: str
    user_id: str
    scope: str
    goal: dict[str, Any]
    status: TaskStatus
    state: dict[str, Any]
    feedback: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    version: int


@dataclass(frozen=True, slots=True)
class Trajectory:
    task: TaskRecord
    steps: list[RecordedStep]

    @property
    def next_step_no(self) -> int:
        return self.steps[-1].step_no + 1 if self.steps else 1


@dataclass(frozen=True, slots=True)
class TurnRecord:
    id: int
    user_id: str
    session_id: str
    role: str
    text: str
    at: datetime
    metadata: dict[str, Any]


def _task(row: Any) -> TaskRecord:
    return TaskRecord(
        task_id=row.task_id,
        user_id=row.user_id,
        scope=row.scope,
        goal=dict(row.goal),
        status=row.status,
        state=dict(row.state),
        feedback=None if row.feedback is None else dict(row.feedback),
        created_at=from_epoch(row.created_at),
        updated_at=from_epoch(row.updated_at),
        finished_at=None if row.finished_at is None else from_epoch(row.finished_at),
        version=int(row.version),
    )


def _status(status: Any) -> str:
    if not isinstance(status, str) or status not in _TRANSITIONS:
        raise InvalidInputError(f"unknown task status; a task is one of {sorted(_TRANSITIONS)}")
    return status


def _task_id(task_id: Any) -> str:
    return check_text(task_id, "task_id", max_len=TASK_ID_WIDTH)


class EpisodicMemory:
    def __init__(self, *, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    # ------------------------------------------------------------ tasks

    def start_task(
        self,
        user_id: str,
        goal: str | Mapping[str, Any],
        *,
        scope: str = DEFAULT_SCOPE,
        task_id: str | None = None,
        state: Mapping[str, Any] | None = None,
        status: TaskStatus = "pending",
    ) -> TaskRecord:
        user_id = check_user(user_id)
        check_scope(scope, None)
        if isinstance(goal, str):
            goal_doc = check_mapping({"intent": check_text(goal, "the goal")}, "goal")
        else:
            goal_doc = check_mapping(goal, "goal")
        if not goal_doc:
            raise InvalidInputError("a task needs a goal")
        status = _status(status)  # type: ignore[assignment]
        task_id = _task_id(new_id() if task_id is None else task_id)
        state_doc = {} if state is None else check_mapping(state, "state")
        now = to_epoch(self._clock.now())
        with self._db.write() as conn:
            # task ids are per user (key (user_id, task_id)): only the caller's own tasks
            # are looked at, so another user's id is neither detected nor claimed
            exists = conn.execute(select(tasks.c.task_id).where(
                tasks.c.user_id == user_id, tasks.c.task_id == task_id)).first()
            if exists is not None:
                raise InvalidInputError(f"task {task_id!r} already exists")
            conn.execute(
                insert(tasks).values(
                    task_id=task_id,
                    user_id=user_id,
                    scope=scope,
                    goal=goal_doc,
                    status=status,
                    state=state_doc,
                    feedback=None,
                    created_at=now,
                    updated_at=now,
                    finished_at=None,
                    version=1,
                )
            )
        return self.get_task(user_id, task_id)

    def get_task(self, user_id: str, task_id: str) -> TaskRecord:
        user_id = check_user(user_id)
        task_id = _task_id(task_id)
        with self._db.read() as conn:
            row = conn.execute(
                select(tasks).where(tasks.c.user_id == user_id, tasks.c.task_id == task_id)
            ).first()
        if row is None:
            raise TaskNotFoundError(f"no task {task_id!r} for user {user_id!r}")
        return _task(row)

    def update_task(
        self,
        user_id: str,
        task_id: str,
        *,
        status: TaskStatus | None = None,
        state: Mapping[str, Any] | None = None,
        feedback: Mapping[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> TaskRecord:
        """Change status / state / feedback atomically; bumps the version.

        With ``expected_version`` the update fails with :class:`StateError` if
        another writer changed the task since it was read.
        """
        user_id = check_user(user_id)
        task_id = _task_id(task_id)
        if status is not None:
            status = _status(status)  # type: ignore[assignment]
        if expected_version is not None:
            check_count(expected_version, "expected_version", 1, 2**31 - 1)
        state_doc = None if state is None else check_mapping(state, "state")
        feedback_doc = None if feedback is None else check_mapping(feedback, "feedback")
        now = to_epoch(self._clock.now())
        with self._db.write() as conn:
            row = conn.execute(
                select(tasks)
                .where(tasks.c.user_id == user_id, tasks.c.task_id == task_id)
                .with_for_update()
            ).first()
            if row is None:
                raise TaskNotFoundError(f"no task {task_id!r} for user {user_id!r}")
            if expected_version is not None and row.version != expected_version:
                raise StateError(
                    f"task {task_id!r} is at version {row.version}, expected {expected_version}"
                )
            values: dict[str, Any] = {"updated_at": now, "version": row.version + 1}
            if status is not None and status != row.status:
                if status not in _TRANSITIONS[row.status]:
                    raise InvalidTransitionError(
                        f"task {task_id!r} cannot go from {row.status} to {status}"
                    )
                values["status"] = status
                if status in ("done", "failed", "abandoned"):
                    values["finished_at"] = now
            if state_doc is not None:
                values["state"] = state_doc
            if feedback_doc is not None:
                values["feedback"] = feedback_doc
            conn.execute(
                update(tasks)
                .where(tasks.c.user_id == user_id, tasks.c.task_id == task_id)
                .values(**values)
            )
        return self.get_task(user_id, task_id)

    def finish_task(
        self,
        user_id: str,
        task_id: str,
        status: TaskStatus,
        *,
        feedback: Mapping[str, Any] | None = None,
    ) -> TaskRecord:
        if status not in ("done", "failed", "abandoned"):
            raise InvalidInputError("a task finishes as done, failed or abandoned")
        return self.update_task(user_id, task_id, status=status, feedback=feedback)

    def record_step(
        self, user_id: str, task_id: str, step: Step | Mapping[str, Any], *,
        step_no: int | None = None,
    ) -> int:
        """Append a step; returns its number. Idempotent for a repeated identical step."""
        user_id = check_user(user_id)
        task_id = _task_id(task_id)
        if step_no is not None:
            check_count(step_no, "step_no", 1, MAX_STEP_NO)
        if not isinstance(step, Step):
            if not isinstance(step, Mapping):
                raise InvalidInputError(f"a step is a Step or a mapping, not {type(step).__name__}")
            try:
                step = _STEP.validate_python(dict(step))
            except ValueError as exc:
                raise InvalidInputError(f"invalid step: {exc}") from exc
        try:
            dumped = _STEP.dump_python(step, mode="json")
        except ValueError as exc:  # pydantic cannot serialise a value in it
            raise InvalidInputError(f"invalid step: {exc}") from exc
        payload = check_json(dumped, "step")
        now = to_epoch(self._clock.now())
        with self._db.write() as conn:
            task = conn.execute(
                select(tasks.c.status)
                .where(tasks.c.user_id == user_id, tasks.c.task_id == task_id)
                .with_for_update()
            ).first()
            if task is None:
                raise TaskNotFoundError(f"no task {task_id!r} for user {user_id!r}")
            last = conn.execute(
                select(func.max(task_steps.c.step_no)).where(
                    task_steps.c.user_id == user_id, task_steps.c.task_id == task_id)
            ).scalar_one_or_none() or 0
            if step_no is None:
                step_no = last + 1
            elif step_no <= last:
                existing = conn.execute(
                    select(task_steps.c.payload).where(
                        task_steps.c.user_id == user_id, task_steps.c.task_id == task_id,
                        task_steps.c.step_no == step_no,
                    )
                ).scalar_one_or_none()
                if existing is not None and existing == payload:
                    return step_no
                raise StateError(f"step {step_no} of task {task_id!r} is already recorded")
            conn.execute(
                insert(task_steps).values(
                    task_id=task_id, user_id=user_id, step_no=step_no, payload=payload, at=now
                )
            )
            conn.execute(
                update(tasks)
                .where(tasks.c.user_id == user_id, tasks.c.task_id == task_id)
                .values(updated_at=now)
            )
        return step_no

    def trajectory(self, user_id: str, task_id: str) -> Trajectory:
        task = self.get_task(user_id, task_id)
        with self._db.read() as conn:
            rows = conn.execute(
                select(task_steps.c.step_no, task_steps.c.at, task_steps.c.payload)
                .where(task_steps.c.user_id == task.user_id, task_steps.c.task_id == task_id)
                .order_by(task_steps.c.step_no)
            ).all()
        steps = [
            RecordedStep(r.step_no, from_epoch(r.at), _STEP.validate_python(r.payload))
            for r in rows
        ]
        return Trajectory(task, steps)

    def resume(self, user_id: str, task_id: str) -> Trajectory:
        """Everything needed to continue a task: its state table and steps so far.

        A finished (done / abandoned) task cannot be resumed.
        """
        found = self.trajectory(user_id, task_id)
        if found.task.status in TERMINAL:
            raise InvalidTransitionError(
                f"task {task_id!r} is {found.task.status}; there is nothing to resume"
            )
        return found

    def list_tasks(
        self, user_id: str, *, status: TaskStatus | None = None, limit: int = 100
    ) -> list[TaskRecord]:
        user_id = check_user(user_id)
        limit, _ = check_limit(limit)
        query = select(tasks).where(tasks.c.user_id == user_id)
        if status is not None:
            query = query.where(tasks.c.status == _status(status))
        query = query.order_by(tasks.c.updated_at.desc()).limit(limit)
        with self._db.read() as conn:
            return [_task(r) for r in conn.execute(query)]

    # ------------------------------------------------------------ turns

    def append_turn(
        self,
        user_id: str,
        session_id: str,
        role: str,
        text: str,
        *,
        at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        user_id = check_user(user_id)
        moment, meta = check_turn(session_id, role, text, at, metadata)
        when = to_epoch(moment) if moment is not None else to_epoch(self._clock.now())
        with self._db.write() as conn:
            result = conn.execute(
                insert(turns)
                .values(
                    user_id=user_id,
                    session_id=session_id,
                    role=role,
                    text=text,
                    at=when,
                    metadata=meta,
                )
                .returning(turns.c.id)
            )
            return int(result.scalar_one())

    def turns(
        self, user_id: str, session_id: str | None = None, *, limit: int | None = None
    ) -> list[TurnRecord]:
        """Turns of a session (or of all sessions), oldest first."""
        user_id = check_user(user_id)
        query = select(turns).where(turns.c.user_id == user_id)
        if session_id is not None:
            check_text(session_id, "session id", max_len=TURN_SESSION_WIDTH)
            query = query.where(turns.c.session_id == session_id)
        query = query.order_by(turns.c.at, turns.c.id)
        if limit is not None:
            query = query.limit(check_limit(limit)[0])
        with self._db.read() as conn:
            return [
                TurnRecord(r.id, r.user_id, r.session_id, r.role, r.text, from_epoch(r.at),
                           dict(r.metadata))
                for r in conn.execute(query)
            ]

    def sessions(self, user_id: str) -> list[str]:
        user_id = check_user(user_id)
        with self._db.read() as conn:
            return list(
                conn.execute(
                    select(turns.c.session_id)
                    .where(turns.c.user_id == user_id)
                    .group_by(turns.c.session_id)
                    .order_by(func.min(turns.c.at))
                ).scalars()
            )
