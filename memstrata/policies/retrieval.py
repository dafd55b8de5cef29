"""Retrieval policy: how recalled candidates are scored, filtered and cut.

``score = relevance x decay x confidence x status_weight`` (recall's ranking,
:mod:`memstrata.memory.ranking`, then multiplies in ``currency`` and ``range_weight``)

* ``relevance`` fuses the dense cosine similarity and the keyword (BM25) score
  with weights, not ranks: ``w * dense + (1 - w) * bm25 / (bm25 + saturation)``.
  Score fusion keeps the *size* of each signal, so a strong keyword match on a
  rare name beats a lukewarm paraphrase, and a threshold means the same thing
  whatever else is in the candidate set.
* ``decay`` halves every ``half_life[type]`` since the record was last used
  (or written), down to ``decay_floor``; pinned records do not decay.
* ``status_weight`` ranks demoted (and expired) records below active ones.

:meth:`RetrievalPolicy.score` is the whole formula for one candidate: it takes
the raw signals (cosine, BM25, type, age, pinned, confidence, status, expired)
and returns a :class:`~memstrata.types.ScoreParts` - every factor and the
product - or ``None`` when the gate below rejects the candidate. Recall calls
nothing else, so what is documented here is what ranks.

A candidate is returned only when its *strongest* signal - the cosine
similarity or the saturated keyword score - reaches ``min_relevance``: noise is
worse than absence. The gate is on the strongest signal, not on the fused
relevance, because the fusion weights are tuned for *ranking*: with
``dense_weight`` 0.4 a paraphrase that shares no word with the question
(cosine 0.35-0.45: "What can I cook for her?" -> "I'm vegetarian") would fuse
to 0.14-0.18 and be cut by any useful threshold, although the model is quite
sure of it. Unrelated memories stay below 0.2 on both signals.

A record of several sentences also passes the gate when one of its sentences
does (``sentence_gate``; each sentence's vector is stored with the record): "The
backup camera on my Mazda CX-5 keeps fogging up on cold mornings. Is that a seal
problem?" is 0.16 from "What car do I drive?" as a whole and 0.3 by its first
sentence. The sentence only admits; the record ranks by its whole cosine (ranking
by the best sentence cost LoCoMo 0.012 recall@5, admitting by it costs nothing there).

The defaults are measured (``docs/eval.md``, LoCoMo development conversations,
paired bootstrap): keyword evidence outweighs MiniLM similarity on
conversational memory (names, objects, dates), so ``dense_weight`` is 0.4 and a
BM25 score of 10 - a strong match on two rare words - is worth half the keyword
signal. Decay keeps recency as a preference, not a veto: with a floor of 0.5 a
year-old exact match lost to a fresh lukewarm one, and recall@1 dropped by 0.04;
a floor of 0.8 keeps the ordering among equals and loses nothing measurable.

Recency among statements about the same thing (:meth:`RetrievalPolicy.current_first`):
global decay cannot tell "I work at the bank" (March) from "I started at the
school" (May) - both are weeks old and 0.8 <= decay <= 1. So recall compares the
candidates with each other: an older candidate about the same thing as a newer,
comparably relevant one (same slot, or embeddings at least
``same_thing_similarity`` apart) is *outdated* - for records that hold a state
(``updatable``: profile, preference, knowledge, rule; a later event does not
replace an earlier one) - and its ``currency`` is
multiplied by ``outdated_weight``; a newer candidate that reads as a change ("sold
the Civic and got a Tesla") and is close to an older hit (``change_similarity``)
is ranked just above it, even when its own relevance is below the gate - the
question found the old value, the change is its current one. A question or request
about the user as they are now (``TemporalQuery.current``: "which gym do I go to?",
"book me a table that fits my diet", 我开什么车 - about the user and not pointing to
the past) reads every newer candidate it found (admitted, or at least
``current_relevance_ratio`` as relevant) as the current value of the same thing at a
lower cosine, ``current_similarity``: "Grabbed a Pixel 8 after the old one took a
swim" updates "My phone is an iPhone 12" (cosine 0.29) for "What phone am I using?".
The older one stays in the list (it is history, not deleted) unless the write path
superseded it. Only a newer statement that reports the user's own present state
(:func:`~memstrata.policies.standing.reports_own_state`) updates this way - not
someone else's change ("My dad finally got an iPhone 15"), a plan ("Really eyeing the
new MacBook Air"), the past, a one-off ("grabbed a day pass at a gym near the hotel")
or a question - and for a question about the user now such a candidate is weighed
down by ``not_current_weight``: it says less about the user's state than the user's
own statement. ``current_similarity`` 0.05 was chosen on the guard1 split of
``benchmarks/bench_knowledge_update.py`` with the earlier blind update splits (the
guard rate did not move between 0.25 and 0.05; the updates read newest first 0.763 ->
0.783); ``not_current_weight`` 0.5 after the first looks at guard2 and guard3 (0.7
and 0.5 tie on guard1, guard2 and the update splits; 0.5 keeps one more guard3 case), 0.2
after the first looks at guard10 and guard11: with the reader's later fixes someone else's
news or a plan still outranked the user's statement at half weight when it shared more
words with the question (0.5 / 0.3 / 0.2 / 0.1 on guards 1-11: 0.755 / 0.777 / 0.782 /
0.782; the update splits 3-31 read 0.872 newest first at every one of them).

Time (:mod:`memstrata.policies.temporal`): a temporal or aggregate question
("when did I ...", "how many times ...") is gated at ``temporal_min_relevance``
instead of ``min_relevance`` - its evidence often shares neither words nor much
meaning with the question. A question naming a date range ("last month", "in
March") boosts candidates dated inside it (the event date resolved at write time,
or the day it was said) by ``range_boost`` and (``range_filter``) drops the ones
outside when at least one is inside. The first adjustment goes into ``ScoreParts.currency``,
the second into ``ScoreParts.range_weight``, so the product of the parts is still the score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from types import MappingProxyType

from memstrata._text import STOP_WORDS
from memstrata.policies._extraction_zh import to_simplified
from memstrata.policies.temporal import question_part
from memstrata.types import MemoryType, ScoreParts, Status

__all__ = ["DEFAULT_HALF_LIFE", "RetrievalPolicy", "about_the_user", "asked_attribute"]

DEFAULT_HALF_LIFE: Mapping[MemoryType, timedelta | None] = MappingProxyType(
    {
        MemoryType.PROFILE: None,
        MemoryType.PREFERENCE: timedelta(days=180),
        MemoryType.KNOWLEDGE: timedelta(days=365),
        MemoryType.EVENT: timedelta(days=365),
        MemoryType.EXPERIENCE: timedelta(days=90),
        MemoryType.RULE: None,
        MemoryType.SUMMARY: timedelta(days=180),
    }
)
#: types whose records hold a state that a newer statement can update; events,
#: experiences and summaries are dated happenings - a later one does not replace them
DEFAULT_UPDATABLE: frozenset[MemoryType] = frozenset(
    {MemoryType.PROFILE, MemoryType.PREFERENCE, MemoryType.KNOWLEDGE, MemoryType.RULE})
DEFAULT_STATUS_WEIGHT: Mapping[Status, float] = MappingProxyType(
    {
        Status.ACTIVE: 1.0,
        Status.PENDING_CONFIRMATION: 0.9,
        Status.DEMOTED: 0.5,
    }
)
DEFAULT_TOP_K = 5
DEFAULT_MIN_RELEVANCE = 0.25
DEFAULT_DENSE_WEIGHT = 0.4
DEFAULT_KEYWORD_SATURATION = 10.0
DEFAULT_CANDIDATES = 20
DEFAULT_DECAY_FLOOR = 0.8
DEFAULT_TEMPORAL_MIN_RELEVANCE = 0.1
DEFAULT_RANGE_BOOST = 1.3
DEFAULT_SAME_THING_SIMILARITY = 0.6
DEFAULT_OUTDATED_WEIGHT = 0.7
DEFAULT_NOT_CURRENT_WEIGHT = 0.2
DEFAULT_NEWER_RELEVANCE_RATIO = 0.6
DEFAULT_CURRENT_RELEVANCE_RATIO = 0.5
DEFAULT_CURRENT_SIMILARITY = 0.05
DEFAULT_CHANGE_SIMILARITY = 0.35
DEFAULT_LEXICAL_SIMILARITY = 0.25
DEFAULT_LEXICAL_CHANGE_SIMILARITY = 0.2
DEFAULT_UNCOVERED_MIN_RELEVANCE = 0.15
#: statements less than a day apart are one statement, not an update
DEFAULT_UPDATE_GAP_SECONDS = 86_400.0
MAX_TOP_K = 100


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    """Parameters of recall ranking. All are plain numbers a user can sweep."""

    top_k: int = DEFAULT_TOP_K
    min_relevance: float = DEFAULT_MIN_RELEVANCE
    #: weight of the dense score in the fusion; the keyword score gets the rest
    dense_weight: float = DEFAULT_DENSE_WEIGHT
    #: BM25 score at which the keyword signal is worth 0.5
    keyword_saturation: float = DEFAULT_KEYWORD_SATURATION
    #: how many candidates each retriever proposes before fusion (at least top_k);
    #: 20 ranked the top 10 exactly as 50 did on LoCoMo and costs ~1 ms less
    candidates: int = DEFAULT_CANDIDATES
    half_life: Mapping[MemoryType, timedelta | None] = field(
        default_factory=lambda: DEFAULT_HALF_LIFE
    )
    decay_floor: float = DEFAULT_DECAY_FLOOR
    status_weight: Mapping[Status, float] = field(default_factory=lambda: DEFAULT_STATUS_WEIGHT)
    #: the gate for temporal and aggregate questions (``min_relevance`` when higher)
    temporal_min_relevance: float = DEFAULT_TEMPORAL_MIN_RELEVANCE
    #: multiplier of a candidate dated inside the range a question names (1.0: no
    #: time ranking at all - no boost, no filter)
    range_boost: float = DEFAULT_RANGE_BOOST
    #: cosine at which two candidates are statements about the same thing (> 1: off)
    same_thing_similarity: float = DEFAULT_SAME_THING_SIMILARITY
    #: multiplier of an older candidate about the same thing as a newer one (1.0: off)
    outdated_weight: float = DEFAULT_OUTDATED_WEIGHT
    #: multiplier, for a question about the user now, of a candidate that does not
    #: report the user's own present state - someone else's, a plan, the past, a
    #: one-off, a question (:func:`~memstrata.policies.standing.reports_own_state`;
    #: 1.0: off)
    not_current_weight: float = DEFAULT_NOT_CURRENT_WEIGHT
    #: the newer candidate outdates the older only if its relevance is at least this
    #: share of the older one's (a stray newer mention does not bury the answer)
    newer_relevance_ratio: float = DEFAULT_NEWER_RELEVANCE_RATIO
    #: for a question about the present, the newer candidate updates the older one
    #: (as a change would) if its relevance is at least this share of the older one's
    current_relevance_ratio: float = DEFAULT_CURRENT_RELEVANCE_RATIO
    #: cosine at which such a newer candidate (found by a question about the present)
    #: updates an older one (> 1: questions about the present are read as any other)
    current_similarity: float = DEFAULT_CURRENT_SIMILARITY
    #: cosine at which a newer statement that reads as a change updates an older one
    change_similarity: float = DEFAULT_CHANGE_SIMILARITY
    #: word overlap at which two candidates are about the same thing, where the
    #: embedding does not read the language (Chinese with MiniLM)
    lexical_similarity: float = DEFAULT_LEXICAL_SIMILARITY
    #: word overlap at which a newer statement that reads as a change updates an older
    #: one, where the embedding does not read the language - lower than
    #: ``lexical_similarity`` as ``change_similarity`` is lower than
    #: ``same_thing_similarity``: a change names a new value, so it shares fewer words
    #: ("我每天早上喝两杯红茶" / "医生说红茶伤胃，我改喝温水了" share 0.22; 0.2 chosen on
    #: the knowledge-update tuning split, where 0.1-0.2 tie; Chinese hit@5 unchanged)
    lexical_change_similarity: float = DEFAULT_LEXICAL_CHANGE_SIMILARITY
    #: the gate for the part of a query written in a script the embedding model does
    #: not read (Chinese with MiniLM): the keyword index is then the only judge, and a
    #: Chinese match on a character or two scores BM25 1.8-3.3, under the 3.3 that
    #: ``min_relevance`` 0.25 asks for (:meth:`for_coverage`; 0.15 was the highest
    #: gate that kept BM25's recall@10 on the Chinese tuning set)
    uncovered_min_relevance: float = DEFAULT_UNCOVERED_MIN_RELEVANCE
    #: how much later (seconds) the newer statement must be said
    update_gap_seconds: float = DEFAULT_UPDATE_GAP_SECONDS
    #: the types whose records a newer statement about the same thing outdates
    updatable: frozenset[MemoryType] = DEFAULT_UPDATABLE
    #: drop candidates dated outside a range the question names (when one is inside)
    range_filter: bool = True
    #: admit a record of several sentences when one sentence passes the gate
    sentence_gate: bool = True
    #: a question for a profile fact ("Which city do I live in?") or, about the present,
    #: for one of the user's things named by its make ("what oil should I buy for my
    #: car?") is answered first by the current slot value or the newest statement of it
    #: (False: ranked as any other question)
    answer_asked: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be in 1..{MAX_TOP_K}")
        if not 0.0 <= self.min_relevance <= 1.0:
            raise ValueError("min_relevance must be in [0, 1]")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        if self.keyword_saturation <= 0:
            raise ValueError("keyword_saturation must be positive")
        if self.candidates < 1:
            raise ValueError("candidates must be positive")
        if not 0.0 <= self.decay_floor <= 1.0:
            raise ValueError("decay_floor must be in [0, 1]")
        if not 0.0 <= self.uncovered_min_relevance <= 1.0:
            raise ValueError("uncovered_min_relevance must be in [0, 1]")
        if not 0.0 <= self.temporal_min_relevance <= 1.0:
            raise ValueError("temporal_min_relevance must be in [0, 1]")
        if not 1.0 <= self.range_boost <= 10.0:
            raise ValueError("range_boost must be in [1, 10]")
        if not 0.0 <= self.same_thing_similarity <= 2.0:
            raise ValueError("same_thing_similarity must be in [0, 2]")
        if not 0.0 <= self.outdated_weight <= 1.0:
            raise ValueError("outdated_weight must be in [0, 1]")
        if not 0.0 <= self.not_current_weight <= 1.0:
            raise ValueError("not_current_weight must be in [0, 1]")
        if not 0.0 <= self.change_similarity <= 2.0:
            raise ValueError("change_similarity must be in [0, 2]")
        if not 0.0 <= self.lexical_similarity <= 1.0:
            raise ValueError("lexical_similarity must be in [0, 1]")
        if not 0.0 <= self.lexical_change_similarity <= 1.0:
            raise ValueError("lexical_change_similarity must be in [0, 1]")
        if not 0.0 <= self.newer_relevance_ratio <= 10.0:
            raise ValueError("newer_relevance_ratio must be in [0, 10]")
        if not 0.0 <= self.current_similarity <= 2.0:
            raise ValueError("current_similarity must be in [0, 2]")
        if not 0.0 <= self.current_relevance_ratio <= 10.0:
            raise ValueError("current_relevance_ratio must be in [0, 10]")
        if not 0.0 <= self.update_gap_seconds < math.inf:
            raise ValueError("update_gap_seconds must be a non-negative number")
        half_life = dict(DEFAULT_HALF_LIFE)
        half_life.update(self.half_life)
        weights = dict(DEFAULT_STATUS_WEIGHT)
        weights.update(self.status_weight)
        object.__setattr__(self, "half_life", MappingProxyType(half_life))
        object.__setattr__(self, "status_weight", MappingProxyType(weights))

    def score(
        self,
        *,
        dense: float,
        bm25: float,
        kind: MemoryType,
        age_seconds: float,
        pinned: bool = False,
        confidence: float = 1.0,
        status: Status = Status.ACTIVE,
        expired: bool = False,
    ) -> ScoreParts | None:
        """Score one candidate from its raw signals; ``None`` when the gate rejects it.

        ``dense`` is the cosine similarity, ``bm25`` the raw keyword score (0.0
        when no query term matched), ``age_seconds`` the time since the record
        was last used (or written). This is the hot path of recall: one call and,
        for an admitted candidate, one :class:`ScoreParts` - the factors are
        computed once and multiplied in the documented order, so
        ``relevance * decay * confidence * status_weight == score`` exactly.
        """
        keyword = self.keyword_signal(bm25)
        # a dense weight of 0 (keyword only, or a query the model does not read) admits
        # nothing on the cosine alone
        if not max(dense if self.dense_weight > 0 else 0.0, keyword) >= self.min_relevance:
            return None
        relevance = self.dense_weight * max(0.0, dense) + (1.0 - self.dense_weight) * keyword
        decay = self.decay_after(kind, age_seconds, pinned=pinned)
        weight = self.weight_of(status, expired=expired)
        return ScoreParts(
            dense=dense,
            bm25=bm25,
            keyword=keyword,
            relevance=relevance,
            decay=decay,
            confidence=confidence,
            status_weight=weight,
            score=relevance * decay * confidence * weight,
        )

    def keyword_signal(self, bm25: float) -> float:
        """BM25 squashed into [0, 1): ``bm25 / (bm25 + saturation)``."""
        return bm25 / (bm25 + self.keyword_saturation) if bm25 > 0 else 0.0

    def admits(self, dense: float, bm25: float) -> bool:
        """Is either retriever convinced? ``max(cosine, keyword signal) >= min_relevance``."""
        dense = dense if self.dense_weight > 0 else 0.0
        return max(dense, self.keyword_signal(bm25)) >= self.min_relevance

    def relevance(self, dense: float, bm25: float) -> float:
        """Fused relevance in [0, 1] of one candidate."""
        dense_part = max(0.0, dense)
        return self.dense_weight * dense_part + (1.0 - self.dense_weight) * self.keyword_signal(
            bm25
        )

    def decay(
        self, kind: MemoryType, last_used: datetime, now: datetime, *, pinned: bool = False
    ) -> float:
        """Multiplier in [decay_floor, 1] for a record last used at ``last_used``."""
        return self.decay_after(kind, (now - last_used).total_seconds(), pinned=pinned)

    def decay_after(self, kind: MemoryType, age_seconds: float, *, pinned: bool = False
                    ) -> float:
        """:meth:`decay` for a record unused for ``age_seconds`` (the hot path of recall)."""
        half_life = self.half_life.get(kind)
        if pinned or half_life is None:
            return 1.0
        fresh = math.pow(0.5, max(0.0, age_seconds) / half_life.total_seconds())
        return self.decay_floor + (1.0 - self.decay_floor) * fresh

    def weight_of(self, status: Status, *, expired: bool = False) -> float:
        """Status weight; an expired record weighs as a demoted one."""
        weight = self.status_weight.get(status, 0.0)
        if expired:
            weight = min(weight, self.status_weight.get(Status.DEMOTED, 0.0))
        return weight

    def for_coverage(self, dense_weight: float, covered: float) -> RetrievalPolicy:
        """This policy for a query of which the model reads the share ``covered``
        (:mod:`memstrata.policies.language`): fused with ``dense_weight``, and gated
        between ``min_relevance`` (all read) and ``uncovered_min_relevance`` (none
        read) in proportion - where the model cannot vouch for a candidate, the gate
        is set on the keyword index's own scale. A lower ``min_relevance`` than
        ``uncovered_min_relevance`` is kept."""
        covered = min(1.0, max(0.0, covered))
        gate = covered * self.min_relevance + (1.0 - covered) * min(
            self.min_relevance, self.uncovered_min_relevance)
        if dense_weight == self.dense_weight and gate == self.min_relevance:
            return self
        return replace(self, dense_weight=dense_weight, min_relevance=gate)

    def gate_for(self, *, keeps_evidence: bool) -> float:
        """The relevance gate of one question: lower for temporal/aggregate ones."""
        if keeps_evidence:
            return min(self.min_relevance, self.temporal_min_relevance)
        return self.min_relevance

    def current_first(
        self,
        *,
        relevance: Sequence[float],
        said_at: Sequence[float],
        slots: Sequence[str | None],
        similarity: Sequence[Sequence[float]] | None,
        changes: Sequence[bool],
        admitted: Sequence[bool],
        kinds: Sequence[MemoryType],
        top: int,
        lexical: bool = False,
        asks_current: bool = False,
        own: Sequence[bool] | None = None,
    ) -> tuple[list[bool], dict[int, int]]:
        """Which candidates a newer one about the same thing outdates, and which
        newer ones to rank just above the statement they update.

        ``said_at`` are epoch seconds (world time), ``slots`` the slot keys (or
        ``None``), ``similarity`` the pairwise cosine of the candidates - or, with
        ``lexical``, their word overlap (where the embedding does not read the
        language: two statements are about the same thing at ``lexical_similarity``
        when the newer is comparably relevant, or at ``lexical_change_similarity``
        when the newer reads as a change), ``changes``
        whether each candidate reads as a change of state, ``admitted`` whether it
        passed the gate, ``kinds`` their types: only records of the ``updatable``
        types outdate or are outdated (a later event does not replace an earlier
        one). Only the ``top`` best admitted candidates (in the order given) are
        checked against the others. Admitted candidate ``i`` is
        outdated by a candidate ``j`` said at least ``update_gap_seconds`` later
        when

        * both hold the same slot, or
        * their cosine reaches ``same_thing_similarity`` and ``j`` is comparably
          relevant (at least ``newer_relevance_ratio`` of ``i``'s relevance), or
        * ``j`` reads as a change ("I moved to ...", "sold the Civic and got ...")
          and their cosine reaches ``change_similarity`` - ``j`` then ranks just
          above ``i`` even if the gate alone would not admit it: it is the current
          value of what the question found.

        A question about the present (``asks_current``: "where do I work these
        days?") reads every newer candidate as a possible change: the question says
        the value may have moved on, so a newer one at ``change_similarity`` (or
        ``lexical_change_similarity``) that is comparably relevant updates the older.
        Where the model does not read the language, a newer candidate the question
        admitted on its own words that reads as a change updates the older at any word
        overlap, and one that does not at a word overlap of ``current_similarity`` - as
        a cosine does where the model reads it: the question links the two, and the new
        value shares few words with the old (家里宽带是电信的 / ...就直接换成移动了, 0.07;
        我开的是一辆2016年的卡罗拉 / 比亚迪海豹开了一个月, 0.06).

        ``own`` says whether each candidate reports the user's own present state
        (:func:`~memstrata.policies.standing.reports_own_state`; all do when not
        given): one that does not - someone else's change, a plan, the past, a
        one-off, a question ("My dad finally got an iPhone 15", "Really eyeing the
        new MacBook Air") - updates nothing by reading as a change or by being
        found by a question about now; only the same slot or a near-identical
        statement (``same_thing_similarity``) still does.

        Returns the outdated flags and ``{j: i}`` for the candidates to promote.
        """
        n = len(relevance)
        out = [False] * n
        promote: dict[int, int] = {}
        if self.outdated_weight >= 1.0:
            return out, promote
        updatable = [k in self.updatable for k in kinds]
        # asked about now, a session summary quoting an older state is outdated by a newer
        # statement about the same thing too (it never outdates one: it is a happening)
        summary = [k is MemoryType.SUMMARY for k in kinds]
        outdatable = [u or (asks_current and s) for u, s in zip(updatable, summary, strict=True)]
        checked = [i for i in range(n) if admitted[i]][:top]
        for i in checked:
            if not outdatable[i]:
                continue
            # an older session summary holds a whole session: the question may have found
            # it by another of its topics (small talk found beside the drink the user asks
            # about, word overlap 0.07 with a newer statement), so being found with it takes
            # what a change takes, not the lower current_similarity
            near, near_overlap = (self.change_similarity, self.lexical_change_similarity) \
                if summary[i] else (self.current_similarity, self.current_similarity)
            for j in range(n):
                if i == j or not updatable[j] or \
                        said_at[j] - said_at[i] < self.update_gap_seconds:
                    continue
                same = slots[i] is not None and slots[i] == slots[j]
                comparable = relevance[j] >= self.newer_relevance_ratio * relevance[i]
                states = own is None or own[j]
                change = changes[j] and states
                # a question about the present: a newer candidate the question found too
                # (admitted, or nearly as relevant) is the current value of the same thing
                # at a lower similarity; where the model does not read the language, word
                # overlap with the older one is the test
                found = asks_current and states and self.current_similarity <= 1.0 and (
                    lexical or admitted[j]
                    or relevance[j] >= self.current_relevance_ratio * relevance[i])
                if not same and similarity is not None and lexical:
                    overlap = similarity[i][j]
                    same = ((change or found) and overlap >= self.lexical_change_similarity) \
                        or (overlap >= self.lexical_similarity and comparable) \
                        or (found and admitted[j] and (change or overlap >= near_overlap))
                elif not same and similarity is not None:
                    sim = similarity[i][j]
                    same = (sim >= self.same_thing_similarity and comparable) \
                        or (change and sim >= self.change_similarity) \
                        or (found and sim >= near)
                if not same:
                    continue
                out[i] = True
                if j not in promote:
                    promote[j] = i
        return out, promote


_CJK = re.compile(r"[\u4e00-\u9fff]")
#: names that are also everyday words: matched only as written (capitalised)
_WORD_NAMES = STOP_WORDS | frozenset(
    "will may june april august mark bill rose grace hope faith joy sunny art pat rich "
    "summer autumn dawn eve ray guy jack max sky amber ivy lily page hunter".split())


def about_the_user(query: str, names: Sequence[str]) -> str:
    """``query`` with the user's own name read as the user.

    A question that names the user ("which seat should I book for Alice?") is a
    question about the user: the name is not a topic to match (it would find "My
    name is Alice" ahead of Alice's seat preference). "for/to/with Alice" and a
    bare "Alice" are dropped, "Alice's" becomes "my"; a Chinese name becomes 我.
    A query that would be left empty is returned unchanged.

    >>> about_the_user("Which seat should I book for Alice?", ["Alice"])
    'Which seat should I book?'
    >>> about_the_user("What is Alice's favourite food?", ["Alice Smith"])
    'What is my favourite food?'
    >>> about_the_user("给小明订哪个座位？", ["小明"])
    '给我订哪个座位？'
    >>> about_the_user("Will it rain? Book a table for Will.", ["Will"])
    'Will it rain? Book a table.'
    """
    text = query
    parts: set[str] = set()
    for name in names:
        name = " ".join(name.split())
        if len(name) < 2:
            continue
        parts.add(name)
        if not _CJK.search(name):
            parts.update(p for p in name.split() if len(p) >= 2)
    for name in sorted(parts, key=len, reverse=True):
        if _CJK.search(name):
            text = text.replace(name, "我")
            continue
        word = re.escape(name)
        # a name that is also a common word ("Will", "May") is the name only capitalised
        flags = 0 if name.casefold() in _WORD_NAMES else re.IGNORECASE
        text = re.sub(rf"\b{word}(?:'s|\u2019s)(?!\w)", "my", text, flags=flags)
        text = re.sub(rf"\b(?i:for|to|with|about|of)\s+{word}\b", "", text, flags=flags)
        if flags:
            text = re.sub(rf"\b{word}\b,?", "", text, flags=flags)
        else:  # "Will it rain?" is not about Will: only "Will, ..." as an address
            text = re.sub(rf"(^|(?<=[.!?]\s)){word},\s*", "", text)
    text = re.sub(r"\s+([?.!,;:])", r"\1", re.sub(r"\s{2,}", " ", text)).strip(" ,")
    return text if re.search(r"\w", text) else query


#: a question asking for one of the user's profile facts, by attribute (EN, ZH)
_ASKED = (
    ("city", re.compile(
        r"\b(?:which|what)\s+(?:city|town)\s+(?:do|did|am)\s+i\b|\bwhere\s+do\s+i\s+live\b|"
        r"\bwhere\s+(?:is|'s)\s+my\s+(?:home|apartment|flat|place)\b|\bmy\s+(?:home\s+)?city\b|"
        # said in a request: "day hikes within an hour of where I live", "which city I'm
        # living in now", "the city we live in", "pub quiz nights in my area"
        r"\bwhere\s+(?:i|we)(?:['’]m|\s+am|['’]re|\s+are)?\s+(?:currently\s+|now\s+)?liv(?:e|ing)\b|"
        r"\b(?:city|town)\s+(?:that\s+)?(?:i|we)(?:['’]m|\s+am|['’]re|\s+are)?\s+(?:currently\s+|now\s+)?"
        r"liv(?:e|ing)\b|\b(?:in|around)\s+my\s+(?:area|neck\s+of\s+the\s+woods)\b|"
        r"我(?:现在|目前|如今|最近)?住(?:在)?哪|哪个城市|我家(?:现在)?在哪|住在什么地方|"
        r"我(?:现在|目前)?(?:住|在)的(?:城市|地方|那个城市)|我(?:现在)?所在的?城市|(?<!老)家附近|"
        r"我住的?附近", re.I)),
    ("employer", re.compile(
        r"\b(?:where\s+(?:do|am)|(?:remind|tell)\s+me\s+where)\s+i\s+(?:currently\s+|still\s+|now\s+)?work(?:ing)?\b|"
        r"\bwho\s+(?:do|am)\s+i\s+(?:currently\s+|still\s+|now\s+)?work(?:ing)?\s+for\b|"
        r"\b(?:which|what)\s+company\s+(?:do|am)\s+i\b|"
        r"\bmy\s+(?:current\s+|present\s+)?(?:employer|company)\b|"
        # "a LinkedIn headline that mentions the company I work for", "my current role
        # and company", "if someone asks where I work"
        r"\b(?:company|employer|firm)\s+(?:that\s+)?i\s+(?:currently\s+|now\s+)?work\s+(?:for|at)\b|"
        r"\b(?:role|job|title|position)\s+and\s+(?:my\s+)?(?:company|employer)\b|"
        r"(?<!near\s)(?<!to\s)(?<!from\s)(?<!around\s)(?<!of\s)\bwhere\s+i\s+(?:currently\s+|now\s+)?work\b|\bwho\s+i\s+(?:currently\s+|now\s+)?work\s+for\b|"
        r"在哪(?:家|个)公司|哪家公司(?:上班|工作|任职|的员工)|在哪(?:里|儿)?(?:工作|上班)|"
        r"我的(?:公司|东家)|(?:我)?现在的(?:公司|东家|单位)", re.I)),
    ("occupation", re.compile(
        r"\bwhat\s+(?:is|'s)\s+my\s+(?:job|occupation|profession)\b|"
        r"\bwhat\s+do\s+i\s+do\s+for\s+(?:a\s+)?(?:living|work)\b|\bmy\s+(?:occupation|profession)\b|"
        r"职业|做什么工作|干什么工作|是做什么的", re.I)),
    ("age", re.compile(r"\bhow\s+old\s+am\s+i\b|\bmy\s+age\b|我(?:现在|今年)?(?:多大|几岁|多少岁)|"
                       r"我的年龄", re.I)),
    ("diet", re.compile(
        r"\bmy\s+diet\b|\bdietary\b|\bam\s+i\s+(?:vegan|vegetarian|pescatarian)\b|"
        r"\bwhat\s+(?:do|can|don't|can't)\s+i\s+eat\b|"
        # "a dinner that fits the way I eat", "what diet am I following these days?"
        r"\b(?:how|the\s+way)\s+(?:i|we)(?:['’]m|\s+am|['’]re|\s+are)?\s+(?:currently\s+|now\s+)?"
        r"eat(?:ing)?\b|\bwhat\s+diet\b|饮食|忌口|我吃素吗", re.I)),
    ("name", re.compile(
        r"\bwhat(?:'s|\s+is)\s+my\s+name\b|\b(?:what|how)\s+should\s+you\s+(?:call|address)\s+me\b|"
        r"\bwhat\s+do\s+i\s+(?:like|want|prefer)\s+to\s+be\s+called\b|"
        r"怎么称呼我|叫我什么|我叫什么|我的名字", re.I)),
)


_SENTENCES = re.compile(r"(?<=[.!?。！？])\s*")
#: a sentence that asks by instructing: "Mention the company I work for."
_INSTRUCTION = re.compile(r"\s*(?:please\s+)?(?:mention|include|use|put|add|say|list|name|"
                          r"make\s+sure|remember|keep)\b", re.I)


def asked_attribute(query: str) -> str | None:
    """The profile attribute a question asks for, if it asks for one of the user's.

    A question such as "Which city do I live in?", "How old am I?" or 我在哪家公司工作？
    is answered by the user's current value of that attribute: recall puts the active
    record of that slot first (the structured half of the memory answers it; a
    session summary quoting the old value does not outrank it).

    >>> asked_attribute("Which city do I live in?"), asked_attribute("我多大了？")
    ('city', 'age')
    >>> asked_attribute("Which city should I visit in May?") is None
    True
    """
    # the question itself, not a reason given after it ("which gym am I a member of
    # now? my employer reimburses it" asks for the gym) - but an instruction beside it
    # asks too ("Can you draft a LinkedIn headline for me? Mention the company I work for.")
    simple = to_simplified(query)
    text = " ".join([question_part(simple), *(
        s for s in _SENTENCES.split(simple) if _INSTRUCTION.match(s))])
    for attribute, pattern in _ASKED:
        if pattern.search(text):
            return attribute
    return None
