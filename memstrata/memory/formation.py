"""Memory formation from conversation: :meth:`MemoryManager.observe`.

One call per conversation turn::

    obs = memory.observe("alice", "s1", "user", "From now on book me aisle seats",
                         scope="travel")
    obs.turn_id        # the raw turn, appended to episodic storage
    obs.decisions      # what the write policy did with each candidate, and why

The raw turn is appended first (one small transaction). The fast offline
extractor (:mod:`memstrata.policies.extraction`) then reads explicit
preferences, corrections and profile facts; each candidate goes through the
ordinary write policy in one batch (one embedding call, one transaction): a
structured correction supersedes the old value at once, a contradicting value
opens a conflict, a duplicate reinforces; a free-text "actually, not X but Y"
supersedes the older statements about X in the scope right away. A candidate whose
attribute the sentence leaves open ("I moved from Siemens to Google", "I left Berlin for
Munich") takes the attribute whose current value the sentence names (one read of the
user's active slots, only for such turns). Nothing else -
no LLM, no per-turn model calls. A user's statement the readers read no fact from ("I've been
really into pottery lately") is kept whole at once, as inferred knowledge with its readings, if
any (:func:`memstrata.reading.statements.worth_keeping` says which turns are statements; the
turn's metadata says ``kept_as_statement``), so it is recallable before the nightly jobs;
questions and small talk cost the append alone. What the fast
path could not read (``fast_extracted: 0``) waits in episodic storage for the ``summarize``
job, which may read facts from it with an LLM.

Every memory written links back to its turn (``session_id`` and
``metadata.turn_id``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import select

from memstrata import _text
from memstrata.config import DEFAULT_SCOPE
from memstrata.errors import InvalidInputError
from memstrata.memory._lifecycle import superseded
from memstrata.memory._schema import memories
from memstrata.memory._validate import (
    check_flag,
    check_input,
    check_role,
    check_scope,
    check_turn,
    check_user,
)
from memstrata.types import (
    USER_SUBJECT,
    MemoryInput,
    MemoryType,
    Slot,
    Source,
    Status,
    WriteDecision,
)

if TYPE_CHECKING:
    from memstrata.memory.manager import MemoryManager
    from memstrata.policies.extraction import Extracted
    from memstrata.reading import Held, Reader, Reading, Relation

__all__ = ["Observation", "candidates_from_readings", "observe"]


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
    #: older free-text records a "not X but Y" correction superseded at once
    superseded: tuple[str, ...] = ()
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
    ``user``) and false otherwise. Bad input raises before anything is stored:
    the turn and every memory formed from it are checked (the same checks as
    ``append_turn`` and ``remember``) before the turn is appended.
    """
    user_id = check_user(user_id)
    check_scope(scope, manager.settings.scopes)
    check_role(role)
    _, meta = check_turn(session_id, role, text, at, metadata)
    if extract_memories is not None:
        check_flag(extract_memories, "extract_memories")
    wanted = role.strip().lower() in ("user", "human") if extract_memories is None \
        else extract_memories
    from memstrata.policies.extraction import extract  # the rules load on the first turn
    from memstrata.reading import to_stored

    reader = manager.reader
    candidates: tuple[Extracted, ...] = ()
    readings: tuple[Reading, ...] | None = None
    if wanted and text.strip() and reader.name != "rules":
        candidates, readings = _read_candidates(manager, reader, user_id, scope, text)
    elif wanted and text.strip():
        candidates = tuple(extract(text, role="user"))
        if any(c.alternatives for c in candidates):
            candidates = _resolve_attributes(manager, user_id, scope, candidates)
        # also beside a slot the extractor read ("I'm a senior scientist at Moderna now":
        # the occupation is read, the employer the user holds is read here)
        read = {c.slot.attribute for c in candidates if c.slot is not None}
        candidates += _changes_of_known_values(manager, user_id, scope, text, read)
    kept = False
    if wanted and not candidates and manager.settings.write.keep_statements:
        from memstrata.reading.statements import worth_keeping

        # what the user told, read as no fact, is recallable at once (with its readings)
        if worth_keeping(text):
            candidates, kept = (_statement(text),), True
    turn_meta = {**meta, "scope": scope, "fast_extracted": len(candidates) - kept}
    if kept:
        turn_meta["kept_as_statement"] = True
    # check the memories as remember would before the turn is stored, so bad input
    # changes nothing (PostgreSQL would refuse an over-wide slot after the append)
    # a statement kept whole with no reading at all stores none: recall then reads it as it
    # reads a statement the nightly summarize kept (an empty list would say "states
    # nothing", and hide an implicit change the reader missed: 入职字节快两个月了 with 腾讯 held)
    stored = None if readings is None or (kept and not readings) \
        else (reader.version, to_stored(readings, reader.version))
    inputs = [
        check_input(_input(c, scope, session_id, at, turn_id=0, readings=stored), {},
                    limit=manager.settings.max_content_chars,
                    allowed_scopes=manager.settings.scopes)
        for c in candidates
    ]
    turn_id = manager.episodic.append_turn(user_id, session_id, role, text, at=at,
                                           metadata=turn_meta)
    if not inputs:
        return Observation(turn_id, user_id, session_id, role, (), ())
    inputs = [_input(c, scope, session_id, at, turn_id=turn_id, readings=stored)
              for c in candidates]
    decisions = manager.remember_many(user_id, inputs)
    corrected: list[str] = []
    for c, d in zip(candidates, decisions, strict=True):
        if c.replaces and c.slot is None and d.stored and d.record_id:
            corrected += _supersede_replaced(manager, user_id, scope, d.record_id, c.replaces,
                                             turn_id=turn_id)
    return Observation(turn_id, user_id, session_id, role, candidates, tuple(decisions),
                       tuple(corrected))


def _resolve_attributes(manager: MemoryManager, user_id: str, scope: str,
                        candidates: tuple[Extracted, ...]) -> tuple[Extracted, ...]:
    """Which thing changed, read from what the user said before.

    "I moved from Siemens to Google" and "I left Berlin for Munich" have the same
    shape; the sentence names the value being left, so the attribute whose current
    value it names is the one that changed. A tentative candidate whose sentence
    names no current value is dropped (the raw turn stays for ``summarize``).
    """
    wanted = {a for c in candidates if c.slot is not None
              for a in (c.slot.attribute, *c.alternatives)}
    current = _held_values(manager, user_id, scope, wanted)
    out: list[Extracted] = []
    for c in candidates:
        if not c.alternatives or c.slot is None:
            out.append(c)
            continue
        said = _text.normalize(c.content)
        named = [a for a, v in current
                 if v and a in (c.slot.attribute, *c.alternatives)
                 and _text.normalize(v) != _text.normalize(c.slot.value)
                 and re.search(rf"(?<!\w){re.escape(_text.normalize(v))}(?!\w)", said)]
        if named and c.slot.attribute not in named:
            slot = Slot(c.slot.subject, named[0], c.slot.value)
            out.append(dataclasses.replace(c, slot=slot, alternatives=(), tentative=False))
        elif named or not c.tentative:
            out.append(c)
    return tuple(out)


#: the memory type of each registry attribute's value (the rest are profile facts); a
#: standing instruction to the assistant (the reply language, "always use bullet points")
#: is a rule: no expiry, always in the briefing, until the user revokes or replaces it
_TYPES = {"diet": MemoryType.PREFERENCE, "streaming": MemoryType.PREFERENCE,
          "language": MemoryType.RULE, "instruction": MemoryType.RULE}
#: the rules' extractor names of a standing instruction read as a preference
_STANDING = frozenset({"always", "from_now_on", "dont"})


def _kind(c: Extracted) -> MemoryType:
    """The memory type of a candidate: a standing instruction is a rule."""
    if c.slot is not None and _TYPES.get(c.slot.attribute) is MemoryType.RULE:
        return MemoryType.RULE
    if c.type is MemoryType.PREFERENCE and c.rule.removeprefix("correction+") in _STANDING:
        return MemoryType.RULE
    return c.type


def _read_candidates(manager: MemoryManager, reader: Reader, user_id: str, scope: str,
                     text: str) -> tuple[tuple[Extracted, ...], tuple[Reading, ...]]:
    """Candidates from a reader's readings of ``text`` (the user's own values, now), and
    every reading of it (stored with each memory formed from the turn).

    The reader reads the registry's attributes; what it does not cover (a free-text
    preference, "I prefer aisle seats") is still read by the rules' extractor. A value of a
    single-valued attribute becomes a slot (a changing one supersedes the held value, a
    stable one, or one stated as a bare fact, opens a conflict to confirm); a multi-valued one
    (a pet, an allergy) is kept as a statement beside the others.
    """
    from memstrata.reading import Held, registry

    held = [Held(a, v) for a, v in _held_values(manager, user_id, scope, registry().names)
            if v]
    read = tuple(reader.read(text, held))
    corrected = _corrected(manager, reader, user_id, scope, text, read, held)
    return candidates_from_readings(text, read, held, reader_name=reader.name,
                                    reader_version=reader.version, corrected=corrected), read


def _corrected(manager: MemoryManager, reader: Reader, user_id: str, scope: str, text: str,
               read: Sequence[Reading], held: Sequence[Held]) -> frozenset[str]:
    """:func:`corrected_attributes` of a turn ``observe`` reads, related by its reader."""
    return corrected_attributes(
        reader.relate, text, read, held,
        lambda todo: _held_statements(manager, user_id, scope, todo))


def corrected_attributes(relate: Callable[[str, str], Relation], text: str,
                         read: Sequence[Reading], held: Sequence[Held],
                         statements: Callable[[Sequence[str]], Mapping[str, str]]
                         ) -> frozenset[str]:
    """The stable single-valued attributes (a name, a birthday) whose held value ``text``
    sets right: ``read`` (a reader's readings of ``text``) has a new value of the user's
    own, now, and ``relate`` relates the statement the held value came from
    (``statements(attributes)``: attribute -> its text) to the turn as a ``correction``
    (the user says the older was wrong: "scratch what I said, the hospital record has the
    14th", 之前跟你说错了，身份证上是陈冠谕) or an ``update`` (a name changed). An explicit
    correction wins at once (DESIGN.md, Conflict); any other relation (a contradiction said
    in passing) leaves a different value of a stable attribute a conflict to confirm.

    ``relate`` is asked only for such a reading, so a turn that reads no new stable value
    costs nothing more. ``observe`` relates with its reader; the nightly ``summarize``
    with the LLM reader that read the turn.
    """
    from memstrata.reading import registry

    reg = registry()
    values = {h.attribute: h.value for h in held}
    todo = sorted({r.attribute for r in read
                   if r.current_own and r.attribute in reg
                   and reg[r.attribute].stability == "stable"
                   and reg[r.attribute].cardinality == "single"
                   and values.get(r.attribute)
                   and _text.normalize(values[r.attribute]) != _text.normalize(r.value)})
    if not todo:
        return frozenset()
    said = statements(todo)
    return frozenset(a for a in todo if a in said
                     and relate(said[a], text).kind in _REPLACES)


def candidates_from_readings(text: str, read: Sequence[Reading], held: Sequence[Held], *,
                             reader_name: str, reader_version: str,
                             corrected: Iterable[str] = ()) -> tuple[Extracted, ...]:
    """The memories to form from a reader's readings ``read`` of the user's turn ``text``,
    with ``held`` what the user holds now: the one judgement of what a reading changes,
    for ``observe`` and for the nightly ``summarize`` reading with the LLM reader.
    ``corrected`` names attributes whose held value the turn corrects (see
    :func:`_corrected`): a new value of one replaces the held one at once.

    Only the user's own values holding now count; of a single-valued attribute, one
    value; what the reader does not cover (a free-text preference) is the rules'
    extractor's. See :func:`_read_candidates`.
    """
    from memstrata.policies.extraction import Extracted, extract
    from memstrata.reading import registry
    from memstrata.reading.kept import one_value_each

    reg = registry()
    readings = one_value_each(reg, [r for r in read if r.current_own], held)
    # a value said beside a denied one of the user's own ("it's july 4, not july 14",
    # "其实是3月18号，不是8号") corrects the held value, stable or not
    denied = {r.attribute for r in read if r.holder == "user" and r.negated}
    denied |= set(corrected)
    lang = "zh" if _text.has_cjk(text) else "en"
    own = {r.attribute for r in readings}
    ruled = extract(text, role="user")
    out: list[Extracted] = [
        c for c in ruled
        if (c.slot is None and not own & {"language", "instruction"})
        or (c.slot is not None and c.slot.attribute not in reg)]
    # a bare statement of a value ("I live in Porto" while Lisbon is held) is no correction:
    # a different value opens a conflict to confirm; a change told as one ("I moved to
    # Porto", "three weeks into living in porto") supersedes at once
    plain = {c.slot.attribute for c in ruled if c.slot is not None and not c.correction}
    for r in readings:
        attr = reg[r.attribute]
        value = attr.display(r.value, lang)
        slot = Slot(USER_SUBJECT, r.attribute, value) if attr.cardinality == "single" else None
        reading = (("reader", reader_version), ("attribute", r.attribute), ("value", r.value),
                   ("holder", r.holder), ("when", r.when), ("negated", r.negated),
                   ("confidence", round(r.confidence, 4)), ("span", r.span))
        out.append(Extracted(
            content=text.strip(), type=_TYPES.get(r.attribute, MemoryType.PROFILE),
            confidence=round(min(0.95, r.confidence), 4), rule=f"reader:{reader_name}",
            slot=slot, correction=(attr.stability == "changing" and r.attribute not in plain)
            or r.attribute in denied
            or (attr.stability == "stable" and _names_held(text, r, held)),
            reading=reading))
    return tuple(out)


def _names_held(text: str, reading: Reading, held: Sequence[Held]) -> bool:
    """Whether ``text`` names a value the user holds of ``reading``'s attribute beside the
    new one it reads: the user says what the new value replaces ("ye've got me down as
    Callum Ross but it's Calum", "I told you September 8 but that's my lunar birthday,
    it's October 4", 户口本上写的是三月五号，我真正的生日是二月初八), so a new value of a
    stable attribute corrects the held one instead of opening a conflict to confirm.

    Not a reading of the turn's meaning (the reader read the new value as the user's own,
    now): a comparison of the words around it with what is held - the whole held value,
    or (a value not in Chinese) one of its words of three letters or more that the new
    value does not share ("Pickett" in "it is not pickett its Pickens").
    """
    start, end = reading.span or (0, 0)
    around = _text.normalize(text[:start] + " " + text[end:])
    words = set(_text.content_words(around))
    new = set(_text.content_words(reading.value))
    for h in held:
        old = _text.normalize(h.value)
        if h.attribute != reading.attribute or not old or old == _text.normalize(reading.value):
            continue
        if old in around:
            return True
        if not _text.has_cjk(old) and ({w for w in _text.content_words(old)
                                       if len(w) >= 3 and not w.isdigit()} - new) & words:
            return True
    return False


def _held_values(manager: MemoryManager, user_id: str, scope: str,
                 attributes: Iterable[str]) -> list[tuple[str, str | None]]:
    """(attribute, value) of the user's active slots about themselves in ``scope``."""
    m = memories.c
    with manager.db.read() as conn:
        return [(str(a), v) for a, v in conn.execute(
            select(m.attribute, m.value).where(
                m.user_id == user_id, m.scope == scope, m.status == Status.ACTIVE.value,
                m.subject == USER_SUBJECT, m.attribute.in_(sorted(set(attributes)))))]


#: the relations of a held statement to a turn in which the turn's new value of a stable
#: attribute replaces the held one at once
_REPLACES = frozenset({"update", "correction"})


def _held_statements(manager: MemoryManager, user_id: str, scope: str,
                     attributes: Iterable[str]) -> dict[str, str]:
    """attribute -> the text of the user's newest active slot of it about themselves in
    ``scope`` (what the held value was said in)."""
    m = memories.c
    out: dict[str, str] = {}
    with manager.db.read() as conn:
        for a, content in conn.execute(
                select(m.attribute, m.content).where(
                    m.user_id == user_id, m.scope == scope, m.status == Status.ACTIVE.value,
                    m.subject == USER_SUBJECT, m.attribute.in_(sorted(set(attributes))))
                .order_by(m.created_at)):
            out[str(a)] = str(content)
    return out


def _changes_of_known_values(manager: MemoryManager, user_id: str, scope: str, text: str,
                             read: set[str]) -> tuple[Extracted, ...]:
    """A new value of a city, employer, age, name or diet the user holds, read with the
    current value in hand (:mod:`memstrata.policies.slot_change`; one read, only for a
    turn with a cue of one of those topics, and only for attributes the extractor did
    not ``read`` in it)."""
    from memstrata.policies import slot_change
    from memstrata.policies.extraction import Extracted

    if not slot_change.has_cue(text):
        return ()
    values: dict[str, set[str]] = {}
    wanted = [a for a in slot_change.ATTRIBUTES if a not in read]
    if not wanted:
        return ()
    for attribute, value in _held_values(manager, user_id, scope, wanted):
        if value:
            values.setdefault(str(attribute), set()).add(str(value))
    out: list[Extracted] = []
    for attribute, held in sorted(values.items()):
        if len(held) != 1:
            continue  # an open conflict: not ours to settle
        value = slot_change.change_of(text, attribute, next(iter(held)))
        if value is not None:
            out.append(Extracted(
                content=text.strip(), type=MemoryType.PROFILE, confidence=0.8,
                rule="known_value_changed", slot=Slot(USER_SUBJECT, attribute, value),
                correction=True))
    return tuple(out) if len(out) == 1 else ()


def _supersede_replaced(manager: MemoryManager, user_id: str, scope: str, new_id: str,
                        replaced: str, *, turn_id: int) -> list[str]:
    """"Actually, not X but Y" in free text: older live statements about X in the scope
    are superseded by the correction now (the write path only sees structured slots).

    The same judgement the ``conflicts`` job makes; done here so the next recall
    already answers Y. History is kept (``superseded`` with ``superseded_by``). A memory
    formed from the same turn (``turn_id``: the new value read as a slot, "it's not Sofia
    Marquez, it's Sofía Márquez Olvera") says X too, and is the correction, not its target.
    """
    needle = _text.normalize(replaced)
    m = memories.c
    with manager.changes() as txn:
        conn, now = txn.conn, txn.now
        if not txn.lock(user_id):  # pragma: no cover - the user was erased meanwhile
            return []
        rows = conn.execute(
            select(m.id, m.content, m.type, m.valid_from, m.status, m.supersedes, m.metadata)
            .where(m.user_id == user_id, m.scope == scope,
                   m.status.in_([Status.ACTIVE.value, Status.DEMOTED.value,
                                 Status.PENDING_CONFIRMATION.value]))
        ).all()
        new = next((r for r in rows if r.id == new_id), None)
        if new is None:
            return []
        from memstrata.policies.contradiction import FACT_TYPES, Item, classify

        newer = Item(new.content, new.type, replaces=replaced, correction=True)
        targets = sorted(
            (r for r in rows
             if r.id != new_id and r.type in FACT_TYPES and r.valid_from <= new.valid_from
             and (r.metadata or {}).get("turn_id") != turn_id
             and needle in _text.normalize(r.content)
             and classify(Item(r.content, r.type), newer, cosine=0.0,
                          duplicate_similarity=1.0).relation == "update"),
            key=lambda r: (r.valid_from, r.id),
        )
        # the reason names the correcting record, never the corrected words
        reason = f"explicit correction by {new_id} (the newest statement wins)"
        for r in targets:
            txn.set(user_id, r.id, "superseded", reason, superseded(
                by=new_id, by_valid_from=float(new.valid_from),
                own_valid_from=float(r.valid_from), now=now))
        if targets:
            txn.set(user_id, new_id, "linked", f"supersedes {targets[-1].id}",
                    {"supersedes": targets[-1].id, "updated_at": now})
    return [r.id for r in targets]


#: the extractor name of a user's statement kept whole (no reader read a fact from it)
_STATEMENT = "statement"


def _statement(text: str) -> Extracted:
    """A user's statement that no reader read a fact from, kept whole: inferred knowledge
    (the nightly ``summarize`` keeps one appended without ``observe`` alike)."""
    from memstrata.policies.extraction import Extracted

    return Extracted(content=text.strip(), type=MemoryType.KNOWLEDGE, confidence=0.6,
                     rule=_STATEMENT)


def _input(c: Extracted, scope: str, session_id: str, at: datetime | None, *, turn_id: int,
           readings: tuple[str, list[dict[str, Any]]] | None = None) -> MemoryInput:
    meta: dict[str, Any] = {"turn_id": turn_id, "extractor": c.rule}
    if readings is not None:
        # the readings of the turn, and which reader read them: the re-read job reads a
        # memory again when the configured reader is another
        meta["read_by"], meta["readings"] = readings
    if c.correction:
        meta["correction"] = True
    if c.replaces:
        meta["replaces"] = c.replaces
    if c.reading:
        meta["reading"] = dict(c.reading)
    try:
        return MemoryInput(
            content=c.content, type=_kind(c), scope=scope, slot=c.slot, confidence=c.confidence,
            source=Source.INFERRED if c.rule == _STATEMENT else Source.USER_EXPLICIT,
            session_id=session_id, correction=c.correction,
            metadata=meta, at=at,
        )
    except ValueError as exc:
        raise InvalidInputError(f"cannot form a memory from this turn: {exc}") from exc
