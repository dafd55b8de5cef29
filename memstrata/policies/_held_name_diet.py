"""The readers of a new preferred name and a new diet, with the current one in hand.

Private to :mod:`memstrata.policies.slot_change`, which dispatches to them. As the
readers of a new city, employer or age there, they run only for a user turn the
extractor read no slot from and only for a value the user holds, so they can read
what the sentence alone does not say:

* a **name**: "Kat instead of Katherine", "everybody calls me Paco, it'd feel more
  natural if you did too", "it's Priya Kapoor on everything now" (a full name that
  keeps a part of the current one), 叫浩子就好, 新名字是赵一鸣, 你以后也叫我Angela吧;
  never when the current name is kept ("for you Francisco is perfect", 你千万别这么叫我),
  in a question that is not a request, under a condition, in quotes or in a clause
  that negates;
* a **diet**: a label said outright in a clause of the user's own ("fully vegan since
  that documentary") or, failing one, what the user eats again or no longer eats,
  applied to the current diet ("eating eggs and dairy again, still no meat or fish"
  turns vegan into vegetarian; 现在偶尔吃点鱼虾了，别的肉还是不碰 turns vegetarian into
  pescatarian). Someone else's plate, a question, a plan, a dream or a quote reads
  nothing.
"""

from __future__ import annotations

import re

from memstrata.policies._extraction_en import _EN_OTHER_PEOPLE
from memstrata.policies._extraction_zh import _ZH_CLAUSE_SPLIT, _ZH_OTHER_PEOPLE, zh_unguarded

# ----------------------------------------------------------------------------- names

_EN_NAME_CUE = re.compile(
    r"\b(?:call|calls|calling|called|name|surname|go by|goes by|known as|knows me as|"
    r"instead of|address|addressed|addresses|deed poll|switching to|prefer|drop the full|"
    r"pls|please|use|knows me by|married)\b", re.I)
_EN_NAME_TEXT_GUARD = re.compile(
    # ("do you know if ..." asks whether: no condition)
    r"[\"“”«»]|(?<!\bknow\s)(?<!\bsee\s)(?<!\bcheck\s)(?<!\bwondering\s)"
    r"\bif\b(?!\s+you\b|\s+that['’]?s\s+(?:alright|all right|ok|okay|fine)\b)|"
    r"\b(?:unless|imagine|dream\w*|suppose|pretend|wish|joke|kidding|by mistake|mistakenly|"
    r"wrongly|the wrong name|in character|role-?play\w*|back to normal|"
    # a name for one game or one night: "call me Seraphina, just for the game"
    r"just for (?:the|this|tonight|today|now|fun)|for the (?:game|session|campaign|play|party))\b",
    re.I)
_EN_NEGATION = re.compile(r"\b(?:\w+n['’]t|never|not|no|nobody|no one|stop)\b", re.I)
#: a request put as a question, first or after a comma ("everyone calls me Kate these days,
#: could you use that from now on?")
_REQUEST_QUESTION = re.compile(r"(?:^|[,;])\W*(?:(?:hey|hi|hello|ok|okay|so|oh|um|also|and|btw)"
                               r"\W+)*(?:can|could|would|will)\s+(?:you|we)\b", re.I)
#: a tag after a statement is no question: "it's Maggie, always, ok?"
_TAG_QUESTION = re.compile(r",\s*(?:ok|okay|alright|all right|right|yeah|got it)\s*\?\s*$|"
                           # "use that for me ok? 👍"
                           r"\s(?:ok|okay)\s*\?+\W*$", re.I)
_PNAME = r"(?-i:[A-Z][a-z’'-]+(?:\s+[A-Z][a-z’'-]+)?)"
_EN_NAME_PATTERNS = (
    # not "my colleagues keep calling me Tommy": what others do, not a name to use
    re.compile(rf"\b(?<!keep\s)(?<!keeps\s)(?<!kept\s)(?<!used\sto\s)(?:call|calling)\s+me\s+"
               rf"(?P<v>{_PNAME})",
               re.I),
    re.compile(rf"(?P<v>{_PNAME})\s+instead\s+of\s+(?P<old>{_PNAME})"),
    re.compile(rf"\b(?:go|goes|going|gone|went)\s+by\s+(?:my\s+(?:middle|nick|second)\s*name,?\s+)?"
               rf"(?P<v>{_PNAME})", re.I),
    # "go with Liz from here on out"
    re.compile(rf"\bgo\s+with\s+(?P<v>{_PNAME})", re.I),
    # "Legally changed my name to Sasha last week"
    re.compile(rf"\bchanged\s+my\s+(?:first\s+)?name\s+to\s+(?P<v>{_PNAME})", re.I),
    re.compile(rf"\b(?:known|knows\s+me|addressed|addresses\s+me|refer\s+to\s+me)\s+as\s+"
               rf"(?P<v>{_PNAME})", re.I),
    # "pls just use Sasha from here on", "you also use Venky"
    re.compile(rf"(?:^\W*|\b(?:pls|please|plz|you(?:\s+also|\s+too)?|just)\s+)(?:just\s+)?use\s+"
               rf"(?P<v>{_PNAME})", re.I),
    re.compile(rf"\bswitch(?:ing)?\s+to\s+(?P<v>{_PNAME})", re.I),
    # "Sasha is what I actually prefer"
    re.compile(rf"(?P<v>{_PNAME})\s+is\s+what\s+(?:I|everyone|people)\s+(?:actually\s+|really\s+)?"
               rf"(?:go\s+by|use|call\s+me|prefer)", re.I),
    # "just Jon pls", "Jon is fine"
    re.compile(rf"^\W*(?:just\s+)?(?P<v>{_PNAME})\s+(?:from now on|going forward|from here on|pls|"
               rf"please|plz|is fine|works|will do)\b",
               re.I),
)
#: "most people just say Seun and that's what I prefer now": a name others use, taken up
_EN_SAY = re.compile(rf"\b(?:say|says|use|uses)\s+(?P<v>{_PNAME})\b")
_EN_TAKEN_UP = re.compile(r"\bwhat I prefer\b|\bI prefer that\b|\bdrop\s+the\b|\byou can\b",
                          re.I)
#: others call me X - a name for the assistant too only when the text asks for it
_EN_CALLED_BY_OTHERS = re.compile(rf"\b(?:calls|called)\s+me\s+(?P<v>{_PNAME})", re.I)
_EN_YOU_TOO = re.compile(r"\byou\b[^.!?]*\b(?:too|as well|also)\b|\bso can you\b|"
                         # "can u stop calling me katherine, everyone calls me kate now and
                         # honestly i like it better"
                         r"\b(?:stop|quit)\s+calling\s+me\b|"
                         r"\bi\s+(?:like|prefer)\s+(?:it|that|this)\s+(?:way\s+|much\s+|a\s+lot\s+)?"
                         r"(?:better|more)\b|"
                         r"\b(?:you\s+)?(?:use|go\s+with|stick\s+to)\s+(?:that|it|this)"
                         r"(?:\s+for\s+me)?\b|"
                         r"\b(?:please|pls|plz)\b", re.I)
#: "it's Priya Kapoor now", "I'm officially Olivia Bennett now": a full name stated
_EN_IT_IS = re.compile(rf"\b(?:it['’]?s|it is|I['’]?m|I am)\s+(?:officially\s+|now\s+|just\s+|"
                       rf"legally\s+)?"
                       rf"(?P<v>{_PNAME})(?!['’]s)\b", re.I)
_NOT_A_NAME = frozenset(
    "i i'm i’m me my we our the a an this that it you your please just so and but that's "
    "everyone everybody nobody mr mrs ms dr".split())


def en_cue(text: str) -> bool:
    """Could ``text`` speak of the user's name or diet (English)?"""
    return bool(_EN_NAME_CUE.search(text) or _EN_DIET_CUE.search(text))


def _en_keeps(text: str, current: str) -> bool:
    """Does ``text`` keep the current name ("for you Francisco is perfect")?"""
    n = re.escape(current)
    return re.search(rf"\b{n}\s+is\s+(?:perfect|fine|good|great|ok|okay)\b|"
                     rf"\b(?:stick\s+with|keep(?:\s+using)?|still|continue\s+with|go\s+with|"
                     rf"stay\s+with)\s+{n}\b", text, re.I) is not None


#: a relative or a friend as the one named: "My sister-in-law goes by Sadie now"
_EN_NAME_OTHERS = re.compile(
    rf"\b(?:my|our|his|her|their)\s+(?:{_EN_OTHER_PEOPLE}|boyfriend|girlfriend|manager|baby|"
    r"dog|cat|puppy)(?:-in-law)?s?\b(?!['’]s)", re.I)


#: where a name stands, typed in lower case ("everyone calls me kate now", "im legally sam
#: now", "going by my middle name theo"): the name is capitalised so the patterns read it
_EN_LOWER_NAME = re.compile(
    r"\b(?i:(?:go(?:ing|es|ne)?|went)\s+by(?:\s+my\s+(?:middle|first)\s+name)?|"
    r"legally|(?:middle|first)\s+name|officially|name\s+is|name['’]s|known\s+as)\s+"
    r"(?P<a>[a-z][a-z'-]+)(?:\s+(?P<b>[a-z][a-z'-]+))?|"
    # "everyone calls me kate now", "pls call me kat," (not "call me when you land", "call me
    # crazy")
    r"\b(?:calls?\s+me\s+(?P<c>[a-z][a-z'-]+)(?=\s+now\b)|"
    r"(?:pls|plz|please|just|can\s+you|could\s+you|u\s+can)\s+call\s+me\s+(?P<d>[a-z][a-z'-]+)"
    r"(?=\s*(?:[,.!;]|$|now\b|from\s+now|instead\b))|"
    # "everyone at the new gym calls me bo and honestly i like it way better"
    r"calls\s+me\s+(?P<e>[a-z][a-z'-]+)(?=\s*(?:,|and\b)))")
#: "so its priya desai now", "its jen btw": a name stated as what it is now, typed in lower
#: case (read as a name only beside the current one, see :func:`en_name`)
_EN_LOWER_IT_IS = re.compile(
    r"\b(?i:it['’]?s|it\s+is|i['’]?m\s+officially|i\s+am\s+officially)\s+"
    r"(?P<a>[a-z][a-z'-]+)(?:\s+(?P<b>[a-z][a-z'-]+))?(?=\s+(?:now|btw|actually)\b|\s*[—–]|\s+-\s)")
#: a second lower-case word that is no part of the name
_EN_NOT_SURNAME = frozenset(
    "now from and pls please plz going lol so but btw since too instead officially here there "
    "these then for from on at in to is was it i im i'm its and or the a an just only all "
    "anymore again everywhere going forward thanks thx haha day work default phone email "
    "text that what who".split())


def _en_name_cased(text: str) -> str:
    """``text`` typed all in lower case with a name where a name stands capitalised
    (:data:`_EN_LOWER_NAME`); a text with a capital letter is as written."""
    if re.search(r"[A-Z]", text):
        return text

    def cap(m: re.Match[str]) -> str:
        out = m.group(0)
        named = next((g for g in ("c", "d", "e") if m.groupdict().get(g)), None)
        for group in (named, "a", "b") if named else ("a", "b"):
            word = m[group]
            if word is None or word.casefold() in _NOT_A_NAME | _EN_NOT_SURNAME:
                break
            start, end = m.start(group) - m.start(), m.end(group) - m.start()
            out = out[:start] + word.capitalize() + out[end:]
        return out
    return _EN_LOWER_IT_IS.sub(cap, _EN_LOWER_NAME.sub(cap, text))


def en_name(text: str, current: str) -> str | None:
    """A new preferred name in an English ``text``, given the ``current`` one."""
    if _EN_NAME_TEXT_GUARD.search(text) or _en_keeps(text, current):
        return None
    text = _en_name_cased(text)
    # "you don't need to use Margaret", "not Alexander": the current name retired
    text = re.sub(rf"\b(?:you\s+)?(?:don['’]t|do not|no)\s+(?:need\s+to\s+)?(?:use|call\s+me)\s+"
                  rf"{re.escape(current)}\b|,?\s*not\s+{re.escape(current)}\b", " ", text,
                  flags=re.I)
    old = current.casefold()
    found: dict[str, str] = {}
    # "nobody calls me Robert anymore", "no more Robert": the current name is retired
    retired = {old} if re.search(
        rf"\b(?:nobody|no one|no-one|noone)\s+(?:actually\s+|really\s+|ever\s+)?(?:calls|uses|says)"
        rf"\s+me\s+(?:{re.escape(current)}|that)\b"
        rf"|\bno\s+(?:more|longer)\s+{re.escape(current)}\b"
        # "decided to go by that everywhere now instead of Alexander"
        rf"|\binstead\s+of\s+{re.escape(current)}\b"
        # "it's jon — prefer that over jonathan"
        rf"|\bprefer\s+(?:that|it|this)\s+(?:\w+\s+)?over\s+{re.escape(current)}\b",
        text, re.I) else set()

    def take(value: str) -> None:
        value = value.strip(" .,!;:")
        words = value.split()
        if words and words[0].casefold() not in _NOT_A_NAME and value.casefold() != old:
            found[value.casefold()] = value

    for sentence in re.split(r"(?<=[.!?])\s+|\s+[—–]\s+", text):
        if sentence.rstrip().endswith("?") and not _REQUEST_QUESTION.search(sentence) \
                and not _TAG_QUESTION.search(sentence):
            continue
        for clause in re.split(r"\s*[,;:()—–]\s*|\s+-\s+", sentence):
            if _EN_NEGATION.search(clause) or (
                    _EN_NAME_OTHERS.search(clause)
                    and not re.search(r"\b(?:me|please|pls|you)\b", clause, re.I)):
                continue  # a relative named, not the user ("my friends say Peggy, so
                # please use Peggy" asks for it)
            for pattern in _EN_NAME_PATTERNS:
                for m in pattern.finditer(clause):
                    if "old" in m.groupdict() and m["old"].casefold() != old:
                        continue
                    take(m["v"])
            for m in _EN_CALLED_BY_OTHERS.finditer(clause):
                if _EN_YOU_TOO.search(text):
                    take(m["v"])
            for m in _EN_SAY.finditer(clause):
                if _EN_TAKEN_UP.search(text):
                    take(m["v"])
            for m in _EN_IT_IS.finditer(clause):
                # (a short form of the current name said as what it is shares it: "its Jen
                # btw" for Jennifer - not "I'm Priya by the way", which introduces Priyanka)
                shares = set(m["v"].casefold().split()) & set(old.split()) or retired or (
                    m.group(0)[:2].casefold() == "it" and " " not in m["v"]
                    and old.startswith(m["v"].casefold()))
                # "The name change went through on my passport, I'm Priya Malhotra now"
                # ("legal name change went thru today!!! im officially Sam now": the change
                # named in the sentence before)
                if shares or re.search(r"\b(?:everyone|everybody|everything|name)\b", clause,
                                       re.I) or re.search(r"\b(?:name change|changed my name|"
                                                          r"deed poll|married name|legally|"
                                                          r"court)\b",
                                                          text, re.I):
                    take(m["v"])
    return next(iter(found.values())) if len(found) == 1 else None


_ZH_NAME_CUE = re.compile(r"叫|称呼|名字|改名|喊我|名叫")
_ZH_TEXT_GUARD = re.compile(r"[?？「」“”『』\"]|吗|如果|要是|假如|假设|万一|的话|倘若|梦|考虑|"
                            r"要不要|打算|准备|想改")
_ZH_CLAUSES = _ZH_CLAUSE_SPLIT
_ZH_NAME_CLAUSES = re.compile(
    r"[，,。！!；;…~～\n\U0001F300-\U0001FAFF]+|\s+(?=[\u4e00-\u9fff]{3})")
_ZH_PN = (r"(?!就|也|吧|了|呢|啦|喇|呀|啊|嘛|哦|更|比较|很|最|还|挺)"
          r"(?P<v>[\u4e00-\u9fff]{1,4}?|[A-Za-z]+)")
_ZH_NAME_PATTERNS = (
    # 叫我欣欣得啦 (Cantonese: 得啦 = 就行)
    # (叫我静静好不好: a request put as a question)
    re.compile(rf"(?:叫|称呼|喊)我\s*{_ZH_PN}\s*(?:吧|就好|就行|就可以|好了|即可|得啦|得喇|得了|就得|啦|喇|"
               rf"好不好|行不行|可以不|$)"),
    # 叫阿强就得 (Cantonese: 就得 = 就行)
    re.compile(rf"^(?:以后|今后|你)?(?:就)?叫(?!我){_ZH_PN}就(?:好|行|可以|得)"),
    re.compile(rf"新名字(?:是|叫){_ZH_PN}(?:$|了|吧)"),
    # 以后跟我聊天就叫Grace
    re.compile(rf"^(?:以后|今后|之后|从现在起|从今天起)(?:跟我|和我)?(?:聊天|说话)?(?:就|都)叫{_ZH_PN}"
               rf"(?:$|吧|就好|就行)"),
    # 户口本上的名字已经改成张雨桐了
    re.compile(rf"(?:改名|名字(?:已经|现在)?改)(?:叫|为|成)了?{_ZH_PN}(?:$|了|吧)"),
    re.compile(rf"身份证上(?:现在|已经)*(?:是|叫){_ZH_PN}(?:$|了)"),
    # 我现在工作上都用英文名Tina，你这边也改一下吧
    re.compile(r"(?:都|就)?用(?:英文名|新名字|小名)?(?P<v>[A-Za-z]+)(?:$|了|吧)"),
)
#: 名字改好了，现在叫周若敏: a new name said after the change was named
_ZH_RENAMED = re.compile(rf"(?:现在|已经|如今)(?:叫|是){_ZH_PN}(?:$|了|啦)")
#: 大家都喊我阿强 - a name for the assistant too when the text asks: 你也这么叫我
_ZH_CALLED_BY_OTHERS = re.compile(rf"(?:都|也)?(?:管我叫|喊我|叫我){_ZH_PN}$")
_ZH_YOU_TOO = re.compile(r"你(?:以后)?也(?:一直|都|就)?(?:这么|这样)?(?:叫|喊|称呼)")
#: a negated call: 别这么叫我 keeps the name; 别叫我全名了 asks for another
_ZH_NOT_CALL = re.compile(r"(?:别|不要|不用|不许|千万别|不好)(?:再)?(?P<what>这么|这样)?"
                          r"(?:叫|喊|称呼)我"
                          r"(?P<obj>全名|大名|名字)?")
#: 我英文名叫Kevin 以后就这么叫我吧: a name of the user's, then a request to use it
_ZH_OWN_NAME = re.compile(rf"我的?(?:英文名字?|小名|昵称|网名|外号|花名)(?:叫|是){_ZH_PN}"
                          r"(?=$|[\s，,。！!；;了吧啦])")
_ZH_WISH_CALLED = re.compile(r"(?:喜欢|希望|想让|想要|愿意|宁愿)(?:别人|大家|你)?都?"
                             r"(?:叫|喊|称呼)我")
_ZH_CALL_IT = re.compile(r"(?:就|也|以后)(?:这么|这样)(?:叫|喊|称呼)我")
_ZH_NOT_A_NAME = frozenset("全名 大名 名字 这个 这么 这样 什么 我 你 吧 呀 啊 了 呢 哦 嘛".split())
_ZH_OTHERS = re.compile(_ZH_OTHER_PEOPLE)


def zh_cue(text: str) -> bool:
    """Could ``text`` speak of the user's name or diet (Chinese)?"""
    return bool(_ZH_NAME_CUE.search(text) or _ZH_DIET_CUE.search(text))


def zh_name(text: str, current: str) -> str | None:
    """A new preferred name in a Chinese ``text``, given the ``current`` one."""
    text = zh_unguarded(text, _ZH_TEXT_GUARD)
    if not text:
        return None
    if re.search(r"(?<!别)(?<!不要)(?<!不用)(?<!别再)(?<!不要再)叫我(?:全名|大名)|"
                 r"(?<!别)(?<!不要)用(?:我的)?(?:全名|大名)", text):
        return None  # 你还是叫我全名吧: the current name is kept
    for m in _ZH_NOT_CALL.finditer(text):
        # 王小明 is 小明 to friends; 李娜 is 娜娜, 小娜 or 阿娜
        given = current[1:] if len(current) >= 3 else current
        forms = (current, given, current[-1] * 2, "小" + current[-1], "阿" + current[-1])
        if m["obj"] is None and not text.startswith(forms, m.end()):
            return None  # 别这么叫我 / 别叫我X: the request keeps the current name
        # (以后别叫我王建国了 / 别叫我小明了: it retires the current name)
    found: set[str] = set()
    if _ZH_CALL_IT.search(text):
        found |= {m["v"] for m in _ZH_OWN_NAME.finditer(text)
                  if m["v"] not in _ZH_NOT_A_NAME and m["v"] != current}
    # a name may stand between spaces (请你叫我 Vivian 就好): clauses end at punctuation here
    for clause in _ZH_NAME_CLAUSES.split(text):
        clause = clause.strip()
        if not clause or _ZH_NOT_CALL.search(clause):
            continue
        # 大家都叫我 is what others call the user; 以后都叫我 asks the assistant
        # (我更喜欢别人叫我 Mandy is a wish, not what others do)
        by_others = re.search(r"(?:(?<!后)都|大家|人)(?:管我叫|喊我|叫我)", clause) is not None \
            and not _ZH_WISH_CALLED.search(clause) \
            and not re.search(r"以后|之后|今后|从现在|从今", clause)
        values = [] if by_others else [
            m["v"] for p in _ZH_NAME_PATTERNS for m in p.finditer(clause)]
        if not values and re.search(r"改名|名字改|改了名", text):
            values = [m["v"] for m in _ZH_RENAMED.finditer(clause)]
        if not values and _ZH_YOU_TOO.search(text):
            values = [m["v"] for m in _ZH_CALLED_BY_OTHERS.finditer(clause)]
        elif _ZH_OTHERS.search(clause):
            continue
        found |= {v for v in values if v not in _ZH_NOT_A_NAME and v != current}
    return found.pop() if len(found) == 1 else None


# ----------------------------------------------------------------------------- diets

_MEAT, _FISH, _EGGS = "meat", "fish", "eggs and dairy"
#: what each diet allows; a new set of allowed foods names the new diet
_ALLOWS = {
    "vegan": frozenset(),
    "vegetarian": frozenset({_EGGS}),
    "pescatarian": frozenset({_EGGS, _FISH}),
    "not vegetarian": frozenset({_EGGS, _FISH, _MEAT}),
}
_DIET_OF = {v: k for k, v in _ALLOWS.items()}
_DIET_OF[frozenset({_FISH})] = "pescatarian"
_DIET_OF[frozenset({_FISH, _MEAT})] = "not vegetarian"
_DIET_OF[frozenset({_EGGS, _MEAT})] = "not vegetarian"
_DIET_OF[frozenset({_MEAT})] = "not vegetarian"

_EN_FOODS = {
    _MEAT: re.compile(r"\b(?:meat|chicken|beef|pork|burgers?|brisket|steak|lamb|bacon|ham|"
                      r"turkey|sausages?)\b", re.I),
    _FISH: re.compile(r"\b(?:fish|salmon|tuna|seafood|shrimp|prawns?|sushi)\b", re.I),
    _EGGS: re.compile(r"\b(?:eggs?|dairy|cheese|milk|butter|yogh?urt)\b", re.I),
}
_EN_DIET_CUE = re.compile(r"\b(?:vegan|vegetarian|veggie|pescatarian|plant[- ]based|keto|meat|fish|"
                          r"eggs?|dairy|cheese|gluten|halal|coeliac|celiac|paleo|low-carb|"
                          r"mediterranean|intermittent fasting)\b", re.I)
_EN_LABEL = re.compile(
    r"\b(?P<v>vegan|vegetarian|pescatarian|plant[- ]based|keto|paleo|intermittent fasting)\b"
    # ("a veggie and a keto guy": a person described, not the user's diet)
    r"(?!-(?:friendly|options?|style|ish))(?!\s+(?:guy|girl|person|people|folks|friends?|eaters?|"
    r"crowd|ones?)\b)|"
    # diets named with "diet" or their own word: "the mediterranean diet", "doing low-carb"
    r"\b(?P<v4>mediterranean|low-carb|low carb)(?=\s+diet\b|\s+(?:now|these\s+days)\b)|"
    # gluten-free and halal name a diet only as the user's ("now I'm strictly gluten-free",
    # "eat only halal"), not a crust or a restaurant
    r"\b(?:i['’]m|i am|am|went|gone|go|going|strictly|only eat|eat only|eating|keep|keeping)\s+"
    r"(?:\w+\s+)?"
    r"(?P<v2>gluten-free|halal)\b|\b(?P<v3>gluten-free|halal)\s+diet\b", re.I)
_EN_NOT_LABEL = re.compile(r"\b(?:rather than|instead of|not|no longer|than)\s+(?:a\s+)?"
                           r"(?:vegan|vegetarian|pescatarian|keto)\b", re.I)
_EN_DIET_SENTENCE_GUARD = re.compile(
    r"\?|\b(?:might|maybe|perhaps|would|should|thinking|considering|consider|plan to|planning|"
    r"wonder\w*|whether|"
    r"hope|gonna|going to|idea|accidentally|tried|try|trying|think about|thought about|"
    r"tempted|"
    # the past: "back in college I was vegan for a year"
    r"(?:i|we)\s+(?:was|were)\s+(?:a\s+)?(?:vegan|vegetarian|pescatarian|keto|plant-based)|"
    r"used to|back then|years ago|in college|at uni|"
    r"back in (?:college|school|uni|university|the day|my \w+ies|\d{4}))\b", re.I)
_EN_DIET_OTHERS = re.compile(
    r"\b(?:my|our)\s+(?:sister|brother|mom|mum|mother|dad|father|friends?|son|daughter|"
    r"cousin|wife|husband|partner|boyfriend|girlfriend|bf|gf|hubby|fianc[eé]e?|roommate|"
    r"flatmate|housemate|kids?|"
    r"in-laws|trainer|doctor|guests|manager|boss|colleague|coworker)\b"
    # "my husband's doing keto" is his diet ('s is "is"); "my doctor's advice" is not
    r"(?:(?!['’]s)|(?=['’]s\s+(?:just\s+|now\s+|also\s+)?(?:doing|been|gone|going|on|eating|started|"
    r"trying|now)\b))|"
    r"\b(?:he|she|they|them|everyone|everybody)\b(?!['’]s)|"
    # guests counted off: "one's vegetarian and one's gluten-free", "the other is vegan"
    r"\b(?:one|the other)(?:['’]s|\s+is)\s|\bone\s+of\s+them\b", re.I)
_EN_STOP_EATING = re.compile(
    r"\b(?:no more|no|(?:dropped|drop)(?!\s+(?:a\s+(?:ton|lot|bit)|by|to|\d))|cut out|cutting out|"
    r"gave up|given up|quit|without|"
    r"stopped (?:eating|having)|don['’]t eat|not eating|off)\b", re.I)
_EN_EATING = re.compile(r"\b(?:eat|eating|eats|having|have|had|added|back on|back in|started|"
                        r"on the menu)\b",
                        re.I)
_EN_CHANGE = re.compile(r"\b(?:again|now|these days|back|started|since|anymore|from now on)\b",
                        re.I)


def _apply(current: str, steps: list[tuple[bool, set[str]]]) -> str | None:
    """The diet after the user's steps in order: (eats again?, foods)."""
    allowed = _ALLOWS.get(current)
    if allowed is None or not steps:
        return None
    for eats, foods in steps:
        allowed = allowed | foods if eats else allowed - foods
    new = _DIET_OF.get(allowed)
    return new if new is not None and new != current else None


#: a diet given up: "gave up on the veggie thing", "quit being vegan", "done with keto"
_EN_DROPPED = re.compile(r"\b(?:gave|give|given|giving)\s+up\s+(?:on\s+)?|\b(?:quit|quitting|"
                         r"dropped|done\s+with|done|stopped|over)\s+", re.I)
_EN_DROPPED_LABEL = re.compile(
    rf"(?:{_EN_DROPPED.pattern})(?:the\s+|being\s+(?:a\s+)?|my\s+)?(?P<v>vegan|vegetarian|"
    r"veggie|pescatarian|keto|plant[- ]based)\b", re.I)
_EN_LABEL_NAMES = {"veggie": "vegetarian", "plant-based": "vegan", "plant based": "vegan",
                   "low carb": "low-carb"}


_EN_TALKED_INTO = re.compile(
    r"^.*\b(?:talked|talks|convinced|persuaded|got)\s+me\s+(?:into|to)\s+(?=\w+ing\b|eat\b)",
    re.I)
#: a coeliac diagnosis of the user's, or gluten cut out: the diet is gluten-free
_EN_GLUTEN = re.compile(
    r"\b(?:diagnosed\s+(?:with\s+|as\s+)?|diagnosis\s+of\s+)(?:celiac|coeliac)|"
    r"\b(?:celiac|coeliac)\s+diagnosis|"
    r"\bi(?:['’]m|\s+am|\s+have|['’]ve\s+got|\s+got)\s+(?:celiac|coeliac)\b|"
    r"\bgluten\s+is\s+(?:\w+\s+)?off\s+the\s+(?:menu|table)|"
    r"\b(?:cut\s+out|no\s+more|gave\s+up|given\s+up)\s+gluten\b|"
    # "doc put me on a strict gluten free diet (celiac 😩)"
    r"\b(?:put\s+me\s+on|i['’]m\s+on|started|starting|doing)\s+(?:a\s+|an\s+)?(?:strict\s+|full\s+)?"
    r"gluten[-\s]free\s+diet\b|"
    r"\bonly\s+thing\s+i\s+(?:have|need)\s+to\s+(?:watch|avoid)\s+is\s+gluten\b", re.I)
#: a question after a comma is a sentence of its own ("Since the celiac diagnosis the only
#: thing I have to watch is gluten, so which breads are good?"): the head is read
_EN_ASK_AFTER_COMMA = re.compile(
    r",\s+(?:so\s+)?(?=(?:any|what|which|how|can|could|do|does|is|are|where|who)\b[^.!?]*\?)|"
    # a short last clause that asks: "..., veggie meal ideas?"
    r",\s+(?=[^,.!?]{1,40}\?+\s*$)", re.I)


def en_diet(text: str, current: str) -> str | None:
    """A new diet in an English ``text``, given the ``current`` one."""
    if _EN_NAME_TEXT_GUARD.search(text):
        return None
    text = _EN_ASK_AFTER_COMMA.sub(". ", text)
    for m in _EN_DROPPED_LABEL.finditer(text):
        sentence = text[:m.start()].rsplit(".", 1)[-1] + m.group(0)
        dropped = _EN_LABEL_NAMES.get(m["v"].lower(), m["v"].lower())
        if dropped == current and not _EN_DIET_SENTENCE_GUARD.search(sentence) \
                and not _EN_DIET_OTHERS.search(sentence) and current in (
                    "vegetarian", "pescatarian"):
            # the diet given up; meat eaten again says no more than that
            return "not vegetarian"
    labels: set[str] = set()
    steps: list[tuple[bool, set[str]]] = []
    # a dash or an emoji ends a sentence ("added fish back ... (still no meat tho) — whats a
    # simple salmon traybake?": the question is the next sentence)
    for sentence in re.split(r"(?<=[.!?])\s+|\s+[—–-]\s+|\s*[\U0001F300-\U0001FAFF]+\s*", text):
        if _EN_DIET_SENTENCE_GUARD.search(sentence):
            continue
        # a comma ends a clause only before a clause's first word: "fish, eggs and dairy
        # are back" is one clause, "eggs and dairy again, still no meat" two
        # ("started eating fish again bc my doctor said so": the reason is a clause of its own)
        for clause in re.split(r"\s*[;:()—–]\s*|\s+-\s+|,?\s+(?:but|so|though|although|bc|"
                               r"because|cause|cuz|coz)\s+|"
                               r",\s+(?=(?:still|and|i|i['’]m|i['’]ve|no|not|never|plus|also)\b)",
                               sentence, flags=re.I):
            # "my doctor talked me into eating fish again": the user eats it
            clause = _EN_TALKED_INTO.sub(" ", clause)
            if not clause or _EN_DIET_OTHERS.search(clause):
                continue
            # "Quit keto and went fully vegan": the diet given up is not the one taken up
            kept = _EN_DROPPED_LABEL.sub(" ", _EN_NOT_LABEL.sub(" ", clause))
            if not _EN_STOP_EATING.search(kept):
                labels |= {_EN_LABEL_NAMES.get(v.lower(), v.lower())
                           for m in _EN_LABEL.finditer(kept)
                           for v in (m["v"] or m["v2"] or m["v3"] or m["v4"],)}
            if _EN_GLUTEN.search(clause):
                labels.add("gluten-free")
            foods = {f for f, p in _EN_FOODS.items() if p.search(clause)}
            if re.search(r"\bno\s+meat\s+(?:at\s+all|whatsoever|of\s+any\s+kind)", clause, re.I):
                foods.add(_FISH)  # "no meat at all": fish neither
            if _EN_STOP_EATING.search(clause):
                steps.append((False, foods))
            elif _EN_EATING.search(clause) and _EN_CHANGE.search(clause):
                steps.append((True, foods))
    labels.discard(current)
    if len(labels) == 1:
        return labels.pop()
    if not labels and current not in _ALLOWS and any(
            _EN_LABEL_NAMES.get(m["v"].lower(), m["v"].lower()) == current
            for m in _EN_DROPPED_LABEL.finditer(text)):
        # "quit keto ... no meat at all for me": a diet that names no foods, given up -
        # what is eaten now is read from everything
        return _apply("not vegetarian", steps)
    return None if labels else _apply(current, steps)


_ZH_FOODS = {
    _MEAT: re.compile(r"(?<!蛋)(?:肉|荤)|鸡(?!蛋)|鸭|猪|牛(?!奶)|羊(?!奶)"),
    _FISH: re.compile(r"鱼|虾|海鲜"),
    _EGGS: re.compile(r"蛋(?!白)|奶|乳制品|芝士"),
}
_ZH_DIET_CUE = re.compile(r"素|肉|荤|葷|鱼|魚|虾|蝦|海鲜|蛋|奶|生酮|清真|麸质|麩質|"
                          r"断食|斷食|地中海|低碳")
_ZH_DIET_GUARD = re.compile(r"[?？「」“”『』\"]|吗|如果|要是|假如|假设|万一|的话|倘若|梦|"
                            # 不打算再吃素了 is no plan: a decision
                            r"(?<!不)打算(?!就这么|就这样|继续|一直)|(?<!不)准备|听说|有人|"
                            # (海鲜实在不想放弃: no wish, what is kept)
                            r"考虑|(?<![不没])想|犹豫|建议我(?!多补充)|"
                            # the past: 大学那会儿我吃过两年纯素
                            r"吃过|那会儿|那时候|那时|以前|当年|曾经|小时候|"
                            # 大学的时候我纯素过一年
                            r"(?:大学|高中|上学|读书|年轻)的?(?:时候|那会)|素过")
_ZH_ADVISED_DONE = re.compile(
    r"(?:建议|让|叫|劝)我(?:恢复|开始|重新|多)?吃(?P<food>[^，,。！!；;]{1,6}?)[，,。]\s*"
    r"(?:现在|目前|所以|最近)*(?:已经|也)?(?:(?:开始|恢复|照做)?(?:吃|做)?[^，,。！!；;不没]{0,8}?"
    r"|不(?:再)?吃素)了(?:[，,。！!；;]|$)")
_ZH_STOP_EATING = re.compile(r"不吃|不碰|戒|不沾|别放|不要放|不放|一口不吃|也不碰")
_ZH_STILL_EATS = re.compile(r"(?:还|照|仍然?|依然|还是)(?:会|可以|在)?吃")
_ZH_EATING = re.compile(r"(?:开始|又|恢复|重新|正常|偶尔|现在|最近|一直)[^，,。！!；;]{0,6}?吃|"
                        r"吃点|可以加|加回|加点")


def zh_own_clauses(text: str) -> list[str]:
    """The clauses of ``text`` that speak of the user: not one naming someone else, nor
    one without 我 after it (我妈最近在减肥 搞什么生酮 天天吃肉: all three are hers)."""
    out: list[str] = []
    theirs = False
    for clause in _ZH_CLAUSES.split(text):
        if not clause:
            continue
        m = _ZH_OTHERS.search(clause)
        if m is not None:
            # the person as the subject carries on (我妈最近在减肥); as an object
            # (最近跟着我老公信了伊斯兰教) the user does
            theirs = _ZH_SUBJECT_BEFORE.fullmatch(clause[:m.start()]) is not None
            continue
        if "我" in clause:
            theirs = False
        if not theirs:
            out.append(clause)
    return out


#: what may stand before a person who is the subject: a word of time, 我(的)
_ZH_SUBJECT_BEFORE = re.compile(r"(?:最近|今天|昨天|现在|这周|上周|这几天|前几天|后来)?(?:我的?)?")


def zh_diet(text: str, current: str) -> str | None:
    """A new diet in a Chinese ``text`` (in simplified characters, as
    :func:`~memstrata.policies.slot_change.change_of` passes it), given the ``current`` one."""
    # 医生建议我恢复吃肉，现在已经开始吃了: advice, then done - the advice is what is eaten
    m = _ZH_ADVISED_DONE.search(text)
    if m and not _ZH_OTHERS.search(text[:m.start()].rsplit("，", 1)[-1]):
        foods = {f for f, p in _ZH_FOODS.items() if p.search(m["food"])}
        return _apply(current, [(True, foods)])
    text = zh_unguarded(text, _ZH_DIET_GUARD)
    if not text:
        return None
    own = zh_own_clauses(text)
    for label, said in (("vegan", r"纯素|全素"), ("keto", r"生酮|(?i:keto)"),
                        ("vegetarian", r"蛋奶素"),
                        ("halal", r"吃清真|清真饮食"),
                        ("intermittent fasting", r"轻断食|16[:：]8断食|168断食"),
                        ("mediterranean", r"地中海饮食|地中海(?:式)?吃法"),
                        ("low-carb", r"低碳水?饮食|低碳水化合物饮食"),
                        ("gluten-free", r"(?<!含)无麸质饮食|只(?:能)?吃无麸质|戒(?:掉)?麸质|"
                                        r"麸质不耐受?|乳糜泻"),
                        ("not vegetarian", r"(?:啥|什么)都吃|荤素都吃|开荤")):
        # (a negation outside the label's own words: 戒麸质 names gluten-free)
        if label != current and any(re.search(said, c)
                                    and not re.search(r"不|停|没|戒", re.sub(said, "", c))
                                    for c in own):
            return label
    # 现在改吃素了 (from keto, from meat): vegetarian - not said by a vegan, for whom 吃素 is
    # what they already do
    if current not in ("vegan", "vegetarian") and any(
            re.search(r"(?:改|开始|转|现在|已经|彻底)吃素(?!食)", c)
            and not re.search(r"不|停|没|戒", c) for c in own):
        return "vegetarian"
    steps: list[tuple[bool, set[str]]] = []
    kept: set[str] = set()
    for clause in own:
        if _ZH_STILL_EATS.search(clause) and not _ZH_STOP_EATING.search(clause):
            # 不吃肉了，鸡蛋牛奶还吃: what is still eaten is all that is eaten
            kept |= {f for f, p in _ZH_FOODS.items() if p.search(clause)}
            continue
        # 除了鱼虾海鲜别的肉还是不碰: the foods after 除了 are the exception, not the stop
        clause = re.sub(r"除了.*?(?=别的|其他|以外|之外)", "", clause)
        foods = {f for f, p in _ZH_FOODS.items() if p.search(clause)}
        if _ZH_STOP_EATING.search(clause):
            steps.append((False, foods))
        elif re.search(r"没|不(?!用)|别", clause):
            continue  # 我没有开始吃肉: a negation that stops no food
        elif _ZH_EATING.search(clause):
            steps.append((True, foods))
    if kept and any(not eats for eats, _ in steps):
        new = _DIET_OF.get(frozenset(kept))
        return new if new is not None and new != current else None
    return _apply(current, steps)
