"""The ``expire`` job: the retention policy, applied.

Per user, inside the batch transaction (it is pure SQL, so it plans under the
user's lock and needs no re-check):

* an ``active`` record past its expiry (so unused for a whole TTL - any use
  would have moved the expiry) is **demoted**: status ``demoted``, confidence
  multiplied by ``RetentionPolicy.demoted_confidence_factor``; it still answers
  recalls, ranked lower;
* a record unused for the further grace period
  (:meth:`RetentionPolicy.lifecycle` says ``purgeable``) is **deleted**: status
  ``deleted`` (a soft delete - it leaves recall and the derived indexes, and
  ``undo`` can bring it back);
* a ``demoted`` record that was used since (a recall or a reinforcing write
  moved its expiry into the future) is **revived**: ``active`` again with the
  confidence it had before demotion;
* a record ``deleted`` longer than ``purge_after_days`` ago is **purged**:
  hard-deleted with its vector (a content-free event remains). Purges cannot
  be undone.

Pinned records, rules and other types without a TTL never expire; records
pending the user's confirmation are left to the user (the briefing asks).
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from memstrata.clock import from_epoch
from memstrata.consolidation._job import Applied, JobContext, UserPlan
from memstrata.consolidation._tables import actions
from memstrata.consolidation.reports import PlannedAction
from memstrata.memory import RecordTxn, deleted, demoted, queries
from memstrata.types import Status

__all__ = ["ExpireJob"]

_ACTIVE = Status.ACTIVE.value
_DEMOTED = Status.DEMOTED.value
_DELETED = Status.DELETED.value


class ExpireJob:
    name = "expire"
    lease = "expire"
    plan_in_txn = True

    def users(self, conn: Connection, ctx: JobContext, after: str | None,
              limit: int | None) -> list[str]:
        return queries.user_page(conn, after, limit)

    def plan(self, conn: Connection, ctx: JobContext, user_id: str) -> UserPlan:
        now = ctx.now
        now_dt = from_epoch(now)
        retention = ctx.memory_settings.retention
        factor = retention.demoted_confidence_factor
        purge_before = now - ctx.settings.purge_after_days * 86400.0
        rows = queries.expiry_candidates(conn, user_id, now, purge_before)
        plan = UserPlan(user_id, method="offline")
        revive_ids = []
        for r in rows:
            if r.status == _DELETED:
                plan.actions.append(PlannedAction(
                    user_id, r.id, "purge",
                    f"deleted more than {ctx.settings.purge_after_days:g} days ago",
                    {"status": _DELETED}, None))
                continue
            life = retention.lifecycle(
                None if r.expires_at is None else from_epoch(r.expires_at),
                pinned=bool(r.pinned), now=now_dt,
            )
            if life == "purgeable":
                plan.actions.append(PlannedAction(
                    user_id, r.id, "delete",
                    f"unused since it expired and for the {retention.grace.days}-day grace "
                    "period after",
                    {"status": r.status, "updated_at": r.updated_at}, deleted(now)))
            elif life == "expired" and r.status == _ACTIVE:
                plan.actions.append(PlannedAction(
                    user_id, r.id, "demote", "past its expiry and unused since",
                    {"status": _ACTIVE, "confidence": r.confidence},
                    demoted(float(r.confidence), factor)))
            elif life == "alive" and r.status == _DEMOTED:
                revive_ids.append((r.id, float(r.confidence)))
        if revive_ids:
            restored = _confidence_before_demotion(conn, user_id, [i for i, _ in revive_ids])
            for memory_id, confidence in revive_ids:
                before = restored.get(memory_id, {})
                back = before.get(confidence)
                if back is None:
                    back = min(1.0, confidence / factor)
                plan.actions.append(PlannedAction(
                    user_id, memory_id, "revive", "used again since it was demoted",
                    {"status": _DEMOTED, "confidence": confidence},
                    {"status": _ACTIVE, "confidence": back}))
        return plan

    def apply(self, txn: RecordTxn, ctx: JobContext, plan: UserPlan) -> Applied:
        if not plan.actions or not txn.lock(plan.user_id):
            return Applied()
        updates = [a for a in plan.actions if a.action != "purge"]
        done, errors = txn.update(plan.user_id, updates, verify=False)
        purges = [a for a in plan.actions if a.action == "purge"]
        if purges:
            gone = set(txn.delete(plan.user_id, [str(a.memory_id) for a in purges],
                                  action="purged",
                                  reason="retention: purged after soft deletion"))
            done += [a for a in purges if a.memory_id in gone]
        return Applied(done, errors)


def _confidence_before_demotion(conn: Connection, user_id: str, ids: list[str]
                                ) -> dict[str, dict[float, float]]:
    """memory id -> {confidence after demotion: confidence before}, from recorded demotions."""
    out: dict[str, dict[float, float]] = {}
    rows = conn.execute(
        select(actions.c.memory_id, actions.c.before, actions.c.after)
        .where(actions.c.user_id == user_id, actions.c.memory_id.in_(ids),
               actions.c.action == "demote")
        .order_by(actions.c.id)
    )
    for r in rows:
        before, after = r.before or {}, r.after or {}
        if "confidence" in before and "confidence" in after:
            out.setdefault(str(r.memory_id), {})[float(after["confidence"])] = \
                float(before["confidence"])
    return out
