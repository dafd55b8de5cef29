"""The readers of a held name and diet, the city gazetteer and the guards the sixth blind
split found missing (memstrata.policies.slot_change, through observe).

Each case below was a miss or a lost guard of a formation split (heldout3-6) before the
reader it tests: the reproductions are kept."""

from __future__ import annotations

import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.policies.extraction import extract
from memstrata.policies.gazetteer import find_cities_zh
from memstrata.policies.slot_change import change_of


@pytest.mark.parametrize(("text", "attribute", "current", "expected"), [
    # names
    ("Can we do Kat instead of Katherine? Feels less like a dentist visit", "name",
     "Katherine", "Kat"),
    ("Everybody back home calls me Paco and tbh it’d feel more natural if you did too, "
     "instead of Francisco.", "name", "Francisco", "Paco"),
    ("The deed poll came through and I’ve taken my mum’s surname, so it’s Priya Kapoor on "
     "everything now. Please use that.", "name", "Priya Sharma", "Priya Kapoor"),
    ("just Jon pls, nobody calls me jonathan except the tax office", "name", "Jonathan", "Jon"),
    ("别叫我全名了，怪生分的，叫浩子就好😄", "name", "王浩然", "浩子"),
    ("我英文名叫Angela，工作里大家都用这个，你以后也叫我Angela吧。", "name", "刘思琪", "Angela"),
    ("派出所那边的改名手续办下来了，新名字是赵一鸣，以后就这么称呼我。", "name", "赵磊", "赵一鸣"),
    ("大家都喊我阿强，你也这么叫我吧。", "name", "陈志强", "阿强"),
    # diets: a label said outright, or what the user eats again / no longer eats
    ("no more fish for me, and I’ve dropped dairy and eggs too — fully vegan since that "
     "documentary", "diet", "pescatarian", "vegan"),
    ("Update for the meal plans: I’m eating eggs and dairy again (cravings are real), still no "
     "meat or fish though.", "diet", "vegan", "vegetarian"),
    ("no more meat or fish for me since November. Eggs, cheese and milk are still fine.",
     "diet", "not vegetarian", "vegetarian"),
    ("Three weeks into keto and loving it", "diet", "not vegetarian", "keto"),
    ("现在偶尔吃点鱼虾了，别的肉还是不碰，推荐菜谱的时候可以加海鲜。", "diet", "vegetarian",
     "pescatarian"),
    ("从这个月开始戒肉了，鸡鸭鱼都不吃，鸡蛋牛奶还照常", "diet", "not vegetarian", "vegetarian"),
    ("素了四年，今年开始正常吃肉了，以后推荐菜不用避开荤菜了。", "diet", "vegetarian",
     "not vegetarian"),
    # cities through the gazetteer, employers, ages
    ("Three boxes left to unpack and then the Vienna flat is finally done!", "city", "Munich",
     "Vienna"),
    ("work moved me, so as of last month I'm living in Fukuoka — can you look up the train "
     "times?", "city", "Osaka", "Fukuoka"),
    ("搬到青岛快一个月了，每天下班去海边走走，比在天津舒服多了", "city", "天津", "青岛"),
    ("Settled in nicely at Rolls-Royce, the team I joined last month is brilliant and I don’t "
     "miss the old Airbus open-plan office one bit.", "employer", "Airbus", "Rolls-Royce"),
    ("Officially a Stripe employee as of this morning!!", "employer", "Shopify", "Stripe"),
    ("换工作了哈，新东家是中国平安，帮我把邮件签名里的公司名改一下", "employer", "招商银行",
     "中国平安"),
    ("thirty-two as of today 🎂", "age", "31", "32"),
    ("Celebrated my 57th on Saturday with a hike", "age", "56", "57"),
    ("终于19了🎉 零点的时候室友们给我唱了生日歌", "age", "18", "19"),
    # heldout7's misses
    ("Book me a dentist near home? Home being Minneapolis these days, Uptown area.", "city",
     "Denver", "Minneapolis"),
    ("I'd much rather go by Maggie if that's alright.", "name", "Margaret", "Maggie"),
    ("Everyone at office addresses me as Venky only, you also use Venky from now", "name",
     "Venkatesh", "Venky"),
    ("群里大家都喊我小鹿，你也这么称呼我就好，丽娟太老气了😅", "name", "黄丽娟", "小鹿"),
    ("doc said my iron is in the bin so fish, eggs and dairy are back on the menu for me. still "
     "no meat tho", "diet", "vegan", "pescatarian"),
    ("医生说我蛋白质不够，所以蛋奶都加回来了，荤的照样一点不碰", "diet", "vegan", "vegetarian"),
    ("今年开始啥都吃了，牛排鸡翅都来", "diet", "pescatarian", "not vegetarian"),
    ("帮我把简历上的现任公司改成小米，华为那边十月份已经办完离职了", "employer", "华为", "小米"),
    ("今天36啦🎂 老公订了个小蛋糕", "age", "35", "36"),
    # heldout8's misses
    ("Based in Marseille since September. Update the city on my profile pls, Lyon is old news",
     "city", "Lyon", "Marseille"),
    ("first night in my Hobart sharehouse!! signed the lease for the whole year", "city",
     "Adelaide", "Hobart"),
    ("quit starbucks lol. barista at Pret A Manger these days", "employer", "Starbucks",
     "Pret A Manger"),
    ("you don't need to use Margaret all my friends say Peggy so please use Peggy from now on",
     "name", "Margaret", "Peggy"),
    ("everywhere you write to me, use Sasha, not Alexander — it's what everyone knows me by.",
     "name", "Alexander", "Sasha"),
    ("started eating chicken and fish again when I was pregnant and never stopped", "diet",
     "vegetarian", "not vegetarian"),
    ("it says 29 but I had my birthday last week, so 30.", "age", "29", "30"),
    ("我们家现在在长沙啦，俩娃也转到这边幼儿园了", "city", "武汉", "长沙"),
    ("刚办完字节跳动的入职 工卡也拿到了 腾讯那边上周五走的", "employer", "腾讯", "字节跳动"),
    ("肯德基不干啦 这学期换到麦当劳打工 离宿舍近", "employer", "肯德基", "麦当劳"),
    ("户口本上的名字改好了，现在叫周若敏，麻烦你也更新一下哦", "name", "周敏", "周若敏"),
    ("纯素坚持不下去了哈哈 现在牛奶鸡蛋都吃 肉还是不吃的", "diet", "vegan", "vegetarian"),
    ("加班太狠了 开始吃鱼补补 除了鱼虾海鲜别的肉还是不碰", "diet", "vegetarian", "pescatarian"),
])
def test_a_new_value_is_read(text, attribute, current, expected):
    assert change_of(text, attribute, current) == expected


@pytest.mark.parametrize(("text", "attribute", "current"), [
    ("My abuela is the only one allowed to call me Paquito, for you Francisco is perfect.",
     "name", "Francisco"),                                   # the current name is kept
    ("Our new intern is called Kat and she runs the group chat", "name", "Katherine"),
    ("家里人都叫我静静，不过你还是叫我全名吧，听着正式一点。", "name", "李静怡"),
    ("同事给我起了个英文名叫Angela，我觉得土死了，你千万别这么叫我。", "name", "刘思琪"),
    ("要是当年我爸给我起名叫赵一鸣就好了，比赵磊好听多了。", "name", "赵磊"),
    ("Back in college I was vegan for about a year.", "diet", "pescatarian"),   # the past
    ("My sister just went keto and keeps sending me bacon pics", "diet", "vegan"),
    ("Is it weird that I dreamt I ate a whole cheeseburger?", "diet", "vegan"),
    ("大学那会儿我吃过两年纯素，后来实在扛不住才放弃的。", "diet", "pescatarian"),
    ("我对象最近开始吃生酮，每天大块吃肉，不过我还是不会碰的。", "diet", "vegetarian"),
    ("我没有开始吃肉啊，是我妈误会了。", "diet", "vegetarian"),
    ("我想跳槽到阿里巴巴。", "employer", "腾讯"),               # a wish (tuning guard)
    ("我以前住在上海。", "city", "北京"),                        # the past (heldout2 guard)
    ("我表姐刚搬去杭州，天天在朋友圈晒西湖。", "city", "广州"),  # a cousin
    ("我弟考上了厦门大学，九月份就要搬过去住宿舍了。", "city", "广州"),
    ("HR floated the idea of relocating me to Brisbane. I said I’d think about it.", "city",
     "Melbourne"),
    ("老伴今天过72岁生日，我给她织了条围巾。", "age", "71"),     # someone else's birthday
    ("Just ran my 57th parkrun!", "age", "56"),
    # heldout7's lost guards
    ("Company is offering relocation to Hyderabad with 20% hike. Should I take it?", "city",
     "Pune"),
    ("when I lived in Minneapolis I drove a Subaru and never once got stuck.", "city", "Denver"),
    ("周末去深圳看演唱会，住一晚就回来，帮我订个福田附近的酒店", "city", "广州"),
    ("在考虑要不要改名叫孙哲，但是要改的证件太多了", "name", "孙建国"),
    ("我儿子最近天天嚷着要吃炸鸡，给他做个健康版的鸡翅吧，我自己不吃", "diet", "vegetarian"),
    # heldout9's lost guards
    ("My manager insists on calling me Venky in meetings and honestly I hate it. Please "
     "continue with Venkatesh only.", "name", "Venkatesh"),
    ("My flatmate went vegan last month and now the fridge is all oat milk.", "diet",
     "vegetarian"),
    ("我大學四年都住在高雄，回台北工作都快十年了，突然好想念那邊的鴨肉飯。", "city", "台北"),
    ("我老家在杭州", "city", "上海"),     # a hometown is not a home (preference_updates)
])
def test_guards_change_nothing(text, attribute, current):
    assert change_of(text, attribute, current) is None


def test_a_university_named_after_a_city_is_no_city():
    assert find_cities_zh("我弟考上了厦门大学，要搬去青岛") == ["青岛"]


@pytest.mark.parametrize(("text", "rule", "value"), [
    ("I'm on a keto diet.", "diet", "keto"),
    ("I follow a pescatarian diet.", "diet", "pescatarian"),
    ("I eat meat.", "diet", "not vegetarian"),
    ("我是蛋奶素。", "diet", "vegetarian"),
    ("我只吃鱼和海鲜，不吃其他肉。", "diet", "pescatarian"),
    ("我在吃生酮饮食。", "diet", "keto"),
    ("我是纯素食主义者。", "diet", "vegan"),
    ("我不吃肉，但吃鱼。", "diet", "pescatarian"),
    ("我只吃素。", "diet", "vegetarian"),
    ("no more bullet points from now on — write in normal paragraphs", "from_now_on", None),
    ("my husband's Dutch and we want the kids bilingual so reply in Dutch from now on",
     "from_now_on", None),
    ("你以后一步一步地教我吧说详细点我老了记不住", "from_now_on", None),
    ("我在准备日语N2考试，以后跟我说话都用日语吧。", "from_now_on", None),
    ("以后回复都用繁体中文吧，我在台湾工作，已经看习惯了。", "from_now_on", None),
    ("For all our chats after this one, can you write to me in Portuguese?", "from_now_on",
     None),
])
def test_the_extractor_reads_these_statements(text, rule, value):
    read = [(c.rule, c.slot.value if c.slot else None) for c in extract(text)]
    assert read == [(rule, value)]


@pytest.mark.parametrize("text", [
    "Feels less like I'm at the dentist",                 # was read as the occupation
    "My wife’s new rule for the house: no phones at dinner from now on.",
    "My boss wants all client emails written in Spanish from now on.",
])
def test_the_extractor_reads_nothing_here(text):
    assert [c for c in extract(text) if c.slot is not None or c.rule == "from_now_on"] == []


def test_observe_reads_a_held_employer_beside_a_new_occupation(manager: MemoryManager,
                                                               clock: ManualClock):
    manager.observe("u6", "s1", "user", "I work at Pfizer.")
    clock.advance(days=10)
    obs = manager.observe("u6", "s2", "user",
                          "I left Pfizer in October and I’m a senior scientist at Moderna now.")
    # the employer is read beside the role
    assert any(c.slot is not None and c.slot.attribute == "employer" for c in obs.candidates)
    active = [r.slot.value for r in manager.memories("u6", statuses="active")
              if r.slot is not None and r.slot.attribute == "employer"]
    assert active == ["Moderna"]


def test_observe_changes_a_held_name_and_diet(rules_manager: MemoryManager, clock: ManualClock):
    rules_manager.observe("u7", "s1", "user", "My name is Katherine.")
    rules_manager.observe("u7", "s1", "user", "I'm vegan.")
    clock.advance(days=10)
    rules_manager.observe("u7", "s2", "user", "Can we do Kat instead of Katherine?")
    rules_manager.observe("u7", "s2", "user",
                          "I’m eating eggs and dairy again, still no meat or fish though.")
    active = {r.slot.attribute: r.slot.value
              for r in rules_manager.memories("u7", statuses="active") if r.slot is not None}
    assert active == {"name": "Kat", "diet": "vegetarian"}
