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
extractor, stricter. English only; Chinese names carry no capital letters, and
the rules for them are the extractor's.
"""

from __future__ import annotations

import re

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
        r"\b\d{1,3}(?:st|nd|rd|th)\b", re.I),
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
    return not _GUARD.search(text) and any(c.search(text) for c in _CUES.values())


def change_of(text: str, attribute: str, current: str) -> str | None:
    """The new value of ``attribute`` the user's ``text`` states, given its ``current``
    value, or ``None`` (no cue, a guard, no single new value)."""
    if attribute not in ATTRIBUTES or not current or _GUARD.search(text):
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
