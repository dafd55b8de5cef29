"""The ``reread`` job: the memories read again by the configured reader.

``observe`` stores every reading of a turn with the memories it forms
(``metadata["readings"]``, and ``metadata["read_by"]``: the reader's version), and recall
answers a question for an attribute from those stored readings, never by reading stored
text again. When the reader changes (a new model ships with an upgrade, or the manager is
configured with another reader), the stored readings are the old reader's: this job reads
each of the user's own memories (``source`` user_explicit) whose readings are another
reader's, or missing (formed before readings were stored, or by the rules), again and
stores the new readings in their place - like ``reindex`` for vectors.

It also stores the :class:`~memstrata.reading.stance.Stance` (whose and when a statement
is, which recall's currency stage reads) of every live memory that has none of its own
text - written before stances were stored, or whose text changed since - whatever the
reader, the rules included.

It changes nothing but the stored readings and stances: no slot, status or text (what a
new reading means for the user's current values is the ``conflicts`` job's to settle). It
plans outside the write transaction (reading takes milliseconds a memory) and applies with
each memory's metadata re-checked, so a memory forgotten or changed meanwhile is left
alone. A dry run lists what would be read again; a run interrupted resumes after the last
user done.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from memstrata.consolidation._job import Applied, JobContext, UserPlan
from memstrata.consolidation.reports import PlannedAction
from memstrata.memory import RecordTxn, queries
from memstrata.reading import Held, load_reader, registry, to_stored
from memstrata.reading.stance import STANCE_KEY, needs_stance, stance_of
from memstrata.reading.stance import to_stored as stance_stored
from memstrata.types import USER_SUBJECT, Source, Status

__all__ = ["RereadJob"]


class RereadJob:
    name = "reread"
    lease = "reread"
    plan_in_txn = False

    def users(self, conn: Connection, ctx: JobContext, after: str | None,
              limit: int | None) -> list[str]:
        return queries.user_page(conn, after, limit)

    def plan(self, conn: Connection, ctx: JobContext, user_id: str) -> UserPlan:
        reader = load_reader(ctx.memory_settings.reader)
        plan = UserPlan(user_id, method="offline")
        rows = queries.readable_records(conn, user_id, every_source=True)
        names = set(registry().names)
        # what the user holds now: the reader tells a change from a restatement with it
        held = [Held(str(r.attribute), str(r.value)) for r in rows
                if r.subject == USER_SUBJECT and r.attribute in names and r.value
                and r.status == Status.ACTIVE.value and r.source == Source.USER_EXPLICIT.value]
        for r in rows:
            meta: dict[str, Any] = dict(r.metadata or {})
            content = str(r.content)
            after = dict(meta)
            why: list[str] = []
            if r.source == Source.USER_EXPLICIT.value and reader.name != "rules" and not (
                    meta.get("read_by") == reader.version
                    and isinstance(meta.get("readings"), list)):
                after["readings"] = to_stored(reader.read(content, held), reader.version)
                after["read_by"] = reader.version
                was = meta.get("read_by")
                why.append(f"read by {reader.version}" + (
                    f" (was {was})" if was else " (no readings were stored)"))
            if needs_stance(meta, content):
                after[STANCE_KEY] = stance_stored(stance_of(content), content)
                why.append("its stance stored")
            if why:
                plan.actions.append(PlannedAction(
                    user_id, str(r.id), "reread", "; ".join(why),
                    {"metadata": meta}, {"metadata": after}))
        return plan

    def apply(self, txn: RecordTxn, ctx: JobContext, plan: UserPlan) -> Applied:
        if not plan.actions or not txn.lock(plan.user_id):
            return Applied()
        done, errors = txn.update(plan.user_id, plan.actions, verify=True)
        return Applied(done, errors)
