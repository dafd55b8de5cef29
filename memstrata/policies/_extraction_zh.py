"""The Chinese rule tables of the fast extractor.

Profile facts and changes in Chinese word order and with dropped subjects
("我在上海定居了", "我换工作了，现在在阿里巴巴", "三十岁"), preferences and habits, read
by :func:`_chinese`; plus the Chinese patterns the driver in
:mod:`memstrata.policies.extraction` uses (questions, 叫我, relatives, clause splits,
standing instructions, "不要再...", "不是X而是Y"). Private: imported only by
:mod:`memstrata.policies.extraction`; the first rule that reads a sentence wins, so
the order in :func:`_chinese` is the precedence.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from memstrata.policies._extraction_common import (
    _ONE_OFF_OBJECT,
    Extracted,
    _clean,
    _confidence,
    _slot,
)
from memstrata.types import MemoryType

_ZH_QUESTION = re.compile(r"(?:吗|呢|么|吧)[？?。.!！]?$|什么(?![\u4e00-\u9fff]?(?:都|也))|"
                          r"怎么|哪里|哪儿|为什么|多少|几点")
_ZH_VALUE_END = re.compile(r"[，,；;。！!？?了啦呀哦].*$|"
                           r"(?<=..)(?:做|负责)\s*[A-Za-z\u4e00-\u9fff].*$")
_ZH_STANDING_END = re.compile(
    r"^(?P<rest>.+?)[，,]\s*(?:以后|今后|从现在开始|从今以后)(?:都|就|也|一直)?(?:这样|如此|这么做|照此)"
    r"(?:就行|就好|吧)?[。！!]?$"
)


#: what trails a place or company in Chinese: 搬到上海住了 / 入职阿里巴巴两周了
_ZH_VALUE_TAIL = re.compile(r"(?:住|居住|定居|生活|工作|上班|(?<=..)去|(?<=..)来|已经|将近|差不多|"
                            r"快(?=[一二两三四五六七八九十几半\d])|"
                            r"[一二两三四五六七八九十几半\d]+个?(?:多)?(?:天|周|星期|月|年))+$")


#: not a place or a company: 搬回家了, 我在酒店住, 我去公司上班了, 我被单位录用了
_ZH_NOT_A_VALUE = re.compile(r"^(?:这|那|回|去|来|家|老家|朋友|同学|亲戚|父母|我|第|一家|一所|一个|"
                             r"某)"
                             r"|(?:章|页|集|节|段|关)$"
                             r"|(?:家|酒店|宾馆|旅馆|(?<!医)院|(?<!学)校|宿舍|单位|办公室|里|这儿|那儿|这边|那边"
                             # (过来, 回去 name nothing; 蔚来 does)
                             r"|(?:^|[过回起上下进出带跑走搬未将])[去来])$"
                             # a hospital, a company or a school by kind, not by name
                             # (医院, 大医院, 一家公司; 协和医院 is one)
                             r"|^(?:[一某大小]|一家|一所)?(?:医院|公司|学校)$")


#: big cities and provinces: where an employer would stand, "在上海做产品" names a place
_ZH_PLACE_NAMES = frozenset(
    "北京 上海 天津 重庆 广州 深圳 杭州 南京 苏州 成都 武汉 西安 长沙 郑州 青岛 厦门 宁波 合肥 "
    "济南 沈阳 大连 哈尔滨 长春 昆明 贵阳 南宁 福州 南昌 石家庄 太原 兰州 乌鲁木齐 呼和浩特 "
    "海口 三亚 珠海 东莞 佛山 无锡 常州 温州 香港 澳门 台北 台湾 广东 浙江 江苏 四川 湖北 "
    "湖南 河南 河北 山东 山西 福建 安徽 江西 云南 贵州 广西 海南 陕西 甘肃 辽宁 吉林 黑龙江 "
    "内蒙古 新疆 西藏 宁夏 青海 "
    "国外 海外 美国 英国 日本 德国 法国 加拿大 澳洲 新加坡 伦敦 纽约 东京".split())

#: where a Chinese clause ends for the readers of held values: punctuation, a space (voice
#: input) or an emoji (终于19了🎉 零点的时候…)
#: quotation marks: a quoted text is someone's words in every sentence of it
_ZH_QUOTES = re.compile(r"[「」“”『』\"]")
_ZH_QUOTED_WORD = re.compile(r"[“「『\"][\u4e00-\u9fffA-Za-z]{1,4}[”」』\"]")
#: a sentence with its end mark (the mark decides whether it asks)
#: a sentence ends at its mark, a line break or an emoji (终于从北京搬去深圳了🥲 这边租房…吗？)
_ZH_SENTENCE = re.compile(r"[^。！!？?\n\U0001F300-\U0001FAFF]+[。！!？?\U0001F300-\U0001FAFF]*")


@functools.cache
def _t2s() -> Any:
    import opencc

    return opencc.OpenCC("t2s")


_ASCII_PUNCT_BY_CJK = re.compile(r"(?<=[\u3400-\u9fff])[,!?;:]|[,!?;:](?=\s*[\u3400-\u9fff])")
_ZH_PUNCT = re.compile(r"[，。！？；：、]")
_SPACE_AS_COMMA = re.compile(r"(?<=[\u4e00-\u9fff])\s(?=[\u4e00-\u9fff])")
_FULL_WIDTH = {",": "，", "!": "！", "?": "？", ";": "；", ":": "："}


def spaces_as_commas(text: str) -> str:
    """``text`` typed with spaces for commas (以后都用英文回复我吧 想练练英语 对了 今天天气怎么样)
    with a full-width comma for each space between two Chinese characters - only where
    the text has no Chinese punctuation at all (one character for one)."""
    if _ZH_PUNCT.search(text):
        return text
    return _SPACE_AS_COMMA.sub("，", text)


def to_simplified(text: str) -> str:
    """``text`` in simplified Mandarin, character for character: the readers' patterns
    are written in it, so a traditional text (上週剛過完五十大壽) reads through OpenCC's
    ``t2s`` and written Cantonese (喺中銀香港返工) through :data:`_CANTONESE_AS` first.
    Unchanged when a conversion would change the length (a phrase mapping), so
    positions stay those of ``text`` (:func:`as_written` maps a value back).

    >>> to_simplified("我上個禮拜開始喺中銀香港返工")
    '我上个礼拜开始在中银香港上班'
    """
    if not _CJK_ANY.search(text):
        return text
    # 跳槽成功!现在是腾讯的产品经理了: ASCII punctuation typed beside Chinese is read as the
    # full-width marks the patterns split at (one character for one)
    text = _ASCII_PUNCT_BY_CJK.sub(lambda m: _FULL_WIDTH[m.group(0)], text)
    text = spaces_as_commas(text)
    if _CANTONESE.search(text):
        text = _CANTONESE_WORDS.sub(lambda m: _CANTONESE_AS[m.group(0)], text)
    out: str = _t2s().convert(text)
    return out if len(out) == len(text) else text


#: written Cantonese (喺中銀香港返工, 依家叫黃浩然, 我食蛋奶素) read as Mandarin, a word of the
#: same length for each, so positions stay those of the text; only in a text with a word
#: that only Cantonese writes (食 is 吃 there, not in 食物)
_CANTONESE = re.compile(r"喺|嘅|咗|係|冇|唔|佢|啲|嘢|睇|諗|依家|而家|返工|啱啱|揾|點樣|邊度|乜嘢|"
                        r"(?<=[我你佢])食")
_CANTONESE_AS = {"喺": "在", "嘅": "的", "咗": "了", "係": "是", "冇": "没", "唔": "不", "佢": "他",
                 "啲": "些", "做嘢": "工作", "睇": "看", "依家": "现在", "而家": "现在",
                 "返工": "上班", "啱啱": "刚刚", "揾": "找", "點樣": "怎样", "邊度": "哪里",
                 "覆": "回", "食": "吃", "埋": "了", "乜嘢": "什么", "諗": "想"}
#: the words, longest first; 食 not in a word (飲食, 食物 keep it)
_CANTONESE_WORDS = re.compile("|".join(
    "(?<![飲饮])食(?![物品堂材譜谱欲量用])" if w == "食" else re.escape(w)
    for w in sorted(_CANTONESE_AS, key=len, reverse=True)))


def as_written(text: str, simplified: str, value: str) -> str:
    """``value`` (read from ``simplified``, :func:`to_simplified` of ``text``) spelled as
    in ``text``: 联发科 read from 這個月開始在聯發科上班 is 聯發科."""
    at = simplified.find(value)
    return text[at:at + len(value)] if at >= 0 and len(simplified) == len(text) else value


_CJK_ANY = re.compile(r"[\u3400-\u9fff]")


#: only halal food from now on: 必须是清真的, 只吃清真
_ZH_HALAL_ONLY = re.compile(r"(?:必须|只能|只|得|要)(?:是|吃)?清真")


def zh_unguarded(text: str, guard: re.Pattern[str]) -> str:
    """The sentences of ``text`` that ``guard`` (a question, a condition, a trip) does not
    hit, joined - "" when a quotation mark is anywhere or none is left. A change told
    before a question of its own (搬到杭州快一个月了，…。帮我查下附近哪有牙科诊所？) is
    read; the question is not."""
    text = _ZH_QUOTED_WORD.sub("", text)  # “抓手”“赋能”: words in quotes, not speech
    if _ZH_QUOTES.search(text):
        return ""
    text = _ZH_ASK_AFTER_COMMA.sub("。", text)
    kept = []
    for m in _ZH_SENTENCE.finditer(text):
        sentence = m.group(0).rstrip("。！!？?")
        if not guard.search(m.group(0)):
            kept.append(sentence)
            continue
        # a question at the end of a sentence that first tells a completed change
        # (上个月调到武汉了，…，有啥防暑的好办法吗): the clauses before the question are read
        # (上个月刚满19 可以自己去银行办信用卡了吗: a space typed for a comma)
        clauses = re.split(r"[，,]|(?<=[\u4e00-\u9fff\d])\s+(?=[\u4e00-\u9fff])", m.group(0))
        head: list[str] = []
        for clause in clauses:
            if guard.search(clause):
                if _ZH_ASKS.search(clause) and any(_ZH_DONE.search(c) for c in head):
                    kept.append("，".join(head))
                break
            head.append(clause)
    return "。".join(kept)


#: a question of its own (吗, 呢, a question word or mark) and a change already made
_ZH_ASKS = re.compile(r"[?？]|吗|呢|啥|什么|怎么|哪|几")
#: (新东家是美团: the new one named is had already)
_ZH_DONE = re.compile(r"了|已经|已|刚(?!要|想|准备|打算)|新(?:东家|公司|单位|工作|家)(?:是|就是)")


#: a request or a question after a comma starts a sentence of its own
#: (终于搬到重庆了，热到怀疑人生，有什么消暑的推荐吗)
_ZH_ASK_AFTER_COMMA = re.compile(r"[，,\s]+(?=有什么|有没有|有啥|帮我|帮忙|请问|想问|求推荐|求助|"
                                 r"怎么|哪里|哪儿|哪家|能不能|可不可以|可以推荐|推荐一?下|可以帮|能帮|"
                                 r"你能|你可以)")


_ZH_CLAUSE_SPLIT = re.compile(r"[，,。！!；;…~～\n\s\U0001F300-\U0001FAFF]+")
#: other people as the subject of a clause (the readers of held values skip such clauses)
_ZH_OTHER_PEOPLE = (r"他|她|它|我妈|我爸|妈妈|爸爸|父母|爸妈|老婆|老公|妻子|丈夫|爱人|朋友|同事|"
                    r"哥哥|姐姐|弟弟|妹妹|儿子|女儿|孩子|室友|邻居|领导|老板|同学|表姐|表哥|表妹|"
                    r"表弟|堂哥|堂姐|堂弟|堂妹|亲戚|叔叔|阿姨|舅舅|姑姑|男朋友|女朋友|闺蜜|家人|"
                    r"家里人|我弟|我哥|我姐|我妹|老伴|对象|实习生")


def _zh_value(raw: str) -> str:
    """The place or company in a Chinese clause; ``""`` when it names none."""
    value = _clean(_ZH_VALUE_END.sub("", raw.strip()))
    value = _ZH_VALUE_TAIL.sub("", value) or value
    return "" if _ZH_NOT_A_VALUE.search(value) else value


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
    rf"(?:[。！!~]|$)|我{_ZH_WHEN}(?:落户|(?<=现在|目前|如今)住)(?!在|的)(?P<v2>{_ZH_X}{{1,12}}?)了?"
    r"(?:[。！!~]|$)"
    # 杭州是我目前住的城市
    rf"|^(?P<v3>{_ZH_X}{{2,8}}?)(?:市)?是我(?:现在|目前|如今)?(?:住|生活|居住)的(?:城市|地方)"
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
                     # 我18岁那年第一次出远门: an age back then
                     r"(?!(?:的)?生日|那年|那一年|那会|那时|的时候|时)"
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
                         r"(?P<v>[^，,。！!；;\s]{1,20})")
#: 我换工作了啊现在在京东上班: the company is where the user now works
_ZH_NOW_AT = re.compile(r"^(?:[啊呀哈嘛呢哦嗯]+)?(?:现在|目前|如今)?在(?P<v>[^在]{2,10}?)"
                        r"(?:上班|工作|任职)")
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
_ZH_PROFESSIONS = "工程师|程序员|老师|教师|医生|护士|学生|设计师|经理|律师|会计|记者|研究员|厨师|" \
                  "建筑师|顾问|产品经理|司机|自由职业者|退休"
_ZH_WORK_AT = re.compile(
    # 我在协和医院当护士: where the user works as what they are
    rf"我{_ZH_WHEN}在(?P<v3>[^，,。！!；;]{{2,12}}?)当(?=(?:{_ZH_PROFESSIONS}))|"
    rf"我{_ZH_WHEN}在(?P<v>[^，,。！!；;]{{1,20}}?)(?:工作|上班|任职)"
    # 我现在在比亚迪做电池研发: the work named after 做/负责
    rf"|我{_ZH_WHEN}在(?P<v2>[^，,。！!；;]{{2,12}}?)(?:做|搞|负责)[^，,。！!；;]{{0,8}}?"
    r"(?:研发|开发|产品|运营|销售|设计|算法|技术|市场|财务|人事|数据|测试|前端|后端|工程|项目|"
    r"咨询|管理)")
_ZH_IM_A = re.compile(
    rf"我是(?:一名|一个|个|名)?(?P<v>[^，,。！!；;]{{0,8}}?(?:{_ZH_PROFESSIONS}))"
)
_ZH_NOW_A = re.compile(
    rf"我{_ZH_WHEN}是(?:一名|一个|个|名)?(?P<v>[^，,。！!；;]{{0,8}}?(?:{_ZH_PROFESSIONS}))"
)
#: an occupation read as "<organisation>的<role>": 腾讯的工程师, 协和医院的护士
_ZH_ORG_ROLE = re.compile(r"^(?P<org>[^，,。！!；;的\s]{2,12})的(?:一名|一个|个|名)?"
                          r"(?P<role>[^的]+)$")
#: words before 的 that name no employer: 北京的老师 names a place, 一家公司的经理 none
_ZH_NO_ORG = re.compile(r"^(?:一|这|那|某|本|我们|他们|大|小)|公司$|单位$")


def zh_employer_beside_role(found: Extracted) -> Extracted | None:
    """The employer a Chinese sentence read as the user's occupation names before the
    role (我是腾讯的工程师 -> 腾讯)."""
    if found.rule != "occupation" or found.slot is None:
        return None
    m = _ZH_IM_A.search(found.content) or _ZH_NOW_A.search(found.content)
    role = _ZH_ORG_ROLE.match(m["v"]) if m else None
    if role is None or _ZH_NO_ORG.search(role["org"]) or role["org"] in _ZH_PLACE_NAMES:
        return None
    return Extracted(found.content, found.type, found.confidence, "employer",
                     _slot("employer", _zh_value(role["org"])), correction=found.correction)


_ZH_DIET = re.compile(rf"我{_ZH_WHEN}(?:开始|改|改成|成了|成为了?|变成了?|是)?(?:一名|一个)?"
                      r"(?:素食者|素食主义者|吃素|吃全素|不吃肉)")
_ZH_CHANGE_ASPECT = re.compile(r"开始|改|成|变|现在|已经|如今|目前|最近")
#: a diet stated in other words: 我是蛋奶素 / 我只吃鱼和海鲜 / 我在吃生酮饮食 / 我什么都吃
_ZH_DIET_OTHER = (
    (re.compile(r"^我(?:是|吃)?蛋奶素|^我只吃素"), "vegetarian"),
    (re.compile(r"^我(?:是)?纯素(?:食)?(?:主义)?者|^我(?:只)?吃(?:纯素|全素)(?:[。！!]|$)|"
                r"^我是(?:纯素|全素)(?:[。！!]|$)"),
     "vegan"),
    (re.compile(r"^我不吃肉[，,]?\s*(?:但|但是|可是|不过)?(?:会|还|只)?吃鱼"
                r"|^我(?:只)?吃鱼(?:虾|和海鲜)?(?:[，,]?\s*(?:但|但是|不过)?(?:不吃)(?:其他|别的)?(?:的)?肉)"),
     "pescatarian"),
    (re.compile(r"^我(?:是|吃)?(?:鱼素|海鲜素)|^我只吃鱼(?:和海鲜|和虾)?[，,]?(?:不吃)"),
     "pescatarian"),
    # (最近在搞生酮: the subject dropped after a word of time)
    (re.compile(r"^(?:我(?:现在|已经|最近|目前)*|(?:现在|已经|最近|目前)+)"
                r"(?:在|正在|开始|改成|改为|换成|转成|是)?(?:吃|搞|做)?生酮(?:饮食)?"), "keto"),
    (re.compile(r"^我(?:只|只吃|吃)(?:吃)?清真"), "halal"),
    (re.compile(r"^我(?:不吃|不能吃|只吃无)(?:含)?麸质|^我(?:吃|是)无麸质|"
                r"^我对麸质过敏[，,]\s*(?:只吃无麸质|不吃含麸质)"), "gluten-free"),
    (re.compile(r"^我(?:什么都吃|什么肉都吃|吃肉|荤素都吃|不挑食|不忌口)"
                r"(?:[，,]\s*(?:什么都吃|不吃素|无肉不欢|荤素都吃))?"
                r"(?:[。！!]|$)"),
     "not vegetarian"),
)
_ZH_ALLERGY = re.compile(r"我对(?P<v>[^，,。！!；;]{1,20})过敏")
_ZH_MY_ATTR = re.compile(r"^我(?:的|(?=最喜欢的|最爱的))(?P<attr>[^，,。！!；;是]{1,10})是"
                         r"(?P<v>[^，,。！!；;]{1,40})")
_ZH_DURABLE_ATTRS = re.compile(
    r"^(?:名字|全名|英文名|邮箱|电子邮箱|电话|手机|手机号|手机号码|生日|地址|家庭住址|老家|职业|工作|公司|"
    r"血型|母语|鞋码|时区|(?:最)?喜欢的.+|最爱的.+|常用的.+|偏好的.+|.*预算|.*目标)$"
)
_ZH_STANDING = re.compile(
    r"^(?:请)?(?:你)?(?:以后|今后|从现在(?:开始|起)|从今天(?:开始|起)|从明天(?:开始|起)|从今(?:以后|往后)|"
    r"往后|下次起|接下来(?=你|的?(?:回复|回答|对话|聊天))|"
    r"之后(?=请?你?(?:都|一律|全部|统一)|的(?:回复|回答)请?(?:你)?(?:都|一律|可以|要|多|少))|"
    # 由今日开始 (Cantonese for 从今天开始)
    r"(?:由|从)今日(?:开始|起)|由今天(?:开始|起)|"
    # From now on 都用English回复我吧: the English words in a Chinese sentence
    r"(?i:from\s+now\s+on)[,，\s]*)"
    r"(?:的(?=回复|回答|对话|聊天))?(?:你)?(?:都|请|就|也|一律)?[,，:：]?(?!会|可能|也许|的|再说)"
    r"(?P<rest>.+)$"
)
#: "from now on" after a comma, in a clause that speaks to the assistant:
#: 我在准备日语考试，以后跟我说话都用日语吧
_ZH_STANDING_MID = re.compile(
    r"[，,]\s*(?:以后|今后|从现在(?:开始|起)|往后|从今(?:以后|往后))(?:都|就|也|一律)?"
    r"(?P<rest>[^，,。！!]*(?:你|跟我|同我|给我|对我|回复|回答|称呼我|叫我|"
    # 你回答太短了，以后详细点讲: how to answer
    r"(?:详细|简短|简洁|通俗|啰嗦|短|长)一?点(?:讲|说|写|回|答)|"
    # 还是换回简体吧，以后都用简体: the script or language answers are written in
    r"用(?:简体|繁体|[\u4e00-\u9fff]{1,3}(?:文|语|話|话)))[^。！!]*)[。！!]?$")
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
        now_at = _ZH_NOW_AT.match(m["v"])
        value = _zh_value(now_at["v"] if now_at else m["v"])
        if value.endswith(("工作", "上班")):
            value = value[:-2]
        return Extracted(s, MemoryType.PROFILE, 0.85, "new_job", _slot("employer", value),
                         correction=True)
    m = _ZH_CAREER.search(s)
    if m:
        return Extracted(s, MemoryType.PROFILE, 0.85, "career_change",
                         _slot("occupation", _zh_value(m["v"])), correction=True)
    if _ZH_NOT_VEG.search(s):
        # 不再吃素了，肉也吃，但必须是清真的: meat again, only halal
        diet = "halal" if _ZH_HALAL_ONLY.search(s) else "not vegetarian"
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet_change", _slot("diet", diet),
                         correction=True)
    if _ZH_VEGAN.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "diet_change", _slot("diet", "vegan"),
                         correction=True)
    m = _ZH_BIRTHDAY.search(s)
    if m and not _ZH_FUTURE.search(s):
        return Extracted(s, MemoryType.PROFILE, 0.9, "birthday",
                         _slot("age", _zh_age(m["v"] or m["v2"])), correction=True)
    for pattern, rule in ((_ZH_MOVED, "moved"), (_ZH_SETTLED, "city"), (_ZH_LIVE_STRICT, "city")):
        m = pattern.search(s)
        value = _zh_value(m["v"] or m.groupdict().get("v2") or m.groupdict().get("v3") or "") \
            if m else ""
        if value:  # 搬回家了 / 在酒店住 name no city: nothing is read
            return Extracted(s, MemoryType.PROFILE, 0.9, rule, _slot("city", value),
                             correction=pattern is not _ZH_LIVE_STRICT or "现在" in s)
    for pattern, diet in _ZH_DIET_OTHER:  # before the allergy: 我对麸质过敏，只吃无麸质的
        m = pattern.search(s)
        if m:  # 我现在改成生酮饮食了: a change, newest wins
            return Extracted(s, MemoryType.PROFILE, 0.85, "diet", _slot("diet", diet),
                             correction=_ZH_CHANGE_ASPECT.search(m.group(0)) is not None)
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
    where = (m["v"] or m["v2"] or m["v3"]) if m else ""
    if m and not _ONE_OFF_OBJECT.match(where) and _zh_value(where) not in _ZH_PLACE_NAMES:
        return Extracted(s, MemoryType.PROFILE, 0.85, "employer",
                         _slot("employer", _zh_value(where)),
                         correction=_ZH_CHANGE_ASPECT.search(m.group(0)) is not None)
    m = _ZH_IM_A.search(s)
    if m is None:
        m = _ZH_NOW_A.search(s)
    if m:
        # 我是腾讯的工程师: the role is the occupation, the employer is read beside it
        # (zh_employer_beside_role)
        role = _ZH_ORG_ROLE.match(m["v"])
        return Extracted(s, MemoryType.PROFILE, 0.8, "occupation",
                         _slot("occupation", _zh_value(role["role"] if role else m["v"])))
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
