"""Ingest a dataset through the public API, optionally cached per configuration.

One memory per turn, one user per conversation, the turn's time as the record
time (``MemoryInput.at``), and a :class:`~memstrata.ManualClock` set to the end
of the data so decay and expiry are the same on every run.

**Contextual enrichment.** A turn alone often does not say who is speaking,
when, or what it answers ("Yes, last Saturday!"). The evaluation passes that as
``MemoryInput.context`` - indexed (embedded and keyword-searched) with the
content, never part of the memory's text - exactly as an application should:
the speaker, the session date, and a short quote of the turn it answers.

**Write policy.** By default the evaluation stores every turn
(``drop_small_talk=False``): LoCoMo's evidence sometimes sits in a turn that
opens with a greeting, and an evaluation of *recall* should not silently lose
evidence to the write filter. Exact and near duplicates are still merged as in
production; a merged turn counts as covered by the record it was merged into.
``IngestOptions(write_policy=WritePolicy())`` measures the production default
instead (the docs give both figures).

**Retention.** Records get no TTL (``expire=False``): the conversations span up
to a year, and with the default 120-day event TTL most turns would have
expired by the end of the data, which would measure the retention sweep, not
recall. Decay (half-life) stays on.

**Validation first.** Every turn is checked by the memory's own input checks
(:meth:`LongTermMemory.coerce`: length, scope, metadata) before the first one is
written; a turn that would fail raises :class:`~memstrata.errors.DatasetError`
naming the file and line, not a storage error minutes into the ingest.

**Progress.** ``progress=True`` draws a bar per long phase on a terminal; anywhere
else (a notebook, a log file, CI) each phase prints one line to stderr instead,
so the output stays readable. :func:`phase_bar` and :func:`say` are shared with
the run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from memstrata._progress import ProgressBar, on_terminal
from memstrata._progress import say as _say
from memstrata.clock import ManualClock
from memstrata.errors import DatasetError, InvalidInputError
from memstrata.eval._data import Conversation, Dataset, Turn
from memstrata.memory.embedder import Embedder
from memstrata.memory.manager import MemoryManager
from memstrata.policies.retention import RetentionPolicy
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.policies.write import WritePolicy
from memstrata.types import MemoryInput, MemoryType, Source

__all__ = [
    "DEFAULT_CONTEXT",
    "EVAL_WRITE_POLICY",
    "ContextPart",
    "IngestOptions",
    "IngestReport",
    "IngestedMemory",
    "UserIngest",
    "open_ingested",
    "phase_bar",
    "say",
    "turn_context",
]

ContextPart = Literal["speaker", "date", "previous"]
#: what the evaluation puts in ``MemoryInput.context`` by default
DEFAULT_CONTEXT: tuple[ContextPart, ...] = ("speaker", "date", "previous")
DEFAULT_PREVIOUS_WORDS = 20
#: keep every turn (no small-talk filter); duplicates are still merged
EVAL_WRITE_POLICY = WritePolicy(drop_small_talk=False)
#: bump when the way turns become memories changes (invalidates ingest caches)
_INGEST_VERSION = 4  # 4: a vector per sentence of a record (migration 0008)
_REPORT_FILE = "ingest.json"


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """How turns become memories."""

    #: which parts of a turn's surroundings are indexed as its context
    context: tuple[ContextPart, ...] = DEFAULT_CONTEXT
    #: the quoted previous turn is cut to this many words
    previous_words: int = DEFAULT_PREVIOUS_WORDS
    memory_type: MemoryType = MemoryType.EVENT
    scope: str = "default"
    write_policy: WritePolicy = EVAL_WRITE_POLICY
    #: give records the memory type's TTL (False: never expire during the evaluation)
    expire: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.context) - {"speaker", "date", "previous"}
        if unknown:
            raise ValueError(f"unknown context parts {sorted(unknown)}")
        if self.previous_words < 1:
            raise ValueError("previous_words must be positive")

    def key(self) -> dict[str, Any]:
        """JSON-able identity of the options (cache keys, reports)."""
        data = asdict(self)
        data["context"] = list(self.context)
        data["memory_type"] = self.memory_type.value
        data["write_policy"] = asdict(self.write_policy)
        return data


def say(progress: bool, message: str) -> None:
    """One progress line on stderr (when ``progress``), flushed at once."""
    if progress:
        _say(message)


def phase_bar(progress: bool, total: int, desc: str, unit: str) -> ProgressBar:
    """A bar for a phase of ``total`` items on a terminal; elsewhere - a pipe, a log,
    and a notebook too, where a widget per sweep step would bury the results - one
    line saying the phase started."""
    if progress and not on_terminal():
        say(progress, f"{desc}: {total:,} {unit}s")
        return ProgressBar(False, total, desc, unit)
    return ProgressBar(progress, total, desc, unit)


def turn_context(turn: Turn, previous: Turn | None, options: IngestOptions) -> str | None:
    """The context indexed with a turn, e.g. ``Caroline on 8 May 2023, replying to
    "Hey Caroline! How have you been?"``.

    The quoted turn is not attributed to its speaker on purpose: with the other
    speaker's name in every reply, "What pets does Nate have?" matches Joanna's
    turns as well as Nate's (measured: recall@1 0.39 -> 0.31, docs/eval.md).
    """
    parts: list[str] = []
    if "speaker" in options.context and turn.speaker:
        parts.append(turn.speaker)
    if "date" in options.context:
        parts.append(f"on {turn.time.day} {turn.time:%B %Y}")
    head = " ".join(parts)
    if "previous" in options.context and previous is not None:
        words = previous.text.split()
        quote = " ".join(words[: options.previous_words])
        if len(words) > options.previous_words:
            quote += " ..."
        head = f'{head}, replying to "{quote}"' if head else f'replying to "{quote}"'
    return head or None


@dataclass(frozen=True, slots=True)
class UserIngest:
    """Where one conversation's turns went."""

    user: str
    #: turn id -> record id (``None``: dropped by the write policy)
    turn_record: dict[str, str | None]
    #: record id -> the turn ids it covers (more than one when duplicates merged)
    record_turns: dict[str, list[str]]
    #: record id -> its content (what a context builder would show)
    record_content: dict[str, str]
    outcomes: dict[str, int]


@dataclass(frozen=True, slots=True)
class IngestReport:
    options: dict[str, Any]
    dataset: str
    fingerprint: str
    embedder: str
    users: dict[str, UserIngest] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False

    @property
    def outcomes(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for u in self.users.values():
            total.update(u.outcomes)
        return dict(total)

    def to_dict(self) -> dict[str, Any]:
        return {
            "options": self.options,
            "dataset": self.dataset,
            "fingerprint": self.fingerprint,
            "embedder": self.embedder,
            "seconds": self.seconds,
            "users": {k: asdict(v) for k, v in self.users.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, cached: bool) -> IngestReport:
        users = {k: UserIngest(**v) for k, v in data["users"].items()}
        return cls(
            options=data["options"], dataset=data["dataset"], fingerprint=data["fingerprint"],
            embedder=data["embedder"], users=users, seconds=float(data["seconds"]),
            cached=cached,
        )


@dataclass(slots=True)
class IngestedMemory:
    """An open :class:`MemoryManager` holding the dataset, and where each turn went."""

    memory: MemoryManager
    report: IngestReport
    directory: Path


def _inputs(conv: Conversation, options: IngestOptions) -> list[MemoryInput]:
    out = []
    previous: Turn | None = None
    for turn in conv.turns:
        before = previous if previous is not None and previous.session == turn.session else None
        out.append(
            MemoryInput(
                content=turn.text,
                type=options.memory_type,
                scope=options.scope,
                source=Source.IMPORT,
                session_id=turn.session,
                context=turn_context(turn, before, options),
                metadata={"turn_id": turn.id, "speaker": turn.speaker},
                at=turn.time,
            )
        )
        previous = turn
    return out


def _validated(
    memory: MemoryManager, dataset: Dataset, options: IngestOptions
) -> list[list[MemoryInput]]:
    """Every conversation's inputs, each checked as ``remember`` would check it."""
    out: list[list[MemoryInput]] = []
    for conv in dataset.conversations:
        inputs = _inputs(conv, options)
        for turn, item in zip(conv.turns, inputs, strict=True):
            try:
                memory.longterm.coerce(item)
            except InvalidInputError as exc:
                raise DatasetError(
                    f"{conv.user}: turn {turn.id}: {exc}", source=dataset.name, line=turn.line
                ) from exc
        out.append(inputs)
    return out


def _ingest(
    memory: MemoryManager, dataset: Dataset, options: IngestOptions, progress: bool
) -> dict[str, UserIngest]:
    users: dict[str, UserIngest] = {}
    say(progress, f"loading the embedding model ({memory.embedder.name})")
    _ = memory.longterm  # loads the model: a pause of seconds, said before it starts
    batches = _validated(memory, dataset, options)
    bar = phase_bar(progress, dataset.n_turns, "ingest", "turn")
    try:
        for conv, inputs in zip(dataset.conversations, batches, strict=True):
            decisions = memory.remember_many(conv.user, inputs, progress=bar.advance)
            turn_record: dict[str, str | None] = {}
            record_turns: dict[str, list[str]] = {}
            record_content: dict[str, str] = {}
            outcomes: Counter[str] = Counter()
            for turn, decision in zip(conv.turns, decisions, strict=True):
                outcomes[decision.outcome] += 1
                turn_record[turn.id] = decision.record_id
                if decision.record_id is not None:
                    record_turns.setdefault(decision.record_id, []).append(turn.id)
                    record_content.setdefault(decision.record_id, turn.text)
            users[conv.user] = UserIngest(
                conv.user, turn_record, record_turns, record_content, dict(outcomes)
            )
    finally:
        bar.close()
    return users


def _cache_key(dataset: Dataset, options: IngestOptions, embedder: str) -> str:
    blob = json.dumps(
        {"v": _INGEST_VERSION, "data": dataset.fingerprint(), "options": options.key(),
         "embedder": embedder},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _open(
    directory: Path, dataset: Dataset, options: IngestOptions, embedder: Embedder | None,
    settings: dict[str, Any],
) -> MemoryManager:
    retention = RetentionPolicy() if options.expire else RetentionPolicy(
        ttl={options.memory_type: None}
    )
    return MemoryManager.open(
        f"sqlite:///{directory / 'memory.db'}",
        embedder=embedder,
        clock=ManualClock(dataset.end_time),
        home=directory,
        index_dir=directory / "index",
        write=options.write_policy,
        retention=retention,
        **settings,
    )


@contextmanager
def open_ingested(
    dataset: Dataset,
    options: IngestOptions | None = None,
    *,
    embedder: Embedder | None = None,
    cache_dir: str | Path | None = None,
    retrieval: RetrievalPolicy | None = None,
    bm25_k1: float | None = None,
    bm25_b: float | None = None,
    progress: bool = True,
) -> Iterator[IngestedMemory]:
    """A memory holding ``dataset``, closed (and, unless cached, deleted) on exit.

    With ``cache_dir`` the ingested database is kept under a folder named by a
    hash of the data, the options and the embedding model, and reused by the
    next call with the same inputs: embedding a few thousand turns takes a
    while on a laptop, and retrieval settings (policy, BM25 parameters) do not
    change what is stored. An entry is complete once its ``ingest.json`` is
    written; a folder without one (an interrupted ingest) is ingested again.
    Two processes filling the *same* entry at once is not supported.
    """
    options = options or IngestOptions()
    if not dataset.conversations:
        raise DatasetError("the dataset has no conversations", source=dataset.name)
    settings: dict[str, Any] = {}
    if retrieval is not None:
        settings["retrieval"] = retrieval
    if bm25_k1 is not None:
        settings["bm25_k1"] = bm25_k1
    if bm25_b is not None:
        settings["bm25_b"] = bm25_b
    temp: Path | None = None
    if cache_dir is None:
        temp = Path(tempfile.mkdtemp(prefix="memstrata-eval-"))
        directory = temp
    else:
        embedder = _resolve_embedder(embedder)
        directory = Path(cache_dir) / _cache_key(dataset, options, embedder.name)
    try:
        report = _cached_report(directory)
        if report is not None:
            say(progress, f"ingest: reusing the cached database in {directory}")
            memory = _open(directory, dataset, options, embedder, settings)
        else:
            if directory.exists():  # an interrupted or unreadable entry: start again
                shutil.rmtree(directory)
            directory.mkdir(parents=True)
            memory = _open(directory, dataset, options, embedder, settings)
            started = time.perf_counter()
            try:
                users = _ingest(memory, dataset, options, progress)
            except BaseException:
                memory.close()
                shutil.rmtree(directory, ignore_errors=True)
                raise
            report = IngestReport(
                options=options.key(), dataset=dataset.name, fingerprint=dataset.fingerprint(),
                embedder=memory.embedder.name, users=users,
                seconds=time.perf_counter() - started,
            )
            say(progress, f"ingest: {dataset.n_turns:,} turns in {report.seconds:.1f} s")
            if temp is None:
                memory.keyword_index.flush()
                memory.vector_index.flush()
                tmp = directory / (_REPORT_FILE + ".tmp")
                tmp.write_text(json.dumps(report.to_dict()))
                tmp.replace(directory / _REPORT_FILE)
        try:
            yield IngestedMemory(memory, report, directory)
        finally:
            memory.close()
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _resolve_embedder(embedder: Embedder | None) -> Embedder:
    if embedder is not None:
        return embedder
    from memstrata.memory.manager import default_embedder

    return default_embedder()


def _cached_report(directory: Path) -> IngestReport | None:
    path = directory / _REPORT_FILE
    if not path.is_file():
        return None
    try:
        return IngestReport.from_dict(json.loads(path.read_text()), cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None
