"""The compact shapes the MCP tools return (pydantic models: each tool's output schema).

Every record carries its id, dates (ISO 8601, UTC, seconds) and status; recall hits
their score; every write its outcome and the write policy's reason. Fields that say
nothing (no slot, not pinned, no successor) are left out of the JSON.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from memstrata.memory.briefing import Confirmation
from memstrata.memory.formation import Observation
from memstrata.types import MemoryRecord, RecallHit, Status, WriteDecision

__all__ = [
    "BriefingResult",
    "ConfirmationOut",
    "ConfirmationsResult",
    "ConflictGroupOut",
    "ConflictsResult",
    "ForgetResult",
    "HistoryResult",
    "HitOut",
    "MemoryOut",
    "ObserveResult",
    "ProfileResult",
    "RecallResult",
    "ResolveResult",
    "SlotOut",
    "TurnDecisionOut",
    "WriteResult",
    "confirmation_out",
    "hit_out",
    "memory_out",
    "observe_out",
    "write_out",
]


def iso(when: datetime | None) -> str | None:
    """``2026-03-01T09:00:00Z`` (UTC, seconds), or ``None``."""
    if when is None:
        return None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SlotOut(BaseModel):
    subject: str
    attribute: str
    value: str


class MemoryOut(BaseModel):
    """One stored memory."""

    id: str
    content: str
    type: str
    scope: str
    status: str = Field(description="active, demoted, pending_confirmation, superseded")
    confidence: float
    created_at: str = Field(description="when memstrata learned it (UTC)")
    valid_from: str | None = Field(
        default=None, description="when it became true (UTC), when not when it was learned")
    valid_to: str | None = Field(default=None, description="when it stopped being true")
    slot: SlotOut | None = Field(default=None, description="the structured fact, if any")
    pinned: bool | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    conflict_group: str | None = None


class HitOut(MemoryOut):
    """A recalled memory with its score (higher is better; 0..1)."""

    score: float
    relevance: float = Field(description="query match before recency and confidence")


class WriteResult(BaseModel):
    """The write policy's decision for one memory."""

    outcome: str = Field(description="written, corrected, reinforced, conflict, "
                                     "dropped_low_confidence or dropped_not_memorable")
    reason: str
    id: str | None = Field(default=None, description="the record written or reinforced")
    related_ids: list[str] | None = Field(
        default=None, description="records a correction superseded, or the other side of a "
                                  "conflict")


class RecallResult(BaseModel):
    hits: list[HitOut]
    note: str | None = None


class TurnDecisionOut(WriteResult):
    """What observe read from the turn and what the write policy decided."""

    content: str
    type: str
    rule: str = Field(description="the extraction rule that read it")


class ObserveResult(BaseModel):
    turn_id: int
    session_id: str
    decisions: list[TurnDecisionOut]
    superseded: list[str] | None = Field(
        default=None, description="older records a 'not X but Y' correction replaced")
    note: str | None = None


class ForgetResult(BaseModel):
    forgotten: list[str] = Field(description="ids of every record deleted (all versions of the "
                                             "fact and records formed from the same turns)")


class HistoryResult(BaseModel):
    versions: list[MemoryOut] = Field(description="every version of the fact, oldest first")


class ConflictGroupOut(BaseModel):
    conflict_group: str
    records: list[MemoryOut] = Field(description="the contradicting records, oldest first")


class ConflictsResult(BaseModel):
    conflicts: list[ConflictGroupOut]
    note: str | None = None


class ResolveResult(BaseModel):
    kept: MemoryOut
    superseded: list[str] = Field(description="the other side, now kept only as history")
    activated: list[str] = Field(description="the other side, kept as true too (keep_others)")


class ConfirmationOut(BaseModel):
    question: str = Field(description="ask the user this, then call resolve_conflict")
    conflict_group: str
    ids: list[str] = Field(description="the records in conflict, oldest first")
    scope: str


class BriefingResult(BaseModel):
    #: the user's standing rules (instructions to follow in every answer)
    rules: list[MemoryOut]
    confirmations: list[ConfirmationOut]
    lessons: list[MemoryOut]
    profile: list[MemoryOut]


class ConfirmationsResult(BaseModel):
    confirmations: list[ConfirmationOut]


class ProfileResult(BaseModel):
    profile: list[MemoryOut]


def memory_out(r: MemoryRecord) -> MemoryOut:
    return MemoryOut(
        id=r.id, content=r.content, type=r.type.value, scope=r.scope, status=r.status.value,
        confidence=round(r.confidence, 3), created_at=iso(r.created_at) or "",
        valid_from=None if r.valid_from == r.created_at else iso(r.valid_from),
        valid_to=iso(r.valid_to),
        slot=None if r.slot is None else SlotOut(subject=r.slot.subject,
                                                 attribute=r.slot.attribute,
                                                 value=r.slot.value),
        pinned=True if r.pinned else None, supersedes=r.supersedes,
        superseded_by=r.superseded_by,
        conflict_group=r.conflict_group if r.status is Status.PENDING_CONFIRMATION else None,
    )


def hit_out(h: RecallHit) -> HitOut:
    return HitOut(**memory_out(h.record).model_dump(), score=round(h.score, 4),
                  relevance=round(h.relevance, 4))


def write_out(d: WriteDecision) -> WriteResult:
    return WriteResult(outcome=d.outcome, reason=d.reason, id=d.record_id,
                       related_ids=list(d.related_ids) or None)


def observe_out(o: Observation) -> ObserveResult:
    decisions = [
        TurnDecisionOut(**write_out(d).model_dump(), content=c.content, type=c.type.value,
                        rule=c.rule)
        for c, d in zip(o.candidates, o.decisions, strict=True)
    ]
    note = None
    if not decisions:
        note = ("the turn is stored; no preference, profile fact or correction was read from "
                "it (use remember to store something explicitly)")
    return ObserveResult(turn_id=o.turn_id, session_id=o.session_id, decisions=decisions,
                         superseded=list(o.superseded) or None, note=note)


def confirmation_out(c: Confirmation) -> ConfirmationOut:
    return ConfirmationOut(question=c.question, conflict_group=c.conflict_group,
                           ids=[r.id for r in c.records], scope=c.scope)
