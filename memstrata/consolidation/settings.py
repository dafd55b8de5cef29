"""Configuration of the consolidation jobs and their schedule.

Keyword-only, validated, frozen; unknown keys are rejected with
:class:`~memstrata.errors.InvalidSettingError`. The environment is read only by
:meth:`ConsolidationSettings.from_env`, called when a
:class:`~memstrata.consolidation.Consolidator` is built without settings (and by
the CLI) - never at import:

==================================  ===========================================
``MEMSTRATA_LLM_MODEL``             model name; set it to use an LLM
``MEMSTRATA_LLM_BASE_URL``          OpenAI-compatible endpoint (``…/v1``)
``MEMSTRATA_LLM_API_KEY``           key (falls back to ``OPENAI_API_KEY``)
``MEMSTRATA_LLM_TOKEN_BUDGET``      tokens one run may spend (default 50,000)
``MEMSTRATA_LLM_CONCURRENCY``       model calls in flight per worker (default 1)
``MEMSTRATA_CRON_<JOB>``            crontab of a registered job, e.g.
                                    ``MEMSTRATA_CRON_SUMMARIZE`` (default: the
                                    job's ``default_cron``: ``0 3 * * *`` for
                                    ``summarize`` and ``conflicts``, ``0 * * * *``
                                    for ``expire``)
``MEMSTRATA_SCHEDULER_TZ``          time zone of the crontabs (default: local)
``MEMSTRATA_PARTITIONS``            buckets of a partitioned run (default: one
                                    per ``users_per_partition`` users, 1-256)
``MEMSTRATA_PARTITION_LEASE``       seconds a worker's claim on a bucket lasts
                                    without a heartbeat (default 15)
==================================  ===========================================

``MEMSTRATA_LLM_REQUESTS_PER_MINUTE`` and ``MEMSTRATA_LLM_TOKENS_PER_MINUTE`` set
the client-side rate limits of each worker process (default: none).

The jobs themselves come from :mod:`memstrata.consolidation.jobs`;
``JOB_NAMES`` and ``DEFAULT_CRON`` here are the built-ins only, kept for
existing imports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from memstrata.consolidation.jobs import BUILTIN_JOB_NAMES, get_job, job_names
from memstrata.errors import InvalidSettingError

__all__ = [
    "DEFAULT_CRON",
    "JOB_NAMES",
    "ConsolidationSettings",
    "LLMSettings",
    "ScheduleSettings",
]

#: the built-in jobs (registered jobs: :func:`memstrata.consolidation.jobs.job_names`)
JOB_NAMES: tuple[str, ...] = BUILTIN_JOB_NAMES
#: default crontabs of the built-in jobs
DEFAULT_CRON: Mapping[str, str] = {name: get_job(name).default_cron for name in JOB_NAMES}
#: the built-ins that also have a field of their own in :class:`ScheduleSettings`
_NAMED_CRONS = ("summarize", "conflicts", "expire")
#: a missed run still runs if the scheduler wakes up within this (coalesced: once)
DEFAULT_MISFIRE_GRACE_SECONDS = 2 * 86400.0
DEFAULT_TOKEN_BUDGET = 50_000
DEFAULT_USERS_PER_PARTITION = 500
DEFAULT_PARTITION_LEASE_SECONDS = 15.0


class LLMSettings(BaseModel):
    """The optional OpenAI-compatible endpoint used by ``summarize`` and ``conflicts``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    #: tokens (prompt + completion) one run may spend; past it the run goes offline
    token_budget: int = Field(default=DEFAULT_TOKEN_BUDGET, ge=0)
    #: completion tokens asked for per call
    max_tokens: int = Field(default=400, gt=0, le=8192)
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=60.0, gt=0)
    #: retries of a call that failed on a retriable error (connection, 429, 5xx)
    retries: int = Field(default=2, ge=0, le=10)
    #: calls in flight at once per worker (users of a batch are planned concurrently;
    #: give ``batch_users`` at least this many)
    concurrency: int = Field(default=1, ge=1, le=256)
    #: client-side limits per worker process (``None``: none)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)

    @property
    def configured(self) -> bool:
        return bool(self.model)


class ScheduleSettings(BaseModel):
    """Crontabs of the jobs (5 fields, APScheduler's ``CronTrigger.from_crontab``).

    ``crons`` maps any registered job to its crontab; a job it does not name runs
    on its spec's ``default_cron``. The built-ins keep a field each for existing
    callers (``ScheduleSettings(summarize="30 4 * * *")``): a value given either
    way shows in both, and two different values for one job are an error.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    summarize: str = DEFAULT_CRON["summarize"]
    conflicts: str = DEFAULT_CRON["conflicts"]
    expire: str = DEFAULT_CRON["expire"]
    #: crontabs by job name (jobs of :mod:`memstrata.consolidation.jobs`)
    crons: dict[str, str] = Field(default_factory=dict)
    #: IANA time zone of the crontabs; ``None`` = the machine's local zone
    timezone: str | None = None
    #: a run missed by at most this long still runs once (``None``: however late)
    misfire_grace_seconds: float | None = Field(default=DEFAULT_MISFIRE_GRACE_SECONDS, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _sync_named_crons(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        crons = dict(data.get("crons") or {})
        out = dict(data)
        for name in _NAMED_CRONS:
            given, mapped = out.get(name), crons.get(name)
            if given is not None and mapped is not None and given != mapped:
                raise ValueError(f"two crontabs for {name!r}: {given!r} and {mapped!r}")
            if given is not None:
                crons[name] = given
            elif mapped is not None:
                out[name] = mapped
        out["crons"] = crons
        return out

    @field_validator("summarize", "conflicts", "expire")
    @classmethod
    def _check_cron(cls, value: str) -> str:
        return _check_crontab(value)

    @field_validator("crons")
    @classmethod
    def _check_crons(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(job_names()))
        if unknown:
            raise ValueError(f"crontabs for unknown jobs {unknown}; jobs: {list(job_names())}")
        return {name: _check_crontab(cron) for name, cron in value.items()}

    @field_validator("timezone")
    @classmethod
    def _check_tz(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    def cron(self, job: str) -> str:
        """The crontab of a registered job (:class:`~memstrata.consolidation.jobs.UnknownJobError`
        for any other name)."""
        default = get_job(job).default_cron
        return self.crons.get(job, default)


def _check_crontab(value: str) -> str:
    from apscheduler.triggers.cron import CronTrigger

    try:
        CronTrigger.from_crontab(value, timezone="UTC")
    except ValueError as exc:
        raise ValueError(f"invalid crontab {value!r}: {exc}") from exc
    return value


class ConsolidationSettings(BaseModel):
    """Everything configurable about the consolidation jobs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: users per batch; a batch is one transaction and one checkpoint
    batch_users: int = Field(default=20, gt=0, le=10_000)
    #: a job's lease lasts this long and is renewed at every batch
    lease_seconds: float = Field(default=600.0, gt=0)
    #: buckets of users a partitioned run is split into (``None``: sized from the
    #: user count, one per ``users_per_partition``)
    partitions: int | None = Field(default=None, gt=0, le=65_536)
    users_per_partition: int = Field(default=DEFAULT_USERS_PER_PARTITION, gt=0)
    #: a worker's claim on a bucket lasts this long; its heartbeat renews it every
    #: third of that, so a killed worker's bucket is taken over within this time
    partition_lease_seconds: float = Field(default=DEFAULT_PARTITION_LEASE_SECONDS, gt=0)
    #: a session with no turn for this long has ended and may be summarised
    session_idle_seconds: float = Field(default=1800.0, ge=0)
    #: soft-deleted records are purged (hard-deleted, no longer undoable) after this
    purge_after_days: float = Field(default=30.0, ge=0)
    #: cosine at or above which two same-type records are the same memory
    duplicate_similarity: float = Field(default=0.82, gt=0, le=1)
    #: cosine at or above which two records are checked for a contradiction
    conflict_similarity: float = Field(default=0.55, gt=0, le=1)
    #: longest summary / lesson line
    summary_max_chars: int = Field(default=240, ge=40, le=2000)
    #: without an LLM, also keep each unread first-person statement of an ended session
    #: as its own memory ("I take the 7:40 bus to work"), so recall ranks it by itself
    #: (newest first among statements about the same thing) instead of inside a summary
    offline_statements: bool = True
    llm: LLMSettings = Field(default_factory=LLMSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)

    @classmethod
    def build(cls, **values: Any) -> ConsolidationSettings:
        try:
            return cls(**values)
        except PydanticValidationError as exc:
            raise InvalidSettingError(f"invalid consolidation settings: {exc}") from exc

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **values: Any
    ) -> ConsolidationSettings:
        """Settings from the environment (see the module docstring); ``values`` win."""
        env = os.environ if environ is None else environ
        llm: dict[str, Any] = {}
        if env.get("MEMSTRATA_LLM_MODEL"):
            llm["model"] = env["MEMSTRATA_LLM_MODEL"]
        if env.get("MEMSTRATA_LLM_BASE_URL"):
            llm["base_url"] = env["MEMSTRATA_LLM_BASE_URL"]
        key = env.get("MEMSTRATA_LLM_API_KEY") or env.get("OPENAI_API_KEY")
        if key:
            llm["api_key"] = key
        if env.get("MEMSTRATA_LLM_TOKEN_BUDGET"):
            llm["token_budget"] = env["MEMSTRATA_LLM_TOKEN_BUDGET"]
        for field_name in ("concurrency", "requests_per_minute", "tokens_per_minute"):
            if env.get(f"MEMSTRATA_LLM_{field_name.upper()}"):
                llm[field_name] = env[f"MEMSTRATA_LLM_{field_name.upper()}"]
        crons = {job: env[f"MEMSTRATA_CRON_{job.upper()}"] for job in job_names()
                 if env.get(f"MEMSTRATA_CRON_{job.upper()}")}
        schedule: dict[str, Any] = {"crons": crons}
        if env.get("MEMSTRATA_SCHEDULER_TZ"):
            schedule["timezone"] = env["MEMSTRATA_SCHEDULER_TZ"]
        merged: dict[str, Any] = {"llm": llm, "schedule": schedule}
        if env.get("MEMSTRATA_PARTITIONS"):
            merged["partitions"] = env["MEMSTRATA_PARTITIONS"]
        if env.get("MEMSTRATA_PARTITION_LEASE"):
            merged["partition_lease_seconds"] = env["MEMSTRATA_PARTITION_LEASE"]
        for key_name, value in values.items():
            if key_name == "schedule" and isinstance(value, Mapping):
                merged["schedule"] = _merge_schedule(schedule, value)
            elif key_name == "llm" and isinstance(value, Mapping):
                merged["llm"] = {**llm, **value}
            else:
                merged[key_name] = value
        return cls.build(**merged)


def _merge_schedule(env: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` over ``env``; a crontab given for a job (either spelling) wins over the
    environment's."""
    crons = {**env.get("crons", {}), **(given.get("crons") or {})}
    for name in _NAMED_CRONS:
        if given.get(name) is not None:
            crons.pop(name, None)
    return {**env, **given, "crons": crons}
