"""Recall's ranking, in one place: named stages over one candidate type.

:meth:`LongTermMemory.recall <memstrata.memory.longterm.LongTermMemory.recall>` finds
candidates in the vector and keyword indexes and hands them to these stages, in order:

1. :func:`gather` - one SQL read: the user's state, the candidates' rows, and for a
   question about one of the user's attributes (``asked``) the current value of it and
   the user's latest statements of it (they may share no word with the question);
2. :func:`score` - each candidate's :class:`~memstrata.types.ScoreParts` from its raw
   signals (``relevance * decay * confidence * status_weight``); a purged record, or one
   outside the filter, is dropped;
3. :func:`gate` - which candidates the question admits: either retriever convinced, the
   asked attribute's value, or one sentence of the record close enough;
4. :func:`order_by_currency` - an older statement that a newer one about the same thing
   updates weighs ``outdated_weight`` and the newer ranks just above it; asked about the
   user now, someone else's news, a plan, the past or a one-off weighs
   ``not_current_weight``; the asked attribute's current value ranks above everything said
   before it. All of this goes into ``parts.currency``. A question naming a date range
   boosts what is dated inside it (``parts.range_weight``) and, for a calendar date, drops
   the rest;
5. :func:`cut` - best first (equal scores: the newer, then the id), the best ``n``.

``hit.parts`` shows each stage: ``status_weight`` is only the status's weight (the
documented 1.0 / 0.9 / 0.5 and expiry's), ``currency`` and ``range_weight`` what stage 4
did, and ``score`` is the product of the parts in that order.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, TypeVar

import numpy as np

from memstrata import _text
from memstrata.clock import from_epoch, to_epoch
from memstrata.memory import _store
from memstrata.memory._store import UserState, decode_vector
from memstrata.memory.vector import SearchFilter
from memstrata.policies.extraction import canonical_attribute, extract
from memstrata.policies.possessions import POSSESSIONS, names_possession
from memstrata.policies.retention import RetentionPolicy
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.policies.slot_change import ATTRIBUTES as CHANGE_ATTRIBUTES
from memstrata.policies.slot_change import change_of
from memstrata.policies.standing import reads_as_own_change, reports_own_state
from memstrata.policies.temporal import DateRange, TemporalQuery
from memstrata.reading import from_stored
from memstrata.reading.stance import Stance, stored_stance
from memstrata.types import (
    RETRIEVABLE,
    USER_SUBJECT,
    MemoryType,
    RecallHit,
    ScoreParts,
    Status,
)

__all__ = ["Candidate", "Gathered", "cut", "gate", "gather", "order_by_currency", "score"]

#: stored values -> enums, for the recall hot path (an Enum call per row adds up)
_STATUS = {s.value: s for s in RETRIEVABLE}
_TYPE = {t.value: t for t in MemoryType}
#: lookup subjects that name the speaker, whose facts are stored with subject "user"
_SELF_SUBJECTS = frozenset({USER_SUBJECT, "me", "i"})
#: a question naming a date range also admits records dated this close to it
_RANGE_SLACK_DAYS = 1
#: the slots that answer a question about an attribute (a preferred name answers "what
#: should you call me" ahead of the legal name)
_ASKED_SLOTS = {"name": ("preferred name", "preferred_name", "name"),
                "preferred_name": ("preferred name", "preferred_name", "name")}
#: how many of the user's latest statements a question for an attribute reads
_RECENT_STATEMENTS = 50
#: a held value no statement names (the age needs a number: it is not read without one)
_NO_VALUE = "\x00"
#: a candidate this close to the query (cosine) repeats it (see :func:`_answers_first`)
_REPEATS_QUERY = 0.95


@dataclass(slots=True)
class Candidate:
    """One record on its way through the stages: its stored row (the columns
    :func:`memstrata.memory._store.rank_rows` reads), how it scored, and whether the
    question admits it."""

    row: Any
    parts: ScoreParts
    admitted: bool = False

    @property
    def said_at(self) -> float:
        return float(self.row.valid_from)

    @property
    def said_until(self) -> float:
        """When the last of it was said: a session summary's last turn (its ``valid_from``
        is the session's first), any other record's ``said_at``."""
        if _TYPE[self.row.type] is MemoryType.SUMMARY:
            return max(self.said_at, float(self.row.created_at))
        return self.said_at


@dataclass(slots=True)
class Gathered:
    """What :func:`gather` read: the user's SQL state (``None``: no such user), the
    candidates' rows, and the ids of the records that answer the asked attribute."""

    state: UserState | None
    rows: list[Any]
    answers: set[str] = field(default_factory=set)


# ----------------------------------------------------------------------------- stages


def gather(conn: Any, user_id: str, ids: Sequence[str], asked: str | None,
           scopes: Collection[str] | None, policy: RetrievalPolicy) -> Gathered:
    """Stage 1, inside one read transaction ``conn``: the user's state and the rows of
    the candidates ``ids`` (the indexes' hits), and for a question about the user's
    ``asked`` attribute also the user's current value of it ("Which city do I live in?")
    and their latest statements that state it."""
    state = _store.user_state(conn, user_id)
    if state is None:
        return Gathered(None, [])
    wanted = _ASKED_SLOTS.get(asked, (asked,)) if asked is not None else ()
    answers: set[str] = set()
    held = ""
    scope_list = None if scopes is None else sorted(scopes)
    if asked is not None:
        slot_rows = [r for attribute in wanted
                     for r in _store.list_rows(
                         conn, user_id, scopes=scope_list, types=None,
                         statuses=[Status.ACTIVE.value], limit=3,
                         subject=USER_SUBJECT, attribute=attribute)]
        answers = {str(r.id) for r in slot_rows}
        held = str(slot_rows[0].value) if slot_rows else ""
        # the user's latest statements too: one that states the attribute may share no
        # word and little meaning with the question ("First week at Spotify went fine"
        # for "where do I work now?") and not be a candidate
        recent = _store.list_rows(
            conn, user_id, scopes=scope_list,
            types=sorted(t.value for t in policy.updatable),
            statuses=[Status.ACTIVE.value], limit=_RECENT_STATEMENTS)
        stating = [str(r.id) for r in recent if r.slot_key is None
                   and _states(r, wanted, held)]
        ids = list(dict.fromkeys([*ids, *sorted(answers), *stating]))
    rows = _store.rank_rows(conn, user_id, ids) if ids else []
    if asked is not None:
        # a statement kept as free text ("Started at Pinecrest Health last Monday") that
        # the extractor reads as the asked attribute answers too, when it is newer than
        # every slot value: the newest statement of the value wins
        newest_slot = max((float(r.valid_from) for r in rows if str(r.id) in answers),
                          default=-math.inf)
        stated = [r for r in rows if r.slot_key is None and _TYPE[r.type] in policy.updatable
                  and float(r.valid_from) > newest_slot
                  and _states(r, wanted, held)]
        if stated:
            answers.add(str(max(stated, key=lambda r: float(r.valid_from)).id))
    return Gathered(state, rows, answers)


def score(rows: Sequence[Any], dense: Mapping[str, float], keyword: Mapping[str, float],
          qvec: np.ndarray, policy: RetrievalPolicy, where: SearchFilter, now: datetime,
          retention: RetentionPolicy) -> list[Candidate]:
    """Stage 2: every row scored without the gate (a newer statement that updates an
    admitted one may rank even when the gate alone would not admit it). A record whose
    expiry has passed its grace is purged, not scored; a stored vector is decoded only
    for a keyword candidate the dense search did not score."""
    now_epoch = to_epoch(now)
    ungated = replace(policy, min_relevance=0.0).score
    out: list[Candidate] = []
    for row in rows:
        status = _STATUS.get(row.status)
        if status is None or not where.admits(row.scope, row.type):
            continue
        expired = False
        if row.expires_at is not None and row.expires_at <= now_epoch:
            life = retention.lifecycle(from_epoch(row.expires_at), pinned=bool(row.pinned),
                                       now=now)
            if life == "purgeable":
                continue
            expired = life == "expired"
        dense_score = dense.get(row.id)
        if dense_score is None:
            blob = row.vector
            dense_score = 0.0 if blob is None else float(np.dot(decode_vector(blob), qvec))
        parts = ungated(
            dense=dense_score,
            bm25=keyword.get(row.id, 0.0),
            kind=_TYPE[row.type],
            age_seconds=now_epoch - max(row.created_at, row.last_accessed_at or 0.0),
            pinned=bool(row.pinned),
            confidence=float(row.confidence),
            status=status,
            expired=expired,
        )
        if parts is not None:
            out.append(Candidate(row, parts))
    return out


def gate(candidates: Sequence[Candidate], answers: Collection[str], qvec: np.ndarray,
         policy: RetrievalPolicy) -> None:
    """Stage 3, in place: a candidate is admitted when either retriever is convinced
    (:meth:`RetrievalPolicy.admits`), when it answers the asked attribute, or - with the
    sentence gate - when one of its sentences is (a long turn whose one sentence says
    it)."""
    sentence_gate = policy.sentence_gate and policy.dense_weight > 0
    by_sentence: list[Candidate] = []
    for c in candidates:
        c.admitted = policy.admits(c.parts.dense, c.parts.bm25) or c.row.id in answers
        if not c.admitted and sentence_gate and c.row.sentences is not None:
            by_sentence.append(c)
    if by_sentence:
        # one matrix product for every candidate a sentence may admit
        best = _best_sentences([c.row.sentences for c in by_sentence], qvec)
        for c, cosine in zip(by_sentence, best, strict=True):
            c.admitted = policy.admits(cosine, 0.0)


def order_by_currency(candidates: list[Candidate], policy: RetrievalPolicy, top: int, *,
                      when: TemporalQuery | None, query: str, answers: Collection[str]
                      ) -> list[Candidate]:
    """Stage 4: what is current first, and the candidates kept (the admitted ones, the
    newer values promoted above what they update, and for a date range the ones inside
    it); see the module's docstring."""
    keep = _newest_first(candidates, policy, top,
                         asks_current=when is not None and when.current, query=query)
    if when is not None and when.range is not None and policy.range_boost > 1.0:
        kept = _in_range(candidates, keep, when.range, policy)
    else:
        kept = [c for c, ok in zip(candidates, keep, strict=True) if ok]
    if answers:
        _answers_first(kept, answers, policy)
    return kept


def cut(candidates: list[Candidate], n: int) -> list[RecallHit]:
    """Stage 5: the best ``n`` as hits; equal scores - the newer first, then the id, so a
    tie never depends on the order the stores listed them in. A record (with its JSON
    metadata) is built only for the hits returned."""
    candidates.sort(key=lambda c: (-c.parts.score, -c.said_at, c.row.id))
    return [RecallHit(record=_store.ranked_record(c.row), score=c.parts.score, parts=c.parts)
            for c in candidates[:n]]


# ------------------------------------------------------------------------- the parts


def _rescored(parts: ScoreParts, *, relevance: float | None = None,
              currency: float | None = None, range_weight: float | None = None
              ) -> ScoreParts:
    """``parts`` with some factors changed and the score multiplied again in the
    documented order."""
    p = replace(parts, relevance=parts.relevance if relevance is None else relevance,
                currency=parts.currency if currency is None else currency,
                range_weight=parts.range_weight if range_weight is None else range_weight)
    return replace(p, score=p.relevance * p.decay * p.confidence * p.status_weight
                   * p.currency * p.range_weight)


def _current(c: Candidate, factor: float) -> None:
    c.parts = _rescored(c.parts, currency=c.parts.currency * factor)


# -------------------------------------------------------------------- stage helpers


def _best_sentences(blobs: Sequence[bytes], qvec: np.ndarray) -> list[float]:
    """For each record (its stored sentence vectors), the highest cosine between the
    query and one of its sentences - decoded and multiplied as one matrix."""
    dim = qvec.shape[0]
    cosines = _store.decode_vectors(b"".join(blobs), dim) @ qvec
    starts = np.cumsum([0, *(len(b) // (2 * dim) for b in blobs[:-1])])
    return [float(x) for x in np.maximum.reduceat(cosines, starts)]


def _dated_in(row: Any, wanted: DateRange) -> bool:
    """Is a record about the range - its resolved event date or the day it was said
    (within a day)? A question's date may name either ("what did Nate say on 9
    November" asks what was said that day, about whatever day)."""
    day: date = from_epoch(float(row.valid_from)).date()
    if wanted.contains(day, slack_days=_RANGE_SLACK_DAYS):
        return True
    meta = _metadata(row)
    found = DateRange.from_json(meta.get("event_date")) if isinstance(meta, dict) else None
    return found is not None and wanted.overlaps(found, slack_days=_RANGE_SLACK_DAYS)


def _in_range(candidates: list[Candidate], keep: list[bool], wanted: DateRange,
              policy: RetrievalPolicy) -> list[Candidate]:
    """A question naming a date range: the candidates dated inside it are boosted
    and kept even below the gate (the date is what the question asks for); for a
    calendar date the others are dropped when at least one is inside (the range
    never filters the answer away)."""
    inside = [_dated_in(c.row, wanted) for c in candidates]
    # a range relative to now ("last week") may be the conversation's, not the
    # reader's: it boosts, only a calendar date filters
    filtering = policy.range_filter and wanted.absolute
    if not any(inside):
        return [c for c, ok in zip(candidates, keep, strict=True) if ok]
    out = []
    for c, ok, kept in zip(candidates, inside, keep, strict=True):
        if ok:
            c.parts = _rescored(c.parts, range_weight=c.parts.range_weight * policy.range_boost)
        if ok or (kept and not filtering):
            out.append(c)
    return out


def _overlaps(texts: list[str]) -> list[list[float]]:
    """Pairwise word overlap ``|A & B| / min(|A|, |B|)`` of the texts' index terms."""
    terms = [set(_text.tokenize(t)) for t in texts]
    return [[len(a & b) / min(len(a), len(b)) if a and b else 0.0 for b in terms]
            for a in terms]


def _newest_first(candidates: list[Candidate], policy: RetrievalPolicy, top: int, *,
                  asks_current: bool = False, query: str = "") -> list[bool]:
    """Sorts ``candidates`` best first (where anything is read) and says which to keep:
    the admitted ones, with the older statements that a newer candidate about the same
    thing updates weighed down, and the updating ones kept and ranked just above them
    (:meth:`RetrievalPolicy.current_first`)."""
    admitted = [c.admitted for c in candidates]
    if len(candidates) < 2 or policy.outdated_weight >= 1.0 or not any(admitted) or not any(
            _TYPE[c.row.type] in policy.updatable for c in candidates):
        return admitted
    candidates.sort(key=lambda c: -c.parts.score)
    rows = [c.row for c in candidates]
    admitted = [c.admitted for c in candidates]
    # only a candidate said later than one of the checked (admitted, best) ones can update
    # it: where none is, nothing is read (a question about now still weighs every one)
    said = [c.said_at for c in candidates]
    earliest = min((said[i] for i in [i for i, ok in enumerate(admitted) if ok][:top]),
                   default=math.inf)
    newer = [t - earliest >= policy.update_gap_seconds for t in said]
    if not any(newer) and not asks_current:
        return admitted
    similarity: list[list[float]] | None = None
    lexical = policy.dense_weight <= 0  # the model does not read the query's language
    if not any(newer):
        pass
    elif lexical:
        similarity = _overlaps([row.content for row in rows])
    elif all(row.vector is not None for row in rows):
        matrix = np.vstack([decode_vector(row.vector) for row in rows])
        similarity = (matrix.astype(np.float32) @ matrix.T.astype(np.float32)).tolist()
    # whose and when each statement is: the stance stored with it when it was written
    # (read only where it is used: a change, or any candidate of a question about now)
    stances = [_stance(row) if later or asks_current else None
               for row, later in zip(rows, newer, strict=True)]
    changes = [later and (reads_as_own_change(row.content) if stance is None
                          else stance.change)
               for row, later, stance in zip(rows, newer, stances, strict=True)]
    own = [(reports_own_state(row.content, query) if stance is None
            else stance.reports_own_state(query)) if asks_current or change else True
           for row, change, stance in zip(rows, changes, stances, strict=True)]
    outdated, promote = policy.current_first(
        relevance=[c.parts.relevance for c in candidates],
        said_at=said,
        slots=[row.slot_key for row in rows],
        similarity=similarity,
        changes=changes,
        admitted=admitted,
        kinds=[_TYPE[row.type] for row in rows],
        top=top,
        lexical=lexical,
        asks_current=asks_current,
        own=own,
    )
    # several newer candidates may update the same one ("We settled into our flat in
    # Munich" and "I visited the art museum downtown" both after "I live in Berlin"):
    # they rank above it in order - one that reads as a change first, then the one
    # closer to it, then by their own score - not tied
    step: dict[int, int] = {}
    for i in set(promote.values()):
        group = sorted((j for j, k in promote.items() if k == i), key=lambda j: (
            changes[j], 0.0 if similarity is None else similarity[i][j],
            candidates[j].parts.score))
        step.update({j: n + 1 for n, j in enumerate(group)})
    # the scores the promoted ones rise above are the ones before this stage
    before = [c.parts for c in candidates]
    for i, c in enumerate(candidates):
        if outdated[i]:
            _current(c, policy.outdated_weight)
        if asks_current and not own[i] and _TYPE[c.row.type] in policy.updatable:
            # asked about the user now: someone else's news, a plan, the past, a one-off
            # or a question says less about it than the user's own state does
            _current(c, policy.not_current_weight)
        if i in promote:
            updated = before[promote[i]]
            above = updated.score
            parts = c.parts
            if parts.score <= 0 < above and parts.confidence > 0 and parts.status_weight > 0:
                # found by neither retriever's score (a cosine the fusion does not trust)
                # but the newer value of what the question found: it takes that relevance
                c.parts = parts = _rescored(parts, relevance=updated.relevance)
            if parts.score < above and parts.score > 0:
                _current(c, above / parts.score * (1.0 + 1e-6 * step[i]))
    return [ok or i in promote for i, ok in enumerate(admitted)]


def _metadata(row: Any) -> Any:
    """``row``'s metadata, decoded (SQLite hands JSON back as text)."""
    raw = row.metadata
    return json.loads(raw) if isinstance(raw, str | bytes) else raw


def _stance(row: Any) -> Stance | None:
    """The :class:`~memstrata.reading.stance.Stance` stored with ``row``'s record, if it
    was read from the record's text (``None``: the caller reads the text, as before
    stances were stored)."""
    return stored_stance(_metadata(row), row.content)


def _answers_first(kept: list[Candidate], answers: Collection[str],
                   policy: RetrievalPolicy) -> None:
    """In place: the user's current value of the slot a question asks for, ranked above
    every candidate said before it (a newer statement the extractor did not read as a
    change of the slot - "we finally settled into our flat in Munich" - may be the newer
    value: it keeps its place); the rest keep their scores. A candidate that repeats the
    query (cosine at least ``_REPEATS_QUERY``: "I volunteer at the food bank on Saturday
    mornings" looked up by its own words, which a reader may take for a question about the
    bank) is what the query asks for: then the asked attribute's value is not lifted."""
    others = [c for c in kept if c.row.id not in answers]
    if any(c.parts.dense >= _REPEATS_QUERY for c in others):
        return
    # every answer is compared with the others' scores as they were before this step;
    # a session summary counts as said at the session's end (the summary of the session
    # the answer was said in is no older than the answer: lifted above it, the answer
    # would overtake a newer statement that the summary's score happened to exceed)
    scores = [(c.parts.score, c.said_until) for c in others]
    for c in kept:
        if c.row.id not in answers:
            continue
        best = max((s for s, said in scores if said <= c.said_at), default=0.0)
        parts = c.parts
        if parts.score <= best:
            if parts.score <= 0 or parts.relevance <= 0:
                # matched by neither retriever (a question in words the record does not
                # share): it answers the question, so it takes the best relevance found
                c.parts = parts = _rescored(parts, relevance=max(best, policy.min_relevance,
                                                                 1e-6))
            if 0 < parts.score <= best:
                _current(c, best / parts.score * (1.0 + 1e-3))


# ------------------------------------------------- reading the asked attribute (cached)

#: attribute names read per text, keyed by a digest of the text - never the text itself,
#: so a forgotten memory leaves no copy here
_READ_ATTRIBUTES: OrderedDict[bytes, frozenset[str]] = OrderedDict()
_READ_ATTRIBUTES_SIZE = 4096
_READ_ATTRIBUTES_LOCK = threading.Lock()
_READ_CHANGES: OrderedDict[bytes, bool] = OrderedDict()
_OWN_STATES: OrderedDict[bytes, bool] = OrderedDict()
_T = TypeVar("_T")


def _digest_cached(cache: OrderedDict[bytes, _T], parts: tuple[str, ...],
                   compute: Callable[[], _T]) -> _T:
    """``compute()``, cached in ``cache`` (LRU, ``_READ_ATTRIBUTES_SIZE`` entries) under a
    digest of ``parts`` - never the text itself, so a forgotten memory leaves no copy."""
    key = hashlib.blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"),
                          digest_size=16).digest()
    with _READ_ATTRIBUTES_LOCK:
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found
    found = compute()
    with _READ_ATTRIBUTES_LOCK:
        cache[key] = found
        while len(cache) > _READ_ATTRIBUTES_SIZE:
            cache.popitem(last=False)
    return found


def _read_attributes(content: str) -> frozenset[str]:
    """The user's attributes the fast extractor reads from ``content`` (cached: recall
    asks about the same few records again and again)."""
    return _digest_cached(_READ_ATTRIBUTES, (content,), lambda: frozenset(
        canonical_attribute(e.slot.attribute) for e in extract(content)
        if e.slot is not None and e.slot.subject in _SELF_SUBJECTS))


def _states(row: Any, attributes: Sequence[str], held: str) -> bool:
    """Does the record of ``row`` state one of the user's ``attributes`` now? Read from
    the readings stored with it when it was formed (``metadata["readings"]``): the user's
    own value, now, not denied. A record formed before readings were stored (or by the
    rules, which store none) is read by :func:`_states_attribute`."""
    meta = _metadata(row)
    readings = meta.get("readings") if isinstance(meta, dict) else None
    if not isinstance(readings, list):
        return _states_attribute(row.content, attributes, held,
                                 stored_stance(meta, row.content))
    return any(r.attribute in attributes and r.current_own for r in from_stored(readings))


def _states_attribute(content: str, attributes: Sequence[str], held: str,
                      stance: Stance | None = None) -> bool:
    """Does ``content`` state one of the user's ``attributes``: read by the fast
    extractor, or as a new value beside the ``held`` one (:func:`change_of`: "First week
    at Spotify went fine" states an employer; with no value held, any single one), or - a
    thing of the user's (:mod:`~memstrata.policies.possessions`) - by naming its make or
    provider in a statement of the user's own present state ("my Subaru Outback handled
    the dirt roads", not "got a rental tesla this week")?"""
    if any(a in POSSESSIONS for a in attributes):
        return any(names_possession(content, a) for a in attributes) and (
            _digest_cached(_OWN_STATES, (content,), lambda: reports_own_state(content))
            if stance is None else stance.reports_own_state())
    if not _read_attributes(content).isdisjoint(attributes):
        return True
    current = held or _NO_VALUE
    return any(_reads_change(content, attribute, current) for attribute in attributes
               if attribute in CHANGE_ATTRIBUTES and (held or attribute != "age"))


def _reads_change(content: str, attribute: str, current: str) -> bool:
    """``change_of`` of ``content`` is not ``None`` (cached like :func:`_read_attributes`,
    and only the answer - never a value read from the text)."""
    return _digest_cached(_READ_CHANGES, (content, attribute, current),
                          lambda: change_of(content, attribute, current) is not None)
