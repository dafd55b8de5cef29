"""One write transaction of long-term memory: gather what the write policy needs,
ask it, carry out its verdicts.

The caller has embedded the candidates and found their vector neighbours;
everything that must be exact - the live values of a slot, exact duplicates -
is read here, inside the transaction, after the user's row is locked, so two
writers of one user cannot both create a value for the same slot. Records
written earlier in the same transaction are seen as if they were committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import Connection

from memstrata import _text
from memstrata.clock import from_epoch, to_epoch
from memstrata.memory import _store
from memstrata.memory._lifecycle import in_conflict, superseded
from memstrata.memory._store import IndexRow, SeqCounter, UserState, encode_vector, index_text
from memstrata.memory.embedder import Vectors
from memstrata.policies.conflict import ConflictPolicy, SlotMatch
from memstrata.policies.retention import RetentionPolicy
from memstrata.policies.temporal import resolve_date, slot_change
from memstrata.policies.write import Candidate, Neighbour, Verdict, WritePolicy, decide
from memstrata.types import RETRIEVABLE, MemoryInput, MemoryType, Status, WriteDecision

__all__ = ["PreparedWrite", "WriteTxn", "candidate_of"]

_RETRIEVABLE = {s.value for s in RETRIEVABLE}
_MAX_SOURCES_KEPT = 20


def candidate_of(item: MemoryInput) -> Candidate:
    """What the write policy sees of an input."""
    return Candidate(
        content=item.content,
        type=item.type,
        confidence=item.confidence,
        source=item.source,
        slot=item.slot,
        correction=item.correction,
        verified=item.verified,
        ephemeral=item.ephemeral,
    )


@dataclass(slots=True)
class PreparedWrite:
    """A validated candidate with its embedding and its nearest live records."""

    item: MemoryInput
    candidate: Candidate
    vector: Vectors
    #: one vector per sentence of a record of two or more sentences, else None
    sentences: Vectors | None = None
    #: (record id, cosine) of existing records at or above the duplicate threshold
    near: list[tuple[str, float]] = field(default_factory=list)


@dataclass(slots=True)
class WriteTxn:
    conn: Connection
    user_id: str
    state: UserState
    now: float
    model: str
    write_policy: WritePolicy
    conflict_policy: ConflictPolicy
    retention: RetentionPolicy
    counter: SeqCounter = field(init=False)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    vectors: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    removals: list[str] = field(default_factory=list)
    upserts: list[IndexRow] = field(default_factory=list)
    #: rows written in this transaction by (scope, content_hash) / (scope, slot_key)
    _by_hash: dict[tuple[str, str], str] = field(default_factory=dict)
    #: live records of this user with the hashes of the batch, read once per transaction
    _known_hashes: dict[tuple[str, str], str] = field(default_factory=dict)
    _prefetched: set[str] = field(default_factory=set)
    _by_slot: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: records written earlier in this transaction: (id, scope, type) and their vectors
    _written: list[tuple[str, str, str]] = field(default_factory=list)
    _written_matrix: Vectors | None = None

    #: a shared sequence (several writes of one user in one RecordTxn)
    shared_counter: SeqCounter | None = None

    def __post_init__(self) -> None:
        self.counter = self.shared_counter or SeqCounter(self.state)

    # ------------------------------------------------------------ reads

    def _row(self, memory_id: str) -> dict[str, Any] | None:
        if memory_id in self.pending:
            return self.pending[memory_id]
        found = _store.fetch(self.conn, self.user_id, [memory_id]).get(memory_id)
        return None if found is None else dict(found._mapping)

    def _slot_matches(self, scope: str, key: str, cand_value: str) -> list[SlotMatch]:
        rows = [dict(r._mapping) for r in _store.slot_rows(self.conn, self.user_id, scope, key)]
        rows += [
            self.pending[i]
            for i in self._by_slot.get((scope, key), [])
            if self.pending[i]["status"] in _RETRIEVABLE
        ]
        seen: set[str] = set()
        out = []
        for row in rows:
            if row["id"] in seen:
                continue
            seen.add(row["id"])
            out.append(
                SlotMatch(
                    record_id=row["id"],
                    value=row["value"],
                    same_value=row["value"] is not None
                    and _text.normalize(row["value"]) == _text.normalize(cand_value),
                    conflict_group=row["conflict_group"],
                )
            )
        return out

    def _neighbours(self, prepared: PreparedWrite, exact_id: str | None) -> list[Neighbour]:
        scope = prepared.item.scope
        out: list[Neighbour] = []
        if exact_id is not None:
            row = self._row(exact_id)
            if row is not None:
                out.append(
                    Neighbour(exact_id, 1.0, row["content"], MemoryType(row["type"]), exact=True)
                )
        ids = [memory_id for memory_id, _ in prepared.near]
        rows = _store.fetch(self.conn, self.user_id, ids) if ids else {}
        for memory_id, sim in prepared.near:
            found = rows.get(memory_id)
            if found is None or found.status not in _RETRIEVABLE or found.scope != scope:
                continue
            out.append(Neighbour(memory_id, sim, found.content, MemoryType(found.type)))
        # records written earlier in this transaction
        threshold = self.write_policy.duplicate_similarity
        if self._written and self._written_matrix is not None:
            sims = self._written_matrix[: len(self._written)] @ prepared.vector
            for i in np.flatnonzero(sims >= threshold):
                memory_id, w_scope, w_type = self._written[int(i)]
                if w_scope == scope:
                    row = self.pending[memory_id]
                    out.append(Neighbour(memory_id, float(sims[i]), row["content"],
                                         MemoryType(w_type)))
        return out

    def _remember_vector(self, row: dict[str, Any], vector: Vectors) -> None:
        n = len(self._written)
        matrix = self._written_matrix
        if matrix is None or n == matrix.shape[0]:
            grown = np.empty((max(64, 2 * n), vector.shape[0]), dtype=np.float32)
            if matrix is not None:
                grown[:n] = matrix[:n]
            matrix = self._written_matrix = grown
        matrix[n] = vector
        self._written.append((row["id"], row["scope"], row["type"]))

    def prefetch(self, batch: list[PreparedWrite]) -> None:
        """Read the exact duplicates of a whole batch in one query."""
        self._prefetch_hashes([_text.content_hash(p.item.content) for p in batch])

    def _prefetch_hashes(self, hashes: list[str]) -> None:
        found = _store.rows_by_hash(self.conn, self.user_id, hashes)
        self._known_hashes.update({key: row.id for key, row in found.items()})
        self._prefetched.update(hashes)

    def watch_ids(self, item: MemoryInput) -> list[str]:
        """Live records a write of ``item`` may change (its exact duplicate in the
        scope, its slot), read before the write so a caller can diff them after.
        The duplicate lookup fills the cache :meth:`write` reads, so it costs no
        second query."""
        chash = _text.content_hash(item.content)
        if chash not in self._prefetched:
            self._prefetch_hashes([chash])
        ids = [i for i in (self._known_hashes.get((item.scope, chash)),) if i is not None]
        if item.slot is not None:
            key = _store.slot_key(item.slot.subject, item.slot.attribute)
            ids += [r.id for r in _store.slot_rows(self.conn, self.user_id, item.scope, key)]
        return ids

    # ------------------------------------------------------------ decide + act

    def write_input(self, item: MemoryInput, vector: Vectors,
                    sentences: Vectors | None = None) -> WriteDecision:
        """Offer one input (already embedded, with its sentences' vectors when it has two
        or more; no vector-index neighbours) to the policy."""
        return self.write(PreparedWrite(item, candidate_of(item), vector, sentences))

    def write(self, prepared: PreparedWrite) -> WriteDecision:
        item = prepared.item
        chash = _text.content_hash(item.content)
        if chash not in self._prefetched:
            self.prefetch([prepared])
        exact_id = self._by_hash.get((item.scope, chash)) or self._known_hashes.get(
            (item.scope, chash)
        )
        slot_matches: list[SlotMatch] = []
        key = None
        if item.slot is not None:
            key = _store.slot_key(item.slot.subject, item.slot.attribute)
            slot_matches = self._slot_matches(item.scope, key, item.slot.value)
        verdict = decide(
            prepared.candidate,
            slot_matches=slot_matches,
            neighbours=self._neighbours(prepared, exact_id) if item.slot is None else (),
            policy=self.write_policy,
            conflicts=self.conflict_policy,
        )
        if verdict.outcome == "conflict" and item.slot is not None:
            verdict = self._implicit_update(prepared, verdict, slot_matches)
        return self._carry_out(prepared, verdict, chash, key, slot_matches)

    def _implicit_update(self, prepared: PreparedWrite, verdict: Verdict,
                         slot_matches: Sequence[SlotMatch]) -> Verdict:
        """A different slot value without "actually": a change of state supersedes
        the current value(s) with history; a contradiction of a stable fact stays a
        conflict for the user to confirm (:func:`~memstrata.policies.temporal.slot_change`)."""
        item = prepared.item
        assert item.slot is not None
        stated = item.valid_from or item.at
        said = self.now if stated is None else to_epoch(stated)
        rows = [self._row(m.record_id) for m in slot_matches]
        latest = max((float(r["valid_from"]) for r in rows if r is not None), default=said)
        if latest > said:  # an older statement arriving late does not replace a newer one
            return verdict
        if any(r is not None and r["status"] == Status.PENDING_CONFIRMATION.value
               for r in rows):
            return verdict  # an open conflict stays open until the user settles it
        why = slot_change(item.content, item.slot.attribute, gap_seconds=said - latest)
        if why is None:
            return verdict
        return Verdict("corrected", why, tuple(m.record_id for m in slot_matches))

    def _carry_out(
        self,
        prepared: PreparedWrite,
        verdict: Verdict,
        chash: str,
        key: str | None,
        slot_matches: Sequence[SlotMatch],
    ) -> WriteDecision:
        if verdict.outcome == "reinforced":
            target = verdict.targets[0]
            self._reinforce(target, prepared, verdict.reason)
            return WriteDecision("reinforced", verdict.reason, target)
        if verdict.outcome not in ("written", "corrected", "conflict"):
            return WriteDecision(verdict.outcome, verdict.reason)
        row = self._new_row(prepared, chash, key)
        if verdict.outcome == "corrected":
            latest = self._supersede(verdict.targets, row, verdict.reason)
            row["supersedes"] = latest
        elif verdict.outcome == "conflict":
            groups = [m.conflict_group for m in slot_matches if m.conflict_group]
            group = groups[0] if groups else _store.new_id()
            row["status"] = Status.PENDING_CONFIRMATION.value
            row["conflict_group"] = group
            for target in verdict.targets:
                self._update(target, **in_conflict(group, self.now))
                self._event(target, "conflict", verdict.reason, {"with": row["id"],
                                                                  "group": group})
        self._insert(row, prepared)
        self._event(row["id"], verdict.outcome, verdict.reason,
                    {"type": row["type"], "scope": row["scope"], "source": row["source"]})
        return WriteDecision(verdict.outcome, verdict.reason, row["id"], verdict.targets)

    def _new_row(self, prepared: PreparedWrite, chash: str, key: str | None) -> dict[str, Any]:
        item = prepared.item
        at = to_epoch(item.at) if item.at is not None else self.now
        valid_from = to_epoch(item.valid_from) if item.valid_from is not None else at
        expires = self.retention.expires_at(item.type, from_epoch(at), override=item.ttl)
        slot = item.slot
        metadata = dict(item.metadata)
        if "event_date" not in metadata:
            # "yesterday" means the day before it was said, not before it is read
            when = resolve_date(item.content, from_epoch(at))
            if when is not None:
                metadata["event_date"] = when.to_json()
        return {
            "id": _store.new_id(),
            "user_id": self.user_id,
            "scope": item.scope,
            "type": item.type.value,
            "content": item.content,
            "context": item.context,
            "content_hash": chash,
            "subject": slot.subject if slot else None,
            "attribute": slot.attribute if slot else None,
            "value": slot.value if slot else None,
            "slot_key": key,
            "confidence": item.confidence,
            "importance": item.importance,
            "source": item.source.value,
            "session_id": item.session_id,
            "task_id": item.task_id,
            "step_id": item.step_id,
            "created_at": at,
            "updated_at": self.now,
            "valid_from": valid_from,
            "valid_to": None,
            "last_accessed_at": None,
            "access_count": 0,
            "expires_at": None if expires is None else to_epoch(expires),
            "status": Status.ACTIVE.value,
            "pinned": item.pinned,
            "supersedes": None,
            "superseded_by": None,
            "conflict_group": None,
            "metadata": metadata,
            "seq": 0,
        }

    def _insert(self, row: dict[str, Any], prepared: PreparedWrite) -> None:
        row["seq"] = self.counter.next()
        self.pending[row["id"]] = row
        self.vectors.append(
            {
                "memory_id": row["id"],
                "user_id": self.user_id,
                "model": self.model,
                "dim": int(prepared.vector.shape[0]),
                "vector": encode_vector(prepared.vector),
                "sentences": None if prepared.sentences is None
                else encode_vector(prepared.sentences),
            }
        )
        self._by_hash.setdefault((row["scope"], row["content_hash"]), row["id"])
        if row["slot_key"] is not None:
            self._by_slot.setdefault((row["scope"], row["slot_key"]), []).append(row["id"])
        self._remember_vector(row, prepared.vector)

    def _update(self, memory_id: str, **values: Any) -> None:
        if values.get("status", Status.ACTIVE.value) not in _RETRIEVABLE:
            self._known_hashes = {
                k: v for k, v in self._known_hashes.items() if v != memory_id
            }
        if memory_id in self.pending:
            self.pending[memory_id].update(values)
        else:
            _store.update_record(self.conn, self.user_id, memory_id, **values)

    def _event(self, memory_id: str, action: str, reason: str, details: dict[str, Any],
               seq: int | None = None) -> None:
        self.events.append(
            {
                "user_id": self.user_id,
                "memory_id": memory_id,
                "action": action,
                "reason": reason,
                "at": self.now,
                "seq": seq,
                "details": details,
            }
        )

    def _reinforce(self, target: str, prepared: PreparedWrite, reason: str) -> None:
        row = self._row(target)
        if row is None:  # pragma: no cover - target came from this transaction's reads
            return
        item = prepared.item
        metadata = dict(row["metadata"] or {})
        metadata["reinforced"] = int(metadata.get("reinforced", 0)) + 1
        source = {
            k: v
            for k, v in {
                "at": self.now,
                "source": item.source.value,
                "session_id": item.session_id,
                "task_id": item.task_id,
                "step_id": item.step_id,
            }.items()
            if v is not None
        }
        sources = [*list(metadata.get("sources", []))[-(_MAX_SOURCES_KEPT - 1):], source]
        metadata["sources"] = sources
        # the turn that restated it is linked for good (not trimmed like ``sources``):
        # forgetting the record must take every turn that said it
        turn_id = (item.metadata or {}).get("turn_id")
        if isinstance(turn_id, int) and turn_id > 0:
            restated = [t for t in metadata.get("restated_turns", []) if isinstance(t, int)]
            if turn_id not in restated and turn_id != metadata.get("turn_id"):
                metadata["restated_turns"] = [*restated, turn_id]
        expires = self.retention.extended(
            MemoryType(row["type"]),
            None if row["expires_at"] is None else from_epoch(row["expires_at"]),
            from_epoch(self.now),
        )
        values: dict[str, Any] = {
            "confidence": max(float(row["confidence"]), item.confidence),
            "metadata": metadata,
            "updated_at": self.now,
            "last_accessed_at": self.now,
            "expires_at": None if expires is None else to_epoch(expires),
        }
        if row["status"] == Status.DEMOTED.value:
            values["status"] = Status.ACTIVE.value
        self._update(target, **values)
        self._event(target, "reinforced", reason, {"by_source": item.source.value})

    def _supersede(self, targets: Sequence[str], new_row: dict[str, Any], reason: str) -> str:
        latest: tuple[float, str] | None = None
        for target in targets:
            row = self._row(target)
            if row is None:  # pragma: no cover
                continue
            seq = self.counter.next()
            self._update(
                target,
                **superseded(by=new_row["id"], by_valid_from=float(new_row["valid_from"]),
                             own_valid_from=float(row["valid_from"]), now=self.now),
                seq=seq,
            )
            self._event(target, "superseded", reason, {"by": new_row["id"]})
            self.removals.append(target)
            candidate = (float(row["valid_from"]), target)
            if latest is None or candidate > latest:
                latest = candidate
        assert latest is not None
        return latest[1]

    # ------------------------------------------------------------ commit

    def finish(self) -> UserState:
        """Write everything pending; returns the user's state after the change."""
        rows = list(self.pending.values())
        _store.insert_records(self.conn, rows, self.vectors)
        _store.add_events(self.conn, self.events)
        self.counter.commit(self.conn, embed_model=self.model
                            if rows and self.state.embed_model is None else None)
        vectors = {v["memory_id"]: v for v in self.vectors}
        for row in rows:
            if row["status"] in _RETRIEVABLE:
                self.upserts.append(
                    IndexRow(
                        id=row["id"],
                        scope=row["scope"],
                        type=row["type"],
                        text=index_text(row["content"], row["context"], row["subject"],
                                        row["attribute"], row["value"]),
                        vector=_store.decode_vector(vectors[row["id"]]["vector"]),
                    )
                )
        return UserState(
            self.user_id,
            self.counter.value,
            self.state.generation,
            self.state.embed_model or (self.model if rows else None),
        )
