"""A run's token budget, shared by every worker through one database row (migration 0007).

``consolidation_llm_budgets`` holds one row per run that may call a model:
the budget, the tokens spent by answered calls, and the tokens *reserved* by
calls in flight. Before a call a worker reserves the call's upper-bound cost
(:func:`memstrata.llm.token_upper_bound`: prompt bytes + framing + the
completion allowance) with one statement::

    UPDATE consolidation_llm_budgets SET reserved = reserved + :n
     WHERE run_id = :run AND spent + reserved + :n <= budget

which is atomic on both engines (SQLite serialises writers with ``BEGIN
IMMEDIATE``; PostgreSQL re-checks the ``WHERE`` on the row it locked, so two
concurrent reservations cannot both pass on the same old values). When the
answer comes the worker *settles*: the reservation is released and the real
usage added to ``spent``. So N workers in N processes on any hosts never spend
more than the budget together - as long as the endpoint counts at most one
token per prompt byte (every byte-level BPE tokenizer does) and honours
``max_tokens``.

A worker killed between reserve and settle leaves its reservation counted:
the budget errs on the safe side (those tokens may well have been spent). The
row has no user content, so no eraser claims it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import BigInteger, Column, Float, Integer, Table, insert, select, update
from sqlalchemy.exc import IntegrityError

from memstrata._sql import ID, Transactions, metadata
from memstrata.clock import Clock, to_epoch
from memstrata.errors import StorageError

__all__ = ["BudgetState", "TokenLedger", "budgets"]

budgets = Table(
    "consolidation_llm_budgets",
    metadata,
    Column("run_id", ID, primary_key=True),
    #: tokens (prompt + completion) the run may spend in all
    Column("budget", BigInteger, nullable=False),
    #: tokens the answered calls used (as the endpoint reported them)
    Column("spent", BigInteger, nullable=False),
    #: upper-bound cost of the calls in flight
    Column("reserved", BigInteger, nullable=False),
    #: calls settled
    Column("calls", Integer, nullable=False),
    #: reservations refused because the budget could not cover them
    Column("refused", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
)


@dataclass(frozen=True, slots=True)
class BudgetState:
    budget: int
    spent: int
    reserved: int
    calls: int
    refused: int


class TokenLedger:
    """Reserve/settle against one run's budget row; thread-safe (one transaction each)."""

    def __init__(self, db: Transactions, run_id: str, budget: int, *, clock: Clock,
                 spent: int = 0) -> None:
        self._db = db
        self.run_id = run_id
        self._clock = clock
        self._ensure(budget, spent)

    def _now(self) -> float:
        return to_epoch(self._clock.now())

    def _ensure(self, budget: int, spent: int) -> None:
        """Create the run's row unless a worker (or an earlier attempt) already did."""
        where = budgets.c.run_id == self.run_id
        with self._db.read() as conn:
            if conn.execute(select(budgets.c.run_id).where(where)).first() is not None:
                return
        try:
            with self._db.write() as conn:
                if conn.execute(select(budgets.c.run_id).where(where)).first() is None:
                    conn.execute(insert(budgets).values(
                        run_id=self.run_id, budget=max(0, budget), spent=max(0, spent),
                        reserved=0, calls=0, refused=0, updated_at=self._now()))
        except (IntegrityError, StorageError) as exc:
            if not isinstance(exc, IntegrityError) and \
                    not isinstance(exc.__cause__, IntegrityError):
                raise
            # another worker inserted it between our read and our write

    def reserve(self, tokens: int) -> bool:
        """Hold ``tokens`` of the budget for one call; False if the budget cannot cover it."""
        with self._db.write() as conn:
            done = conn.execute(
                update(budgets)
                .where(budgets.c.run_id == self.run_id,
                       budgets.c.spent + budgets.c.reserved + tokens <= budgets.c.budget)
                .values(reserved=budgets.c.reserved + tokens, updated_at=self._now())
            ).rowcount
            if done != 1:
                conn.execute(update(budgets).where(budgets.c.run_id == self.run_id)
                             .values(refused=budgets.c.refused + 1))
        return done == 1

    def settle(self, reserved: int, spent: int, *, answered: int) -> None:
        """Reserved calls finished: release their reservation, add what they really
        spent (``answered``: how many of them got an answer)."""
        with self._db.write() as conn:
            conn.execute(
                update(budgets).where(budgets.c.run_id == self.run_id).values(
                    reserved=budgets.c.reserved - reserved,
                    spent=budgets.c.spent + spent,
                    calls=budgets.c.calls + answered,
                    updated_at=self._now())
            )

    def state(self) -> BudgetState:
        with self._db.read() as conn:
            row = conn.execute(select(budgets).where(budgets.c.run_id == self.run_id)).one()
        return BudgetState(int(row.budget), int(row.spent), int(row.reserved), int(row.calls),
                           int(row.refused))
