"""The job registry: the one place that says which consolidation jobs exist.

::

    from memstrata.consolidation.jobs import JobSpec, register_job

    register_job(JobSpec(
        name="reembed", factory=lambda: ReembedJob(), default_cron="30 4 * * 0",
        uses_llm=False, description="Re-embed records written by an old model.",
    ))

Everything that lists jobs reads this registry: the
:class:`~memstrata.consolidation.Consolidator` resolves a name to a job and
decides whether it gets the LLM, :class:`~memstrata.consolidation.settings.ScheduleSettings`
accepts a crontab for every registered job (``MEMSTRATA_CRON_<NAME>``, falling back
to the spec's ``default_cron``), the scheduler schedules every registered job and
``memstrata consolidate --job`` offers every registered name. Adding a job is one
module with a class following :class:`~memstrata.consolidation._job.Job` plus one
:func:`register_job` call that runs before those are built.

The built-ins (``reread``, ``summarize``, ``conflicts``, ``expire``, in the order
``consolidate`` runs them) are registered here; their factories import the job
classes on first use, so importing the registry stays cheap.

Trade-off: the registry is process-wide state (a plain dict filled at import),
because jobs are code, not configuration; tests that register a job call
:func:`unregister_job` afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstrata.errors import InvalidInputError, InvalidSettingError

if TYPE_CHECKING:
    from memstrata.consolidation._job import Job

__all__ = [
    "BUILTIN_JOB_NAMES",
    "JobSpec",
    "UnknownJobError",
    "get_job",
    "job_names",
    "job_specs",
    "register_job",
    "unregister_job",
]

#: a job name: lower-case identifier, fits ``consolidation_runs.job`` (32) and
#: becomes ``MEMSTRATA_CRON_<NAME>``
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
#: names with another meaning (the undo run, ``--job all``)
_RESERVED = frozenset({"undo", "all"})


class UnknownJobError(InvalidInputError):
    """No job is registered under this name."""


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What the registry knows about a job."""

    #: the job's name, as in ``Consolidator.run(name)``; also its lease row
    name: str
    #: builds a fresh job for one run
    factory: Callable[[], Job]
    #: the crontab (5 fields) used when the settings name none for this job
    default_cron: str
    #: the run gets the configured LLM (under the token budget); else it runs offline
    uses_llm: bool
    #: one line, shown by the CLI
    description: str


_registry: dict[str, JobSpec] = {}


def register_job(spec: JobSpec) -> None:
    """Add a job; a name already registered, reserved or malformed raises."""
    if not _NAME.fullmatch(spec.name) or spec.name in _RESERVED:
        raise InvalidSettingError(
            f"invalid job name {spec.name!r}: lower-case letters, digits and _ "
            f"(at most 32), not {sorted(_RESERVED)}"
        )
    if spec.name in _registry:
        raise InvalidSettingError(f"a job named {spec.name!r} is already registered")
    from apscheduler.triggers.cron import CronTrigger

    try:
        CronTrigger.from_crontab(spec.default_cron, timezone="UTC")
    except ValueError as exc:
        raise InvalidSettingError(
            f"job {spec.name!r}: invalid default crontab {spec.default_cron!r}: {exc}"
        ) from exc
    _registry[spec.name] = spec


def unregister_job(name: str) -> JobSpec:
    """Remove a job and return its spec (tests, plugins being unloaded)."""
    spec = get_job(name)
    del _registry[name]
    return spec


def get_job(name: str) -> JobSpec:
    """The spec registered under ``name``, or :class:`UnknownJobError`."""
    spec = _registry.get(name)
    if spec is None:
        raise UnknownJobError(f"unknown job {name!r}; jobs: {', '.join(_registry)}")
    return spec


def job_specs() -> tuple[JobSpec, ...]:
    """Every registered job, in registration order (the order ``consolidate`` runs them)."""
    return tuple(_registry.values())


def job_names() -> tuple[str, ...]:
    return tuple(_registry)


def _summarize() -> Job:
    from memstrata.consolidation._summarize import SummarizeJob

    return SummarizeJob()


def _conflicts() -> Job:
    from memstrata.consolidation._conflicts import ConflictsJob

    return ConflictsJob()


def _expire() -> Job:
    from memstrata.consolidation._expire import ExpireJob

    return ExpireJob()


def _reread() -> Job:
    from memstrata.consolidation._reread import RereadJob

    return RereadJob()


_BUILTINS = (
    JobSpec("reread", _reread, "30 2 * * *", uses_llm=False,
            description="Read the user's memories again where another reader stored "
                        "their readings (after a reader upgrade)."),
    JobSpec("summarize", _summarize, "0 3 * * *", uses_llm=True,
            description="Fold ended sessions and finished tasks into summaries and lessons."),
    JobSpec("conflicts", _conflicts, "0 3 * * *", uses_llm=True,
            description="Merge duplicates, flag contradictions, supersede stale facts."),
    JobSpec("expire", _expire, "0 * * * *", uses_llm=False,
            description="Apply the retention policy: demote, delete, revive, purge."),
)
# trusted: skips register_job's crontab check, which would import APScheduler
_registry.update((spec.name, spec) for spec in _BUILTINS)

#: the jobs memstrata ships, in the order ``consolidate`` runs them
BUILTIN_JOB_NAMES: tuple[str, ...] = tuple(spec.name for spec in _BUILTINS)
