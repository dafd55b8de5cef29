"""Time in what is said and what is asked: relative dates, temporal questions, changes of state.

Three pure readers, English and Chinese, no storage:

* :func:`resolve_date` - the absolute day (or range of days) a statement refers
  to, read against the time it was said: "yesterday", "two days ago", "last
  week", "last Friday", "上个月", "昨天", "3天前", "in March", "on 5 May 2023".
  The write path stores the result on the record (``metadata["event_date"]``),
  so "yesterday" said on 8 May still means 7 May when it is read in July.
* :func:`read_query` - is a question temporal ("when did I ...", "how many days
  between ...", "in March", "last month", "什么时候") or aggregate ("how many",
  "how often", "list all"), and does it name a date range? Recall keeps the
  evidence of such questions (a lower gate) and ranks with the range.
* :func:`reads_as_change` - does a statement announce a change of state ("I
  moved to ...", "I started a new job ...", "now", "搬到", "换了")? The write
  path supersedes an older slot value with such a statement instead of asking.

No date-parsing library: ``dateparser`` is not installed and pulls regex
tables for 200 languages (and reads "may" the verb as the month);
``python-dateutil``'s parser reads absolute dates only (its fuzzy mode turns
stray numbers into dates), and the month arithmetic needed here is three lines.
The patterns are few and explicit, so what is resolved is predictable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

__all__ = [
    "DateRange",
    "TemporalQuery",
    "question_part",
    "read_query",
    "reads_as_change",
    "resolve_date",
    "slot_change",
]


@dataclass(frozen=True, slots=True)
class DateRange:
    """Whole days ``start`` .. ``end`` (inclusive)."""

    start: date
    end: date
    #: the words it was read from ("last week", "昨天")
    phrase: str = ""
    #: named by a calendar date ("in May 2023", "on 7 May"), not relative to the
    #: time it was read ("last week"); not stored
    absolute: bool = False

    def label(self) -> str:
        """``2023-05-07`` for one day, ``2023-05-01..2023-05-07`` for a range."""
        if self.start == self.end:
            return self.start.isoformat()
        return f"{self.start.isoformat()}..{self.end.isoformat()}"

    def contains(self, day: date, *, slack_days: int = 0) -> bool:
        slack = timedelta(days=slack_days)
        return self.start - slack <= day <= self.end + slack

    def overlaps(self, other: DateRange, *, slack_days: int = 0) -> bool:
        slack = timedelta(days=slack_days)
        return self.start - slack <= other.end and other.start <= self.end + slack

    def to_json(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(),
                "phrase": self.phrase}

    @classmethod
    def from_json(cls, value: Any) -> DateRange | None:
        """The stored form back; ``None`` for anything that is not one."""
        if not isinstance(value, dict):
            return None
        try:
            start = date.fromisoformat(str(value["start"]))
            end = date.fromisoformat(str(value["end"]))
        except (KeyError, ValueError):
            return None
        return cls(start, end, str(value.get("phrase", ""))) if start <= end else None


@dataclass(frozen=True, slots=True)
class TemporalQuery:
    """What a question asks about time."""

    #: asks when, how long, which date, or names a time
    temporal: bool = False
    #: asks to count or list ("how many", "how often", "all the")
    aggregate: bool = False
    #: a date range the question names ("in March", "last month"), if any; not one
    #: it only bounds ("before 16 May", "by July 2022", "since March")
    range: DateRange | None = None
    #: asks for the present state ("where do I work these days?", 我现在开什么车):
    #: of two statements about the same thing, the newer is the answer
    current: bool = False

    @property
    def keeps_evidence(self) -> bool:
        """Should the recall gate be lowered for this question?"""
        return self.temporal or self.aggregate


# ---------------------------------------------------------------- numbers and names

_NUM_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "couple of": 2, "a couple of": 2, "few": 3, "a few": 3,
}
_ZH_NUM = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
           "九": 9, "十": 10, "半": 0}
_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}
_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4,
             "saturday": 5, "sunday": 6}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_NUM = r"(?P<n>\d{1,3}|a couple of|couple of|a few|few|an?|one|two|three|four|five|six|seven" \
       r"|eight|nine|ten|eleven|twelve)"
_MONTH = r"(?P<month>january|february|march|april|may|june|july|august|september|october" \
         r"|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
_WEEKDAY = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"


def _number(word: str) -> int:
    word = word.casefold().strip()
    return int(word) if word.isdigit() else _NUM_WORDS.get(word, 1)


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if text.startswith("十"):
        return 10 + _ZH_NUM.get(text[1:], 0)
    if text.endswith("十"):
        return _ZH_NUM.get(text[0], 1) * 10
    if "十" in text:
        head, tail = text.split("十", 1)
        return _ZH_NUM.get(head, 1) * 10 + _ZH_NUM.get(tail, 0)
    return _ZH_NUM.get(text, 1)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _month_range(first: date) -> tuple[date, date]:
    return first, _add_months(first, 1) - timedelta(days=1)


def _week_of(day: date) -> tuple[date, date]:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6)


def _past_weekday(today: date, weekday: int, *, strictly_last_week: bool = False) -> date:
    """The latest ``weekday`` before ``today`` (or in the calendar week before it)."""
    if strictly_last_week:
        monday, _ = _week_of(today)
        return monday - timedelta(days=7) + timedelta(days=weekday)
    back = (today.weekday() - weekday) % 7 or 7
    return today - timedelta(days=back)


def _past_month(today: date, month: int) -> date:
    """The first day of the latest ``month`` that is not after ``today``'s month."""
    year = today.year if month <= today.month else today.year - 1
    return date(year, month, 1)


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


# ---------------------------------------------------------------- the patterns

_Rule = tuple[re.Pattern[str], str]


def _en(pattern: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + pattern + r"(?![\w-])", re.IGNORECASE)


# order matters: the longer phrase first
_EN_RULES: list[_Rule] = [
    (_en(r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"), "iso"),
    (_en(r"(?:on\s+)?(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH
         + r"(?:,?\s+(?P<y>\d{4}))?"), "day_month"),
    (_en(_MONTH + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{4}))?"), "month_day"),
    (_en(r"(?:in\s+)?" + _MONTH + r",?\s+(?P<y>\d{4})"), "month_year"),
    (_en(r"the day before yesterday"), "before_yesterday"),
    (_en(r"yesterday|last night"), "yesterday"),
    (_en(r"today|tonight|this morning|this afternoon|this evening"), "today"),
    (_en(_NUM + r"\s+(?P<unit>days?|weeks?|months?|years?)\s+ago"), "ago"),
    (_en(r"(?:the\s+)?(?P<which>last|past|previous)\s+weekend"), "last_weekend"),
    (_en(r"this\s+weekend|over the weekend|on the weekend"), "weekend"),
    (_en(r"(?P<which>last|this|next)\s+(?P<unit>week|month|year)"), "relative_unit"),
    (_en(r"(?:(?P<which>last|this|on|this past|past)\s+)" + _WEEKDAY), "weekday"),
    (_en(r"in\s+" + _MONTH), "in_month"),
    (_en(r"in\s+(?P<y>(?:19|20)\d{2})"), "in_year"),
]
_ZH_RULES: list[_Rule] = [
    (re.compile(r"(?P<y>\d{4})年(?P<m>\d{1,2})月(?:(?P<d>\d{1,2})[日号])?"), "zh_ymd"),
    (re.compile(r"(?<![\d年])(?P<m>\d{1,2}|[一二三四五六七八九十]{1,2})月"
                r"(?P<d>\d{1,2}|[一二三四五六七八九十]{1,3})[日号]"), "zh_md"),
    (re.compile(r"大前天"), "zh_3days"),
    (re.compile(r"前天"), "before_yesterday"),
    (re.compile(r"昨天|昨晚|昨日"), "yesterday"),
    (re.compile(r"今天|今晚|今早|今日"), "today"),
    (re.compile(r"(?P<n>\d{1,3}|[一两二三四五六七八九十半]{1,3})(?:个)?"
                r"(?P<unit>天|星期|礼拜|周|月|年)(?:以)?前"), "zh_ago"),
    (re.compile(r"(?:上个?(?:星期|礼拜|周))(?P<wd>[一二三四五六日天])"), "zh_last_weekday"),
    (re.compile(r"(?:这个?(?:星期|礼拜)|本周|周|星期|礼拜)(?P<wd>[一二三四五六日天])"),
     "zh_weekday"),
    (re.compile(r"上个?(?:星期|礼拜|周)末?|上一周"), "zh_last_week"),
    (re.compile(r"本周|这周|这个星期|这个礼拜"), "zh_this_week"),
    (re.compile(r"上个月|上月"), "zh_last_month"),
    (re.compile(r"这个月|本月"), "zh_this_month"),
    (re.compile(r"前年"), "zh_year_before_last"),
    (re.compile(r"去年"), "zh_last_year"),
    (re.compile(r"今年"), "zh_this_year"),
    (re.compile(r"(?<![\d年])(?P<m>\d{1,2}|十[一二]?|[一二三四五六七八九])月(?:份)?"), "zh_month"),
]
_ZH_AGO_UNIT = {"天": "days", "星期": "weeks", "礼拜": "weeks", "周": "weeks", "月": "months",
                "年": "years"}


def _apply(kind: str, m: re.Match[str], today: date) -> tuple[date, date] | None:
    g = m.groupdict()
    if kind == "iso":
        day = _safe_date(int(g["y"]), int(g["m"]), int(g["d"]))
        return None if day is None else (day, day)
    if kind in ("day_month", "month_day"):
        month = _MONTHS[g["month"].casefold()]
        if g.get("y"):
            day = _safe_date(int(g["y"]), month, int(g["d"]))
        else:
            first = _past_month(today, month)
            day = _safe_date(first.year, month, int(g["d"]))
            if day is not None and day > today:
                day = _safe_date(first.year - 1, month, int(g["d"]))
        return None if day is None else (day, day)
    if kind == "month_year":
        return _month_range(date(int(g["y"]), _MONTHS[g["month"].casefold()], 1))
    if kind == "in_month":
        return _month_range(_past_month(today, _MONTHS[g["month"].casefold()]))
    if kind == "in_year":
        year = int(g["y"])
        return date(year, 1, 1), date(year, 12, 31)
    if kind == "before_yesterday":
        day = today - timedelta(days=2)
        return day, day
    if kind == "zh_3days":
        day = today - timedelta(days=3)
        return day, day
    if kind == "yesterday":
        day = today - timedelta(days=1)
        return day, day
    if kind == "today":
        return today, today
    if kind in ("ago", "zh_ago"):
        if kind == "ago":
            n, unit = _number(g["n"]), g["unit"].casefold().rstrip("s") + "s"
        else:
            n, unit = _zh_number(g["n"]), _ZH_AGO_UNIT[g["unit"]]
            if n == 0:  # 半年前, 半个月前
                if unit == "years":
                    n, unit = 6, "months"
                elif unit == "months":
                    n, unit = 15, "days"
        if unit == "days":
            day = today - timedelta(days=n)
            return day, day
        if unit == "weeks":
            day = today - timedelta(weeks=n)
            return day - timedelta(days=3), day + timedelta(days=3)
        if unit == "months":
            return _month_range(_add_months(date(today.year, today.month, 1), -n))
        return date(today.year - n, 1, 1), date(today.year - n, 12, 31)
    if kind == "last_weekend":
        saturday = _past_weekday(today, 5)
        return saturday, saturday + timedelta(days=1)
    if kind == "weekend":
        saturday = _past_weekday(today + timedelta(days=1), 5)
        return saturday, saturday + timedelta(days=1)
    if kind == "relative_unit":
        which, unit = g["which"].casefold(), g["unit"].casefold()
        step = {"last": -1, "this": 0, "next": 1}[which]
        if unit == "week":
            start, end = _week_of(today + timedelta(weeks=step))
            return start, end
        if unit == "month":
            return _month_range(_add_months(date(today.year, today.month, 1), step))
        return date(today.year + step, 1, 1), date(today.year + step, 12, 31)
    if kind == "weekday":
        which = (g.get("which") or "").casefold()
        day = _past_weekday(today, _WEEKDAYS[g["wd"].casefold()],
                            strictly_last_week=which == "last"
                            and _WEEKDAYS[g["wd"].casefold()] >= today.weekday())
        return day, day
    if kind == "zh_last_weekday":
        day = _past_weekday(today, _ZH_WEEKDAYS[g["wd"]], strictly_last_week=True)
        return day, day
    if kind == "zh_weekday":
        day = _past_weekday(today, _ZH_WEEKDAYS[g["wd"]])
        return day, day
    if kind == "zh_last_week":
        return _week_of(today - timedelta(weeks=1))
    if kind == "zh_this_week":
        return _week_of(today)
    if kind == "zh_last_month":
        return _month_range(_add_months(date(today.year, today.month, 1), -1))
    if kind == "zh_this_month":
        return _month_range(date(today.year, today.month, 1))
    if kind == "zh_last_year":
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    if kind == "zh_year_before_last":
        return date(today.year - 2, 1, 1), date(today.year - 2, 12, 31)
    if kind == "zh_this_year":
        return date(today.year, 1, 1), date(today.year, 12, 31)
    if kind == "zh_ymd":
        if g.get("d"):
            day = _safe_date(int(g["y"]), int(g["m"]), int(g["d"]))
            return None if day is None else (day, day)
        month = int(g["m"])
        return _month_range(date(int(g["y"]), month, 1)) if 1 <= month <= 12 else None
    if kind == "zh_md":
        month, dnum = _zh_number(g["m"]), _zh_number(g["d"])
        if not 1 <= month <= 12:
            return None
        first = _past_month(today, month)
        day = _safe_date(first.year, month, dnum)
        return None if day is None else (day, day)
    if kind == "zh_month":
        month = _zh_number(g["m"])
        return _month_range(_past_month(today, month)) if 1 <= month <= 12 else None
    return None  # pragma: no cover - every rule kind is handled above


#: the rules that name the calendar (a bare month is the last such month)
_ABSOLUTE = frozenset({"iso", "day_month", "month_day", "month_year", "in_month", "in_year",
                       "zh_ymd", "zh_md", "zh_month"})


def _first(text: str, today: date, rules: list[_Rule]) -> tuple[int, DateRange] | None:
    best: tuple[int, DateRange] | None = None
    for pattern, kind in rules:
        m = pattern.search(text)
        if m is None:
            continue
        found = _apply(kind, m, today)
        if found is None:
            continue
        if best is None or m.start() < best[0]:
            best = (m.start(), DateRange(found[0], found[1], m.group(0).strip(),
                                         absolute=kind in _ABSOLUTE))
    return best


_HAS_CJK = re.compile(r"[\u4e00-\u9fff]")


def resolve_date(text: str, at: datetime | date) -> DateRange | None:
    """The day or days ``text`` refers to, said at ``at``; ``None`` when it names none.

    The earliest date phrase in the text wins ("yesterday I booked the flight for
    next week" is about yesterday). ``at`` is the turn's time (a naive datetime
    is read as it stands; only its calendar day is used).

    >>> resolve_date("I went to the support group yesterday.", date(2023, 5, 8)).label()
    '2023-05-07'
    >>> resolve_date("We adopted a puppy two weeks ago", date(2023, 5, 8)).label()
    '2023-04-21..2023-04-27'
    >>> resolve_date("上个月我去了杭州", date(2023, 5, 8)).label()
    '2023-04-01..2023-04-30'
    >>> resolve_date("I love hiking", date(2023, 5, 8)) is None
    True
    """
    found = _located(text, at)
    return None if found is None else found[1]


def _located(text: str, at: datetime | date) -> tuple[int, DateRange] | None:
    today = at.date() if isinstance(at, datetime) else at
    rules = _ZH_RULES + _EN_RULES if _HAS_CJK.search(text) else _EN_RULES
    return _first(text, today, rules)


# ---------------------------------------------------------------- questions

_TEMPORAL_Q = re.compile(
    r"\b(?:when|what (?:date|day|time|year|month)|which (?:date|day|year|month|week)"
    r"|how long (?:ago|before|after|since|has|have|did|was)|how many (?:days|weeks|months|years)"
    r"|since when|until when|by when|what time)\b"
    r"|\b(?:before|after|during|since)\b.*\?$"
    r"|什么时候|哪天|哪一天|几号|几月|哪年|哪一年|多久|多长时间|几天|什么时间|何时",
    re.IGNORECASE,
)
_AGGREGATE_Q = re.compile(
    r"\b(?:how many|how much|how often|how frequently|number of|list (?:all|the|every)"
    r"|all (?:the|of the)|every time|which (?:\w+ )?(?:\w+s)\b(?= (?:has|have|did|does|do)))"
    r"|多少|几次|几个|哪些|所有",
    re.IGNORECASE,
)


#: a question or request about the present state: a marker of the present, or one
#: about the user that does not point to the past (``_PAST_Q``) - "which gym do I go
#: to?", "book me a table that fits my diet", 我开什么车 - is about the user as they are
_CURRENT_Q = re.compile(
    r"\b(?:now|nowadays|these days|currently|at the moment|at present|right now|lately"
    # ("who's our internet provider?": the user's household)
    r"|any ?more|still|current|presently|i|i'm|i\u2019m|my|me|we|we're|we\u2019re|our|us)\b"
    r"|现在|目前|如今|最近|这阵子|这段时间|眼下|当前"
    r"|^(?!.*(?:以前|之前|原来|当初|曾经|那时|上次|第一次|小时候|过去|去年|了吗|过吗|过什么)).*我",
    re.IGNORECASE,
)

#: a question about the past ("when did I ...", "what was my first car?")
_PAST_Q = re.compile(
    r"\b(?:did|was|were|used to|had|ago|before|originally|first|last (?:time|year|month|week))\b",
    re.IGNORECASE,
)

#: the end of a sentence (the mark stays with the sentence it ends)
_SENTENCE_END = re.compile(r"(?<=[?？!！.。;；])\s*")


def question_part(query: str) -> str:
    """The question sentences of ``query`` (all of it when none ends in a question mark):
    a reason given after the question is not what it asks.

    >>> question_part("Which gym do I go to now? My employer pays for it.")
    'Which gym do I go to now?'
    """
    asked = [s for s in _SENTENCE_END.split(query) if s.rstrip().endswith(("?", "？"))]
    return " ".join(asked) if asked else query

_BOUND = re.compile(r"\b(?:before|by|until|till|after|since|prior to|as of|between)\s*(?:the\s+)?$"
                    r"|(?:之前|以前|之后|以后|以来|截至|直到)\s*$", re.IGNORECASE)


def read_query(query: str, now: datetime | date) -> TemporalQuery:
    """What ``query`` asks about time, read at ``now`` (for "last month").

    >>> q = read_query("What did I cook last month?", date(2023, 7, 14))
    >>> q.temporal, q.range.label()
    (True, '2023-06-01..2023-06-30')
    >>> read_query("When did Caroline go to the support group?", date(2023, 7, 14)).temporal
    True
    >>> read_query("Which seat do I like?", date(2023, 7, 14))
    TemporalQuery(temporal=False, aggregate=False, range=None, current=True)
    """
    located = _located(query, now)
    found = None
    if located is not None:
        start, found = located
        if _BOUND.search(query[:start]):
            found = None  # "before 16 May": a bound, not the range the answer lies in
    temporal = located is not None or _TEMPORAL_Q.search(query) is not None
    aggregate = _AGGREGATE_Q.search(query) is not None
    # a reason given after the question ("who cuts my hair these days? I want to book
    # before the wedding") does not point the question to the past
    current = _CURRENT_Q.search(query) is not None \
        and _PAST_Q.search(question_part(query)) is None
    return TemporalQuery(temporal=temporal, aggregate=aggregate, range=found, current=current)


# ---------------------------------------------------------------- changes of state

_CHANGE = re.compile(
    r"\b(?:moved|relocated|relocating|moving|switched|switching|changed|changing|started"
    r"|starting|begun|began|became|become|now|nowadays|these days|no longer|not anymore"
    r"|any ?more|new job|new role|new position|joined|quit|left my|went vegan|went vegetarian"
    r"|gave up|took up|took a job|got a job|got hired|hired|promoted|transferred|retired"
    r"|graduated|converted|upgraded|downgraded|sold|bought a new|replaced|currently|turned"
    r"|raised|increased|went up|went down|dropped to|cut down|settled|moved in|installed"
    r"|ever since|left for|no more|cancell?ed|from (?:this|next) (?:month|week|year) on"
    r"|traded|swapped"
    r"|(?:have|has|'ve|\u2019ve) been\b[^.?!]{0,60}\bsince"
    r"|went (?:fully )?remote|new (?:\w+ )?(?:flat|home|house|place|apartment|address|car"
    r"|phone|job|school|team|doctor|gym|office|city|partner|boss))\b"
    r"|搬到|搬去|搬来|搬來|搬回|搬家|换了|改成|改为|改到|转到|跳槽|入职|加入了|辞职|离职|开始|现在|如今|目前|不再"
    r"|已经不|重组|成了|涨到|降到|毕业|新家|新工作"
    # 改 before a verb (改喝绿茶, 改学德语, 改坐地铁), 戒 (戒了咖啡), 不...了 (不吃主食了)
    r"|(?<![修批])改(?!天|善|革|进)(?=[\u4e00-\u9fff])|戒(?:了|掉)?|变成|换成|卖了"
    r"|不[\u4e00-\u9fff]{1,4}了(?=[，,。！!；;\s]|$)",
    re.IGNORECASE,
)


def reads_as_change(text: str) -> bool:
    """Does ``text`` announce a change of state rather than restate a stable fact?

    >>> reads_as_change("I moved to Munich last month.")
    True
    >>> reads_as_change("I live in Munich.")
    False
    >>> reads_as_change("我现在在上海工作")
    True
    """
    return _CHANGE.search(text) is not None


#: attributes whose value does not change: a different value contradicts, it does not update
STABLE_ATTRIBUTES = frozenset({
    "birthday", "birth date", "date of birth", "birthdate", "birthplace", "place of birth",
    "blood type", "native language", "mother tongue", "hometown", "生日", "出生日期", "出生地",
    "血型", "母语", "老家",
})
#: a different value said this much later (seconds) reads as a change of state
DEFAULT_CHANGE_GAP_SECONDS = 7 * 86_400.0


def slot_change(
    content: str, attribute: str, *, gap_seconds: float,
    min_gap_seconds: float = DEFAULT_CHANGE_GAP_SECONDS,
) -> str | None:
    """Why a new value of a slot supersedes the current one, or ``None`` (ask the user).

    A different value of a stable fact (a birthday, a birthplace) is a
    contradiction: ``None``, it is flagged for confirmation. Otherwise the newer
    value wins when the statement reads as a change ("I moved to ...") or was
    said at least ``min_gap_seconds`` after the current value (people move and
    change jobs; a week later "I live in Munich" updates "I live in Berlin").

    >>> slot_change("I moved to Munich.", "city", gap_seconds=60.0)
    'reads as a change of state: the new value supersedes the old one (kept as history)'
    >>> slot_change("My birthday is on 3 May.", "birthday", gap_seconds=1e7) is None
    True
    >>> slot_change("I live in Munich.", "city", gap_seconds=60.0) is None
    True
    """
    if " ".join(attribute.casefold().split()) in STABLE_ATTRIBUTES:
        return None
    if reads_as_change(content):
        return "reads as a change of state: the new value supersedes the old one " \
               "(kept as history)"
    if gap_seconds >= min_gap_seconds:
        days = int(gap_seconds // 86_400)
        return f"a different value stated {days} days later: a change of state, the new " \
               "value supersedes the old one (kept as history)"
    return None
