"""Write the Chinese recall-lab set: multi-day assistant conversations and probes.

    python benchmarks/data/make_zh_assistant.py

writes ``zh_assistant_tune.jsonl`` and ``zh_assistant_holdout.jsonl`` beside this
file (the recall lab's JSONL format, :mod:`memstrata.eval`). Deterministic (seeded).

Each user talks to an assistant over 7-9 sessions spread across three to five
weeks, in Chinese as people write to a chat assistant: requests (emails, plans,
recipes), small talk, and - scattered among them - facts about themselves
(preferences, plans, health, family, work), some of which change later. A probe
asks about one fact the way the user would ask weeks later: mostly in other
words than the ones they used (the answer turn shares a word or two with the
question at most), its evidence the turn(s) that hold the answer (for a changed
fact: the newest statement).

The two splits share nothing: different users and different fact templates
(the ``_A`` facts go to tuning, the ``_B`` facts to held-out), so a rule tuned
on one cannot have seen the sentences of the other. The fillers (requests,
small talk, assistant replies, near-miss statements about other people) are
drawn from one pool: they are the background, not the test.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Fact:
    category: str
    says: tuple[str, ...]  # the statement, with {slots}
    asks: tuple[str, ...]  # probe questions
    fills: tuple[dict[str, str], ...]  # slot values; "a" is the answer
    #: a later statement that replaces the first (the probe's evidence is then the later)
    update: tuple[str, ...] = ()
    update_asks: tuple[str, ...] = ()
    #: told only by a woman ("f") or a man ("m") - a husband, a pregnancy
    who: str = ""


F = Fact

# --------------------------------------------------------------------- facts, split A
_A: list[Fact] = [
    F(
        "preference",
        ("我不吃{a}，从小就受不了那个味道。", "提醒一下，我一直不吃{a}，点菜的时候别给我推荐。"),
        ("我有什么不吃的东西吗？", "点外卖时有什么要避开的？"),
        ({"a": "香菜"}, {"a": "羊肉"}, {"a": "苦瓜"}, {"a": "榴莲"}, {"a": "内脏"}, {"a": "茄子"}),
    ),
    F(
        "preference",
        ("周末我最喜欢去{a}，能放松一整天。", "我这人周末基本都泡在{a}。"),
        ("我周末一般喜欢去哪儿？", "休息日我通常在什么地方消磨时间？"),
        (
            {"a": "图书馆"},
            {"a": "郊外爬山"},
            {"a": "游泳馆"},
            {"a": "咖啡馆看书"},
            {"a": "菜市场逛逛"},
            {"a": "公园跑步"},
        ),
    ),
    F(
        "preference",
        ("我喝咖啡只喝{a}，加糖的一口都喝不下。", "咖啡的话我只要{a}。"),
        ("我喝咖啡有什么讲究？", "给我买咖啡应该买哪种？"),
        ({"a": "美式"}, {"a": "冰美式"}, {"a": "手冲"}, {"a": "燕麦拿铁不加糖"}, {"a": "浓缩"}),
    ),
    F(
        "preference",
        ("看书我更喜欢{a}，纸质书太占地方了。", "我现在看书基本都用{a}。"),
        ("我平时用什么看书？", "我习惯在哪里读电子版的书？"),
        ({"a": "Kindle"}, {"a": "微信读书"}, {"a": "iPad"}, {"a": "手机上的多看阅读"}),
    ),
    F(
        "preference",
        ("出差订酒店我偏好{a}，积分能攒着换房。", "酒店的话帮我优先看{a}。"),
        ("我订酒店有偏好的品牌吗？", "帮我订住的地方时应该先看哪家？"),
        ({"a": "全季"}, {"a": "亚朵"}, {"a": "希尔顿欢朋"}, {"a": "万豪"}, {"a": "汉庭"}),
    ),
    F(
        "preference",
        ("我对{a}特别感兴趣，最近一直在看相关的纪录片。", "最近迷上了{a}，纪录片一集一集地刷。"),
        ("我最近对什么题材着迷？", "有什么纪录片主题是我爱看的？"),
        ({"a": "天文"}, {"a": "古建筑"}, {"a": "深海生物"}, {"a": "二战历史"}, {"a": "宋朝历史"}),
    ),
    F(
        "plan",
        ("下个月{d}号我要去{a}出差，大概待三天。", "{d}号那周得去{a}，公司安排的出差。"),
        ("我下个月出差去哪个城市？", "公司安排我去哪里出差来着？"),
        (
            {"a": "成都", "d": "12"},
            {"a": "深圳", "d": "8"},
            {"a": "西安", "d": "20"},
            {"a": "杭州", "d": "15"},
            {"a": "武汉", "d": "3"},
            {"a": "青岛", "d": "17"},
        ),
        update=("出差改了，不去{a}了，换成去{b}。",),
        update_asks=("我这次出差最后定的是去哪？",),
    ),
    F(
        "plan",
        ("我打算今年{a}之前考完驾照，科目一已经过了。", "驾照的事我想在{a}前搞定。"),
        ("我计划什么时候拿到驾照？", "学车的截止时间我定的是哪天？"),
        ({"a": "国庆"}, {"a": "年底"}, {"a": "暑假"}, {"a": "六月"}),
    ),
    F(
        "plan",
        ("这周六晚上约了{a}一起吃饭，帮我记一下。", "周六晚饭和{a}约好了。"),
        ("我周六晚上跟谁有约？", "这个周末晚饭约了谁？"),
        (
            {"a": "大学室友"},
            {"a": "前同事老周"},
            {"a": "表姐"},
            {"a": "健身教练"},
            {"a": "邻居王阿姨"},
        ),
    ),
    F(
        "plan",
        ("我准备{a}报个{b}班，给自己充充电。", "想趁{a}去学{b}。"),
        ("我打算去学什么？", "我说过要报什么培训班？"),
        (
            {"a": "下个月", "b": "日语"},
            {"a": "暑假", "b": "游泳"},
            {"a": "年后", "b": "Python"},
            {"a": "秋天", "b": "吉他"},
            {"a": "五一以后", "b": "陶艺"},
        ),
    ),
    F(
        "health",
        ("我对{a}过敏，吃了会起疹子。", "医生说我对{a}过敏，以后得注意。"),
        ("我对什么东西过敏？", "有什么东西是我碰不得的？"),
        ({"a": "花生"}, {"a": "芒果"}, {"a": "虾"}, {"a": "青霉素"}, {"a": "猫毛"}, {"a": "花粉"}),
    ),
    F(
        "health",
        ("最近{a}老是疼，去医院拍了片子说是{b}。", "我的{a}不太好，查出来是{b}。"),
        ("医生说我哪里出了什么问题？", "我上次检查出来的毛病是什么？"),
        (
            {"a": "腰", "b": "腰肌劳损"},
            {"a": "膝盖", "b": "半月板损伤"},
            {"a": "脖子", "b": "颈椎曲度变直"},
            {"a": "手腕", "b": "腱鞘炎"},
            {"a": "肩膀", "b": "肩周炎"},
        ),
    ),
    F(
        "health",
        ("我每天早上要吃一片{a}，别让我忘了。", "每天早饭后记得提醒我吃{a}。"),
        ("我每天早上要吃什么药？", "早饭后该提醒我吃的是什么？"),
        ({"a": "降压药"}, {"a": "维生素D"}, {"a": "优甲乐"}, {"a": "二甲双胍"}, {"a": "鱼油"}),
    ),
    F(
        "health",
        ("我最近在减肥，目标是减到{a}斤。", "给自己定了个目标，体重降到{a}斤。"),
        ("我的体重目标是多少？", "我减肥想减到多少？"),
        ({"a": "120"}, {"a": "130"}, {"a": "145"}, {"a": "110"}, {"a": "160"}),
        update=("减肥目标我调整了一下，改成{b}斤，之前那个太难了。",),
        update_asks=("我现在的减肥目标定在多少斤？",),
    ),
    F(
        "family",
        ("我女儿今年{a}岁，刚上{b}。", "女儿{a}岁了，现在读{b}。"),
        ("我女儿多大了？", "我家孩子在读几年级？"),
        (
            {"a": "六", "b": "一年级"},
            {"a": "九", "b": "三年级"},
            {"a": "四", "b": "幼儿园中班"},
            {"a": "十二", "b": "初一"},
            {"a": "七", "b": "二年级"},
        ),
    ),
    F(
        "family",
        ("我妈下个月{a}岁生日，想给她办个小聚会。", "老妈快过{a}岁大寿了。"),
        ("我妈妈今年多大岁数？", "家里谁要过生日了，几岁？"),
        ({"a": "六十"}, {"a": "七十"}, {"a": "五十五"}, {"a": "六十五"}, {"a": "八十"}),
    ),
    F(
        "family",
        ("我老公是{a}，经常加班到很晚。", "我先生做{a}的，忙起来顾不上家。"),
        ("我丈夫是做什么工作的？", "我先生的职业是什么？"),
        ({"a": "程序员"}, {"a": "医生"}, {"a": "中学老师"}, {"a": "律师"}, {"a": "消防员"}),
        who="f",
    ),
    F(
        "family",
        ("家里养了一只{a}，叫{b}。", "我们家的{a}名字叫{b}，特别黏人。"),
        ("我家宠物叫什么名字？", "我养的是什么动物？"),
        (
            {"a": "橘猫", "b": "胖虎"},
            {"a": "柯基", "b": "豆豆"},
            {"a": "金毛", "b": "可乐"},
            {"a": "布偶猫", "b": "雪球"},
            {"a": "仓鼠", "b": "团子"},
        ),
    ),
    F(
        "work",
        ("我在{a}上班，做{b}。", "现在的工作是在{a}做{b}。"),
        ("我在哪家公司工作？", "我的岗位是什么？"),
        (
            {"a": "一家外贸公司", "b": "跟单"},
            {"a": "银行", "b": "风控"},
            {"a": "一家游戏公司", "b": "策划"},
            {"a": "医院", "b": "护士"},
            {"a": "一家物流公司", "b": "调度"},
        ),
        update=("跟你说个事，我跳槽了，现在去{c}做{d}了。",),
        update_asks=("我现在在哪里上班？",),
    ),
    F(
        "work",
        ("我们组的季度汇报定在{a}，我得准备{b}部分。", "季度汇报是{a}，我负责讲{b}。"),
        ("季度汇报我负责哪一块？", "我们组汇报是哪天？"),
        (
            {"a": "下周三", "b": "预算"},
            {"a": "月底", "b": "用户增长"},
            {"a": "周五下午", "b": "项目进度"},
            {"a": "十五号", "b": "竞品分析"},
        ),
    ),
    F(
        "work",
        ("我的直属领导叫{a}，人挺好但要求特别细。", "我老板{a}，对细节抠得很严。"),
        ("我的上司叫什么？", "我领导是谁来着？"),
        ({"a": "刘经理"}, {"a": "陈总"}, {"a": "周姐"}, {"a": "赵主管"}, {"a": "孙老师"}),
    ),
    F(
        "work",
        ("我每天通勤要{a}，坐{b}。", "上班路上单程{a}，一般坐{b}。"),
        ("我上班路上要花多久？", "我每天怎么去公司？"),
        (
            {"a": "一个小时", "b": "地铁"},
            {"a": "四十分钟", "b": "公交"},
            {"a": "二十分钟", "b": "电动车"},
            {"a": "一个半小时", "b": "班车"},
        ),
    ),
    F(
        "preference",
        ("我睡觉一定要{a}，不然睡不着。", "晚上睡觉我必须{a}。"),
        ("我睡觉有什么习惯？", "我晚上要怎样才能睡得着？"),
        ({"a": "开着风扇"}, {"a": "戴眼罩"}, {"a": "听白噪音"}, {"a": "把窗帘拉严"}),
    ),
]

# --------------------------------------------------------------------- facts, split B
_B: list[Fact] = [
    F(
        "preference",
        ("吃辣我不行，{a}都嫌辣。", "我一点辣都吃不了，{a}对我来说就算辣了。"),
        ("我能吃辣吗？", "给我推荐菜要注意辣度吗？"),
        ({"a": "微辣"}, {"a": "黑胡椒"}, {"a": "青椒炒肉"}, {"a": "麻辣烫的清汤"}),
    ),
    F(
        "preference",
        ("听歌我最爱{a}，循环一整天都不腻。", "最近单曲循环的都是{a}的歌。"),
        ("我最喜欢听谁的歌？", "我常听哪个歌手？"),
        (
            {"a": "周杰伦"},
            {"a": "陈奕迅"},
            {"a": "五月天"},
            {"a": "李健"},
            {"a": "邓紫棋"},
            {"a": "朴树"},
        ),
    ),
    F(
        "preference",
        ("运动的话我比较喜欢{a}，跑步太枯燥了。", "我锻炼一般选{a}。"),
        ("我喜欢做什么运动？", "健身的时候我偏好哪种？"),
        ({"a": "羽毛球"}, {"a": "瑜伽"}, {"a": "骑行"}, {"a": "打篮球"}, {"a": "跳绳"}),
    ),
    F(
        "preference",
        ("买衣服我只穿{a}的，其他牌子尺码不合适。", "衣服基本都在{a}买。"),
        ("我一般买哪个牌子的衣服？", "给我挑衣服该去哪家店？"),
        ({"a": "优衣库"}, {"a": "无印良品"}, {"a": "ZARA"}, {"a": "李宁"}),
    ),
    F(
        "preference",
        ("早饭我习惯吃{a}，十几年没变过。", "我早上一般就是{a}。"),
        ("我早饭一般吃什么？", "早餐我有什么习惯？"),
        (
            {"a": "豆浆油条"},
            {"a": "燕麦粥"},
            {"a": "煎饺"},
            {"a": "全麦面包加鸡蛋"},
            {"a": "小米粥"},
        ),
    ),
    F(
        "plan",
        ("我们打算{a}去{b}旅游，机票还没订。", "今年{a}想带家里人去{b}玩一趟。"),
        ("我们计划去哪里旅游？", "假期出游的目的地定的是哪？"),
        (
            {"a": "五一", "b": "云南"},
            {"a": "国庆", "b": "日本"},
            {"a": "春节", "b": "海南"},
            {"a": "暑假", "b": "新疆"},
            {"a": "清明", "b": "桂林"},
        ),
        update=("旅游计划变了，{b}不去了，改成去{c}。",),
        update_asks=("我们最后决定去哪里玩？",),
    ),
    F(
        "plan",
        ("房子的事我打算{a}搬家，搬到{b}那边。", "准备{a}搬到{b}，离公司近一点。"),
        ("我打算搬到哪里住？", "我什么时候搬家？"),
        (
            {"a": "月底", "b": "浦东"},
            {"a": "下个月", "b": "朝阳区"},
            {"a": "年前", "b": "南山"},
            {"a": "八月", "b": "滨江"},
        ),
    ),
    F(
        "plan",
        ("我在存钱买{a}，预算大概{b}。", "想攒钱买{a}，准备花{b}左右。"),
        ("我在攒钱买什么？", "我给那个大件定的预算是多少？"),
        (
            {"a": "车", "b": "十五万"},
            {"a": "新电脑", "b": "一万"},
            {"a": "钢琴", "b": "三万"},
            {"a": "相机", "b": "八千"},
        ),
    ),
    F(
        "plan",
        ("下周二上午约了{a}，别给我排别的事。", "周二早上我要去{a}。"),
        ("下周二上午我有什么安排？", "周二早上我要去干嘛？"),
        (
            {"a": "牙医复诊"},
            {"a": "银行办房贷"},
            {"a": "孩子学校开家长会"},
            {"a": "车管所换证"},
            {"a": "体检"},
        ),
    ),
    F(
        "health",
        ("我有{a}，医生让我少吃{b}。", "查出来{a}了，{b}得控制。"),
        ("医生让我少吃什么？", "我有什么慢性病？"),
        (
            {"a": "高血压", "b": "盐"},
            {"a": "痛风", "b": "海鲜"},
            {"a": "糖尿病", "b": "甜食"},
            {"a": "胃炎", "b": "辛辣的"},
            {"a": "高血脂", "b": "油炸食品"},
        ),
    ),
    F(
        "health",
        ("我最近失眠，每天只能睡{a}个小时。", "这阵子睡眠很差，一晚上也就{a}个钟头。"),
        ("我最近睡眠怎么样？", "我每晚大概睡多久？"),
        ({"a": "四"}, {"a": "五"}, {"a": "三"}, {"a": "五个半"}),
    ),
    F(
        "health",
        ("我近视{a}度，最近想去做手术。", "我眼睛{a}度近视，考虑做激光。"),
        ("我近视多少度？", "我的视力情况怎么样？"),
        ({"a": "六百"}, {"a": "四百五"}, {"a": "八百"}, {"a": "三百"}),
    ),
    F(
        "health",
        ("我怀孕{a}周了，最近孕吐得厉害。", "现在孕{a}周，吃什么吐什么。"),
        ("我怀孕多久了？", "我现在是孕几周？"),
        ({"a": "十"}, {"a": "八"}, {"a": "十二"}, {"a": "十四"}),
        who="f",
    ),
    F(
        "family",
        ("我儿子在学{a}，每周六上课。", "儿子周六要上{a}课。"),
        ("我儿子周末学什么兴趣班？", "孩子每周六上的是什么课？"),
        ({"a": "围棋"}, {"a": "钢琴"}, {"a": "编程"}, {"a": "跆拳道"}, {"a": "画画"}),
    ),
    F(
        "family",
        ("我爸住在{a}老家，一个人住，我有点不放心。", "老爸一个人在{a}，我总惦记着。"),
        ("我父亲住在哪里？", "我爸爸现在一个人住在什么地方？"),
        ({"a": "湖南"}, {"a": "河北"}, {"a": "东北"}, {"a": "江西"}, {"a": "山东"}),
    ),
    F(
        "family",
        ("我和我老婆是在{a}认识的。", "跟我媳妇是{a}的时候认识的。"),
        ("我跟我妻子怎么认识的？", "我和太太是在哪儿结识的？"),
        ({"a": "大学社团"}, {"a": "朋友婚礼上"}, {"a": "公司年会"}, {"a": "相亲"}),
        who="m",
    ),
    F(
        "family",
        ("我弟弟{a}要结婚了，我得回去帮忙。", "弟弟的婚礼定在{a}。"),
        ("我弟弟什么时候结婚？", "家里谁要办喜事了？"),
        ({"a": "十月"}, {"a": "下个月"}, {"a": "年底"}, {"a": "五月二十号"}),
    ),
    F(
        "work",
        ("我在准备{a}考试，每天下班学两个小时。", "下班后要复习{a}。"),
        ("我在备考什么证书？", "我每天下班后在学什么？"),
        ({"a": "注册会计师"}, {"a": "教师资格证"}, {"a": "PMP"}, {"a": "法考"}, {"a": "雅思"}),
    ),
    F(
        "work",
        ("我们公司在{a}，离我家挺远的。", "单位在{a}，每天跑老远。"),
        ("我们公司在哪个位置？", "我单位在哪？"),
        ({"a": "望京"}, {"a": "张江"}, {"a": "西二旗"}, {"a": "科技园"}, {"a": "光谷"}),
    ),
    F(
        "work",
        ("我负责的项目叫{a}，下个月要上线。", "手上的{a}项目马上要上线了。"),
        ("我现在负责什么项目？", "下个月要上线的是哪个项目？"),
        ({"a": "星河"}, {"a": "北斗"}, {"a": "青鸟"}, {"a": "磐石"}),
        update=("项目上线推迟了，{a}改到{e}上线。",),
        update_asks=("我的项目现在定在什么时候上线？",),
    ),
    F(
        "work",
        ("我的工资是每个月{a}号发。", "我们单位{a}号发薪水。"),
        ("我每个月几号发工资？", "发薪日是哪天？"),
        ({"a": "十"}, {"a": "十五"}, {"a": "五"}, {"a": "二十五"}),
    ),
    F(
        "preference",
        ("我不喜欢打电话，有事尽量{a}。", "能{a}就别给我打电话。"),
        ("我更喜欢怎么沟通？", "联系我的时候用什么方式比较好？"),
        ({"a": "发微信"}, {"a": "发邮件"}, {"a": "钉钉留言"}, {"a": "发短信"}),
    ),
]

# extra slot values for updates (b/c/d/e), keyed by a fact's first statement
_UPDATE_VALUES: dict[str, list[dict[str, str]]] = {
    "下个月{d}号我要去{a}出差，大概待三天。": [{"b": x} for x in ("重庆", "厦门", "长沙", "南京")],
    "我最近在减肥，目标是减到{a}斤。": [{"b": x} for x in ("125", "135", "150", "115")],
    "我在{a}上班，做{b}。": [
        {"c": "一家互联网公司", "d": "运营"},
        {"c": "学校", "d": "行政"},
        {"c": "保险公司", "d": "理赔"},
        {"c": "一家咨询公司", "d": "分析师"},
    ],
    "我们打算{a}去{b}旅游，机票还没订。": [{"c": x} for x in ("大理", "泰国", "三亚", "西藏")],
    "我负责的项目叫{a}，下个月要上线。": [{"e": x} for x in ("年底", "下季度", "九月", "春节后")],
}

# --------------------------------------------------------------------- background
REQUESTS = [
    "帮我写一封邮件给房东，说这个月房租晚两天交。",
    "明天要下雨吗？我要不要带伞？",
    "给我推荐几部适合周末看的电影。",
    "帮我把这段话翻译成英文：感谢您百忙之中抽空参加会议。",
    "有没有什么快手菜，二十分钟能做好的？",
    "帮我列一个超市购物清单，这周要做饭。",
    "写一段朋友圈文案，配一张海边的照片。",
    "我想给同事写一张生日贺卡，帮我想几句祝福。",
    "帮我算一下，每个月存两千，一年下来有多少？",
    "怎么跟领导提加薪比较合适？",
    "给我讲讲番茄工作法怎么用。",
    "帮我起草一个请假条，就说家里有事。",
    "推荐几本适合通勤路上听的有声书。",
    "冰箱里有鸡蛋、西红柿和土豆，晚饭做什么好？",
    "我想学做红烧肉，步骤给我说一下。",
    "周末想带孩子出去玩，有什么室内的地方推荐？",
    "帮我把会议纪要整理成三条要点。",
    "用Excel怎么快速去掉重复行？",
    "帮我想个微信群的名字，是小区宠物群。",
    "怎么把手机里的照片备份到电脑？",
    "帮我回复一下客户，说报价明天发过去。",
    "讲个冷笑话吧，今天心情一般。",
    "最近有什么好看的国产剧？",
    "帮我润色一下这句话：我们会尽快处理您的问题。",
]
SMALL_TALK = [
    "今天好累啊，开了一天的会。",
    "终于周五了！",
    "外面下大雨，堵车堵了一个小时。",
    "刚吃完饭，有点撑。",
    "今天天气真好，出去走了走。",
    "哈哈，你说得对。",
    "好的，谢谢你。",
    "嗯，我再想想。",
    "早上好！",
    "晚安，明天再聊。",
    "这周过得好快。",
    "刚下班，在地铁上。",
]
REPLIES = [
    "好的，我记下了。",
    "明白了，有需要随时叫我。",
    "没问题，这就帮你处理。",
    "收到！还有别的需要我做的吗？",
    "好的，已经整理好了，你看看合不合适。",
    "辛苦了，早点休息。",
    "了解，我会留意的。",
    "好，这个我帮你记着，到时候提醒你。",
    "这里有几个建议，你可以参考一下。",
    "可以的，按你说的来。",
    "没问题，下面是我整理的内容。",
    "好的，祝你顺利！",
]
#: statements about other people, sharing topic words with the facts (near misses)
NEAR_MISSES = [
    "我同事对海鲜过敏，聚餐的时候大家都很照顾他。",
    "我闺蜜下个月要去北京出差，问我有什么好吃的。",
    "隔壁邻居家新养了一只狗，天天叫。",
    "我表哥在银行上班，说最近特别忙。",
    "朋友说他最近在减肥，晚饭都不吃了。",
    "我室友特别爱喝奶茶，一天两杯。",
    "同事的女儿在学钢琴，已经考到六级了。",
    "老板说下个季度要招两个新人。",
    "我朋友上周去云南玩了，发了好多照片。",
    "听说公司楼下新开了一家咖啡馆。",
    "我表妹在准备考研，天天泡图书馆。",
    "小区里最近好多人在跳广场舞。",
    "我同学在学日语，说五十音图好难背。",
    "同事推荐了一个健身App，说挺好用的。",
    "我姑姑血压也高，天天量血压。",
    "我们部门有个同事要结婚了，大家在凑份子。",
]

USERS_TUNE = [
    "zh_lin",
    "zh_wang",
    "zh_chen",
    "zh_zhao",
    "zh_liu",
    "zh_sun",
    "zh_he",
    "zh_guo",
    "zh_tang",
]
USERS_HOLDOUT = [
    "zh_zhou",
    "zh_wu",
    "zh_zheng",
    "zh_feng",
    "zh_xu",
    "zh_ma",
    "zh_hu",
    "zh_luo",
    "zh_song",
]
START = datetime(2026, 3, 2, 20, 0, tzinfo=UTC)


def _fill(text: str, values: dict[str, str]) -> str:
    return text.format(**values)


def _conversation(user: str, facts: list[Fact], rng: random.Random) -> list[dict[str, object]]:
    """One user's turns and probes (JSONL objects)."""
    chosen = [(f, rng.choice(f.fills)) for f in facts]
    rng.shuffle(chosen)
    n_sessions = rng.randint(7, 9)
    # facts are told in the first sessions, updates and the rest later
    slots: list[list[tuple[str, Fact, dict[str, str]]]] = [[] for _ in range(n_sessions)]
    for i, (fact, values) in enumerate(chosen):
        session = i % max(1, n_sessions - 2)
        slots[session].append(("say", fact, values))
        if fact.update:
            later = rng.randint(session + 1, n_sessions - 1)
            slots[later].append(("update", fact, values))
    lines: list[dict[str, object]] = []
    evidence: dict[tuple[int, str], str] = {}
    when = START + timedelta(days=rng.randint(0, 6), hours=rng.randint(-10, 3))
    for s, todo in enumerate(slots):
        sid = f"s{s + 1}"
        n = 0
        t = when

        def turn(speaker: str, text: str, sid: str = sid) -> str:
            nonlocal n, t
            n += 1
            t += timedelta(minutes=rng.randint(1, 4))
            tid = f"{sid}:{n}"
            lines.append(
                {
                    "user": user,
                    "session": sid,
                    "time": t.isoformat().replace("+00:00", "Z"),
                    "speaker": "用户" if speaker == "u" else "助手",
                    "text": text,
                    "id": tid,
                }
            )
            return tid

        turn("u", rng.choice(SMALL_TALK))
        turn("a", rng.choice(REPLIES))
        rng.shuffle(todo)
        for what, fact, values in todo:
            if rng.random() < 0.5:
                turn("u", rng.choice(REQUESTS))
                turn("a", rng.choice(REPLIES))
            if rng.random() < 0.25:
                turn("u", rng.choice(NEAR_MISSES))
                turn("a", rng.choice(REPLIES))
            if what == "say":
                tid = turn("u", _fill(rng.choice(fact.says), values))
                evidence[(id(fact), "say")] = tid
            else:
                extra = _update_values(fact, rng)
                values.update(extra)
                tid = turn("u", _fill(rng.choice(fact.update), values))
                evidence[(id(fact), "update")] = tid
            turn("a", rng.choice(REPLIES))
        turn("u", rng.choice(REQUESTS))
        turn("a", rng.choice(REPLIES))
        when += timedelta(days=rng.randint(2, 5), hours=rng.randint(-3, 3))
    for fact, values in chosen:
        if fact.update:
            question = rng.choice(fact.update_asks)
            ids = [evidence[(id(fact), "update")]]
            category = "update"
            answer = _update_answer(fact, values)
        else:
            question = rng.choice(fact.asks)
            ids = [evidence[(id(fact), "say")]]
            category = fact.category
            answer = values["a"]
        lines.append(
            {
                "user": user,
                "question": question,
                "evidence_ids": ids,
                "category": category,
                "answer": answer,
            }
        )
    return lines


def _update_values(fact: Fact, rng: random.Random) -> dict[str, str]:
    return dict(rng.choice(_UPDATE_VALUES[fact.says[0]]))


def _update_answer(fact: Fact, values: dict[str, str]) -> str:
    for key in ("b", "c", "e"):
        if key in values and ("{" + key + "}") in fact.update[0]:
            return values[key] if key != "c" or "d" not in values else f"{values['c']}{values['d']}"
    return values["a"]


def build(users: list[str], facts: list[Fact], seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for n, user in enumerate(users):
        gender = "fm"[n % 2]
        mine = [f for f in facts if f.who in ("", gender)]
        # each user tells most, not all, of the split's facts
        told = rng.sample(mine, k=rng.randint(len(mine) - 2, len(mine)))
        out.extend(_conversation(user, told, rng))
    return out


def main() -> None:
    for name, users, facts, seed in (
        ("tune", USERS_TUNE, _A, 12),
        ("holdout", USERS_HOLDOUT, _B, 1212),
    ):
        lines = build(users, facts, seed)
        path = HERE / f"zh_assistant_{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        probes = sum(1 for x in lines if "question" in x)
        print(f"{path.name}: {len(lines) - probes} turns, {probes} probes, {len(users)} users")


if __name__ == "__main__":
    main()
