"""Every state change of a long-term record, in one place.

A record moves through ``active -> demoted -> deleted -> purged`` (retention),
``-> pending_confirmation`` (a conflict) and back (resolved), ``-> superseded``
(a correction, a newer summary, a merged duplicate) and back (undo). This
module is the only code that changes those columns. Each change:

* is computed by a pure function here (:func:`superseded`, :func:`in_conflict`,
  :func:`demoted`, ...) - so "supersede" means one thing everywhere: status
  ``superseded``, ``superseded_by`` the replacing record, ``valid_to`` the time
  the replacement became true (or the time of the change, when the replacing
  record is not newer - a duplicate merged into an older keeper);
* is carried out by :class:`RecordTxn` inside a write transaction, which checks
  the record still holds the expected values (optional), writes the columns,
  stamps ``seq`` when the record enters or leaves the retrievable set (so the
  derived indexes of every process catch up), and writes **one audit event**
  (``memory_events``: action, reason, the names of the changed columns - never
  their values, so an event never holds content);
* is handed to the derived indexes after the commit (``MemoryManager.changes``
  does that for the users a transaction touched).

New records go through the write policy in :class:`~memstrata.memory._writer.WriteTxn`,
which uses the same functions for what it supersedes or flags.

Callers outside ``memory/`` (the consolidation jobs) reach this through
``MemoryManager.changes()``; they describe a change as any object with
``memory_id``, ``action``, ``reason``, ``before`` and ``after``
(:class:`ChangeLike`) - their own planned-action type - and get back the ones
that were applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import Connection, bindparam, select, update

from memstrata.errors import ModelMismatchError
from memstrata.memory import _store
from memstrata.memory._schema import memories, users
from memstrata.memory._store import SeqCounter, UserState
from memstrata.types import RETRIEVABLE, Status

if TYPE_CHECKING:
    from memstrata.config import Settings
    from memstrata.memory._writer import WriteTxn

__all__ = [
    "RECORD_COLUMNS",
    "ChangeLike",
    "RecordTxn",
    "activated",
    "changed_columns",
    "deleted",
    "demoted",
    "in_conflict",
    "superseded",
]

_RETRIEVABLE = frozenset(s.value for s in RETRIEVABLE)
#: columns a lifecycle change may set (never the id, the user or the content)
RECORD_COLUMNS: tuple[str, ...] = (
    "status", "confidence", "importance", "expires_at", "last_accessed_at", "access_count",
    "pinned", "supersedes", "superseded_by", "conflict_group", "valid_to", "updated_at",
    "metadata",
)
_CHUNK = 500


# ---------------------------------------------------------------- what each change sets


def superseded(*, by: str, by_valid_from: float, own_valid_from: float, now: float
               ) -> dict[str, Any]:
    """Columns of a record replaced by ``by``.

    ``valid_to`` is when the replacement became true; when it is not newer than
    the replaced record (a duplicate merged into an older keeper, a correction
    back-dated before the fact it corrects) the change time is used instead, so a
    validity interval never ends before it starts.
    """
    valid_to = by_valid_from if by_valid_from > own_valid_from else now
    return {"status": Status.SUPERSEDED.value, "superseded_by": by, "valid_to": valid_to,
            "updated_at": now}


def in_conflict(group: str, now: float) -> dict[str, Any]:
    """Columns of a record that joins the open conflict ``group``."""
    return {"status": Status.PENDING_CONFIRMATION.value, "conflict_group": group,
            "updated_at": now}


def activated(now: float) -> dict[str, Any]:
    """Columns of a record confirmed by the user (or settled as also true)."""
    return {"status": Status.ACTIVE.value, "updated_at": now}


def demoted(confidence: float, factor: float) -> dict[str, Any]:
    """Columns of a record past its expiry and unused since."""
    return {"status": Status.DEMOTED.value, "confidence": confidence * factor}


def deleted(now: float) -> dict[str, Any]:
    """Columns of a soft-deleted record (out of recall and the indexes; undoable)."""
    return {"status": Status.DELETED.value, "updated_at": now}


def changed_columns(before: dict[str, Any], after: dict[str, Any]
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Only the columns whose values differ, as (before, after)."""
    keys = [k for k in after if before.get(k) != after.get(k)]
    return {k: before.get(k) for k in keys}, {k: after[k] for k in keys}


def json_value(value: Any) -> Any:
    """A column value as it round-trips through JSON (for comparisons and records)."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


# ---------------------------------------------------------------- carrying changes out


class ChangeLike(Protocol):
    """A planned change of one record: the columns before and after."""

    @property
    def memory_id(self) -> str | None: ...

    @property
    def action(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def before(self) -> dict[str, Any] | None: ...

    @property
    def after(self) -> dict[str, Any] | None: ...


C = TypeVar("C", bound=ChangeLike)


@dataclass
class _Touched:
    before: UserState
    counter: SeqCounter


@dataclass
class RecordTxn:
    """State changes of records inside one write transaction (see the module docstring).

    ``conn`` is the transaction; a caller may write its own tables on it, so its
    bookkeeping commits (or rolls back) together with the changes.
    """

    conn: Connection
    now: float
    #: the write, conflict and retention policies new records go through
    policies: Settings | None = None
    _touched: dict[str, _Touched] = field(default_factory=dict)
    _events: list[dict[str, Any]] = field(default_factory=list)
    _writers: list[WriteTxn] = field(default_factory=list)
    #: users :meth:`lock` found without a row in this transaction
    _absent: set[str] = field(default_factory=set)

    # ------------------------------------------------------------ users

    def lock(self, user_id: str) -> bool:
        """Lock an existing user for this transaction; ``False`` if there is none.

        A job that planned before the transaction must not bring back a user
        erased in between: it locks with this and skips the user on ``False``.
        """
        if user_id in self._touched:
            return True
        row = self.conn.execute(
            select(users.c.seq, users.c.generation, users.c.embed_model)
            .where(users.c.user_id == user_id)
            .with_for_update()
        ).first()
        if row is None:
            self._absent.add(user_id)
            return False
        state = UserState(user_id, int(row.seq), str(row.generation), row.embed_model)
        self._touched[user_id] = _Touched(state, SeqCounter(state))
        return True

    def lock_or_create(self, user_id: str) -> UserState:
        """Lock the user, creating the row on the first write."""
        if user_id not in self._touched:
            state = _store.lock_user(self.conn, user_id, self.now,
                                     absent=user_id in self._absent)
            self._absent.discard(user_id)
            self._touched[user_id] = _Touched(state, SeqCounter(state))
        return self._touched[user_id].before

    def counter(self, user_id: str) -> SeqCounter:
        """The user's change sequence in this transaction (lock first)."""
        return self._touched[user_id].counter

    def adopt(self, user_id: str, state: UserState, counter: SeqCounter) -> None:
        """Let a write transaction that locked the user itself share the sequence."""
        self._touched[user_id] = _Touched(state, counter)

    @property
    def touched(self) -> dict[str, tuple[UserState, int]]:
        """user id -> (state before, seq after) of every user changed here."""
        return {u: (t.before, t.counter.value) for u, t in self._touched.items()}

    # ------------------------------------------------------------ reads

    def snapshot(self, user_id: str, ids: Iterable[str],
                 columns: Sequence[str] = RECORD_COLUMNS) -> dict[str, dict[str, Any]]:
        """Current values of ``columns`` of this user's records ``ids``."""
        wanted = list(dict.fromkeys(ids))
        out: dict[str, dict[str, Any]] = {}
        cols = [memories.c.id, *(memories.c[c] for c in columns)]
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            for row in self.conn.execute(
                select(*cols).where(_store.owned_by(user_id), memories.c.id.in_(chunk))
            ):
                m = row._mapping
                out[str(m["id"])] = {c: json_value(m[c]) for c in columns}
        return out

    # ------------------------------------------------------------ writes

    def update(self, user_id: str, changes: Sequence[C], *, verify: bool,
               restamp: bool = False) -> tuple[list[C], list[str]]:
        """Write the ``after`` columns of each change; returns (applied, errors).

        With ``verify`` a record must still hold the change's ``before`` values
        (one that changed or vanished since it was planned is skipped and
        reported). ``seq`` is stamped when the status crosses the retrievable
        boundary, or always with ``restamp`` (an undo: indexes re-read the row).
        Each applied change writes one content-free event. Lock the user first.
        """
        counter = self.counter(user_id)
        todo = [c for c in changes if c.before is not None and c.after is not None
                and c.memory_id]
        bad = [c for c in todo if set(c.after or {}) - set(RECORD_COLUMNS)]
        if bad:
            raise ValueError(f"a lifecycle change may only set {RECORD_COLUMNS}")
        errors: list[str] = []
        if verify and todo:
            current = self.snapshot(user_id, [str(c.memory_id) for c in todo])
            # a record superseded by another needs that one (a merge into a keeper
            # forgotten since the plan would point at nothing, and recall find neither)
            pointed = {str(by) for c in todo
                       if (by := (c.after or {}).get("superseded_by"))}
            present = set(self.snapshot(user_id, sorted(pointed), ("status",))) \
                if pointed else set()
            present |= {i for w in self._writers if w.user_id == user_id
                        for i in w.pending}  # written in this transaction
            kept = []
            for c in todo:
                row = current.get(str(c.memory_id))
                assert c.before is not None and c.after is not None
                if row is None:
                    errors.append(f"{c.action} {c.memory_id}: the record no longer exists")
                elif c.after.get("superseded_by") and \
                        str(c.after["superseded_by"]) not in present:
                    errors.append(f"{c.action} {c.memory_id}: the record that would replace "
                                  "it no longer exists; left as it is")
                elif not all(json_value(row.get(k)) == json_value(v)
                             for k, v in c.before.items()):
                    errors.append(f"{c.action} {c.memory_id}: the record changed since it was "
                                  "planned; left as it is")
                else:
                    kept.append(c)
            todo = kept
        groups: dict[tuple[tuple[str, ...], bool], list[dict[str, Any]]] = {}
        for c in todo:
            assert c.before is not None and c.after is not None
            stamp = restamp or (
                "status" in c.after
                and (str(c.before.get("status")) in _RETRIEVABLE)
                != (str(c.after["status"]) in _RETRIEVABLE)
            )
            cols = tuple(sorted(c.after))
            params: dict[str, Any] = {"_u": user_id, "_id": c.memory_id}
            for col in cols:
                params[f"_v_{col}"] = c.after[col]
            seq = counter.next() if stamp else None
            if stamp:
                params["_v_seq"] = seq
            groups.setdefault((cols, stamp), []).append(params)
            self._events.append({
                "user_id": user_id, "memory_id": c.memory_id, "action": c.action,
                "reason": c.reason, "at": self.now, "seq": None,
                "details": {"columns": list(cols)},
            })
        for (cols, stamp), rows in groups.items():
            values: dict[str, Any] = {col: bindparam(f"_v_{col}", type_=memories.c[col].type)
                                      for col in cols}
            if stamp:
                values["seq"] = bindparam("_v_seq", type_=memories.c.seq.type)
            self.conn.execute(
                update(memories)
                .where(memories.c.user_id == bindparam("_u"), memories.c.id == bindparam("_id"))
                .values(values),
                rows,
            )
        return todo, errors

    def set(self, user_id: str, memory_id: str, action: str, reason: str,
            values: dict[str, Any]) -> bool:
        """One change of an existing record: write it and its event; ``False`` if the
        user has no such record. Lock the user first."""
        current = self.snapshot(user_id, [memory_id], tuple(values)).get(memory_id)
        if current is None:
            return False
        self.update(user_id, [_Change(memory_id, action, reason, current, values)],
                    verify=False)
        return True

    def delete(self, user_id: str, ids: Sequence[str], *, action: str, reason: str
               ) -> list[str]:
        """Hard-delete records (vectors and links go too; one content-free event each)."""
        return _store.delete_records(self.conn, user_id, ids, self.counter(user_id),
                                     action=action, reason=reason, now=self.now)

    def writer(self, user_id: str, *, model: str) -> WriteTxn:
        """New records of ``user_id`` (embedded by ``model``) through the write policy,
        in this transaction; written at :meth:`flush`. Creates the user row if needed;
        :class:`ModelMismatchError` if the user's vectors come from another model."""
        from memstrata.memory._writer import WriteTxn

        assert self.policies is not None, "RecordTxn.writer needs the policies"
        state = self.lock_or_create(user_id)
        if state.embed_model not in (None, model):
            raise ModelMismatchError(user_id, state.embed_model, model)
        writer = WriteTxn(conn=self.conn, user_id=user_id, state=state, now=self.now,
                          model=model, write_policy=self.policies.write,
                          conflict_policy=self.policies.conflict,
                          retention=self.policies.retention,
                          shared_counter=self.counter(user_id))
        self._writers.append(writer)
        return writer

    def flush(self) -> None:
        """Write the new records, the pending events and every touched user's sequence."""
        for writer in self._writers:
            writer.finish()
        self._writers.clear()
        _store.add_events(self.conn, self._events)
        self._events.clear()
        for t in self._touched.values():
            t.counter.commit(self.conn)


@dataclass(frozen=True, slots=True)
class _Change:
    memory_id: str
    action: str
    reason: str
    before: dict[str, Any]
    after: dict[str, Any]
