"""A new value of something the user already told us, read with that value in hand.

The fast extractor reads a change from the sentence alone, so it needs the
sentence's shape: "I moved to Munich", "I started at KPMG". People rarely say it
that way ("Manchester is officially home now", "Been at Microsoft about three
weeks now", "Officially 35 as of this morning"). Knowing what the user said
before changes the problem: if the user lives in Leeds, a sentence about home
that names one other place is most likely about the new city. :func:`change_of`
reads such a sentence for one attribute whose current value is known
(:func:`memstrata.memory.formation.observe` calls it for a user turn, only for
attributes the user holds and the extractor did not read in that turn):

* ``city`` and ``employer``: the sentence has a cue of the topic (home, moved,
  apartment / job, joined, offer, first month at ...) and exactly one place or
  organisation name - a capitalised name after "in/to/at/from/joined", or before
  "is (officially) home" / "made me an offer", or (a city) any name the GeoNames
  gazetteer knows (:mod:`memstrata.policies.gazetteer`) - other than the current value;
* ``age``: a birthday cue and one number just above the current age (at most 5);
* ``name`` and ``diet``: :mod:`memstrata.policies._held_name_diet`.

The English guards are read at three levels: quoted speech, conditions and dreams
anywhere in the text; questions, plans, trips and the past in the value's sentence;
negations and other people in its clause ("..., not Bristol" retires the current
value instead of negating the clause).

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

from memstrata.policies import _held_name_diet as nd
from memstrata.policies._extraction_en import _EN_OTHER_PEOPLE, _known_place
from memstrata.policies._extraction_zh import (
    _ZH_CLAUSE_SPLIT,
    _ZH_N,
    _ZH_OTHER_PEOPLE,
    _ZH_PLACE_NAMES,
    _zh_age,
    as_written,
    to_simplified,
    zh_unguarded,
)

__all__ = ["ATTRIBUTES", "change_of", "has_cue"]

#: the attributes :func:`change_of` can read a new value of
ATTRIBUTES = ("city", "employer", "age", "name", "diet")

_CUES = {
    "city": re.compile(
        r"\b(?:home|move|moved|moving|shifted|relocat\w*|apartment|flat|house|place|new city|"
        r"live|lived|living|livin|settled|keys|unpack\w*|neighbou?rhood|balcony|rent|rents|boxes|"
        r"weather|people now|locals now|based|sharehouse|lease|address|bungalow|suburb|condo|"
        r"(?:been|living|settled|moved)\s+here|resident|residence|residency|here\s+in|life\s+in|"
        r"been\s+in(?=\s+\S+(?:\s+\S+){0,2}\s+(?:for\s+|about\s+|almost\s+|nearly\s+|over\s+)?"
        r"(?:a|an|one|two|three|four|five|six|\d+|a\s+few|several)\s+(?:weeks?|months?|years?))|"
        r"first\s+(?:winter|summer|spring|autumn|fall|month|year)\s+in)\b",
        re.I),
    "employer": re.compile(
        r"\b(?:job|joined|started|starting|working|work|offer|onboarding|first (?:day|week|"
        r"month)|badge|team|hired|role|colleagues?|gig|notice|employee|business cards?|crew|"
        r"payroll|signature|been with|left|quit|resigned|mat leave|barista|employed|contract|"
        r"reported|payslip|paycheck|paystub|orientation|employer|headline|linkedin|joining|"
        r"switched over|all-hands|all\s+hands|offsite|off-site|town\s+hall|coworkers?)\b|"
        # "been at zoho like 3 weeks now" (a stretch of weeks, not "since 6am")
        r"\bbeen\s+(?:working\s+)?at\s+\S+\s+(?:(?:like|about|almost|nearly|for|over)\s+)?"
        r"(?:a|one|two|three|four|five|six|a\s+few|several|\d+)\s+(?:weeks?|months?)\b|"
        r"\bI['’]m\s+(?:now\s+)?an?\s+(?:[\w-]+\s+){0,2}[\w-]+\s+at\s+[A-Z]", re.I),
    "age": re.compile(
        r"\b(?:birthday|turned|turning|today|officially|years? old|older|b-?day|celebrated|"
        r"completed\s+\d{1,3}\s+years|"
        r"cake|candles|as of (?:today|yesterday|this morning)|finally\s+\d{1,3}|"
        # "just hit the big 3-0 last weekend"
        r"the\s+big\s+\w+[-\s]\w+|"
        r"(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|two|three|four|five|six|"
        r"seven|eight|nine)[-\s]oh|"
        r"no longer a (?:teen\w*|kid|minor)|not a (?:teen\w*|kid|minor) any\s?more|"
        r"(?:now\s+that|since)\s+i(?:['’]?m|\s+am))\b|🎂|"
        r"\bmy\s+\d{1,3}(?:st|nd|rd|th)\b(?!\s+(?!birthday|b-?day|on|and|yesterday|today|went|was)\w)|"
        r"\b\d{1,3}(?:st|nd|rd|th)\s+(?:birthday|b-?day)\b", re.I),
}

#: anywhere in the text, nothing in it is read: quoted speech, a condition, a dream
_TEXT_GUARD = re.compile(
    r"[\"“”«»「」]|"
    r"\b(?:(?<!sorry\s)(?<!know\s)(?<!see\s)(?<!check\s)(?<!wondering\s)if|unless|imagine|imagined|dream|dreams|dreamt|dreamed|dreaming|pretend|suppose|"
    r"wish|someday|joke|joking|kidding|swear|swears|pros and cons|"
    # a decision to take: "Should I take the Stripe offer?"
    r"should\s+(?:i|we)\s+(?:move|take|accept|go|join|quit|leave|switch|relocate|stay)\b)\b", re.I)
#: in the sentence that names the value: a question, a plan or the future, a trip
_SENTENCE_GUARD = re.compile(
    r"\?|"
    r"\b(?:might|maybe|perhaps|would|could|should|thinking|considering|consider|"
    r"plan to|plans to|plan on|planning|plan is|plan was|hope|hoping|gonna|going to|will|"
    r"next|soon|tomorrow|upcoming|later this|"
    r"visit|visiting|visited|trip|vacation|holiday|conference|business(?!\s+cards?)|flight|"
    r"flying|(?<!last\s)weekend|stay|stayed|staying|hotel|back home|"
    r"look|looks|feel like(?!\s+home)|guess|the idea|floated|suggest\w*|propos\w*|asked|"
    r"wants?|wanted|"
    r"offering|relocation to|cover letter|application|apply|applying|interview\w*|resume|cv|"
    # an offer not taken: "Xero offered me a role but I turned it down"
    r"turned\s+(?:\w+\s+){0,2}down|declin\w+|"
    # the past: "when I lived in Minneapolis", "I used to live in"
    r"when\s+(?:i|we)\s+(?:lived|was living|were living|worked|was working|was|were)\b|"
    # "I used to live in", not "I'm (only) used to Google Workspace"
    r"(?<!['’]m\s)(?<!\bam\s)(?<!\bonly\s)(?<!\bbe\s)(?<!\bget\s)(?<!\bgetting\s)(?<!\bnot\s)"
    r"used to|"
    r"back\s+(?:when|in|then)\b|"
    r"before\s+(?:that|this|then|joining|moving|(?-i:[A-Z])\w+)|grew up|grow up in\w*|born|raised|"
    r"(?:my|our)\s+first\s+(?:real\s+|proper\s+|full-time\s+)?(?:job|gig|employer)|"
    # "Before I joined Atlassian I spent four years at Canva"
    r"before\s+(?:i|we)\s+(?:joined|moved|started|came|left|got|settled)|"
    r"spent\s+(?:\w+\s+){0,2}(?:years?|months?|decades?)\s+(?:\w+ing\s+)?(?:at|with|in)|"
    # a birthday to come: "stressing about turning 28", "not until November"
    r"(?:about|before|until|till)\s+turning|not\s+until|(?:isn['’]t|is\s+not|not)\s+(?:till|until)|"
    r"dread\w*|"
    # another company the user's team works with: "partnering with Salesforce"
    r"partner(?:ing|ed|s|ship)?\s+with|integration\s+with|"
    r"(?:our|a|the|my)\s+(?:client|customer|vendor|supplier)s?\b|"
    # a plan said without "I'm": "Moving to Berlin — any tips?"
    r"^\s*(?:moving|relocating)\b|"
    r"(?:till|until)\s+(?:i|we)\s+(?:was|were)|(?<!['’]ve\s)(?<!have\s)\b(?:i|we)\s+lived\b|"
    r"(?:i|we)\s+(?:was|were)\s+(?:at|with|in)\b(?=[^.!?]*\bfor\s+(?:\w+\s+)?(?:years?|"
    r"decades?)\b)|"
    r"(?:relocating|moving|transferring|sending)\s+me)\b|"
    r"\w(?:'ll|’ll)\b|"
    # planned: "I'm moving to ...", "we're relocating", "I'm turning 30"
    r"\b(?:am|are|['’]m|['’]re)\s+(?:moving|relocating|turning|starting|joining|going)\b|"
    # something else moved: "I moved the meeting to Munich", "the company moved its office"
    r"\bmov(?:e|ed|es|ing)\s+(?:the|a|an|its|their|his|her)\s+(?!(?:whole\s+)?family\b)|"
    r"\b(?:company|office|firm|school|shop|store|business|team|meeting)\s+(?:moved|"
    r"relocated|is moving)\b", re.I)
#: in the clause that names the value: a negation
_CLAUSE_GUARD = re.compile(r"\b(?:\w+n['’]t|never|not|nope|no|cannot)\b", re.I)
#: another person: in the value's clause, or anywhere when that clause has no "I" or "we"
#: "my best friend", "my older sister", "my little brother"
_KIN = (r"(?:my|our|his|her|their)\s+(?:(?:best|old|older|younger|little|big|baby|twin|"
        r"eldest|oldest|youngest|step|close)[\s-]+)?")
_OTHERS = re.compile(
    rf"\b{_KIN}(?:{_EN_OTHER_PEOPLE})s?\b|"
    r"\b(?:he|she|they)\b(?!['’]s)", re.I)
_NAMED_OTHERS = re.compile(
    rf"\b{_KIN}(?:{_EN_OTHER_PEOPLE})s?\b|\b(?:he|she)\b(?!['’]s)", re.I)
_FIRST_PERSON = re.compile(r"\b(?:i|i['’]m|i['’]ve|i['’]d|me|my|we|we['’]re|we['’]ve|our|us)\b",
                           re.I)
#: a question after a comma starts a sentence of its own ("been living in Brisbane three
#: weeks now ..., any tips for keeping clothes from going mouldy?"): the head is read
_ASK_AFTER_COMMA = re.compile(
    r"(?:,|\s+-)\s+(?:so\s+|and\s+|but\s+)?(?=(?:any|anything|what|whats|what's|how|can|could|is|are|do|does|did|where|which|who|"
    r"why|anyone|tips|ideas|suggestions|recommendations?|recommend|suggest)\b[^.!?]*\?)", re.I)
_SENTENCES = re.compile(r"(?<=[.!?…])\s+|\n+|\s+[—–]\s+|"
                        r"\s*[\U0001F1E6-\U0001F1FF\U0001F300-\U0001FAFF]+\s*")
_CLAUSES = re.compile(r"\s*[,;:()—–]\s*|\s+-\s+|\s+(?:but|and|so|which|though|although|"
                      r"while|whereas)\s+", re.I)


def _clean_clauses(text: str) -> list[str]:
    """The clauses of ``text`` a value may be read from (none when a text guard fires)."""
    if _TEXT_GUARD.search(text):
        return []
    # a clause without "I" or "we" is someone else's when another person was named before
    # it in a sentence that is read ("My sister moved to Munich. Loves it there."); not
    # after it ("19 as of today 🎉 my roommates got me a cake"), not in a question's
    # "without my parents??", and "they" alone is as often the new employer
    others_before = False
    out = []
    for sentence in _SENTENCES.split(_ASK_AFTER_COMMA.sub(". ", text)):
        if not sentence.strip() or _SENTENCE_GUARD.search(sentence):
            continue
        for clause in _CLAUSES.split(sentence):
            if not clause:
                continue
            if _CLAUSE_GUARD.search(clause) or _OTHERS.search(clause):
                others_before = others_before or _NAMED_OTHERS.search(clause) is not None
                continue
            if others_before and not _FIRST_PERSON.search(clause):
                continue
            out.append(clause)
    return out


_NAME = r"[A-Z][\w’'&.-]*[\w&](?:\s+(?:[A-Z]\s+)?[A-Z][\w’'&.-]*[\w&])*"
_BEFORE = {
    "city": re.compile(rf"\b(?:in|to|from|at)\s+(?P<v>{_NAME})"),
    "employer": re.compile(
        rf"\b(?:at|joined|(?i:since\s+joining)|for|with|(?:employed|hired|contracted)\s+by|(?:payslip|paycheck|"
        rf"paystub|salary|wages)\s+(?:(?:now\s+)?(?:comes?|is)\s+)?from)\s+(?P<v>{_NAME})|"
        # "just got my Stripe laptop and badge": the employer's kit
        rf"\bmy\s+(?:new\s+)?(?P<v5>{_NAME})\s+(?:laptop|badge|lanyard|email|hoodie|swag|"
        r"welcome pack|login|ID|id card|onboarding)\b|"
        # "officially a Stripe employee", "my business cards now say Honda"
        rf"\b(?:an?|the)\s+(?P<v2>{_NAME})\s+(?:employee|staffer|hire|new hire)\b|"
        rf"\b(?:cards?|badge|signature|lanyard)\s+(?:now\s+)?(?:says?|reads?)\s+(?P<v3>{_NAME})|"
        # "update my email signature — KPMG, Senior Associate"
        rf"\b(?:signature|bio|title)\s*(?:to\s+|[:—–-]\s*)(?P<v4>{_NAME})|"
        # "our Shopify team offsite is next week", "our Spotify all-hands"
        rf"\b(?i:our)\s+(?P<v7>{_NAME})\s+(?i:(?:team\s+)?(?:offsite|off-site|all-hands|all\s+hands|"
        rf"town\s+hall|holiday\s+party|standup|stand-up))\b|"
        # "doing backend at a tiny startup called Ravelin now"
        rf"\b(?i:(?:at|for|joined|with)\s+(?:a|an|this|some)\s+(?:[\w-]+\s+){{0,2}}?"
        rf"(?:startup|start-up|company|firm|agency|studio|consultancy|shop|place|outfit)\s+"
        rf"(?:called|named))\s+(?P<v8>{_NAME})|"
        # "I took teh offer from Stripe" (an offer taken, not one weighed)
        rf"\b(?i:(?:took|accepted|taken)\s+(?:the|teh|their|an?)\s+(?:job\s+)?offer\s+"
        rf"(?:from|at|with))\s+(?P<v6>{_NAME})"),
}
_AFTER = {
    "city": re.compile(
        rf"(?P<v>{_NAME})(?:\s+is|['’]s(?:\s+been)?)\s+(?:officially\s+|now\s+|finally\s+)?"
        r"(?:my\s+|our\s+)?(?:new\s+)?home\b|"
        # "home being Minneapolis these days", "home is Minneapolis now"
        rf"\b(?i:home)\s+(?:being|is)\s+(?:now\s+)?(?P<v3>{_NAME})|"
        # "we're Brisbane people now", "officially Porto people now"
        rf"\b(?:we['’]re|I['’]m|we are|I am|(?i:officially))\s+(?:(?i:officially)\s+)?"
        rf"(?P<v2>{_NAME})\s+(?:people|locals|residents)\s+now\b"),
    "employer": re.compile(
        rf"(?P<v>{_NAME})\s+(?:made me an offer|offered me|hired me|took me on)\b"),
}
_BEEN_AT = re.compile(
    rf"^\s*(?:I(?:['’]ve|\s+have)\s+)?(?:now\s+)?been\s+(?:working\s+)?(?:at|with|for)\s+"
    rf"(?P<v>(?-i:{_NAME}))"
    # a stretch of working life, not of a day ("at Heathrow for two hours", "since 6am")
    r"\s+(?:ever\s+since|since\s+then|since\s+(?:the\s+)?(?:(?:early|late|mid)[-\s]?)?"
    r"(?:summer|spring|autumn|fall|winter|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"(?:19|20)\d\d|last\s+(?:year|month|summer|spring|autumn|fall|winter)|i\b|we\b|joining|"
    r"graduat\w+)|"
    # "been at Kaiser Permanente a week now since leaving the old hospital"
    r"(?:(?:a|one|two|three|\d+)\s+(?:days?|weeks?)\s+now\s+)?since\s+leaving|"
    r"for\s+(?:the\s+)?(?:last\s+|past\s+)?(?:a|an|one|two|three|four|five|six|"
    r"seven|eight|nine|ten|a\s+few|several|\d+)\s+(?:months?|years?))\b", re.I)
#: what a sentence takes for granted about the user's employer, in a question or beside a
#: plan too: "Since joining Airbus last month my new manager wants ...", "Now that I've
#: joined Bosch ...", "I'm a product designer at Figma now, left the bank in the spring"
_JOINED_GIVEN = re.compile(
    rf"\b(?i:since\s+(?:i\s+)?join(?:ed|ing)|now\s+that\s+i(?:['’]ve|\s+have)\s+"
    rf"(?:joined|started\s+at))\s+(?P<v>{_NAME})|"
    rf"\bI['’]m\s+(?i:now\s+)?(?i:an?)\s+(?:[\w-]+\s+){{0,3}}?(?i:at)\s+(?P<w>{_NAME})\s+(?i:now)\b")
_BEEN_AT_ANYWHERE = re.compile(_BEEN_AT.pattern.replace("^\\s*", "\\b", 1), re.I)
#: a clause ends at a comma, a semicolon or a conjunction here (the name's "'s" stays with it)
_CLAUSES_AT_COMMA = re.compile(r"\s*[,;:—–]\s*|\s+(?:and|but|so)\s+", re.I)
_NEW_EMPLOYER = re.compile(
    rf"\b(?i:my\s+(?:new\s+)?(?:employer|company|firm|workplace)(?:\s+these\s+days|\s+now)?)"
    rf"\s*(?:,|\s+is\s+|\s*[—–:]\s*|\s)\s*"
    rf"(?P<v>{_NAME})|\b(?i:on\s+the\s+payroll\s+(?:at|of))\s+(?P<w>{_NAME})")
#: capitalised words that are not names where a name would stand
_NOT_NAMES = frozenset(
    "i i'm i’m we my our the a an this that it new sorry quick been ever after long handed "
    "honestly everyone could cut on another officially starting from hi hey so just finally "
    "monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december spring summer autumn fall "
    "winter christmas easter".split())
_NUMBER = re.compile(r"(?<![\d.,])(\d{1,3})(?![\d,]|\.\d)(?!(?:st|nd|rd|th)\b)"
                     r"(?!\s*(?:%|percent|km|miles|kg|lbs?|minutes?|hours?|days?|weeks?|months?|people|times|euros?|dollars?|pounds?|"
                     r"kids|boxes)\b)")
#: an ordinal is an age only as one: "my 31st birthday", "celebrated my 57th on Saturday"
#: ("just ran my 57th parkrun" is not)
_ORDINAL = re.compile(
    r"(?<![\d.,])(\d{1,3})(?:st|nd|rd|th)(?=\s+(?:birthday|b-?day)\b|"
    r"\s*(?:[!.,🎂🎉]|$|\s+(?:on|yesterday|today|last|this|with|at|and|went|was)\b))", re.I)
_TENS = {w: 10 * n for n, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if n >= 2}
_UNITS = {w: n for n, w in enumerate(
    "_ one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split()) if n >= 1}
_WORD_NUMBER = re.compile(
    rf"\b(?P<t>{'|'.join(_TENS)})(?:[-\s](?P<u>{'|'.join(list(_UNITS)[:9])}))?\b|"
    rf"\b(?P<s>{'|'.join(_UNITS)})\b", re.I)


_MY_ORDINAL = re.compile(
    r"\bmy\s+(\d{1,3})(?:st|nd|rd|th)\b(?=\s*(?:[!.,🎂🎉]|$|\s+(?:birthday|b-?day|on|yesterday|"
    r"today|last|this|with|at|and|went|was|party)\b))", re.I)
#: a birthday had, not one to come ("had my 42nd on the weekend")
_HAD_MY = re.compile(r"\b(?:had|celebrated|survived)\s+my\s+\d{1,3}(?:st|nd|rd|th)\b", re.I)
#: "as a 42 year old", "as a 42-year-old" - the user describing themselves
_AS_AGE = re.compile(r"\bas\s+an?\s+(\d{1,3})[-\s]?(?:years?|yrs?)[-\s]?old\b(?![-\s]+(?:\w+\s+)?"
                     r"(?:son|daughter|kid|child|boy|girl|dog|cat|car|house|building))", re.I)
#: an age to come or imagined: "as a 50 year old I will ...", "when I'm 50"
_AGE_TO_BE = re.compile(r"\b(?:will|would|'ll|going to|gonna|next|someday|one day|when|by the time|"
                        r"once|imagine|pretend|if)\b", re.I)
#: "Now that I'm thirty", "now that im 20"
_NOW_THAT_AGE = re.compile(r"\b(?:now\s+that|since)\s+i(?:['’]?m|\s+am)\s+"
                           r"(?:\d{1,3}|[a-z]+(?:[-\s][a-z]+)?)\b"
                           # "since I'm 40 minutes away" is no age
                           r"(?!\s*(?:minutes?|mins?|hours?|hrs?|km|miles?|mi|percent|%|kg|"
                           r"kilos?|lbs?|pounds|feet|ft|cm|bucks|dollars|euros?|steps|weeks?|"
                           r"days?|months?)\b)", re.I)
_NOW_THAT_SETTLED = re.compile(
    r"\b(?i:now\s+that\s+(?:i|we)(?:['’]?ve|\s+have|['’]m|\s+am|['’]re|\s+are)?\s+"
    r"(?:finally\s+|just\s+|all\s+)?"
    rf"(?:settled|moved|relocated|living)\s+(?:in|into|to))\s+(?P<v>{_NAME})")
#: the user as a resident of the place: "first week as a Denver resident", "my Lisbon
#: residence card"
_RESIDENT = re.compile(
    rf"\b(?i:as\s+an?|new)\s+(?P<v>{_NAME})\s+(?i:resident|local)\b|"
    rf"\b(?i:my)\s+(?P<w>{_NAME})\s+(?i:residen(?:ce|cy)\s+(?:card|permit))\b")
#: the user moved to where the text is about: "I shifted here from Mumbai"
_MOVED_HERE = re.compile(r"\b(?:i|we)(?:['’]ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?"
                         r"(?:moved|shifted|relocated)\s+(?:over\s+)?here\b"
                         # "Lease signed last month and we're fully unpacked here now"
                         r"|\b(?:i|we)(?:['’]re|\s+are|['’]m|\s+am)\s+(?:all\s+|fully\s+|finally\s+)?"
                         r"(?:unpacked|settled(?:\s+in)?)\s+here\b"
                         # "what's the sales tax in Denver? ... that's home now"
                         r"|\b(?:that|it)(?:['’]s|\s+is)\s+(?:(?:my|our)\s+)?home\s+now\b"
                         r"|\b(?:this|here)\s+is\s+where\s+(?:i|we)\s+live\s+now\b"
                         # "just signed the lease on my place here", "moved up last month"
                         r"|\b(?:my|our)\s+(?:new\s+)?(?:place|apartment|flat|house|condo)\s+here\b"
                         r"|(?:^|[,;]\s*|\b(?:and|so)\s+)(?:just\s+|recently\s+)?(?:moved|relocated)"
                         r"\s+(?:up|down|over|out)\b(?!\s+(?:the|a|an|my|our|his|her|their|it)\b)",
                         re.I)
#: home named now, in a clause of its own: "home is Seattle these days, we sold the austin
#: house back in march" (the past is the old home's)
_HOME_NOW = re.compile(
    rf"\b(?i:home)\s+(?:is|being)\s+(?i:now\s+)?(?P<v>{_NAME})\s+(?i:now|these\s+days)\b|"
    rf"(?P<w>{_NAME})\s+(?i:is)\s+(?i:(?:my|our)\s+)?(?i:new\s+)?(?i:home)\s+(?i:now|these\s+days)\b")
#: the user's home named as here: "from my place here in Seattle"
_HOME_HERE_IN = re.compile(
    rf"\b(?i:(?:my|our)\s+(?:new\s+(?:place|apartment|flat|house|condo|home)(?:\s+here)?|"
    rf"(?:place|apartment|flat|house|condo|home)\s+here)\s+in)\s+(?P<v>{_NAME})")
#: "the big four-two", "the big 4-0" (digits too: "the big 5-0")
_BIG_AGE = re.compile(rf"\bthe\s+big\s+(?P<t>{'|'.join(list(_UNITS)[1:9])}|[1-9])[-\s]"
                      rf"(?P<u>oh|o|{'|'.join(list(_UNITS)[:9])}|[0-9])\b", re.I)


#: the user's own birthday, today or just had ("today's my birthday!", "birthday was
#: yesterday") - without a number it makes the held age one year more
_BIRTHDAY_NOW = re.compile(
    r"\b(?:today['’]?s|today\s+is|it['’]s|it\s+was|yesterday\s+was)\s+(?:my\s+)?(?:birthday|b-?day)\b|"
    r"\bmy\s+(?:birthday|b-?day)\s+(?:is\s+|was\s+)?(?:today|yesterday)\b|"
    r"^\s*(?:\w+\s+)?(?:birthday|b-?day)\s+was\s+(?:yesterday|today)\b|"
    r"\b(?:had|celebrated)\s+my\s+(?:birthday|b-?day)\b|"
    r"\bhappy\s+birthday\s+to\s+me\b", re.I)
_SUN_TRIP = re.compile(r"\b(?:another\s+|one\s+more\s+)?trips?\s+around\s+the\s+sun\b", re.I)
#: where a decade of life starts ("teens" at 13 is not needed: out of them is 20)
_DECADES = {w: 10 * n for n, w in enumerate(
    "_ teens twenties thirties forties fifties sixties seventies eighties nineties".split())
    if n >= 1}
_DECADE_BEGUN = re.compile(
    r"\bout\s+of\s+my\s+(teens|twenties|thirties|forties|fifties|sixties|seventies|eighties)\b|"
    r"\b(?:into|in)\s+my\s+(twenties|thirties|forties|fifties|sixties|seventies|eighties|"
    r"nineties)\s+(?:now|officially)\b", re.I)


def _big_age(m: re.Match[str]) -> int:
    """The age a :data:`_BIG_AGE` match names: "four-two" is 42, "five-oh" 50."""
    unit, tens = m["u"].lower(), m["t"].lower()
    return 10 * (int(tens) if tens.isdigit() else _UNITS[tens]) + (
        0 if unit in ("oh", "o") else int(unit) if unit.isdigit() else _UNITS[unit])


_OH = re.compile(rf"\b(?P<t>{'|'.join(list(_UNITS)[1:9])})[-\s]oh\b", re.I)


def _ages(text: str) -> set[int]:
    """The numbers in ``text`` that may be an age: digits, ordinals as ages, number words
    ("the big three-oh")."""
    found = {int(n) for n in _NUMBER.findall(text)} | {int(n) for n in _ORDINAL.findall(text)}
    found |= {50 for _ in re.finditer(r"\bhalf\s+a\s+century\b", text, re.I)}
    found |= {10 * _UNITS[m["t"].lower()] for m in _OH.finditer(text)}
    for m in _WORD_NUMBER.finditer(text):
        if m["t"]:
            found.add(_TENS[m["t"].lower()] + (_UNITS[m["u"].lower()] if m["u"] else 0))
        else:
            found.add(_UNITS[m["s"].lower()])
    return found


_CJK = re.compile(r"[\u4e00-\u9fff]")
_ZH_CUES = {
    "city": re.compile(r"住|搬|安家|定居|落户|生活|扎根|租|房子|新家|城市|地址|安顿|落脚|安在|离开|"
                       r"调到|调去|(?i:move|base)|"
                       r"待了|(?<!老)家(?:现在)?在|这边|(?<![回出])来"),
    "employer": re.compile(r"工作|上班|入职|加入|跳槽|东家|公司|离职|offer|团队|任职|的人了|做|"
                           r"工资|薪水|周报|加班|食堂|工位|员工|周会|例会|组会|晨会|同事|"
                           r"报到|工牌|工卡|打工|调入|调到|离开|(?i:join|switched\s+to|team)"),
    "age": re.compile(rf"生日|岁|满|成年|🎂|蛋糕|蜡烛|大寿|寿辰|(?i:birthday|b-?day)|"
                      rf"(?:今天|终于|刚刚?|已经)\s*{_ZH_N}了"),
}
_ZH_OTHERS = _ZH_OTHER_PEOPLE
#: a question, a condition, quoted speech or a trip anywhere: nothing in the text is read
_ZH_GUARD = re.compile(r"[?？「」“”『』]|吗|如果|要是|假如|假设|万一|的话|倘若|"
                       r"那时候?|那会儿|那几年|"
                       r"出差|旅游|旅行|度假|玩|探亲|(?:去|到)[^，,。！!？?]{1,8}开会|参观|路过|住了[一两二三四五六七八九十几\d]+天|"
                       r"住[一两二三四五六七八九十几\d]+(?:晚|天|夜)|酒店|民宿|演唱会|就回来|要不要")
#: in the clause that names the value: a plan, the future, a trip, a negation, someone else
_ZH_REQUEST = re.compile(r"(?:帮我|帮忙|请|麻烦|推荐|查一?下|看看)")
#: ... unless it asks to set the new value (帮我把天气城市改成大连)
_ZH_SET_TO = re.compile(r"改成|换成|改为|设成|设为")
_ZH_CLAUSE_GUARD = re.compile(
    r"打算|准备|计划|考虑|想|可能|也许|或许|希望|梦想|说不定|下周|下个月|明年|明天|将来|"
    # the past, not a comparison with it (房租比之前便宜不少)
    r"(?<!比)以前|(?<!比)之前|曾经|原来|本来|过去|当年|小时候|细个|大学|大學|读书|讀書|上学|上學|高中|"
    r"第一份工作|"
    r"(?<!回)老家|"
    # a negation, not 不少 / 不错 / 不久 / 不到 / 不过 / 没多久 (房租比之前便宜不少)
    # (别 inside a word negates nothing: 告别北漂, 特别, 区别)
    rf"快要|就要|将要|没(?!多久|几天)|不(?!少|错|久|到|过)|(?<![告特分区差性级类识])别(?![人的处])|未|"
    rf"(?<![和跟与同])(?:{_ZH_OTHERS})(?!们?(?:给|为|帮|替|陪)我)")
#: someone else's birthday or age: 我儿子今天生日, 我弟弟满三十岁了
#: (not what they say of the user's: 我妈说我虚岁都43了)
_ZH_OTHERS_AGE = re.compile(rf"(?<![和跟与同])(?:{_ZH_OTHERS})(?!们?(?:给|为|帮|替|陪)我)"
                            r"[^，,。！!；;我]{0,6}?(?:生日|岁|满)")
#: the user's own birthday, today or just had: 今天是我生日, 我昨天过生日
_ZH_BIRTHDAY_NOW = re.compile(r"(?:今天|昨天|今儿)(?:是)?我(?:的)?(?:生日|生辰)|"
                              r"我(?:的)?生日(?:是|就是)?(?:今天|昨天)|我(?:今天|昨天)过(?:了)?生日")
#: the age told before corrected: 之前说错了，我其实是42岁，不是47
_ZH_AGE_CORRECTED = r"不是{0}|(?:说|记|写|打|搞)错了?"
_ZH_CLAUSE = _ZH_CLAUSE_SPLIT
#: characters no place or company name of these patterns contains
_ZH_STOP = r"我你他她它们这那哪边个一了的是在和与也都还就又很太现今明后前家到第"
#: cities of a million people or more (GeoNames) whose names hold one of those characters
#: (成都 has 都, 昆明 明, 石家庄 家): read as the whole name
_ZH_STOPPED_CITIES = ("呼和浩特|石家庄|加德满都|巴塞罗那|胡志明市|第比利斯|维也纳|明斯克|"
                      "哈瓦那|伯明翰|都柏林|渥太华|张家港|成都|太原|昆明|京都|金边")
_ZH_X = (rf"(?P<v>[A-Za-z][A-Za-z&.'-]{{6,24}}(?=[^A-Za-z&.'-]|$)|(?:{_ZH_STOPPED_CITIES})|"
         rf"(?:(?![{_ZH_STOP}])[\u4e00-\u9fffA-Za-z]){{2,6}}?)")
_ZH_END = (r"(?=[，,。！!；;、\s了啦的]|$|[来去](?=[了啦，,。！!；;\s]|$)|"
           r"第(?=[一二两三四五六七八九十\d])|上班|工作|住(?=[下了啦喇，,。！!；;\s]|$)|"
           r"定居|安家|落户|生活|发展|已经|安顿|落脚|"
           r"快(?=[一二两三四五六七八九十几半\d])|"
           r"[一二两三四五六七八九十几半\d]+个?多?(?:天|周|星期|月|年))")
_ZH_PLACES = {
    "city": (
        re.compile(rf"在{_ZH_X}(?:市)?(?:安家|定居|落户|生活|扎根|住下|买了房|租了房|租房)"),
        re.compile(rf"(?:搬到|搬去|搬来|搬回|迁到|定居在|安家在|住在|来到|回到|调到|调去|"
                   rf"(?:搬|迁|调)了(?:去|到|来)|"
                   rf"(?i:move|moved|relocate)\s*到|(?i:base)\s*(?:在|到)?)了?{_ZH_X}(?:市)?"
                   rf"{_ZH_END}"),
        re.compile(rf"{_ZH_X}(?:市)?(?:是|成了|就是)(?:我们?的)?新家"),
        re.compile(rf"回(?:到)?老家\s*{_ZH_X}{_ZH_END}"),
    ),
    "employer": (
        # (在顺丰这边做数据分析: the place the user works, spoken of as here)
        re.compile(rf"在{_ZH_X}(?:公司)?(?:这边|这里)?(?:做|上班|工作|任职|当|干|报到)(?!什么)"),
        re.compile(rf"在{_ZH_X}上了?[一二两三四五六七八九十几\d]+(?:天|周|个月)(?:的)?班"),
        re.compile(rf"(?:入职|加入|跳槽到|跳槽去|跳到|转到|进了|调入|调到了?|(?i:join)了?|"
                   rf"(?:跳槽|转|跳)了(?:去|到)|跳槽去了|跳去了)\s*了?{_ZH_X}{_ZH_END}"),
        re.compile(rf"是{_ZH_X}的人了"),
        re.compile(rf"(?:新东家|新公司|现在的公司|新单位|现在(?:的)?东家|目前(?:的)?东家)(?:是|就是)"
                   rf"{_ZH_X}{_ZH_END}"),
        # 离职手续办完了，这周一开始去腾讯上班
        re.compile(rf"(?:开始|已经)去{_ZH_X}(?:上班|工作|报到)"),
        re.compile(rf"{_ZH_X}(?:这边|这里)(?:入职|上班|报到)"),
        re.compile(rf"去{_ZH_X}报到"),
        re.compile(rf"办完{_ZH_X}的入职"),
        re.compile(rf"换到{_ZH_X}(?:打工|上班|工作|做)"),
        re.compile(rf"(?:现任公司|公司名|公司|单位)(?:改成|换成|改为)了?{_ZH_X}{_ZH_END}"),
        # 这个月开始领美团的工资了
        re.compile(rf"领(?:上)?{_ZH_X}的(?:工资|薪水|薪资)"),
        # 跳槽成功，现在是腾讯的产品经理了
        re.compile(rf"(?:现在|如今|目前)(?:已经)?是{_ZH_X}的[\u4e00-\u9fffA-Za-z]{{1,8}}(?:了|啦)"),
        # 现在发工资的地方变成美团了
        re.compile(rf"(?:发工资|上班|工作)的(?:地方|单位|公司)(?:也)?(?:变成|换成|成了)了?"
                   rf"{_ZH_X}{_ZH_END}"),
        # 劳动合同已经跟字节跳动签了 (a lease signed with a landlord is no employer)
        re.compile(rf"劳动合同(?:已经|也)?(?:跟|和|与){_ZH_X}签(?:了|好了|完了)"),
        re.compile(rf"(?:跟|和|与){_ZH_X}签(?:了|好了|完了)?(?:劳动合同|正式合同)"),
    ),
}
_ZH_NUMBER = re.compile(rf"(?<![\d.])({_ZH_N})(?![\d.])")
#: a stretch of time spent somewhere, or the how-manieth: 快一个月了, 三个礼拜了, 第二周了
_ZH_STRETCH = (r"(?=(?:快|都|已经|差不多)?[一二两三四五六七八九十几半\d]+个?多?"
               r"(?:天|周|星期|礼拜|月|年)|第[一二两三四五六七八九十\d]+(?:天|周|个?月|年))")
#: where the user has been for a while, or speaks from - read as a city only when the
#: gazetteer knows the place: 来成都快一个月了, 深圳这边夏天也太长了, 上海徐汇的新家搬完了
_ZH_HERE = (re.compile(rf"(?<![回出])来{_ZH_X}{_ZH_STRETCH}"),
            re.compile(rf"{_ZH_X}这边"),
            re.compile(rf"{_ZH_X}的新家"))
#: ... and as an employer when it is no city: 来美团快一个月了, 到联发科上班, 联发科的员工餐厅
_ZH_JOINED = (re.compile(rf"(?<![回出])来{_ZH_X}{_ZH_STRETCH}"),
              re.compile(rf"(?<![回想要])到{_ZH_X}(?:上班|工作)"),
              re.compile(rf"{_ZH_X}的员工(?:餐厅|食堂|宿舍|福利)"),
              # 字节这边的周会又拖了一个半小时
              re.compile(rf"{_ZH_X}这边的(?:周会|例会|组会|晨会|早会|同事|工位|食堂|领导|老板|加班)"))
#: words that stand where an employer's name would and name none
_ZH_NO_EMPLOYER = frozenset(
    "公司 新公司 单位 新单位 工地 厂里 店里 办公室 这里 那里 学校 家里".split())
#: a new team named where the user has just started: 发在小红书新团队的群里，我周一刚报到
_ZH_NEW_TEAM = re.compile(rf"{_ZH_X}(?:的)?新(?:团队|公司|单位|部门)")
_ZH_STARTED = re.compile(r"(?:我|刚|已经|正式|今天|昨天|这周|上周|本周|周[一二三四五六日天])"
                         r"[^，,。！!；;]{0,6}(?:报到|入职|(?i:onboard))\s*了?"
                         r"(?:[，,。！!；;]|$)")
#: where the user is now, just after starting: 邮件签名…现在是 字节跳动 产品经理，上周一刚入职
_ZH_NOW = r"现在(?:是|在)在?\s*"
_ZH_NOW_AT = re.compile(rf"{_ZH_NOW}{_ZH_X}(?=\s|了|[，,。！!；;]|$)")


#: 最近换工作了 / 跳槽了: the job changed, so where the user is now is the employer
_ZH_CHANGED_JOB = re.compile(r"换了?(?:份|个)?(?:工作|公司|东家|单位)了?|跳槽了|跳槽成功")
#: a Latin name in a Chinese text runs up to the Chinese after it
_LATIN_NAME = r"(?P<v>[A-Za-z][A-Za-z&.]{1,30})(?=[\u4e00-\u9fff\s，,。！!；;]|$)"
_ZH_NOW_AT_LATIN = re.compile(_ZH_NOW + _LATIN_NAME)
#: English verbs of a new employer in a Chinese text
_EN_SWITCHED = (r"(?i:\bI\s+(?:just\s+)?(?:switched|moved|jumped(?:\s+ship)?)\s+(?:over\s+)?to"
                r"|\bjoin(?:ed)?\s*了?)\s*")
_ZH_SWITCHED_TO = re.compile(rf"{_EN_SWITCHED}{_ZH_X}{_ZH_END}")
#: ... with a Latin name, which may be longer than a Chinese one (刚 join 了 McKinsey)
_ZH_SWITCHED_TO_LATIN = re.compile(
    _EN_SWITCHED + r"(?P<v>[A-Z][A-Za-z&.]{1,30}(?:\s+[A-Z][A-Za-z&.]+)*)"
    r"(?=[\u4e00-\u9fff\s，,。！!；;]|$)")
#: 今天是在美团的第一天 - read only beside a word of work (not a trip's first day)
_ZH_FIRST_DAY = re.compile(rf"在{_ZH_X}的?第一(?:天|周)")
_ZH_WORK_WORD = re.compile(r"offer|工位|入职|工牌|工卡|同事|上班|报到|onboard", re.I)
#: the current job left, done (离职手续办完了, 已经辞职了), and a start that days will bring
_ZH_LEFT_DONE = re.compile(r"(?:离职|辞职|裸辞|离开)[^，,。！!；;]{0,6}?(?:办完|办好|交接完)?了")
_ZH_SOON = re.compile(r"下(?:周|礼拜|星期)[一二三四五六日天]?|下个?月|明天|后天")
#: 46岁的人了 / 都46了: the user's own age said in passing
_ZH_AGED = re.compile(rf"(?<![\d.])({_ZH_N})岁的人了")
#: a number in quotes is not quoted speech: 蛋糕上插了个“48”的蜡烛
_ZH_QUOTED_NUMBER = re.compile(r"[“”\"]([\d一二三四五六七八九十]{1,3})[“”\"]")


#: the user moved to where the text is about: 我们全家上个月也跟着搬过来了
_ZH_MOVED_HERE = re.compile(r"(?:^|我|我们|全家|一家)[^，,。！!；;]{0,8}?搬(?:过来|来这|到这)")


def _zh_change_of(text: str, attribute: str, current: str) -> str | None:
    whole = text
    text = zh_unguarded(_ZH_QUOTED_NUMBER.sub(r"\1", text), _ZH_GUARD)
    # 正式 relocate 到深圳了: an English verb of moving and its 到, apart only by a space
    text = re.sub(r"(?i)\b(relocate|relocated|move|moved)\s+到", r"\1到", text)
    if not text or not _ZH_CUES[attribute].search(text):
        return None
    # 离职手续办完了，下周一正式入职字节跳动: the old job is over, so the start to come names
    # the employer - its day to come is no plan
    soon = _ZH_SOON if attribute == "employer" and _ZH_LEFT_DONE.search(text) else None
    clauses = [c for c in _ZH_CLAUSE.split(text)
               if c and not _ZH_CLAUSE_GUARD.search(c if soon is None else soon.sub("", c))]
    if attribute == "age":
        if not current.isdigit() or _ZH_OTHERS_AGE.search(text):
            return None
        now = int(current)
        # (30岁前该做点啥: an age still ahead is a bound, not the user's)
        ages = {int(_zh_age(n)) for c in clauses
                for n in _ZH_NUMBER.findall(re.sub(rf"{_ZH_N}\s*岁(?:之|以)?前", "", c))}
        # 46岁的人了还想转行: the user's age said of themselves, whatever the clause goes on to
        ages |= {int(_zh_age(m[1])) for m in _ZH_AGED.finditer(text)}
        if now == 17 and any("成年了" in c or "成年啦" in c for c in clauses):
            ages.add(18)  # 终于成年了: eighteen
        if not ages and any(_ZH_BIRTHDAY_NOW.search(c) for c in clauses):
            ages.add(now + 1)  # 今天是我生日: a year older, no number said
        if re.search(_ZH_AGE_CORRECTED.format(re.escape(current)), text):
            # a correction names the age it replaces, lower too - said with 岁
            stated = {int(_zh_age(m[1])) for c in clauses
                      for m in re.finditer(rf"(?<![\d.])({_ZH_N})\s*(?:周)?岁", c)}
            stated = {n for n in stated if 0 < n < 120 and n != now}
            if len(stated) == 1:
                return str(stated.pop())
        ages = {n for n in ages if now < n <= now + 5}
        return str(ages.pop()) if len(ages) == 1 else None
    old = current.strip()
    olds = {old, re.sub(r"市$", "", old)}
    patterns = _ZH_PLACES[attribute]
    # (a clause here ends at punctuation, not at a space: 已经 onboard 了)
    started = attribute == "employer" and any(
        (_ZH_STARTED.search(p) or _ZH_CHANGED_JOB.search(p)) and not _ZH_CLAUSE_GUARD.search(p)
        for p in re.split(r"[，,。！!；;]", text))
    if started:
        patterns = (*patterns, _ZH_NEW_TEAM)
    if attribute == "employer" and _ZH_WORK_WORD.search(text):
        patterns = (*patterns, _ZH_FIRST_DAY)
    if attribute == "employer":
        # 离开腾讯之后去了字节跳动: where the user went after leaving the current employer
        patterns = (*patterns, re.compile(
            # (离开阿里之后: the held name's first two characters stand for it)
            rf"(?:离开|从)(?:{re.escape(old)}|{re.escape(old[:2])})(?:出来)?(?:之后|以后|后)?"
            rf"[，,\s]*(?:就|又)?"
            rf"(?:去了|到了|进了)\s*{_ZH_X}{_ZH_END}"))
    new = {m["v"] for c in clauses for pattern in patterns for m in pattern.finditer(c)}
    if started:  # spaces around the name (现在是 字节跳动 产品经理): the text, not a clause
        new |= {m["v"] for m in _ZH_NOW_AT.finditer(text)}
        # 现在在Google上海office: a Latin name runs up to the Chinese after it
        new |= {m["v"] for m in _ZH_NOW_AT_LATIN.finditer(text)}
    if attribute == "employer":
        # "I switched to 渣打银行 last month，new team 都很 nice": English verbs in a Chinese
        # text (a clause here ends at punctuation, not at the spaces between the languages)
        new |= {m["v"] for p in re.split(r"[，,。！!；;]", text) if not _ZH_CLAUSE_GUARD.search(p)
                for pattern in (_ZH_SWITCHED_TO, _ZH_SWITCHED_TO_LATIN)
                for m in pattern.finditer(p)}
    if attribute in ("city", "employer"):
        from memstrata.policies.gazetteer import find_cities_zh

        # the clause up to the place is read: 成都这边的房子还没收拾完 negates the unpacking
        for pattern in _ZH_HERE if attribute == "city" else _ZH_JOINED:
            for c in _ZH_CLAUSE.split(text):
                for m in pattern.finditer(c):
                    if _ZH_CLAUSE_GUARD.search(c[:m.end()]):
                        continue
                    places = find_cities_zh(m["v"])
                    if attribute == "city" and places and m["v"].startswith(places[0]):
                        new.add(places[0])
                    elif attribute == "employer" and not places \
                            and m["v"] not in _ZH_NO_EMPLOYER:
                        new.add(m["v"])
    # 调入招商银行总行: the bank, not its head office
    new = {re.sub(r"(?<=..)(?:总行|分行|总部|总公司|分公司|分部|办事处)$", "", v) for v in new}
    new = {v for v in new if v not in olds and not any(o.startswith(v) for o in olds)
           and (attribute != "employer" or v not in _ZH_PLACE_NAMES)}
    if attribute == "city" and len(new) > 1 and any(_CJK.search(v) for v in new):
        # relocate到新加坡了，…now住在Tiong Bahru附近: a Latin word in a Chinese text is a
        # neighbourhood cut at its space, the city is the one written in Chinese
        new = {v for v in new if _CJK.search(v)}
    if attribute == "city" and len(new) > 1:
        # relocate到深圳了，公司帮忙在南山租了房子: a district beside its city - the city
        from memstrata.policies.gazetteer import find_cities_zh

        cities = {v for v in new if find_cities_zh(v) == [v]}
        new = cities if len(cities) == 1 else new
    if not new and attribute == "city" and any(
            _ZH_MOVED_HERE.search(c) and not re.search(r"把|从", c) for c in clauses):
        from memstrata.policies.gazetteer import find_cities_zh

        # 我老公调去合肥工作，我们全家上个月也跟着搬过来了，合肥冬天…？: "here" is the one
        # other city the text names, in its question too (从北京搬过来 names where from, 把书桌
        # 搬过来 moved a desk)
        named = {v for v in find_cities_zh(whole)
                 if v not in olds and not any(o.startswith(v) for o in olds)}
        new = named if len(named) == 1 else new
    if not new and attribute == "city":
        from memstrata.policies.gazetteer import find_cities_zh

        # a request names a place it asks about (帮我看看厦门哪个区适合老人住), not home; a
        # clause after someone else's move is theirs (我妹妹搬过来了，杭州那边房子卖了), and
        # 从北京搬过来 names where from
        own = set(nd.zh_own_clauses(text))
        new = {v for c in clauses if (not _ZH_REQUEST.match(c) or _ZH_SET_TO.search(c))
               and (c in own or re.search(_ZH_OTHERS, c))
               for v in find_cities_zh(c)
               if v not in olds and not any(o.startswith(v) for o in olds)
               and f"从{v}" not in c}
    return new.pop() if len(new) == 1 else None


def _norm(value: str) -> str:
    return re.sub(r"[’']s$", "", value.strip(" .,!;:")).casefold()


#: after an employer's name, words that show its "'s" is part of the name ("at
#: Sainsbury's now", "at McDonald's.") rather than a possessive ("at Google's office")
_NAME_ENDS = re.compile(r"\s*(?:$|[.,!;:)—–-]|(?:now|since|these|for|as|and|but|so|on|"
                        r"too|already|full|part|again|today|last|this|every|done|lol|haha|"
                        r"though)\b)", re.I)


#: a name typed in lower case where only a name stands: "first week at chewy done!!",
#: "the humidity here in austin", "since the move to bristol" (a city only as one the
#: gazetteer knows, an employer not as a common word)
_LOWER = {
    "employer": (
        re.compile(
            r"\b(?i:first\s+(?:full\s+)?(?:day|week|month|shift)\s+(?:of\s+onboarding\s+)?"
            r"(?:at|with)|start(?:ing|ed)?\s+at)\s+(?P<v>[a-z][\w&'’.-]*[\w&])"),
        # "our all-hands at spotify ran 40 min over"
        re.compile(r"\b(?i:all-hands|all\s+hands|offsite|off-site|town\s+hall|standup|"
                   r"holiday\s+party)\s+(?i:at|with)\s+(?P<v>[a-z][\w&.-]*[\w&])"),
        # "rivian onboarding is no joke" (the clause starts with the name)
        re.compile(r"^\s*(?P<v>[a-z][\w&.-]*[\w&])\s+(?i:onboarding|orientation)\b"),
        # "been at zoho like 3 weeks now"
        re.compile(r"\b(?i:been\s+(?:working\s+)?(?:at|with))\s+(?P<v>[a-z][\w&.-]*[\w&])\s+"
                   r"(?i:(?:like|about|almost|nearly|for|over)\s+)?(?i:a|one|two|three|four|five|"
                   r"six|a\s+few|several|\d+)\s+(?i:weeks?|months?)\b"),
        # "doing backend at a tiny startup called ravelin now"
        re.compile(r"\b(?i:(?:at|for|joined|with)\s+(?:a|an|this|some)\s+(?:[\w-]+\s+){0,2}?"
                   r"(?:startup|start-up|company|firm|agency|studio|consultancy|shop|place|outfit)"
                   r"\s+(?:called|named))\s+(?P<v>[a-z][\w&.-]*[\w&])"),
        # "my meta badge finally works", "got my trader joe's name tag today"
        re.compile(r"\b(?i:my)\s+(?:new\s+)?(?P<v>[a-z][\w&.-]*(?:\s+[a-z][\w&.-]*['’]s)?)\s+"
                   r"(?i:badge|lanyard|work\s+laptop|work\s+email|hoodie|swag|welcome\s+pack|"
                   r"id\s+card|name\s*tag|uniform|apron)\b")),
    "city": (
        re.compile(
            r"\b(?i:here\s+in|(?:the\s+)?move\s+to|moved\s+to|living\s+in|life\s+in|been\s+in|"
            r"first\s+(?:winter|summer|spring|autumn|fall|month|year)\s+in|"
            # "done unpacking boxes at the new place in denver", "from my place in seattle"
            r"(?:new|my|our)\s+(?:place|apartment|apt|flat|house|home|condo|townhouse)\s+in|"
            # "3 weeks in manchester since the move"
            r"(?:\d+|a|one|two|three|four|five|six|a\s+few|several)\s+(?:weeks?|months?)\s+in)\s+"
            r"(?P<v>[a-z][a-z'’-]+(?:\s+[a-z][a-z'’-]+){0,2})"),
        # "now that im a seattle resident"
        re.compile(r"\b(?i:a|an|new)\s+(?P<v>[a-z][a-z'’-]+(?:\s+[a-z][a-z'’-]+)?)\s+"
                   r"(?i:resident|local)\b"),
        # "officially porto people now", "we're leeds people now"
        re.compile(r"\b(?i:officially|we['’]?re|i['’]?m|we\s+are|i\s+am)\s+(?:(?i:officially)\s+)?"
                   r"(?P<v>[a-z][a-z'’-]+(?:\s+[a-z][a-z'’-]+)?)\s+(?i:people|locals)\s+now\b")),
}
_NOT_EMPLOYERS = frozenset("work the my a an this that it our their his her school uni college "
                           "employee remote hr team customer client user virtual day new "
                           "home lunch last least old own personal company office gym library "
                           "noon midnight dawn scratch zero level".split())


def _lower_names(clause: str, attribute: str) -> list[str]:
    """Names typed in lower case (:data:`_LOWER`), capitalised."""
    found: list[str] = []
    for m in (m for pattern in _LOWER[attribute] for m in pattern.finditer(clause)):
        words = m["v"].split()
        if attribute == "employer":
            if words[0].casefold() not in _NOT_EMPLOYERS | _NOT_NAMES:
                found.append(" ".join(w.capitalize() for w in words))
            continue
        place = _known_place(m["v"])
        if place != m["v"] and words[0] not in _NOT_NAMES:
            found.append(place)
    return found


#: years spent at an employer, said before its name: "than anything I saw in four years at
#: Brightline" is the old one
_TENURE_BEFORE = re.compile(r"\byears?\s+(?:at|with)\s+$", re.I)


def _names(clause: str, attribute: str) -> list[str]:
    found: list[str] = []
    for pattern in (_BEFORE[attribute], _AFTER[attribute]):
        for m in pattern.finditer(clause):
            group = next(g for g, v in m.groupdict().items() if v)
            raw = m[group].strip(" .,!;:")
            keep = attribute == "employer" and _NAME_ENDS.match(clause, m.end(group))
            value = raw if keep else re.sub(r"[’']s$", "", raw)
            if value.split()[0].casefold() in _NOT_NAMES or (
                    attribute == "employer" and _TENURE_BEFORE.search(clause, 0, m.start(group))):
                continue
            found.append(value)
    if attribute in _LOWER and not found:
        found = _lower_names(clause, attribute)
    return found


def _en_cities(clause: str) -> list[str]:
    """Capitalised runs of one to three words in ``clause`` that are city names."""
    from memstrata.policies.gazetteer import cities_en

    names = cities_en()
    found = []
    for m in re.finditer(_NAME, clause):
        words = m.group(0).split()
        for size in range(min(3, len(words)), 0, -1):
            hit = next((" ".join(words[i:i + size]) for i in range(len(words) - size + 1)
                        if " ".join(words[i:i + size]) in names
                        and words[i].casefold() not in _NOT_NAMES), None)
            if hit:
                found.append(hit)
                break
    return found


def _same_name(value: str, current: str) -> bool:
    """The current value, or a shorter or longer form of it ("Kaiser" for "Kaiser
    Permanente")."""
    a, b = _norm(value).split(), _norm(current).split()
    n = min(len(a), len(b))
    return bool(n) and a[:n] == b[:n]


def _own_or_known(clause: str, value: str, attribute: str) -> bool:
    """A city named in a clause without "I" or "we" must be a city the gazetteer knows
    ("That picture is from MinaLima ... at home" names no city)."""
    if attribute != "city" or _FIRST_PERSON.search(clause):
        return True
    from memstrata.policies.gazetteer import cities_en

    return value in cities_en()


def has_cue(text: str) -> bool:
    """Does ``text`` speak of any topic :func:`change_of` reads (and pass the text guards)?"""
    if _CJK.search(text):
        text = to_simplified(text)
        kept = zh_unguarded(text, _ZH_GUARD)
        return bool(kept and any(c.search(kept) for c in _ZH_CUES.values())) or nd.zh_cue(text)
    text = _IDIOMS.sub(" ", text)  # "rivian onboarding is no joke" jokes about nothing
    return ((not _TEXT_GUARD.search(text) and (any(c.search(text) for c in _CUES.values())
                                               or _BEEN_AT_ANYWHERE.search(text) is not None))
            or nd.en_cue(text))


#: idioms whose "no" or "joke" negates nothing: "the humidity is no joke", "no kidding"
_IDIOMS = re.compile(r"\b(?:is\s+)?no\s+(?:joke|kidding|doubt|cap)\b", re.I)
#: an age left behind negates no age: "finally 20 lol no longer a teenager"
_AGE_LEFT = re.compile(r"\bno\s+longer\s+(?:a\s+)?(?:teen(?:ager)?|kid|minor|in\s+my\s+\w+ies)\b",
                       re.I)


def _en_change_of(text: str, attribute: str, current: str) -> str | None:
    if not _CUES[attribute].search(text) and not (
            attribute == "employer" and _BEEN_AT_ANYWHERE.search(text)):
        return None
    text = _IDIOMS.sub(" ", text)
    if attribute == "age":
        text = _AGE_LEFT.sub(" ", text)
        # "another trip around the sun done, 42 as of this morning": a birthday, no trip
        text = _SUN_TRIP.sub("birthday", text)
    # "... for Cardiff not Bristol", "to Danone not Unilever": the negation retires the
    # current value, it does not negate the clause
    text = re.sub(rf",?\s*(?:and\s+)?not\s+(?:in\s+|at\s+|for\s+)?{re.escape(current)}\b", "",
                  text, flags=re.I)
    clauses = _clean_clauses(text)
    if attribute == "age":
        if not current.isdigit():
            return None
        now = int(current)
        ages = {n for c in clauses for n in _ages(c) if now < n <= now + 5}
        # "My kids threw me a surprise party for my 40th": others in the clause, the
        # ordinal the user's own
        ages |= {int(m[1]) for sentence in _SENTENCES.split(text)
                 if not _SENTENCE_GUARD.search(sentence) or _HAD_MY.search(sentence)
                 for m in _MY_ORDINAL.finditer(sentence) if now < int(m[1]) <= now + 5}
        # "as a 42 year old who just had a birthday, is it too late to learn the piano?":
        # the user's age said of themselves, in a question too - not in a plan or a wish
        ages |= {int(m[1]) for sentence in _SENTENCES.split(text)
                 if not _AGE_TO_BE.search(sentence)
                 for m in _AS_AGE.finditer(sentence) if now < int(m[1]) <= now + 5}
        # "Now that I'm thirty I guess I should ...": what the sentence takes for granted
        ages |= {n for sentence in _SENTENCES.split(text) if not _AGE_TO_BE.search(sentence)
                 for m in _NOW_THAT_AGE.finditer(sentence) for n in _ages(m.group(0))
                 if now < n <= now + 5}
        # "Had my birthday over the weekend, the big four-two": a birthday's own number
        ages |= {_big_age(m) for sentence in _SENTENCES.split(text)
                 if not _AGE_TO_BE.search(sentence)
                 for m in _BIG_AGE.finditer(sentence) if now < _big_age(m) <= now + 5}
        # "I'm officially out of my twenties": the decade begun
        ages |= {n for c in clauses for m in _DECADE_BEGUN.finditer(c)
                 for n in (_DECADES[m[1].lower()] + 10 if m[1] else _DECADES[m[2].lower()],)
                 if n == now + 1}
        if not ages and any(_BIRTHDAY_NOW.search(c) for c in clauses):
            ages = {now + 1}  # "today's my birthday!": a year older, no number said
        return str(ages.pop()) if len(ages) == 1 else None
    new = {_norm(v): v for c in clauses for v in _names(c, attribute)
           if not _same_name(v, current) and _own_or_known(c, v, attribute)}
    if attribute == "employer" and clauses:
        # "my new employer, Siemens Energy, uses ...": the name in apposition, which the
        # clauses (split at commas) part from its noun
        new |= {_norm(v): v for sentence in _SENTENCES.split(_ASK_AFTER_COMMA.sub(". ", text))
                if not _SENTENCE_GUARD.search(sentence)
                for m in _NEW_EMPLOYER.finditer(sentence)
                for v in (m["v"] or m["w"],) if not _same_name(v, current)}
    if attribute == "employer" and not _TEXT_GUARD.search(text):
        # "ignore the Tesco stuff in my old CV, I've been at Sainsbury's since the summer": a
        # present perfect of the user's own says where they are, even beside a CV; and what
        # a clause takes for granted ("Since joining Airbus ...") unless it is someone else's
        for sentence in _SENTENCES.split(_ASK_AFTER_COMMA.sub(". ", text)):
            for clause in _CLAUSES_AT_COMMA.split(sentence):
                if _CLAUSE_GUARD.search(clause):
                    continue
                m = _BEEN_AT.search(clause)
                found = [m["v"]] if m else []
                if not _OTHERS.search(clause):
                    found += [g["v"] or g["w"] for g in _JOINED_GIVEN.finditer(clause)]
                for v in found:
                    if not _same_name(v, current):
                        new.setdefault(_norm(v), v)
    if not new and attribute == "city":
        new = {_norm(v): v for c in clauses for v in _en_cities(c)
               if _norm(v) != _norm(current)}
    if not new and attribute == "city" and not _TEXT_GUARD.search(text):
        # "first week as a Denver resident", "just got my Lisbon residence card sorted"
        resident = {_norm(v): v for sentence in _SENTENCES.split(_ASK_AFTER_COMMA.sub(". ", text))
                    if not _SENTENCE_GUARD.search(sentence) and not _OTHERS.search(sentence)
                    for m in _RESIDENT.finditer(sentence) for v in (m["v"] or m["w"],)
                    if _norm(v) != _norm(current)}
        new = resident if len(resident) == 1 else new
    if not new and attribute == "city" and not _TEXT_GUARD.search(text):
        home = {_norm(v): v for clause in _CLAUSES_AT_COMMA.split(text)
                if not _CLAUSE_GUARD.search(clause) and not _OTHERS.search(clause)
                for m in _HOME_NOW.finditer(clause) for v in (m["v"] or m["w"],)
                if _norm(v) != _norm(current)}
        new = home if len(home) == 1 else new
    if not new and attribute == "city" and not _TEXT_GUARD.search(text):
        here = {_norm(m["v"]): m["v"] for sentence in _SENTENCES.split(text)
                if not _OTHERS.search(sentence) for m in _HOME_HERE_IN.finditer(sentence)
                if _norm(m["v"]) != _norm(current)}
        new = here if len(here) == 1 else new
    if not new and attribute == "city" and not _TEXT_GUARD.search(text):
        # "now that i've finally settled in Glasgow can u find me ...?": what the question
        # takes for granted
        settled = {_norm(m["v"]): m["v"] for m in _NOW_THAT_SETTLED.finditer(text)
                   if _norm(m["v"]) != _norm(current)}
        new = settled if len(settled) == 1 else new
    if not new and attribute == "city" and not _TEXT_GUARD.search(text) and any(
            not _CLAUSE_GUARD.search(_CLAUSES.split(sentence[m.start():])[0])
            and not _OTHERS.search(sentence)
            for sentence in _SENTENCES.split(text) for m in _MOVED_HERE.finditer(sentence)):
        # "getaways near Pune, I shifted here from Mumbai in june": "here" is the one other
        # city the text names, even in a request about it
        named = {_norm(v): v for v in _en_cities(text) if _norm(v) != _norm(current)}
        new = named if len(named) == 1 else {}
    return next(iter(new.values())) if len(new) == 1 else None


def change_of(text: str, attribute: str, current: str) -> str | None:
    """The new value of ``attribute`` the user's ``text`` states, given its ``current``
    value, or ``None`` (no cue, a guard, no single new value)."""
    if attribute not in ATTRIBUTES or not current:
        return None
    if _CJK.search(text) is None:
        if attribute == "name":
            return nd.en_name(text, current)
        if attribute == "diet":
            return nd.en_diet(text, current)
        return _en_change_of(text, attribute, current)
    # traditional characters read as simplified; a name or a place comes back as written
    simple, held = to_simplified(text), to_simplified(current)
    if attribute == "diet":
        return nd.zh_diet(simple, held)
    value = nd.zh_name(simple, held) if attribute == "name" else _zh_change_of(
        simple, attribute, held)
    return None if value is None else as_written(text, simple, value)
