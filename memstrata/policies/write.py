"""Write policy: only what is new, true and useful becomes long-term memory.

Pure: :func:`decide` sees one candidate plus what the store found about it
(the live records of its slot, exact and near duplicates) and returns a
:class:`Verdict`. The rules, in order:

1. temporary task state (``ephemeral``) stays in working memory;
2. an experience must be a *verified* outcome - hypotheses are not memories;
3. a candidate below ``min_confidence`` is dropped;
4. small talk and one-off moods ("this restaurant is awful", "thanks!") are
   not memorable - unless the caller gave a structured slot;
5. a structured slot goes through the conflict policy (reinforce / supersede /
   conflict);
6. an exact or near duplicate (cosine >= ``duplicate_similarity`` with nothing
   contradicting) reinforces the existing record instead of adding a copy - never
   when the two differ in negation, numbers, a named entity or modality
   (:func:`~memstrata.policies.conflict.opposed`: "I couldn't afford it" is not a
   copy of "I could afford it");
7. otherwise it is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memstrata._text import content_words, normalize
from memstrata.policies.conflict import (
    ConflictPolicy,
    SlotMatch,
    opposed,
    slot_verdict,
    texts_contradict,
)
from memstrata.types import MemoryType, Slot, Source, WriteOutcome

__all__ = ["Candidate", "Neighbour", "Verdict", "WritePolicy", "decide", "memorability", "screen"]

DEFAULT_MIN_CONFIDENCE = 0.5
DEFAULT_DUPLICATE_SIMILARITY = 0.92


@dataclass(frozen=True, slots=True)
class WritePolicy:
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    #: cosine similarity at which a same-type record counts as the same memory
    duplicate_similarity: float = DEFAULT_DUPLICATE_SIMILARITY
    #: drop small talk and one-off moods
    drop_small_talk: bool = True
    #: experiences must carry ``verified=True``
    require_verified_experience: bool = True
    #: embed each sentence of a record of two or more sentences too (up to eight), for
    #: the recall gate (``RetrievalPolicy.sentence_gate``); False halves the embedding
    #: work of long messages (a paid embedding API) and recall reads the whole only
    sentence_vectors: bool = True
    #: ``observe`` keeps a user's statement that no reader reads a fact from ("I've been
    #: really into pottery lately") as an inferred knowledge memory of its own at once, so
    #: it is recallable before the nightly ``summarize``; False leaves it to ``summarize``
    keep_statements: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError("min_confidence must be in [0, 1]")
        if not 0.0 < self.duplicate_similarity <= 1.0:
            raise ValueError("duplicate_similarity must be in (0, 1]")


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An existing live record close to the candidate."""

    record_id: str
    similarity: float
    content: str
    type: MemoryType
    exact: bool = False


@dataclass(frozen=True, slots=True)
class Candidate:
    """A would-be memory as the policy sees it."""

    content: str
    type: MemoryType
    confidence: float
    source: Source
    slot: Slot | None = None
    correction: bool = False
    verified: bool | None = None
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: WriteOutcome
    reason: str
    #: the record reinforced, superseded or conflicted with
    targets: tuple[str, ...] = ()


_SMALL_TALK_WORDS = frozenset(
    """
    hi hey hello hiya yo morning evening night afternoon good great nice cool awesome ok
    okay sure yes yeah yep no nope thanks thank thx ty cheers bye goodbye see later lol haha
    hahaha hmm um uh wow omg fine well alright right true indeed welcome please sorry np cya
    day doing going how what up sup 你好 谢谢 好的 哈哈 嗯 再见 早上好 晚安 拜拜 没事 可以 收到
    """.split()
)
_MOOD_PATTERNS = (
    re.compile(
        r"^(?:(?:this|that|the|these|those)(?: \w+){0,2}|it|today|tonight)"
        r"(?:'s| is| was| are| were| feels| looks| tastes)"
        r" (?:so |really |very |just |pretty |kind of |such an? )?"
        r"(?:awful|terrible|horrible|bad|great|amazing|awesome|boring|annoying|disgusting|"
        r"delicious|gross|lame|nice|cool|weird|crazy|insane|ridiculous|slow|fast)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:i'm|i am|im|i feel|feeling|i was)(?: so| really| very| a bit| kind of| super)?"
        r" (?:tired|bored|hungry|sleepy|exhausted|annoyed|angry|sad|happy|grumpy|stressed|"
        r"upset|cold|hot|sick)\b",
        re.IGNORECASE,
    ),
    re.compile(r"(?:今天|现在|这家|这个|好)(?:真|好|太|有点)?(?:累|难吃|无聊|烦|糟糕|开心|困|饿)"),
)
#: words that make an utterance durable even when it sounds like a mood
_DURABLE = re.compile(
    r"\b(?:always|never|usually|every|prefer|from now on|whenever|in general|anymore)\b|"
    r"以后|总是|一直|每次|不要|别再|偏好|喜欢",
    re.IGNORECASE,
)
_MOOD_MAX_WORDS = 10
_SMALL_TALK_OPENER = re.compile(
    r"^\W*(?:hi|hey|hello|hiya|yo|thanks|thank you|thx|ty|cheers|good (?:morning|evening|night|"
    r"afternoon|day)|bye|goodbye|see you|ok|okay|cool|lol|haha\w*|sure|great|nice|awesome|"
    r"你好|谢谢|好的|哈哈|再见|早上好|晚安)\b",
    re.IGNORECASE,
)
#: first-person statements carry facts even after a greeting ("hey, I moved to Paris")
_STATEMENT = re.compile(r"\b(?:i|i'm|im|i've|i'd|my|mine|we|our|me)\b|我", re.IGNORECASE)
_SMALL_TALK_MAX_WORDS = 7


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
#: a CJK near-duplicate may be the other sentence plus this many characters ("我对花生过敏")
_CJK_EXTRA_CHARS = 2


def _reads_the_same(a: str, b: str) -> bool:
    """Embedding similarity is only trusted for text the model can read.

    The English MiniLM maps most CJK characters to the unknown token, so two
    Chinese sentences can score ~1.0 whatever they say ("我最喜欢的颜色是蓝色" /
    "...红色"). For such text a near-duplicate must also read the same: the same
    characters, or one sentence is the other plus at most two characters.
    """
    if not (_CJK.search(a) or _CJK.search(b)):
        return True
    ca = [c for c in normalize(a) if c.isalnum()]
    cb = [c for c in normalize(b) if c.isalnum()]
    short, long_ = (ca, cb) if len(ca) <= len(cb) else (cb, ca)
    if len(long_) - len(short) > _CJK_EXTRA_CHARS:
        return False
    rest = iter(long_)
    return all(c in rest for c in short)


def memorability(text: str) -> tuple[bool, str]:
    """Is this worth keeping beyond the session? Returns (memorable, reason)."""
    words = content_words(text)
    informative = [w for w in words if w not in _SMALL_TALK_WORDS]
    if not informative:
        return False, "small talk: no informative words"
    stripped = text.strip()
    n_words = len(stripped.split())
    if (
        n_words <= _SMALL_TALK_MAX_WORDS
        and _SMALL_TALK_OPENER.search(stripped)
        and not _STATEMENT.search(stripped)
    ):
        return False, "small talk: a greeting or thanks with no statement about the user"
    if _DURABLE.search(stripped) is None and n_words <= _MOOD_MAX_WORDS:
        for pattern in _MOOD_PATTERNS:
            if pattern.search(stripped):
                return False, "a one-off mood or reaction, not a stable preference"
    return True, "informative"


def screen(candidate: Candidate, policy: WritePolicy) -> Verdict | None:
    """Rules 1-4, which need nothing but the candidate: a drop verdict, or None."""
    if candidate.ephemeral:
        return Verdict("dropped_not_memorable", "temporary task state stays in working memory")
    if (
        policy.require_verified_experience
        and candidate.type is MemoryType.EXPERIENCE
        and candidate.verified is not True
    ):
        return Verdict(
            "dropped_not_memorable",
            "an experience must be a verified outcome (verified=True); hypotheses are not kept",
        )
    if candidate.confidence < policy.min_confidence:
        return Verdict(
            "dropped_low_confidence",
            f"confidence {candidate.confidence:.2f} is below {policy.min_confidence:.2f}",
        )
    if candidate.slot is None and policy.drop_small_talk:
        memorable, why = memorability(candidate.content)
        if not memorable:
            return Verdict("dropped_not_memorable", why)
    return None


def decide(
    candidate: Candidate,
    *,
    slot_matches: Sequence[SlotMatch] = (),
    neighbours: Sequence[Neighbour] = (),
    policy: WritePolicy,
    conflicts: ConflictPolicy,
) -> Verdict:
    """Decide what happens to one candidate. See the module docstring for the rules."""
    early = screen(candidate, policy)
    if early is not None:
        return early
    if candidate.slot is not None:
        verdict = slot_verdict(slot_matches, correction=candidate.correction, policy=conflicts)
        if verdict.action == "reinforce":
            return Verdict("reinforced", verdict.reason, verdict.targets)
        if verdict.action == "supersede":
            return Verdict("corrected", verdict.reason, verdict.targets)
        if verdict.action == "conflict":
            return Verdict("conflict", verdict.reason, verdict.targets)
        return Verdict("written", f"new structured fact: {verdict.reason}")
    for neighbour in neighbours:
        if neighbour.exact:
            return Verdict(
                "reinforced", "exact duplicate of an existing memory", (neighbour.record_id,)
            )
    for neighbour in neighbours:
        if neighbour.type is not candidate.type:
            continue
        if neighbour.similarity < policy.duplicate_similarity:
            continue
        if texts_contradict(candidate.content, neighbour.content) is not None:
            continue
        if opposed(candidate.content, neighbour.content) is not None:
            continue
        if not _reads_the_same(candidate.content, neighbour.content):
            continue
        return Verdict(
            "reinforced",
            f"near duplicate (cosine {neighbour.similarity:.3f}) of an existing memory",
            (neighbour.record_id,),
        )
    return Verdict("written", "new, memorable and above the confidence threshold")
