"""What forgetting does to consolidation's own tables (the ``consolidation`` eraser).

Registered under the ``memstrata.erasers`` entry-point group, so ``forget`` and
``forget_user`` reach these tables from any process:

* ``consolidation_actions`` - an action on a forgotten record becomes a
  content-free tombstone (``before``/``after`` say only that the record was
  forgotten); the rest of its run can still be undone (undo reports the
  tombstoned record as gone). Other actions of the user that quote a forgotten
  text (a reason naming the value, a model's explanation) are scrubbed.
* ``consolidation_sources`` - a marker pointing at a forgotten summary keeps the
  source folded (so no job writes the summary again) but no longer names it.
* ``consolidation_runs`` - not per user, but a run can name one: a run limited to
  an erased user (``only_user``) gets the tombstone instead (and stops being
  resumable), a checkpoint cursor on the erased user moves back to the previous
  user (resuming skips nothing), and error lines naming the user are rewritten.
* ``consolidation_partitions`` - the same for the buckets of partitioned runs:
  a cursor on the erased user moves back, error lines naming it are rewritten.
"""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, select, update

from memstrata.consolidation._tables import actions, partitions, runs, sources
from memstrata.erasure import Forgotten, contains, scrub
from memstrata.memory import queries

__all__ = ["FORGOTTEN", "ConsolidationEraser"]

#: what the ``before``/``after`` of an action on a forgotten record become
FORGOTTEN: dict[str, bool] = {"forgotten": True}


class ConsolidationEraser:
    #: tables with a user column (``consolidation_partitions`` has none, but its
    #: cursors and errors can name a user: :meth:`forget_user` rewrites them too)
    tables = ("consolidation_actions", "consolidation_sources", "consolidation_runs")

    def forget(self, conn: Connection, what: Forgotten) -> dict[str, int]:
        user_id, ids, texts = what.user_id, sorted(what.memory_ids), what.texts
        counts = {"consolidation_actions": 0, "consolidation_sources": 0}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for row in conn.execute(select(actions.c.id, actions.c.before, actions.c.after)
                                    .where(actions.c.user_id == user_id,
                                           actions.c.memory_id.in_(chunk))).all():
                conn.execute(update(actions).where(actions.c.id == row.id).values(
                    reason="forgotten",
                    before=None if row.before is None else FORGOTTEN,
                    after=None if row.after is None else FORGOTTEN))
                counts["consolidation_actions"] += 1
            counts["consolidation_sources"] += conn.execute(
                update(sources).where(sources.c.user_id == user_id,
                                      sources.c.memory_id.in_(chunk))
                .values(memory_id=None)).rowcount
        if texts:
            for quoted in conn.execute(select(actions.c.id, actions.c.reason,
                                              actions.c.before, actions.c.after)
                                       .where(actions.c.user_id == user_id)).all():
                if contains([quoted.reason, quoted.before, quoted.after], texts):
                    conn.execute(update(actions).where(actions.c.id == quoted.id).values(
                        reason=scrub(quoted.reason, texts), before=scrub(quoted.before, texts),
                        after=scrub(quoted.after, texts)))
                    counts["consolidation_actions"] += 1
        return counts

    def forget_user(self, conn: Connection, user_id: str, tombstone: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for table in (actions, sources):
            n = conn.execute(select(func.count()).select_from(table)
                             .where(table.c.user_id == user_id)).scalar_one()
            if n:
                conn.execute(delete(table).where(table.c.user_id == user_id))
            counts[table.name] = int(n)
        conn.execute(update(runs).where(runs.c.only_user == user_id,
                                        runs.c.status.in_(["running", "interrupted"]))
                     .values(status="abandoned"))
        n = conn.execute(update(runs).where(runs.c.only_user == user_id)
                         .values(only_user=tombstone)).rowcount
        previous = queries.previous_user(conn, user_id)
        n += conn.execute(update(runs).where(runs.c.cursor == user_id)
                          .values(cursor=previous)).rowcount
        for row in conn.execute(select(runs.c.id, runs.c.errors)).all():
            if contains(row.errors, (user_id,)):
                conn.execute(update(runs).where(runs.c.id == row.id)
                             .values(errors=scrub(row.errors, (user_id,), tombstone)))
                n += 1
        counts["consolidation_runs"] = n
        n = conn.execute(update(partitions).where(partitions.c.cursor == user_id)
                         .values(cursor=previous)).rowcount
        for bucket in conn.execute(select(partitions.c.run_id, partitions.c.part,
                                          partitions.c.errors)).all():
            if contains(bucket.errors, (user_id,)):
                conn.execute(update(partitions).where(partitions.c.run_id == bucket.run_id,
                                                      partitions.c.part == bucket.part)
                             .values(errors=scrub(bucket.errors, (user_id,), tombstone)))
                n += 1
        counts["consolidation_partitions"] = n
        return counts

