"""What forgetting does to the model-call log (the ``llm`` eraser).

A recorded call quotes what was sent (a transcript, a pair of memories) and what
came back; it has no meaning without its text, so a call that quotes a
forgotten text is deleted whole, and ``forget_user`` deletes every call of the
user. Registered under the ``memstrata.erasers`` entry-point group.
"""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, select

from memstrata.erasure import Forgotten, contains
from memstrata.llm._calls import llm_calls

__all__ = ["CallLogEraser"]


class CallLogEraser:
    tables = ("agent_llm_calls",)

    def forget(self, conn: Connection, what: Forgotten) -> dict[str, int]:
        if not what.texts:
            return {"agent_llm_calls": 0}
        doomed = [
            row.id for row in conn.execute(
                select(llm_calls.c.id, llm_calls.c.messages, llm_calls.c.response,
                       llm_calls.c.error)
                .where(llm_calls.c.user_id == what.user_id)).all()
            if contains([row.messages, row.response, row.error], what.texts)
        ]
        for start in range(0, len(doomed), 500):
            conn.execute(delete(llm_calls).where(llm_calls.c.id.in_(doomed[start:start + 500])))
        return {"agent_llm_calls": len(doomed)}

    def forget_user(self, conn: Connection, user_id: str, tombstone: str) -> dict[str, int]:
        n = conn.execute(select(func.count()).select_from(llm_calls)
                         .where(llm_calls.c.user_id == user_id)).scalar_one()
        if n:
            conn.execute(delete(llm_calls).where(llm_calls.c.user_id == user_id))
        return {"agent_llm_calls": int(n)}
