"""The user's things named by make or provider: a car, a phone, a laptop, a mobile
carrier, a home internet provider, a streaming service, a bank.

A question for one of them ("what kind of motor oil should I buy for my car?", "which
carrier am I with?", 我的手机卡是哪家运营商的) is answered by the newest statement of the
user's own present state that names one ("my Subaru Outback handled the dirt roads no
problem", 联通500兆装好了). People rarely say the kind of thing beside its name, and a
sentence embedding links a make to the question about it little better than chance
(MiniLM puts "my Subaru Outback" 0.14 from "What do I drive?"), so the name is read from a
list of makes, models and providers - a closed set that changes slowly, unlike the ways
of saying it. A name that is also a common word is read only as written with its capital
("Chase", "Max", "Mint"); one that is also a place or a word in Chinese only with the
word of its kind (大众朗逸, 中国移动 or 移动的卡, not 大众 or 移动 alone).

:func:`asked_possession` reads the question, :func:`names_possession` the statement.
Whether the statement reports the user's own present state (not someone else's car, a
rental, a plan) is :func:`memstrata.policies.standing.reports_own_state`'s to say.
"""

from __future__ import annotations

import re

__all__ = ["POSSESSIONS", "asked_possession", "names_possession"]


def _names(latin: str, cased: str = "", cjk: str = "") -> re.Pattern[str]:
    """Names as whole words: ``latin`` (space-separated, ``_`` for a space inside a name)
    in any case, ``cased`` only as written, ``cjk`` (``|``-separated patterns) as written."""
    def words(names: str) -> str:
        return "|".join(re.escape(n).replace("_", r"[\s-]?") for n in names.split())
    parts = [rf"(?<![\w-])(?:{words(latin)})(?![\w-])"]
    if cased:
        parts.append(rf"(?-i:(?<![\w-])(?:{words(cased)})(?![\w-]))")
    if cjk:
        parts.append(f"(?:{cjk})")
    return re.compile("|".join(parts), re.I)


#: makes, models and providers per attribute
_NAMES = {
    "car": _names(
        "toyota honda ford chevy chevrolet subaru mazda tesla bmw audi mercedes vw volkswagen "
        "kia hyundai nissan jeep volvo lexus acura porsche rivian polestar mini_cooper dodge "
        "gmc buick cadillac infiniti skoda peugeot renault fiat civic corolla camry prius rav4 "
        "highlander tacoma cr-v crv outback forester crosstrek impreza cx-5 cx5 cx-30 cx-50 "
        "mazda3 model_3 model_y model_s model_x f-150 f150 wrangler ioniq ioniq_5 jetta tiguan "
        "sorento telluride elantra altima silverado sienna miata e-tron kona niro",
        "Golf Leaf Bolt Accord Pilot Odyssey Rogue Mustang Fit",
        r"比亚迪|特斯拉|理想(?:L\d|ONE|MEGA|i\d)|小鹏|问界|極氪|极氪|领克|吉利|哈弗|五菱|"
        r"(?:一汽|上汽)?大众(?=朗逸|速腾|帕萨特|迈腾|宝来|途观|高尔夫|ID)|丰田|本田|日产|宝马|奔驰|奥迪|"
        r"别克|雪佛兰|马自达|斯巴鲁|卡罗拉|朗逸|凯美瑞|雅阁|轩逸|思域|速腾|帕萨特|迈腾|宝来|途观|"
        r"海豹|海鸥|汉EV|秦PLUS|宋PLUS|元PLUS|小米SU7|(?i:model\s?[3ysx])|蔚来(?:ES\d|ET\d|EC\d)|"
        r"坦克300|昂科威|天籁|逸动|帝豪|星越|CR-V|RAV4"),
    "phone": _names(
        "iphone pixel galaxy samsung oneplus xiaomi motorola moto_g razr nothing_phone "
        "fairphone redmi oppo vivo xperia",
        "",
        r"苹果手机|华为(?:手机|Mate|P\d|nova|Pura)|Mate\s?\d{2}|Pura\s?\d{2}|荣耀(?:手机|\d|Magic)|"
        r"小米(?:手机|\d{1,2}(?!\s*SU))|红米|OPPO|vivo|一加|三星|魅族|真我|iQOO|(?i:iphone)"),
    "laptop": _names(
        "macbook macbook_air macbook_pro thinkpad xps dell spectre chromebook zenbook vivobook "
        "razer_blade ideapad lenovo asus acer imac",
        "Surface Yoga Envy Swift HP",
        r"联想|小新|拯救者|(?i:matebook)|戴尔|惠普|华硕|宏碁|机械革命|雷蛇|(?i:surface)|小米笔记本|"
        r"(?i:magicbook)|苹果电脑|(?i:macbook|thinkpad)"),
    "carrier": _names(
        "verizon at&t t-mobile tmobile mint_mobile cricket google_fi us_mobile vodafone "
        "giffgaff lebara telstra optus rogers telus fido",
        "Mint Visible Metro Boost EE O2 Three Bell",
        r"中国移动|中國移動|移动(?=的?(?:卡|号|套餐|宽带|5G|4G))|中国联通|联通|中国电信|(?<!诈骗)电信(?!诈骗)|"
        r"广电(?=的?(?:卡|号|套餐))|中华电信|中華電信|台湾大哥大|台灣大哥大|远传|遠傳"),
    "internet": _names(
        "comcast xfinity spectrum fios verizon_fios google_fiber at&t_fiber att_fiber cox "
        "starlink centurylink frontier optimum sonic bt virgin_media sky_broadband talktalk "
        "hyperoptic ziply",
        "",
        r"中国电信|(?<!诈骗)电信(?!诈骗)|中国联通|联通|中国移动|移动(?=的?(?:宽带|光纤|千兆|百兆|\d+兆))|"
        r"长城宽带|"
        r"鹏博士|广电宽带|中华电信|中華電信|台湾大哥大|台灣大哥大|(?-i:\b[A-Z]\w+\s+Fiber\b)"),
    "streaming": _names(
        "netflix hulu hbo_max hbo disney+ disney_plus prime_video amazon_prime apple_tv+ "
        "peacock paramount+ paramount_plus youtube_tv youtube_premium crunchyroll sling fubo",
        "Max",
        r"爱奇艺|愛奇藝|腾讯视频|優酷|优酷|芒果(?i:tv)|B站大会员|大会员|(?i:netflix)|网飞|奈飞|"
        r"(?<=on\s)max\b|(?<=on\s)(?i:hbo)|\bmax(?=\s+is\s.{0,30}stream)"),
    "bank": _names(
        "bank_of_america bofa wells_fargo citibank capital_one schwab us_bank pnc td_bank "
        "truist sofi chime monzo starling revolut barclays hsbc lloyds natwest santander "
        "n26 navy_federal usaa",
        "Chase Citi Ally Discover Halifax Nationwide TD",
        r"招商银行|招行|建设银行|建行|工商银行|工行|农业银行|农行|中国银行|中行|交通银行|交行|邮储|"
        r"邮政储蓄|浦发|中信银行|民生银行|兴业银行|平安银行|光大银行|华夏银行|北京银行|上海银行|"
        r"宁波银行|微众银行|网商银行|汇丰|渣打|中银香港|中信(?=银行|的卡|那张|卡)|"
        # any credit union or bank by its name ("Alliant Credit Union", "my ally app")
        r"(?-i:\b[A-Z][\w&]+(?:\s+[A-Z][\w&]+)?\s+(?:Credit\s+Union|Bank)\b)|credit\s+union|"
        r"\bally(?=['’]?s?\s+(?:app|account|bank|checking|savings))|"
        r"[\u4e00-\u9fff]{2,4}银行(?=的|卡|那张|app|App|APP|账户)"),
}
#: the attributes read here
POSSESSIONS = tuple(_NAMES)

#: a question (or a request) for one of them: what asks for it ("which carrier am I with?",
#: 我开的是什么车) before what only speaks of it ("my phone has had no signal")
_ASKED: dict[str, tuple[str, str]] = {
    "car": (
        r"\b(?:what|which)\s+(?:kind\s+of\s+|type\s+of\s+)?(?:car|vehicle|truck|suv)\s+"
        r"(?:do|am|did)\s+i\b|\b(?:make\s+and\s+model|what\s+do\s+i\s+drive|the\s+car\s+i\s+drive)\b|"
        r"我(?:现在)?(?:开|開)的?(?:是)?(?:什么|啥|哪款|哪个)?车|我(?:这|的)车型|车(?:是)?(?:什么|啥|哪个)(?:牌子|型号)",
        # (not a service for it: "take my car to get the tires rotated", "my car insurance")
        r"(?<!take\s)(?<!bring\s)\bmy\s+(?:car|vehicle|truck|suv)(?!\s+(?:insurance|loan|"
        r"payment|mechanic|garage|dealer|registration))\b|"
        r"我的车(?!险|貸|贷)|我那(?:台|辆)车|我家(?:的)?车(?!险|贷)"),
    "phone": (
        r"\b(?:what|which)\s+(?:phone|smartphone|handset)\s+(?:do|am|did)\s+i\b|"
        r"我(?:现在)?用的?(?:是)?(?:什么|啥|哪款)手机|手机(?:是)?(?:什么|啥|哪个)(?:牌子|型号)",
        r"\bmy\s+(?:phone|smartphone|handset)(?!\s+(?:number|bill|plan|carrier|company|case))\b|"
        r"我的手机(?!号|卡|套餐|话费)|我这(?:台|部|个)?手机(?!号|卡)"),
    "laptop": (
        r"\b(?:what|which)\s+(?:laptop|computer|notebook)\s+(?:do|am|did)\s+i\b|"
        r"我(?:现在)?用的?(?:是)?(?:什么|啥|哪款)(?:笔记本|电脑)|"
        r"(?:笔记本|电脑)(?:是)?(?:什么|啥|哪个)(?:牌子|型号)",
        r"\bmy\s+(?:laptop|computer|notebook)\b|我的(?:笔记本|电脑)|我(?:自己)?那台(?:笔记本|电脑)"),
    "carrier": (
        r"\b(?:what|which)\s+(?:carrier|network|mobile\s+provider|cell\s+provider|phone\s+company)"
        r"\b|\b(?:carrier|provider)\s+am\s+i\b|\bwhich\s+carrier['’]?s\b|"
        r"(?:手机|手機|号|號|卡)[^，,。？?]{0,6}(?:运营商|營運商)|(?:运营商|營運商)|手机卡是|手機卡是|哪家的(?:卡|号)",
        r"\bmy\s+(?:carrier|cell\s+provider|mobile\s+provider|phone\s+(?:plan|bill|carrier|company)|"
        r"cell\s+(?:plan|bill))\b|门号|門號|话费|話費|手机套餐|手機套餐"),
    "internet": (
        r"\b(?:internet|broadband|isp|wi-?fi)\s+(?:provider|company)\b|"
        r"\bwho\s+(?:is|['’]s)\s+(?:my|our)\s+(?:internet|isp)\b|"
        r"(?:宽带|寬頻|寬帶|光纤|光纖|网络|網絡)[^，,。？?]{0,4}(?:是)?哪家",
        r"\b(?:my|our)\s+(?:internet|broadband|isp|wi-?fi|home\s+internet)\b|"
        r"\binternet\s+(?:service|plan|bill)\b|宽带|寬頻|寬帶|家里(?:的)?网络?|我家(?:的)?网络"),
    "streaming": (
        r"\bstreaming\s+(?:service|subscription|platform|app)s?\b|\b(?:which|what)\s+(?:service|app)\s+"
        r"(?:am\s+i|do\s+i)\s+(?:paying|subscribed|using)\b|"
        r"视频会员|影视会员|追剧的?(?:平台|软件|会员)|哪个(?:视频)?平台的?会员|会员是哪家",
        r"(?!)"),
    "bank": (
        r"\b(?:what|which)\s+bank\b|\bbank\s+(?:do|am)\s+i\b|\bwho\s+do\s+i\s+bank\s+with\b|"
        r"哪家银行|哪个银行|开户行",
        r"\bmy\s+bank(?!\s+statement)\b|工资卡|我的银行"),
}
_ASKS = {attribute: re.compile(asks, re.I) for attribute, (asks, _) in _ASKED.items()}
_MENTIONS = {attribute: re.compile(mentions, re.I) for attribute, (_, mentions) in _ASKED.items()}


def asked_possession(question: str) -> str | None:
    """The kind of thing of the user's a question asks for (``"car"``, ``"phone"``,
    ``"laptop"``, ``"carrier"``, ``"internet"``, ``"streaming"``, ``"bank"``), or ``None``.

    >>> asked_possession("What kind of motor oil should I be buying for my car?")
    'car'
    >>> asked_possession("我手机欠费停机了 我该打哪个运营商的客服电话")
    'carrier'
    >>> asked_possession("What's a good car for a family of five?") is None
    True
    >>> asked_possession("Which bank does Melanie use?") is None
    True
    >>> asked_possession("What phone did I have before?") is None
    True
    """
    if _NOT_A_CAR.search(question) or not _ABOUT_THE_USER.search(question):
        return None  # (a bike; someone else's: "Which bank does Melanie use?")
    if _A_PAST_ONE.search(question):
        return None  # the one the user had, not the one they have
    # what the question asks for, before what it speaks of ("My phone has had no signal all
    # morning. Which carrier's support line ...?"); the first named of either ("which bank
    # am I with now? setting up autopay for my car")
    for patterns in (_ASKS, _MENTIONS):
        found = [(m.start(), attribute) for attribute, pattern in patterns.items()
                 for m in (pattern.search(question),) if m is not None
                 and (patterns is _ASKS or attribute != "car" or not _INSURED.search(question))]
        if found:
            return min(found)[1]
    return None


#: the question asks for one the user had ("What phone did I have before?", "my first car",
#: 我以前开什么车) - not a question about now with a past in it ("my phone's had no signal
#: since this morning", "should I freeze the card first?", 打客服之前想先确认一下)
_A_PAST_ONE = re.compile(
    r"\b(?:did|had)\s+(?:i|we)\s+(?:have|own|drive|use|bank|get)\b|\bused\s+to\s+(?:have|own|"
    r"drive|use|bank)\b|\bbefore\s*[?？]|\b(?:my|our)\s+(?:previous|old|former|first|last)\b|"
    r"以前|之前的|原来的|上一(?:台|辆|部|个|家)", re.I)
#: the question is about the user's own thing
_ABOUT_THE_USER = re.compile(r"\b(?:i|i['’]m|im|my|me|we|our|us)\b|我|家里|咱", re.I)
#: the car's insurer is asked for, not the car ("Who am I insured with for my car?")
_INSURED = re.compile(r"\binsur\w*|保险|保險|车险|車險", re.I)
#: a bike is no car ("What make and model should I put down for my bike?")
_NOT_A_CAR = re.compile(r"\b(?:e-?bike|bike|bicycle|scooter|motorbike)\b|"
                        r"自行车|单车|骑车|騎車|公路车|山地车|電動車|电动车(?!品牌)", re.I)


#: what a text names instead, when it speaks of that and not of the asked kind: home
#: broadband from a carrier (家里宽带刚换成电信的了), a desktop from a laptop maker, a credit
#: card from a bank ...
_OTHER_KIND = {
    "carrier": (re.compile(r"宽带|寬頻|寬帶|光纤|光纖|路由器|"
                           r"\b(?:broadband|home\s+internet|fios|fiber|fibre|router|"
                           r"wi-?fi(?!\s+calling))\b",
                           re.I),
                re.compile(r"手机|手機|号码|號碼|(?:电话|電話|号|號|流量|(?i:sim))卡|流量|套餐|"
                           r"\b(?:phone|cell|sim|mobile|data\s+plan)\b", re.I)),
    "internet": (re.compile(r"手机卡|手機卡|电话卡|流量卡|(?i:sim)|\b(?:phone\s+plan|cell\s+plan|"
                            r"bars|roaming|unlimited\s+data|hotspot)\b|漫游|話費|话费|热点|熱點|"
                            r"流量", re.I),
                 re.compile(r"宽带|寬頻|寬帶|光纤|光纖|路由器|网速|網速|\b(?:broadband|internet|"
                            r"fios|fiber|fibre|router|wi-?fi(?!\s+calling)|mbps|gig)\b", re.I)),
    "laptop": (re.compile(r"台式|桌面机|一体机|\b(?:desktop|monitor|tower)\b", re.I),
               re.compile(r"笔记本|筆記本|\b(?:laptop|notebook|macbook)\b", re.I)),
    "bank": (re.compile(r"信用卡|\bcredit\s+card\b", re.I),
             re.compile(r"工资|工資|储蓄|儲蓄|借记|\b(?:checking|savings|debit|direct\s+deposit|"
                        r"account)\b", re.I)),
}


def names_possession(text: str, attribute: str) -> bool:
    """Does ``text`` name a make, model or provider of ``attribute`` - as that kind of
    thing, not as the maker of another ("家里宽带刚换成电信的了" names no mobile carrier)?

    >>> names_possession("my Subaru Outback handled the dirt roads", "car")
    True
    >>> names_possession("I'll chase it up tomorrow", "bank")
    False
    """
    pattern = _NAMES.get(attribute)
    if pattern is None or pattern.search(text) is None:
        return False
    other = _OTHER_KIND.get(attribute)
    return other is None or not other[0].search(text) or other[1].search(text) is not None
