"""Conflict policy: what happens when a new statement contradicts a kept one.

For structured slots the contradiction is exact: same user, scope, subject and
attribute, a different value. The default mode ``confirm`` keeps both, links
them as one conflict group and marks both ``pending_confirmation`` so the
planner asks the user; ``newest_wins`` supersedes at once. An explicit
correction from the user ("actually, not X but Y") always wins at once, keeping
the old record as ``superseded`` for history.

For free text, :func:`texts_contradict` gives the cheap offline signals the
write path and the consolidation job share: the same statement with different
numbers, or with the negation flipped. :func:`opposed` is the stricter test the
duplicate check applies before it merges two near-identical statements: a pair
that differs in negation (couldn't / could, don’t with a curly apostrophe, 不 / 没 /
别), in its numbers, in a named entity or in modality (might / will, 可能) is never
one memory, however close the embeddings are ("I couldn't afford an electric car"
and "I could afford an electric car" have cosine 0.93).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memstrata._text import has_negation, numbers, tokenize

__all__ = ["ConflictMode", "ConflictPolicy", "SlotMatch", "SlotVerdict", "negations", "opposed",
           "polarity_words", "slot_verdict", "texts_contradict"]

ConflictMode = Literal["confirm", "newest_wins"]


@dataclass(frozen=True, slots=True)
class ConflictPolicy:
    mode: ConflictMode = "confirm"

    def __post_init__(self) -> None:
        if self.mode not in ("confirm", "newest_wins"):
            raise ValueError("mode must be 'confirm' or 'newest_wins'")


@dataclass(frozen=True, slots=True)
class SlotMatch:
    """A live record holding the same subject/attribute."""

    record_id: str
    value: str | None
    same_value: bool
    conflict_group: str | None = None


@dataclass(frozen=True, slots=True)
class SlotVerdict:
    action: Literal["new", "reinforce", "supersede", "conflict"]
    reason: str
    targets: tuple[str, ...] = ()


def slot_verdict(
    matches: Sequence[SlotMatch], *, correction: bool, policy: ConflictPolicy
) -> SlotVerdict:
    """Decide a slot write against the live records of the same slot."""
    if not matches:
        return SlotVerdict("new", "no current value for this slot")
    different = [m for m in matches if not m.same_value]
    same = [m for m in matches if m.same_value]
    if same and not correction:
        why = "the slot already holds this value"
        if different:
            why += " (one side of an open conflict; it stays open until confirmed)"
        return SlotVerdict("reinforce", why, (same[0].record_id,))
    if correction:
        return SlotVerdict(
            "supersede",
            "explicit correction: the newest statement wins, the old value is kept as history",
            tuple(m.record_id for m in matches),
        )
    if policy.mode == "newest_wins":
        return SlotVerdict(
            "supersede",
            "conflict mode newest_wins: the new value replaces the old one",
            tuple(m.record_id for m in matches),
        )
    return SlotVerdict(
        "conflict",
        "contradicts the current value; both kept pending the user's confirmation",
        tuple(m.record_id for m in different),
    )


def texts_contradict(a: str, b: str, *, min_overlap: float = 0.5) -> str | None:
    """Why two similar statements contradict, or ``None``.

    Offline and cheap: the statements must share most of their content words;
    then differing numbers or a flipped negation is a contradiction. Paraphrases
    with nothing flipped are not.

    >>> texts_contradict("My budget is 2000 euros", "My budget is 3000 euros")
    'same statement with different numbers (2000 vs 3000)'
    >>> texts_contradict("I like spicy food", "I don't like spicy food")
    'same statement with the negation flipped'
    >>> texts_contradict("I like spicy food", "I really like spicy food") is None
    True
    >>> texts_contradict("I have two children", "I have three children")
    'same statement with different numbers (2 vs 3)'
    >>> texts_contradict("I prefer tea over coffee", "I prefer coffee over tea")
    'the preference is reversed'
    """
    a, b = _plain(a), _plain(b)
    words_a, words_b = set(tokenize(a)), set(tokenize(b))  # stemmed: "cat" = "cats"
    if not words_a or not words_b:
        return None
    overlap = len(words_a & words_b) / min(len(words_a), len(words_b))
    if overlap < min_overlap:
        return None
    nums_a, nums_b = _figures(a), _figures(b)
    if nums_a and nums_b and nums_a != nums_b:
        return f"same statement with different numbers ({', '.join(sorted(nums_a))} vs " \
               f"{', '.join(sorted(nums_b))})"
    if has_negation(a) != has_negation(b) or len(negations(a)) % 2 != len(negations(b)) % 2:
        return "same statement with the negation flipped"
    over_a, over_b = _PREFER_OVER.search(a), _PREFER_OVER.search(b)
    if over_a and over_b:
        pa = (over_a["a"].casefold(), over_a["b"].casefold())
        pb = (over_b["a"].casefold(), over_b["b"].casefold())
        if pa == pb[::-1] and pa[0] != pa[1]:
            return "the preference is reversed"
    return None


_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "once": "1", "twice": "2",
}
_PREFER_OVER = re.compile(
    r"\bprefer\s+(?P<a>.+?)\s+(?:over|to|rather than|than)\s+(?P<b>.+?)[.!]?$", re.IGNORECASE
)


def _figures(text: str) -> frozenset[str]:
    """Numbers in digits and in words ("two cups" and "2 cups" say the same)."""
    words = {_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.casefold())
             if w in _NUMBER_WORDS}
    return numbers(text) | words


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'",
                              "\uff07": "'"})


def _plain(text: str) -> str:
    """Curly and other apostrophes as ``'`` ("don’t" is "don't")."""
    return text.translate(_APOSTROPHES)


#: English negation words; any word ending in n't (couldn't, wouldn't, haven't ...)
_EN_NEGATION = re.compile(
    r"\b(?:not|no|never|nothing|nobody|none|neither|nor|nowhere|without|cannot|dont|doesnt|"
    r"didnt|cant|couldnt|wouldnt|shouldnt|isnt|arent|wasnt|werent|havent|hasnt|hadnt|"
    r"no longer)\b|\b\w+n't\b",
    re.IGNORECASE,
)
#: Chinese fixed phrases whose 不 / 没 negate nothing ("不错" is "good", "不过" is "but")
_ZH_NOT_NEGATION = re.compile(
    r"不过(?![敏期])|不错|不但|不仅|不管|不论|不久|差不多|对不起|了不起|不好意思|没关系|没事|不得不|"
    r"要不然|要不|不如|忍不住|不断|毫不|不少|无论|无聊|并且|"
    # 别 / 非 / 无 inside a word that negates nothing: 特别吵 is "very noisy"
    r"特别|分别|区别|差别|别人|别的|别处|告别|性别|级别|类别|识别|非常|无比"
)
_ZH_NEGATION = re.compile(r"没有|不|没|别|未|勿|莫|无|非")
#: verbs of aversion count as a negation of the liking verb ("I hate jazz" / "I like jazz")
_AVERSION = re.compile(r"\b(?:hate|hates|dislike|dislikes|detest|detests|avoid|avoids)\b|"
                       r"讨厌|厌恶|受不了", re.IGNORECASE)
_MODALS = re.compile(
    r"\b(?:can|could|may|might|(?<!\ba )must|should|would|will|shall|ought|need to|have to|"
    r"has to|"
    r"had to|going to|want to|wants to|plan to|plans to|maybe|perhaps|probably)\b|"
    r"(?:ca|wo|could|would|should|must|might)(?=n't)|可能|也许|大概|应该|必须|得要|"
    r"打算|想要|或许|能够|可以",
    re.IGNORECASE,
)
_NUMBER_WORDS_ALL = {
    **_NUMBER_WORDS, "zero": "0", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "hundred": "100", "thousand": "1000", "first": "1", "second": "2",
    "third": "3", "half": "0.5", "零": "0", "一": "1", "两": "2", "二": "2", "三": "3",
    "四": "4", "五": "5", "六": "6", "七": "7", "八": "8", "九": "9", "十": "10", "百": "100",
    "千": "1000", "万": "10000", "半": "0.5",
}
_ZH_NUMERAL = re.compile(r"[零一两二三四五六七八九十百千万半]"
                         r"(?=[个杯次天周年岁点只位份本张瓶块元斤公里小时分钟月号层楼辆套间台])")
_EN_ENTITY = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'&.-]*")
_NOT_ENTITIES = frozenset({"I", "I'm", "I've", "I'd", "I'll", "OK", "Ok"})


def negations(text: str) -> list[str]:
    """The negations of a text, in order (English words, Chinese 不/没/没有/别/未...,
    fixed phrases such as 不错 / 不过 removed)."""
    plain = _plain(text)
    found = [m.group(0).casefold() for m in _EN_NEGATION.finditer(plain)]
    zh = _ZH_NOT_NEGATION.sub(" ", plain)
    found += [m.group(0) for m in _ZH_NEGATION.finditer(zh)]
    return found


def polarity_words(text: str) -> int:
    """Negations plus verbs of aversion: odd means the statement is negative."""
    plain = _plain(text)
    return len(negations(plain)) + len(_AVERSION.findall(plain))


def _all_numbers(text: str) -> frozenset[str]:
    plain = _plain(text)
    found = set(numbers(plain))
    found |= {_NUMBER_WORDS_ALL[w] for w in re.findall(r"[a-z]+", plain.casefold())
              if w in _NUMBER_WORDS_ALL and not _CJK_RE.search(w)}
    found |= {_NUMBER_WORDS_ALL[m.group(0)] for m in _ZH_NUMERAL.finditer(plain)}
    return frozenset(found)


_CJK_RE = re.compile(r"[\u3400-\u9fff]")


def _entities(text: str) -> frozenset[str]:
    """Capitalised words not at the start of a sentence (names, places, brands)."""
    return frozenset(w.rstrip(".'") for w in _EN_ENTITY.findall(_plain(text).strip())
                     if w not in _NOT_ENTITIES)


def _modality(text: str) -> frozenset[str]:
    return frozenset(m.group(0).casefold() for m in _MODALS.finditer(_plain(text)))


def opposed(a: str, b: str) -> str | None:
    """Why two near-identical statements are not one memory, or ``None``.

    Checked in order: negation (the count of negations and aversion verbs differs),
    numbers, named entities, modality. Meant for the duplicate check, where the
    texts are already close (cosine above the duplicate threshold, or the same
    characters): it needs no overlap of its own.

    >>> opposed("I couldn't afford to buy an electric car this year.",
    ...         "I could afford to buy an electric car this year.")
    'they differ in negation'
    >>> opposed("I don’t like jazz", "I like jazz")
    'they differ in negation'
    >>> opposed("我喜欢喝咖啡", "我不喜欢喝咖啡")
    'they differ in negation'
    >>> opposed("I run 5 km every morning", "I run 10 km every morning")
    'they differ in numbers (5 vs 10)'
    >>> opposed("I fly with Lufthansa", "I fly with KLM")
    'they differ in a name (lufthansa vs klm)'
    >>> opposed("I might move to a bigger flat", "I will move to a bigger flat")
    'they differ in modality (might vs will)'
    >>> opposed("I really like spicy food", "I like spicy food") is None
    True
    """
    if polarity_words(a) != polarity_words(b):
        return "they differ in negation"
    na, nb = _all_numbers(a), _all_numbers(b)
    if na != nb:
        return f"they differ in numbers ({', '.join(sorted(na)) or 'none'} vs " \
               f"{', '.join(sorted(nb)) or 'none'})"
    ea = {e.casefold() for e in _entities(a)}
    eb = {e.casefold() for e in _entities(b)}
    if ea - eb and eb - ea:  # one name in place of another (not a name added or dropped)
        return f"they differ in a name ({', '.join(sorted(ea - eb))} vs " \
               f"{', '.join(sorted(eb - ea))})"
    ma, mb = _modality(a), _modality(b)
    if ma != mb:
        return f"they differ in modality ({', '.join(sorted(ma)) or 'none'} vs " \
               f"{', '.join(sorted(mb)) or 'none'})"
    return None
