"""The records memstrata stores and returns.

Records in flight are plain frozen dataclasses; pydantic appears only at the
edge, in :class:`MemoryInput` (what a caller asks to remember).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "USER_SUBJECT",
    "MemoryInput",
    "MemoryRecord",
    "MemoryType",
    "RecallHit",
    "ScoreParts",
    "Slot",
    "Source",
    "Status",
    "WriteDecision",
    "WriteOutcome",
    "normalize_slot_part",
]


class MemoryType(StrEnum):
    """What kind of thing a long-term memory is; decides its TTL and half-life."""

    PROFILE = "profile"  #: stable facts about the user (name, city, payment method)
    PREFERENCE = "preference"  #: explicit likes, dislikes and standing instructions
    KNOWLEDGE = "knowledge"  #: facts about the world or the domain
    EVENT = "event"  #: something that happened at a time ("went to a support group")
    EXPERIENCE = "experience"  #: verified outcomes and lessons of tasks
    RULE = "rule"  #: business rules, constraints
    SUMMARY = "summary"  #: consolidation output (session or trajectory summaries)


class Status(StrEnum):
    """Lifecycle state of a record."""

    ACTIVE = "active"
    DEMOTED = "demoted"  #: expired without use: ranked lower, deleted after a grace period
    PENDING_CONFIRMATION = "pending_confirmation"  #: part of an unresolved conflict
    SUPERSEDED = "superseded"  #: replaced by a newer record; kept for history
    DELETED = "deleted"  #: removed by the retention sweep (recoverable by undo until purged)


#: Statuses that a recall can return.
RETRIEVABLE: frozenset[Status] = frozenset(
    {Status.ACTIVE, Status.DEMOTED, Status.PENDING_CONFIRMATION}
)


class Source(StrEnum):
    """Where a memory came from."""

    USER_EXPLICIT = "user_explicit"
    TOOL_RESULT = "tool_result"
    INFERRED = "inferred"
    CONSOLIDATION = "consolidation"
    IMPORT = "import"


#: the subject of a fact about the speaker themself ("I live in Munich" -> user.city)
USER_SUBJECT = "user"

_SLOT_PART = re.compile(r"\s+")


def normalize_slot_part(text: str) -> str:
    """Case- and whitespace-insensitive form used to match slot fields."""
    return _SLOT_PART.sub(" ", text.strip()).casefold()


@dataclass(frozen=True, slots=True)
class Slot:
    """A structured fact ``(subject, attribute, value)``, matched by fields, not vectors.

    One subject/attribute pair holds one current value per user and scope; a new
    value either supersedes it (explicit correction) or opens a conflict.
    """

    subject: str
    attribute: str
    value: str

    @property
    def key(self) -> tuple[str, str]:
        return normalize_slot_part(self.subject), normalize_slot_part(self.attribute)

    def same_value(self, other: str | None) -> bool:
        return other is not None and normalize_slot_part(other) == normalize_slot_part(
            self.value
        )

    def __str__(self) -> str:
        return f"{self.subject}.{self.attribute} = {self.value}"


class MemoryInput(BaseModel):
    """What a caller asks memstrata to remember. Unknown keys are rejected.

    ``at`` is belief time (when this was said or learned; defaults to now) and
    ``valid_from`` world time (when it became true; defaults to ``at``).
    ``context`` is indexed together with ``content`` for search (speaker, date,
    the turn it answers) but is not part of the memory's text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    content: str
    type: MemoryType = MemoryType.KNOWLEDGE
    scope: str = "default"
    slot: Slot | None = None
    # strict: "0.9" or True is a caller's mistake, not a number (an int is fine)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0, strict=True)
    importance: float = Field(default=0.5, ge=0.0, le=1.0, strict=True)
    source: Source = Source.USER_EXPLICIT
    session_id: str | None = None
    task_id: str | None = None
    step_id: str | None = None
    context: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    pinned: bool = Field(default=False, strict=True)
    #: the user explicitly corrected an earlier statement: newest wins at once
    correction: bool = False
    #: for experiences: was the outcome verified (succeeded, not rejected by the user)?
    verified: bool | None = None
    #: temporary task state; never becomes long-term memory
    ephemeral: bool = False
    at: datetime | None = None
    valid_from: datetime | None = None
    ttl: timedelta | None = None

    @field_validator("slot", mode="before")
    @classmethod
    def _slot_from_tuple(cls, value: Any) -> Any:
        if isinstance(value, tuple | list) and len(value) == 3:
            return Slot(*(str(v) for v in value))
        if isinstance(value, dict):
            return Slot(**value)
        return value


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One long-term memory as stored. Times are aware UTC datetimes."""

    id: str
    user_id: str
    scope: str
    type: MemoryType
    content: str
    status: Status
    confidence: float
    importance: float
    source: Source
    created_at: datetime
    updated_at: datetime
    valid_from: datetime
    valid_to: datetime | None = None
    last_accessed_at: datetime | None = None
    access_count: int = 0
    expires_at: datetime | None = None
    pinned: bool = False
    slot: Slot | None = None
    context: str | None = None
    session_id: str | None = None
    task_id: str | None = None
    step_id: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    conflict_group: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


WriteOutcome = Literal[
    "written",
    "corrected",
    "reinforced",
    "conflict",
    "dropped_low_confidence",
    "dropped_not_memorable",
]


@dataclass(frozen=True, slots=True)
class WriteDecision:
    """What the write policy decided for one candidate, and why.

    ``record_id`` is the record written (``written``, ``corrected``, ``conflict``)
    or reinforced (``reinforced``); ``None`` when the candidate was dropped.
    ``related_ids`` are the records superseded by a correction or the other side
    of a conflict.
    """

    outcome: WriteOutcome
    reason: str
    record_id: str | None = None
    related_ids: tuple[str, ...] = ()
    kind: Literal["write_decision"] = "write_decision"

    @property
    def stored(self) -> bool:
        """True when a new record was written."""
        return self.outcome in ("written", "corrected", "conflict")


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """How :class:`~memstrata.policies.RetrievalPolicy` scored one recall candidate.

    ``score = relevance * decay * confidence * status_weight * currency * range_weight``
    (multiplied in that order, so the product of the parts *is* the score, bit for bit),
    with ``relevance = w * max(dense, 0) + (1 - w) * keyword``. Each factor is one stage
    of the ranking (:mod:`memstrata.memory.ranking`): ``status_weight`` is the status's
    weight alone, ``currency`` what ordering by currency did, ``range_weight`` what a
    date range in the question did.
    """

    #: cosine similarity of the query and record embeddings, in [-1, 1]
    #: (0.0 for a record without a stored vector)
    dense: float
    #: raw BM25 score of the record's indexed text (0.0: no query term matched)
    bm25: float
    #: the keyword signal: ``bm25 / (bm25 + keyword_saturation)``, in [0, 1)
    keyword: float
    #: fused relevance in [0, 1], before decay, confidence and status
    relevance: float
    #: recency multiplier in [decay_floor, 1]; 1.0 for pinned or non-decaying types
    decay: float
    #: the record's stored confidence, in [0, 1]
    confidence: float
    #: status weight (demoted and expired records weigh less than active ones)
    status_weight: float
    #: the product of the factors
    score: float
    #: ordering by currency: below 1 for an older value a newer statement updates
    #: (``outdated_weight``) or, asked about the user now, for someone else's news, a
    #: plan, the past or a one-off (``not_current_weight``); above 1 for a newer value
    #: lifted just above what it updates, or the asked attribute's current value lifted
    #: above what was said before it; 1.0 where it moved nothing
    currency: float = 1.0
    #: a question naming a date range: ``range_boost`` for a record dated inside it
    range_weight: float = 1.0
    kind: Literal["score_parts"] = "score_parts"

    @property
    def gate(self) -> float:
        """The value compared with ``min_relevance``: the stronger of the two signals."""
        return max(self.dense, self.keyword)


@dataclass(frozen=True, slots=True)
class RecallHit:
    """A recalled memory with the parts of its score, so ranking can be explained.

    ``score`` orders the hits. Recall sets it to ``parts.score``; a reranker
    (:class:`~memstrata.memory.rerank.Reranker`) may replace it with its own,
    while ``parts`` keeps the first stage's explanation. ``relevance``, ``dense``,
    ``keyword``, ``decay``, ``status_weight`` and ``currency`` read through to ``parts``.
    """

    record: MemoryRecord
    #: the ranking score: ``parts.score``, or the reranker's when one reranked
    score: float
    #: how the retrieval policy scored this record (see :class:`ScoreParts`)
    parts: ScoreParts
    kind: Literal["recall_hit"] = "recall_hit"

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def content(self) -> str:
        return self.record.content

    @property
    def relevance(self) -> float:
        """Fused relevance before decay, confidence and status (``parts.relevance``)."""
        return self.parts.relevance

    @property
    def dense(self) -> float:
        """Cosine similarity to the query (``parts.dense``)."""
        return self.parts.dense

    @property
    def keyword(self) -> float:
        """Saturated BM25 keyword signal (``parts.keyword``)."""
        return self.parts.keyword

    @property
    def decay(self) -> float:
        """Recency multiplier (``parts.decay``)."""
        return self.parts.decay

    @property
    def status_weight(self) -> float:
        """Status weight (``parts.status_weight``)."""
        return self.parts.status_weight

    @property
    def currency(self) -> float:
        """What ordering by currency did (``parts.currency``)."""
        return self.parts.currency
