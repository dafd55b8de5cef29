"""The job registry: a job added with one register_job call is run, configured and scheduled."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import ClassVar

import pytest
from sqlalchemy import Connection, select

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationScheduler, ConsolidationSettings, Consolidator
from memstrata.consolidation._job import Applied, JobContext, UserPlan
from memstrata.consolidation._tables import leases
from memstrata.consolidation.jobs import (
    BUILTIN_JOB_NAMES,
    JobSpec,
    UnknownJobError,
    get_job,
    job_names,
    register_job,
    unregister_job,
)
from memstrata.consolidation.settings import JOB_NAMES
from memstrata.errors import InvalidSettingError
from memstrata.memory import RecordTxn, queries


class TallyJob:
    """Looks at every user with memories and writes nothing; remembers whom it saw."""

    name = "tally"
    lease = "tally"
    plan_in_txn = False
    seen: ClassVar[list[str]] = []

    def users(self, conn: Connection, ctx: JobContext, after: str | None,
              limit: int | None) -> list[str]:
        return queries.user_page(conn, after, limit)  # memory's public reads only

    def plan(self, conn: Connection, ctx: JobContext, user_id: str) -> UserPlan:
        TallyJob.seen.append(user_id)
        return UserPlan(user_id, method="offline")

    def apply(self, txn: RecordTxn, ctx: JobContext, plan: UserPlan) -> Applied:
        return Applied()


TALLY = JobSpec(name="tally", factory=TallyJob, default_cron="15 4 * * *", uses_llm=False,
                description="Count users (a test job).")


@pytest.fixture
def tally() -> Iterator[JobSpec]:
    TallyJob.seen = []
    register_job(TALLY)
    try:
        yield TALLY
    finally:
        unregister_job("tally")


@pytest.fixture
def tally_manager(sqlite_manager: MemoryManager) -> MemoryManager:
    for user in ("alice", "bob", "carol"):
        sqlite_manager.remember(user, "I like jazz.", type="preference")
    # no lease row is created by hand: the first run of a new job creates its own
    with sqlite_manager.db.read() as conn:
        assert conn.execute(select(leases).where(leases.c.name == "tally")).first() is None
    return sqlite_manager


def test_the_builtins_are_registered_in_run_order():
    assert BUILTIN_JOB_NAMES == JOB_NAMES == ("reread", "summarize", "conflicts", "expire")
    assert job_names()[:4] == BUILTIN_JOB_NAMES
    assert [get_job(n).uses_llm for n in BUILTIN_JOB_NAMES] == [False, True, True, False]
    with pytest.raises(UnknownJobError):
        get_job("tally")


def test_a_registered_job_runs_through_the_consolidator(tally: JobSpec,
                                                         tally_manager: MemoryManager,
                                                         settings: ConsolidationSettings):
    jobs = Consolidator(tally_manager, settings=settings)
    report = jobs.run("tally")
    assert (report.job, report.status, report.method) == ("tally", "finished", "offline")
    assert (report.users, report.batches) == (3, 2)  # batch_users=2
    assert TallyJob.seen == ["alice", "bob", "carol"]
    assert jobs.runs(job="tally")[0].run_id == report.run_id
    assert [r.job for r in jobs.run_all(dry_run=True)] == [*BUILTIN_JOB_NAMES, "tally"]


def test_a_registered_job_is_scheduled_on_its_default_cron(tally: JobSpec,
                                                           tally_manager: MemoryManager,
                                                           clock: ManualClock,
                                                           settings: ConsolidationSettings):
    clock.set(datetime(2026, 3, 1, 1, 30, tzinfo=UTC))
    assert settings.schedule.cron("tally") == "15 4 * * *"
    sched = ConsolidationScheduler(Consolidator(tally_manager, settings=settings))
    sched.start(thread=False)
    try:
        assert sched.jobs()["tally"] == datetime(2026, 3, 1, 4, 15, tzinfo=UTC)
        clock.set(datetime(2026, 3, 1, 4, 15, 1, tzinfo=UTC))
        ran = {r.job: r for r in sched.tick()}
        assert ran["tally"].status == "finished"
        assert ran["tally"].slot == datetime(2026, 3, 1, 4, 15, tzinfo=UTC)
        assert sched.jobs()["tally"] == datetime(2026, 3, 2, 4, 15, tzinfo=UTC)
    finally:
        sched.shutdown()


def test_settings_take_a_crontab_for_any_registered_job(tally: JobSpec):
    schedule = ConsolidationSettings.from_env(
        {"MEMSTRATA_CRON_TALLY": "0 5 * * *", "MEMSTRATA_CRON_EXPIRE": "5 * * * *"}).schedule
    assert (schedule.cron("tally"), schedule.cron("expire"), schedule.expire) == (
        "0 5 * * *", "5 * * * *", "5 * * * *")
    given = ConsolidationSettings.build(schedule={"crons": {"tally": "0 6 * * *"},
                                                  "summarize": "30 4 * * *"}).schedule
    assert (given.cron("tally"), given.cron("summarize")) == ("0 6 * * *", "30 4 * * *")
    with pytest.raises(InvalidSettingError, match="invalid crontab"):
        ConsolidationSettings.build(schedule={"crons": {"tally": "every night"}})


def test_settings_reject_crontabs_of_unregistered_jobs():
    with pytest.raises(InvalidSettingError, match="unknown jobs"):
        ConsolidationSettings.build(schedule={"crons": {"tally": "0 6 * * *"}})


@pytest.mark.parametrize("spec", [
    JobSpec("expire", TallyJob, "0 * * * *", uses_llm=False, description="taken"),
    JobSpec("undo", TallyJob, "0 * * * *", uses_llm=False, description="reserved"),
    JobSpec("Bad-Name", TallyJob, "0 * * * *", uses_llm=False, description="name"),
    JobSpec("tally", TallyJob, "61 * * * *", uses_llm=False, description="cron"),
])
def test_register_job_refuses_a_bad_spec(spec: JobSpec):
    with pytest.raises(InvalidSettingError):
        register_job(spec)
    assert "tally" not in job_names()
