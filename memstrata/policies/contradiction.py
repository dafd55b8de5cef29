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
import warnings
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
_LEAD_FILLER = re.compile(r"^(?:please|kindly|ok(?:ay)?|so|and|also|well|honestly|frankly|tbh|"
                          r"to be honest|personally)\b[,\s]*", re.IGNORECASE)
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


def forget_cached() -> None:
    """Drop every reading this module cached by text (called when a user's memories are
    forgotten: no copy of what they said may stay in the process)."""
    for cached in (_reading, _tokens, _measured, _numerals, _stable_facts):
        cached.cache_clear()


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
    if is_cjk(text):  # 我養了一隻狗 is 我养了一只狗
        from memstrata.policies._extraction_zh import to_simplified

        text = to_simplified(text)
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


_TENS_WORDS = {w: 10 * n for n, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if n >= 2}
_COMPOUND_NUMBER = re.compile(
    rf"\b(?P<t>{'|'.join(_TENS_WORDS)})[- ](?P<u>one|two|three|four|five|six|seven|eight|nine)\b",
    re.I)


def _compounds_as_digits(text: str) -> str:
    """"twenty-nine" as 29, not 20 and 9."""
    return _COMPOUND_NUMBER.sub(lambda m: str(_TENS_WORDS[m["t"].lower()]
                                              + int(_NUMBER_WORDS[m["u"].lower()])), text)


def _numbers(text: str) -> frozenset[str]:
    text = _compounds_as_digits(text)
    found = {m.group(0).replace(",", "") for m in _DIGITS.finditer(text)}
    for word in re.findall(r"[a-z]+", text.casefold()):
        if word in _NUMBER_WORDS:
            found.add(_NUMBER_WORDS[word])
    for m in _ZH_NUMERAL.finditer(text):
        found.add(_NUMBER_WORDS[m.group(0)])
    return frozenset(found)


#: what a number measures, read from the word bound to it (after it, or the currency or the
#: noun just before it): "$300" / "1,200 bucks" are money, "3rd floor" / "14th floor" a
#: floor, 两个孩子 / 三个娃 children, 身高175 / 一米六八 a height
_MEASURES: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    ("money", re.compile(r"^\s*(?:k\b|bucks|dollars|usd|euros?|pounds|quid|grand|元|块|万|多块|"
                         r"多元)", re.I),
     re.compile(r"(?:[$€£¥]|\b(?:salary|make|earn|paid|pay|cost|costs|rent|is|was)\b\s*[$€£¥]?|"
                r"月薪|年薪|工资|收入|房租|月租|花了|买的|价格|要)\s*$", re.I)),
    ("floor", re.compile(r"^\s*(?:st|nd|rd|th)?\s*(?:floor|storey|story)\b|^\s*(?:楼|层)", re.I),
     re.compile(r"(?!)")),
    ("children", re.compile(r"^\s*(?:kids?|children|child|sons?|daughters?)\b"
                            r"|^\s*个?(?:孩子|娃|小孩|儿子|女儿)", re.I), re.compile(r"(?!)")),
    ("height", re.compile(r"^\s*(?:cm|centimet(?:er|re)s)\b|^\s*(?:厘米|公分)|^(?:'|\u2032)\s*\d|"
                          r"^\s*(?:ft|feet|foot)\b", re.I),
     re.compile(r"(?:身高|\btall\b|\bheight\b)\s*(?:is\s*)?$", re.I)),
    ("weight", re.compile(r"^\s*(?:kg|kilos?|lbs?|pounds)\b|^\s*(?:公斤|斤)", re.I),
     re.compile(r"(?:体重|\bweigh\b)\s*$", re.I)),
    ("age", re.compile(r"^\s*-?\s*(?:years?[\s-]+old|yo)\b|^\s*(?:岁|周岁)", re.I),
     re.compile(r"\b(?:i'm|i\s+am|i\s+just\s+turned|turning)\s*$", re.I)),
)
#: an English number word, read as digits where it measures something
_MEASURE_NUMBER_WORD = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|fifty)"
    r"\b", re.I)
#: what may follow "I'm 34" for the number to be an age
_AGE_END = re.compile(r"\s*(?:[,.;!?)]|$|and\b|now\b|but\b|so\b|this\b|next\b|in\b)", re.I)
#: words that only say what is measured; they do not make two statements about one thing
_MEASURE_WORDS = frozenset(
    "salary make earn paid pay cost costs rent floor tall height weigh kid kids child children "
    "year month week bucks dollars".split())


#: facts with one value for life, read from their frames: where one was born, the
#: birthday, the blood type, 老家 ("I was born in Dublin" / "I was born in Manchester")
_STABLE_EN: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("birthplace", re.compile(r"\b(?i:i\s+was\s+born\s+(?:and\s+raised\s+)?in)\s+"
                              r"(?P<v>[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)")),
    ("birthday", re.compile(r"\bmy\s+(?:birthday|bday|b-day)(?:'s|\s+is)\s+(?:on\s+|in\s+)?"
                            r"(?:the\s+)?(?P<v>[A-Za-z]+\.?\s+\d{1,2}|\d{1,2}(?:st|nd|rd|th)?\s+"
                            r"(?:of\s+)?[A-Za-z]+|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
                            r"[a-z]*\b)", re.I)),
    ("spouse's name", re.compile(r"\b(?i:my\s+(?:wife|husband|spouse)(?:'?s\s+name\s+is|\s+is\s+"
                                 r"(?:called|named))?)\s+(?P<v>[A-Z][a-z]+)\b")),
    ("only car", re.compile(r"\b(?i:the\s+only\s+car\s+i\s+(?:own|have|drive)\s+is|my\s+"
                            r"(?:one\s+and\s+)?only\s+car\s+is)\s+(?:an?\s+)?(?P<v>[^,.;!?]+)")),
    ("blood type", re.compile(r"\bblood\s+type\s+(?:is\s+)?(?P<v>(?:AB|A|B|O)[+-]?)\b"
                              r"|\b(?P<v2>(?:AB|A|B|O)[+-]?)\s+blood\b")),
    ("native language", re.compile(r"\b(?i:my\s+(?:first\s+language|mother\s+tongue|native\s+"
                                   r"language)\s+is)\s+(?P<v>[A-Z][a-z]+)")),
    ("star sign", re.compile(r"\b(?i:i'm\s+an?|i\s+am\s+an?|my\s+(?:star\s+|zodiac\s+)?sign\s+is)"
                             r"\s+(?P<v>Aries|Taurus|Gemini|Cancer|Leo|Virgo|Libra|Scorpio|"
                             r"Sagittarius|Capricorn|Aquarius|Pisces)\b")),
)
_STABLE_ZH: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("birthplace", re.compile(r"在(?P<v>[\u4e00-\u9fff]{2,6}?)出生"
                              r"|(?:出生在|出生于|生在)(?P<v3>[\u4e00-\u9fff]{2,6}?)(?:$|[，,。的])"
                              r"|(?P<v2>[\u4e00-\u9fff]{2,4})出生的?")),
    ("hometown", re.compile(r"老家(?:在|是)(?P<v>[\u4e00-\u9fff]{2,6}?)(?:的|$|[，,。])")),
    ("blood type", re.compile(r"血型是?(?P<v>AB|A|B|O)型?|(?P<v2>AB|A|B|O)型血")),
    ("birthday", re.compile(r"生日(?:是|在)?(?P<v>\d{1,2}月(?:\d{1,2}[日号])?)")),
    ("star sign", re.compile(r"(?:星座是|我是)(?P<v>[\u4e00-\u9fff]{1,3})座")),
    ("spouse's name", re.compile(r"我(?:老婆|老公|妻子|丈夫|太太|先生|爱人)(?:的)?(?:名字)?叫"
                                 r"(?P<v>[\u4e00-\u9fff]{2,3})")),
    ("only car", re.compile(r"唯一的车是(?:一?辆)?(?P<v>[\u4e00-\u9fffA-Za-z]{2,8})")),
    ("zodiac animal", re.compile(r"属(?P<v>[鼠牛虎兔龙蛇马羊猴鸡狗猪])")),
    ("native language", re.compile(r"(?:母语|第一语言)是(?P<v>[\u4e00-\u9fff]{2,5}?)(?:语|话|文)")),
)


@lru_cache(maxsize=65536)
def _stable_facts(text: str) -> dict[str, str]:
    if is_cjk(text):  # (not _strip_cues: its 都 would take 成都 apart)
        from memstrata.policies._extraction_zh import to_simplified

        text, patterns = to_simplified(text), _STABLE_ZH
    else:
        patterns = _STABLE_EN
    out: dict[str, str] = {}
    for name, pattern in patterns:
        # numerals as digits only for a date (cn2an also turns 唯一 into 唯1)
        m = pattern.search(_numerals(text) if name == "birthday" else text)
        if m:
            value = next(v for k, v in m.groupdict().items() if v)
            value = re.sub(r"^(?:我|是)*在?", "", value)  # 我是在高雄出生的: 高雄
            out[name] = " ".join(value.casefold().split())
    return out


#: cn2an warns on stderr about a numeral it cannot read (the 万 of 万能血型), quoting the
#: user's text; such a numeral is left as written, and nothing goes to stderr
warnings.filterwarnings("ignore", category=UserWarning, module=r"cn2an(?:\.|$)")
_ZH_NUMERAL_CHAR = re.compile(r"[零〇一二两三四五六七八九十百千万亿米]")
_MONTHS = {m: n for n, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}


def _same_value(name: str, a: str, b: str) -> bool:
    """The same value said two ways ("March 14" / "14th of March"; 四川成都 / 成都)."""
    if name == "birthday":
        # a month alone ("in October", 在十一月) is compared with the month of a full date
        def day(v: str) -> tuple[int | None, int | None]:
            if is_cjk(v):
                m = re.match(r"(\d+)月(?:(\d+))?", v)
                return (None, None) if m is None else \
                    (int(m[1]), None if m[2] is None else int(m[2]))
            month = next((n for m, n in _MONTHS.items() if re.search(rf"\b{m}", v)), None)
            digits = re.search(r"\d+", v)
            return month, None if digits is None else int(digits.group(0))
        (ma, da), (mb, db) = day(a), day(b)
        if ma is None or mb is None:
            return a == b
        return ma == mb and (da is None or db is None or da == db)
    return a == b or a.endswith(b) or b.endswith(a)


def _stable_conflict(a: str, b: str) -> str | None:
    """A fact with one value for life, given two values: where one was born, the
    birthday, the blood type, 老家."""
    fa, fb = _stable_facts(a), _stable_facts(b)
    for name in fa.keys() & fb.keys():
        if not _same_value(name, fa[name], fb[name]):
            return f"a different {name} ({fa[name]!r} vs {fb[name]!r})"
    return None


@lru_cache(maxsize=65536)
def _measured(text: str) -> dict[str, frozenset[str]]:
    """The numbers of ``text`` by what they measure."""
    text = _numerals(text)
    if is_cjk(text):  # 我今年都45了: an age
        text = re.sub(r"今年(都|已经)?(\d{1,3})了", r"今年\1\2岁了", text)
    else:  # "three kids" is 3 kids
        text = _compounds_as_digits(text)
        text = _MEASURE_NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0).lower()], text)
    out: dict[str, set[str]] = {}
    for m in re.finditer(r"\d+(?:[.,]\d+)*", text):
        value = m.group(0).replace(",", "")
        before, after = text[max(0, m.start() - 12):m.start()], text[m.end():m.end() + 12]
        for name, follows, precedes in _MEASURES:
            if follows.search(after) or precedes.search(before):
                if name == "age" and not follows.search(after) \
                        and not _AGE_END.match(after):
                    continue  # "I'm 5 minutes away" is no age
                if name == "weight" and _LIFTED.search(
                        text[max(0, m.start() - 30):m.end() + 30]):
                    continue  # "I pulled 100 kg on the deadlift" is no body weight
                if name == "money" and re.match(r"\s*k\b", after, re.I):
                    value = str(round(float(value) * 1000))
                out.setdefault(name, set()).add(value)
                break
    return {k: frozenset(v) for k, v in out.items()}


#: a weight lifted or carried, not the body's
_LIFTED = re.compile(r"\b(?:dead-?lift\w*|squat\w*|bench\w*|lift\w*|pull(?:ed|s)?|press\w*|"
                     r"carr(?:y|ied|ies)|row(?:ed|s)?)\b|硬拉|深蹲|卧推|举|扛|背着", re.I)


@lru_cache(maxsize=65536)
def _numerals(text: str) -> str:
    """Chinese numerals as digits (cn2an: 一万五 -> 15000), a height 1米68 as 168."""
    if not is_cjk(text) or not _ZH_NUMERAL_CHAR.search(text):
        return text
    try:
        import cn2an

        text = str(cn2an.transform(text, "cn2an"))
    except (ValueError, KeyError, IndexError):  # a numeral it cannot read is left as written
        pass
    return re.sub(r"(?<!\d)([12])米(\d{1,2})(?!\d)", lambda m: f"{m[1]}{int(m[2]):02d}", text)


def _measure_conflict(a: str, b: str) -> str | None:
    """Two statements of the same thing with a different measure ("I paid $300 for my bike" /
    "My bike cost me 1,200 bucks"; 我月薪一万五 / 我每个月工资八千块): the same kind of number,
    a different value, and a word of the thing in common beyond the words of measuring."""
    ma, mb = _measured(a), _measured(b)
    for name in ma.keys() & mb.keys():
        if ma[name] & mb[name]:
            continue
        # the user's own measures need no thing in common; someone else's (我儿子满五岁了
        # beside 我今年三十岁) are not the user's, whatever else the two share
        # (the children counted are someone else named: a daughter, "they")
        other = _OTHER_PERSON.search(_JOINT.sub("", a)) or _OTHER_PERSON.search(_JOINT.sub("", b))
        if name in ("height", "weight", "age") and other:
            continue
        if (name in ("height", "weight", "age", "children") and not other) \
                or _thing_overlap(a, b):
            return f"a different {name} ({', '.join(sorted(ma[name]))} vs " \
                   f"{', '.join(sorted(mb[name]))})"
    return None


_OTHER_PERSON = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:sister|brother|mom|mum|mother|dad|father|friend|son|"
    r"daughter|cousin|wife|husband|partner|boss|colleague|neighbou?r|roommate)s?\b|"
    r"\b(?:he|she|they)\b|他|她|姐|哥|弟|妹|朋友|同事|老公|老婆|爸|妈|儿子|女儿|大儿|小儿", re.I)


#: the user with someone else as one subject ("My husband and I have two children",
#: 我和老公有两个孩子): the user's own measure, not another person's
_JOINT = re.compile(r"\b(?:my|our)\s+\w+\s+and\s+i\b|\bi\s+and\s+my\s+\w+\b|"
                    r"我(?:和|跟)(?:老公|老婆|爱人|先生|太太|丈夫|妻子|对象)", re.I)


_ZH_MEASURING = re.compile(r"[\d\W]|我|的|了|是|有|个|每|月|块|元|花|工资|月薪|收入")


def _thing_overlap(a: str, b: str) -> bool:
    """A content word in common that is not a number or a word of measuring."""
    if is_cjk(a) or is_cjk(b):
        ca = set(_ZH_MEASURING.sub("", _numerals(a)))
        cb = set(_ZH_MEASURING.sub("", _numerals(b)))
        return bool(ca & cb) or bool(re.search(r"工资|月薪|收入|年薪", a)
                                     and re.search(r"工资|月薪|收入|年薪", b))
    wa = {w for w in stems(a) if not w[0].isdigit() and w not in _MEASURE_WORDS}
    wb = {w for w in stems(b) if not w[0].isdigit() and w not in _MEASURE_WORDS}
    return bool(wa & wb)


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
    truly currently now actually ever already even""".split()
)
#: verbs of liking and disliking: one of each is the same predicate with opposite sign
_PREFERENCE_VERBS = frozenset(
    """like likes love loves enjoy enjoys prefer prefers adore adores hate hates dislike
    dislikes avoid avoids detest detests stand""".split()
)


#: a time said before the subject ("As a kid I could already swim"): not the subject
_WHEN_LEAD = re.compile(r"^(?:as\s+an?\s+(?:kid|child|teen(?:ager)?|student)|growing\s+up|"
                        r"when\s+i\s+was\s+(?:a\s+)?(?:kid|child|little|young(?:er)?))[,\s]+")


def _predicate(text: str) -> str | None:
    """The main verb (or adjective) after the subject: "I don't really like X" -> like."""
    words: list[str] = re.findall(r"[a-z']+", _WHEN_LEAD.sub("", _strip_cues(text).casefold()))
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
    return (pa in _PREFERENCE_VERBS and pb in _PREFERENCE_VERBS) or \
        (pa in _POSSESSION_VERBS and pb in _POSSESSION_VERBS)


#: verbs of having: "I've got a car" and "I don't own a car" say the same of the car
_POSSESSION_VERBS = frozenset("have has got own owns".split())


def _object_words(text: str) -> set[str]:
    text = _HOW_MUCH.sub(" ", text)
    if is_cjk(text):
        return {c for c in _tokens(text) if c not in _NEGATION_TOKENS}
    predicate = _predicate(text)
    drop = set(tokenize(predicate)) if predicate else set()
    return set(stems(text)) - drop - {p for v in _PREFERENCE_VERBS for p in tokenize(v)} \
        - _FUNCTION_STEMS


#: how much a negation denies, not what ("I don't speak a word of Spanish")
_HOW_MUCH = re.compile(r"\b(?:a\s+(?:single\s+)?word\s+of|at\s+all|any)\b", re.I)

#: auxiliaries and how often, as the stemmer leaves them ("I've been to Japan twice" and "I
#: haven't ever been to Japan" are about Japan)
_FUNCTION_STEMS = frozenset(
    {w.replace("'", "") for w in _AUXILIARIES} | {"ive", "im", "id", "ill", "havent", "hasnt",
                                                  "twice", "2", "1", "once", "ever"})


def _same_things(a: str, b: str) -> bool:
    """The same content words once auxiliaries and how often are set aside."""
    wa, wb = set(stems(a)) - _FUNCTION_STEMS, set(stems(b)) - _FUNCTION_STEMS
    return bool(wa) and wa == wb


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
            if sa.key == sb.key and normalize_slot_part(sa.value) != normalize_slot_part(sb.value) \
                    and not _same_value(sa.attribute, sa.value.casefold(), sb.value.casefold()):
                return f"different {sa.attribute}: {sa.value!r} vs {sb.value!r}"
    return None


def contradiction(older: Item, newer: Item) -> str | None:
    """Why the two statements cannot both hold, or None."""
    slot = _slot_conflict(older, newer)
    if slot is not None:
        return slot
    overlap = _overlap(older.content, newer.content)
    nums_a, nums_b = _numbers(older.content), _numbers(newer.content)
    # a number more ("我的车是一台Model 3" beside "我开的是特斯拉Model 3") is no other number
    if nums_a - nums_b and nums_b - nums_a and overlap >= _MIN_OVERLAP \
            and not _OTHER_PERSON.search(older.content) and not _OTHER_PERSON.search(newer.content):
        return f"same statement with different numbers ({', '.join(sorted(nums_a))} vs " \
               f"{', '.join(sorted(nums_b))})"
    measured = _measure_conflict(older.content, newer.content)
    if measured is not None:
        return measured
    stable = _stable_conflict(older.content, newer.content)
    if stable is not None:
        return stable
    if _negation_flip(older.content, newer.content):
        return "same statement with the negation flipped"
    denied = _category_denial(older.content, newer.content)
    if denied is not None:
        return f"one of them has {denied}, the other none"
    if _reversed_preference(older.content, newer.content):
        return "the preference is reversed"
    cjk = is_cjk(older.content) or is_cjk(newer.content)
    swap = _swap(_tokens(older.content), _tokens(newer.content), cjk)
    if (_PAST.search(older.content) is None) != (_PAST.search(newer.content) is None):
        return None  # "I used to smoke" does not contradict "I don't smoke now"
    if swap is not None and _antonyms(*swap):
        return f"same statement with the opposite word ({swap[0]!r} vs {swap[1]!r})"
    opposite = _opposite_quality(older.content, newer.content)
    if opposite is not None:
        return f"the opposite said of the same subject ({opposite[0]!r} vs {opposite[1]!r})"
    if swap is not None and not _other_verb(*swap):
        exclusive = _EXCLUSIVE.search(older.content) or _EXCLUSIVE.search(newer.content)
        if exclusive or newer.correction or is_correction_text(newer.content):
            return f"same statement with a different value ({swap[0]!r} vs {swap[1]!r})"
    return None


#: clause boundaries: a negation in another clause does not negate the statement
#: ("I take the train because I don't like driving" does not deny "I take the train")
_EN_CLAUSES = re.compile(
    r"\s*[,;:()\u2014]\s*|\s+-\s+|\s+(?:because|since|so that|so|but|though|although|unless|"
    r"while|whereas|as long as|as|if|when|and then|which|who)\s+|"
    r"\s+and\s+(?=(?:never|not)\b)",
    re.IGNORECASE,
)
_ZH_CLAUSES = re.compile(
    r"[，,；;：:（）()]|因为|所以|不过(?![敏期])|但是|但|而是|而且|因此|虽然|可是|如果|只要|这样"
)
#: a past habit is not the present one ("I used to smoke" / "I don't smoke")
_PAST = re.compile(r"\b(?:used to|formerly|in the past|as a (?:kid|child|student)|years ago|"
                   r"back then|once)\b|以前|过去|小时候|曾经|从前|当年", re.IGNORECASE)
_ZH_NEGATION_CORE = re.compile(
    r"没有任何|没有|从来不|从来|从不|不再|已经|这辈子|一辈子|过(?!敏)|不|没|别|未|再|从|有|任何|好?几次|[\d一两二三四五六七八九十]+次|"
    r"[一两二三四五六七八九十几]?[个只辆台本张件位条双]"
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
            # (a time split off into a clause of its own - "I couldn't swim, as a kid" -
            # still holds for the statement: then the statements' times are compared)
            if (_PAST.search(ca) is None) != (_PAST.search(cb) is None) \
                    and (_PAST.search(a) is None) != (_PAST.search(b) is None):
                continue
            if is_cjk(ca) or is_cjk(cb):
                if _cjk_same_but_negation(ca, cb):
                    return True
            elif (_overlap(ca, cb) >= _MIN_OVERLAP or _same_things(ca, cb)) \
                    and _same_predicate(ca, cb) and _same_object(ca, cb):
                return True
    return False


#: categories a user has a member of or none at all ("I've got a dog named Biscuit" / "I
#: don't have any pets"; 我是基督徒 / 我不信任何宗教): (category, member, denial) per language
_CATEGORIES: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    ("a pet", re.compile(
        r"\b(?:i(?:'ve| have)?\s+(?:got|have|own|adopted)|we(?:'ve| have)?\s+(?:got|have)|my)\s+"
        r"(?:an?\s+|two\s+|three\s+)?(?:[\w-]+\s+){0,2}(?:dog|dogs|cat|cats|puppy|kitten|hamster|"
        r"rabbit|bunny|parrot|goldfish|beagle|labrador|retriever|poodle|terrier|corgi|tortoise)\b"
        r"|养\s*(?:了|着)?\s*(?:一|两|三|几)?(?:只|条|个)?[\u4e00-\u9fff]{0,3}"
        r"(?:狗|猫|仓鼠|兔|鹦鹉|金鱼|金毛|柯基|泰迪|哈士奇|拉布拉多|乌龟)|"
        r"我(?:家)?(?:的)?(?:狗|猫|金毛|柯基|泰迪|哈士奇)", re.I),
     re.compile(r"\b(?:don't|do not|never|haven't|have never)\s+(?:\w+\s+)?"
                r"(?:have|had|own|owned)\s+(?:any\s+)?pets?\b|\bno\s+pets\b|\bnot\s+a\s+pet\s+person\b|"
                r"没(?:有)?养过?(?:任何)?宠物|没有(?:任何)?宠物|不养宠物|从(?:来)?没养过", re.I)),
    ("a religion", re.compile(
        r"\bi(?:'m| am)\s+(?:a\s+)?(?:\w+\s+)?(?:christian|catholic|buddhist|muslim|jewish|hindu|"
        r"protestant)\b|我是(?:一名|个)?(?:基督徒|天主教徒|佛教徒|穆斯林|犹太教徒)|我信(?:佛|基督|伊斯兰|天主)",
        re.I),
     re.compile(r"\b(?:i'm|i am)\s+(?:an?\s+)?(?:\w+\s+)?(?:atheist|agnostic|not religious)\b|"
                r"\bdon't\s+(?:follow|practi[cs]e|believe in)\s+any\s+religion\b|"
                r"不信(?:任何)?宗教|没有(?:任何)?宗教信仰|无神论", re.I)),
)
#: a denial that covers the past too ("never", 从来没)
_EVER = re.compile(r"\bnever\b|从来|从没|从未", re.I)


def _category_denial(a: str, b: str) -> str | None:
    """One statement has a member of a category, the other denies the whole category."""
    a, b = (_strip_cues(t) for t in (a, b))
    for name, member, denial in _CATEGORIES:
        for has, has_not, denier in ((a, b, b), (b, a, a)):
            found = member.search(has)
            # (someone else's pet - 我姐姐养了一只猫 - or someone else without one is no
            # contradiction; "he" after it is the dog)
            if found is None or denial.search(has_not) is None \
                    or denial.search(has) is not None or _OTHER_PERSON.search(has_not) \
                    or _OTHER_PERSON.search(has[:found.start()]):
                continue
            # a pet as a child is no pet now, unless the other says "never"
            if (_PAST.search(has) is None) != (_PAST.search(has_not) is None) \
                    and _EVER.search(denier) is None:
                continue
            return name
    return None


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


#: qualities one subject cannot have at once, said in more than one word ("an early riser" /
#: "a total night owl", 我习惯早睡早起 / 我是个夜猫子): compared by :func:`_opposite_quality`
_QUALITY_PAIRS = (
    ("early riser", "night owl"), ("morning person", "night owl"), ("introverted", "extroverted"),
    ("introvert", "extrovert"), ("introverted", "extrovert"), ("introvert", "extroverted"),
    ("introverted", "outgoing"), ("shy", "outgoing"),
    ("strict", "lenient"), ("tiny", "huge"), ("small", "huge"), ("tiny", "big"),
    ("tiny", "enormous"), ("small", "enormous"), ("easy", "difficult"), ("easy", "hard"),
    ("quiet", "noisy"), ("quiet", "loud"), ("calm", "noisy"), ("single", "married"),
    ("tidy", "messy"), ("neat", "messy"), ("patient", "impatient"), ("healthy", "unhealthy"),
    ("easy", "exhausting"), ("relaxed", "stressful"), ("cheap", "expensive"),
    ("left-handed", "right-handed"), ("terrible", "excellent"), ("terrible", "great"),
    ("awful", "great"), ("bad", "good"), ("poor", "excellent"), ("weak", "strong"),
    ("早睡早起", "夜猫子"), ("早起", "夜猫子"), ("内向", "外向"), ("安静", "吵"), ("安静", "热闹"),
    ("轻松", "辛苦"), ("轻松", "累"), ("干性", "油性"), ("单身", "已婚"), ("胖", "瘦"),
    ("高", "矮"), ("便宜", "贵"), ("整洁", "乱"), ("闲", "忙"), ("好", "差"), ("左撇子", "右撇子"),
    ("简单", "难"), ("容易", "难"), ("近", "远"), ("怕冷", "抗冻"), ("怕冷", "耐寒"),
    ("整齐", "邋遢"), ("整洁", "邋遢"), ("爱干净", "邋遢"),
)
_QUALITIES = tuple((a, b) for x, y in _QUALITY_PAIRS for a, b in ((x, y), (y, x)))
#: judgements whose object follows them: the same object, or no contradiction
_EVALUATIVE = frozenset("terrible excellent great awful bad good poor weak strong".split())
_QUALITY_WORDS = tuple((re.compile(rf"\b{x}\b"), re.compile(rf"\b{y}\b")) for x, y in _QUALITIES)
#: verbs of liking: a quality of the object, not the subject - the object must be shared
_ZH_LIKING = (("喜欢", "讨厌"), ("爱", "讨厌"), ("喜欢", "受不了"), ("爱吃", "讨厌"))
#: the subject of an English quality: "I'm (a/an/very ...)", "my <thing> is"
_EN_SUBJECT = re.compile(r"^(?:i\s*(?:'m|am)|i\s+(?:\w+\s+)?(?:feel|consider\s+myself)|"
                         r"my\s+(?P<thing>[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are|'s|has\s+been|feels?)|"
                         r"the\s+(?P<place>[a-z]+)\s+(?:i|we)\s+(?:live|work|stay)\s+(?:on|in|at)\s+"
                         r"(?:is|'s)|"
                         r"(?P<named>(?!(?:it|this|that|there|here|what|which|who|everything|"
                         r"nothing|something|he|she|they|you|we)\b)[a-z]+(?:\s+[a-z]+)?)"
                         r"\s+(?:is|are)(?=\s+(?:\w+\s+)?(?:easy|hard|difficult|simple|tiny|huge|"
                         r"enormous|big|small|quiet|noisy|loud|cheap|expensive|relaxed|stressful|"
                         r"tidy|messy|healthy|unhealthy)\b))"
                         r"\b", re.I)
_ZH_DEGREE = re.compile(r"(?:很|非常|特别|超级?|挺|比较|有点|太|真的|最|是个|是一个|是|性格|个|"
                        r"典型|标准|十足|彻头彻尾|"
                        r"一个|习惯|属于|的人|的|了)")


#: the speaker's view around a Chinese statement (我觉得数学很简单 / 数学对我来说太难了)
_ZH_VIEW = re.compile(r"^(?:我(?:觉得|感觉|认为))|对我(?:来说|而言)")


def _clause_of(text: str, word: str) -> str:
    return next((c for c in _ZH_CLAUSES.split(text) if word in c), text)


def _opposite_quality(a: str, b: str) -> tuple[str, str] | None:
    """A quality and its opposite said of the same subject: "I'm pretty introverted" / "I'm
    very extroverted", "My boss is really strict" / "My boss is super lenient", 我家附近很安静 /
    我家附近特别吵; 我很喜欢吃香菜 / 我超讨厌香菜 (liking: the object must be shared)."""
    if is_cjk(a) or is_cjk(b):
        sa, sb = (_ZH_VIEW.sub("", _strip_cues(t)) for t in (a, b))
        # a negation turns the quality round ("不安静"); an aversion is the quality itself
        # (of the clause that holds the quality: 喝一斤白酒都没什么事 is another clause)
        for x, y in _QUALITIES + _ZH_LIKING + tuple((q, p) for p, q in _ZH_LIKING):
            ia, ib = sa.find(x), sb.find(y)
            if ia < 0 or ib < 0 or x in sb or y in sa:
                continue
            if any(_negated(c) and not _ZH_AVERSION.search(c)
                   for c in (_clause_of(sa, x), _clause_of(sb, y))):
                return None
            ha, hb = _ZH_DEGREE.sub("", sa[:ia]), _ZH_DEGREE.sub("", sb[:ib])
            # the user ("我家离公司") or a thing named first ("数学") is the subject
            if ha != hb or not (ha.startswith("我") or (len(ha) >= 2 and ha[0] not in "这那它")):
                continue
            if (x, y) in _ZH_LIKING or (y, x) in _ZH_LIKING:
                oa = set(_CJK_CHAR.findall(_ZH_CLAUSES.split(sa[ia + len(x):])[0])) \
                    - set("吃的了喝看")
                ob = set(_CJK_CHAR.findall(_ZH_CLAUSES.split(sb[ib + len(y):])[0])) \
                    - set("吃的了喝看")
                if len(oa & ob) < min(2, len(oa), len(ob)) or not oa & ob:
                    continue
            return x, y
        return None
    la, lb = _strip_cues(a).casefold(), _strip_cues(b).casefold()
    ma, mb = _EN_SUBJECT.match(la), _EN_SUBJECT.match(lb)
    if ma is None or mb is None or (ma["thing"] or ma["named"] or ma["place"] or "") \
            != (mb["thing"] or mb["named"] or mb["place"] or ""):
        return None
    ca, cb = _clauses(la)[0], _clauses(lb)[0]
    if _clause_negated(ca) or _clause_negated(cb):
        return None
    for (x, y), (px, py) in zip(_QUALITIES, _QUALITY_WORDS, strict=True):
        mx, my = px.search(ca), py.search(cb)
        if mx and my and not py.search(ca) and not px.search(cb):
            if x in _EVALUATIVE and ca[mx.end():].split()[:1] != cb[my.end():].split()[:1]:
                continue  # "a good cook" / "a bad driver": two things judged
            return x, y
    return None


#: Chinese verbs: a swap that changes the verb changes the statement, not its value
#: (我会说英语 / 我在学日语; 我最喜欢吃火锅 / 我讨厌吃辣)
_ZH_VERBS = frozenset("说学用吃喝住做开玩看听读写买卖养穿坐骑跑打练教喜讨爱恨")


def _other_verb(removed: str, added: str) -> bool:
    va, vb = set(removed) & _ZH_VERBS, set(added) & _ZH_VERBS
    return bool(va) and bool(vb) and va != vb


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
