"""Task ids are scoped by user: another user's task id neither leaks nor can be claimed
(composite key (user_id, task_id), migration 0005), on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from memstrata import MemoryManager, Step
from memstrata.errors import InvalidInputError, TaskNotFoundError


def test_the_same_task_id_belongs_to_each_user_separately(manager: MemoryManager):
    ep = manager.episodic
    alice = ep.start_task("alice", "refund order A1", task_id="T-1")
    ep.record_step("alice", "T-1", Step(thought="alice's step", action="query_order"))
    # bob picks the same id: he gets his own task, and learns nothing about alice's
    bob = ep.start_task("bob", "plan a trip", task_id="T-1")
    assert (bob.user_id, bob.task_id, bob.goal) == ("bob", "T-1", {"intent": "plan a trip"})
    assert ep.record_step("bob", "T-1", Step(thought="bob's step")) == 1
    assert ep.record_step("alice", "T-1", Step(thought="alice again")) == 2
    assert [s.step.thought for s in ep.trajectory("alice", "T-1").steps] == [
        "alice's step", "alice again"]
    assert [s.step.thought for s in ep.trajectory("bob", "T-1").steps] == ["bob's step"]
    assert ep.get_task("alice", "T-1").goal == alice.goal
    ep.update_task("bob", "T-1", status="abandoned")
    assert ep.get_task("alice", "T-1").status == "pending"
    # a collision with one's own id is refused; the message names no other user
    with pytest.raises(InvalidInputError) as err:
        ep.start_task("bob", "again", task_id="T-1")
    assert "alice" not in str(err.value)


def test_a_claim_cannot_tell_whether_another_user_has_the_id(manager: MemoryManager):
    ep = manager.episodic
    ep.start_task("alice", "secret plan", task_id="X-9")
    taken = ep.start_task("bob", "mine", task_id="X-9")  # same outcome as a fresh id
    fresh = ep.start_task("bob", "mine", task_id="Y-9")
    assert (taken.status, taken.version, taken.goal) == (fresh.status, fresh.version, fresh.goal)
    with pytest.raises(TaskNotFoundError):
        ep.get_task("carol", "X-9")
    assert [t.task_id for t in ep.list_tasks("bob")] and \
        {t.goal["intent"] for t in ep.list_tasks("bob")} == {"mine"}


def test_forget_user_removes_only_their_task_of_a_shared_id(manager: MemoryManager):
    ep = manager.episodic
    ep.start_task("alice", "a", task_id="T-2")
    ep.start_task("bob", "b", task_id="T-2")
    ep.record_step("alice", "T-2", Step(thought="a1"))
    ep.record_step("bob", "T-2", Step(thought="b1"))
    manager.forget_user("alice")
    assert [s.step.thought for s in ep.trajectory("bob", "T-2").steps] == ["b1"]
    with pytest.raises(TaskNotFoundError):
        ep.get_task("alice", "T-2")
