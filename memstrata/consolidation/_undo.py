"""Undo: replay a run's recorded actions backwards, per user.

An undo is itself a run (job ``undo``, holding the lease of the job it undoes,
batched, checkpointed, resumable, with its own recorded actions). For every
action of the target run, newest first:

* a changed record gets its ``before`` columns back - only if it still holds the
  run's ``after`` values; a record changed since (used, corrected, merged by a
  later run) is left alone and reported, so undo never clobbers newer facts;
* a record the run created (a summary, a lesson, an extracted fact) is removed
  (with its vector; a content-free ``undone`` event remains);
* a source marker goes back to what it was, so the next ``summarize`` folds the
  session again;
* a purge cannot be undone (the row is gone) and is reported as such; nor can an
  action on a record forgotten since (its action is a content-free tombstone).

Every restored row gets a fresh ``seq`` so the derived indexes re-read it.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import Connection, delete, insert

from memstrata.consolidation import _runlog
from memstrata.consolidation._job import Applied, JobContext, UserPlan
from memstrata.consolidation._tables import sources
from memstrata.consolidation.erasure import FORGOTTEN
from memstrata.consolidation.reports import ActionRecord, PlannedAction
from memstrata.memory import RecordTxn

__all__ = ["UndoJob"]


class UndoJob:
    name = "undo"
    plan_in_txn = True

    def __init__(self, target_run: str, target_job: str) -> None:
        self.target = target_run
        self.lease = target_job
        self._page: list[str] = []
        self._prefetched: dict[str, list[ActionRecord]] = {}

    def users(self, conn: Connection, ctx: JobContext, after: str | None,
              limit: int | None) -> list[str]:
        page = _runlog.action_users(conn, self.target, after, limit)
        if limit is not None:
            self._page = page
        return page

    def _actions(self, conn: Connection, user_id: str) -> list[ActionRecord]:
        """The user's recorded actions, newest first; a page of users is read in one query
        (the actions are indexed by run, not by run and user)."""
        if user_id not in self._prefetched:
            wanted = self._page if user_id in self._page else [user_id]
            self._prefetched = {u: [] for u in wanted}
            for a in _runlog.list_actions(conn, self.target, user_ids=wanted,
                                          newest_first=True):
                self._prefetched[a.user_id].append(a)
        return self._prefetched.pop(user_id)

    def plan(self, conn: Connection, ctx: JobContext, user_id: str) -> UserPlan:
        plan = UserPlan(user_id, method="none")
        for a in self._actions(conn, user_id):
            why = f"undo of run {self.target} ({a.action}: {a.reason})"
            if a.reason == "forgotten" and FORGOTTEN in (a.before, a.after):
                plan.errors.append(f"{a.action} {a.memory_id}: the record was forgotten since; "
                                   "nothing to restore")
            elif a.action == "mark_source":
                plan.actions.append(PlannedAction(user_id, None, "restore_source", why,
                                                  a.after, a.before))
            elif a.after is None:
                plan.errors.append(f"{a.action} {a.memory_id}: purged for good, cannot restore")
            elif a.before is None:
                plan.actions.append(PlannedAction(user_id, a.memory_id, "remove", why,
                                                  {"status": a.after.get("status")}, None))
            else:
                plan.actions.append(PlannedAction(user_id, a.memory_id, "restore", why,
                                                  a.after, a.before))
        return plan

    def apply(self, txn: RecordTxn, ctx: JobContext, plan: UserPlan) -> Applied:
        out = Applied()
        if not plan.actions:
            return out
        if not txn.lock(plan.user_id):
            out.errors.append("the user was erased; nothing to restore")
            return out
        repeated = max(Counter(a.memory_id for a in plan.actions if a.memory_id).values(),
                       default=0) > 1
        pending: list[PlannedAction] = []

        def flush() -> None:
            done, errors = txn.update(plan.user_id, pending, verify=True, restamp=True)
            out.actions.extend(done)
            out.errors.extend(errors)
            pending.clear()

        for action in plan.actions:
            if action.action == "restore":
                pending.append(action)
                if repeated:
                    flush()
                continue
            flush()
            if action.action == "remove":
                self._remove(txn, plan.user_id, action, out)
            elif action.action == "restore_source":
                self._restore_source(txn.conn, plan.user_id, action, out)
        flush()
        return out

    def _remove(self, txn: RecordTxn, user_id: str, action: PlannedAction, out: Applied
                ) -> None:
        memory_id = str(action.memory_id)
        if not txn.delete(user_id, [memory_id], action="undone", reason=action.reason):
            out.errors.append(f"remove {memory_id}: already gone")
            return
        out.actions.append(action)

    def _restore_source(self, conn: Connection, user_id: str, action: PlannedAction,
                        out: Applied) -> None:
        current = action.before or {}
        conn.execute(delete(sources).where(
            sources.c.user_id == user_id, sources.c.kind == current.get("kind"),
            sources.c.source_id == current.get("source_id")))
        if action.after is not None:
            conn.execute(insert(sources).values(user_id=user_id, **action.after))
        out.actions.append(action)
