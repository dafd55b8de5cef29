"""Episodic memory: trajectories, the task state table, resume, raw turns."""

from __future__ import annotations

import pytest

from memstrata import ManualClock, MemoryManager, Step
from memstrata.errors import InvalidInputError, StateError, TaskNotFoundError
from memstrata.memory.episodic import InvalidTransitionError


def test_trajectory_round_trip_and_resume(manager: MemoryManager, clock: ManualClock):
    ep = manager.episodic
    task = ep.start_task("u", {"intent": "refund order A1", "criteria": ["refund filed"]},
                         scope="orders", state={"subtasks": [{"id": "s1", "state": "pending"}]})
    assert task.status == "pending" and task.version == 1
    running = ep.update_task("u", task.task_id, status="running", expected_version=1)
    n1 = ep.record_step("u", task.task_id, Step(
        thought="look the order up", action="query_order", args={"order_id": "A1"},
        observation={"status": "delivered"}, outcome="success", latency_ms=12.5, tokens=321,
        subtask_id="s1"))
    clock.advance(seconds=5)
    n2 = ep.record_step("u", task.task_id, {"thought": "file refund", "action": "apply_refund",
                                            "outcome": "error", "error_type": "timeout"})
    assert (n1, n2) == (1, 2)
    # a retried write of the same step is a no-op; a different payload is refused
    assert ep.record_step("u", task.task_id, {"thought": "file refund", "action": "apply_refund",
                                              "outcome": "error", "error_type": "timeout"},
                          step_no=2) == 2
    with pytest.raises(StateError):
        ep.record_step("u", task.task_id, {"thought": "other"}, step_no=2)
    ep.update_task("u", task.task_id, state={"subtasks": [{"id": "s1", "state": "done"}]},
                   expected_version=running.version)
    with pytest.raises(StateError):  # stale version
        ep.update_task("u", task.task_id, state={}, expected_version=running.version)
    resumed = ep.resume("u", task.task_id)
    assert [s.step_no for s in resumed.steps] == [1, 2] and resumed.next_step_no == 3
    assert resumed.steps[0].step.args == {"order_id": "A1"}
    assert resumed.steps[0].step.observation == {"status": "delivered"}
    assert resumed.task.state["subtasks"][0]["state"] == "done"
    done = ep.finish_task("u", task.task_id, "done", feedback={"rating": 5})
    assert done.finished_at == clock.now() and done.feedback == {"rating": 5}
    with pytest.raises(InvalidTransitionError):
        ep.update_task("u", task.task_id, status="running")
    with pytest.raises(InvalidTransitionError):
        ep.resume("u", task.task_id)
    assert [t.task_id for t in ep.list_tasks("u", status="done")] == [task.task_id]


def test_tasks_are_per_user(manager: MemoryManager):
    task = manager.episodic.start_task("alice", "plan a trip")
    for call in (
        lambda: manager.episodic.get_task("bob", task.task_id),
        lambda: manager.episodic.record_step("bob", task.task_id, {"thought": "x"}),
        lambda: manager.episodic.resume("bob", task.task_id),
    ):
        with pytest.raises(TaskNotFoundError):
            call()
    assert manager.episodic.list_tasks("bob") == []


def test_turns_and_bad_input(manager: MemoryManager, clock: ManualClock):
    ep = manager.episodic
    ep.append_turn("u", "s1", "user", "hello")
    clock.advance(seconds=1)
    ep.append_turn("u", "s1", "assistant", "hi, how can I help?")
    ep.append_turn("u", "s2", "user", "book a table", metadata={"lang": "en"})
    assert [t.text for t in ep.turns("u", "s1")] == ["hello", "hi, how can I help?"]
    assert ep.sessions("u") == ["s1", "s2"]
    assert ep.turns("other") == []
    for bad in (("u", "", "user", "x"), ("u", "s", "", "x"), ("u", "s", "user", "  ")):
        with pytest.raises(InvalidInputError):
            ep.append_turn(*bad)
    with pytest.raises(InvalidInputError):
        ep.start_task("u", "  ")
    with pytest.raises(InvalidInputError):
        ep.record_step("u", "nope", {"unknown_field": 1})
    assert len(ep.turns("u")) == 3
