"""The fast path of memory formation: read candidates out of one utterance.

Pure and offline - regular expressions over the sentence, no model, no I/O -
so :meth:`MemoryManager.observe <memstrata.MemoryManager.observe>` costs a
transaction plus (only when something was read) one embedding. What it reads:

* **explicit preferences** - "I prefer window seats", "I can't stand jazz",
  "我更喜欢靠窗的座位", "我不吃辣";
* **standing instructions and corrections** - "from now on always use layout B",
  "actually, not window but aisle", "以后都用微信支付", "不要再推荐海鲜";
* **profile facts** - name, city, age, occupation, employer, diet, allergies,
  "my <attribute> is <value>" for a list of durable attributes - each with a
  structured :class:`~memstrata.types.Slot` ``("user", attribute, value)`` when
  the attribute is single-valued, so the write path matches it by fields (a
  new city conflicts with the old one; "I moved to Munich" supersedes it).

Changes of state are read however they are phrased: verb families ("made the move to",
"settled in", "Munich is home now", "Google hired me", "address me as"), ages in words
("turned thirty", "三十岁"), Chinese word order and dropped subjects ("我在上海定居了",
"我换工作了，现在在阿里巴巴"). Typographic apostrophes ("I’ve") and bare contractions
("Im") read like straight ones. What is not the user's own change is not read: a
quoted clause ('she said "I moved to Munich"'), a condition ("if I moved to Munich",
"如果我搬到上海"), a relative's move, a plan, a negation.

Everything else - small talk, one-off reactions ("this hotel is awful"),
questions, task chatter - yields nothing: the raw turn is kept in episodic
storage and the ``summarize`` job (with an LLM, when one is configured) reads
what this fast path could not. Reactions to a demonstrative ("I love this
song") are read with a low confidence, so the write policy drops them with a
visible reason instead of silently.

Trade-off: patterns are precise and cheap but shallow. They never invent a
slot: a sentence whose attribute cannot be read is kept as free text, and
contradictions between free texts are found later by the ``conflicts`` job.
The slot subject is always ``"user"`` (the speaker).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memstrata.types import USER_SUBJECT, MemoryType, Slot

__all__ = ["USER_SUBJECT", "Extracted", "canonical_attribute", "extract", "is_correction_text"]

#: subject of every slot read from the user's own words

#: confidence of a reaction to a demonstrative ("I love this song"): below the
#: default write threshold, so the policy drops it with a reason
ONE_OFF_CONFIDENCE = 0.3
HEDGED_CONFIDENCE = 0.55
MAX_CANDIDATE_CHARS = 500


@dataclass(frozen=True, slots=True)
class Extracted:
    """One candidate memory read from an utterance."""

    content: str
    type: MemoryType
    confidence: float
    #: which rule read it (for explanations and the benchmark)
    rule: str
    slot: Slot | None = None
    #: the user corrects / replaces something said before (newest wins)
    correction: bool = False
    #: for "not X but Y": the value that is being replaced (X)
    replaces: str | None = None
    #: other attributes the slot's value may belong to ("I moved from Siemens to Google":
    #: a city or an employer); the write side picks the one whose current value the
    #: sentence names (:func:`memstrata.memory.formation.observe`)
    alternatives: tuple[str, ...] = ()
    #: keep the slot only when the sentence names the current value of one of the
    #: attributes ("I left X for Y" says nothing about which X it is)
    tentative: bool = False
    kind: Literal["extracted"] = "extracted"


# ---------------------------------------------------------------- helpers

#: a sentence ends at . ! ? ; - not after an abbreviation ("St. Louis", "Dr. Weber")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])(?<!\bSt\.)(?<!\bMt\.)(?<!\bFt\.)(?<!\bDr\.)(?<!\bMr\.)"
                             r"(?<!\bMs\.)(?<!\bMrs\.)(?<!\bJr\.)(?<!\bSr\.)\s+"
                             r"|(?<=[。！？；])\s*|\n+")
#: a new clause about the speaker inside one sentence ("I'm Alice, I live in Berlin")
_CLAUSE_SPLIT = re.compile(
    r"(?:,\s*|\s+)(?:and|but|so|also)\s+(?=(?:i|i'm|i've|i'd|my)\b)"
    r"(?!i\s+(?:accepted|took\s+it|said\s+yes)\b)|,\s*(?=(?:i|i'm|i've|my)\b(?!\s+new\s+(?:home|hometown|city)\b))"
    r"|[，,；]\s*(?=我)",
    re.IGNORECASE,
)
_CJK = re.compile(r"[\u3400-\u9fff]")
_QUESTION_START = re.compile(
    r"^(?:do|does|did|can|could|would|will|should|shall|what|where|when|why|how|who|which|"
    r"is|are|am|was|were|have|has)\b",
    re.IGNORECASE,
)
_ZH_QUESTION = re.compile(r"(?:吗|呢|么|吧)[？?。.!！]?$|什么|怎么|哪里|哪儿|为什么|多少|几点")
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|probably|i think|i guess|kind of|sort of)\b|也许|可能|大概",
    re.IGNORECASE,
)
_ONE_OFF_OBJECT = re.compile(
    r"^(?:this|that|these|those|it|today'?s?|tonight'?s?|here|the one)\b|^(?:这|那|今天|今晚|刚才)",
    re.IGNORECASE,
)
_LEAD = re.compile(r"^(?:(?:ok(?:ay)?|so|and|but|also|well|oh|btw|by the way|hey|hi|hello|"
                   r"也|还有|另外|对了|嗯|哦)[,，:\s]+)+", re.IGNORECASE)
_VALUE_END = re.compile(
    r"\s+(?:and|but|with|since|because|for|though|so|which|who|where|when|"
    r"(?:last|this|next)\s+(?:week|month|year|summer|winter|spring|fall|autumn)|yesterday|today|"
    r"recently|now|these days|nowadays|as of|in the end|eventually|at last|finally|for good|"
    r"after all|"
    r"in \d{4}|over (?:the )?\w+|in (?:the )?(?:spring|summer|"
    r"fall|autumn|winter|january|february|march|april|may|june|july|august|september|october|"
    r"november|december)|(?:a|one|two|three|a few|several)\s+\w+\s+ago)\b.*$|[,;，；].*$",
    re.IGNORECASE,
)
_ROLE_END = re.compile(r"\s+(?:at|for|in|with)\s+.*$", re.IGNORECASE)
_TRAILING = re.compile(r"[\s.!?。！？~…]+$")
_ZH_VALUE_END = re.compile(r"[，,；;。！!？?了啦呀哦].*$")

_CORRECTION_MARK = re.compile(
    r"^(?:actually|correction|sorry|oops|wait|no|i meant|let me correct (?:that|myself)|"
    r"to correct (?:that|myself))[,:!\s—-]+"
    r"|^(?:其实|实际上|更正一下|纠正一下|更正|纠正|我说错了|说错了|不对)[,，:：\s]*",
    re.IGNORECASE,
)
#: words that mark a newer statement as replacing an older one
_CHANGE_WORDS = re.compile(
    r"\b(?:actually|from now on|going forward|anymore|no longer|not anymore|these days|"
    r"nowadays|now|instead|changed|switched|moved|correction|i meant)\b|"
    r"其实|以后|今后|从现在开始|现在|不再|改成|改为|换成|搬到|不是.+而是|更正",
    re.IGNORECASE,
)


#: attribute names other readers (the LLM in ``summarize``) use for the fast extractor's slots
_ATTRIBUTE_SYNONYMS = {
    "location": "city", "home city": "city", "current city": "city", "residence": "city",
    "city of residence": "city", "居住城市": "city", "城市": "city",
    "company": "employer", "workplace": "employer", "current employer": "employer",
    "公司": "employer", "雇主": "employer", "job": "occupation", "job title": "occupation",
    "profession": "occupation", "role": "occupation", "career": "occupation",
    "职业": "occupation", "工作": "occupation", "dietary preference": "diet",
    "diet type": "diet", "饮食": "diet", "preferred name": "name", "nickname": "name",
    "称呼": "name", "名字": "name", "年龄": "age",
}


def canonical_attribute(attribute: str) -> str:
    """The fast extractor's name for an attribute ("location" -> "city", "公司" -> "employer")."""
    key = " ".join(attribute.strip().casefold().split())
    return _ATTRIBUTE_SYNONYMS.get(key, attribute.strip())


def is_correction_text(text: str) -> bool:
    """Does the text read as replacing an earlier statement ("actually", "now", "以后")?"""
    return _CHANGE_WORDS.search(text) is not None


#: what trails a value without being part of it: an emoji, an emoticon, a parenthesis
_DECORATION = re.compile(r"(?:\s*(?:\([^)]*\)|[:;]-?[)(DPp]|[^\w\s.'’&)-]+))+$")


def _clean(value: str) -> str:
    value = _TRAILING.sub("", value.strip().strip(" \"'“”‘’`"))
    value = _TRAILING.sub("", _DECORATION.sub("", value)) or value
    return value.strip(" \"'“”‘’`")


_LEAD_ADVERB = re.compile(r"^(?:now|currently|still|actually|officially)\s+", re.IGNORECASE)


def _value(raw: str) -> str:
    """The value phrase: up to a conjunction or clause break."""
    return _clean(_VALUE_END.sub("", _LEAD_ADVERB.sub("", raw.strip())))


#: what trails a place or company in Chinese: 搬到上海住了 / 入职阿里巴巴两周了
_ZH_VALUE_TAIL = re.compile(r"(?:住|居住|定居|生活|工作|上班|去|来|已经|将近|差不多|"
                            r"快(?=[一二两三四五六七八九十几半\d])|"
                            r"[一二两三四五六七八九十几半\d]+个?(?:多)?(?:天|周|星期|月|年))+$")


#: not a place or a company: 搬回家了, 我在酒店住, 我去公司上班了, 我被单位录用了
_ZH_NOT_A_VALUE = re.compile(r"^(?:这|那|回|去|来|家|老家|朋友|同学|亲戚|父母|我|第)"
                             r"|(?:章|页|集|节|段|关)$"
                             r"|(?:家|酒店|宾馆|旅馆|医院|院|校|宿舍|公司|单位|办公室|学校|里|这儿|那儿|这边|那边"
                             r"|去|来)$")


def _zh_value(raw: str) -> str:
    """The place or company in a Chinese clause; ``""`` when it names none."""
    value = _clean(_ZH_VALUE_END.sub("", raw.strip()))
    value = _ZH_VALUE_TAIL.sub("", value) or value
    return "" if _ZH_NOT_A_VALUE.search(value) else value


def _is_question(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith(("?", "？")):
        return True
    if _CJK.search(s):
        return _ZH_QUESTION.search(s) is not None
    return _QUESTION_START.match(s) is not None


def _is_request(sentence: str) -> bool:
    """A standing instruction phrased as a question ("could you answer in German from now
    on?") or a preferred name with a softening 吧 ("叫我小王吧")."""
    if _CJK.search(sentence):
        return _ZH_CALL.search(sentence) is not None and _ZH_NOT_CALL.search(sentence) is None
    return _STANDING_ANY.search(sentence) is not None and _REQUEST.search(sentence) is not None


def _confidence(base: float, obj: str, sentence: str) -> float:
    if _ONE_OFF_OBJECT.match(obj.strip()):
        return ONE_OFF_CONFIDENCE
    if _HEDGE.search(sentence):
        return min(base, HEDGED_CONFIDENCE)
    return base


#: longest attribute / value / sentence read as a memory: a chat turn is never refused
#: because the extractor read something oversized out of it - it reads nothing instead
MAX_ATTRIBUTE_CHARS = 64
MAX_VALUE_CHARS = 120
MAX_SENTENCE_CHARS = 2000


def _slot(attribute: str, value: str) -> Slot | None:
    value = value.strip()
    if not value or len(value) > MAX_VALUE_CHARS or len(attribute) > MAX_ATTRIBUTE_CHARS:
        return None
    return Slot(USER_SUBJECT, attribute, value)


# ---------------------------------------------------------------- English rules

_NAME = re.compile(
    r"^(?:my name is|my name's|i am called|i'm called|i go by)\s+(?:now\s+|officially\s+)?"
    r"(?P<v>[A-Za-z][\w'-]*(?:\s+(?-i:[A-Z][\w'-]*))?)",
    re.IGNORECASE,
)
#: a preferred name ("please call me Kate", "I'd rather you call me Kate", "everyone calls
#: me Kate"): the value must be capitalised ("call me back", "call me crazy" are not names)
_CALL_ME = re.compile(
    r"(?:^|\b(?:please|just|you can|you may|you could|feel free to|everyone|everybody|"
    r"people|most people|friends)\s+|\bi(?:'d| would)?\s+(?:much\s+)?(?:rather|prefer|like|"
    r"want)\s+(?:(?:it\s+)?if\s+you\s+|you\s+(?:to\s+)?|to be\s+|being\s+|be\s+)?)"
    r"(?:calls?|called)\s+(?:me\s+)?[\"']?"
    r"(?P<v>(?-i:[A-Z][\w'-]*))",
    re.IGNORECASE,
)
_NOT_CALL = re.compile(r"\b(?:don't|do not|dont|never|stop|not)\s+(?:\w+\s+)?"
                       r"(?:call|address|refer)", re.IGNORECASE)
#: other verbs of naming: "address me as Kate", "refer to me as Kate", "I changed my name to Kate"
_ADDRESS_AS = re.compile(
    r"\b(?:address|refer\s+to|know)\s+me\s+as\s+[\"']?(?P<v>(?-i:[A-Z][\w'-]*))"
    r"|\bi(?:'ve| have)?\s+(?:just\s+|legally\s+|officially\s+|finally\s+)?changed\s+my\s+"
    r"(?:first\s+)?name\s+to\s+[\"']?(?P<v2>(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?))",
    re.IGNORECASE,
)
#: "Kate is fine, nobody calls me Katherine": a name offered where naming is the topic
_NAME_WILL_DO = re.compile(
    r"^(?:just\s+)?(?P<v>(?-i:[A-Z][a-z]+))(?:(?:'s|\s+is)\s+(?:fine|ok|okay|good|great|perfect"
    r"|enough|what\s+(?:\w+\s+){0,3}call)|\s+will do|\s+works (?:fine|best|for me))\b",
    re.IGNORECASE)
_NAMING_TOPIC = re.compile(r"\b(?:calls?|called|calling|address(?:es)?)\s+me\b|\bmy name\b",
                           re.IGNORECASE)
_NOT_NAME_WORDS = frozenset({"when", "back", "later", "tomorrow", "tonight", "today", "if",
                             "at", "on", "after", "before", "asap", "anytime", "any", "crazy"})
_IM_NAME = re.compile(r"^[Ii](?:'m|\s+am)\s+(?P<v>[A-Z][a-z]+)(?:\s*[,.!]|$)")
_LIVE = re.compile(
    r"\bi(?:\s+currently|\s+now)?(?:\s+(?:live|am living|'m living|reside|stay)|"
    r"(?:'ve| have)\s+(?:now\s+)?(?:been living|lived))\s+in\s+(?P<v>.+)"
    r"|\bi(?:'m|\s+am|'ve been|\s+have been)\s+(?:now\s+)?(?:based|located|living)\s+in\s+"
    r"(?P<v2>.+)",
    re.IGNORECASE,
)
#: "I have lived in Munich before": a past stay, not where the user lives
_PAST_STAY = re.compile(r"\b(?:'ve|have)\s+lived\s+in\s+(?!.*\b(?:since|for|now)\b)"
                        r"|\b(?:'ve|have)\s+lived\s+in\s+.*\b(?:before|once|twice|in the past|"
                        r"as a (?:child|kid|student)|when|years ago)\b", re.IGNORECASE)
#: who moves with the user: "we", "our family", "my wife and I", "the kids and I"
_WE = r"(?:i|we|our\s+(?:whole\s+)?family|(?:my|the)\s+(?:[\w-]+\s+){1,2}and\s+i)"
_MOVED = re.compile(
    rf"\b{_WE}(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+|already\s+|also\s+|"
    r"officially\s+|now\s+|actually\s+)?"
    r"(?:moved|relocated|made\s+the\s+(?:big\s+)?move|ended\s+up\s+(?:moving|relocating))"
    r"(?:\s+(?:back|over|house|home|across|permanently|for good))?\s+"
    r"(?:(?:away\s+)?(?:from|out of)\s+[^,;]+?\s+)?"
    r"(?:to|into\s+(?:(?:our|my|a|the)\s+)?(?:new\s+)?(?:flat|apartment|house|place|home)\s+in)"
    r"\s+(?P<v>.+)",
    re.IGNORECASE,
)
#: a place or a company is named ("the next chapter", "decaf" are not)
_NAMED = re.compile(r"(?-i:[A-Z])|[\u3400-\u9fff]")
#: in text typed all in lower case ("i moved to munich") a place cannot be told by its capital
_NOT_A_PLACE = re.compile(r"(?:the|a|an|my|our|his|her|their|this|that|some|another|new)\b",
                          re.IGNORECASE)
_CAPITALISED = r"(?-i:[A-Z][\w'.-]*(?:\s+(?:(?!I\b)[A-Z][\w'.-]*|am|an der|upon|de|del|la|le))*)"
#: a new home named without a verb of moving: "Munich is home now", "Munich is our new
#: home", "we now call Munich home", "greetings from Munich, our new home", "settled in Munich"
_NEW_HOME = re.compile(
    rf"^(?P<v>{_CAPITALISED})\s+(?:is|has\s+been)\s+(?:(?:my|our)\s+(?:new\s+)?home|home\s+now"
    r"|now\s+home|home\s+(?:for|since)\b)"
    r"\b(?!\s+(?:to|of|for)\b)"
    rf"|^(?:my|our)\s+(?:new\s+)?home\s+is\s+(?:now\s+)?(?:in\s+)?(?P<v2>{_CAPITALISED})"
    rf"|\b(?:in|from|to)\s+(?P<v3>{_CAPITALISED})\s*[,—–-]+\s*(?:my|our)\s+new\s+"
    r"(?:home|hometown|city)\b"
    rf"|\b(?:my|our)\s+new\s+(?:home|flat|apartment|house|place)\s+in\s+(?P<v4>{_CAPITALISED})"
    rf"|\b(?:i|we)\s+(?:now\s+)?call\s+(?P<v5>{_CAPITALISED})\s+home\b"
    rf"|\b(?:i|we)(?:'ve| have)?\s+(?:now\s+|finally\s+)?made\s+(?P<v6>{_CAPITALISED})\s+"
    r"(?:my|our)\s+(?:new\s+)?home\b"
    rf"|\b(?:i|we)(?:'ve| have)?\s+(?:now\s+|finally\s+|just\s+)?settled\s+(?:down\s+)?in"
    rf"\s+(?P<v7>{_CAPITALISED})"
    rf"|\b(?:i'm|i am|we're|we are)\s+(?:now\s+|officially\s+)?an?\s+(?P<v8>{_CAPITALISED})\s+"
    r"(?:resident|local)s?\b"
    rf"|\b(?:flat|apartment|house|place|home)\s+in\s+(?P<v9>{_CAPITALISED})\b.*\b(?:and|then)\s+"
    r"moved\s+in\b",
    re.IGNORECASE,
)
#: "since the move to Munich, ..." / "after our move to Munich"
_SINCE_MOVE = re.compile(r"\b(?:since|after)\s+(?:(?:the|our|my)\s+(?:move|relocation)|moving|"
                         r"relocating)\s+to\s+"
                         r"(?P<v>(?-i:[A-Z][\w'-]*(?:\s+(?!I\b)[A-Z][\w'-]*)*))", re.IGNORECASE)
_FROM = re.compile(r"\bi(?:'m| am)\s+(?:originally\s+)?from\s+(?P<v>.+)", re.IGNORECASE)
_UNITS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
          "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
#: an age in words, ten to ninety-nine ("thirty", "twenty-nine")
_AGE_WORD = (rf"(?:(?:{'|'.join(_TENS)})(?:[- ](?:{'|'.join(_UNITS[:9])}))?"
             rf"|{'|'.join(_UNITS[9:])})")
_AGE = re.compile(rf"\bi(?:'m| am)\s+(?:now\s+|officially\s+|finally\s+)?"
                  rf"(?P<v>\d{{1,3}}|{_AGE_WORD})"
                  r"(?:\s+years?\s+old|\s*yo)?\b"
                  r"(?!\s*(?:%|kg|km|lbs|minutes|min|hours|cm|m\b|of\b|percent|times))"
                  rf"(?:(?<=\d)|(?<=old)|(?=\s*(?:now|today|this year|already|and|but|so)\b|"
                  r"\s*[,.!;]|\s*$))"
                  rf"|\bi\s+(?:just\s+|finally\s+|officially\s+)?turned\s+"
                  rf"(?P<v2>\d{{1,3}}|{_AGE_WORD})\b(?!\s+(?:of|times|degrees|pages|%))",
                  re.IGNORECASE)


_ORDINALS = {"first": "one", "second": "two", "third": "three", "fifth": "five", "eighth": "eight",
             "ninth": "nine", "twelfth": "twelve"}
#: "fortieth", "twenty-first", "thirtieth" (a birthday)
_ORDINAL_WORD = (rf"(?:(?:{'|'.join(_TENS)})[- ](?:first|second|third|fourth|fifth|sixth|seventh"
                 rf"|eighth|ninth)|(?:{'|'.join(t[:-1] for t in _TENS)})ieth"
                 r"|(?:tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth"
                 r"|seventeenth|eighteenth|nineteenth))")


def _age(value: str) -> str:
    """"thirty" -> "30", "twenty-nine" -> "29", "fortieth" -> "40", "30th" -> "30"."""
    value = re.sub(r"(?<=\d)(?:st|nd|rd|th)$", "", value.strip())
    words = value.casefold().replace("-", " ").split()
    if not words or words[0].isdigit():
        return value
    total = 0
    for word in words:
        if word.endswith("ieth"):
            word = word[:-4] + "y"
        elif word in _ORDINALS:
            word = _ORDINALS[word]
        elif word.endswith("th") and word[:-2] in _UNITS:
            word = word[:-2]
        if word in _TENS:
            total += 10 * (_TENS.index(word) + 2)
        elif word in _UNITS:
            total += _UNITS.index(word) + 1
    return str(total)
#: "today is my 30th birthday", "I just celebrated my 30th birthday" (not a future one)
_BIRTHDAY = re.compile(rf"\bmy\s+(?P<v>\d{{1,3}}(?:st|nd|rd|th)|{_ORDINAL_WORD})\s+birthday\b"
                       r"|\bi\s+(?:just\s+)?celebrated\s+turning\s+(?P<v2>\d{1,3})\b",
                       re.IGNORECASE)
_FUTURE = re.compile(r"\b(?:tomorrow|next|coming|upcoming|soon|will|'ll|going to|in \d+ days|"
                     r"planning|plan|preparing|organi[sz]ing|before)\b",
                     re.IGNORECASE)
_WORK_AS = re.compile(r"\bi(?:'m|\s+am|'ve been|\s+have been)?\s+(?:now\s+|currently\s+)?"
                      r"(?:work|working)\s+as\s+(?:an?\s+)?(?P<v>.+)", re.IGNORECASE)
_WORK_AT = re.compile(
    r"\bi\s+(?:now\s+|currently\s+)?(?:work|am working)\s+(?:at|for)\s+(?P<v>.+)"
    r"|\bi(?:'m| am)\s+(?:now\s+|currently\s+)?employed\s+(?:at|by)\s+(?P<v2>.+)"
    # "I'm working at Google these days": the progressive names a company, not "home"
    r"|\bi(?:'m|'ve been| have been)\s+(?:now\s+|currently\s+)?working\s+(?:at|for)\s+"
    r"(?P<v3>(?-i:[A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*))",
    re.IGNORECASE,
)
#: the sentence is about work ("after five years at Siemens", "I quit my job"), so "moved to X"
#: or "switched to X" names an employer, not a city
_JOB_CONTEXT = re.compile(
    r"\b(?:jobs?|employer|company|firm|position|role|career|offer|hired|quit|resigned|colleagues"
    r"|(?:years?|months?|stint|time|tenure|decade)\s+(?:at|working\s+(?:at|for|with)))\b",
    re.IGNORECASE,
)
#: the old employer named beside the change: "after five years at Siemens", "my job at Siemens"
_ORG_TENURE = re.compile(r"\b(?:years?|months?|stint|time|tenure|decade|career|job|working)\s+"
                         r"(?:at|with|for)\s+(?-i:[A-Z])", re.IGNORECASE)
_ORG = r"(?P<v>(?-i:[A-Z][\w&.'-]*(?:\s+(?!I\b)[A-Z][\w&.'-]*)*))"
#: a move between employers: "I moved to Google", "I switched over to Google", "I left
#: Siemens for Google" - read as one only where the sentence is about work
_ORG_MOVE = re.compile(
    r"\bi(?:'ve| have)?\s+(?:[^,;.]*?\band\s+)?(?:just\s+|recently\s+|finally\s+|then\s+|now\s+)?"
    r"(?:(?P<verb>moved|switched|jumped|changed|transferred|defected)\s+(?:over\s+)?to"
    rf"|left\s+(?-i:[A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*)\s+for)\s+(?:the\s+)?{_ORG}",
    re.IGNORECASE,
)
#: the employer as the subject: "Google hired me", "Google took me on"
_HIRED_ME = re.compile(
    rf"^{_ORG}\s+(?:has\s+|have\s+)?(?:just\s+|finally\s+|officially\s+)?"
    r"(?:hired|employed|took\s+me\s+on|signed)\s+me\b"
    r"|^" + _ORG.replace("P<v>", "P<v4>") + r"\s+offered\s+me\s+(?:a|the|an)\s+(?:\w+\s+)?"
    r"(?:job|role|position)\s+and\s+i\s+(?:accepted|took\s+it|said\s+yes)\b"
    r"|^" + _ORG.replace("P<v>", "P<v2>")
    + r"\s+(?:has\s+|have\s+)?(?:just\s+|finally\s+)?took\s+me\s+on\b"
    r"|\bi(?:'ve| have)?\s+(?:just\s+|finally\s+|officially\s+)?(?:accepted|took|signed)\s+"
    r"(?:an?|the|their)\s+(?:job\s+|work\s+)?(?:offer|position|job|contract)\s+(?:from|at|with)\s+"
    + _ORG.replace("P<v>", "P<v3>"),
    re.IGNORECASE,
)
_PROFESSIONS = (
    r"engineer|developer|programmer|teacher|professor|doctor|physician|nurse|student|designer|"
    r"manager|lawyer|accountant|writer|journalist|researcher|scientist|chef|architect|"
    r"consultant|pharmacist|dentist|artist|musician|photographer|analyst|entrepreneur|"
    r"founder|product manager|data scientist|pilot|driver|freelancer|retiree|retired"
)
_IM_A = re.compile(rf"\bi(?:'m| am|'ve been| have been)\s+(?:now\s+|currently\s+)?(?:an?\s+)?"
                   rf"(?P<v>(?:[\w-]+\s+){{0,2}}(?:{_PROFESSIONS}))\b", re.IGNORECASE)
#: a career change: "I became a nurse", "I retrained as a nurse"
_BECAME = re.compile(
    rf"\bi(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+|now\s+)?(?:became|become|"
    rf"re-?trained as|requalified as|qualified as|started working as)\s+(?:an?\s+)?"
    rf"(?P<v>(?:[\w-]+\s+){{0,2}}?(?:{_PROFESSIONS}))\b",
    re.IGNORECASE,
)
#: a new employer: "I started a new job at X", "I joined X", "I've been hired by X"
_NEW_JOB = re.compile(
    r"\bi(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+|officially\s+)?"
    r"(?:(?:started|began|got|landed|took|accepted|found)\s+(?:a\s+)?(?:new\s+)?"
    r"(?:job|position|role)\s+(?:at|with)\s+(?P<v>.+)"
    r"|(?:started\s+(?:working\s+|work\s+)?(?:at|for|with)|joined|been hired by|got hired (?:by|at)"
    r"|was hired by)\s+(?P<v2>(?-i:[A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*)))",
    re.IGNORECASE,
)
#: a job taken long ago or for a while is not the current employer ("hired me as an intern
#: in 2015", "joined Google years ago")
_PAST_JOB = re.compile(r"\bas\s+an?\s+(?:intern|temp|trainee|summer\s+\w+)\b|\bin\s+(?:19|20)\d\d\b"
                       r"|\byears\s+ago\b|\bback\s+(?:in|then)\b|\bfor\s+the\s+summer\b",
                       re.IGNORECASE)
_NEGATED_CLAUSE = re.compile(r"\b(?:not|never|n't|no longer)\b|n't\b", re.IGNORECASE)
_DIET = re.compile(
    r"\bi(?:'m| am|'ve been| have been)\s+(?:now\s+|strictly\s+|fully\s+)?(?:a\s+)?"
    r"(?P<v>vegetarian|vegan|pescatarian|"
    r"halal|kosher|gluten[- ]free|lactose[- ]intolerant|on a (?:keto|low[- ]carb) diet)\b",
    re.IGNORECASE,
)
_ALLERGY = re.compile(
    r"\bi(?:'m| am)\s+(?:severely\s+|very\s+)?allergic\s+to\s+(?P<v>.+)"
    r"|\bi\s+have\s+(?:an?\s+|a\s+severe\s+)?(?P<v2>[\w-]+(?:\s+[\w-]+)?)\s+allergy\b",
    re.IGNORECASE,
)
#: a diet change: "I went vegan", "I switched to a pescatarian diet", "I eat meat again"
_DIET_CHANGE = re.compile(
    r"\bi(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+|officially\s+)?(?:went|gone|turned|"
    r"became|become|switched to|converted to|changed to)\s+(?:an?\s+|being\s+)?"
    r"(?:fully\s+|completely\s+|totally\s+|strictly\s+|full\s+)?(?P<v>vegetarian|vegan|pescatarian)\b",
    re.IGNORECASE,
)
_MEAT_AGAIN = re.compile(
    r"\bi(?:'ve| have)?\s+(?:just\s+|recently\s+)?(?:went|gone|got)\s+back\s+to\s+eating\s+"
    r"(?:meat|fish|chicken|beef)\b|"
    r"\bi(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:stopped|quit|gave up|given up)\s+"
    r"being\s+(?:an?\s+)?(?:vegetarian|vegan|pescatarian)\b|"
    r"\bi(?:'ve| have)?\s+(?:just\s+|recently\s+)?(?:started|began|start)\s+eating\s+"
    r"(?:meat|fish and meat|chicken|beef)\b"
    r"|\bi(?:'m| am)?\s+(?:now\s+)?(?:eat|eating)\s+meat\s+(?:again|now|these days)\b",
    re.IGNORECASE)
_SPEAK = re.compile(r"\bi\s+speak\s+(?P<v>.+)", re.IGNORECASE)
_HAVE = re.compile(
    r"\bi\s+have\s+(?P<v>(?:a|an|one|two|three|four|\d+)\s+(?:[\w-]+\s+)?"
    r"(?:kids?|children|sons?|daughters?|dogs?|cats?|brothers?|sisters?|car|bike))\b",
    re.IGNORECASE,
)
#: "my <attribute> is <value>" is read only for attributes that are durable facts
_NOT_DIET = re.compile(
    r"\bi(?:'m| am)\s+(?:no longer|not)\s+(?:a\s+)?(?P<v>vegetarian|vegan|pescatarian)\b",
    re.IGNORECASE,
)
#: present-simple habits and states ("I drink coffee every morning", "I smoke")
_HABITUAL = re.compile(
    r"^i\s+(?:also\s+|still\s+|now\s+|mostly\s+|mainly\s+)?(?P<verb>drink|eat|smoke|cook|"
    r"run|jog|swim|cycle|bike|walk|read|watch|listen|play|wear|take|go|wake up|get up|sleep|"
    r"work|study|train|meditate|commute|own|speak|practi[cs]e|collect|volunteer)s?\b"
    r"(?P<rest>.*)$",
    re.IGNORECASE,
)
#: one-off or task talk, not a habit ("I go to Rome tomorrow", "I need ...")
_NOT_HABIT = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|right now|this (?:morning|afternoon|evening|week"
    r"|weekend|time)|next (?:week|month|time)|later|soon|at the moment|need|want|would like|"
    r"looking for|going to|gonna|will)\b",
    re.IGNORECASE,
)
_PROFILE_VERBS = frozenset({"smoke", "own", "speak", "work", "study", "volunteer"})
_MY_ATTR = re.compile(r"^my\s+(?P<attr>(?:[\w'-]+\s+){0,3}?[\w'-]+)\s+(?:is|are|'s)\s+(?P<v>.+)$",
                      re.IGNORECASE)
_DURABLE_ATTRS = re.compile(
    r"^(?:(?:full |first |last |middle |nick)?name|email(?: address)?|e-mail|phone(?: number)?|"
    r"(?:mobile|cell)(?: number)?|birthday|date of birth|birth ?date|address|home address|"
    r"hometown|home town|job|occupation|profession|employer|company|timezone|time zone|"
    r"native language|first language|mother tongue|blood type|shoe size|size|"
    r"(?:wife|husband|partner|son|daughter|dog|cat|mother|father|mom|dad|boss)'s name|"
    r"(?:favou?rite|preferred|usual|go-to)\s+.+|.+\s+preference|(?:.+\s+)?budget|"
    r"(?:daily|weekly|monthly|.+)\s+goal)$",
    re.IGNORECASE,
)
_PREFER = re.compile(
    r"\bi\s+(?:really\s+|strongly\s+|much\s+|definitely\s+|generally\s+|usually\s+|also\s+|"
    r"still\s+|now\s+)?(?P<verb>prefer|like|love|enjoy|adore)\s+(?P<v>.+)",
    re.IGNORECASE,
)
_RATHER = re.compile(r"\bi(?:'d| would)\s+(?:much\s+)?(?:rather|prefer)\s+(?P<v>.+)", re.IGNORECASE)
_FAN = re.compile(r"\bi(?:'m| am)\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+(?P<v>.+)",
                  re.IGNORECASE)
_DISLIKE = re.compile(
    r"\bi\s+(?:really\s+|just\s+|absolutely\s+)?(?:don't|do not|dont|never)\s+(?:really\s+)?"
    r"(?P<verb>like|enjoy|want|eat|drink|use|fly|take)\s+(?P<v>.+)"
    r"|\bi\s+(?:really\s+|absolutely\s+)?(?P<verb2>hate|dislike|detest|avoid|can't stand|"
    r"cannot stand|can't tolerate)\s+(?P<v2>.+)",
    re.IGNORECASE,
)
_HABIT = re.compile(r"\bi\s+(?P<adv>always|usually|normally|never|typically)\s+(?P<v>.+)",
                    re.IGNORECASE)
#: "from now on" and its kin: from today on, from this point onwards, henceforth
_HENCEFORTH = (r"(?:from\s+(?:now|today|tonight|this\s+point|this\s+moment|here|this\s+day)"
               r"(?:\s+(?:on(?:wards?)?|forward|out))+|going forward|henceforth|hereafter"
               r"|starting\s+(?:now|today|tomorrow|from\s+today)|as of (?:now|today))")
_STANDING = re.compile(
    rf"^(?:please\s+)?(?:{_HENCEFORTH}|in (?:the )?future|moving forward(?=[,:])|"
    r"next time(?: and after)?)[,:]?\s+(?P<rest>.+)$"
    rf"|^(?P<rest2>.+?),?\s+(?:{_HENCEFORTH}|in (?:the )?future)$",
    re.IGNORECASE,
)
_ALWAYS_CMD = re.compile(
    r"^(?:please\s+)?(?P<adv>always|never|don't ever|do not ever|don't|do not|stop)\s+"
    r"(?P<rest>.+)$",
    re.IGNORECASE,
)
#: "from now on" in any position ("Could you, from now on, answer in German?")
_STANDING_ANY = re.compile(
    rf"\b{_HENCEFORTH}\b[,:]?\s*",
    re.IGNORECASE,
)
#: a polite request or a tag is not a question ("could you ... from now on?", "..., alright?")
_REQUEST = re.compile(r"^(?:please\s+)?(?:could|can|would)\s+you\b|"
                      r",?\s*(?:alright|all right|ok|okay|right|please)\s*\?$", re.IGNORECASE)
_ZH_STANDING_END = re.compile(
    r"^(?P<rest>.+?)[，,]\s*(?:以后|今后|从现在开始|从今以后)(?:都|就|也)?(?:这样|如此|这么做|照此)[。！!]?$"
)
#: "from today on, the shop opens at nine" states a fact about someone else, and "my doctor
#: said from now on I should ..." reports someone's words: neither instructs the assistant
_THIRD_PARTY = re.compile(r"(?:he|she|they|his|her|their)\s+|the\s+(?:\w+\s+){1,2}(?:opens?"
                          r"|closes?|starts?|begins?|runs?|costs?|leaves?|arrives?)\b"
                          r"|(?:他|她|它|这家|那家)", re.IGNORECASE)
_NOT_FOR_THE_ASSISTANT = re.compile(r"\b(?:said|says|told\s+\w+|tells\s+\w+|wrote|thinks|asked)\b"
                                    r".*\b(?:from now on|going forward|henceforth)\b"
                                    r"|(?:说|告诉我|觉得).*(?:以后|今后|从现在开始)", re.IGNORECASE)
_STANDING_HINT = re.compile(r"\b(?:anymore|again|ever|any more)\b", re.IGNORECASE)
_NOT_BUT = re.compile(
    r"^(?:it'?s\s+|i meant\s+|i said\s+)?not\s+(?P<old>[^,;]+?),?\s+(?:but|it'?s|rather)\s+"
    r"(?P<new>.+)$"
    r"|^(?P<head>.+?\s)?(?P<new2>[\w'-]+(?:\s+[\w'-]+)?),\s*not\s+(?P<old2>[\w'-]+(?:\s+[\w'-]+)?)$",
    re.IGNORECASE,
)


def _english(s: str) -> Extracted | None:
    for rule in (_en_profile, _en_preference):
        found = rule(s)
        if found is not None:
            return found
    return None


def _en_profile(s: str) -> Extracted | None:
    m = _NAME.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.9, "name", _slot("name", _clean(m["v"])))
    m = _CALL_ME.search(s)
    if m and m["v"].lower() not in _NOT_NAME_WORDS and not _NOT_CALL.search(s):
        # how the user wants to be addressed now: the newest wins
        return Extracted(s, MemoryType.PROFILE, 0.9, "call_me", _slot("name", m["v"]),
                         correction=True)
    m = _ADDRESS_AS.search(s)
    if m and not _NOT_CALL.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "call_me", _slot("name", m["v"] or m["v2"]),
                         correction=True)
    m = _NAME_WILL_DO.match(s)
    if m and _NAMING_TOPIC.search(s, m.end("v")) and m["v"].lower() not in _NOT_NAMES:
        return Extracted(s, MemoryType.PROFILE, 0.85, "call_me", _slot("name", m["v"]),
                         correction=True)
    m = _IM_NAME.match(s)
    if m and m["v"].lower() not in _NOT_NAMES:
        return Extracted(s, MemoryType.PROFILE, 0.7, "name", _slot("name", m["v"]))
    m = _ORG_MOVE.search(s)
    if m and not _NEGATED_CLAUSE.search(s[:m.start("v")]):
        verb = (m["verb"] or "").lower()
        # "moved to" is a new employer only beside the old one ("after years at Siemens");
        # "I quit my job and moved to Lisbon" is a move
        # (the old employer named before the move: "for my new job at BMW" names the new one)
        if _ORG_TENURE.search(s[:m.start()]) if verb == "moved" else _JOB_CONTEXT.search(s):
            return Extracted(s, MemoryType.PROFILE, 0.85, "new_job",
                             _slot("employer", _value(m["v"])), correction=True)
        if verb != "moved":
            # "I switched to Google", "I left Berlin for Munich": which thing changed is
            # read from the user's current values the sentence names
            return Extracted(s, MemoryType.PROFILE, 0.85, "moved_to", _slot("employer",
                             _value(m["v"])), correction=True, alternatives=("city",),
                             tentative=True)
    m = _MOVED.search(s)
    if m and not _NEGATED_CLAUSE.search(s[:m.start("v")]) and (
            _NAMED.search(_value(m["v"])) or (s.islower() and not _NOT_A_PLACE.match(m["v"]))):
        return Extracted(s, MemoryType.PROFILE, 0.9, "moved", _slot("city", _value(m["v"])),
                         correction=True, alternatives=("employer",))
    m = _NEW_HOME.search(s)
    if m and not _NEGATED_CLAUSE.search(s[:m.start()]):
        value = next(v for v in m.groups() if v)
        return Extracted(s, MemoryType.PROFILE, 0.85, "new_home", _slot("city", _value(value)),
                         correction=True)
    m = _SINCE_MOVE.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.85, "moved", _slot("city", m["v"]),
                         correction=True)
    m = _LIVE.search(s)
    if m and not _PAST_STAY.search(s):
        value = _value(m["v"] or m["v2"])
        if not _ONE_OFF_OBJECT.match(value):
            return Extracted(s, MemoryType.PROFILE, 0.9, "city", _slot("city", value),
                             correction=bool(re.search(r"\bnow\b", s, re.IGNORECASE)))
    m = _FROM.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.85, "hometown",
                         _slot("hometown", _value(m["v"])))
    m = _ALLERGY.search(s)
    if m:  # several allergies can hold at once: free text, no single-valued slot
        return Extracted(s, MemoryType.PROFILE, 0.95, "allergy")
    m = _DIET_CHANGE.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet_change",
                         _slot("diet", m["v"].lower()), correction=True)
    if _MEAT_AGAIN.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet_change",
                         _slot("diet", "not vegetarian"), correction=True)
    m = _DIET.search(s)
    if m:  # "I've been vegan since May" states the current diet: newest wins
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet", _slot("diet", m["v"].lower()),
                         correction="been" in m.group(0).lower())
    m = _AGE.search(s)
    if m:
        # "I turned 30": a birthday changes the age
        return Extracted(s, MemoryType.PROFILE, 0.9, "age", _slot("age", _age(m["v"] or m["v2"])),
                         correction=m["v2"] is not None or _CHANGE_WORDS.search(s) is not None)
    m = _BIRTHDAY.search(s)
    if m and not _FUTURE.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "birthday",
                         _slot("age", _age(m["v"] or m["v2"])), correction=True)
    m = _NEW_JOB.search(s) or _HIRED_ME.search(s)
    if m and not _NEGATED_CLAUSE.search(s[:m.end()]) and not _PAST_JOB.search(s, m.end()):
        value = next(v for k, v in m.groupdict().items() if v and k.startswith("v"))
        return Extracted(s, MemoryType.PROFILE, 0.85, "new_job", _slot("employer", _value(value)),
                         correction=True)
    m = _BECAME.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.85, "career_change",
                         _slot("occupation", _clean(m["v"]).lower()), correction=True)
    m = _WORK_AS.search(s)
    if m:  # "I've been working as a nurse since March" states the current job
        return Extracted(s, MemoryType.PROFILE, 0.85, "occupation",
                         _slot("occupation", _ROLE_END.sub("", _value(m["v"]))),
                         correction="been" in m.group(0).lower())
    m = _WORK_AT.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.85, "employer",
                         _slot("employer", _value(m["v"] or m["v2"] or m["v3"])))
    m = _IM_A.search(s)
    if m and not _NEGATED_CLAUSE.search(m.group(0)):
        return Extracted(s, MemoryType.PROFILE, 0.8, "occupation",
                         _slot("occupation", _clean(m["v"]).lower()))
    m = _NOT_DIET.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet",
                         _slot("diet", f"not {m['v'].lower()}"))
    m = _SPEAK.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.8, "language")
    m = _HAVE.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.8, "family")
    m = _MY_ATTR.match(s)
    if m:
        attr = m["attr"].strip().lower()
        new = _NEW_ATTR.match(attr)  # "my new employer is ...": a change of that attribute
        if new is not None:
            attr = attr[new.end():]
        if _DURABLE_ATTRS.match(attr):
            value = _value(m["v"])
            kind = MemoryType.PREFERENCE if re.match(r"favou?rite|preferred|usual|go-to", attr) \
                or attr.endswith(("preference", "budget", "goal")) else MemoryType.PROFILE
            return Extracted(s, kind, _confidence(0.9, value, s), "my_attribute",
                             _slot(attr, value), correction=new is not None)
    return None


_NEW_ATTR = re.compile(r"^(?:new|current|present)\s+")

_NOT_NAMES = frozenset(
    """fine good great ok okay sorry sure here back home done ready tired hungry busy free
    happy sad sick new glad excited late early in out not so""".split()
)


#: when to phone the user ("call me in the evening"; not "call me back tomorrow")
_CALL_TIME = re.compile(
    r"^(?:please\s+)?(?:only\s+|always\s+)?call me\s+(?:only\s+)?(?:in the|at|on|before|after|"
    r"between|around|during)\b(?!.*\b(?:today|tonight|tomorrow)\b)",
    re.IGNORECASE,
)


def _en_preference(s: str) -> Extracted | None:
    if _CALL_TIME.search(s):
        return Extracted(s, MemoryType.PREFERENCE, 0.8, "call_time")
    m = _DISLIKE.search(s)
    if m:
        obj = m["v"] or m["v2"] or ""
        return Extracted(s, MemoryType.PREFERENCE, _confidence(0.85, obj, s), "dislike")
    m = _RATHER.search(s)
    if m:
        return Extracted(s, MemoryType.PREFERENCE, _confidence(0.8, m["v"], s), "rather")
    m = _PREFER.search(s)
    if m:
        base = 0.9 if m["verb"].lower() == "prefer" else 0.85
        return Extracted(s, MemoryType.PREFERENCE, _confidence(base, m["v"], s), m["verb"].lower())
    m = _FAN.search(s)
    if m:
        return Extracted(s, MemoryType.PREFERENCE, _confidence(0.8, m["v"], s), "fan")
    m = _HABIT.search(s)
    if m:
        return Extracted(s, MemoryType.PREFERENCE, _confidence(0.8, m["v"], s), "habit")
    m = _HABITUAL.match(s)
    if m and not _NOT_HABIT.search(s):
        verb = m["verb"].lower()
        kind = MemoryType.PROFILE if verb in _PROFILE_VERBS else MemoryType.PREFERENCE
        return Extracted(s, kind, _confidence(0.7, m["rest"], s), "habitual")
    return None


# ---------------------------------------------------------------- Chinese rules

_ZH_NAME = re.compile(r"我(?:叫|的(?P<new>新)?名字(?:是|叫)|名字叫)"
                      r"(?P<v>[\u4e00-\u9fffA-Za-z·]{1,12})")
_ZH_LIVE_STRICT = re.compile(
    r"我(?:现在|目前|如今)?(?:住在|居住在|定居在|定居)(?P<v>[^，,。！!；;]{1,20})"
)
#: when a change happened: the only words allowed between 我 and the verb of a change
#: (a plan, a wish or a relative in between is not the user's change: 我明年可能搬到 / 我妹妹搬到)
_ZH_WHEN = (
    r"(?:们)?(?:全家|一家|家)?(?:上个月|上周|去年|今年|前年|最近|前几天|前阵子|已经|刚刚|刚|"
    r"终于|也|又|重新|现在|如今|目前|上个星期|这个月|年初|年底|上周末|前不久|不久前)*"
)
#: a Chinese place or company: up to a clause break
_ZH_X = r"[^，,。！!；;？?]"
#: where the user lives now, verb after the place: 我在上海定居了 / 我现在在上海住 / 我住上海
_ZH_SETTLED = re.compile(
    rf"我{_ZH_WHEN}(?:在|到)(?P<v>{_ZH_X}{{1,12}}?)(?:定居|安家|落户|安顿|住|生活)(?:下来|下)?了?"
    rf"(?:[。！!~]|$)|我{_ZH_WHEN}(?:落户|(?<=现在|目前|如今)住)(?!在)(?P<v2>{_ZH_X}{{1,12}}?)了?"
    r"(?:[。！!~]|$)"
)
#: a job change, then where: 我换工作了，现在在阿里巴巴 / 我辞职了，去了阿里巴巴
_ZH_JOB_SWITCH = re.compile(r"换了?(?:一份|份)?(?:新)?工作|辞职|离职|跳槽|辞了工作")
_ZH_SWITCHED_TO = re.compile(
    rf"(?:{_ZH_JOB_SWITCH.pattern})了?[，,\s]*(?:现在|目前|如今|然后|后来|最后)?(?:就)?"
    rf"(?:在|去了|进了|到了|加入了?|入职了?)(?P<v>{_ZH_X}{{1,20}})"
)
#: a new employer with the verb after it: 我去阿里巴巴上班了 / 我被阿里巴巴录用了
_ZH_JOINED = re.compile(
    rf"我{_ZH_WHEN}(?:去|到|进)了?(?P<v>{_ZH_X}{{1,20}}?)(?:工作|上班|任职)了"
    rf"|我{_ZH_WHEN}被(?P<v2>{_ZH_X}{{1,20}}?)(?:录用|聘用|雇用|聘请|招聘)了"
    # 我从腾讯跳到了华为 / 我换到华为工作了
    rf"|我{_ZH_WHEN}(?:从{_ZH_X}{{1,10}}?)?跳(?:到|去)了?(?P<v3>{_ZH_X}{{1,20}}?)(?:工作|上班)?了?(?:[。！!~]|$)"
    rf"|我{_ZH_WHEN}(?:换|转)(?:到|去)了?(?P<v4>{_ZH_X}{{1,20}}?)(?:工作|上班)了?(?:[。！!~]|$)"
)
#: a new name: 我改名叫李明了 / 我把名字改成了李明
_ZH_RENAMED = re.compile(
    rf"我{_ZH_WHEN}(?:改名|把名字改|的名字改|名字改)(?:叫|为|成|作)了?(?P<v>[\u4e00-\u9fffA-Za-z·]{{1,8}}?)"
    r"(?:了)?(?:[。！!~]|$)"
)
#: who moves with the user: 我和老公 / 我跟家人一起
_ZH_WITH = r"(?:(?:和|跟|与|同)[\u4e00-\u9fff]{1,4}?(?:一起)?)?"
_ZH_MOVED = re.compile(rf"我{_ZH_WITH}{_ZH_WHEN}(?:从[^，,。！!；;]{{1,10}}?)?搬(?:家)?"
                       r"(?:回到|回|到|去|来)"
                       r"了?"
                       r"(?P<v>[^，,。！!；;]{1,20})")
#: an age in digits or Chinese numerals (30, 三十, 二十九)
_ZH_N = r"(?:\d{1,3}|[一二两三四五六七八九]?十[一二三四五六七八九]?|[一二两三四五六七八九])"
_ZH_AGE = re.compile(rf"我{_ZH_WHEN}(?:今天|昨天)?(?:刚|刚刚)?(?:满)?(?:了)?(?P<v>{_ZH_N})(?:周)?岁"
                     r"(?!(?:的)?生日)"
                     rf"|我(?:今年|已经|现在|刚|刚刚|满)+(?P<v2>{_ZH_N})(?:周?岁)?了")
#: a birthday: 今天是我30岁生日 / 我刚过了30岁生日 (not 明天 / 下个月)
_ZH_BIRTHDAY = re.compile(
    rf"我(?:的)?(?P<v>{_ZH_N})岁(?:的)?生日"
    rf"|我{_ZH_WHEN}(?:昨天|前天|今天|上周|上个月)?(?:刚)?过(?:完)?了?(?P<v2>{_ZH_N})岁(?:的)?生日"
)
_ZH_DIGITS = {d: n for n, ds in enumerate("一 二两 三 四 五 六 七 八 九".split(), 1) for d in ds}


def _zh_age(value: str) -> str:
    """"三十" -> "30", "二十九" -> "29", "30" -> "30"."""
    if value.isdigit():
        return value
    head, ten, tail = value.partition("十")
    if not ten:
        return str(_ZH_DIGITS.get(value, 0))
    return str(_ZH_DIGITS.get(head, 1) * 10 + _ZH_DIGITS.get(tail, 0))
_ZH_FUTURE = re.compile(r"明天|后天|下周|下个月|明年|快要|快到|将要|就要|要到")
_ZH_NEW_JOB = re.compile(rf"我{_ZH_WHEN}(?:跳槽|换工作|入职|加入|转到)(?:到|去)?了?"
                         r"(?P<v>[^，,。！!；;]{1,20})")
_ZH_CAREER = re.compile(
    rf"我{_ZH_WHEN}(?:转行|改行|成为|成了|当上|当了|当(?!过)|变成)(?:当|做|成为|去当)?了?(?:一名|一个|名|个)?"
    r"(?P<v>[^，,。！!；;]{0,8}?(?:工程师|程序员|老师|教师|医生|护士|学生|设计师|经理|律师|会计|记者|"
    r"研究员|厨师|建筑师|顾问|产品经理|司机|自由职业者))"
)
_ZH_VEGAN = re.compile(
    rf"我{_ZH_WHEN}(?:是|成了|成为了?|变成了?|开始)?(?:一名|一个)?"
    r"(?:吃全素|纯素食者|纯素主义者|严格素食者|全素食者)"
)
_ZH_NOT_VEG = re.compile(rf"我{_ZH_WHEN}(?:不再吃素|不吃素了|开始吃肉|又吃肉|重新吃肉|吃肉了|"
                         r"开始吃荤|不是素食者了)")
#: 叫我小王(就行/吧) - a preferred name; 别叫我 / 不要叫我 is not one
_ZH_CALL = re.compile(
    r"(?:^|请|你|你可以|可以|就|大家都|都|你就|以后|今后|以后就|以后都)叫我"
    r"(?P<v>[\u4e00-\u9fffA-Za-z·]{1,6}?)"
    r"(?:就行了?|就好了?|就可以了?|就是了|吧|好了|即可|可以了)?[。！!~]?$"
)
_ZH_NOT_CALL = re.compile(r"(?:别|不要|不用|不许|不准)叫我")
_ZH_KIN = re.compile(
    r"^我(?:的)?(?:妹妹|姐姐|哥哥|弟弟|爸爸|妈妈|父亲|母亲|父母|儿子|女儿|老公|老婆|丈夫|"
    r"妻子|朋友|同事|家人|孩子|男朋友|女朋友|室友|邻居|老板)"
)
#: a clause with the subject dropped that states the present: 我换工作了，现在在阿里巴巴上班
_ZH_PRESENT_CLAUSE = re.compile(r"[，,]\s*(?=(?:现在|目前|如今)(?!是不是)"
                                r"|(?:又|就|然后|后来|最后)?(?:搬|住在|入职|加入|开始吃|当上|成了))")
_ZH_WORK_AT = re.compile(rf"我{_ZH_WHEN}在(?P<v>[^，,。！!；;]{{1,20}}?)(?:工作|上班|任职)")
_ZH_PROFESSIONS = "工程师|程序员|老师|教师|医生|护士|学生|设计师|经理|律师|会计|记者|研究员|厨师|" \
                  "建筑师|顾问|产品经理|司机|自由职业者|退休"
_ZH_IM_A = re.compile(
    rf"我是(?:一名|一个|个|名)?(?P<v>[^，,。！!；;]{{0,8}}?(?:{_ZH_PROFESSIONS}))"
)
_ZH_NOW_A = re.compile(
    rf"我{_ZH_WHEN}是(?:一名|一个|个|名)?(?P<v>[^，,。！!；;]{{0,8}}?(?:{_ZH_PROFESSIONS}))"
)
_ZH_DIET = re.compile(rf"我{_ZH_WHEN}(?:开始|改|改成|成了|成为了?|变成了?|是)?(?:一名|一个)?"
                      r"(?:素食者|素食主义者|吃素|吃全素|不吃肉)")
_ZH_CHANGE_ASPECT = re.compile(r"开始|改|成|变|现在|已经|如今|目前|最近")
_ZH_ALLERGY = re.compile(r"我对(?P<v>[^，,。！!；;]{1,20})过敏")
_ZH_MY_ATTR = re.compile(r"^我(?:的|(?=最喜欢的|最爱的))(?P<attr>[^，,。！!；;是]{1,10})是"
                         r"(?P<v>[^，,。！!；;]{1,40})")
_ZH_DURABLE_ATTRS = re.compile(
    r"^(?:名字|全名|英文名|邮箱|电子邮箱|电话|手机|手机号|手机号码|生日|地址|家庭住址|老家|职业|工作|公司|"
    r"血型|母语|鞋码|时区|(?:最)?喜欢的.+|最爱的.+|常用的.+|偏好的.+|.*预算|.*目标)$"
)
_ZH_STANDING = re.compile(
    r"^(?:请)?(?:以后|今后|从现在(?:开始|起)|从今天(?:开始|起)|从明天(?:开始|起)|从今(?:以后|往后)|"
    r"往后|下次起)"
    r"(?:都|请|就|也|一律)?[,，:：]?(?!会|可能|也许|的|再说)(?P<rest>.+)$"
)
_ZH_DONT = re.compile(
    r"^(?:请|麻烦)?(?:你)?(?P<neg>不要|别|不用|不许|禁止)(?P<again>再)?(?P<rest>.+)$"
)
_ZH_LIKE = re.compile(
    r"我(?:比较|更|最|很|非常|特别|一直|还是|也)?"
    r"(?P<verb>喜欢|爱|偏好|偏爱|习惯|倾向于)(?P<v>.+)"
)
_ZH_DISLIKE = re.compile(
    r"我(?:很|非常|特别|最)?"
    r"(?P<verb>不喜欢|讨厌|不爱|不吃|不喝|受不了|不能吃|不想要)(?P<v>.+)"
)
_ZH_HABIT = re.compile(r"我(?P<adv>总是|一直|通常|一般|每次都|向来|从来不|从不)(?P<v>.+)")
#: habits and states ("我每天喝两杯咖啡", "我现在不喝咖啡了", "我有两个孩子")
_ZH_HABITUAL = re.compile(
    r"^我(?:每天|每周|每晚|每个周末|每次|经常|平时|一般|通常|早上|晚上|周末|现在|已经){0,3}"
    r"(?:都|也|还)?(?:不再|不|没)?(?P<verb>喝|吃|抽烟|吸烟|跑步|游泳|健身|锻炼|开车|坐|骑车|用|去|有)"
    r"(?P<rest>.*)$"
)
_ZH_NOT_HABIT = re.compile(r"要|想|需要|打算|准备|今天|明天|昨天|刚才|马上|一会|帮我|请")
_ZH_NOT_BUT = re.compile(
    r"不是(?P<old>[^，,。而]{1,20})[，,\s]*(?:而)?是(?P<new>[^，,。！!；;]{1,20})"
)


def _chinese(s: str) -> Extracted | None:
    m = _ZH_NAME.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.9, "name", _slot("name", m["v"]),
                         correction=m["new"] is not None)
    m = _ZH_CALL.search(s)
    if m and not _ZH_NOT_CALL.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "call_me", _slot("name", m["v"]),
                         correction=True)
    m = _ZH_RENAMED.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.9, "call_me", _slot("name", m["v"]),
                         correction=True)
    if _ZH_KIN.match(s):
        return None  # a relative's move or job is not the user's
    m = _ZH_SWITCHED_TO.search(s) or _ZH_JOINED.search(s)
    if m:
        value = _zh_value(next((v for v in m.groupdict().values() if v), ""))
        if value:
            return Extracted(s, MemoryType.PROFILE, 0.85, "new_job", _slot("employer", value),
                             correction=True)
    m = _ZH_NEW_JOB.search(s)
    if m:
        value = _zh_value(m["v"])
        if value.endswith(("工作", "上班")):
            value = value[:-2]
        return Extracted(s, MemoryType.PROFILE, 0.85, "new_job", _slot("employer", value),
                         correction=True)
    m = _ZH_CAREER.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.85, "career_change",
                         _slot("occupation", _zh_value(m["v"])), correction=True)
    if _ZH_NOT_VEG.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet_change",
                         _slot("diet", "not vegetarian"), correction=True)
    if _ZH_VEGAN.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet_change", _slot("diet", "vegan"),
                         correction=True)
    m = _ZH_BIRTHDAY.search(s)
    if m and not _ZH_FUTURE.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "birthday",
                         _slot("age", _zh_age(m["v"] or m["v2"])), correction=True)
    for pattern, rule in ((_ZH_MOVED, "moved"), (_ZH_SETTLED, "city"), (_ZH_LIVE_STRICT, "city")):
        m = pattern.search(s)
        value = _zh_value(m["v"] or m.groupdict().get("v2") or "") if m else ""
        if value:  # 搬回家了 / 在酒店住 name no city: nothing is read
            return Extracted(s, MemoryType.PROFILE, 0.9, rule, _slot("city", value),
                             correction=pattern is not _ZH_LIVE_STRICT or "现在" in s)
    m = _ZH_ALLERGY.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.95, "allergy")
    m = _ZH_DIET.search(s)
    if m:  # 我开始吃素了 / 我现在吃素: the current diet, newest wins
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet", _slot("diet", "vegetarian"),
                         correction=_ZH_CHANGE_ASPECT.search(m.group(0)) is not None
                         or s[m.end():].startswith("了"))
    m = _ZH_AGE.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.9, "age",
                         _slot("age", _zh_age(m["v"] or m["v2"])),
                         correction="满" in m.group(0) or "了" in m.group(0))
    m = _ZH_WORK_AT.search(s)
    if m and not _ONE_OFF_OBJECT.match(m["v"]):
        return Extracted(s, MemoryType.PROFILE, 0.85, "employer",
                         _slot("employer", _zh_value(m["v"])))
    m = _ZH_IM_A.search(s)
    if m is None:
        m = _ZH_NOW_A.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.8, "occupation",
                         _slot("occupation", _zh_value(m["v"])))
    m = _ZH_MY_ATTR.match(s)
    if m and _ZH_DURABLE_ATTRS.match(m["attr"]):
        attr = m["attr"]
        kind = MemoryType.PREFERENCE if any(w in attr for w in ("喜欢", "偏好", "常用", "最爱",
                                                                "预算", "目标")) \
            else MemoryType.PROFILE
        value = _zh_value(m["v"])
        return Extracted(s, kind, _confidence(0.9, value, s), "my_attribute", _slot(attr, value))
    m = _ZH_DISLIKE.search(s)
    if m:
        return Extracted(s, MemoryType.PREFERENCE, _confidence(0.85, m["v"], s), "dislike")
    m = _ZH_LIKE.search(s)
    if m:
        return Extracted(s, MemoryType.PREFERENCE, _confidence(0.85, m["v"], s), "like")
    m = _ZH_HABIT.search(s)
    if m:
        return Extracted(s, MemoryType.PREFERENCE, _confidence(0.8, m["v"], s), "habit")
    m = _ZH_HABITUAL.match(s)
    if m and not _ZH_NOT_HABIT.search(s):
        kind = MemoryType.PROFILE if m["verb"] == "有" else MemoryType.PREFERENCE
        return Extracted(s, kind, _confidence(0.7, m["rest"], s), "habitual")
    return None


# ---------------------------------------------------------------- driver


#: "I left Berlin and moved to Munich": the second verb is read as its own clause
_AND_CHANGE = re.compile(
    r"\s+and\s+(?:then\s+)?(?=(?:now\s+|just\s+|finally\s+)?(?:moved(?!\s+in\b)|relocated|joined|became|"
    r"work|started|live|went)\b)",
    re.IGNORECASE,
)
_SUBJECT_ANY = re.compile(r"\b(?:i|we|my|me|our)\b|我", re.IGNORECASE)
_SUBJECT_I = re.compile(r"^(?:i|we)\b(?!'d)", re.IGNORECASE)
#: a chat turn without its subject: "Started at Google last week", "Just moved to Munich"
_NO_SUBJECT = re.compile(r"^(?:just\s+|finally\s+|recently\s+)?(?:started\s+(?:at|working at|a new "
                         r"job at)|joined|moved to|relocated to|turned\s+\d+|went vegan|"
                         r"went vegetarian|became an?\s|settled in)\b", re.IGNORECASE)


def _clauses(sentence: str) -> list[str]:
    parts = _CLAUSE_SPLIT.split(sentence)
    out: list[str] = []
    carry = ""
    for i, part in enumerate(parts):
        part = _LEAD.sub("", part.strip())
        if carry:  # "After five years at Siemens, I moved to Google": the work context stays
            part, carry = f"{carry}, {part}", ""
        elif i < len(parts) - 1 and not _SUBJECT_ANY.search(part) \
                and _JOB_CONTEXT.search(part):
            carry = part
            continue
        if _SUBJECT_I.match(part):
            head, *rest = _AND_CHANGE.split(part)
            out += [head] + [f"I {r}" for r in rest]
        elif _NO_SUBJECT.match(part):
            out.append(f"I {part}")
        elif part.startswith("我") and not _ZH_KIN.match(part) \
                and not _ZH_JOB_SWITCH.search(part):  # 我换工作了，现在在X: read whole
            head, *rest = _ZH_PRESENT_CLAUSE.split(part)
            out += [head] + [f"我{r}" for r in rest]
        else:
            out.append(part)
    return out


#: typographic apostrophes read as ``'`` ("I’ve moved" is "I've moved"); one character for one
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'", "\uff07": "'", "`": "'"})
#: contractions typed without the apostrophe ("Im vegan now", "ive moved")
_BARE_CONTRACTION = re.compile(r"\b(?P<i>[Ii])(?P<c>m|ve)(?=\s+[a-z])")
#: a clause quoted inside a sentence ('She said "I moved to Munich"') is someone's words,
#: not the user's statement: it is blanked before reading (a quoted name stays: 'call me "Kate"')
_QUOTED_CLAUSE = re.compile(r"(?<=\S)(?P<q>\s*[:：,，]?\s*(?:\"[^\"]*\s[^\"]*\"|“[^”]*\s[^”]*”"
                            r"|‘[^’]*\s[^’]*’|「[^」]*」|『[^』]*』|“[^”]{4,}”))")


def _normalise(text: str) -> str:
    """Apostrophes and bare contractions as the rules expect them."""
    text = text.translate(_APOSTROPHES)
    return _BARE_CONTRACTION.sub(lambda m: f"{m['i']}'{m['c']}", text)


def _unquoted(sentence: str) -> str:
    return _QUOTED_CLAUSE.sub(" ", sentence)


def _sentences(text: str) -> list[str]:
    out = []
    for sentence in _SENTENCE_SPLIT.split(_normalise(text)):
        sentence = _unquoted(sentence)
        for part in _clauses(sentence):
            part = part.strip()
            if len(part) >= 2:
                out.append(part[:MAX_CANDIDATE_CHARS])
    return out


def _read(s: str) -> Extracted | None:
    """One sentence -> at most one candidate (first rule that reads it wins)."""
    zh = _CJK.search(s) is not None
    # explicit "not X but Y" corrections
    m = _ZH_NOT_BUT.search(s) if zh else _NOT_BUT.match(_CORRECTION_MARK.sub("", s))
    if m is not None:
        old = (m["old"] if zh else (m["old"] or m["old2"])) or ""
        inner = _read_plain(_CORRECTION_MARK.sub("", s), zh)
        kind = inner.type if inner is not None else MemoryType.PREFERENCE
        slot = inner.slot if inner is not None else None
        return Extracted(s, kind, 0.9, "not_but", slot, correction=True,
                         replaces=_clean(old) or None)
    # "actually, ..." / "其实..." in front of something readable
    stripped = _CORRECTION_MARK.sub("", s)
    if stripped != s:
        inner = _read_plain(stripped, zh)
        if inner is not None:
            return Extracted(s, inner.type, max(inner.confidence, 0.9)
                             if inner.confidence >= 0.5 else inner.confidence,
                             "correction+" + inner.rule, inner.slot, correction=True)
        return None
    # standing instructions
    m = (_ZH_STANDING.match(s) or _ZH_STANDING_END.match(s)) if zh else _STANDING.match(s)
    rest = ""
    if m is not None:
        rest = (m["rest"] if zh else (m["rest"] or m["rest2"])) or ""
    elif not zh and _STANDING_ANY.search(s) is not None:
        rest = _STANDING_ANY.sub("", s).strip(" ,")
    if (m is not None or rest) and _NOT_FOR_THE_ASSISTANT.search(s) is None \
            and _THIRD_PARTY.match(rest) is None:
        inner = _read_plain(rest, zh)
        slot = inner.slot if inner is not None else None
        kind = inner.type if inner is not None else MemoryType.PREFERENCE
        return Extracted(s, kind, 0.9, "from_now_on", slot, correction=True)
    if zh:
        m = _ZH_DONT.match(s)
        if m is not None and not _ZH_NOT_BUT.search(s):
            conf = _confidence(0.85, m["rest"], s)
            return Extracted(s, MemoryType.PREFERENCE, conf, "dont",
                             correction=m["again"] is not None)
    else:
        m = _ALWAYS_CMD.match(s)
        if m is not None:
            adv = m["adv"].lower()
            standing = adv in ("always", "never", "don't ever", "do not ever") or \
                _STANDING_HINT.search(s) is not None
            if standing:
                return Extracted(s, MemoryType.PREFERENCE, _confidence(0.85, m["rest"], s),
                                 "always", correction=_STANDING_HINT.search(s) is not None)
    return _read_plain(s, zh)


#: a condition or a supposition is not a change: "if I moved to Munich", "when I lived in
#: Munich", "如果我搬到上海", "要是我换了工作"
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|whether|suppose|supposing|imagine|in case)\s+(?:i|we)\b"
    r"|^(?:when|while|before|until)\s+(?:i|we)\b"
    r"|^(?:如果|要是|假如|假设|万一|倘若|若是|如若|即使|就算|等到?)|(?:的话)",
    re.IGNORECASE,
)


def _read_plain(s: str, zh: bool) -> Extracted | None:
    if _is_question(s) and not _is_request(s):
        return None
    if _HYPOTHETICAL.search(s):
        return None
    found = _chinese(s) if zh else _english(s)
    if found is not None and found.slot is not None and not found.correction \
            and is_correction_text(s):
        # "my email is now ...", "I now work at ...": the new value replaces the old
        return Extracted(found.content, found.type, found.confidence, found.rule, found.slot,
                         correction=True)
    return found


def extract(text: str, *, role: str = "user") -> list[Extracted]:
    """Candidates read from one utterance; ``[]`` for anything that is not a
    durable statement by the user (small talk, questions, moods, task chatter).

    Only the user's own turns are read: an assistant saying "I prefer..." is
    not a fact about the user.
    """
    if role.strip().lower() not in ("user", "human"):
        return []
    out: list[Extracted] = []
    seen: set[str] = set()
    for sentence in _sentences(text):
        if len(sentence) > MAX_SENTENCE_CHARS:
            continue
        if _is_question(sentence) and not _is_request(sentence):
            continue
        found = _read(sentence)
        if found is None or found.content.casefold() in seen:
            continue
        seen.add(found.content.casefold())
        out.append(found)
    return out
