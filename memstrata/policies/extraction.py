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

Layout: this module is the driver and the public face - sentences and clauses,
quotes, corrections ("actually", "not X but Y", "其实"), standing instructions,
questions and conditions, then the first rule that reads a clause wins. The rule
tables are private modules it imports (never the reverse):
:mod:`~memstrata.policies._extraction_en` (English),
:mod:`~memstrata.policies._extraction_zh` (Chinese) and
:mod:`~memstrata.policies._extraction_common` (the :class:`Extracted` record, value
cleaning, confidence and slot helpers both languages share).
"""

from __future__ import annotations

import re
from dataclasses import replace

# the rule tables live in private modules; the names below are what the driver uses
# (and the module's constants, kept importable from here)
from memstrata.policies._extraction_common import _CHANGE_WORDS, Extracted, _clean, _confidence
from memstrata.policies._extraction_common import HEDGED_CONFIDENCE as HEDGED_CONFIDENCE
from memstrata.policies._extraction_common import MAX_ATTRIBUTE_CHARS as MAX_ATTRIBUTE_CHARS
from memstrata.policies._extraction_common import MAX_SENTENCE_CHARS as MAX_SENTENCE_CHARS
from memstrata.policies._extraction_common import MAX_VALUE_CHARS as MAX_VALUE_CHARS
from memstrata.policies._extraction_common import ONE_OFF_CONFIDENCE as ONE_OFF_CONFIDENCE
from memstrata.policies._extraction_en import (
    _ALWAYS_CMD,
    _JOB_CONTEXT,
    _NOT_BUT,
    _QUESTION_START,
    _REQUEST,
    _STANDING,
    _STANDING_ANY,
    _STANDING_HINT,
    _english,
    employer_beside_role,
)
from memstrata.policies._extraction_zh import (
    _ZH_CALL,
    _ZH_DONT,
    _ZH_JOB_SWITCH,
    _ZH_KIN,
    _ZH_NOT_BUT,
    _ZH_NOT_CALL,
    _ZH_OTHER_PEOPLE,
    _ZH_PRESENT_CLAUSE,
    _ZH_QUESTION,
    _ZH_STANDING,
    _ZH_STANDING_END,
    _ZH_STANDING_MID,
    _chinese,
    as_written,
    spaces_as_commas,
    to_simplified,
    zh_employer_beside_role,
)
from memstrata.types import USER_SUBJECT, MemoryType, Slot

__all__ = ["USER_SUBJECT", "Extracted", "canonical_attribute", "extract", "is_correction_text",
           "is_statement"]

#: subject of every slot read from the user's own words

MAX_CANDIDATE_CHARS = 500


# ---------------------------------------------------------------- helpers

#: a sentence ends at . ! ? ; - not after an abbreviation ("St. Louis", "Dr. Weber")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])(?<!\bSt\.)(?<!\bMt\.)(?<!\bFt\.)(?<!\bDr\.)(?<!\bMr\.)"
                             r"(?<!\bMs\.)(?<!\bMrs\.)(?<!\bJr\.)(?<!\bSr\.)\s+"
                             r"|(?<=[。！？；])\s*|\n+"
                             # 以后都用英文回复我吧，想练练英语，对了，今天天气怎么样: a new topic
                             r"|(?:[，,]|…+|\.{3,})\s*(?=(?:对了|另外|顺便|话说|對了|順便|話說)[，,\s]?)"
                             # an emoji ends a sentence in chat ("gluten-free 😩 which beers
                             # can I still drink?")
                             r"|(?<=\S)\s*[\U0001F300-\U0001FAFF]+\s*(?=\S)")
#: a new clause about the speaker inside one sentence ("I'm Alice, I live in Berlin")
_CLAUSE_SPLIT = re.compile(
    # "can u give me a pancake recipe, and answer everything in german going forward": an
    # instruction after a request
    r",\s*(?:and|also|plus)\s+(?=(?:answer|reply|respond|write|talk|speak|use|keep)\s+"
    r"(?:\w+\s+){0,4}?(?:from\s+now\s+on|going\s+forward|from\s+here\s+on)\b)|"
    r"(?:,\s*|\s+)(?:and|but|so|also)\s+(?=(?:i|i'm|i've|i'd|my)\b)"
    r"(?!i\s+(?:accepted|took\s+it|said\s+yes)\b)|,\s*(?=(?:i|i'm|i've|my)\b(?!\s+new\s+(?:home|hometown|city)\b))"
    r"|[，,；]\s*(?=我)",
    re.IGNORECASE,
)
_CJK = re.compile(r"[\u3400-\u9fff]")
_LEAD = re.compile(r"^(?:(?:ok(?:ay)?|so|and|but|also|well|oh|btw|by the way|hey|hi|hello|"
                   r"也|嗯|哦)[,，:\s]+|(?:还有|另外|对了|顺便)[,，:\s]*)+", re.IGNORECASE)

_CORRECTION_MARK = re.compile(
    r"^(?:actually|correction|sorry|oops|wait|no(?!\s+(?:more|longer)\b)|i meant|"
    r"let me correct (?:that|myself)|"
    r"to correct (?:that|myself))[,:!\s—-]+"
    r"|^(?:其实|实际上|更正一下|纠正一下|更正|纠正|我说错了|说错了|不对)[,，:：\s]*",
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


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|im|i've|i'd|my|mine|we|we're|our|me|us)\b|我", re.I)
#: words of a reaction or an acknowledgement ("I think so", "I got it", 我知道了): a statement
#: needs two other content words (English) or four other characters (Chinese)
_REACTION_WORDS = frozenset(
    "think guess got get love like hate bad check later know see mean agree works work "
    "sounds sound looks look feel try maybe probably sure really".split())
_ZH_FUNCTION = re.compile(r"[我你他她它们的了是在这那个就都也很吧啊呢吗嘛呀哦么知道觉得"
                          r"可以好想要会能还有没不，,。！!？?\s]")
#: a request to the assistant, not a statement about the user
_REQUEST_START = re.compile(r"^(?:please|pls|can you|could you|would you|help me|remind me|"
                            r"tell me|show me|find me|book me|give me|get me|send me|let's|"
                            r"帮我|请|麻烦|给我|提醒我|"
                            r"(?:明天|今天|今晚|后天|下午|上午|晚上|早上|\d+点|[一二三四五六七八九十]+点)"
                            r"[^，,。]{0,8}提醒我)", re.I)


def is_statement(text: str) -> bool:
    """Does the user's ``text`` state something about themselves (a sentence in the first
    person that is neither a question nor a request, and is not small talk)?

    >>> is_statement("I take the 7:40 bus to work."), is_statement("Can you book a table?")
    (True, False)
    >>> is_statement("最近开始开车上班了。"), is_statement("楼下的桂花开了。")
    (True, False)
    """
    from memstrata.policies.write import memorability

    if _CJK.search(text):  # traditional characters and written Cantonese read as Mandarin
        text = to_simplified(text)
    # the clauses a question rests on - not those of a request ("帮我算一下，每个月存两千，
    # 一年下来有多少？" supposes, it does not tell)
    stating = [s for s in _sentences(text) if _states(s)] + [
        c for s in _sentences(text) if _is_question(s) and not _REQUEST_START.match(s)
        for c in _lead_clauses(s) if _states(c)]
    if not stating:
        return False
    worth, why = memorability(text)
    # a mood beside what it states keeps the statement (最近换到家附近的超级猩猩上团课了，
    # 单车课好累但很上瘾): then the part that states must be worth remembering on its own;
    # small talk stays small talk
    return worth or ("mood" in why and any(memorability(s)[0] for s in _stated_parts(stating)))


def _stated_parts(stating: list[str]) -> list[str]:
    """The clauses of the stating sentences (a mood in one of them is not the statement)."""
    return [c for s in stating for c in _GRANTED_SPLIT.split(s) if _states(c)]


def _states(sentence: str) -> bool:
    """A first-person (or subjectless, see :func:`_elided_first_person`) statement that is
    neither a question nor a request, and says enough."""
    return bool((_FIRST_PERSON.search(sentence) or _elided_first_person(sentence))
                and not _is_question(sentence) and not _REQUEST_START.match(sentence)
                and _substantial(sentence))


def _lead_clauses(sentence: str) -> list[str]:
    """The clauses before a question's own: "生酮第三周了，碳水基本不碰，这正常吗？",
    "Miso's been less itchy since the new food, should I switch for good?" (conditions
    and plans excluded)."""
    return [c for c in (_LEAD.sub("", part.strip())
                        for part in _GRANTED_SPLIT.split(sentence)[:-1])
            if c and not _GRANTED_NOT.search(c) and not _HYPOTHETICAL.search(c)]


#: a sentence whose subject is someone else (not the user's elided "I")
_SOMEONE_ELSE = re.compile(r"^(?:他|她|它|别人|有人|大家|朋友|同事|邻居|室友|同学|"
                           r"(?:he|she|they|it|someone|everyone|people)\b)", re.I)
#: an English sentence that starts with a past-tense verb: "Stepped on the scale ..."
_ELIDED_EN = re.compile(r"^(?:just |finally |recently |also )?[a-z]+ed\b", re.I)
#: ... or as a diary does, with "I've" or "I'm" left out: "been going to the Crunch on 3rd
#: Ave for a few weeks", "been on 100mg of sertraline", "first week at Chewy has been a lot"
_ELIDED_EN_STATE = re.compile(
    r"^(?:just |finally |also |so |ok |okay )*(?:been\s+(?:\w+ing|on|at|in|with|using|"
    r"taking)\b|first\s+(?:day|week|month|winter|summer|year|shift)\s+(?:at|in|on|with)\b|"
    # "finally caved and got an iPhone 15 Pro", "bit the bullet and bought a Kindle"
    r"(?:(?:[a-z]+ed|bit\s+the\s+bullet)\s+and\s+)?"
    r"(?:went|paid|bought|got|put|took|sold|left|quit|ran|made|found|picked\s+up|grabbed|"
    r"[a-z]+ed)\s+(?:my|our|a|an|the|fully|back|to|in|on|up|out|off|away|\d)\b)", re.I)
#: a Chinese clause about the user's life without a subject: a habit or a time of the
#: user's days (每天早上8km跑完膝盖有点疼, 每个月交完4800的房租, 这个月工资条上税前25k)
_ZH_HABIT = re.compile(r"每天|每周|每个?月|每晚|每次|每个?周末|天天|平时|这个月|这周|最近|这几天|"
                       r"这[两几一二三四五六七八九十]个?月|"
                       r"这几周|这几个?周末|今天|昨天|今早|昨晚|上周|前几天|今年|第[一二三四五六七八九十\d]+(?:周|天|个月|次)")
#: ... nor a plan or a request (今年五一想带家里人去云南玩一趟, 帮我算一下，每个月存两千)
_ZH_PLAN_OR_ASK = re.compile(r"想|打算|准备|计划|要去|帮我|请|麻烦|吧")
#: ... unless its subject is the world: the weather, prices, the news, the neighbourhood
_ZH_WORLD = re.compile(r"天气|下雨|下雪|降温|升温|刮风|油价|房价|物价|股市|大盘|股票|基金|新闻|"
                       # 楼下的桂花开了 (the place as the subject), not 楼下Manner的冰美式
                       r"热搜|(?:^|[，,])(?:楼下|外面|小区)|花开|开花|(?:涨|跌)了|疫情|流感|政策")


#: how a Chinese clause without a subject starts when the user is its subject: times and
#: aspect adverbs, then a verb of the user's own doing (上午去建行激活工资卡, 最近每天十点半就
#: 上床了, 又去了巷子口那家火锅, 来成都快一个月了); "楼下的桂花开了", "最近油价又涨了",
#: "今天天气不错" start with a subject of their own, "明天去北京" is a plan
_ZH_TIME = (r"(?:最近|现在|如今|目前|今天|昨天|前天|上午|下午|中午|晚上|早上|今早|昨晚|周末|上周|"
            r"这周|本周|上个月|这个月|今年|去年|每天|每周|每晚|天天|刚刚|刚|又|已经|终于|一直|"
            r"总算|也|都|就|还|[\d一二三四五六七八九十两]+点半?)")
_ZH_DROPPED_SUBJECT = re.compile(
    rf"^(?P<time>{_ZH_TIME}*)(?:去|来|搬|换|办|买|报|学|戒|改|转|开始|上床|起床|睡|吃|喝|用|跑|练|"
    r"考|读|点|请|签|入职|离职|辞职|加入|参加|报名|订|租|卖|(?<=.)把)|^自从"
    # 新入手的小米14到了, 新租的一室户月租3100: the user's new things
    r"|^(?P<new>新(?:入手|买|换|租|办|配|提|订)的)")


def _elided_first_person(sentence: str) -> bool:
    """A statement the user makes without saying "I" - Chinese drops the subject
    (最近开始开车上班了, 上午去建行柜台激活工资卡, 儿子转到外国语小学了), English diaries
    do too ("Switched to oat milk last week") - and that names no one else as its subject:
    a change anywhere, or (Chinese) a clause that starts as the user's own do."""
    from memstrata.policies.temporal import reads_as_change

    s = sentence.strip()
    if _SOMEONE_ELSE.match(s):
        return False
    if _CJK.search(s):
        lead = _ZH_DROPPED_SUBJECT.match(s)
        return reads_as_change(s) or (lead is not None and (bool(lead["time"]) or "了" in s
                                                             or lead.group(0) == "自从"
                                                             or lead["new"] is not None)) \
            or (_ZH_HABIT.search(s) is not None and _ZH_WORLD.search(s) is None
                and _ZH_PLAN_OR_ASK.search(s) is None)
    return (reads_as_change(s) and _ELIDED_EN.match(s) is not None) \
        or _ELIDED_EN_STATE.match(_LEAD.sub("", s)) is not None


def _substantial(sentence: str) -> bool:
    """Enough content for a memory of its own (not "I think so", "我知道了")."""
    from memstrata._text import content_words

    if _CJK.search(sentence):
        return len(_ZH_FUNCTION.sub("", sentence)) >= 4
    words = [w for w in content_words(sentence) if w not in _REACTION_WORDS
             and not _FIRST_PERSON.fullmatch(w)]
    return len(words) >= 2


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
        if re.search(r"吧[。！!]?$", sentence) and (
                _ZH_STANDING.match(sentence) or _ZH_STANDING_END.match(sentence)
                or _ZH_STANDING_MID.search(sentence)):
            return True  # 以后回复都用繁体中文吧: a softened instruction
        return _ZH_CALL.search(sentence) is not None and _ZH_NOT_CALL.search(sentence) is None
    return _STANDING_ANY.search(sentence) is not None and _REQUEST.search(sentence) is not None


#: "from today on, the shop opens at nine" states a fact about someone else, and "my doctor
#: said from now on I should ..." reports someone's words: neither instructs the assistant
_THIRD_PARTY = re.compile(r"(?:he|she|they|his|her|their)\s+|the\s+(?:\w+\s+){1,2}(?:opens?"
                          r"|closes?|starts?|begins?|runs?|costs?|leaves?|arrives?)\b"
                          r"|(?:他|她|它|这家|那家)", re.IGNORECASE)
_NOT_FOR_THE_ASSISTANT = re.compile(r"\b(?:said|says|told\s+\w+|tells\s+\w+|wrote|thinks|asked)\b"
                                    r".*\b(?:from now on|going forward|henceforth)\b"
                                    # "my boss wants ...", "my wife's new rule for the house: ..."
                                    r"|\b(?:my|our)\s+(?:boss|wife|husband|partner|mom|mum|dad|"
                                    r"manager|landlord|school|teacher|company|team|doctor|kids?|"
                                    r"son|daughter|family|office|gym|club)(?:['’]s)?\s+"
                                    r"(?:(?!and\b|we\b|i\b)\w+\s+){0,3}?(?:wants?|rules?|policy|says|"
                                    r"said|insists?|"
                                    r"decided|requires?|announced)\b"
                                    # (之前说的简短作废，以后…: what the user said before)
                                    r"|(?:(?<![前才])说(?!的)|告诉我|觉得).*(?:以后|今后|从现在开始)",
                                    re.IGNORECASE)

#: how a clause speaking to the assistant (or of the user) starts: a request, an
#: imperative, "you", "I", "my" ("could you answer in German", "call me Kate", "I want
#: shorter answers"); "bins go out on Tuesdays", "the gym opens at 6" do not
_FOR_THE_ASSISTANT = re.compile(
    r"^(?:(?:please|so|and|but|ok|okay|also|oh|hey)[,!]?\s+)*"
    r"(?:(?:could|can|would|will)\s+(?:you|u|we)\b|(?:you|your|i|i'd|i'm|i’d|i’m|i'll|i’ll|my|me|"
    r"let's|let’s|call|answer|reply|respond|write|use|keep|talk|speak|address|give|send|show|"
    r"stop|don't|don’t|do not|always|never|just|only|tell|remind|refer|put|list|skip|avoid|"
    r"include|be|make|start|switch|no more|no|less|more)\b)", re.IGNORECASE)

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
        elif _NO_SUBJECT.match(part):  # "Started at X" -> "I started at X"
            out.append(f"I {part[:1].lower()}{part[1:]}")
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
_BARE_CONTRACTION = re.compile(r"\b(?P<i>[Ii])(?P<c>m|ve)(?=\s+[a-z0-9])")
#: a clause quoted inside a sentence ('She said "I moved to Munich"') is someone's words,
#: not the user's statement: it is blanked before reading (a quoted name stays: 'call me "Kate"')
_QUOTED_CLAUSE = re.compile(r"(?<=\S)(?P<q>\s*[:：,，]?\s*(?:\"[^\"]*\s[^\"]*\"|“[^”]*\s[^”]*”"
                            r"|‘[^’]*\s[^’]*’|「[^」]*」|『[^』]*』|“[^”]{4,}”))")


def _normalise(text: str) -> str:
    """Apostrophes and bare contractions as the rules expect them."""
    text = spaces_as_commas(text.translate(_APOSTROPHES))
    return _BARE_CONTRACTION.sub(lambda m: f"{m['i']}'{m['c']}", text)


def _unquoted(sentence: str) -> str:
    return _QUOTED_CLAUSE.sub(" ", sentence)


def _sentences(text: str) -> list[str]:
    return [part for part, _ in _parts(text)]


def _parts(text: str) -> list[tuple[str, bool]]:
    """The sentences and clauses to read, each with whether it goes on from the sentence
    before ("Also keep it short.": its first clause, after an "also", "and" or "plus")."""
    out = []
    for sentence in _SENTENCE_SPLIT.split(_normalise(text)):
        sentence = _unquoted(sentence)
        goes_on = _GOES_ON.match(sentence.strip()) is not None
        for part in _clauses(sentence):
            part = part.strip()
            if len(part) >= 2:
                out.append((part[:MAX_CANDIDATE_CHARS], goes_on))
            goes_on = False
    return out


#: the user dislikes what they are called ("... 我其实不太喜欢", "... and I hate it")
_DISLIKED = re.compile(r"不(?:太|怎么)?喜欢|讨厌|受不了|(?i:\b(?:hate|can't stand|cringe)\b)")
#: a sentence that goes on with the one before: "Also keep it short.", "And no emojis."
_GOES_ON = re.compile(r"^(?:also|and|plus|oh and|and also)\b[,:]?\s*", re.IGNORECASE)


_ZH_FILLER = re.compile(r"^(?:嗯+|呃+|额+|那个|哦+|啊+|对了|话说)[，,、\s]*")
_NO_NEED = re.compile(r"^(?:there['’]?s\s+|you\s+have\s+|you['’]ve\s+got\s+)?no\s+need\s+to\s+"
                      r"\w.*\b(?:anymore|any more)\b", re.IGNORECASE)

#: "no more bullet points pls, just write normal paragraphs": a way of answering withdrawn,
#: when the sentence asks ("pls") or goes on to tell the assistant what to do instead
#: ("no more tax returns for me!" does neither)
_NO_MORE = re.compile(r"^no\s+more\s+(?:\w+\s+){0,2}?(?:bullet|emoji|list|table|header|heading|"
                      r"markdown|jargon|exclamation|caps|summar|disclaimer|apolog|essay|"
                      r"small talk|code block|long (?:answer|repl))\w*[^,;.!?]*?"
                      r"\b(?:please|pls|plz)\b|^no\s+more\s+\w[^,;.!?]*?(?:"
                      r"[,;]\s*(?:just\s+|please\s+|pls\s+)*(?:write|use|answer|reply|"
                      r"respond|keep|give|stick\s+to|go\s+with)\b)", re.IGNORECASE)


def _read(s: str) -> Extracted | None:
    """One sentence -> at most one candidate (first rule that reads it wins). A
    traditional Chinese sentence is read in simplified characters (the rules are written
    in them) and its candidate keeps the user's own characters (我今年19歲 reads 19)."""
    if _CJK.search(s) is not None:
        simple = to_simplified(s)
        if simple != s:
            found = _read_one(simple)
            return None if found is None else _as_written(found, s, simple)
    return _read_one(s)


def _as_written(found: Extracted, text: str, simple: str) -> Extracted:
    """``found`` (read from ``simple``, :func:`to_simplified` of ``text``) in the
    characters of ``text``."""
    slot = found.slot
    if slot is not None:
        slot = Slot(slot.subject, slot.attribute, as_written(text, simple, slot.value))
    return replace(found, content=as_written(text, simple, found.content), slot=slot,
                   replaces=None if found.replaces is None
                   else as_written(text, simple, found.replaces))


def _read_one(s: str) -> Extracted | None:
    zh = _CJK.search(s) is not None
    if zh:  # 嗯以后回答的时候多举几个例子: a spoken filler in front
        s = _ZH_FILLER.sub("", s) or s
    elif (_NO_NEED.match(s) or _NO_MORE.match(s)) and _NOT_FOR_THE_ASSISTANT.search(s) is None:
        # "no need to keep it short anymore": a standing instruction withdrawn (before the
        # "No, ..." of a correction, which would strip its first word)
        return Extracted(s, MemoryType.PREFERENCE, 0.85, "always", correction=True)
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
        # "Actually switch to metric ... from now on": a standing instruction, corrected
        if not (_ZH_STANDING.match(stripped) or _ZH_STANDING_END.match(stripped)
                or _ZH_STANDING_MID.search(stripped) if zh
                else _STANDING.match(stripped) or _STANDING_ANY.search(stripped)):
            return None
        s = stripped
    # standing instructions
    m = (_ZH_STANDING.match(s) or _ZH_STANDING_END.match(s) or _ZH_STANDING_MID.search(s)) \
        if zh else _STANDING.match(s)
    rest = ""
    if m is not None:
        rest = (m["rest"] if zh else (m["rest"] or m["rest2"])) or ""
    elif not zh and (marker := _STANDING_ANY.search(s)) is not None:
        # only the clause the marker stands in, and only if it speaks to the assistant or
        # of the user ("My landlord texted: bins go out on Tuesdays from now on" does not)
        # ("ok quick thing - always answer in japanese from now on ... - anyway whats ...":
        # a dash between words parts clauses too, and the marker's clause ends at one)
        clause = re.split(r"[:;—–]\s*", s[:marker.start()])[-1] \
            + re.split(r"\s+-\s+", s[marker.start():])[0]
        rest = _STANDING_ANY.sub("", clause).strip(" ,")
        if not re.search(r"\b(?:please|pls|plz)\b", rest, re.IGNORECASE) and not any(
                _FOR_THE_ASSISTANT.match(part) for part in re.split(r",\s*|\s+-\s+", rest)):
            rest = ""
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
                # ("always use bullet points pls": asked for now, it replaces how the
                # assistant answered so far)
                return Extracted(s, MemoryType.PREFERENCE, _confidence(0.85, m["rest"], s),
                                 "always", correction=_STANDING_HINT.search(s) is not None
                                 or re.search(r"\b(?:please|pls|plz)\b", s, re.I) is not None)
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


#: what a question takes for granted, in a clause before it: "Now that I'm based in Halifax,
#: what time zone ...?", "I've settled in Shenzhen, how do I move my pension here?"
_GRANTED_LEAD = re.compile(r"^(?:now\s+that|since|seeing\s+as|as)\s+(?=(?:i|we)\b)",
                           re.IGNORECASE)
_GRANTED_SPLIT = re.compile(r"\s*[,，:：;；]\s*|\s+[—–]\s+")
#: ... or in a possessive inside it: "routes near my new apartment in Tucson?", "an intro
#: for my new team at Shopify?"
_GRANTED_NEW = re.compile(
    r"\bmy\s+new\s+(?:(?P<home>apartment|flat|house|place|home|condo)\s+in"
    r"|(?P<job>team|job|role|employer|colleagues|manager|boss|office)\s+at)\s+"
    r"(?P<v>(?-i:[A-Z][\w&.'-]*(?:\s+(?!I\b)[A-Z][\w&.'-]*)*))", re.IGNORECASE)
_ZH_GRANTED_NEW_HOME = re.compile(r"(?P<v>[\u4e00-\u9fff]{2,6}?)(?:市)?(?:的)?新家")
#: ... unless it is a condition or a plan
_GRANTED_NOT = re.compile(r"\b(?:if|unless|would|will|going to|next|soon|once|when i get)\b"
                          r"|如果|要是|假如|的话|打算|准备|考虑", re.IGNORECASE)


def _taken_for_granted(sentence: str) -> list[str]:
    """The statements a question or a request rests on, as sentences of their own."""
    zh = _CJK.search(sentence) is not None
    out = []
    for part in _lead_clauses(sentence):
        if zh:
            if not part.startswith("我") or _ZH_QUESTION.search(part):
                continue
        else:
            part = _GRANTED_LEAD.sub(lambda m: "now " if m.group(0).lower().startswith("now")
                                     else "", part)
            # a diary's subjectless "been living in Brisbane three weeks now, any tips ...?"
            if not re.match(r"(?:now\s+)?(?:i|i'm|i've|we|we're|we've|been)\b", part,
                            re.IGNORECASE) or _is_question(part):
                continue
        out.append(part)
    if _GRANTED_NOT.search(sentence):
        return out
    if not zh:
        for m in _GRANTED_NEW.finditer(sentence):
            out.append(f"I now live in {m['v']}" if m["home"] else f"I now work at {m['v']}")
        return out
    from memstrata.policies.gazetteer import find_cities_zh

    if re.search(_ZH_OTHER_PEOPLE, sentence):  # 我朋友在苏州新家附近开了店: not the user's
        return out
    for m in _ZH_GRANTED_NEW_HOME.finditer(sentence):  # 帮我查一下苏州新家附近…？
        cities = find_cities_zh(m["v"])
        if len(cities) == 1 and m["v"].endswith(cities[0]):
            out.append(f"我现在住在{cities[0]}")
    return out


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
    standing: Extracted | None = None  # the standing instruction the sentence before set
    for sentence, goes_on in _parts(text):
        if len(sentence) > MAX_SENTENCE_CHARS:
            continue
        if goes_on:
            sentence = _GOES_ON.sub("", sentence) or sentence
        if standing is not None and goes_on and _FOR_THE_ASSISTANT.match(sentence) \
                and not _is_question(sentence) and _read(sentence) is None \
                and sentence.casefold() not in seen:
            # "From now on, answer in German. Also keep it short.": the same standing
            # instruction goes on
            seen.add(sentence.casefold())
            out.append(Extracted(sentence, MemoryType.PREFERENCE, standing.confidence,
                                 standing.rule, correction=standing.correction))
            continue
        standing = None
        if _is_question(sentence) and not _is_request(sentence):
            for granted in _taken_for_granted(sentence):
                found = _read(granted)
                if found is not None and found.slot is not None \
                        and found.content.casefold() not in seen:
                    seen.add(found.content.casefold())
                    out.append(found)
            continue
        found = _read(sentence)
        if found is None or found.content.casefold() in seen:
            continue
        if found.rule == "call_me" and _DISLIKED.search(text):
            continue  # 同事都叫我敏敏姐，我其实不太喜欢: a name the user dislikes is not theirs

        seen.add(found.content.casefold())
        out.append(found)
        # "I'm an engineer at Intel", 我是腾讯的工程师: the employer too
        also = (zh_employer_beside_role if _CJK.search(found.content)
                else employer_beside_role)(found)
        if also is not None:
            out.append(also)
        standing = found if found.rule in ("from_now_on", "always") else None
    return out
