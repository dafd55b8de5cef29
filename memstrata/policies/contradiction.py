"""Offline judgement of two statements of one user: duplicate, contradiction, update?

Pure and deterministic; the ``conflicts`` job uses it when no LLM is
configured (or past the LLM's token budget). Checks, in order:

1. **explicit correction** - the newer statement says "not X but Y" and the
   older one mentions X: the newer *updates* (supersedes) the older;
2. **contradiction signals** - the same single-valued attribute with another
   value (read by the fast extractor: city, favourite colour, employer, ...);
   the same statement with other numbers ("two cups" / "5 cups", "两杯" /
   "四杯"); the negation flipped ("I like jazz" / "I don't like jazz");
   a reversed preference ("tea over coffee" / "coffee over tea"); one value
   swapped inside an *exclusive* frame ("I usually take the train" / "I
   usually drive": usually, always, prefer, favourite, 通常, 最喜欢 ...).
   A contradiction whose newer side reads as a change ("actually", "now",
   "anymore", "moved", "from now on", "以后", "现在", "改成") is an *update*;
   otherwise it is flagged for the user to confirm;
3. **duplicates** - same type and a dense cosine at or above the threshold, or
   (for Chinese and other CJK text, where the English MiniLM embeds most
   characters as unknown) the same characters in order once preference verbs
   are normalised ("偏好" = "喜欢") and fillers dropped;
4. otherwise the two are **compatible** (both can be true).

Trade-off: these rules see the surface of the text; semantic contradictions
with no shared words ("I'm vegetarian" / "I eat meat every day") are missed -
that is what the LLM method is for. They are tuned on
``benchmarks/data/preference_updates.json`` (precision and recall in
``benchmarks/results/consolidation_scenarios.json``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Literal

from memstrata._text import STOP_WORDS, has_negation, normalize, tokenize
from memstrata.policies.conflict import negations, opposed, polarity_words
from memstrata.policies.extraction import extract, is_correction_text
from memstrata.types import Slot, normalize_slot_part

__all__ = [
    "FACT_TYPES", "Item", "PairVerdict", "Relation", "classify", "is_cjk", "is_newer_correction",
    "read_slots", "replaced_value", "stems",
]

#: types whose statements can contradict each other (summaries, lessons and events are
#: history: two of them can differ without either being wrong - they only deduplicate)
FACT_TYPES = frozenset({"preference", "profile", "knowledge", "rule"})

Relation = Literal["duplicate", "contradiction", "update", "compatible"]

_CJK_CHAR = re.compile(r"[\u3400-\u9fff]")
_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "twenty": "20", "thirty": "30", "fifty": "50", "hundred": "100", "once": "1", "twice": "2",
    "零": "0", "一": "1", "两": "2", "二": "2", "三": "3", "四": "4", "五": "5", "六": "6",
    "七": "7", "八": "8", "九": "9", "十": "10",
}
_ZH_NUMERAL = re.compile(
    r"[零一两二三四五六七八九十](?=[个杯次天周年岁点只位份本张瓶块元斤公里小时分钟口层楼辆套间台件双])"
)
_DIGITS = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])|(?<=[^\x00-\x7f])\d+(?:\.\d+)?|\d+(?=[^\x00-\x7f])"
)
_EN_WORD = re.compile(r"[a-z0-9@._'-]+|[^\x00-\x7f]")
_LEAD_FILLER = re.compile(r"^(?:please|kindly|ok(?:ay)?|so|and|also|well)\b[,\s]*", re.IGNORECASE)
#: phrases that mark a change; removed before comparing the statements themselves
_CUE_PHRASES = re.compile(
    r"\b(?:actually|from now on|going forward|in (?:the )?future|anymore|any more|"
    r"these days|nowadays|now|instead|correction|i meant|switched jobs|changed)\b[,:]?\s*|"
    r"其实|实际上|以后都|以后|今后|从现在开始|从今天起|现在|都|了|啦|改成|改为|换成",
    re.IGNORECASE,
)
_EN_SYNONYMS = {
    "prefer": "like", "love": "like", "enjoy": "like", "adore": "like", "likes": "like",
    "loves": "like", "prefers": "like", "enjoys": "like", "favourite": "favorite",
    "centre": "center", "i'm": "i am", "don't": "do not", "doesn't": "does not",
    "can't": "cannot", "won't": "will not", "i've": "i have",
}
_ZH_SYNONYMS = (
    ("比较喜欢", "喜欢"), ("更喜欢", "喜欢"), ("最喜欢", "喜欢"), ("偏好", "喜欢"),
    ("偏爱", "喜欢"), ("喜爱", "喜欢"), ("热爱", "喜欢"), ("位置", "座位"), ("位子", "座位"),
    ("习惯", ""), ("通常", ""), ("一般", ""), ("去", ""), ("坐", ""), ("的", ""),
)
#: frames in which one value excludes another ("I usually X" vs "I usually Y")
_EXCLUSIVE = re.compile(
    r"\b(?:prefer|preferred|favou?rite|usually|always|normally|typically|generally|only|"
    r"main|primary|default|budget|rather)\b|最喜欢|更喜欢|偏好|通常|一般|总是|一直|每次都|"
    r"(?<![一两二三四五六七八九十几\d])只|默认|预算",
    re.IGNORECASE,
)
_OVER = re.compile(r"\bprefer\s+(?P<a>.+?)\s+(?:over|to|rather than|than)\s+(?P<b>.+?)[.!]?$",
                   re.IGNORECASE)
_MIN_OVERLAP = 0.5
#: a swapped value is at most this many words (English) / characters (CJK) per side
_MAX_SWAP_WORDS = 3
_MAX_SWAP_CHARS = 5


@dataclass(frozen=True, slots=True)
class Item:
    """What the judge sees of one record."""

    content: str
    type: str
    slot: Slot | None = None
    #: the record was written as a correction (observe's extractor said so)
    correction: bool = False
    #: "not X but Y": X
    replaces: str | None = None


@dataclass(frozen=True, slots=True)
class PairVerdict:
    relation: Relation
    reason: str


def is_cjk(text: str) -> bool:
    """Mostly Chinese/Japanese characters (the English embedding cannot judge them)."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk > 0 and cjk >= len(re.findall(r"[A-Za-z]", text)) / 4


#: words without which the fast extractor reads no slot and no "not X but Y"
_READ_HINT = re.compile(
    r"\b(?:my|i'm|i am|im|live|living|lives|moved|relocated|based|located|from|work|working|"
    r"name|call|called|turned|years|speak|allergic|vegetarian|vegan|pescatarian|not)\b|"
    r"[\u3400-\u9fff]",
    re.IGNORECASE,
)


@lru_cache(maxsize=65536)
def _reading(text: str) -> tuple[tuple[Slot, ...], str | None]:
    """(slots, replaced value) the fast extractor reads from a text; cached, and skipped
    for texts without a hint word (most free text: the extractor costs ~40 us)."""
    if _READ_HINT.search(text) is None:
        return (), None
    found = extract(text)
    # a tentative slot ("I switched to Android") is kept only when the write side finds
    # the current value it names; offline there is no such check, so it is not read
    slots = tuple(e.slot for e in found if e.slot is not None and not e.tentative)
    replaced = next((e.replaces for e in found if e.replaces), None)
    return slots, replaced


def read_slots(text: str) -> tuple[Slot, ...]:
    """Single-valued attributes the fast extractor can read from a text."""
    return _reading(text)[0]


def replaced_value(text: str) -> str | None:
    """X of a "not X but Y" correction in the text, if the extractor reads one."""
    return _reading(text)[1]


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})
_NEGATING_CUES = re.compile(r"\b(?:no longer|not anymore|not any more)\b|不再", re.IGNORECASE)


def _strip_cues(text: str) -> str:
    """The statement without its change markers; "no longer" / "不再" keep their negation."""
    text = text.translate(_APOSTROPHES)  # "don’t" is "don't"
    text = _NEGATING_CUES.sub(lambda m: "不" if m.group(0) == "不再" else "not", text)
    return _LEAD_FILLER.sub("", _CUE_PHRASES.sub(" ", text)).strip()


@lru_cache(maxsize=65536)
def _tokens(text: str) -> tuple[str, ...]:
    """Comparable units: English words (synonyms folded, number words as digits) or
    CJK characters (synonyms folded, fillers dropped)."""
    stripped = _strip_cues(text)
    if is_cjk(stripped):
        folded = normalize(stripped)
        for old, new in _ZH_SYNONYMS:
            folded = folded.replace(old, new)
        return tuple(c for c in folded if not c.isspace() and c not in "，。！？,.!?；;、：:")
    out: list[str] = []
    for word in _EN_WORD.findall(normalize(stripped)):
        word = word.strip(".'")
        if not word:
            continue
        word = _EN_SYNONYMS.get(word, word)
        out.extend(_NUMBER_WORDS.get(w, w) for w in word.split())
    return tuple(out)


def _numbers(text: str) -> frozenset[str]:
    found = {m.group(0).replace(",", "") for m in _DIGITS.finditer(text)}
    for word in re.findall(r"[a-z]+", text.casefold()):
        if word in _NUMBER_WORDS:
            found.add(_NUMBER_WORDS[word])
    for m in _ZH_NUMERAL.finditer(text):
        found.add(_NUMBER_WORDS[m.group(0)])
    return frozenset(found)


_NEGATION_TOKENS = frozenset({"不", "没", "别", "never", "not", "no", "don't", "dont"})


def stems(text: str) -> frozenset[str]:
    """Stemmed content words (CJK unigrams and bigrams), number words as digits."""
    return frozenset(_NUMBER_WORDS.get(t, t) for t in tokenize(_strip_cues(text))
                     if t not in _NEGATION_TOKENS)


def _negated(text: str) -> bool:
    """A negation or aversion word, or a "non-" prefix ("a non-smoking room")."""
    stripped = _strip_cues(text)
    if is_cjk(stripped):
        return bool(negations(stripped)) or _ZH_AVERSION.search(stripped) is not None
    return has_negation(stripped) or bool(negations(stripped)) or \
        _NON.search(stripped) is not None


_NON = re.compile(r"\bnon-?[a-z]", re.IGNORECASE)


_SUBJECTS = frozenset({"i", "i'm", "i've", "we", "my", "our"})
_PERFECT = frozenset({"never", "not", "no", "already", "always", "just", "recently", "ever"})
_AUXILIARIES = frozenset(
    """do does did don't doesn't didn't dont not n't never no longer still also just really
    always usually normally often sometimes am i'm im 'm is are was were be can can't cannot
    could couldn't will won't would wouldn't should shouldn't must mustn't might may need
    needn't isn't aren't wasn't weren't didn't haven't hasn't hadn't absolutely definitely
    truly currently now actually""".split()
)
#: verbs of liking and disliking: one of each is the same predicate with opposite sign
_PREFERENCE_VERBS = frozenset(
    """like likes love loves enjoy enjoys prefer prefers adore adores hate hates dislike
    dislikes avoid avoids detest detests stand""".split()
)


def _predicate(text: str) -> str | None:
    """The main verb (or adjective) after the subject: "I don't really like X" -> like."""
    words: list[str] = re.findall(r"[a-z']+", _strip_cues(text).casefold())
    if not words or words[0] not in _SUBJECTS:
        return None
    rest = words[1:]
    for n, word in enumerate(rest):
        if word in _AUXILIARIES:
            continue
        if word in ("have", "has", "had") and n + 1 < len(rest) and rest[n + 1] in _PERFECT:
            continue  # "I have never smoked": the verb is "smoked"
        return word
    return None


def _same_predicate(a: str, b: str) -> bool:
    """Do the two statements say something about the same thing (CJK: assumed)?

    "I don't like private restaurants" does not negate "I plan private restaurants";
    "I can't stand spicy food" does negate "I enjoy spicy food".
    """
    if is_cjk(a) or is_cjk(b):
        return True
    pa, pb = _predicate(a), _predicate(b)
    if pa is None or pb is None:
        return True
    if pa == pb or tokenize(pa) == tokenize(pb):
        return True
    return pa in _PREFERENCE_VERBS and pb in _PREFERENCE_VERBS


def _object_words(text: str) -> set[str]:
    if is_cjk(text):
        return {c for c in _tokens(text) if c not in _NEGATION_TOKENS}
    predicate = _predicate(text)
    drop = set(tokenize(predicate)) if predicate else set()
    return set(stems(text)) - drop - {p for v in _PREFERENCE_VERBS for p in tokenize(v)}


def _same_object(a: str, b: str) -> bool:
    """Is what the shorter statement is about wholly in the longer one?

    "I don't like long bakeries" is not about "local bakeries at Rucudedi".
    """
    wa, wb = _object_words(a), _object_words(b)
    if not wa or not wb:
        return True
    short, long_ = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    shared = len(short & long_) / len(short)
    return shared >= (1.0 if len(short) <= 3 else 0.75)


def _overlap(a: str, b: str) -> float:
    if is_cjk(a) or is_cjk(b):  # characters: bigrams punish one inserted character twice
        wa = {c for c in _tokens(a) if c not in _NEGATION_TOKENS}
        wb = {c for c in _tokens(b) if c not in _NEGATION_TOKENS}
        if not wa or not wb:
            return 0.0
        return len(wa & wb) / min(len(wa), len(wb))
    wa, wb = set(stems(a)), set(stems(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def _swap(a: tuple[str, ...], b: tuple[str, ...], cjk: bool) -> tuple[str, str] | None:
    """The one value that differs between two otherwise identical statements."""
    if not a or not b or a == b:
        return None
    ops = [op for op in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    removed = [t for op in ops for t in a[op[1] : op[2]]]
    added = [t for op in ops for t in b[op[3] : op[4]]]
    if not removed or not added:
        return None
    shared = len(a) - len(removed)
    if shared < max(1, min(len(a), len(b)) // 2):
        return None
    if cjk:
        if len(removed) > _MAX_SWAP_CHARS or len(added) > _MAX_SWAP_CHARS:
            return None
    elif len(ops) != 1 or len(removed) > _MAX_SWAP_WORDS or len(added) > _MAX_SWAP_WORDS:
        return None
    sep = "" if cjk else " "
    return sep.join(removed), sep.join(added)


def _reversed_preference(a: str, b: str) -> bool:
    ma, mb = _OVER.search(_strip_cues(a)), _OVER.search(_strip_cues(b))
    if ma is None or mb is None:
        return False
    na = (normalize(ma["a"]), normalize(ma["b"]))
    nb = (normalize(mb["a"]), normalize(mb["b"]))
    return na[0] == nb[1] and na[1] == nb[0] and na[0] != na[1]


def _slot_conflict(a: Item, b: Item) -> str | None:
    slots_a = [a.slot] if a.slot is not None else list(read_slots(a.content))
    slots_b = [b.slot] if b.slot is not None else list(read_slots(b.content))
    for sa in slots_a:
        for sb in slots_b:
            if sa.key == sb.key and normalize_slot_part(sa.value) != normalize_slot_part(sb.value):
                return f"different {sa.attribute}: {sa.value!r} vs {sb.value!r}"
    return None


def contradiction(older: Item, newer: Item) -> str | None:
    """Why the two statements cannot both hold, or None."""
    slot = _slot_conflict(older, newer)
    if slot is not None:
        return slot
    overlap = _overlap(older.content, newer.content)
    nums_a, nums_b = _numbers(older.content), _numbers(newer.content)
    if nums_a and nums_b and nums_a != nums_b and overlap >= _MIN_OVERLAP:
        return f"same statement with different numbers ({', '.join(sorted(nums_a))} vs " \
               f"{', '.join(sorted(nums_b))})"
    if _negation_flip(older.content, newer.content):
        return "same statement with the negation flipped"
    if _reversed_preference(older.content, newer.content):
        return "the preference is reversed"
    cjk = is_cjk(older.content) or is_cjk(newer.content)
    swap = _swap(_tokens(older.content), _tokens(newer.content), cjk)
    if (_PAST.search(older.content) is None) != (_PAST.search(newer.content) is None):
        return None  # "I used to smoke" does not contradict "I don't smoke now"
    if swap is not None and _antonyms(*swap):
        return f"same statement with the opposite word ({swap[0]!r} vs {swap[1]!r})"
    if swap is not None:
        exclusive = _EXCLUSIVE.search(older.content) or _EXCLUSIVE.search(newer.content)
        if exclusive or newer.correction or is_correction_text(newer.content):
            return f"same statement with a different value ({swap[0]!r} vs {swap[1]!r})"
    return None


#: clause boundaries: a negation in another clause does not negate the statement
#: ("I take the train because I don't like driving" does not deny "I take the train")
_EN_CLAUSES = re.compile(
    r"\s*[,;:()\u2014]\s*|\s+-\s+|\s+(?:because|since|so that|so|but|though|although|unless|"
    r"while|whereas|as long as|as|if|when|and then|which|who)\s+",
    re.IGNORECASE,
)
_ZH_CLAUSES = re.compile(
    r"[，,；;：:（）()]|因为|所以|不过(?![敏期])|但是|但|而是|而且|因此|虽然|可是|如果|只要|这样"
)
#: a past habit is not the present one ("I used to smoke" / "I don't smoke")
_PAST = re.compile(r"\b(?:used to|formerly|in the past|as a (?:kid|child|student)|years ago|"
                   r"back then|once)\b|以前|过去|小时候|曾经|从前|当年", re.IGNORECASE)
_ZH_NEGATION_CORE = re.compile(
    r"没有|从来不|从不|不再|已经|不|没|别|未|再|从|有|[一两二三四五六七八九十几]?[个只辆台本张件位条双]"
)
_ZH_AVERSION = re.compile(r"讨厌|厌恶|受不了")


def _clauses(text: str) -> list[str]:
    splitter = _ZH_CLAUSES if is_cjk(text) else _EN_CLAUSES
    parts = [p.strip() for p in splitter.split(_strip_cues(text))]
    return [p for p in parts if len(p) >= 2] or [text]


def _clause_negated(clause: str) -> bool:
    """Negative polarity: an odd count of negations and aversion verbs ("I shouldn't
    avoid dairy" is positive), or a "non-" prefix."""
    if is_cjk(clause):
        return bool(negations(clause)) or _ZH_AVERSION.search(clause) is not None
    return (polarity_words(clause) + (_NON.search(clause) is not None)) % 2 == 1


def _cjk_same_but_negation(a: str, b: str) -> bool:
    """The same characters once negations and fillers are removed (at most two extra:
    "我养了一只狗" / "我没养狗")."""
    ca = _ZH_NEGATION_CORE.sub("", "".join(_tokens(a)))
    cb = _ZH_NEGATION_CORE.sub("", "".join(_tokens(b)))
    short, long_ = (ca, cb) if len(ca) <= len(cb) else (cb, ca)
    if len(short) < 2 or len(long_) - len(short) > 2:
        return False
    rest = iter(long_)
    return all(c in rest for c in short)


def _negation_flip(a: str, b: str) -> bool:
    """Is one clause of ``a`` the same statement as one clause of ``b`` with the negation
    flipped? Negations in other clauses (an incidental "not", a 不 in a reason clause)
    do not count; nor does a past habit against the present."""
    for ca in _clauses(a):
        for cb in _clauses(b):
            if _clause_negated(ca) == _clause_negated(cb):
                continue
            if (_PAST.search(ca) is None) != (_PAST.search(cb) is None):
                continue
            if is_cjk(ca) or is_cjk(cb):
                if _cjk_same_but_negation(ca, cb):
                    return True
            elif _overlap(ca, cb) >= _MIN_OVERLAP and _same_predicate(ca, cb) \
                    and _same_object(ca, cb):
                return True
    return False


_ANTONYM_PAIRS = (
    ("hot", "cold"), ("hot", "iced"), ("warm", "cold"), ("quiet", "noisy"), ("quiet", "loud"),
    ("early", "late"), ("short", "long"), ("introvert", "extrovert"), ("front", "back"),
    ("like", "hate"), ("like", "dislike"), ("enjoy", "avoid"), ("like", "avoid"),
    ("cheap", "expensive"), ("always", "never"), ("often", "rarely"), ("big", "small"),
    ("large", "small"), ("light", "heavy"), ("fast", "slow"), ("married", "single"),
    ("allowed", "forbidden"), ("before", "after"), ("morning", "evening"),
    ("morning", "night"), ("accept", "refuse"), ("agree", "disagree"), ("up", "down"),
    ("more", "less"), ("sweet", "savoury"), ("easy", "hard"), ("easy", "difficult"),
    ("safe", "dangerous"), ("healthy", "unhealthy"), ("happy", "unhappy"), ("near", "far"),
    ("close", "far"), ("first", "last"), ("win", "lose"), ("old", "new"), ("old", "young"),
    ("start", "stop"), ("open", "closed"), ("full", "empty"), ("strong", "weak"),
    ("早", "晚"), ("冷", "热"), ("短", "长"), ("内", "外"), ("喜欢", "讨厌"), ("喜欢", "厌恶"),
    ("总是", "从不"), ("贵", "便宜"), ("大", "小"), ("快", "慢"), ("安静", "吵"),
    ("安静", "热闹"), ("前", "后"), ("多", "少"), ("胖", "瘦"), ("高", "矮"), ("轻", "重"),
    ("支持", "反对"), ("同意", "反对"), ("近", "远"), ("新", "旧"), ("甜", "咸"),
    ("早上", "晚上"), ("白天", "晚上"), ("上午", "下午"), ("容易", "难"),
)
_ANTONYMS = frozenset(_ANTONYM_PAIRS) | frozenset((b, a) for a, b in _ANTONYM_PAIRS)


def _antonyms(removed: str, added: str) -> bool:
    """Is the swapped word the opposite of the old one ("early" / "late", "早" / "晚")?"""
    ra, aa = removed.strip().casefold(), added.strip().casefold()
    if (ra, aa) in _ANTONYMS:
        return True
    if is_cjk(ra) or is_cjk(aa):
        return False
    sa, sb = " ".join(tokenize(ra)), " ".join(tokenize(aa))
    return (sa, sb) in _ANTONYMS


def _value_swap(removed: str, added: str, cjk: bool) -> bool:
    """Does the swapped part change a value (not just a wording)?"""
    if cjk:
        return bool(set(removed) - set(added)) and bool(set(added) - set(removed))
    ra = set(tokenize(removed)) - _NEGATION_TOKENS
    aa = set(tokenize(added)) - _NEGATION_TOKENS
    return bool(ra - aa) and bool(aa - ra)


def _lcs(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    return sum(block.size for block in SequenceMatcher(a=a, b=b, autojunk=False)
               .get_matching_blocks())


def _lexical_duplicate(a: str, b: str) -> bool:
    """Same tokens, or one statement is the other plus filler (stop words in English,
    at most two characters in CJK text: "我花生过敏" / "我对花生过敏")."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return False
    if ta == tb:
        return True
    short, long_ = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    if len(short) < 3 or _lcs(short, long_) != len(short):
        return False
    added = list(long_)
    for token in short:
        added.remove(token)
    if is_cjk(a) or is_cjk(b):
        return len(added) <= 2
    return all(t in STOP_WORDS for t in added)


def is_newer_correction(newer: Item) -> bool:
    return newer.correction or is_correction_text(newer.content)


def classify(older: Item, newer: Item, *, cosine: float,
             duplicate_similarity: float) -> PairVerdict:
    """Relation of two statements of one user and scope, ``older`` said first."""
    replaced = newer.replaces or replaced_value(newer.content)
    if replaced and normalize(replaced) in normalize(older.content):
        return PairVerdict("update", f"the newer statement corrects {replaced!r}")
    why = contradiction(older, newer)
    if why is not None:
        if is_newer_correction(newer):
            return PairVerdict("update", f"explicit change: {why}")
        return PairVerdict("contradiction", why)
    nums_a, nums_b = _numbers(older.content), _numbers(newer.content)
    if (nums_a or nums_b) and nums_a != nums_b:
        return PairVerdict("compatible", "other numbers: not the same statement")
    if _negated(older.content) != _negated(newer.content):
        return PairVerdict("compatible", "one is negated: not the same statement")
    cjk = is_cjk(older.content) or is_cjk(newer.content)
    swap = _swap(_tokens(older.content), _tokens(newer.content), cjk)
    if swap is not None and _value_swap(*swap, cjk):
        # "I like red wine" / "I like white wine": the same frame holding another value
        return PairVerdict("compatible", f"another value ({swap[0]!r} vs {swap[1]!r})")
    if older.type == newer.type and opposed(older.content, newer.content) is None:
        if not cjk and cosine >= duplicate_similarity:
            return PairVerdict("duplicate", f"same meaning (cosine {cosine:.2f})")
        if _lexical_duplicate(older.content, newer.content):
            return PairVerdict("duplicate", "same statement in other words")
    return PairVerdict("compatible", "both can hold")
