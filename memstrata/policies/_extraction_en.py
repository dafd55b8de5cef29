"""The English rule tables of the fast extractor.

Profile facts (name, city, age, employer, occupation, diet, allergies, "my <attribute>
is <value>"), the verb families of a change ("made the move to", "Google hired me",
"turned thirty") and preferences, read by :func:`_english`; plus the English patterns
the driver in :mod:`memstrata.policies.extraction` uses (questions, standing
instructions, "not X but Y", the work context of a clause). Private: imported only by
:mod:`memstrata.policies.extraction`; the first rule that reads a sentence wins, so
the order in :func:`_en_profile` and :func:`_en_preference` is the precedence.
"""

from __future__ import annotations

import re
from dataclasses import replace

from memstrata.policies._extraction_common import (
    _CHANGE_WORDS,
    _ONE_OFF_OBJECT,
    Extracted,
    _clean,
    _confidence,
    _slot,
)
from memstrata.types import MemoryType

_QUESTION_START = re.compile(
    r"^(?:do|does|did|can|could|would|will|should|shall|what|where|when|why|how|who|which|"
    r"is|are|am|was|were|have|has)\b",
    re.IGNORECASE,
)
#: other people as the subject or the owner of a clause ("my sister", "our neighbour"): the
#: readers of held values skip such clauses (one list, as _extraction_zh._ZH_OTHER_PEOPLE)
_EN_OTHER_PEOPLE = (r"sister|brother|mom|mum|mother|dad|father|friend|son|daughter|cousin|aunt|"
                    r"uncle|wife|husband|partner|boss|colleague|neighbou?r|kid|kids|grandma|"
                    r"grandpa|parents|roommate|roomate|roomie|housemate|flatmate|coworker|"
                    r"bestie|bff|nephew|niece|bf|gf|hubby|"
                    r"boyfriend|girlfriend|fianc[eé]e?")
_VALUE_END = re.compile(
    r"\s+(?:and|but|with|from|since|because|for|though|so|which|who|where|when|"
    r"(?:last|this|next)\s+(?:weekend|week|month|year|summer|winter|spring|fall|autumn)|yesterday|"
    r"today|"
    r"recently|now|these days|nowadays|as of|in the end|eventually|at last|finally|for good|"
    r"full[ -]time|part[ -]time|permanently|for now|"
    r"after all|"
    r"in \d{4}|over (?:the )?\w+|in (?:the )?(?:spring|summer|"
    r"fall|autumn|winter|january|february|march|april|may|june|july|august|september|october|"
    r"november|december)|(?:a|one|two|three|a few|several)\s+\w+\s+(?:ago|back)|"
    # "in Brisbane about three weeks now", "in Leeds 3 months"
    # (a number of them, not a name's last word: "New York last year" keeps "York")
    r"(?:(?:about|around|almost|nearly|roughly)\s+)?(?:(?:\d+|a|an|one|two|three|four|five|six|"
    r"seven|eight|nine|ten|eleven|twelve|few|couple|of|several|many|last|past|this|full|whole|"
    r"\d+-ish)\s+){0,2}?(?:days?|weeks?|months?|years?)"
    r"(?=\s+(?:now|ago|already)\b|\s*[,.!;]|\s*$))\b.*$|[,;，；—–].*$",
    re.IGNORECASE,
)
_ROLE_END = re.compile(r"\s+(?:at|for|in|with)\s+.*$", re.IGNORECASE)

_LEAD_ADVERB = re.compile(r"^(?:now|currently|still|actually|officially)\s+", re.IGNORECASE)


def _known_place(value: str) -> str:
    """The city a value typed in lower case starts with, capitalised ("halifax my commute
    is like 10 min" -> "Halifax"); the value as it is when the gazetteer knows none."""
    from memstrata.policies.gazetteer import cities_en

    words = value.split()
    names = cities_en()
    return next((name for n in range(min(3, len(words)), 0, -1)
                 for name in (" ".join(w.capitalize() for w in words[:n]),) if name in names),
                value)


#: a capitalised name run on into a clause of its own: "Seattle my commute is like 10 min"
_NAME_RUN_ON = re.compile(r"^(?P<v>(?-i:[A-Z][\w.'’-]*(?:\s+[A-Z][\w.'’-]*)*))\s+"
                          r"(?=(?:my|our|i|i'm|we|we're|it|it's|its|the|everything|everyone)\s)",
                          re.IGNORECASE)


def _value(raw: str) -> str:
    """The value phrase: up to a conjunction or clause break."""
    value = _VALUE_END.sub("", _LEAD_ADVERB.sub("", raw.strip()))
    m = _NAME_RUN_ON.match(value)
    return _clean(m["v"] if m else value)


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
_IM_NAME = re.compile(r"^[Ii](?:'m|\s+am)\s+(?P<v>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)(?:\s*[,.!]|$)")
_LIVE = re.compile(
    r"\bi(?:\s+currently|\s+now)?(?:\s+(?:live|am living|'m living|reside|stay)|"
    r"(?:'ve| have)\s+(?:now\s+)?(?:been living|lived))\s+in\s+(?P<v>.+)"
    r"|\bi(?:'m|\s+am|'ve been|\s+have been)\s+(?:now\s+)?(?:based|located|living)\s+in\s+"
    r"(?P<v2>.+)"
    # a diary's subjectless "been living in Brisbane about three weeks now"
    r"|^been\s+(?:living|based)\s+in\s+(?P<v3>.+)",
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
    r"(?:moved|relocated|shifted|made\s+the\s+(?:big\s+)?move|ended\s+up\s+(?:moving|relocating))"
    r"(?:\s+(?:back|over|house|home|across|permanently|for good|down|up|out))?\s+"
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
    rf"|\b(?:i|we)(?:'ve| have|'m| am|'re| are)?\s+(?:now\s+|finally\s+|just\s+)?settled\s+"
    r"(?:down\s+)?in"
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
_SOMEONE_BEFORE = re.compile(rf"\b(?:my|our|his|her|their)\s+(?:{_EN_OTHER_PEOPLE})s?\b"
                             r"|\b(?:he|she|they)\b", re.IGNORECASE)
_FROM = re.compile(r"\bi(?:'m| am)\s+(?:originally\s+)?from\s+(?P<v>.+)", re.IGNORECASE)
_UNITS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
          "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
#: an age in words, ten to ninety-nine ("thirty", "twenty-nine")
_AGE_WORD = (rf"(?:(?:{'|'.join(_TENS)})(?:[- ](?:{'|'.join(_UNITS[:9])}))?"
             rf"|{'|'.join(_UNITS[9:])})")
#: an age to come, not the current one: "by the time I'm 50", "when I'm 60"
_AGE_TO_COME = re.compile(r"\b(?:by the time|when|until|till|once|before|after|if|"
                          # "I feel like I'm 60 today": a feeling, not an age
                          r"(?:feel|feels|felt|look|looks)\s+like|"
                          # what others take the user for: "People keep assuming I'm 40"
                          r"(?:assum\w*|think|thinks|thought|guess\w*|mistak\w*|bet)"
                          r"(?:\s+(?:that|me))?)\s+"
                          r"i(?:'m| am)\s+\S+$", re.IGNORECASE)
_AGE = re.compile(rf"\bi(?:'m| am)\s+(?:now\s+|officially\s+|finally\s+|actually\s+)?"
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
                       r"|\bi\s+(?:just\s+)?celebrated\s+turning\s+(?P<v2>\d{1,3})\b"
                       # "Celebrated my 30th last weekend" (not an anniversary)
                       rf"|\bcelebrated\s+my\s+(?P<v3>\d{{1,3}}(?:st|nd|rd|th)|{_ORDINAL_WORD})\b"
                       r"(?!\s+(?:wedding|anniversary|year|week|day|month|time))",
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
    r"(?P<v3>(?-i:[A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*))"
    # "I'm now a Datadog employee", "I'm officially a Stripe staffer"
    r"|\bi(?:'m| am)\s+(?:now\s+|officially\s+|finally\s+)*an?\s+"
    r"(?P<v4>(?-i:[A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*))\s+(?:employee|staffer|hire)\b",
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
    r"(?:(?P<verb>moved|switched|jumped(?:\s+ship)?|changed|transferred|defected)\s+(?:over\s+)?to"
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
                   rf"(?P<v>(?:(?!(?:at|in|with|the|to|on|for|my|seeing|visiting)\b)[\w-]+\s+)"
                   rf"{{0,2}}(?:{_PROFESSIONS}))\b", re.IGNORECASE)
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
    r"|was hired by|(?:got|been|was)\s+(?:poached|headhunted|snapped\s+up)\s+by)\s+"
    # (not the "I" of the next clause: "Now that I've joined Bosch I get a company car")
    r"(?P<v2>(?-i:[A-Z][\w&.'-]*(?:\s+(?!I\b)[A-Z][\w&.'-]*)*)))",
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
    r"(?P<v>vegetarian|vegan|pescatarian|plant[- ]based|"
    r"halal|kosher|gluten[- ]free|lactose[- ]intolerant|"
    r"on an? (?:strict\s+)?(?:keto|low[- ]carb|gluten[- ]free|vegan|vegetarian|pescatarian|"
    r"plant[- ]based|halal) diet|"
    r"keto(?=\s*(?:[.!,;]|$|now|these days))|"
    # "I'm on keto."
    r"on\s+(?:strict\s+)?(?:keto|low[- ]carb)(?=\s*(?:[.!,;]|$|now|these days)))\b"
    r"|\bi\s+(?:only\s+)?(?:follow|eat|keep)\s+(?:a\s+|an\s+)?(?:strict(?:ly)?\s+)?"
    r"(?P<v2>vegetarian|vegan|pescatarian|plant[- ]based|keto|low[- ]carb|halal|kosher|"
    r"gluten[- ]free)(?:\s+diet)?\b"
    r"|\bi\s+(?P<v3>eat\s+(?:(?:pretty\s+much|basically|just\s+about|practically)\s+)?"
    r"(?:meat|everything|anything))\b(?!\s+(?:again|now|these days))"
    r"|\bi(?:'m| am|'ve been| have been)\s+(?:now\s+|strictly\s+)?doing\s+"
    r"(?P<v4>keto|low[- ]carb)\b"
    r"(?=\s*(?:[.!,;]|$|now|these days))",
    re.IGNORECASE,
)
#: a diet as stored: "on a keto diet" -> "keto", "plant-based" -> "vegan", "eat meat" ->
#: "not vegetarian" (the value the change rules give "I eat meat again")
_DIET_VALUE = {"plant-based": "vegan", "plant based": "vegan", "on a keto diet": "keto",
               "on keto": "keto",
               "on strict keto": "keto", "on low carb": "low-carb", "on low-carb": "low-carb",
               "on a low carb diet": "low-carb",
               "on a low-carb diet": "low-carb", "low carb": "low-carb",
               "eat meat": "not vegetarian", "eat everything": "not vegetarian",
               "eat anything": "not vegetarian"}
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
               r"|starting\s+(?:now|today|tomorrow|from\s+today)|as of (?:now|today)"
               r"|(?:for|in)\s+all\s+(?:our\s+|your\s+|future\s+|of\s+our\s+|of\s+your\s+)?"
               r"(?:future\s+)?(?:chats|conversations|replies|answers|responses)"
               r"(?:\s+after\s+this\s+one)?)")
_STANDING = re.compile(
    rf"^(?:please\s+)?(?:{_HENCEFORTH}|in (?:the )?future|moving forward(?=[,:])|"
    r"next time(?: and after)?|new\s+rule(?=\s*:))[,:]?\s+(?P<rest>.+)$"
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
_REQUEST = re.compile(rf"(?:^(?:(?:actually|so|ok|okay|hey|hi|also|and|btw)[,\s]+)*|,\s*"
                      rf"|\b{_HENCEFORTH},?\s+)(?:please\s+)?(?:could|can|would)\s+(?:you|u|we)\b|"
                      r",?\s*(?:alright|all right|ok|okay|right|please)\s*\?$", re.IGNORECASE)
_STANDING_HINT = re.compile(r"\b(?:anymore|again|ever|any more)\b", re.IGNORECASE)
_NOT_BUT = re.compile(
    r"^(?:it'?s\s+|i meant\s+|i said\s+)?not\s+(?P<old>[^,;]+?),?\s+(?:but|it'?s|rather)\s+"
    r"(?P<new>.+)$"
    r"|^(?P<head>.+?\s)?(?P<new2>[\w'-]+(?:\s+[\w'-]+)?),\s*not\s+(?P<old2>[\w'-]+(?:\s+[\w'-]+)?)$",
    re.IGNORECASE,
)


#: the employer named beside a role: "I'm an engineer at Intel", "I work as a data analyst
#: at Deloitte" (a capitalised name; "a nurse at the local hospital" names none)
_ROLE_AT = re.compile(r"\s(?:at|for|with)\s+(?P<v>(?-i:[A-Z][\w&.'’-]*(?:\s+[A-Z][\w&.'’-]*)*)|"
                      # "a product manager at stripe now (left google in march)"
                      r"(?-i:[a-z][\w&'’-]*[a-z])(?=\s+now\b))",
                      re.IGNORECASE)


def employer_beside_role(found: Extracted) -> Extracted | None:
    """The employer a sentence read as the user's occupation names beside the role."""
    if found.rule != "occupation" or found.slot is None:
        return None
    m = _ROLE_AT.search(found.content)
    if m is None or m["v"].split()[0].casefold() in _NOT_NAMES | _NOT_EMPLOYER_WORDS:
        return None
    value = _value(m["v"])
    return replace(found, rule="employer", slot=_slot("employer", value[:1].upper() + value[1:]))


#: lower-case words where an employer would stand beside a role that name none
_NOT_EMPLOYER_WORDS = frozenset("home work school uni college night day the a an my our "
                                "least most first last".split())


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
    # "everyone called me Ash" (in school): what the user was called, not a name to use
    if m and m["v"].lower() not in _NOT_NAME_WORDS and not _NOT_CALL.search(s) \
            and not re.search(r"\b(?:everyone|everybody|people|friends)\s+called\s+me\b",
                              m.group(0), re.IGNORECASE):
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
    if m and m["v"].split()[0].lower() not in _NOT_NAMES:
        return Extracted(s, MemoryType.PROFILE, 0.7, "name", _slot("name", m["v"]))
    m = _ORG_MOVE.search(s)
    if m and not _NEGATED_CLAUSE.search(s[:m.start("v")]):
        verb = (m["verb"] or "").lower()
        # "moved to" is a new employer only beside the old one ("after years at Siemens");
        # "I quit my job and moved to Lisbon" is a move
        # (the old employer named before the move: "for my new job at BMW" names the new one)
        # ("jumped ship" speaks of work by itself)
        if _ORG_TENURE.search(s[:m.start()]) if verb == "moved" else (
                _JOB_CONTEXT.search(s) or verb == "jumped ship"):
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
        value = _value(m["v"])
        return Extracted(s, MemoryType.PROFILE, 0.9, "moved",
                         _slot("city", _known_place(value) if s.islower() else value),
                         correction=True, alternatives=("employer",))
    m = _NEW_HOME.search(s)
    if m and not _NEGATED_CLAUSE.search(s[:m.start()]):
        value = next(v for v in m.groups() if v)
        return Extracted(s, MemoryType.PROFILE, 0.85, "new_home", _slot("city", _value(value)),
                         correction=True)
    m = _SINCE_MOVE.search(s)
    # not "My sister's after moving to Lisbon" (Irish English: she has just moved)
    if m and not _SOMEONE_BEFORE.search(s[:m.start()]):
        return Extracted(s, MemoryType.PROFILE, 0.85, "moved", _slot("city", m["v"]),
                         correction=True)
    m = _LIVE.search(s)
    if m and not _PAST_STAY.search(s):
        value = _value(m["v"] or m["v2"] or m["v3"])
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
        value = " ".join((m["v"] or m["v2"] or m["v3"] or m["v4"]).lower().split())
        value = re.sub(r"^eat\s+(?:pretty\s+much|basically|just\s+about|practically)\s+", "eat ",
                       value)
        # "on a gluten-free diet" -> "gluten-free" ("on a keto diet" is in the table)
        value = _DIET_VALUE.get(value, re.sub(r"^on an?\s+(?:strict\s+)?|\s+diet$", "", value))
        value = value.replace("gluten free", "gluten-free")
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet",
                         _slot("diet", _DIET_VALUE.get(value, value)),
                         correction="been" in m.group(0).lower())
    m = _AGE.search(s)
    if m and not _AGE_TO_COME.search(s[:m.end()]):
        # "I turned 30": a birthday changes the age
        return Extracted(s, MemoryType.PROFILE, 0.9, "age", _slot("age", _age(m["v"] or m["v2"])),
                         correction=m["v2"] is not None or _CHANGE_WORDS.search(s) is not None)
    m = _BIRTHDAY.search(s)
    if m and not _FUTURE.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "birthday",
                         _slot("age", _age(m["v"] or m["v2"] or m["v3"])), correction=True)
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
                         _slot("employer", _value(m["v"] or m["v2"] or m["v3"] or m["v4"])))
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
) | frozenset(
    # "I'm British." is a nationality, not a name; "I'm Catholic", "I'm Vegan" neither
    """american british english scottish welsh irish canadian australian mexican brazilian
    argentinian chilean colombian peruvian spanish portuguese french german dutch belgian swiss
    austrian italian greek polish czech swedish norwegian danish finnish russian ukrainian
    turkish israeli egyptian nigerian kenyan ghanaian african european asian indian pakistani
    chinese japanese korean vietnamese thai filipino indonesian malaysian singaporean kiwi
    catholic christian muslim jewish hindu buddhist atheist vegan vegetarian pescatarian
    left right single married divorced retired pregnant gay straight bi trans""".split()
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
