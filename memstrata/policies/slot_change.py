"""A new value of something the user already told us, read with that value in hand.

The fast extractor reads a change from the sentence alone, so it needs the
sentence's shape: "I moved to Munich", "I started at KPMG". People rarely say it
that way ("Manchester is officially home now", "Been at Microsoft about three
weeks now", "Officially 35 as of this morning"). Knowing what the user said
before changes the problem: if the user lives in Leeds, a sentence about home
that names one other place is most likely about the new city. :func:`change_of`
reads such a sentence for one attribute whose current value is known
(:func:`memstrata.memory.formation.observe` calls it only for a user turn the
extractor read nothing from, and only for attributes the user holds):

* ``city`` and ``employer``: the sentence has a cue of the topic (home, moved,
  apartment / job, joined, offer, first month at ...) and exactly one place or
  organisation name - a capitalised name after "in/to/at/from/joined", or before
  "is (officially) home" / "made me an offer" - other than the current value;
* ``age``: a birthday cue and one number just above the current age (at most 5).

A sentence with a question, a condition, a plan, a negation, a trip, quoted
speech or another person as its subject changes nothing: the guards of the
extractor, stricter.

Chinese names carry no capital letters, so a Chinese sentence is read by where a
name stands: 在X安家/生活/定居, 搬到X, X是我的新家 for a city; 在X做/上班/工作,
入职/加入/跳槽到X, 是X的人了 for an employer (X of 2-6 characters with no pronoun,
demonstrative or particle in it); an age is a number (digits or Chinese numerals)
just above the current one beside 生日/岁/满. Its guards: questions, conditions,
plans, negations, trips, quotes, family members, colleagues and others as
subjects.
"""

from __future__ import annotations

import re

from memstrata.policies._extraction_zh import _ZH_N, _zh_age

__all__ = ["ATTRIBUTES", "change_of", "has_cue"]

#: the attributes :func:`change_of` can read a new value of
ATTRIBUTES = ("city", "employer", "age")

_CUES = {
    "city": re.compile(
        r"\b(?:home|move|moved|moving|relocat\w*|apartment|flat|house|place|new city|"
        r"lived|living|settled|keys|unpacked|neighbou?rhood|balcony|rent|rents)\b", re.I),
    "employer": re.compile(
        r"\b(?:job|joined|started|starting|working|work|offer|onboarding|first (?:day|week|"
        r"month)|badge|team|hired|role|colleagues?|gig|notice)\b", re.I),
    "age": re.compile(
        r"\b(?:birthday|turned|turning|today|officially|years? old|older|b-?day)\b|"
        r"\b\d{1,3}(?:st|nd|rd|th)\s+(?:birthday|b-?day)\b", re.I),
}

_GUARD = re.compile(
    r"\?|[\"“”«»「」]|"
    r"\b(?:if|unless|might|maybe|perhaps|would|could|should|thinking|considering|consider|"
    r"plan|plans|planning|hope|hoping|someday|wish|dream|gonna|going to|will|"
    r"\w+n['’]t|never|not|nope|no|"
    r"next|soon|tomorrow|upcoming|later this|"
    r"visit|visiting|visited|trip|vacation|holiday|conference|business|flight|flying|"
    r"weekend|stay|stayed|staying|hotel|back home|"
    r"look|looks|feel like|guess|swear|swears|joke|kidding)\b|"
    r"\w(?:'ll|’ll)\b|"
    # planned: "I'm moving to ...", "we're relocating", "I'm turning 30"
    r"\b(?:am|are|['’]m|['’]re)\s+(?:moving|relocating|turning|starting|joining|going)\b|"
    # something else moved: "I moved the meeting to Munich", "the company moved its office"
    r"\bmov(?:e|ed|es|ing)\s+(?:the|a|an|its|their|his|her)\s+(?!(?:whole\s+)?family\b)|"
    r"\b(?:company|office|firm|school|shop|store|business|team|meeting)\s+(?:moved|"
    r"relocated|is moving)\b|"
    r"\b(?:my|our|his|her|their)\s+(?:sister|brother|mom|mum|mother|dad|father|friend|son|"
    r"daughter|cousin|aunt|uncle|wife|husband|partner|boss|colleague|neighbou?r|kid|kids|"
    r"grandma|grandpa|parents)s?\b|"
    r"\b(?:he|she|they)\b(?!['’]s)", re.I)

_NAME = r"[A-Z][\w’'&.-]*[\w&](?:\s+[A-Z][\w’'&.-]*[\w&])*"
_BEFORE = {
    "city": re.compile(rf"\b(?:in|to|from|at)\s+(?P<v>{_NAME})"),
    "employer": re.compile(rf"\b(?:at|joined|for|with)\s+(?P<v>{_NAME})"),
}
_AFTER = {
    "city": re.compile(
        rf"(?P<v>{_NAME})(?:\s+is|['’]s(?:\s+been)?)\s+(?:officially\s+|now\s+|finally\s+)?"
        r"(?:my\s+|our\s+)?(?:new\s+)?home\b"),
    "employer": re.compile(
        rf"(?P<v>{_NAME})\s+(?:made me an offer|offered me|hired me|took me on)\b"),
}
#: capitalised words that are not names where a name would stand
_NOT_NAMES = frozenset(
    "i i'm i’m we my our the a an this that it new sorry quick been ever after long handed "
    "honestly everyone could cut on another officially starting from hi hey so just finally "
    "monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december spring summer autumn fall "
    "winter christmas easter".split())
_NUMBER = re.compile(r"(?<![\d.,])(\d{1,3})(?:st|nd|rd|th)?(?![\d.,])")


_CJK = re.compile(r"[\u4e00-\u9fff]")
_ZH_CUES = {
    "city": re.compile(r"住|搬|安家|定居|落户|生活|扎根|租|房子|新家|城市|地址"),
    "employer": re.compile(r"工作|上班|入职|加入|跳槽|东家|公司|离职|offer|团队|任职|的人了|做"),
    "age": re.compile(r"生日|岁|满"),
}
_ZH_OTHERS = (r"他|她|它|我妈|我爸|妈妈|爸爸|父母|爸妈|老婆|老公|妻子|丈夫|爱人|朋友|同事|"
              r"哥哥|姐姐|弟弟|妹妹|儿子|女儿|孩子|室友|邻居|领导|老板|同学")
#: a question, a condition, quoted speech or a trip anywhere: nothing in the text is read
_ZH_GUARD = re.compile(r"[?？「」“”『』]|吗|如果|要是|假如|假设|万一|的话|倘若|"
                       r"出差|旅游|旅行|度假|玩|探亲|开会|参观|路过|住了[一两二三四五六七八九十几\d]+天")
#: in the clause that names the value: a plan, the future, a trip, a negation, someone else
_ZH_CLAUSE_GUARD = re.compile(
    r"打算|准备|计划|考虑|想要|想去|想搬|可能|也许|或许|希望|梦想|说不定|下周|下个月|明年|明天|将来|"
    rf"快要|就要|将要|没|不|别|未|(?<![和跟与同])(?:{_ZH_OTHERS})")
#: someone else's birthday or age: 我儿子今天生日, 我弟弟满三十岁了
_ZH_OTHERS_AGE = re.compile(rf"(?<![和跟与同])(?:{_ZH_OTHERS})[^，,。！!；;]{{0,6}}?(?:生日|岁|满)")
#: big cities and provinces: where an employer would stand, "在上海做产品" names a place
_ZH_PLACE_NAMES = frozenset(
    "北京 上海 天津 重庆 广州 深圳 杭州 南京 苏州 成都 武汉 西安 长沙 郑州 青岛 厦门 宁波 合肥 "
    "济南 沈阳 大连 哈尔滨 长春 昆明 贵阳 南宁 福州 南昌 石家庄 太原 兰州 乌鲁木齐 呼和浩特 "
    "海口 三亚 珠海 东莞 佛山 无锡 常州 温州 香港 澳门 台北 广东 浙江 江苏 四川 湖北 湖南 河南 "
    "河北 山东 山西 福建 安徽 江西 云南 贵州 广西 海南 陕西 甘肃 辽宁 吉林 黑龙江 内蒙古 新疆 "
    "西藏 宁夏 青海 国外 海外 美国 英国 日本 德国 法国 加拿大 澳洲 新加坡 伦敦 纽约 东京".split())
_ZH_CLAUSE = re.compile(r"[，,。！!；;…~～\n]+")
#: characters no place or company name of these patterns contains
_ZH_STOP = r"我你他她它们这那哪边个一了的是在和与也都还就又很太现今明后前家到"
_ZH_X = rf"(?P<v>(?:(?![{_ZH_STOP}])[\u4e00-\u9fffA-Za-z]){{2,6}}?)"
_ZH_END = r"(?=[，,。！!；;、\s了啦的]|$)"
_ZH_PLACES = {
    "city": (
        re.compile(rf"在{_ZH_X}(?:市)?(?:安家|定居|落户|生活|扎根|住下|买了房|租了房|租房)"),
        re.compile(rf"(?:搬到|搬去|搬来|搬回|迁到|定居在|安家在|住在|来到|回到)了?{_ZH_X}(?:市)?"
                   rf"{_ZH_END}"),
        re.compile(rf"{_ZH_X}(?:市)?(?:是|成了|就是)(?:我们?的)?新家"),
    ),
    "employer": (
        re.compile(rf"在{_ZH_X}(?:公司)?(?:做|上班|工作|任职|当|干)(?!什么)"),
        re.compile(rf"(?:入职|加入|跳槽到|跳到|转到|进了)了?{_ZH_X}{_ZH_END}"),
        re.compile(rf"是{_ZH_X}的人了"),
    ),
}
_ZH_NUMBER = re.compile(rf"(?<![\d.])({_ZH_N})(?![\d.])")


def _zh_change_of(text: str, attribute: str, current: str) -> str | None:
    if _ZH_GUARD.search(text) or not _ZH_CUES[attribute].search(text):
        return None
    clauses = [c for c in _ZH_CLAUSE.split(text) if c and not _ZH_CLAUSE_GUARD.search(c)]
    if attribute == "age":
        if not current.isdigit() or _ZH_OTHERS_AGE.search(text):
            return None
        now = int(current)
        ages = {int(_zh_age(n)) for c in clauses for n in _ZH_NUMBER.findall(c)}
        ages = {n for n in ages if now < n <= now + 5}
        return str(ages.pop()) if len(ages) == 1 else None
    old = current.strip()
    new = {m["v"] for c in clauses for pattern in _ZH_PLACES[attribute]
           for m in pattern.finditer(c)}
    new = {v for v in new if v not in (old, re.sub(r"市$", "", old))
           and (attribute != "employer" or v not in _ZH_PLACE_NAMES)}
    return new.pop() if len(new) == 1 else None


def _norm(value: str) -> str:
    return re.sub(r"[’']s$", "", value.strip(" .,!;:")).casefold()


def _names(text: str, attribute: str) -> list[str]:
    found: list[str] = []
    for pattern in (_BEFORE[attribute], _AFTER[attribute]):
        for m in pattern.finditer(text):
            value = re.sub(r"[’']s$", "", m.group("v").strip(" .,!;:"))
            if value.split()[0].casefold() not in _NOT_NAMES:
                found.append(value)
    return found


def has_cue(text: str) -> bool:
    """Does ``text`` speak of any topic :func:`change_of` reads (and pass the guards)?"""
    if _CJK.search(text):
        return _ZH_GUARD.search(text) is None and any(c.search(text) for c in _ZH_CUES.values())
    return not _GUARD.search(text) and any(c.search(text) for c in _CUES.values())


def change_of(text: str, attribute: str, current: str) -> str | None:
    """The new value of ``attribute`` the user's ``text`` states, given its ``current``
    value, or ``None`` (no cue, a guard, no single new value)."""
    if attribute not in ATTRIBUTES or not current:
        return None
    if _CJK.search(text):
        return _zh_change_of(text, attribute, current)
    if _GUARD.search(text):
        return None
    if not _CUES[attribute].search(text):
        return None
    if attribute == "age":
        if not current.isdigit():
            return None
        now = int(current)
        ages = {int(n) for n in _NUMBER.findall(text) if now < int(n) <= now + 5}
        return str(ages.pop()) if len(ages) == 1 else None
    new = {_norm(v): v for v in _names(text, attribute) if _norm(v) != _norm(current)}
    return next(iter(new.values())) if len(new) == 1 else None
