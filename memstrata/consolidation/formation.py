"""Memory formation from conversation: :meth:`MemoryManager.observe`.

One call per conversation turn::

    obs = memory.observe("alice", "s1", "user", "From now on book me aisle seats",
                         scope="travel")
    obs.turn_id        # the raw turn, appended to episodic storage
    obs.decisions      # what the write policy did with each candidate, and why

The raw turn is appended first (one small transaction). The fast offline
extractor (:mod:`memstrata.consolidation.extract`) then reads explicit
preferences, corrections and profile facts; each candidate goes through the
ordinary write policy in one batch (one embedding call, one transaction): a
structured correction supersedes the old value at once, a contradicting value
opens a conflict, a duplicate reinforces. Nothing else - no LLM, no per-turn
model calls. A turn with nothing readable costs the append alone; what the
fast path could not read waits in episodic storage for the ``summarize`` job
(the turn's metadata says ``fast_extracted: 0``).

Every memory written links back to its turn (``session_id`` and
``metadata.turn_id``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from memstrata.config import DEFAULT_SCOPE
from memstrata.consolidation.extract import Extracted, extract
from memstrata.errors import InvalidInputError
from memstrata.memory._validate import check_scope, check_user
from memstrata.types import MemoryInput, Source, WriteDecision

if TYPE_CHECKING:
    from memstrata.memory.manager import MemoryManager

__all__ = ["Observation", "observe"]


@dataclass(frozen=True, slots=True)
class Observation:
    """What :meth:`MemoryManager.observe` did with one turn.

    ``decisions[i]`` is the write policy's decision for ``candidates[i]``
    (written, corrected, reinforced, conflict, or dropped with the reason).
    """

    turn_id: int
    user_id: str
    session_id: str
    role: str
    candidates: tuple[Extracted, ...]
    decisions: tuple[WriteDecision, ...]
    kind: Literal["observation"] = "observation"

    @property
    def written(self) -> tuple[str, ...]:
        """Ids of the records this turn created."""
        return tuple(d.record_id for d in self.decisions if d.stored and d.record_id)


def observe(
    manager: MemoryManager,
    user_id: str,
    session_id: str,
    role: str,
    text: str,
    *,
    scope: str = DEFAULT_SCOPE,
    at: datetime | None = None,
    metadata: Mapping[str, Any] | None = None,
    extract_memories: bool | None = None,
) -> Observation:
    """Append a turn and form memories from it; see the module docstring.

    ``extract_memories`` defaults to true for the user's own turns (``role``
    ``user``) and false otherwise. Bad input raises before anything is stored.
    """
    user_id = check_user(user_id)
    check_scope(scope, manager.settings.scopes)
    if not isinstance(text, str):
        raise InvalidInputError("the turn text must be a string")
    if not isinstance(role, str):
        raise InvalidInputError("the role must be a string")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidInputError("turn metadata must be a mapping")
    wanted = role.strip().lower() in ("user", "human") if extract_memories is None \
        else bool(extract_memories)
    candidates = tuple(extract(text, role="user")) if wanted and text.strip() else ()
    inputs: list[MemoryInput] = []
    turn_meta = {**dict(metadata or {}), "scope": scope, "fast_extracted": len(candidates)}
    # validate the memories before the turn is stored, so bad input changes nothing
    for c in candidates:
        inputs.append(_input(c, scope, session_id, at, turn_id=0))
    turn_id = manager.episodic.append_turn(user_id, session_id, role, text, at=at,
                                           metadata=turn_meta)
    if not inputs:
        return Observation(turn_id, user_id, session_id, role, (), ())
    inputs = [_input(c, scope, session_id, at, turn_id=turn_id) for c in candidates]
    decisions = manager.remember_many(user_id, inputs)
    return Observation(turn_id, user_id, session_id, role, candidates, tuple(decisions))


def _input(c: Extracted, scope: str, session_id: str, at: datetime | None, *, turn_id: int
           ) -> MemoryInput:
    meta: dict[str, Any] = {"turn_id": turn_id, "extractor": c.rule}
    if c.correction:
        meta["correction"] = True
    if c.replaces:
        meta["replaces"] = c.replaces
    try:
        return MemoryInput(
            content=c.content, type=c.type, scope=scope, slot=c.slot, confidence=c.confidence,
            source=Source.USER_EXPLICIT, session_id=session_id, correction=c.correction,
            metadata=meta, at=at,
        )
    except ValueError as exc:
        raise InvalidInputError(f"cannot form a memory from this turn: {exc}") from exc
