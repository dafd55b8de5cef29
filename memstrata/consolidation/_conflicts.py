"""The ``conflicts`` job: contradictions the write path could not see, and duplicates.

The write path already settles exact structured facts (same slot, other
value) and near-identical texts at write time. What it cannot see - free text
that contradicts older free text, records written by other processes or
imported, changes spread over time, paraphrased duplicates below its
threshold - this job finds, per user and scope:

* candidate pairs: exact duplicates (content hash), records of one slot, dense
  neighbours (cosine >= ``conflict_similarity``, stored vectors - nothing is
  re-embedded; with an LLM, fact records down to ``LLM_CANDIDATE_SIMILARITY``,
  where contradictions in other words sit), CJK texts sharing character bigrams
  (the English MiniLM cannot compare them), texts whose extracted attribute is the same, and older
  records mentioning what a correction replaces ("not X but Y");
* a judgement per pair - the LLM under the run's token budget when one is
  configured, else (and for whatever the budget does not cover, but a pair put
  forward only for the model, below the offline floor: compatible) the offline
  rules of :mod:`memstrata.policies.contradiction`;
* actions: an explicit correction **supersedes** the older record (kept as
  history, linked both ways); **duplicates merge** into the oldest record (a
  pinned one first, then one with a structured slot), which absorbs their use
  counts, confidence, expiry and provenance (``metadata.merged_from`` /
  ``metadata.sources``) while the copies become
  ``superseded`` by it; a **contradiction** links both records into one
  conflict group as ``pending_confirmation`` - flagged, never deleted - so the
  context builder asks the user.

Records already linked (same conflict group, or a supersession link) are not
judged again, which makes the job idempotent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection

from memstrata._sql import new_id
from memstrata._text import normalize
from memstrata.consolidation import _runlog
from memstrata.consolidation._job import Applied, JobContext, UserPlan, combine_methods
from memstrata.consolidation._llm import PAIRS_SYSTEM
from memstrata.consolidation.reports import Method, PlannedAction
from memstrata.memory import RecordTxn, changed_columns, in_conflict, queries, superseded
from memstrata.policies.contradiction import (
    FACT_TYPES,
    Item,
    PairVerdict,
    Relation,
    classify,
    is_cjk,
    is_newer_correction,
    read_slots,
    replaced_value,
    stems,
)
from memstrata.reading import load_reader
from memstrata.types import Slot, Status

__all__ = ["ConflictsJob"]

_LIVE = (Status.ACTIVE.value, Status.DEMOTED.value, Status.PENDING_CONFIRMATION.value)
_MERGEABLE = (Status.ACTIVE.value, Status.DEMOTED.value)
#: dense neighbours considered per record
NEIGHBOURS = 8
#: pairs judged per user and run (the rest waits for the next run)
MAX_PAIRS_PER_USER = 20_000
#: pairs per LLM call
LLM_PAIRS_PER_CALL = 12
#: with an LLM, facts this close are put to it too: contradictions in other words
#: ("I'm vegetarian" / "I eat steak every day": cosine 0.54, "I don't have any pets" /
#: "I walk my dog twice a day": 0.31) sit below ``conflict_similarity``
LLM_CANDIDATE_SIMILARITY = 0.3
_MAX_SOURCES = 20
_BLOCK = 1024


@dataclass
class _Rec:
    row: dict[str, Any]
    vector: np.ndarray | None
    item: Item
    cjk: bool

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def order(self) -> tuple[float, float, str]:
        return (float(self.row["valid_from"]), float(self.row["created_at"]), self.id)


def _load(conn: Connection, user_id: str) -> list[_Rec]:
    out = []
    for m, vec in queries.live_records(conn, user_id):
        meta = m["metadata"]
        slot = None
        if m["subject"] is not None and m["attribute"] is not None:
            slot = Slot(m["subject"], m["attribute"], m["value"] or "")
        item = Item(
            content=m["content"], type=m["type"], slot=slot,
            correction=bool(meta.get("correction", False)),
            replaces=meta.get("replaces") if isinstance(meta.get("replaces"), str) else None,
        )
        out.append(_Rec(m, vec, item, is_cjk(m["content"])))
    return out


def _linked(a: _Rec, b: _Rec) -> bool:
    ga, gb = a.row["conflict_group"], b.row["conflict_group"]
    if ga is not None and ga == gb:
        return True
    return b.id in (a.row["supersedes"], a.row["superseded_by"]) or \
        a.id in (b.row["supersedes"], b.row["superseded_by"])


def _vec(rec: _Rec) -> np.ndarray:
    assert rec.vector is not None
    return rec.vector


def _chars(text: str) -> set[str]:
    """Content characters of a CJK text (particles and pronouns dropped)."""
    return {c for c in normalize(text) if c.isalnum() and c not in _CJK_COMMON}


_CJK_COMMON = frozenset("我你他她它们的了吗呢吧啊是在有和也都就很不没")


class _Pairs:
    """Candidate pairs (indices into one scope's records, older first) with a cosine."""

    def __init__(self, recs: Sequence[_Rec]) -> None:
        self.recs = recs
        self.cos: dict[tuple[int, int], float] = {}
        self.forced: dict[tuple[int, int], PairVerdict] = {}
        #: pairs put forward only for the model (dense neighbours below the offline floor):
        #: the offline judge was never meant to see them
        self.model_only: set[tuple[int, int]] = set()
        self._offline: set[tuple[int, int]] = set()

    def add(self, i: int, j: int, cos: float | None = None,
            verdict: PairVerdict | None = None, *, model_only: bool = False) -> None:
        if i == j or _linked(self.recs[i], self.recs[j]):
            return
        ta, tb = self.recs[i].row["type"], self.recs[j].row["type"]
        if ta != tb and not (ta in FACT_TYPES and tb in FACT_TYPES):
            return
        key = (i, j) if self.recs[i].order <= self.recs[j].order else (j, i)
        if cos is None:
            cos = self._cosine(*key)
        self.cos[key] = max(cos, self.cos.get(key, -1.0))
        if verdict is not None:
            self.forced[key] = verdict
        if model_only and key not in self._offline:
            self.model_only.add(key)
        elif not model_only:
            self._offline.add(key)
            self.model_only.discard(key)

    def _cosine(self, i: int, j: int) -> float:
        a, b = self.recs[i].vector, self.recs[j].vector
        if a is None or b is None:
            return 0.0
        return float(np.dot(a, b))


def _candidates(recs: Sequence[_Rec], ctx: JobContext) -> _Pairs:
    pairs = _Pairs(recs)
    s = ctx.settings
    floor = min(s.conflict_similarity, s.duplicate_similarity)
    # only the model reads a contradiction in other words; the rules need shared words
    fact_floor = min(floor, LLM_CANDIDATE_SIMILARITY) if ctx.model() is not None else floor
    # exact duplicates and structured slots
    by_hash: dict[str, list[int]] = defaultdict(list)
    by_slot: dict[str, list[int]] = defaultdict(list)
    by_read_attr: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(recs):
        by_hash[r.row["content_hash"]].append(i)
        if r.row["slot_key"] is not None:
            by_slot[r.row["slot_key"]].append(i)
        else:
            for slot in read_slots(r.item.content):
                by_read_attr[slot.key].append(i)
    for group in by_hash.values():
        for j in group[1:]:
            pairs.add(group[0], j, 1.0, PairVerdict("duplicate", "exact duplicate"))
    for group in by_slot.values():
        _slot_pairs(pairs, group)
    for group in by_read_attr.values():
        for a in range(min(len(group), 50)):
            for b in range(a + 1, min(len(group), 50)):
                pairs.add(group[a], group[b])
    # dense neighbours (English and other text the model can embed)
    dense = [i for i, r in enumerate(recs) if r.vector is not None and not r.cjk]
    if len(dense) > 1:
        matrix = np.vstack([_vec(recs[i]) for i in dense]).astype(np.float32)
        k = min(NEIGHBOURS, len(dense) - 1)
        for start in range(0, len(dense), _BLOCK):
            block = matrix[start : start + _BLOCK] @ matrix.T
            for row_no in range(block.shape[0]):
                block[row_no, start + row_no] = -1.0
            top = np.argpartition(-block, k - 1, axis=1)[:, :k] if k < len(dense) else \
                np.tile(np.arange(len(dense)), (block.shape[0], 1))
            for row_no in range(block.shape[0]):
                for col in top[row_no]:
                    cos = float(block[row_no, col])
                    a, b = dense[start + row_no], dense[int(col)]
                    facts = recs[a].row["type"] in FACT_TYPES and recs[b].row["type"] in FACT_TYPES
                    if cos >= (fact_floor if facts else floor) and start + row_no != col:
                        pairs.add(a, b, cos, model_only=cos < floor)
    # shared words, whatever the embedding says ("I always fly with Lufthansa" /
    # "From now on I always fly with KLM" are far apart as vectors)
    _lexical_pairs(pairs, [i for i, r in enumerate(recs) if not r.cjk])
    # CJK text: shared characters (short sentences share few bigrams: "我有一辆车" / "我没有车")
    cjk = [i for i, r in enumerate(recs) if r.cjk]
    if len(cjk) > 1:
        grams = {i: _chars(recs[i].item.content) for i in cjk}
        index: dict[str, list[int]] = defaultdict(list)
        for i in cjk:
            for g in grams[i]:
                index[g].append(i)
        for i in cjk:
            shared: dict[int, int] = defaultdict(int)
            for g in grams[i]:
                for j in index[g]:
                    if j > i:
                        shared[j] += 1
            best = sorted(shared.items(), key=lambda kv: -kv[1])[:NEIGHBOURS]
            for j, n in best:
                shortest = min(len(grams[i]), len(grams[j]))
                if n >= min(2, shortest) and n / max(1, shortest) >= 0.5:
                    pairs.add(i, j)
    # corrections: older records that mention what is being replaced (not one formed from
    # the correction's own turn: "not X, it's Y" read as the slot Y says X too)
    for j, r in enumerate(recs):
        replaced = r.item.replaces or replaced_value(r.item.content)
        if not replaced:
            continue
        needle = normalize(replaced)
        for i, other in enumerate(recs):
            if i != j and other.order < r.order and not _same_turn(other, r) \
                    and needle in normalize(other.item.content):
                pairs.add(i, j)
    return pairs


def _same_turn(a: _Rec, b: _Rec) -> bool:
    """Whether two memories were formed from one turn by ``observe`` (their order is then
    the order of one transaction's writes, not of what the user said)."""
    turn = a.row["metadata"].get("turn_id")
    return turn is not None and turn == b.row["metadata"].get("turn_id")


#: a word shared by more records than this says nothing about two of them
_MAX_POSTINGS = 50
_MIN_SHARED = 0.6


def _lexical_pairs(pairs: _Pairs, idxs: Sequence[int]) -> None:
    """Pairs sharing most of their (stemmed) words."""
    words = {i: stems(pairs.recs[i].item.content) for i in idxs}
    index: dict[str, list[int]] = defaultdict(list)
    for i in idxs:
        for w in words[i]:
            index[w].append(i)
    for i in idxs:
        shared: dict[int, int] = defaultdict(int)
        for w in words[i]:
            posting = index[w]
            if len(posting) > _MAX_POSTINGS:
                continue
            for j in posting:
                if j > i:
                    shared[j] += 1
        best = sorted(shared.items(), key=lambda kv: -kv[1])[:NEIGHBOURS]
        for j, n in best:
            shortest = min(len(words[i]), len(words[j]))
            if n >= min(2, shortest) and n / max(1, shortest) >= _MIN_SHARED:
                pairs.add(i, j)


def _slot_pairs(pairs: _Pairs, group: Sequence[int]) -> None:
    recs = pairs.recs
    for a in range(len(group)):
        for b in range(a + 1, len(group)):
            ra, rb = recs[group[a]], recs[group[b]]
            older, newer = (ra, rb) if ra.order <= rb.order else (rb, ra)
            assert older.item.slot is not None and newer.item.slot is not None
            if normalize(older.item.slot.value) == normalize(newer.item.slot.value):
                verdict = PairVerdict("duplicate", "the same value of one structured fact")
            elif is_newer_correction(newer.item):
                verdict = PairVerdict("update", f"explicit change of {older.item.slot.attribute}")
            else:
                verdict = PairVerdict(
                    "contradiction",
                    f"two current values of {older.item.slot.attribute}: "
                    f"{older.item.slot.value!r} vs {newer.item.slot.value!r}",
                )
            pairs.add(group[a], group[b], None, verdict)


def _judge(pairs: _Pairs, ctx: JobContext, errors: list[str], user_id: str
           ) -> tuple[dict[tuple[int, int], PairVerdict], Method]:
    recs = pairs.recs
    keys = sorted(pairs.cos, key=lambda k: (-pairs.cos[k], k))
    if len(keys) > MAX_PAIRS_PER_USER:
        errors.append(f"{len(keys)} candidate pairs; judged the {MAX_PAIRS_PER_USER} most similar")
        keys = keys[:MAX_PAIRS_PER_USER]
    verdicts: dict[tuple[int, int], PairVerdict] = {}
    open_keys = []
    for key in keys:
        if key in pairs.forced:
            verdicts[key] = pairs.forced[key]
        else:
            open_keys.append(key)
    method: Method = "none"
    gate = ctx.model()
    if gate is not None and open_keys:
        for start in range(0, len(open_keys), LLM_PAIRS_PER_CALL):
            chunk = open_keys[start : start + LLM_PAIRS_PER_CALL]
            prompt = "\n".join(
                f"{n}. older: {recs[i].item.content}\n   newer: {recs[j].item.content}"
                for n, (i, j) in enumerate(chunk, 1)
            )
            answer = gate.ask_json(PAIRS_SYSTEM, prompt, user_id=user_id, purpose="conflicts")
            for n, key in enumerate(chunk, 1):
                verdict = _llm_verdict(answer, n)
                if verdict is not None:
                    verdicts[key] = verdict
                    method = "llm" if method in ("none", "llm") else "llm+offline"
    s = ctx.settings
    for key in open_keys:
        if key in verdicts:
            continue
        if key in pairs.model_only:
            # below the offline floor only the model judges ("I use Spotify Premium ..." /
            # "Not sure it's worth the hassle of moving all my playlists": 0.3-0.55)
            verdicts[key] = PairVerdict("compatible", "put forward for the model only, which "
                                                      "gave no verdict")
            continue
        i, j = key
        verdicts[key] = classify(recs[i].item, recs[j].item, cosine=pairs.cos[key],
                                 duplicate_similarity=s.duplicate_similarity)
        method = "offline" if method in ("none", "offline") else "llm+offline"
    for key, verdict in list(verdicts.items()):
        facts = {recs[key[0]].row["type"], recs[key[1]].row["type"]} <= FACT_TYPES
        if verdict.relation in ("contradiction", "update") and not facts:
            verdicts[key] = PairVerdict("compatible", "history records do not contradict")
        a, b = recs[key[0]].item.slot, recs[key[1]].item.slot
        if a is not None and b is not None and a.attribute != b.attribute:
            # one turn read as two values ("I live in Leeds with my partner": the city and
            # the partner) is two records of the same words, neither a copy of the other
            verdicts[key] = PairVerdict("compatible", "values of different attributes")
    _owned_changes_only(recs, verdicts, ctx)
    return verdicts, method


def _owned_changes_only(recs: Sequence[_Rec], verdicts: dict[tuple[int, int], PairVerdict],
                        ctx: JobContext) -> None:
    """A held value is changed only by the user's own reading of it, holding now.

    A statement without a slot that the judge took for an update of (or a contradiction
    with) a slot - "我妹妹搬到深圳了" beside "我搬到上海了" - is read by the configured reader:
    unless it reads the user's own current value of that attribute there, the pair is
    compatible (someone else's change, a plan or the past changes nothing of the user's).
    The frozen rules are left as they were (they read too little to be asked).
    """
    reader = load_reader(ctx.memory_settings.reader)
    if reader.name == "rules":
        return
    for (i, j), verdict in list(verdicts.items()):
        if verdict.relation not in ("contradiction", "update"):
            continue
        a, b = recs[i].item, recs[j].item
        if (a.slot is None) == (b.slot is None):
            continue
        held, free = (a, b) if a.slot is not None else (b, a)
        assert held.slot is not None
        attribute = held.slot.attribute
        if not any(r.attribute == attribute and r.current_own
                   for r in reader.read(free.content)):
            verdicts[(i, j)] = PairVerdict(
                "compatible", f"not the user's own current {attribute} ({reader.name} reader)")


def _llm_verdict(answer: Any, n: int) -> PairVerdict | None:
    items = answer if isinstance(answer, list) else (
        answer.get("pairs") if isinstance(answer, dict) else None)
    if not isinstance(items, list):
        return None
    for entry in items:
        if not isinstance(entry, dict) or entry.get("pair") != n:
            continue
        relation = entry.get("relation")
        if relation in ("duplicate", "contradiction", "update", "compatible"):
            rel: Relation = relation
            return PairVerdict(rel, f"llm: {str(entry.get('reason', ''))[:200]}")
    return None


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = defaultdict(list)
        for x in list(self.parent):
            out[self.find(x)].append(x)
        return [sorted(g) for g in out.values() if len(g) > 1]


def _plan_scope(user_id: str, recs: Sequence[_Rec], ctx: JobContext, plan: UserPlan,
                undone: set[frozenset[str]]) -> None:
    pairs = _candidates(recs, ctx)
    if not pairs.cos:
        return
    verdicts, method = _judge(pairs, ctx, plan.errors, user_id)
    # a pair an undo took apart stays apart (its records unchanged since: a new record
    # makes new pairs, judged as usual)
    verdicts = {k: v for k, v in verdicts.items()
                if frozenset((recs[k[0]].id, recs[k[1]].id)) not in undone}
    plan.method = combine_methods(plan.method, method)
    now = ctx.now
    state = {i: dict(r.row) for i, r in enumerate(recs)}
    touched: dict[int, tuple[str, str]] = {}  # index -> (action, reason)
    # 1. explicit corrections supersede
    superseded_by: dict[int, int] = {}
    for (i, j), v in sorted(verdicts.items(), key=lambda kv: recs[kv[0][1]].order):
        if v.relation != "update" or i in superseded_by or _same_turn(recs[i], recs[j]):
            continue
        superseded_by[i] = j
        state[i].update(superseded(by=recs[j].id, by_valid_from=float(recs[j].row["valid_from"]),
                                   own_valid_from=float(recs[i].row["valid_from"]), now=now))
        touched[i] = ("supersede", v.reason)
        latest = state[j].get("supersedes")
        if latest is None or recs[i].order > _order_of(recs, latest):
            state[j]["supersedes"] = recs[i].id
            touched.setdefault(j, ("link", f"supersedes {recs[i].id}: {v.reason}"))
    # 2. duplicates merge into the oldest (a pinned record wins, then one with a slot: a
    # turn that restates a held value forms its slot and, from another of its readings, a
    # memory of the same words without one - merged into that, the held value was lost)
    uf = _UnionFind()
    for (i, j), v in verdicts.items():
        if v.relation == "duplicate" and i not in superseded_by and j not in superseded_by and \
                recs[i].row["status"] in _MERGEABLE and recs[j].row["status"] in _MERGEABLE \
                and recs[i].row["type"] == recs[j].row["type"]:
            uf.union(i, j)
    keeper_of: dict[int, int] = {}
    for group in uf.groups():
        keeper = min(group, key=lambda x: (not bool(recs[x].row["pinned"]),
                                           recs[x].row["slot_key"] is None, recs[x].order))
        dups = [x for x in group if x != keeper]
        reason = next((verdicts[k].reason for k in verdicts
                       if keeper in k and set(k) & set(dups)), "duplicate")
        _absorb(state[keeper], [recs[d] for d in dups], now)
        touched[keeper] = ("absorb", f"absorbed {len(dups)} duplicate(s): {reason}")
        for d in dups:
            keeper_of[d] = keeper
            state[d].update(superseded(
                by=recs[keeper].id, by_valid_from=float(recs[keeper].row["valid_from"]),
                own_valid_from=float(recs[d].row["valid_from"]), now=now))
            touched[d] = ("merge", f"duplicate of {recs[keeper].id}: {reason}")
    # 3. contradictions become one pending conflict group
    cf = _UnionFind()
    for (i, j), v in verdicts.items():
        if v.relation != "contradiction":
            continue
        a, b = keeper_of.get(i, i), keeper_of.get(j, j)
        if a == b or a in superseded_by or b in superseded_by:
            continue
        cf.union(a, b)
    reasons = {k: v.reason for k, v in verdicts.items() if v.relation == "contradiction"}
    for group in cf.groups():
        existing = sorted({str(recs[x].row["conflict_group"]) for x in group
                           if recs[x].row["conflict_group"]})
        gid = existing[0] if existing else new_id()
        members = set(group)
        if len(existing) > 1:  # join the other open groups into this one
            members |= {x for x, r in enumerate(recs) if r.row["conflict_group"] in existing
                        and r.row["status"] == Status.PENDING_CONFIRMATION.value}
        why = next((reasons[k] for k in reasons if set(k) <= members), "contradiction")
        for x in sorted(members):
            if state[x]["status"] == Status.PENDING_CONFIRMATION.value and \
                    state[x]["conflict_group"] == gid:
                continue
            state[x].update(in_conflict(gid, now))
            touched[x] = ("flag_conflict", why)
    for x, (action, reason) in touched.items():
        before, after = changed_columns(recs[x].row, state[x])
        if after:
            plan.actions.append(PlannedAction(user_id, recs[x].id, action, reason,
                                              _jsonable(before), _jsonable(after)))


def _order_of(recs: Sequence[_Rec], memory_id: str) -> tuple[float, float, str]:
    for r in recs:
        if r.id == memory_id:
            return r.order
    return (float("-inf"), float("-inf"), "")


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    return {k: (bool(v) if k == "pinned" else v) for k, v in values.items()}


def _absorb(keeper: dict[str, Any], dups: Iterable[_Rec], now: float) -> None:
    meta = dict(keeper["metadata"] or {})
    merged = list(meta.get("merged_from", []))
    sources = list(meta.get("sources", []))
    reinforced = int(meta.get("reinforced", 0))
    for d in dups:
        r = d.row
        merged.append(r["id"])
        reinforced += 1 + int((r["metadata"] or {}).get("reinforced", 0))
        sources.append({k: v for k, v in {
            "merged": r["id"], "at": r["created_at"], "source": r["source"],
            "session_id": r["session_id"], "task_id": r["task_id"]}.items() if v is not None})
        keeper["confidence"] = max(float(keeper["confidence"]), float(r["confidence"]))
        keeper["importance"] = max(float(keeper["importance"]), float(r["importance"]))
        keeper["access_count"] = int(keeper["access_count"]) + int(r["access_count"])
        if r["last_accessed_at"] is not None and (
                keeper["last_accessed_at"] is None
                or r["last_accessed_at"] > keeper["last_accessed_at"]):
            keeper["last_accessed_at"] = r["last_accessed_at"]
        if keeper["expires_at"] is not None:
            keeper["expires_at"] = None if r["expires_at"] is None else max(
                float(keeper["expires_at"]), float(r["expires_at"]))
        keeper["pinned"] = bool(keeper["pinned"]) or bool(r["pinned"])
        if r["status"] == Status.ACTIVE.value:
            keeper["status"] = Status.ACTIVE.value
    meta["merged_from"] = merged
    meta["sources"] = sources[-_MAX_SOURCES:]
    meta["reinforced"] = reinforced
    keeper["metadata"] = meta
    keeper["updated_at"] = now


class ConflictsJob:
    name = "conflicts"
    lease = "conflicts"
    plan_in_txn = False

    def users(self, conn: Connection, ctx: JobContext, after: str | None,
              limit: int | None) -> list[str]:
        return queries.user_page(conn, after, limit)

    def plan(self, conn: Connection, ctx: JobContext, user_id: str) -> UserPlan:
        plan = UserPlan(user_id)
        by_scope: dict[str, list[_Rec]] = defaultdict(list)
        for rec in _load(conn, user_id):
            by_scope[rec.row["scope"]].append(rec)
        undone = _runlog.undone_pairs(conn, user_id) if by_scope else set()
        for scope in sorted(by_scope):
            if len(by_scope[scope]) > 1:
                _plan_scope(user_id, by_scope[scope], ctx, plan, undone)
        return plan

    def apply(self, txn: RecordTxn, ctx: JobContext, plan: UserPlan) -> Applied:
        if not plan.actions:
            return Applied()
        if not txn.lock(plan.user_id):
            return Applied(errors=["the user was erased meanwhile; nothing changed"])
        done, errors = txn.update(plan.user_id, plan.actions, verify=True)
        return Applied(done, errors)
