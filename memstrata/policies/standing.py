"""Does a statement report the user's own present state? (English and Chinese)

Recall reads a newer statement as the current value of what a question about the
present asks ("What phone am I using now?" -> "Setting up my new iPhone 15
tonight ..."). Statements close to the asked thing that do not report the user's
own state now must not be read so: someone else's change ("My dad finally got an
iPhone 15 Pro"), a plan or a wish ("Really eyeing the new MacBook Air", 有点心动),
the past ("Found my old lease from 2014", 翻到小时候的照片), a one-off ("grabbed a
day pass at a gym near the hotel", 今天下大暴雨干脆打车去的), the asked thing said to stay
as it is ("Base pay stays the same"), and a question that adopts nothing ("Is Verizon's
coverage better than T-Mobile's?").

:func:`reports_own_state` reads the statement part of a message - the question
sentences (and a question after a comma) are not what it states - and returns
``False`` when nothing is stated or a cue above is found in what is. Pure
patterns, no storage: what is read is predictable and cheap (recall reads a few
candidates per question). A person named in the question ("Which school is 朵朵
at now?") is not "someone else". Patterns read the phrasings they were written for: on
blind guard sets the reader keeps the old value first in 0.525-0.70 of cases at first
look (the ``guardN`` entries of ``benchmarks/results/knowledge_update_first_looks.json``);
a related thing of the user's own ("switched our home internet to Verizon Fios" for the
mobile carrier) is beyond it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memstrata.policies._extraction_en import _EN_OTHER_PEOPLE
from memstrata.policies._extraction_zh import _ZH_OTHER_PEOPLE, spaces_as_commas
from memstrata.policies.possessions import POSSESSIONS, names_possession
from memstrata.policies.temporal import reads_as_change

__all__ = ["OwnState", "own_state", "reads_as_own_change", "reports_own_state",
           "tells_of_own_state", "why_not_own_state"]

_CJK = re.compile(r"[\u4e00-\u9fff]")
#: sentences (the mark stays with the sentence it ends; an emoji ends one too)
_SENTENCE = re.compile(r"(?<=[?？!！.。;；])(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)"
                       r"(?<!\bSt\.)(?<!\bProf\.)\s*|\n+|\s*[\U0001F1E6-\U0001F1FF\U0001F300-\U0001FAFF"
                       r"\u2600-\u27bf]+\s*")
#: a question inside a sentence starts a question of its own ("Moved to Denver, any
#: tips?", "finally got an iPhone how do I move my chats??")
_EN_ASK_INSIDE = re.compile(
    r"(?:,|;|:|\s[-—–])\s*(?=(?:so|and|but|anyway)?\s*(?:any|what|whats|what's|how|can|could|is|"
    r"are|do|does|did|where|which|who|why|should|would|will|won['’]?t|has|have|anyone|tips|"
    r"ideas|suggestions|recommendations?)\b[^.!]*\?+\s*$)|"
    r"\s+(?=(?:what|whats|what's|how|any|anyone|tips|ideas|should\s+i|can\s+you|could\s+you|"
    r"do\s+you|is\s+(?:it|that|this|there))\b[^.!]*\?+\s*$)", re.I)
#: a sentence that opens as a question is one
_EN_ASKS = re.compile(r"^\W*(?:(?:and|so|but|also|oh|ok|okay|plus)\W+)?(?:is|are|am|do|does|did|"
                      r"can|could|would|will|should|has|have|what|whats|what's|how|which|who|"
                      r"where|why|when|any|anyone)\b", re.I)
#: ... also without its question mark, when it opens with a question word
_EN_ASKS_UNMARKED = re.compile(
    r"^\W*(?:(?:and|so|but|or|also|oh|ok|okay|btw|random\s+q\w*|real\s+talk|honestly|seriously|"
    r"srsly|quick\s+q\w*|anyway|anyways|wait|unrelated|random|hey|hmm|ngl|lol|haha|"
    r"totally\s+unrelated|(?:also\s+)?random\s+but)\W+)?"
    r"(?:whats|what['’]s|what\s+(?!a\b|an\b)|how\s+(?:do|does|can|should|long|much|many|often|"
    r"big|far|fast|soon|hard|bad|early|late|old)|"
    r"which|where|who|why|any\s+(?:tips|ideas|recs?|suggestions|advice)|"
    # "is the iphone 15 camera actually better than mine or is that just marketing"
    r"(?:is|are|does|do|can|should)\b(?=.*\b(?:or|worth)\b)|"
    # the other half of an alternative question: "... than the others? or is it all bad"
    r"(?<=or\s)(?:is|are|was|were|do|does|did|should|would|will|can|could)\b|"
    # "also is it normal for a fridge to hum at night"
    r"is\s+(?:it|that|this)\s+(?:normal|ok|okay|safe|bad|weird|possible|true|fine|common)\b)\b",
    re.I)
#: a lead-in before a question: "Quick one: would an iPhone 15 Pro be ...?"
_EN_ASK_LEAD = re.compile(r"\W*(?:(?:ok|okay|so|hey|hi|also)\W+)?(?:quick|random|real|honest|"
                          r"dumb|stupid|silly|weird|serious)\s+(?:one|q|qn|question|thing)\W*",
                          re.I)
#: a word that makes a sentence ending in "?" a question
_EN_ASK_WORD = re.compile(r"\b(?:what|whats|how|why|which|who|where|when|any|anyone|anything|"
                          r"should|could|would|can|do\s+you|does|is\s+(?:it|that|this|there)|"
                          r"isn['’]t|right|or|ok|okay|yeah|huh|really|tips|ideas)\b", re.I)
#: a request states nothing ("Can you help me ...", 帮我做个计划)
_EN_REQUEST = re.compile(r"^\W*(?:can|could|would)\s+you\b|^\W*(?:please|help\s+me)\b|"
                         # "tell me a joke about penguins", "recommend a podcast"
                         r"^\W*(?:(?:tell|give|show|teach|send|find|get)\s+me|recommend|suggest|"
                         r"explain|compare|translate|summari[sz]e|draft|describe)\b|"
                         r"\bout\s+of\s+curiosity\b|^\W*(?:just\s+)?curious\b|\bjust\s+reading\s+(?:about|up\s+on)\b|"
                         r"\b(?:got|just|am|i['’]m)\s+curious\b|\bjust\s+wondering\b|"
                         r"^\W*(?:just\s+)?(?:curious|wondering|asking)\b|"
                         r"\bjust\s+(?:doing\s+(?:some\s+|a\s+bit\s+of\s+)?research|researching|"
                         r"browsing|comparing|looking\s+around)\b|"
                         # hearsay and reviews read: "a friend swears the viola is easier",
                         # "seen some crazy reviews"
                         r"^\W*(?:a|my|some)\s+(?:friend|coworker|colleague|buddy|guy)\s+(?:at\s+\w+\s+)?"
                         r"(?:swears|says|said|told\s+me|thinks|reckons|keeps\s+saying)\b|"
                         r"\b(?:seen|read|heard)\s+(?:some|a\s+lot\s+of|mixed|crazy|good|bad|great)\s+"
                         r"(?:\w+\s+)?(?:reviews|things|stuff)\b", re.I)
_ZH_REQUEST = re.compile(r"随便问|隨便問|好奇|(?:就是|只是)问问|(?:就是|只是)問問|了解一下行情|"
                         r"^(?:你)?(?:帮|幫|麻烦|麻煩|请|請|能不能|可以帮|可不可以|推荐|推薦)|"
                         # 给我讲个冷笑话吧: a request without 帮
                         r"^(?:你)?(?:给|給|跟|和)我(?:讲|講|说|說|来|來|推荐|推薦|想|写|寫|列|找|"
                         r"介绍|介紹|出|比较|比較|对比|對比)|"
                         # 简单说说, 两句话解释一下, 出个脑筋急转弯给我猜猜
                         r"(?:说说|說說|讲讲|講講|解释一下|解釋一下|介绍一下|介紹一下)$|"
                         r"^(?:来|來|出)(?:个|個|一个|一個|道)|给我猜猜|給我猜猜|"
                         # small talk: 今天天气真好, 周末愉快！, 早上好
                         r"^(?:今天|今儿|今兒|最近)?(?:的)?天气(?:真|好|不错|不錯)|^(?:天氣)(?:真|好)|"
                         r"^(?:周末|週末|节日|節日|新年|春节|春節|中秋|国庆|國慶)?(?:快乐|快樂|愉快)|"
                         r"^(?:早上好|早安|晚安|你好|哈喽|哈囉|嗨)")
_ZH_CLAUSE = re.compile(r"[，,、：:～~]")
#: a clause that asks without a question mark (地球到月亮有多远, 哪个补贴多) - not a word
#: of "any" (什么都吃, 谁都知道, 怎么都行)
_ZH_ASKS_UNMARKED = re.compile(
    r"哪(?!怕|儿都|里都|都)|多少(?!有点|还是)|多远|多长|多久|"
    r"(?<![那这好十前后上])几(?:个|种|次|点|月|年|天|岁|号)|"
    r"什么(?!都|也)|啥(?!都|也)|为什么|为啥|怎么(?!都|也|办)|怎样|如何|谁(?!都|也)|是不是|有没有|"
    # (靠谱吗还是坑: a question that runs on into its other half)
    r"到底|[吗嗎](?=还是|還是)")
_ZH_QUOTED = re.compile(r"「[^」]*」|“[^”]*”|『[^』]*』")
#: the lead-in of a comparing question (跟Apple Watch比，哪个更准？)
_ZH_COMPARED = re.compile(r"^(?:跟|和|与|與|同).{1,20}?(?:比|相比|比起来|比起來)$")
_EN_CLAUSE = re.compile(r"\s*[,;:—–]\s*|\s+-\s+|\s+(?:but|and|so|because|since|after)\s+|"
                        r"(?<!\bback)\s+when\s+",
                        re.I)

#: someone else as the subject ("My dad finally caved and got ...", "My husband just
#: signed up ...") of a statement with no "I" or "we" in it
_EN_OTHER = re.compile(
    rf"^\W*(?:so|and|oh|ok|lol|ugh|welp)?\W*(?:(?:my|our|a|an|the|(?-i:[A-Z])\w+['’]s)\s+(?:\w+\s+)?)?"
    rf"(?:{_EN_OTHER_PEOPLE}|brother-in-law|sister-in-law|in-laws|teammate|classmate|"
    rf"buddy|bestie|best friend|coworkers|colleagues|friends)(?:['’]s)?\b|"
    # "Marco from my running club", "Dana from book club" - not "Jess from Salon Verde"
    rf"^\W*(?-i:[A-Z][a-z]+)\s+(?:(?:from|at)\s+(?:my|our)\s+\w+|from\s+(?-i:[a-z])\w+)|"
    rf"^.{{0,40}}?\bhelp(?:ed|ing)\s+(?:my|our)\s+(?:\w+\s+)?(?:{_EN_OTHER_PEOPLE})\b|"
    rf"^\W*(?:half\s+(?:of\s+)?(?:my|our|the)\s+\w+|everyone|everybody|people|"
    rf"all\s+my\s+(?:friends|coworkers|colleagues|kids|family))\b", re.I)
#: a lead-in before the news: "Big news at lunch today", "Fun fact", "Guess what"
_EN_LEAD_IN = re.compile(r"^\W*(?:(?:so|ok|okay|well|haha|lol|oh)\W+)*(?:big|crazy|fun|sad|good|"
                         r"bad|wild|funny|random|quick|small|little)\s+(?:news|update|fact|"
                         r"story|thing)\b|^\W*guess\s+what\b", re.I)
#: someone else as the subject further in: "my dad finally ditched", "my sister just got"
_EN_OTHER_INSIDE = re.compile(
    rf"\b(?P<who>(?:my|our)\s+(?:{_EN_OTHER_PEOPLE}|buddy|bestie|best friend|neighbou?r))\s+"
    r"(?:(?:\w+\s+)?(?:finally|just|also|recently|officially)\s+)?(?:\w+ed|got|went|took|"
    r"bought|left|made|became|quit|is|has)\b", re.I)
_ZH_I = re.compile(r"我")
_ZH_LEAD_IN = re.compile(r"(?:跟你|和你)?说(?:个|件)事(?:儿)?|告诉你(?:个|件)?(?:事|好消息|消息)?|"
                         r"话说|对了|哈哈+|唉|诶|欸|天哪|我跟你说|好消息|坏消息|八卦一下|"
                         r"说真的|說真的|讲真|講真|真的|"
                         # 问一下，移动的号码出国漫游一天大概多少钱？
                         r"(?:问|問|请教|請教)一?下|请问|請問|想问(?:一?下)?|想問(?:一?下)?")
#: the user as the subject, not as an object (让我教他, 跟我们一起住)
_ZH_I_SUBJECT = re.compile(r"(?<![让讓叫给給帮幫教陪跟和与與同替为為])我(?!的)")
#: kinship words that name the same people
_ZH_KIN = {"爸妈": "父母", "爸媽": "父母", "老公": "丈夫", "老婆": "妻子", "爱人": "妻子",
           "愛人": "妻子", "孩子": "儿子", "小孩": "儿子"}


def _zh_kin(text: str) -> str:
    for word, same in _ZH_KIN.items():
        text = text.replace(word, same)
    return text

_EN_I = re.compile(r"\b(?:i|i['’](?:m|ve|d|ll)|we|we['’](?:re|ve|d)|us)\b", re.I)
#: the user in a clause, as its subject or as an owner ("my new Subaru")
_EN_MINE = re.compile(r"\b(?:i|i['’](?:m|ve|d|ll)|im|ive|we|we['’](?:re|ve|d)|us|my|our|me|mine)\b|"
                      # the user's "I" dropped before a verb of a past act: "Dropped Spanish"
                      r"^\W*(?:(?:just|finally|officially|recently)\s+)?(?:\w+ed|got|sold|bought|"
                      r"took|left|made|became|began|quit|switched|started|joined|set)\b", re.I)
#: a plan, a wish, a consideration, an offer not taken
_EN_PLAN = re.compile(
    r"\b(?:eyeing|eying|daydream\w*|thinking\s+(?:about|of)|considering|tempted|might|"
    # ("i understood maybe 40% of the acronyms": about so many, no plan)
    r"maybe(?!\s+(?:like\s+|around\s+|about\s+)?(?:\d|half\b|a\s+(?:third|quarter|dozen|couple)\b))|"
    r"perhaps|wondering\s+(?:if|whether)|would\s+(?:love|like)|hoping|hope\s+to|"
    r"planning|(?:i|we)\s+plan\s+to|plan\s+on|someday|one\s+day|i\s+wish|wishing|debating|"
    r"on\s+the\s+fence|(?:haven['’]t|not)\s+(?:answered|decided|replied|committed)|"
    r"not\s+sure\s+(?:if|whether|yet)|recruiter|reached\s+out|got\s+an?\s+(?:\w+\s+)?offer|"
    r"if\s+(?:i|we)\s+(?:ever\b|(?:get|got|take|took|move|moved|switch|switched|buy|bought|go|"
    r"went|join|end\s+up))|not\s+sure\b|not\s+(?:switching|changing|moving|leaving|quitting|buying)|"
    r"looking\s+(?:at|into)|shopping\s+(?:for|around)|in\s+the\s+market\s+for|"
    r"next\s+(?:year|month|summer|spring|fall|winter)|going\s+(?:camping|hiking|skiing)|"
    r"heard|rumou?r|holding\s+off|hold\s+off|not\s+until|"
    r"i['’]?d\s+(?:probably|maybe|likely|definitely|happily)|ever\s+(?:drops|goes|gets|comes)|"
    r"(?:i['’]ll|i['’]d|i\s+will|i\s+would)\s+think\s+about\s+it|toying\s+with|the\s+idea\s+of|"
    r"weighing|toured|touring|open\s+house|not\s+sure\s+i\s+could)\b",
    re.I)
#: the past, not the present: a memory, an old document, childhood
_EN_PAST = re.compile(
    r"\b(?:back\s+(?:then|when|in\s+(?:\d{4}|the\s+day|college|school|high\s+school|uni))|"
    r"(?<!\bnot\s)(?<!\bget\s)(?<!\bgot\s)(?<!getting\s)(?<!\bbe\s)(?<!\bam\s)(?<!['’]m\s)(?<!still\s)"
    r"(?<!than\s)(?<!where\si\s)(?<!what\si\s)(?<!who\si\s)used\s+to|"
    r"as\s+a\s+(?:kid|child|teen)|when\s+i\s+was|growing\s+up|childhood|(?:in|since|during|my)\s+high\s+school|"
    r"years\s+ago|how\s+long\s+ago|from\s+(?:19\d\d|20[01]\d)|my\s+very\s+first|(?:found|dug\s+up|came\s+across)\s+(?:my|an|some|the)\s+"
    r"(?:very\s+)?(?:old|first)|i\s+was\s+(?:\d{1,2}|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen)\b|"
    r"random\s+memory|remember\s+(?:when|in|back|how)|nostalgi\w*|"
    r"(?:in|during|at)\s+(?:college|uni|university|grad\s+school)|miss\s+my\s+old|in\s+(?:19\d\d|20[01]\d)|back\s+at|"
    r"at\s+my\s+(?:old|previous|former)\s+\w+|(?:going|went|looking|looked)\s+through\s+"
    r"(?:some\s+|my\s+|the\s+)?old|when\s+(?:she|he|they)\s+(?:was|were)|"
    # (a "when" is a clause break: "from when I was a kid" leaves "I was a kid")
    r"i\s+was\s+(?:a\s+)?(?:kid|child|teen\w*|little|baby)|at\s+(?:age|the\s+age\s+of)\s+\w+|"
    r"(?:photo|picture|pic)\s+of\s+(?:me|us)\b)\b", re.I)
#: once, or for a while, standing in for the usual
_EN_ONE_OFF = re.compile(
    r"\b(?:day\s+pass|guest\s+pass|trial\s+(?:class|pass|session)|drop-?in|for\s+the\s+"
    r"(?:trip|weekend|week|day)|(?:on|during)\s+(?:a|my|the|this)\s+(?:\w+\s+)?trip|"
    r"while\s+(?:mine|my\s+\w+|i['’]m\s+away)|while\s+(?:\w+\s+){1,3}(?:is|are)\s+(?:away|out|off|"
    r"on\s+leave|on\s+vacation)|(?:free\s+)?(?:\d+-\w+\s+)?trial|replacement\s+(?:bus|shuttle|"
    r"service)|that\s+day|in\s+the\s+meantime|temporarily|"
    r"filling\s+in|covering\s+for|stand-?in|substitute|loaner|rental|rented|borrowed|"
    r"(?:was|were|ran)\s+out\s+of|had\s+to\s+(?:get|take|grab|use|borrow)|"
    r"(?:in|to\s+work|to\s+the\s+office)\s+(?:today|this\s+morning)|"
    r"for\s+the\s+next\s+(?:few|couple\s+of|\d+|two|three|four)\s+(?:days|weeks)|"
    r"until\s+i\s+get\s+(?:it|mine|\w+\s+\w+)\s+back|"
    r"borrowing|just\s+(?:this|for)\s+(?:once|today|tonight)|this\s+once|one-?off|one[- ]time|"
    r"urgent\s+care|walk-?in\s+clinic|(?:instead\s+of|couldn['’]t\s+get\s+(?:in|into)\s+(?:with|at)|"
    r"couldn['’]t\s+get\s+an?\s+appointment\s+(?:with|at))\s+(?:my|the)\s+usual|"
    r"since\s+(?:mine|my\s+usual|my\s+regular)\s+(?:was|is)\s+closed|"
    r"(?:mine|my\s+(?:usual|regular)(?:\s+\w+)?)\s+(?:was|is|were)\s+(?:closed|shut|booked|full)|"
    r"(?:is|are|was|were)\s+(?:out\s+)?on\s+(?:vacation|leave|holiday)|fill-?in|"
    # "it's at the repair shop and IT handed me a beat-up Dell Latitude" (not "IT handed me
    # a MacBook Pro yesterday": a work laptop is the user's)
    r"(?:is|was|['’]s)\s+(?:at|in)\s+the\s+repair\s+(?:shop|center|centre)|"
    r"should\s+be\s+(?:fine|back|better|fixed|sorted)(?:\s+to\s+normal)?\s+by|"
    # "In Chicago for a work conference till Friday"
    r"(?:in|to)\s+\w+\s+for\s+(?:work|business|an?\s+(?:\w+\s+)?(?:conference|summit|offsite|"
    r"workshop|trade\s+show|wedding|funeral))|(?:is|was|['’]s)\s+(?:at|in)\s+the\s+(?:shop|dealership|dealer|garage|mechanic)|"
    r"courtesy\s+(?:car|vehicle)|being\s+(?:repaired|fixed|serviced)|to\s+get\s+around\s+in|"
    # a trip booked ("booked 10 days in japan for april"); a thing work hands out for work
    # ("Work just handed me a Samsung Galaxy S23 for on-call stuff")
    r"booked\s+(?:\w+\s+){0,2}(?:days?|nights?|weeks?)\s+in|"
    r"work\s+(?:just\s+)?(?:gave|handed|issued|lent)\s+me|(?:work|company)[-\s]issued|"
    r"for\s+(?:the\s+)?on-?call|"
    r"(?:\d+|two|three|four|one)-(?:day|week)\s+"
    r"(?:camp|course|trial|program)|summer\s+camp|this\s+summer)\b", re.I)

#: the asked thing said to stay as it is ("Base pay stays the same, sadly")
_EN_SAME = re.compile(r"\b(?:stays?|stayed|remains?|remained|is\s+still)\s+the\s+same\b|"
                      r"\bunchanged\b", re.I)
_ZH_SAME = re.compile(r"(?:还是|依然|仍然|照旧)(?:老样子|一样|没变)|没(?:有)?变(?!成|了)|不变")
#: the new thing said to be apart from the user's own ("a brokerage account ..., totally
#: separate from my everyday banking", 报了个周末瑜伽课 跟健身房是两码事): it leaves that unchanged
_EN_APART = re.compile(r"\b(?:separate|different)\s+from\s+my\b|\bnot\s+replacing\s+my\b|"
                       r"\b(?:just|only|strictly)\s+for\s+(?:savings|retirement|emergencies|"
                       r"travel)\b|"
                       # "signed up for starlink for the cabin up north": a second place's
                       r"\bfor\s+(?:the|our|my)\s+(?:cabin|cottage|lake\s+house|beach\s+house|"
                       r"vacation\s+home|second\s+home|holiday\s+home|rv|camper|boat)\b", re.I)
#: (今天去建行开了个户 专门存定期的: an account kept for one purpose)
#: a decision still pending, on whatever the text offers (楼下联通的业务员说可以免费给我装千兆 …
#: 我还没答应; "they offered me fiber, haven't said yes yet"): nothing changed
_EN_PENDING = re.compile(r"\bhaven['’]?t\s+(?:decided|said\s+yes|signed|committed|agreed)\b|"
                         r"\bstill\s+(?:deciding|on\s+the\s+fence)\b", re.I)
_ZH_PENDING = re.compile(r"还没(?:决定|想好|答应|同意|签)|還沒(?:決定|想好|答應|同意|簽)|"
                         r"没答应|沒答應")
#: (只用来 is said of the old one as often: 招行那张卡我以后基本就只用来还信用卡)
_ZH_APART = re.compile(r"两码事|兩碼事|不是一回事|"
                       r"专门(?:用来|拿来|用于|存|放)|專門(?:用來|拿來|用於|存|放)")

_ZH_OTHER = re.compile(rf"^(?:我(?:的|家)?)?(?:大学|高中|以前的|前)?(?:{_ZH_OTHER_PEOPLE})|"
                       # a colleague by name: 同组的小周, 隔壁部门的老王
                       r"^(?:我们?)?(?:同组|组里|隔壁组|部门里?|隔壁部门|公司里?|单位里?|班上|"
                       r"同組|組裡|隔壁組|部門裡?|隔壁部門|公司裡|單位裡?)的[\u4e00-\u9fff]{1,3}?"
                       r"(?=刚|剛|已经|已經|也|被|跳槽|换|換|搬|买|買|去|调|調)")
_ZH_PLAN = re.compile(
    r"(?<![不理会會联聯])想(?!问|請教|请教|了解|知道|着|著|象|像|到|起|法|想|必)|打算|考虑|考慮|心动|心動|"
    r"犹豫|猶豫|要不要|(?<!在)准备|(?<!在)準備|计划|計劃|可能|也许|也許|如果|要是|希望|纠结|糾結|种草|種草|"
    r"看上了|看中了|惦记|有意|还没(?:决定|想好|回复|答应)|還沒(?:決定|想好|回覆|答應)|猎头|獵頭|"
    r"邀请我|挖我|明年|下个?月(?!开始|開始|起)|下個?月(?!开始|開始|起)|听说|聽說|听人说|聽人說|"
    r"据说|據說|真的假的|"
    # an offer declined, a condition
    r"婉拒|拒绝了|回绝|推掉了|没(?:有)?接受|的话|估计得|再说|不划算|不值得")
_ZH_PAST = re.compile(
    r"那时候?|那時候?|那会儿|小时候|小時候|(?<![比没沒])以前|從前|从前|当年|當年|翻到|翻出|回忆|回憶|"
    r"想起|上学时|读书时|大学时|大學時|曾经|曾經|老照片|毕业照|畢業照|十年前|几年前|幾年前|"
    r"小学时|中学时|那几年|那些年|那阵子|那段时间")
_ZH_ONE_OFF = re.compile(
    r"临时|臨時|暂时|暫時|借(?:了|的|来)|借(?:我|朋友|同事|别人|別人)[^，,。！!]{0,6}?的|"
    r"(?:拿|送)去?修|在修|维修中|維修中|租了?一?(?:辆|輛|天|周)|体验课|體驗課|"
    r"一日卡|次卡|代课|代課|代班|顶班|頂班|替班|休假|休年假|请假|請假|出差|旅游|旅遊|旅行|支援|凑合|湊合|将就|將就|"
    r"奢侈一回|奢侈一次|破例|难得一次|難得一次|体验卡|體驗卡|体验会员|試用|试用|纯属|純屬|"
    r"陪(?:她|他|室友|朋友|同事|家人|老婆|老公|闺蜜|閨蜜)(?:一起)?(?:搞|试|試|吃|练|練|玩|喝)|"
    r"[一二三四五六七八九十\d]+天(?:会员|體驗|体验|试用)|卖完|賣完|售罄|没货|沒貨|缺货|缺貨|断货|斷貨|"
    r"今天(?=[^，,。！!]*?(?:下雨|暴雨|堵|晚了|来不及|來不及|关门|關門|休息|没开|沒開|排队|排隊|故障|"
    r"坏了|壞了|停运|停運))|只好|只能先|只能(?:打车|打的|坐|骑|走路|借)|"
    r"(?:这周|這週|这几天|這幾天)[^，,。！!]*?(?:施工|停运|停運|故障|坏了|壞了)|"
    # sent to a client's site, a thing the company hands out for work
    r"驻场|駐場|借调|借調|派驻|派駐|被派到|公司给(?:我)?(?:开|办)(?!公)了?|公司給(?:我)?(?:開|辦)(?!公)了?|"
    r"工作号|工作號|工作手机|工作手機|企业邮箱|企業郵箱|工作邮箱|工作郵箱")
#: a change of the user's own state the general reader (``reads_as_change``) does not
#: list: a new purchase, a new car picked up, a number moved to
_OWN_CHANGE = re.compile(
    r"\b(?:first\s+(?:day|week|month)\s+(?:at|as|on|with)|took\s+over|as\s+of|"
    r"bumped\s+(?:me|us)\s+to|starting\s+(?:this|next)|finally\s+(?:caved|got|switched)|"
    r"(?:dropped|ditched)\s+(?!to\b)\w+|put\s+\w+\s+on\s+hold)\b|"
    r"新买|新買|新入手|刚买|剛買|入手了|提车|提車|提了(?=一?(?:辆|輛|台|新车|新車))|转网|轉網|转给|轉給|转学|轉學|报了|報了|"
    r"退休了|调去|調去|调到|調到", re.I)


#: words of change that state none: a "now" for the time being ("Just a thought for now",
#: "right now"), of a comparison or a reason (不如现在的好, 毕竟现在团队氛围挺好的), of what is
#: lost since ("now I can barely remember a scale", 现在连和弦都忘了); a thing left somewhere
#: ("Left my charger at my parents' place")
_NOT_A_CHANGE = re.compile(r"\b(?:for|right)\s+now\b|\bleft\s+my\s+\w+\s+(?:at|in|on)\b|"
                           r"\bnow\s+i\s+(?:can\s+)?(?:barely|hardly|can['’]t\s+even)\b|"
                           r"(?:不如|比|毕竟|畢竟)(?:现在|現在)|(?:现在|現在)(?:连|連).*|"
                           # the team as it is (舍不得现在的团队), a guess or a rumour now
                           # (现在估计早就关门了吧, 目前还只是传言), 受不了了
                           # a memory kept to this day (那个香味到现在都记得)
                           r"到(?:现在|現在)|至今|"
                           # a thought given up (不过先不想了) changes nothing
                           r"(?:先)?不(?:想|打算|考虑|考慮)了|算了|"
                           r"(?:现在|現在)的|(?:现在|現在|目前)(?:估计|估計|应该|應該|可能|还只是|"
                           r"還只是)|受不了了", re.I)


#: what an English question takes for granted the user has: a thing named by its make or
#: model ("how do i get my macbook air to stop dimming", "my iphone 15 can't record
#: calls??"), the user's home in a city ("from my place in seattle to seatac"), a
#: language teacher ("my japanese tutor explained it twice") - not a common noun ("my
#: arches", "my street") nor something past ("my old iphone")
_EN_PRESUPPOSED = re.compile(
    r"\bmy\s+(?:new\s+|current\s+)?(?:"
    r"(?:iphone|ipad|macbook|imac|mac\s+mini|pixel|galaxy|thinkpad|chromebook|kindle|airpods|"
    r"apple\s+watch|fitbit|garmin|playstation|ps5|xbox|switch\s+oled|tesla|prius|civic|corolla|"
    r"camry|outback|forester|rav4|cx-\d+|model\s+[3sxy])\b(?:\s+(?:\d+\w*|pro|max|air|plus|"
    r"mini|ultra|se))*"
    r"|(?:place|apartment|apt|flat|house|condo)\s+(?:here\s+)?in\s+[a-z][\w-]+"
    r"|(?:japanese|spanish|french|german|italian|korean|mandarin|chinese|portuguese|arabic|"
    r"russian|dutch|greek|hindi|turkish|polish|swedish)\s+(?:tutor|teacher|class|classes|"
    r"lessons?|course)"
    r"|(?-i:[A-Z][\w-]*[a-z][\w-]*)(?:\s+(?-i:[A-Z0-9][\w-]*))*(?=\s+[a-z])"
    r")", re.I)
_EN_NOT_PRESUPPOSED = re.compile(r"\b(?:if|would|should\s+i|thinking|worth|vs|versus|or)\b|"
                                 r"\bmy\s+(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|"
                                 r"Sunday|January|February|March|April|May|June|July|August|"
                                 r"September|October|November|December|Christmas)\b", re.I)


def _presupposed(sentence: str) -> list[str]:
    """The user's own things an English question takes for granted (see
    :data:`_EN_PRESUPPOSED`), as clauses of their own; none in a question that weighs or
    supposes ("would my civic fit ...", "is it worth ...")."""
    if _EN_NOT_PRESUPPOSED.search(sentence):
        return []
    return [m.group(0) for m in _EN_PRESUPPOSED.finditer(sentence)]


def _statement_part(text: str) -> list[list[str]]:
    """What ``text`` states, as the clauses of each sentence that states something: its
    sentences that are not questions or requests (a question inside a sentence dropped
    from it; in Chinese, the question clause of a sentence)."""
    kept: list[list[str]] = []
    for sentence in _SENTENCE.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        if _CJK.search(sentence):
            # a quotation states nothing of the user's (「三人行，必有我师焉」出自哪里？);
            # spaces typed for commas part clauses (我表姐刚搬去成都了 天天给我发火锅照片)
            sentence = spaces_as_commas(_ZH_QUOTED.sub("", sentence))
            clauses = [c.strip() for c in _ZH_CLAUSE.split(sentence) if c.strip()]
            if sentence.endswith(("?", "？")) or re.search(r"[吗嗎呢]\W*$", sentence):
                clauses = [c for c in clauses[:-1] if not _ZH_COMPARED.match(c)]
            else:
                clauses = [c for c in clauses if not _ZH_ASKS_UNMARKED.search(c)]
            # the other half of an alternative question (…强很多吗？还是纯营销), a lead-in alone
            clauses = [c for c in clauses if not re.match(r"还是|還是", c)
                       and not _ZH_LEAD_IN.fullmatch(c)]
            # a request goes on to the end of its sentence (帮我想一个桌游，适合四五个人玩)
            asked = next((i for i, c in enumerate(clauses) if _ZH_REQUEST.search(c)), None)
            kept.append(clauses if asked is None else [
                c for c in clauses[:asked] if not _ZH_REQUEST.search(c)])
            continue
        if not sentence.endswith("?") and _EN_ASKS_UNMARKED.search(sentence):
            # "whats a decent squat substitute when theres no rack free" (what it takes for
            # granted is stated: "how do i get my macbook air to stop dimming ...")
            kept.append(_presupposed(sentence))
            continue
        if len(re.findall(r"\w+", sentence)) < 2:
            continue  # "idk.", "lol"
        if sentence.endswith("?"):
            if _EN_ASKS.search(sentence):
                kept.append(_presupposed(sentence))
                continue
            head = _EN_ASK_INSIDE.split(sentence, maxsplit=1)
            if len(head) < 2:
                # a short rhetorical tail ("... I'm all in on the Blades now, Arsenal who?")
                tail = re.split(r",\s+(?=[^,]*\?+\s*$)", sentence)
                if len(tail) == 2 and len(tail[1].split()) <= 3 and len(tail[0].split()) >= 4:
                    head = tail
            if len(head) < 2 and not _EN_ASK_WORD.search(sentence) and (
                    _EN_MINE.search(sentence) or _EN_PLAN.search(sentence)):
                # a statement with a mark of surprise: "my skin is so much better??"
                head = [sentence.rstrip("?"), ""]
            # ("And how does it compare?": a conjunction alone states nothing, nor "Quick
            # one:" before the question)
            if len(head) < 2 or len(re.findall(r"\w+", head[0])) < 2 or _EN_ASK_LEAD.fullmatch(
                    head[0].strip()):
                continue
            sentence = head[0]
        if _EN_REQUEST.search(sentence):
            continue
        kept.append([c for c in _EN_CLAUSE.split(sentence) if c.strip()])
    return [clauses for clauses in kept if clauses]


def why_not_own_state(text: str, question: str = "") -> str | None:
    """Why ``text`` does not report the user's own present state (``None`` when it
    does): ``"question"`` (nothing stated), ``"someone else"``, ``"plan"``,
    ``"past"``, ``"one-off"`` or ``"unchanged"``. ``question`` is what the user asked: a
    person it names is not someone else. A cue does not count against a clause free of cues
    that reads as a change ("Got offered a secondment in Lisbon, so I've dropped
    Italian and started Portuguese")."""
    return own_state(text).why_not(question)


@dataclass(frozen=True, slots=True)
class OwnState:
    """What :func:`why_not_own_state` reads of a text before any question is asked, so
    it can be read once (when a memory is written) and asked again for every question
    without reading the text: whether anything is ``stated``, someone else as the subject
    (``other``: ``""``, ``"zh"`` or ``"en"``, with what a question must name to ask about
    them - for Chinese the kinship word and the two characters after it, for English the
    person's word and the name after it, casefolded) and the reason the cues give
    (``cue``) when that person is asked about or none is the subject."""

    stated: bool
    other: str = ""
    named: tuple[str, str] = ("", "")
    cue: str | None = None

    def why_not(self, question: str = "") -> str | None:
        """:func:`why_not_own_state` of the text for ``question``."""
        if not self.stated:
            return "question"
        first, second = self.named
        if self.other == "zh" and first not in _zh_kin(question) and second not in question:
            return "someone else"
        if self.other == "en":
            asked = question.casefold()
            # (chat shorthand: "my bf daniel" for "my boyfriend")
            if not ((first and re.search(rf"\b{re.escape(first)}", asked))
                    or (second and re.search(rf"\b{re.escape(second)}\b", asked))):
                return "someone else"
        return self.cue

    def to_stored(self) -> list[Any]:
        """A JSON list (stored with a memory)."""
        return [self.stated, self.other, *self.named, self.cue]

    @classmethod
    def from_stored(cls, raw: Any) -> OwnState | None:
        """The :class:`OwnState` :meth:`to_stored` gave, ``None`` for anything else."""
        if not (isinstance(raw, list) and len(raw) == 5 and isinstance(raw[0], bool)
                and raw[1] in ("", "zh", "en") and isinstance(raw[2], str)
                and isinstance(raw[3], str) and (raw[4] is None or raw[4] in _REASONS)):
            return None
        return cls(raw[0], raw[1], (raw[2], raw[3]), raw[4])


#: the reasons :func:`why_not_own_state` gives after the subject is read
_REASONS = frozenset({"plan", "past", "one-off", "unchanged"})


def own_state(text: str) -> OwnState:
    """The :class:`OwnState` of ``text``: :func:`why_not_own_state` without the question."""
    sentences = _statement_part(text)
    clauses = [c for sentence in sentences for c in sentence]
    if not clauses:
        return OwnState(stated=False)
    stated = " ".join(clauses)
    zh = _CJK.search(stated) is not None
    other_lang, named = "", ("", "")
    if zh:
        # (跟你说个事，我表弟上周辞职去深圳了: the lead-in is not the subject)
        lead = next((c for c in clauses if not _ZH_LEAD_IN.fullmatch(c)), clauses[0])
        other = _ZH_OTHER.search(lead)
        if other is not None and not _own_part(clauses[clauses.index(lead):], _ZH_I_SUBJECT,
                                               rest=lead[other.end():]):
            other_lang = "zh"
            named = (_zh_kin(other.group(0).lstrip("我的家")), lead[other.end():other.end() + 2])
        cues = (("plan", _ZH_PLAN), ("past", _ZH_PAST), ("one-off", _ZH_ONE_OFF),
                ("unchanged", _ZH_SAME))
    else:
        # a lead-in is not the subject ("Well, my sister finally did it", "Crazy news: my
        # coworker's landlord ..."): the first clause of three words or more, or naming someone
        lead = next((c for c in clauses if _EN_OTHER.search(c) or (
            len(c.split()) >= 3 and not _EN_LEAD_IN.match(c))), clauses[0])
        other = _EN_OTHER.search(lead)
        who, end = (other.group(0), other.end()) if other is not None else ("", 0)
        inside = _EN_OTHER_INSIDE.search(lead) if other is None else None
        if inside is not None and not _EN_I.search(lead[:inside.start()]):
            # "after like 30 years my dad finally ditched his old barber": a relative as the
            # subject further in, with no "I" before
            who, end = inside["who"], inside.end("who")
        if who and not _own_part(clauses[clauses.index(lead):], _EN_I, rest=lead[end:]):
            other_lang, named = "en", _naming(who, lead[end:])
        cues = (("plan", _EN_PLAN), ("past", _EN_PAST), ("one-off", _EN_ONE_OFF),
                ("unchanged", _EN_SAME))
    return OwnState(stated=True, other=other_lang, named=named,
                    cue=_cue_reason(stated, sentences, clauses, zh, cues))


def _cue_reason(stated: str, sentences: list[list[str]], clauses: list[str], zh: bool,
                cues: tuple[tuple[str, re.Pattern[str]], ...]) -> str | None:
    """The reason the cues of a statement give (:func:`why_not_own_state` once the
    subject is the user's, or someone the question asks about)."""
    if (_ZH_APART if zh else _EN_APART).search(stated):
        return "unchanged"
    if (_ZH_PENDING if zh else _EN_PENDING).search(stated):
        return "plan"
    found = next((name for name, cue in cues if cue.search(stated)), None)
    if found is None:
        return None
    # a cue after the first clause of the same sentence qualifies what that clause states
    # (我在学日语，准备今年十二月考N2); one in a later sentence does not ("We toured
    # Westbrook Academy on Saturday. ... Still just weighing options")
    # (Chinese runs clauses on past a full stop as often: there, every later clause)
    first = clauses if zh else sentences[0]
    later = clauses[len(first):]
    # (not one that describes a name in the clause: "an appointment card from Dr. Kaplan,
    # the dentist I used to see")
    if len(first) > 1 and not any(cue.search(first[0]) for _, cue in cues) \
            and (_ZH_I if zh else _EN_I).search(first[0]) \
            and (zh or not re.match(r"\W*(?:the|a|an|who|whom|which|whose)\b", first[1], re.I)) \
            and not any(cue.search(c) for _, cue in cues for c in later):
        return None
    # a clause of the user's, free of cues, that reads as a change states one ("The strings
    # are completely rusted now" is no change of the user's; Chinese drops its 我) - not
    # after a first clause that gives a one-off as its reason (今天早上瑞幸的椰浆卖完了，店员
    # 推荐我换了杯燕麦拿铁)
    one_off = _ZH_ONE_OFF if zh else _EN_ONE_OFF
    if not one_off.search(clauses[0]) and any(
            not any(cue.search(c) for _, cue in cues) and (zh or _EN_MINE.search(c))
            and (reads_as_change(_NOT_A_CHANGE.sub(" ", c)) or _OWN_CHANGE.search(c))
            for c in clauses):
        return None
    return found


def _own_part(clauses: list[str], first_person: re.Pattern[str], *, rest: str) -> bool:
    """Does the user take part in a statement that opens with someone else: as a
    subject beside them in the first clause ("My wife and I moved"), or in a later
    clause that states a change ("... so we moved there too")? Not by a clause that
    only comments ("We're celebrating tonight", 我过年去看她)."""
    if first_person.search(rest):
        return True
    return any(first_person.search(c) and (reads_as_change(c) or _OWN_CHANGE.search(c))
               for c in clauses[1:])


def reads_as_own_change(text: str) -> bool:
    """Does ``text`` read as a change of state - the general reader's list
    (:func:`~memstrata.policies.temporal.reads_as_change`) or one of the user's own
    changes it does not list (a new purchase, a car picked up, 调到风控组)?"""
    return reads_as_change(text) or _OWN_CHANGE.search(text) is not None


def reports_own_state(text: str, question: str = "") -> bool:
    """Does ``text`` report the user's own present state - not someone else's, a
    plan, the past, a one-off or only a question (:func:`why_not_own_state`)?

    >>> reports_own_state("Setting up my new iPhone 15 tonight. How do I move my chats?")
    True
    >>> reports_own_state("My dad finally got an iPhone 15 Pro. How do I help him?")
    False
    >>> reports_own_state("Really eyeing the new MacBook Air. Should I wait for a sale?")
    False
    >>> reports_own_state("Is Verizon's coverage better than T-Mobile's?")
    False
    >>> reports_own_state("比亚迪海豹提车一周了，开着是真安静。")
    True
    >>> reports_own_state("大学室友跳槽去了华为，月薪直接涨到三万五，好羡慕。")
    False
    """
    return why_not_own_state(text, question) is None


#: the user named in a text (an English "I" or "my", 我, 咱, the household)
_NAMES_THE_USER = re.compile(r"\b(?:i|i['’]m|im|i['’]ve|ive|i['’]d|my|me|mine|we|our|us)\b|"
                             r"我|咱|家里|家裡", re.I)


def tells_of_own_state(text: str) -> bool:
    """Does ``text`` - a statement, or a question that takes something of the user's for
    granted - tell of the user's own present state? It must report it
    (:func:`reports_own_state`) and name the user or one of the user's things by its make
    or provider (:mod:`~memstrata.policies.possessions`): trivia and small questions
    name neither.

    >>> tells_of_own_state("how do i stop my iphone 15 screen from lighting up at night")
    True
    >>> tells_of_own_state("mate60怎么打开应用分身啊 设置里翻了半天没找到")
    True
    >>> tells_of_own_state("do goldfish really have a 3 second memory")
    False
    >>> tells_of_own_state("My dad finally got an iPhone 15 Pro. How do I help him?")
    False
    """
    if not reports_own_state(text):
        return False
    return _NAMES_THE_USER.search(text) is not None or any(
        names_possession(text, attribute) for attribute in POSSESSIONS)


#: people named in chat shorthand, as a question names them
_SHORTHAND = {"bf": "boyfriend", "gf": "girlfriend", "hubby": "husband", "bff": "friend",
              "bestie": "friend", "roomie": "roommate"}


def _naming(phrase: str, after: str) -> tuple[str, str]:
    """How a question names the person of ``phrase`` ("My husband"; ``after`` is the text
    that follows it and may give the name: "My son Leo"): the person's word (chat
    shorthand written out: "my bf daniel" is asked about as "boyfriend") and the name,
    casefolded (``""`` where there is none)."""
    words = re.findall(r"[a-z-]+", re.sub(r"['’]s?\b", "", phrase.casefold()))
    word = _SHORTHAND.get(words[-1], words[-1]) if words else ""
    name = re.match(r"\s*([A-Z][a-z]+)\b", after)
    return word, "" if name is None else name.group(1).casefold()
