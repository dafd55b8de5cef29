"""Evaluation datasets: conversations (turns) and probes (questions with evidence).

Two input formats load into the same :class:`Dataset`:

* **LoCoMo** JSON (Maharana et al., 2024): a list of samples with
  ``conversation`` (``speaker_a``/``speaker_b``, ``session_N`` turn lists,
  ``session_N_date_time``) and ``qa`` (``question``, ``answer``, ``evidence``
  dialog ids, ``category``);
* **memstrata JSONL**, one object per line, for a user's own logs::

      {"user": "alice", "session": "s1", "time": "2024-05-01T10:00:00Z",
       "speaker": "Alice", "text": "I moved to Lyon last week", "id": "s1:1"}
      {"user": "alice", "question": "Where does Alice live?", "evidence_ids": ["s1:1"],
       "category": "single-hop", "answer": "Lyon"}

  A line with ``question`` is a probe, a line with ``text`` a turn. ``id``
  defaults to ``"{session}:{n}"`` (n counts the session's turns from 1);
  ``speaker``, ``category``, ``answer`` are optional; unknown keys are
  rejected so a typo (``evidence`` for ``evidence_ids``) cannot pass silently.

Evidence ids that name no turn of the conversation are skipped and counted
(LoCoMo has a few), and a probe left without evidence is excluded and counted:
recall is undefined for it. An evidence string may hold several ids separated
by ``;``, ``,`` or white space (``"D8:6; D9:17"``, ``"D9:1 D4:4"``).

Everything the ingest would refuse is refused here, before a model is loaded:
malformed lines, and a turn longer than the write limit (``max_chars``,
default :data:`~memstrata.config.DEFAULT_MAX_CONTENT_CHARS`, the manager's
``max_content_chars``) or a user id the memory API would not take. Each such
input raises :class:`~memstrata.errors.DatasetError` with the file and line
(LoCoMo: the sample and dialog id). JSONL lines are split on ``"\\n"`` only:
JSON strings may hold U+2028 / U+2029, which :meth:`str.splitlines` treats as
line breaks.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from memstrata.clock import utc
from memstrata.config import DEFAULT_MAX_CONTENT_CHARS
from memstrata.errors import DatasetError

__all__ = [
    "LOCOMO_CATEGORIES",
    "Conversation",
    "Dataset",
    "LoadReport",
    "MissingEvidence",
    "Probe",
    "Turn",
    "load_dataset",
    "load_jsonl",
    "load_locomo",
]

#: LoCoMo's question categories (category 5, adversarial, has no answer in the data).
LOCOMO_CATEGORIES: Mapping[str, str] = MappingProxyType(
    {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
)
_LOCOMO_DATE = "%I:%M %p on %d %B, %Y"
_SESSION_KEY = re.compile(r"^session_(\d+)$")
# LoCoMo writes "D8:6; D9:17" and "D9:1 D4:4" for two ids in one string
_ID_SPLIT = re.compile(r"[;,\s]+")
#: the memory API's user id limits (``MemoryManager`` refuses longer ids)


@dataclass(frozen=True, slots=True)
class Turn:
    """One utterance: it becomes one memory."""

    id: str
    session: str
    time: datetime
    speaker: str
    text: str
    #: 0-based position within its session
    position: int
    kind: Literal["turn"] = "turn"
    #: the 1-based JSONL line it was read from (``None`` for LoCoMo), for error messages
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Probe:
    """A question and the turns that hold its answer."""

    id: str
    question: str
    evidence_ids: tuple[str, ...]
    category: str | None = None
    answer: str | None = None
    kind: Literal["probe"] = "probe"


@dataclass(frozen=True, slots=True)
class Conversation:
    """The turns of one user (one LoCoMo sample) and the probes asked about them."""

    user: str
    turns: tuple[Turn, ...]
    probes: tuple[Probe, ...]

    def turn(self, turn_id: str) -> Turn:
        for t in self.turns:
            if t.id == turn_id:
                return t
        raise KeyError(turn_id)


@dataclass(frozen=True, slots=True)
class MissingEvidence:
    """An evidence id that names no turn of its conversation (skipped)."""

    user: str
    probe_id: str
    evidence_id: str


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What loading skipped, so the figures can be read honestly."""

    probes_read: int = 0
    #: probes dropped because their category is excluded (LoCoMo: category 5)
    excluded_by_category: int = 0
    #: probes dropped because none of their evidence ids exists
    excluded_without_evidence: int = 0
    missing_evidence: tuple[MissingEvidence, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "probes_read": self.probes_read,
            "excluded_by_category": self.excluded_by_category,
            "excluded_without_evidence": self.excluded_without_evidence,
            "missing_evidence_ids": len(self.missing_evidence),
            "missing_evidence": [
                {"user": m.user, "probe": m.probe_id, "evidence_id": m.evidence_id}
                for m in self.missing_evidence
            ],
        }


@dataclass(frozen=True, slots=True)
class Dataset:
    """Conversations to ingest and the probes to evaluate recall on."""

    name: str
    format: Literal["locomo", "jsonl"]
    conversations: tuple[Conversation, ...]
    report: LoadReport = field(default_factory=LoadReport)
    category_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def n_turns(self) -> int:
        return sum(len(c.turns) for c in self.conversations)

    @property
    def n_probes(self) -> int:
        return sum(len(c.probes) for c in self.conversations)

    @property
    def end_time(self) -> datetime:
        """The time of the last turn: evaluations set their clock here."""
        times = [t.time for c in self.conversations for t in c.turns]
        if not times:
            raise DatasetError("the dataset has no turns", source=self.name)
        return max(times)

    def category_label(self, category: str | None) -> str:
        if category is None:
            return "(none)"
        name = self.category_names.get(category)
        return category if name is None else f"{category} {name}"

    def fingerprint(self) -> str:
        """A hash of everything ingested: equal fingerprints ingest to equal memories."""
        digest = hashlib.sha256()
        for conv in self.conversations:
            digest.update(conv.user.encode())
            for t in conv.turns:
                digest.update(
                    json.dumps(
                        [t.id, t.session, t.time.isoformat(), t.speaker, t.text, t.position]
                    ).encode()
                )
        return digest.hexdigest()[:16]

    def subset(
        self,
        *,
        conversations: int | Sequence[str] | None = None,
        probes_per_conversation: int | None = None,
        seed: int = 0,
    ) -> Dataset:
        """A smaller dataset: the first N (or the named) conversations, and at most
        ``probes_per_conversation`` probes of each, sampled with ``seed``."""
        convs = list(self.conversations)
        if isinstance(conversations, int):
            if conversations < 1:
                raise DatasetError("a subset needs at least one conversation")
            convs = convs[:conversations]
        elif conversations is not None:
            wanted = list(conversations)
            by_user = {c.user: c for c in convs}
            unknown = [u for u in wanted if u not in by_user]
            if unknown:
                raise DatasetError(f"no conversations named {unknown}", source=self.name)
            convs = [by_user[u] for u in wanted]
        if probes_per_conversation is not None:
            rng = random.Random(seed)
            cut = []
            for conv in convs:
                probes = list(conv.probes)
                if len(probes) > probes_per_conversation:
                    keep = sorted(rng.sample(range(len(probes)), probes_per_conversation))
                    probes = [probes[i] for i in keep]
                cut.append(replace(conv, probes=tuple(probes)))
            convs = cut
        return replace(self, conversations=tuple(convs))


# ---------------------------------------------------------------- loading


def load_dataset(
    path: str | Path,
    *,
    exclude_categories: Iterable[str | int] | None = None,
    include_captions: bool = True,
    max_chars: int = DEFAULT_MAX_CONTENT_CHARS,
) -> Dataset:
    """Load LoCoMo JSON (``.json``) or memstrata JSONL (``.jsonl``).

    ``exclude_categories`` defaults to ``{"5"}`` for LoCoMo (adversarial
    questions have no evidence to find) and to nothing for JSONL. A turn longer
    than ``max_chars`` (the memory's ``max_content_chars``) is refused here,
    with its line, rather than minutes into the ingest.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".jsonl"):
        suffix = ".json" if _read_text(path).lstrip()[:1] == "[" else ".jsonl"
    if suffix == ".jsonl":
        return load_jsonl(path, exclude_categories=exclude_categories or (), max_chars=max_chars)
    return load_locomo(
        path,
        exclude_categories=("5",) if exclude_categories is None else exclude_categories,
        include_captions=include_captions,
        max_chars=max_chars,
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DatasetError("no such file", source=str(path)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read: {exc}", source=str(path)) from exc


def _check_user(user: str, source: str, line: int | None = None) -> None:
    """The memory's own user-id rule (one rule: what loads here also ingests)."""
    from memstrata.errors import MissingUserError
    from memstrata.memory import check_user

    try:
        check_user(user)
    except MissingUserError as exc:
        raise DatasetError(f"user id {user[:40]!r} is not usable: {exc}", source=source,
                           line=line) from exc


def _check_length(text: str, max_chars: int, what: str, source: str,
                  line: int | None = None) -> None:
    if len(text) > max_chars:
        raise DatasetError(
            f"{what} is {len(text):,} characters, over the write limit of {max_chars:,} "
            "(max_content_chars); shorten or split it", source=source, line=line,
        )


def _evidence(
    raw: Iterable[str], known: set[str], user: str, probe_id: str,
    missing: list[MissingEvidence],
) -> tuple[str, ...]:
    out: list[str] = []
    for item in raw:
        # a few LoCoMo entries hold two ids in one string ("D8:6; D9:17")
        for part in _ID_SPLIT.split(str(item)):
            evidence_id = part.strip()
            if not evidence_id:
                continue
            if evidence_id in known:
                if evidence_id not in out:
                    out.append(evidence_id)
            else:
                missing.append(MissingEvidence(user, probe_id, evidence_id))
    return tuple(out)


def load_locomo(
    path: str | Path,
    *,
    exclude_categories: Iterable[str | int] = ("5",),
    include_captions: bool = True,
    max_chars: int = DEFAULT_MAX_CONTENT_CHARS,
) -> Dataset:
    """Load LoCoMo-format JSON; one conversation per sample, its ``sample_id`` as user.

    Each turn's time is its session's date plus its position in seconds (so
    turns keep their order). With ``include_captions`` a shared image's
    BLIP caption is appended to the turn text (``[shared a photo of ...]``),
    as LoCoMo's own baselines do: some answers are only in the picture.
    """
    path = Path(path)
    source = str(path)
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"not valid JSON: {exc}", source=source, line=exc.lineno) from exc
    if not isinstance(data, list) or not data:
        raise DatasetError("expected a non-empty JSON list of LoCoMo samples", source=source)
    excluded = {str(c) for c in exclude_categories}
    conversations: list[Conversation] = []
    missing: list[MissingEvidence] = []
    read = by_category = without_evidence = 0
    seen_users: set[str] = set()
    for n, sample in enumerate(data):
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise DatasetError(f"sample {n} has no 'conversation' object", source=source)
        user = str(sample.get("sample_id") or f"conv-{n}")
        if user in seen_users:
            raise DatasetError(f"sample id {user!r} appears twice", source=source)
        seen_users.add(user)
        _check_user(user, source)
        turns = _locomo_turns(sample["conversation"], user, source, include_captions, max_chars)
        known = {t.id for t in turns}
        probes: list[Probe] = []
        qa = sample.get("qa", [])
        if not isinstance(qa, list):
            raise DatasetError(f"sample {user!r}: 'qa' must be a list", source=source)
        for i, q in enumerate(qa):
            if not isinstance(q, dict) or not isinstance(q.get("question"), str):
                raise DatasetError(f"sample {user!r}: qa[{i}] has no question", source=source)
            read += 1
            category = None if q.get("category") is None else str(q["category"])
            if category in excluded:
                by_category += 1
                continue
            probe_id = f"{user}/q{i}"
            raw = q.get("evidence") or []
            if not isinstance(raw, list):
                raise DatasetError(f"{probe_id}: 'evidence' must be a list", source=source)
            evidence = _evidence(raw, known, user, probe_id, missing)
            if not evidence:
                without_evidence += 1
                continue
            answer = q.get("answer")
            probes.append(
                Probe(
                    id=probe_id,
                    question=q["question"],
                    evidence_ids=evidence,
                    category=category,
                    answer=None if answer is None else str(answer),
                )
            )
        conversations.append(Conversation(user, tuple(turns), tuple(probes)))
    report = LoadReport(read, by_category, without_evidence, tuple(missing))
    return Dataset(
        name=path.name,
        format="locomo",
        conversations=tuple(conversations),
        report=report,
        category_names=LOCOMO_CATEGORIES,
    )


def _locomo_turns(
    conv: dict[str, Any], user: str, source: str, include_captions: bool, max_chars: int
) -> list[Turn]:
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := _SESSION_KEY.match(key)) and isinstance(conv[key], list)
    )
    turns: list[Turn] = []
    seen: set[str] = set()
    for number, key in sessions:
        stamp = conv.get(f"{key}_date_time")
        if not isinstance(stamp, str):
            raise DatasetError(f"{user}: {key} has no {key}_date_time", source=source)
        try:
            start = datetime.strptime(stamp.strip(), _LOCOMO_DATE).replace(tzinfo=UTC)
        except ValueError as exc:
            raise DatasetError(
                f"{user}: cannot read the date {stamp!r} of {key}", source=source
            ) from exc
        for pos, raw in enumerate(conv[key]):
            if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
                raise DatasetError(f"{user}: {key}[{pos}] has no text", source=source)
            turn_id = str(raw.get("dia_id") or f"D{number}:{pos + 1}")
            if turn_id in seen:
                raise DatasetError(f"{user}: dialog id {turn_id!r} appears twice", source=source)
            seen.add(turn_id)
            text = raw["text"].strip()
            caption = raw.get("blip_caption")
            if include_captions and isinstance(caption, str) and caption.strip():
                text = f"{text} [shared {caption.strip()}]" if text else f"[shared {caption}]"
            if not text:
                continue
            _check_length(text, max_chars, f"{user}: turn {turn_id}", source)
            turns.append(
                Turn(
                    id=turn_id,
                    session=str(number),
                    time=start + timedelta(seconds=pos),
                    speaker=str(raw.get("speaker") or ""),
                    text=text,
                    position=pos,
                )
            )
    if not turns:
        raise DatasetError(f"{user}: the conversation has no turns", source=source)
    return turns


class _TurnLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["turn"] = "turn"
    user: str = Field(min_length=1)
    session: str
    time: datetime
    text: str = Field(min_length=1)
    speaker: str = ""
    id: str | None = None

    @field_validator("session", mode="before")
    @classmethod
    def _session_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("time", mode="before")
    @classmethod
    def _time(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(float(value), UTC)
        return value

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text is blank")
        return value.strip()


class _ProbeLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["probe"] = "probe"
    user: str = Field(min_length=1)
    question: str = Field(min_length=1)
    evidence_ids: list[str]
    category: str | None = None
    answer: str | None = None
    id: str | None = None

    @field_validator("category", "answer", mode="before")
    @classmethod
    def _scalar_text(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value


def load_jsonl(
    path: str | Path,
    *,
    exclude_categories: Iterable[str | int] = (),
    max_chars: int = DEFAULT_MAX_CONTENT_CHARS,
) -> Dataset:
    """Load memstrata JSONL (see the module docstring); users keep file order.

    Lines are split on ``"\\n"`` only (``"\\r\\n"`` endings work too): a JSON
    string may contain U+2028 / U+2029, which :meth:`str.splitlines` would
    treat as line breaks.
    """
    path = Path(path)
    source = str(path)
    excluded = {str(c) for c in exclude_categories}
    turns: dict[str, list[Turn]] = {}
    positions: dict[tuple[str, str], int] = {}
    probe_lines: list[tuple[int, _ProbeLine]] = []
    for lineno, line in enumerate(_read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"not valid JSON: {exc.msg}", source=source, line=lineno) from exc
        if not isinstance(obj, dict):
            raise DatasetError("each line must be a JSON object", source=source, line=lineno)
        try:
            if "question" in obj or obj.get("kind") == "probe":
                probe_lines.append((lineno, _ProbeLine.model_validate(obj)))
                continue
            if "text" not in obj and obj.get("kind") != "turn":
                raise DatasetError(
                    "a line must be a turn (with 'text') or a probe (with 'question')",
                    source=source, line=lineno,
                )
            row = _TurnLine.model_validate(obj)
        except PydanticValidationError as exc:
            raise DatasetError(_pydantic_message(exc), source=source, line=lineno) from exc
        _check_user(row.user, source, lineno)
        _check_length(row.text, max_chars, "the turn's text", source, lineno)
        key = (row.user, row.session)
        pos = positions.get(key, 0)
        positions[key] = pos + 1
        turn_id = row.id or f"{row.session}:{pos + 1}"
        user_turns = turns.setdefault(row.user, [])
        if any(t.id == turn_id for t in user_turns):
            raise DatasetError(
                f"turn id {turn_id!r} appears twice for user {row.user!r}",
                source=source, line=lineno,
            )
        user_turns.append(
            Turn(turn_id, row.session, utc(row.time), row.speaker, row.text, pos, line=lineno)
        )
    if not turns:
        raise DatasetError("no turns found", source=source)
    probes: dict[str, list[Probe]] = {user: [] for user in turns}
    missing: list[MissingEvidence] = []
    by_category = without_evidence = 0
    for lineno, p in probe_lines:
        if p.user not in turns:
            raise DatasetError(
                f"probe for user {p.user!r}, who has no turns", source=source, line=lineno
            )
        if p.category is not None and p.category in excluded:
            by_category += 1
            continue
        probe_id = p.id or f"{p.user}/q{len(probes[p.user])}"
        known = {t.id for t in turns[p.user]}
        evidence = _evidence(p.evidence_ids, known, p.user, probe_id, missing)
        if not evidence:
            without_evidence += 1
            continue
        probes[p.user].append(Probe(probe_id, p.question, evidence, p.category, p.answer))
    conversations = tuple(
        Conversation(user, tuple(user_turns), tuple(probes[user]))
        for user, user_turns in turns.items()
    )
    report = LoadReport(len(probe_lines), by_category, without_evidence, tuple(missing))
    return Dataset(name=path.name, format="jsonl", conversations=conversations, report=report)


def _pydantic_message(exc: PydanticValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "line"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)
