"""A new value of a city, employer or age the user holds, read with the old value in hand
(memstrata.policies.slot_change, through observe)."""

from __future__ import annotations

import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.policies.extraction import extract
from memstrata.policies.slot_change import change_of


def _values(text: str) -> list[str]:
    """The slot values the fast extractor reads from ``text`` alone."""
    from memstrata.policies.extraction import extract

    return [e.slot.value for e in extract(text) if e.slot]


def _slots(text: str) -> list[tuple[str, str]]:
    """(attribute, value) of the slots the fast extractor reads from ``text`` alone."""
    from memstrata.policies.extraction import extract

    return [(e.slot.attribute, e.slot.value) for e in extract(text) if e.slot]


@pytest.mark.parametrize(("text", "attribute", "current", "expected"), [
    ("Lisbon is our home now, we love it.", "city", "Porto", "Lisbon"),
    ("Got the keys to a flat in Utrecht last week!", "city", "Leiden", "Utrecht"),
    ("Sold the place in Graz and we're renting in Vienna, so far so good.", "city", "Graz",
     "Vienna"),
    ("Two weeks at Siemens Energy already, the team is great.", "employer", "ABB",
     "Siemens Energy"),
    ("Zalando made me an offer and I said yes, so that's my new job.", "employer", "Otto",
     "Zalando"),
    ("Finally 40 today, cake for breakfast.", "age", "39", "40"),
    ("Celebrating my 31st birthday today with friends.", "age", "30", "31"),
])
def test_a_new_value_is_read_with_the_old_one_in_hand(text, attribute, current, expected):
    assert change_of(text, attribute, current) == expected


@pytest.mark.parametrize(("text", "attribute", "current"), [
    ("Is Lisbon a nice home for a family?", "city", "Porto"),            # a question
    ("If the job works out we'll find a place in Lisbon.", "city", "Porto"),  # a condition
    ("We might move to Lisbon one day.", "city", "Porto"),               # a plan
    ("My sister got the keys to a flat in Lisbon.", "city", "Porto"),   # someone else
    ("We didn't take the flat in Lisbon after all.", "city", "Porto"),   # a negation
    ("Back home after a long weekend in Lisbon.", "city", "Porto"),      # a trip
    ("I moved the dentist appointment to Lisbon.", "city", "Porto"),     # something else moved
    ("I'm moving to Lisbon in the spring.", "city", "Porto"),            # planned
    ("She said \"my home is Lisbon now\".", "city", "Porto"),            # quoted
    ("Still loving my flat in Porto.", "city", "Porto"),                 # the same value
    ("A flat in Lisbon or one in Braga, which is nicer?", "city", "Porto"),  # two, and a question
    ("I'll be 41 in March.", "age", "40"),                               # not yet
    ("Finished my 41st marathon this morning!", "age", "40"),           # an ordinal, no birthday
    ("My son turned 5 today.", "age", "40"),                             # someone else's age
    ("Turned 60 today, can you believe it?", "age", "40"),                # not just above
])
def test_guards_change_nothing(text, attribute, current):
    assert change_of(text, attribute, current) is None


def test_observe_reads_a_change_of_a_held_value_and_supersedes_it(rules_manager: MemoryManager,
                                                                  clock: ManualClock):
    rules_manager.observe("u1", "s1", "user", "I live in Leeds.")
    clock.advance(days=10)
    obs = rules_manager.observe("u1", "s2", "user",
                          "We got the keys on Friday, so York is officially home now!")
    assert [c.rule for c in obs.candidates] == ["known_value_changed"]
    active = [r.slot.value for r in rules_manager.memories("u1", statuses="active")
              if r.slot is not None and r.slot.attribute == "city"]
    assert active == ["York"]
    superseded = [r.slot.value for r in rules_manager.memories("u1", statuses="superseded")
                  if r.slot is not None]
    assert superseded == ["Leeds"]


def test_without_a_held_value_nothing_is_guessed(rules_manager: MemoryManager):
    obs = rules_manager.observe("u2", "s1", "user", "York is officially home now!")
    assert obs.candidates == ()


@pytest.mark.parametrize(("text", "attribute", "current", "expected"), [
    ("跟你说一声，我们已经在苏州安家了，小区离地铁很近。", "city", "无锡", "苏州"),
    ("我和老公现在在珠海生活了，原来的房子已经卖掉。", "city", "中山", "珠海"),
    ("上周刚搬到了青岛，海边空气真好", "city", "济南", "青岛"),
    ("离职手续办完了，上周一开始我就是美团的人了。", "employer", "滴滴", "美团"),
    ("换了个东家，目前在招商证券做研究，节奏很快。", "employer", "中信证券", "招商证券"),
    ("终于入职小红书了！", "employer", "知乎", "小红书"),
    ("今天生日，三十六了，蛋糕是自己烤的。", "age", "35", "36"),
    ("生日那天朋友们给我办了派对，28岁了。", "age", "27", "28"),
])
def test_a_chinese_change_is_read_with_the_old_value_in_hand(text, attribute, current,
                                                            expected):
    """Chinese names have no capitals: the reader goes by where a name stands (在X安家,
    搬到X, 是X的人了, 在X做 ...) and by a number just above the current age."""
    assert change_of(text, attribute, current) == expected


@pytest.mark.parametrize(("text", "attribute", "current"), [
    ("我们会在苏州安家吗？", "city", "无锡"),                      # a question
    ("如果公司同意，我就搬到苏州。", "city", "无锡"),                # a condition
    ("我打算明年搬到苏州。", "city", "无锡"),                        # a plan
    ("我姐姐上个月搬到了苏州。", "city", "无锡"),                    # someone else
    ("下周去苏州出差，住两晚。", "city", "无锡"),                    # a trip
    ("我在苏州住了三天，玩得很开心。", "city", "无锡"),              # a stay
    ("我没有搬到苏州，还在无锡。", "city", "无锡"),                  # a negation
    ("他说“我已经在苏州安家了”。", "city", "无锡"),                  # quoted
    ("我现在在上海做产品经理。", "employer", "滴滴"),                # a place, not an employer
    ("我老公入职美团了。", "employer", "滴滴"),                      # someone else
    ("我儿子今天生日，六岁了。", "age", "5"),                         # someone else's birthday
    ("这件衣服花了三十六块。", "age", "35"),                          # not an age cue
])
def test_chinese_guards_change_nothing(text, attribute, current):
    assert change_of(text, attribute, current) is None


def test_observe_reads_a_chinese_change_of_a_held_value(rules_manager: MemoryManager,
                                                        clock: ManualClock):
    rules_manager.observe("u3", "s1", "user", "我住在无锡。")
    clock.advance(days=10)
    obs = rules_manager.observe("u3", "s2", "user",
                                "跟你说一声，我们已经在苏州安家了，小区离地铁很近。")
    assert [c.rule for c in obs.candidates] == ["known_value_changed"]
    active = [r.slot.value for r in rules_manager.memories("u3", statuses="active")
              if r.slot is not None and r.slot.attribute == "city"]
    assert active == ["苏州"]


# ------------------------------------------- reproductions from heldout9 (dev split since)

@pytest.mark.parametrize(("text", "attribute", "current", "expected"), [
    ("我们屋头已经搬到重庆来了撒，住起安逸得很，就是坡坡多，爬得腿软。", "city", "成都", "重庆"),
    ("户口本上的名字已经改成张雨桐了，身份证也换了新的，以后请用新名字。", "name", "张婷",
     "张雨桐"),
    ("唔使咁正式叫全名啦，叫阿强就得，大家都系咁叫我。", "name", "黄志强", "阿强"),
    ("最近開始吃魚了，醫生說我缺Omega-3，其他肉還是不吃。", "diet", "vegan", "pescatarian"),
    ("我现在开荤了哈，回锅肉都整了两盘，以后推荐菜不用管素不素的了。", "diet", "vegetarian",
     "not vegetarian"),
    ("嗯跟你说下我现在是蛋奶素了 早上会喝牛奶吃个煎蛋 肉和海鲜还是不吃", "diet", "vegan",
     "vegetarian"),
    ("俺昨天过七十三大寿，孩子们都回来了，可热闹了。", "age", "72", "73"),
    ("今天birthday，41了，感觉也没什么变化lol", "age", "40", "41"),
    ("Completed 25 years yesterday! Friends took me to Toit, such a fun evening.", "age", "24",
     "25"),
])
def test_heldout9_changes_are_read(text: str, attribute: str, current: str,
                                   expected: str) -> None:
    assert change_of(text, attribute, current) == expected


def test_heldout9_changes_read_by_the_extractor() -> None:
    from memstrata.policies.extraction import extract

    job = [e.slot.value for e in extract("那个我换工作了啊现在在京东上班 美团那边已经离职了 "
                                         "你帮我把通勤路线改一下") if e.slot]
    assert job == ["京东"]
    city = [e.slot.value for e in extract("Hi, kindly note that I have shifted to Bengaluru "
                                          "from Pune with family last week itself.") if e.slot]
    assert city == ["Bengaluru"]
    rule = [e.rule for e in extract("嗯以后回答的时候多举几个例子 光讲概念我听不懂")]
    assert rule == ["from_now_on"]
    assert [e.rule for e in extract("no need to keep it short anymore mate")] == ["always"]


# ------------------------------------------ reproductions from heldout10 (dev split since)

@pytest.mark.parametrize(("text", "attribute", "current", "expected"), [
    # a change told before a question of its own: the question no longer hides it
    ("搬到杭州快一个月了，西湖边上跑步真舒服。帮我查下附近哪有靠谱的牙科诊所？", "city", "成都",
     "杭州"),
    ("户口本上的名字已经改成李雨桐了，身份证也换好了，麻烦以后用新名字。还有银行卡要不要去柜台改信息？",
     "name", "李婷婷", "李雨桐"),
    ("今天过生日，二十九了，感觉时间过得好快。帮我找家附近的蛋糕店？", "age", "28", "29"),
    # the question itself still reads nothing; a quotation anywhere still guards
    ("要是我完全不吃鱼的话，omega-3 从哪里补？只是好奇问问", "diet", "pescatarian", None),
    ("她说：“我搬到杭州了。新家很大。”", "city", "成都", None),
    # a relative named, not the user
    ("My sister-in-law goes by Sadie now instead of Sarah, which is confusing at family "
     "dinners because I'm a Sarah too.", "name", "Sarah Lindqvist", None),
])
def test_heldout10_changes_and_guards(text: str, attribute: str, current: str,
                                      expected: str | None) -> None:
    assert change_of(text, attribute, current) == expected


def test_heldout10_statements_read_alone() -> None:

    read = _values
    assert read("By the time I'm 50 I want to have run a marathon.") == []
    assert read("I'm 50 now.") == ["50"]
    assert read("I'm Rohan Mehta.") == ["Rohan Mehta"]
    assert read("我吃纯素。") == ["vegan"]
    assert read("我吃鱼但不吃其他肉。") == ["pescatarian"]
    assert read("我什么肉都吃。") == ["not vegetarian"]


# ------------------------------------------ reproductions from heldout11 (dev split since)

def test_heldout11_what_a_question_takes_for_granted() -> None:
    """A change the user's question rests on is read; the question's own plans are not."""

    read = _slots
    assert read("Now that I'm based in Halifax, what time zone should I set my work "
                "calendar to?") == [("city", "Halifax")]
    assert read("Now that I'm 30, should I rethink my retirement contributions?") == [
        ("age", "30")]
    assert read("now that I'm a Datadog employee I get a conference budget, which events are "
                "actually worth going to?") == [("employer", "Datadog")]
    assert read("Can you suggest some good running routes near my new apartment in Tucson?"
                ) == [("city", "Tucson")]
    assert read("Can you help me write a short intro message for my new team at Shopify?"
                ) == [("employer", "Shopify")]
    assert read("我已经在深圳安家了，想问下以前交的社保怎么转到这边来？") == [("city", "深圳")]
    assert read("我现在在比亚迪做电池研发，员工买车有内部价吗？") == [("employer", "比亚迪")]
    assert read("我现在改成生酮饮食了，每天碳水控制在20克以内，早餐吃啥好？") == [("diet", "keto")]
    assert read("帮我查一下苏州新家附近有什么好吃的早餐店？刚过来还不熟") == [("city", "苏州")]
    # guards: a condition, a plan, someone else, a question with nothing taken for granted
    assert read("If I'm based in Halifax, what time zone should I use?") == []
    assert read("I'm thinking about moving to Lyon, is it expensive?") == []
    assert read("My sister moved to Lyon, should I visit her?") == []
    assert read("What would my new apartment in Tucson cost if I took the job?") == []
    assert read("我想搬到上海，你觉得怎么样？") == []
    assert read("我朋友在苏州新家附近开了店，有什么推荐的吗？") == []
    assert read("Draft a cover letter for a product manager role at Etsy, please.") == []


@pytest.mark.parametrize(("text", "attribute", "current", "expected"), [
    ("帮我写一段自我介绍吧，要发在小红书新团队的群里，我周一刚报到", "employer", "腾讯", "小红书"),
    ("今天生日，终于成年了！可以自己去报名考驾照了🚗", "age", "17", "18"),
    # an application is not a job
    ("Draft a cover letter for a product manager role at Etsy, please.", "employer", "Moderna",
     None),
    # a new team someone else joined, or no start
    ("帮我写一段介绍，要发在小红书新团队的群里", "employer", "腾讯", None),
])
def test_heldout11_changes_and_guards(text: str, attribute: str, current: str,
                                      expected: str | None) -> None:
    assert change_of(text, attribute, current) == expected


def test_heldout11_diets_read_alone() -> None:

    read = _values
    assert read("I only eat halal.") == ["halal"]
    assert read("我只吃清真的。") == ["halal"]
    assert read("我不吃含麸质的东西。") == ["gluten-free"]


def test_heldout10_settled_and_coming_of_age() -> None:
    from memstrata.policies.extraction import extract

    assert [e.slot.value for e in extract(
        "Quick one — now that I'm settled in Cardiff, which day does the recycling go out?")
        if e.slot] == ["Cardiff"]
    assert [e.slot.value for e in extract("I'm settled in Cardiff now.") if e.slot] == ["Cardiff"]
    assert [e.slot for e in extract("If I'm settled in Cardiff by May, what then?")] == []
    # 成年 is a cue of age: eighteen, told before a question of its own
    assert change_of("终于成年啦！！18岁了可以自己去考驾照了，科目一怎么复习最快？", "age",
                     "17") == "18"
    assert change_of("我儿子终于成年啦！！", "age", "17") is None


def test_heldout10_names_diets_and_instructions() -> None:
    from memstrata.policies.extraction import extract

    assert change_of("我英文名叫Kevin 以后就这么叫我吧 同事都这么叫", "name", "张伟") == "Kevin"
    assert change_of("我同事英文名叫Kevin 以后就这么叫他吧", "name", "张伟") is None
    # what is still eaten after a food given up is all that is eaten
    assert change_of("自从看了那部纪录片我就不吃肉了，鸡蛋牛奶还吃。请推荐几个高蛋白的素菜。",
                     "diet", "not vegetarian") == "vegetarian"
    assert change_of("我不吃肉了，鱼还吃", "diet", "not vegetarian") == "pescatarian"
    # a diet given up
    assert change_of("gave up on the veggie thing tbh, had a burger last night", "diet",
                     "vegetarian") == "not vegetarian"
    assert change_of("My sister gave up being vegetarian.", "diet", "vegetarian") is None
    # "no more X pls, just Y": a way of answering withdrawn; "no more tax returns" is not
    [read] = extract("no more bullet points pls, just write normal paragraphs")
    assert read.correction and read.rule == "always"
    assert extract("No more tax returns for me!") == []
    assert extract("no more meetings on fridays pls god") == []


def test_heldout12_statements_read_alone() -> None:
    from memstrata.policies.extraction import extract

    # an age back then is not the age
    assert [e.slot for e in extract("我18岁那年第一次一个人出远门，去了拉萨。")
            if e.slot and e.slot.attribute == "age"] == []
    assert [e.slot.value for e in extract("我什么肉都吃，不吃素。") if e.slot] == ["not vegetarian"]
    # a standing instruction asked as a request, or after "Actually"
    [german] = extract("hey, from now on can you reply in German? I'm practising for my exam")
    assert german.rule == "from_now_on" and german.correction
    [metric] = extract("Actually switch to metric for all measurements from now on — grams, °C.")
    assert metric.rule == "from_now_on" and metric.correction
    assert extract("Actually, the meeting moved to Friday.") == []


def test_heldout13_statements_read_alone() -> None:
    from memstrata.policies.extraction import extract

    read = _slots
    # traditional Chinese is read, in the user's own characters
    assert read("我今年19歲。") == [("age", "19")]
    assert read("我上週已經搬到高雄了，新家附近有什麼好吃的早餐店可以推薦嗎？") == [
        ("city", "高雄")]
    assert [e.content for e in extract("我在台積電工作。")] == ["我在台積電工作。"]
    assert read("I'm keto.") == [("diet", "keto")]
    assert read("I'm keto-curious about this") == []
    assert read("我对麸质过敏，只吃无麸质的。") == [("diet", "gluten-free")]
    assert [e.rule for e in extract("我对花生过敏。")] == ["allergy"]
    # "full time" is not part of the city
    assert read("now that I'm based in Austin full time, whats the easiest way to register "
                "my car here?") == [("city", "Austin")]


def test_heldout14_statements_read_alone() -> None:
    from memstrata.policies.extraction import extract

    read = _slots
    assert read("我在协和医院当护士。") == [("employer", "协和医院")]
    assert read("我在滙豐銀行做嘢。") == [("employer", "滙豐銀行")]
    assert read("我食蛋奶素。") == [("diet", "vegetarian")]
    # a hospital, a company or a school by kind is no employer
    assert read("我在医院工作。") == read("我在一家外贸公司上班，做跟单。") == []
    assert read("之後你都用廣東話覆我啦，我睇得明啲。") == []
    [cantonese] = extract("之後你都用廣東話覆我啦，我睇得明啲。")
    assert cantonese.rule == "from_now_on" and cantonese.correction
    assert cantonese.content.startswith("之後你都用廣東話")


@pytest.mark.parametrize(("text", "expected"), [
    # heldout15-17: what the blind splits' first looks missed, read with no value held
    ("已经从阿里离职，现在在美团做 data analyst，上周一 onboard 的。", [("employer", "美团")]),
    ("So I got poached by Canva 😅 first week there was a total blur.", [("employer", "Canva")]),
    ("I'm doing keto.", [("diet", "keto")]),
    ("been living in Brisbane about three weeks now since we moved up.", [("city", "Brisbane")]),
    # ... also before a question of its own, which is not read
    ("been living in Brisbane about three weeks now since we moved up, any tips for keeping "
     "clothes in the wardrobe from going mouldy?", [("city", "Brisbane")]),
    # what the user was called is not a name to use; what they would like to be called is
    ("In school everyone called me Ash, which I hated lol.", []),
    ("I'd prefer it if you called me Kate.", [("name", "Kate")]),
    ("Celebrated my 30th last weekend and the hangover is still very real.", [("age", "30")]),
    ("We celebrated my 10th wedding anniversary.", []),
    ("I'm on a gluten-free diet.", [("diet", "gluten-free")]),
    ("I'm on a strict vegan diet.", [("diet", "vegan")]),
    # heldout21
    ("finally moved to Bristol last weekend and my legs are dead", [("city", "Bristol")]),
    ("ugh I feel like I'm 60 today, back's completely gone after moving furniture.", []),
    # heldout23
    ("pretty sure I told you I was at woolies but I jumped ship to Canva a few weeks back.",
     [("employer", "Canva")]),
    ("I eat pretty much anything.", [("diet", "not vegetarian")]),
    ("我不吃肉，只吃鱼和海鲜。", [("diet", "pescatarian")]),
    # heldout25: someone else "after moving" (Irish English); a correction of one's age
    ("My sister's after moving to Lisbon, the lucky thing.", []),
    ("Correction to what I told you before: I'm actually 42.", [("age", "42")]),
    # heldout26
    ("We shifted to Pune two weeks back and the landlord here is asking for a deposit.",
     [("city", "Pune")]),
    ("我吃鱼但不吃肉。", [("diet", "pescatarian")]),
    # a name the user dislikes is not theirs; one others use still is
    ("同事都叫我敏敏姐，我其实不太喜欢哈哈，算了懒得纠正。", []),
    ("大家都叫我小王。", [("name", "小王")]),
    # heldout27: "moved down to", and a value ends at a dash
    ("need to close my old power account up in QLD since I moved down to Hobart in March",
     [("city", "Hobart")]),
    ("Rent's way higher now that we've relocated up to Brisbane — $620 a week.",
     [("city", "Brisbane")]),
])
def test_blind_splits_statements_read_alone(text: str, expected: list[tuple[str, str]]) -> None:
    assert _slots(text) == expected


@pytest.mark.parametrize(("text", "keyword"), [
    ("之後唔好再用列點喇，以後都用廣東話口語同我傾，好似朋友傾偈咁。", "廣東話"),
    ("之后的回答都写详细一点吧，最好带例子，太短了我看不懂", "详细"),
    ("之後請一律用繁體中文回覆我，謝謝。另外想問一下健保卡遺失了要怎麼補辦？", "繁體"),
    ("之後全部改用繁體中文回我，我看簡體不太習慣", "繁體"),
    ("From now on 都用English回复我吧，我要练英语", "English"),
    ("之后的回答请都详细一点，最好分步骤写，太短了我看不懂", "详细"),
    ("由今日開始請用繁體中文回覆我，我想練習睇繁體字", "繁體"),
    ("actually can you start giving me detailed, step-by-step answers from here on? the short "
     "ones keep leaving out stuff I need", "detailed"),
])
def test_blind_splits_standing_instructions_read_alone(text: str, keyword: str) -> None:
    from memstrata.policies.extraction import extract

    [found] = extract(text)
    assert found.rule == "from_now_on" and found.correction and keyword in found.content


#: the first-look misses and lost guards (None) of the blind formation splits heldout28-33,
#: and what the readings built on them must leave alone
#: statements of the blind knowledge-update splits heldout5-29 that give the new value in
#: passing, which recall reads when a question asks for the attribute (each was not read)
_KU_IN_PASSING = [
    ("the humidity here in austin is unreal, the AC in my east side apartment is barely "
     "keeping up. is it ok to run a dehumidifier and the AC at the same time?", "city",
     "Somerville", "Austin"),
    ("still living out of boxes since the move to bristol last weekend lol. new flat in "
     "bishopston is lovely though. whats the best way to meet people?", "city", "Leeds",
     "Bristol"),
    ("We've been in Tucson for three weeks and I still can't get used to 100 degrees in "
     "October. How do people keep their cars cool?", "city", "Denver", "Tucson"),
    ("first winter in Minneapolis and I am so not prepared, what kind of boots do I need for "
     "-20°F?", "city", "Austin", "Minneapolis"),
    ("we moved to Denver last month and I'm still not used to the altitude, any tips for "
     "baking at 5,280 feet?", "city", "Portland", "Denver"),
    ("Three weeks into life in Portland and the rain hasn't stopped once. Good waterproof "
     "jacket brands that aren't crazy expensive?", "city", "Denver", "Portland"),
    ("first week at chewy done!! onboarding was a blur of laptops and slack channels lol. whats "
     "a good trick for remembering names?", "employer", "Petco", "Chewy"),
    ("Sorry if I'm slow today, first week at Halvorsen Freight and the onboarding is a "
     "firehose. How do I keep three systems straight?", "employer", "Brightline",
     "Halvorsen Freight"),
    ("First week at Meridian Health went really well, onboarding is so much more organized than "
     "anything I saw in four years at Brightline. Could you help me write a short intro?",
     "employer", "Acme", "Meridian Health"),
    ("来成都快一个月了，天天吃火锅胃有点受不了😂 有没有什么养胃的清淡菜谱推荐？", "city", "杭州",
     "成都"),
    ("搬家累死了，成都这边的房子还没收拾完，不过楼下那家火锅店已经去了三次了哈哈。", "city", "杭州",
     "成都"),
    ("我们上个月搬到成都了，房子比在杭州的时候大了一倍。成都冬天家里需要买取暖器吗？", "city",
     "杭州西湖区", "成都"),
    ("上海徐汇的新家搬完快一周了，还在拆箱子。对了，宜家的床垫怎么选比较好？", "city", "杭州滨江区",
     "上海"),
    ("我搬到昆明了", "city", "杭州", "昆明"),
    ("來美團快一個月了，食堂還挺好吃的哈哈。你知道周报怎么写比较不容易被挑毛病吗", "employer",
     "字节跳动", "美團"),
    ("到聯發科上班快一個月了，不用輪班真的太幸福。想問一下新竹有什麼好吃的早午餐？", "employer",
     "台積電", "聯發科"),
    ("ever since I went fully vegan in march my grocery bill has dropped a ton, weirdly. do you "
     "know if nutritional yeast goes bad?", "diet", "keto", "vegan"),
    ("Since going fully vegan in October I miss cheese more than anything - any cashew-based "
     "recipes that come close?", "diet", "keto", "vegan"),
    ("生酮停了，现在改成16:8轻断食，中午12点到晚上8点之间吃饭，感觉精力好多了。空腹的时候可以喝黑咖啡吗？",
     "diet", "keto", "intermittent fasting"),
    ("听医生的建议，这几周一直按地中海饮食来吃，多吃鱼和橄榄油，感觉肠胃舒服多了。三文鱼一周吃几次合适？",
     "diet", "keto", "mediterranean"),
    ("轻断食停了，最近跟着营养师在做低碳水饮食，每天碳水控制在100克以内，推荐几个早餐吧", "diet",
     "intermittent fasting", "low-carb"),
    # guards: no place, someone else, a trip, a condition, no employer's name
    ("I've been in meetings for three weeks straight", "city", "Leeds", None),
    ("my sister has been in Portland for two months now", "city", "Leeds", None),
    ("I'm in Chicago for a conference, the humidity here in chicago is unreal", "city", "Leeds",
     None),
    ("我表哥来成都快一个月了", "city", "杭州", None),
    ("下个月去成都出差，成都这边有什么好吃的", "city", "杭州", None),
    ("first week at work was rough, any tips?", "employer", "Petco", None),
    ("到公司上班快一个月了，还是很累", "employer", "腾讯", None),
    ("My flatmate's just gone vegan and I'm cooking dinner for the two of us Saturday - what "
     "can I make that works for her?", "diet", "vegetarian", None),
    ("I would go vegan if my doctor agreed", "diet", "keto", None),
]


#: heldout34's first-look misses: typed all in lower case, Chinese with spaces for commas
_HELDOUT34 = [
    ("btw can u stop calling me katherine, everyone calls me kate now and honestly i like it "
     "better. also good book for a long flight?", "name", "Katherine", "Kate"),
    ("marriage certificate came back so its officially jennifer alvarez now 💍 can u make me a "
     "checklist of places i need to update my name", "name", "Jennifer Smith",
     "Jennifer Alvarez"),
    ("court approved it, im legally sam now 🏳️‍⚧️ pls use that going forward. also suggest some "
     "chill playlists?", "name", "Alex", "Sam"),
    ("my meta badge finally works lmao took them 4 days. anyway any good lunch spots near the "
     "menlo park campus", "employer", "Google", "Meta"),
    ("handed in my apron for the last time friday 😭 starting at target monday, early stocking "
     "shift. tips for surviving a 5am start??", "employer", "Starbucks", "Target"),
    ("3 weeks in manchester since the move n i still cant find a decent barber, what do i even "
     "ask for for a skin fade", "city", "London", "Manchester"),
    ("户口本上的名字已经改成张亦鸣了 之后请这么称呼我 银行卡要去改吗", "name", "张强", "张亦鸣"),
    ("生酮第三周了 一口米饭都不碰 体重掉了4斤 但老是头晕正常吗", "diet", "not vegetarian", "keto"),
    # guards, and names typed in lower case that are no names
    ("Honestly, Liz is what I go by day to day — Elizabeth makes me feel like I’m in trouble.",
     "name", "Elizabeth", "Liz"),
    ("could you start calling me Leo? it's what I go by at work and I'd like it here too",
     "name", "Li Wei", "Leo"),
    ("my sister is legally kim now", "name", "Alex", None),
    ("my old laptop died so work gave me a loaner", "employer", "Google", None),
    ("starting at noon today because of the dentist", "employer", "Google", None),
    ("my coworkers called me danny boy all day as a joke after karaoke night lmao", "name",
     "Daniel", None),
    ("call me when you land", "name", "Katherine", None),
    ("call me back tomorrow", "name", "Katherine", None),
    ("my friends call me crazy", "name", "Katherine", None),
    ("call me after lunch pls", "name", "Katherine", None),
]


_HELDOUT28_33 = [
    # heldout28 / heldout30 first-look misses: home named as "here", the employer a
    # sentence takes for granted, a correction of the age, a coeliac diagnosis
    ("quick q - what's the cheapest way to get from my place here in Seattle to SeaTac for a "
     "6am flight? moved up last month and still figuring out the transit", "city", "Austin",
     "Seattle"),
    ("Quick q — what's the recycling pickup schedule like in Denver? just signed the lease on "
     "my place here last week and still figuring everything out lol", "city", "Austin",
     "Denver"),
    ("so I handed in my badge on Friday and start at Stripe on Monday, anything I should bring "
     "on day one?", "employer", "Amazon", "Stripe"),
    ("Can you help me rewrite my LinkedIn headline? I'm a product designer at Figma now, left "
     "the bank back in the spring.", "employer", "Wells Fargo", "Figma"),
    ("Since joining Airbus last month my new manager wants weekly status reports from me — can "
     "you draft a simple template?", "employer", "Accenture", "Airbus"),
    ("btw literally everyone calls me Kate these days, could you use that from now on?", "name",
     "Katherine", "Kate"),
    ("Can you stop calling me Alexander? Sasha is what I actually prefer, always have.", "name",
     "Alexander", "Sasha"),
    ("Dropped keto, it was making me miserable. Since the celiac diagnosis the only thing I have "
     "to watch is gluten, so which store-bought breads are actually good?", "diet", "keto",
     "gluten-free"),
    ("diagnosed with celiac last month so gluten is totally off the menu for me now 😭 which "
     "pasta brands actually taste good?", "diet", "pescatarian", "gluten-free"),
    ("Officially half a century old as of yesterday! Can you help me write a thank-you note to "
     "everyone who came to my 50th?", "age", "49", "50"),
    ("新东家是美团，通勤要一个小时，有啥路上能听的播客推荐？", "employer", "百度", "美团"),
    ("之前说错了，我其实是42岁，不是47。这个年纪开始健身还来得及吗？", "age", "47", "42"),
    ("我妈说我虚岁都43了，其实上个月才满42周岁😅 这个年纪开始健身晚不晚？", "age", "41", "42"),
    # heldout31 first-look misses
    ("can you recomend a dentist? I don't know anyone yet, only got here to Melbourne 2 weeks ago "
     "and this is where I live now", "city", "Toronto", "Melbourne"),
    ("been at Kaiser Permanente a week now since leaving the old hospital, and the charting "
     "system is a nightmare. any tips for surviving night shifts?", "employer", "Mercy Hospital",
     "Kaiser Permanente"),
    ("the name change went through at the courthouse, I'm legally Jordan now, so please address "
     "me that way going forward", "name", "Robert", "Jordan"),
    ("honestly nobody calls me that except my mom when I'm in trouble — it's Maggie, always, ok?",
     "name", "Margaret", "Maggie"),
    ("my doctor talked me into eating fish again so thats a thing now — still no meat or chicken "
     "tho. good salmon recipe?", "diet", "vegan", "pescatarian"),
    ("dropped keto, way too restrictive, and then the celiac diagnosis came back so it's strictly "
     "zero gluten for me from now on. is soy sauce ok?", "diet", "keto", "gluten-free"),
    ("well it happened, birthday was yesterday and I'm officially out of my twenties. help me plan "
     "a dinner party to celebrate?", "age", "29", "30"),
    ("today's my birthday! another trip around the sun. what's a good gift to buy myself?", "age",
     "41", "42"),
    ("劳动合同已经跟字节跳动签了，这周开始正式上班，五险一金的缴纳基数怎么查啊", "employer",
     "阿里巴巴", "字节跳动"),
    ("现在发工资的地方变成美团了，入职手续今天刚办完，以前的同事还约我周末吃饭呢", "employer",
     "百度", "美团"),
    ("别再叫我全名啦，朋友们都叫我静静，你以后也一直这么叫吧", "name", "陈静", "静静"),
    ("素食坚持了五年，最近又开始吃肉了，不打算再吃素了，推荐个红烧肉做法", "diet", "vegetarian",
     "not vegetarian"),
    ("今天是我生日！同事们给我买了蛋糕，帮我想想许个什么愿？", "age", "25", "26"),
    # heldout32 first-look misses (its Chinese typed with ASCII commas and marks)
    ("quick profile update: my paycheck comes from Shopify now, not the old place", "employer",
     "Oracle", "Shopify"),
    ("I've been keeping halal ever since I converted in the spring, so no pork, no alcohol, "
     "zabiha meat only for me", "diet", "not vegetarian", "halal"),
    ("another trip around the sun done, 42 as of this morning. the kids made me pancakes", "age",
     "41", "42"),
    ("guess who can legally drink in the US now 🎉 had my birthday on saturday", "age", "20",
     "21"),
    ("离开武汉快一个月了,现在每天早上在厦门被海风吹醒,感觉还挺不真实的", "city", "武汉", "厦门"),
    ("跳槽成功!现在是腾讯的产品经理了,帮我想想怎么跟新团队打招呼", "employer", "阿里巴巴", "腾讯"),
    ("这个月开始领美团的工资了,老东家的同事还约我吃散伙饭呢", "employer", "百度", "美团"),
    ("从今天起叫我静静好不好,这个称呼我更喜欢", "name", "陈静", "静静"),
    ("素食我不坚持了,这一个月一直在吃肉,以后也打算就这么吃", "diet", "vegan", "not vegetarian"),
    ("生酮我已经放弃了,碳水又吃回来了,不过查出乳糜泻,现在只吃无麸质的东西", "diet", "keto",
     "gluten-free"),
    # heldout33 first-look misses
    ("fyi home is Seattle these days, we sold the austin house back in march. what's the sales "
     "tax situation here?", "city", "Austin", "Seattle"),
    ("Finally did it — signed the lease, got the keys, and Montreal is home now. Need to figure "
     "out how to get a Quebec health card, any idea where to start?", "city", "Toronto",
     "Montreal"),
    ("My employer these days is Nvidia - the offer went through and I've been there since the "
     "3rd. How should I think about the RSU vesting schedule?", "employer", "Intel", "Nvidia"),
    ("ok nobody calls me elizabeth except my grandma, go with Liz from here on out", "name",
     "Elizabeth", "Liz"),
    ("I've been going by my middle name Theo at work and honestly it fits me way better, can you "
     "switch to that for good?", "name", "Michael", "Theo"),
    ("quit keto, my cholesterol went nuts. no meat at all for me from this week on, veggie meal "
     "ideas?", "diet", "keto", "vegetarian"),
    ("华为那边离职手续办完了,这周一开始去腾讯上班,新工牌都拿到了", "employer", "华为", "腾讯"),
    ("跳槽成功!!现在是字节跳动的员工啦,入职第三天,有点懵", "employer", "阿里巴巴", "字节跳动"),
    ("现在东家是美团,老板人还不错,就是加班有点多,咋调整作息", "employer", "百度", "美团"),
    ("我英文名是Grace,以后跟我聊天就叫Grace,不用叫中文名", "name", "陈静", "Grace"),
    # what the new readings must not take: someone else's place, a trip, a guess at an age
    ("My sister's new place here in Seattle has a view of the Sound.", "city", "Austin", None),
    ("I'm staying at a friend's place in Denver for the weekend.", "city", "Austin", None),
    ("My brother moved up to Seattle last month.", "city", "Austin", None),
    ("Since joining Airbus my dad never stops talking about planes.", "employer", "Accenture",
     None),
    ("My wife is diagnosed with celiac, so no gluten in the house.", "diet", "vegetarian", None),
    ("我妈说她今年都60岁了。", "age", "35", None),
    # heldout31's lost guards, and what the new readings must leave alone
    ("for the D&D session tonight call me Seraphina, just for the game though, back to normal "
     "after", "name", "Emily", None),
    ("my birthday isn't till november but I'm already dreading 28 lol. good skincare for late "
     "twenties?", "age", "27", None),
    ("听说有人为了健康改吃纯素，我有点好奇，但应该不会去尝试。纯素和清真能兼顾吗？", "diet",
     "halal", None),
    ("Today's my sister's birthday, she's turning 30!", "age", "33", None),
    ("今天是我妈的生日，给她买了蛋糕。", "age", "30", None),
    ("房子的合同跟房东签了，下周搬家。", "employer", "百度", None),
    ("Mi grow up inna Montego Bay but mi nuh live deh from 2015.", "city", "Kingston", None),
    ("been at Disneyland all week with the kids", "employer", "Google", None),
    ("ugh my first job out of school was at Walmart corporate and I still have nightmares about "
     "those spreadsheets", "employer", "IBM", None),
    ("今天公司年会,破例吃了一块蛋糕,就今天一次,明天继续", "diet", "keto", None),
    ("我妈现在是腾讯的经理了，她很开心。", "employer", "百度", None),
    ("这个称呼我更喜欢。", "name", "陈静", None),
    ("My husband had his birthday on saturday.", "age", "40", None),
    ("Can you switch my weather updates to Halifax? Lease signed last month.", "city", "Toronto",
     None),
    ("my sister says home is Seattle these days", "city", "Austin", None),
    ("在考虑要不要改成吃鱼的那种素,还没想好,你觉得营养上差别大吗", "diet", "vegan", None),
]


#: for each blind split, what its first look missed or lost and is read right since
_AFTER_MISSES: dict[str, list[tuple[str, str, str, str | None]]] = {
    "heldout10": [
        # an employer's name that ends in 's is the name, not a possessive
        ("mate I packed in Tesco, I'm at Sainsbury's now on the tills, way better hours. can you "
         "help me work out my shifts", "employer", "Tesco", "Sainsbury's"),
        ("First week at McDonald's done, my new job is great.", "employer", "KFC", "McDonald's"),
        ("First week at Google's office done, my new job is great.", "employer", "IBM", "Google"),
        # "feel like home" is a cue, not a guess; "no joke" negates nothing
        ("We closed on the condo in Calgary last month, so the place is starting to feel like "
         "home.", "city", "Toronto", "Calgary"),
        ("ok so the Brisbane humidity is no joke, been here since the start of the month",
         "city", "Melbourne", "Brisbane"),
        ("Just got my Stripe laptop and badge today 🎉 onboarding is a firehose.", "employer",
         "Shopify", "Stripe"),
        ("I'm employed by General Motors now (moved over in September).", "employer", "Ford",
         "General Motors"),
        ("finally 20 lol no longer a teenager. can i rent a car in the uk at this age or nah",
         "age", "19", "20"),
        ("终于 move 到重庆了，现在 office 和家都在渝中区，热到怀疑人生，有什么消暑的推荐吗", "city",
         "上海", "重庆"),
        ("离开腾讯之后去了字节跳动 现在做推荐算法 帮我整理一些面试题吧", "employer", "腾讯",
         "字节跳动"),
        ("本人已调入招商银行总行，劳动合同已重新签订，烦请更新相关资料。", "employer", "中国银行",
         "招商银行"),
        # guards
        ("My sister's new job at McDonald's starts Monday.", "employer", "KFC", None),
        ("离开腾讯之后去了三亚玩了一周", "employer", "腾讯", None),
        ("我同事调到阿里了", "employer", "腾讯", None),
        ("I'm thinking it might feel like home in Calgary one day.", "city", "Toronto", None),
        ("Just kidding, the Brisbane place fell through.", "city", "Melbourne", None),
    ],
    "heldout12": [
        # an emoji ends a sentence: what follows it is guarded on its own
        ("it's my birthday today!! officially 30 lol 🥳 can you suggest something fun to do this "
         "weekend", "age", "29", "30"),
        ("Had my 42nd yesterday, the kids made me a lopsided cake 😂 anyway what health checks "
         "should I be booking at my age?", "age", "41", "42"),
        ("Thanks for the help planning the party — my 25th went off brilliantly last night!",
         "age", "24", "25"),
        # traditional characters read as simplified, the value comes back as written
        ("我已經離職了，這個月開始在聯發科上班，可以幫我寫一段自我介紹給新同事嗎？", "employer",
         "台積電", "聯發科"),
        ("上週剛過完五十大壽，孩子們辦了個驚喜派對。想問一下五十歲以後要做哪些健康檢查？", "age",
         "49", "50"),
        ("新家终于收拾好了，苏州这边房租比之前便宜不少😂 帮我查下在苏州办居住证要准备啥材料",
         "city", "杭州", "苏州"),
        ("帮我改下邮件签名吧，现在是 字节跳动 产品经理，上周一刚入职", "employer", "华为",
         "字节跳动"),
        ("帮我把天气城市改成大连，我现在住这边了，哈尔滨的房子已经卖掉了。",
         "city", "哈尔滨", "大连"),
        ("跟你说一下，我上个月皈依了伊斯兰教，现在只吃清真的，猪肉彻底不碰了", "diet",
         "not vegetarian", "halal"),
        ("Quit keto and went fully vegan on Jan 1st after watching a documentary — no meat, eggs "
         "or cheese anymore.", "diet", "keto", "vegan"),
        ("The name change finally went through on my passport, I'm Priya Malhotra now.", "name",
         "Priyanka Sharma", "Priya Malhotra"),
        # guards
        ("Before Siemens I was at Bosch for six years — can you help me phrase that in my "
         "LinkedIn summary?", "employer", "Siemens", None),
        ("I grew up in Marseille and lived there till I was 22, so I'm very picky about "
         "bouillabaisse 😤 any decent spots here in Lyon?", "city", "Lyon", None),
        ("我爸妈下个月要搬去厦门养老，帮我看看厦门哪个区比较适合老人住", "city", "南京", None),
        ("帮我找找附近的清真餐厅，朋友是穆斯林", "diet", "not vegetarian", None),
        ("My passport photo is awful, I'm Priya by the way", "name", "Priyanka Sharma", None),
        ("Should I take the job? Stripe made me an offer.", "employer", "Shopify", None),
    ],
    "heldout13": [
        ("FINALLY 18 as of this morning!!! can i open my own bank account now without my "
         "parents?? what do i need to bring", "age", "17", "18"),
        ("Quit keto, wasn't for me. But got diagnosed with coeliac last week so now I'm strictly "
         "gluten-free 😩 which beers can I still drink?", "diet", "keto", "gluten-free"),
        ("btw evryone calls me Pri, pls just use that going fwd 🙏", "name", "Priyanka Sharma",
         "Pri"),
        ("上个月调到武汉了，现在每天坐地铁通勤，武汉夏天真的热到离谱，有啥防暑的好办法吗", "city",
         "西安", "武汉"),
        ("现在base上海了，新公司在静安，想问下上海租房一般押几付几？", "city", "北京", "上海"),
        ("入职腾讯第一周，工牌今天刚拿到😂 新同事都挺nice的。怎么写个自我介绍发到组里群？",
         "employer",
         "华为", "腾讯"),
        ("以後叫我欣欣得啦，唔使叫全名咁正式😆", "name", "黄嘉欣", "欣欣"),
        # a question after a change already told in the same sentence; not after a plan
        ("我打算搬到上海了，有什么建议吗", "city", "北京", None),
        ("如果我搬到上海了，房租怎么办？", "city", "北京", None),
        ("查出来乳糜泻了😭 以后只能无麸质饮食，生酮也不搞了。哪些主食是不含麸质的？",
         "diet", "keto",
         "gluten-free"),
        # guards
        ("my coworker keeps calling me Emma by mistake and its driving me nuts 😤 how do I "
         "correct her", "name", "Emily Tran", None),
        ("my bf just went vegan and now i have to figure out xmas dinner for him 😭 any ideas?",
         "diet", "vegetarian", None),
        ("Here's another recipe I like. It's a dessert made with blueberries and a gluten-free "
         "crust.", "diet", "vegetarian", None),
    ],
    "heldout14": [
        ("Handed my notice in at Tesco last month and started at Sainsbury's on Monday, better "
         "hours and they actually pay overtime.", "employer", "Tesco", "Sainsbury's"),
        ("Just signed my contract with Equity Bank and I reported there today as a data analyst.",
         "employer", "Safaricom", "Equity Bank"),
        ("I have legally changed my surname back to my maiden name, so it is Wanjiru Njoroge now.",
         "name", "Wanjiru Kamau", "Wanjiru Njoroge"),
        ("Honestly I'm done being vegetarian, I eat everything now.", "diet", "vegetarian",
         "not vegetarian"),
        ("Got diagnosed with coeliac disease last week so it's strictly gluten-free for me from "
         "now on.", "diet", "not vegetarian", "gluten-free"),
        ("Well, the big three-oh happened yesterday. Feel exactly the same lol.",
         "age", "29", "30"),
        ("19 as of today 🎉 my roommates got me a cake with way too many candles.", "age", "18",
         "19"),
        ("My kids threw me a surprise party for my 40th on Saturday.", "age", "39", "40"),
        ("入职字节跳动第一周，每天都在开会对齐😂 有没有什么快速上手飞书的技巧？",
         "employer", "华为",
         "字节跳动"),
        # written Cantonese, read as Mandarin; the value as written
        ("我上個禮拜開始喺中銀香港返工，啲同事都幾nice。想問下點樣寫封email多謝舊老闆？",
         "employer", "滙豐銀行", "中銀香港"),
        ("我啱啱改咗名，身份證都換埋，依家叫黃浩然。之後幫我寫信就用新名啦。", "name", "黃志明",
         "黃浩然"),
        ("我決定連蛋同奶都戒埋，依家係全素，純植物飲食。有冇推介嘅植物奶？", "diet", "vegetarian",
         "vegan"),
        ("以后别叫我王建国了，太土了，我已经去派出所改名了，现在叫王子轩，你也这么叫我吧。", "name",
         "王建国", "王子轩"),
        ("跟你說，我結婚後沒有冠夫姓啦，不過大家現在都叫我的英文名，以後也請你叫我 Vivian 就好。",
         "name", "陳怡君", "Vivian"),
        ("今天31了，老板居然记得，请全组喝奶茶。帮我写个感谢message给团队？", "age", "30", "31"),
        # guards
        ("我細個喺廣州大，好掛住啲腸粉。澳門邊度有正宗嘅廣州腸粉食？", "city", "澳門", None),
        ("My sister moved to Munich. Loves it there.", "city", "Berlin", None),
        ("Thanks! That picture is from MinaLima. They created all the props for the Harry Potter "
         "films. It's like having a piece of the wizarding world at home!", "city", "Berlin", None),
        ("我们明天去北京开会，住两晚", "city", "上海", None),
    ],
    "heldout15": [
        ("First payslip from Shopify landed today and it's... less than I expected after tax??",
         "employer", "Deloitte", "Shopify"),
        ("Last shift at Kaiser was Friday and today I start orientation at Stanford Health Care. "
         "New badge, new parking garage, same terrible coffee.", "employer", "Kaiser Permanente",
         "Stanford Health Care"),
        ("Can you stop calling me Katherine? Nobody actually calls me that. Kit from now on, "
         "please.", "name", "Katherine Doyle", "Kit"),
        ("我而家搬咗去溫哥華啦，上個月落機，仲未習慣咁凍。你可唔可以教我點樣喺溫哥華換駕照？",
         "city",
         "香港", "溫哥華"),
        ("我上個月已經轉咗去渣打銀行返工，新老細好nice。想問下強積金點樣由舊公司轉過嚟？",
         "employer",
         "匯豐銀行", "渣打銀行"),
        ("唔該以後叫我阿強啦，叫全名好似返學俾老師點名咁。", "name", "黄志强", "阿強"),
        ("上週末家人幫我辦了五十大壽，半百了啊。想開始規劃退休，勞保年金要怎麼試算？", "age", "49",
         "50"),
        # guards
        ("I lived in Perth for six years before coming up here and honestly I still miss the "
         "sunsets. Anyway, can you write a caption?", "city", "Brisbane", None),
        ("Honestly sometimes I think about going back to eating chicken, the smell of my "
         "flatmate's Sunday roast is killing me. But no, not happening.", "diet", "vegetarian",
         None),
        ("我妈帮我订了去三亚的机票，下周去玩", "city", "北京", None),
    ],
    "heldout16": [
        # a question after a comma is a sentence of its own; the head tells the change
        ("been living in Brisbane about three weeks now since we moved up and honestly the "
         "humidity is killing me, any tips for keeping clothes in the wardrobe from going "
         "mouldy?", "city", "Melbourne", "Brisbane"),
        ("added fish back into my diet since last month (still no meat tho) — whats a simple "
         "salmon traybake?", "diet", "vegetarian", "pescatarian"),
        ("as a 42 year old who literally just had a birthday, is it too late to learn the "
         "piano?", "age", "41", "42"),
        ("刚搬到杭州两周，还没找到好吃的火锅，有推荐的吗？", "city", "成都", "杭州"),
        ("我搬咗去台北住啦，上個月先搞掂晒啲手續，想問下台北邊度有好食嘅粵菜？", "city", "香港",
         "台北"),
        ("btw 我现在在 Shopee 了，offer 上周签的，已经 onboard 了。新加坡那边的 team 要我做个 "
         "intro slides，帮我列个大纲", "employer", "美团", "Shopee"),
        ("以后都叫我 Vivian 吧，中文名太多人念错了 😅", "name", "陈嘉欣", "Vivian"),
        ("唔好再叫我張偉啦，叫我阿偉得喇，大家都係咁叫", "name", "张伟", "阿偉"),
        ("上个月刚过完生日，46岁的人了还想转行做程序员，是不是太晚了？", "age", "45", "46"),
        # guards
        ("Back when I was an intern at Siemens we used Confluence for everything — is there a "
         "free alternative for a small team?", "employer", "BMW", None),
        ("as a 50 year old I will finally have time to travel", "age", "41", None),
        ("大家都叫我阿伟，你也别这么叫我", "name", "张伟", None),
        ("Cooking for my team's potluck and half of them are vegetarian — can you suggest a dish "
         "that's veggie and still halal-friendly?", "diet", "halal", None),
        ("The menu says 'vegan-friendly options available' — what does that usually mean?",
         "diet", "gluten-free", None),
    ],
    "heldout17": [
        # a request after a greeting is a request, not a question
        ("hey could you call me Jasmine instead? it's the English name I use at work and I'm "
         "more used to it now. thx!", "name", "Mei Ling", "Jasmine"),
        ("offer签了，今天是在美团的第一天，工位还靠窗😎 中午吃啥好", "employer", "腾讯", "美团"),
        ("生酮坚持了半年实在太痛苦，已经停了，现在改吃素了，不过鸡蛋牛奶还吃。有什么简单的素食晚餐？",
         "diet", "keto", "vegetarian"),
        # guards
        ("my colleagues keep calling me Tommy and i really hate it lol. how do i politely get "
         "them to stop without being weird about it", "name", "Tom", None),
        ("本來諗住搬去澳門，不過計過數都係留喺香港好啲。幫我諗下點樣同業主講續約啦", "city", "香港",
         None),
        ("今天是在北京的第一天，同事带我去吃烤鸭", "employer", "腾讯", None),
        ("我现在改吃素了", "diet", "vegan", None),
    ],
    "heldout18": [
        # a name in apposition, which the clauses part from its noun
        ("Quick one: my new employer, Siemens Energy, uses a different pension scheme from "
         "Shell's and I'm trying to decide whether to transfer my old pot over. What questions "
         "should I ask?", "employer", "Shell", "Siemens Energy"),
        # an emoji ends a Chinese sentence too: the question after it hides nothing before it
        ("终于从北京搬去深圳了🥲 这边租房押一付三正常吗？", "city", "北京", "深圳"),
        # guards
        ("My husband's doing keto this month so I'm cooking two dinners every night 😩 any "
         "recipes that work for both a keto eater and a vegetarian like me?", "diet",
         "vegetarian", None),
        ("毕业第一份工作是在德勤做审计，那时候天天加班。简历上那段经历怎么写比较好？", "employer",
         "招商银行", None),
        # ... and "my doctor's advice" is still the user's change
        ("I've started eating fish again on my doctor's advice, still no other meat though.",
         "diet", "vegan", "pescatarian"),
    ],    "heldout19": [
        # a present perfect of the user's own says where they work, even beside a CV
        ("Quick one — can you check this cover letter? Oh and ignore the Tesco stuff in my old "
         "CV, I've been at Sainsbury's since the summer.", "employer", "Tesco", "Sainsbury's"),
        # the old job over, the start to come names the employer
        ("离职手续办完了，下周一正式入职字节跳动😎 帮我想想跟新同事见面时怎么自我介绍", "employer",
         "腾讯", "字节跳动"),
        # the given name retired: 王小明 is 小明 to friends
        ("以后别叫我小明了，叫我 Leo 就行，同事都这么叫我", "name", "王小明", "Leo"),
        # guards
        ("Before I joined Atlassian I spent four years at Canva and honestly I miss the vibe "
         "there sometimes. How do I write a nice farewell message to an old Canva colleague "
         "who's retiring?", "employer", "Atlassian", None),
        ("大学的时候我纯素过一年，后来没坚持下来。话说有没有简单的煎三文鱼做法？", "diet",
         "pescatarian", None),
        ("I've been at Heathrow for two hours waiting for my flight.", "employer", "Tesco", None),
        ("I've been at Heathrow since 6am.", "employer", "Tesco", None),
        ("下周一入职字节跳动，有点紧张", "employer", "腾讯", None),
        ("离职了，下个月可能去字节跳动", "employer", "腾讯", None),
    ],
    "heldout20": [
        # "here" is the one other city the text names, even in a request about it
        ("hi, pls suggest some good weekend getaways near Pune, I shifted here from Mumbai in "
         "june only and dont know the area yet", "city", "Mumbai", "Pune"),
        # "I'm only used to" is no past; "My new employer" capitalised
        ("Hello. Quick one: how do I set up an out-of-office reply in Outlook? My new employer, "
         "Equity Bank, uses Microsoft 365 and I'm only used to Google Workspace from my "
         "Safaricom days.", "employer", "Safaricom", "Equity Bank"),
        ("btw nobody calls me Robert anymore, it's Bobby now — feels less stuffy. Anyway, can "
         "you help me write a toast for my best mate's wedding?", "name", "Robert", "Bobby"),
        ("Had my birthday over the weekend, the big four-two. My wife surprised me with a trip "
         "to Kruger. Anyway, what's a good camera for wildlife?", "age", "41", "42"),
        ("btw 我现在在美团了，offer 上周签的，这周一正式入职。帮我想想怎么跟新团队做自我介绍",
         "employer", "阿里巴巴", "美团"),
        ("我改咗名，而家叫張浩然，以後就咁叫我啦。", "name", "張志豪", "張浩然"),
        ("最近跟着我老公信了伊斯兰教，现在只吃清真的。帮我找几道清真家常菜？", "diet",
         "not vegetarian", "halal"),
        # guards
        ("My sister moved here from Pune last year, can you suggest places in Mumbai?", "city",
         "Mumbai", None),
        ("Any tips for Pune? I haven't moved here yet.", "city", "Mumbai", None),
        ("I used to work at Equity Bank.", "employer", "Safaricom", None),
    ],
    "heldout21": [
        # "that's home now" of the one city the text names
        ("Quick q — what's the sales tax situation in Denver? Asking because that's home now, we "
         "closed on the house in March and I still haven't figured out half the local stuff.",
         "city", "Chicago", "Denver"),
        ("aye so I've packed it in wi Glasgow, been livin in Aberdeen since the summer. whit's a "
         "good windproof jacket, the wind up here is something else", "city", "Glasgow",
         "Aberdeen"),
        ("Handed my notice in at Tesco back in September and I've been at Sainsbury's ever "
         "since — different uniform, same tills 😂 Anyway, can you help me write a birthday "
         "message for my manager?", "employer", "Tesco", "Sainsbury's"),
        ("最近换工作了，现在在Google上海office，team全是英文沟通，帮我改改这封email的语法？",
         "employer", "阿里巴巴", "Google"),
        # guards
        ("My gran used to call me Marky when I was little, it's so cringe now haha. What's a "
         "nice thing to get her for her 90th?", "name", "Marcus", None),
        ("Is Denver nice? My sister says it's home now for her.", "city", "Chicago", None),
    ],
    "heldout22": [
        ("Can you stop calling me Katherine? I've gone by Kate for years and it just feels "
         "weird. Anyway - need a quick recipe for tonight.", "name", "Katherine", "Kate"),
        # a spaced hyphen before a question starts a sentence of its own
        ("had my birthday last week so i'm 42 now - does that change anything for my life "
         "insurance quote?", "age", "41", "42"),
        ("now that im 20 and not a teenager anymore haha, what are some good budgeting apps for "
         "uni students", "age", "19", "20"),
        ("公司把我调到新加坡分部了，我们全家已经搬过来两周了，想问下这边有什么适合小孩周末去的地方",
         "city", "北京", "新加坡"),
        ("我去年底搬到台中定居了，這邊天氣比台北好多了。可以推薦幾間台中的咖啡廳嗎？", "city",
         "台北", "台中"),
        ("跟你说个事，我现在更喜欢别人叫我 Mandy，中文名就不用了。帮我起草一封给新客户的邮件",
         "name", "张敏", "Mandy"),
        # guards
        ("Before I settled here I spent six years living in Perth and I still miss the beaches "
         "heaps. Any good beaches within an hour's drive of where I am now?", "city",
         "Melbourne", None),
        ("My birthday's not until November but I'm already stressing about turning 28 lol. "
         "What's a chill way to celebrate?", "age", "27", None),
        # a plan said without "I'm" (read before, after a dash)
        ("Moving to Berlin — any tips?", "city", "Munich", None),
    ],
    "heldout23": [
        ("Now that I'm thirty I guess I should finally sort out a pension — where do I even "
         "start?", "age", "29", "30"),
        # English verbs in a Chinese text
        ("I switched to 渣打银行 last month，new team 都很 nice。"
         "帮我写封 email introduce 一下自己给新同事", "employer", "汇丰银行", "渣打银行"),
        # guards
        ("I might have switched to 渣打银行 if they paid more，不过还是算了", "employer",
         "汇丰银行", None),
        ("我以前吃过两年全素，后来放弃了。三文鱼一周吃几次合适？", "diet", "pescatarian", None),
    ],
    "heldout24": [
        ("btw nobody actually calls me Katherine, it's Kat — use that from now on pls. anyway "
         "can you help me with a cover letter", "name", "Katherine", "Kat"),
        # a Latin neighbourhood cut at its space is not a second city
        ("终于relocate到新加坡了，公司帮忙办的签证，now住在Tiong Bahru附近，推荐几家好吃的早餐店？",
         "city", "上海", "新加坡"),
        ("跳槽去腾讯已经两个月了，最近要绩效面谈，怎么准备比较好", "employer", "阿里巴巴", "腾讯"),
        # advice, then done (heldout15's leftover too)
        ("吃了五年素，最近体检贫血，医生建议我恢复吃肉，现在已经开始吃了，红烧肉怎么做才不腻？",
         "diet", "vegetarian", "not vegetarian"),
        ("吃了六年素，最近体检贫血很严重，医生建议我恢复吃肉，现在已经开始吃鸡肉和牛肉了。"
         "推荐几道补铁的家常菜？", "diet", "vegetarian", "not vegetarian"),
        # guards: advice not taken, advice to someone else
        ("医生建议我恢复吃肉，我还在考虑", "diet", "vegetarian", None),
        ("医生建议我妈恢复吃肉，她已经开始吃了", "diet", "vegetarian", None),
    ],
    "heldout25": [
        ("Long story short, after the reorg I took teh offer from Stripe and I've been there "
         "since August. Anyway, can you help me plan a 3-day hiking trip in Yosemite?",
         "employer", "Google", "Stripe"),
        # words in quotes are no quoted speech
        ("入职阿里巴巴快一个月了，还是不太习惯他们的黑话，“抓手”“赋能”到底啥意思？", "employer",
         "腾讯", "阿里巴巴"),
        ("刚 join 了 McKinsey，下周要做第一个 presentation，好紧张，能帮我改下 slides 的结构吗",
         "employer", "Deloitte", "McKinsey"),
        ("我最近在做 keto，基本不吃碳水了，肉蛋都吃。帮我排一周的 meal plan", "diet",
         "vegetarian", "keto"),
        # guards: an offer not taken, one weighed
        ("I haven't taken the offer from Stripe yet.", "employer", "Google", None),
        ("Should I take the offer from Stripe?", "employer", "Google", None),
    ],
    "heldout26": [
        ("Can you sanity check my LinkedIn headline? 'Senior PM at Canva | ex-Atlassian | "
         "building tools for visual teams'. I switched over in January and still haven't "
         "updated it 🙈", "employer", "Atlassian", "Canva"),
        # a district beside its city: the city
        ("上个月正式 relocate 到深圳了，公司帮忙在南山租了房子。"
         "帮我列一下在深圳办居住证要准备的材料？", "city", "北京", "深圳"),
        # Cantonese 唔好再叫我 retires the name; 之后…都叫我 asks for what comes
        ("唔好再叫我嘉欣啦，叫我 Kelly 就得，同事朋友都係咁叫我㗎。", "name", "陈嘉欣", "Kelly"),
        ("之后跟我聊天都叫我 David 吧，最近在练英文，想习惯一下被叫英文名 😄", "name", "张伟",
         "David"),
        ("体检说我贫血，医生建议我吃点肉，所以最近已经不吃素了。推荐几道简单的牛肉菜谱？", "diet",
         "vegetarian", "not vegetarian"),
        # guards
        ("I've been wondering whether to start eating fish again for the omega-3s, but "
         "honestly I'm not ready. What are the best vegan sources of omega-3?", "diet", "vegan",
         None),
    ],
    "heldout27": [
        ("ok so quick one - now that i've finally settled in Glasgow can u find me a decent "
         "climbing gym near the west end? the move up from leeds nearly killed me lol", "city",
         "Leeds", "Glasgow"),
        ("hey it's Sasha - decided to go by that everywhere now instead of Alexander. help me "
         "write a short intro for my new team's slack?", "name", "Alexander", "Sasha"),
        ("had my 42nd on the weekend, the kids made me a cake shaped like a fish haha. anyway "
         "can u help me plan a fishing trip", "age", "41", "42"),
        # 告别 negates nothing; 回老家 names where the user went home to
        ("帮我写个朋友圈文案吧，就说我正式告别北漂、回老家长沙定居了，语气轻松一点", "city", "北京",
         "长沙"),
        ("查出来乳糜泻😭 以后只能吃无麸质的东西了，面条面包都不行，有什么主食可以替代？", "diet",
         "not vegetarian", "gluten-free"),
        # guards
        ("Our team is partnering with Salesforce on an integration this quarter, can you "
         "summarise what their Apex language is?", "employer", "Shopify", None),
        ("我别搬到长沙了", "city", "北京", None),
    ],
    # heldout29 (its first look 0.75 / 0.979; heldout28's too, 0.833 / 1.00): what a
    # sentence takes for granted, a Latin employer name of any length in Chinese
    "heldout29": [
        ("ugh the move from Leeds nearly killed me, 40 boxes and one smashed lamp. anyway now "
         "that I'm settled in Bristol can u find me a decent dentist nearby?", "city", "Leeds",
         "Bristol"),
        ("first week as a Denver resident and I'm already out of breath on the stairs lol. how "
         "do ppl deal with the altitude?", "city", "Chicago", "Denver"),
        ("Can you switch my weather updates to Halifax? Lease signed last month and we're fully "
         "unpacked here now 🏡", "city", "Toronto", "Halifax"),
        ("just got my Lisbon residence card sorted, officially a local now 🇵🇹 whats the easiest "
         "bank to open an account with as a new resident here?", "city", "Manchester", "Lisbon"),
        ("quick q - my new employer Canva offers an ESPP, is it worth enrolling? joined them from "
         "Accenture last month so I don't know how it works yet", "employer", "Accenture",
         "Canva"),
        ("since I'm on the payroll at Monzo now my commute is way shorter lol, recommend some "
         "podcasts for a 15 min walk?", "employer", "Barclays", "Monzo"),
        ("since I'm 40 now my doctor wants me to start some screenings - which ones are usual at "
         "this age?", "age", "39", "40"),
        ("上周五从阿里离职了，这周一已经在Tencent报到，帮我写个给新同事的自我介绍？", "employer",
         "阿里巴巴", "Tencent"),
        ("现在在Microsoft上班，通勤比以前远了半小时，有啥地铁上能听的播客推荐？", "employer",
         "百度", "Microsoft"),
        ("招行的离职手续终于办完了，已经在美团上了三天班，试用期要注意点啥？", "employer",
         "招商银行", "美团"),
        ("上个月跳槽去了Tencent，现在做游戏运营，能帮我补补游戏行业的术语吗", "employer",
         "阿里巴巴", "Tencent"),
        # guards: guests counted off, a number of minutes, someone else a resident, a plan
        ("cooking for my coworkers on friday - one's vegetarian and one's gluten-free. can you "
         "plan a menu that works for everyone?", "diet", "halal", None),
        ("since I'm 40 minutes away, start without me", "age", "39", None),
        ("My sister is a new Munich resident now.", "city", "Berlin", None),
        ("I'm thinking of getting my Munich residence permit next year.", "city", "Berlin", None),
    ],
    "heldout28-33": _HELDOUT28_33,
    "knowledge-update in passing": _KU_IN_PASSING,
    "heldout34": _HELDOUT34,
    # heldout35's first-look misses (changes, then guards that were read as changes)
    "heldout35": [
        ("ugh finaly done unpacking boxes at the new place in denver, the altitude is killing "
         "me lol", "city", "Chicago", "Denver"),
        ("new badge new desk new coworkers lol, rivian onboarding is no joke, 6 hrs of safety "
         "videos today", "employer", "Target", "Rivian"),
        ("been at zoho like 3 weeks now and i still get lost in teh office haha, how do ppl "
         "remember all these names", "employer", "Infosys", "Zoho"),
        ("got married in june so its priya desai now, still getting used to signing it 😅",
         "name", "Priya Sharma", "Priya Desai"),
        ("legal name change went thru today!!! im officially Sam now 🥹 can you help me list all "
         "the places i need to tell", "name", "Alex", "Sam"),
        ("started eating fish again bc my doctor said my b12 was trash, still no meat tho. "
         "salmon recipe ideas?", "diet", "vegan", "pescatarian"),
        ("别叫我娜娜了哈 以后叫我Nina 公司里大家都这么叫", "name", "李娜", "Nina"),
        ("最近在搞生酮 主食基本不碰了 早饭吃啥好", "diet", "not vegetarian", "keto"),
        ("Xero offered me a role but I turned it down, the pay cut wasn't worth it. Did I make a "
         "mistake?", "employer", "Atlassian", None),
        ("my best friend just turned 30 and is having a full crisis about it lol", "age", "27",
         None),
        ("我妈最近在减肥 搞什么生酮 天天吃肉", "diet", "vegetarian", None),
        ("the employee onboarding was long", "employer", "Target", None),
        ("its monday now, name a good song", "name", "Alex", None),
    ],
    # heldout36's first-look misses
    "heldout36": [
        ("got my trader joe's name tag today, officially on the crew lol first shift was wild. "
         "whats a good stretch for standing 8 hrs", "employer", "Target", "Trader Joe's"),
        ("btw pls call me kat, katherine feels so formal lol. anyway can u help me pick a font "
         "for my resume", "name", "Katherine", "Kat"),
        ("everyone at the new gym calls me bo and honestly i like it way better, use that for "
         "me ok? 👍 also whats a good beginner deadlift weight", "name", "Robert", "Bo"),
        ("went fully plant based about a month ago, no dairy no eggs nothing 🌱 need a cheap "
         "protein shopping list for the week", "diet", "not vegetarian", "vegan"),
        ("it was my bday on sunday, the big 3-0 lol feel ancient. anyway whats a good skincare "
         "routine for total beginners", "age", "29", "30"),
        ("my boyfriend is doing keto and its so annoying to cook for both of us, any dinner that "
         "works for a veggie and a keto guy", "diet", "vegetarian", None),
        ("call me crazy but i love it", "name", "Robert", None),
    ],
    # knowledge-update first looks heldout32/33: an employer or a home said in passing
    "heldout32-33 in passing": [
        ("our all-hands at spotify ran 40 min over today 🙃 whatever. what's a polite way to "
         "decline a meeting that could've been an email?", "employer", "Deloitte", "Spotify"),
        ("our Shopify team offsite was so much fun, 30 coworkers in one room", "employer",
         "Deloitte", "Shopify"),
        ("from my place in seattle it takes 20 min to the airport", "city", "Denver",
         "Seattle"),
        ("字节这边的周会又拖了一个半小时 真的会谢🙃 话说有啥提高开会效率的办法不", "employer",
         "腾讯", "字节"),
        # guards: a city is no employer, someone else's place
        ("成都这边的同事都很好", "employer", "腾讯", None),
        ("my sister's place in seattle is huge", "city", "Denver", None),
    ],
    # heldout37's first-look misses (0.75 on the previous stop's final code), then guards
    "heldout37": [
        ("ok so we finally signed the lease, officially porto people now 🇵🇹 the cat hates the "
         "tiles tho", "city", "Leeds", "Porto"),
        ("I handed in my notice in the spring and I've now been at Grundfos for two weeks, so "
         "could you explain how Danish holiday pay works? The payslip is confusing me.",
         "employer", "Accenture", "Grundfos"),
        ("quit target finally 🎉 doing backend at a tiny startup called ravelin now, way less "
         "meetings", "employer", "Target", "Ravelin"),
        ("pls stop calling me katherine, ive gone by kit for years and its time you caught up "
         "lol", "name", "Katherine", "Kit"),
        ("its jen btw. nobody calls me jennifer except my mom when im in trouble 😂", "name",
         "Jennifer", "Jen"),
        ("我老公调去合肥工作，我们全家上个月也跟着搬过来了，合肥冬天家里要买什么取暖的东西啊？",
         "city", "上海", "合肥"),
        ("上周刚转正 在顺丰这边做数据分析 领导人还不错", "employer", "招商银行", "顺丰"),
        ("肉我戒了，但鱼虾还吃，海鲜实在不想放弃哈哈，帮我配个一周菜单", "diet",
         "not vegetarian", "pescatarian"),
        ("上个月刚满19 可以自己去银行办信用卡了吗", "age", "18", "19"),
        # guards: someone else's startup or name, a desk moved from a city, a sister's move
        # and the clause after it, a wet day, a sixteen-year-old's brother
        ("my brother works at a startup called ravelin now", "employer", "Target", None),
        ("read about a startup called ravelin today", "employer", "Target", None),
        ("my neighbours are porto people now", "city", "Leeds", None),
        ("its raining btw", "name", "Jennifer", None),
        ("my sister goes by jen btw", "name", "Jennifer", None),
        ("我把书桌从北京搬过来了", "city", "上海", None),
        ("我妹妹搬过来了，杭州那边房子卖了", "city", "上海", None),
        ("我弟弟上个月刚满19 可以办信用卡了吗", "age", "18", None),
        # heldout38's (first look 0.708): the big 3-0, 戒麸质, 离开阿里 for 阿里巴巴, an
        # age still ahead (30岁前) beside the one reached
        ("just hit the big 3-0 last weekend, hangover still going lol. need ideas for a 30s "
         "bucket list", "age", "29", "30"),
        ("Legally changed my name to Sasha last week, finally! Can you help me draft an email "
         "to my bank about updating my account?", "name", "Alexandra", "Sasha"),
        ("hey it's jon — prefer that over jonathan honestly, feels less stiff. need help w a "
         "budget spreadsheet", "name", "Jonathan", "Jon"),
        ("doc put me on a strict gluten free diet (celiac 😩) so what can i even eat for "
         "breakfast now", "diet", "not vegetarian", "gluten-free"),
        ("医生说我得戒麸质，面条馒头都不能吃了，北方人哭了 早饭吃啥", "diet", "not vegetarian",
         "gluten-free"),
        ("离开阿里之后去了字节跳动，新部门全用飞书，求一份飞书常用快捷键", "employer", "阿里巴巴",
         "字节跳动"),
        ("昨天过了29岁生日🎂 突然有点焦虑，30岁前该做点啥", "age", "28", "29"),
        # ... and a move with a son beside the user is still the user's
        ("小助手啊我跟你说我现在跟儿子住到成都来了沈阳那个房子租出去了你以后天气就给我报成都的嘛",
         "city", "沈阳", "成都"),
    ],
}


@pytest.mark.parametrize(("text", "attribute", "current", "expected"), [
    pytest.param(*row, id=f"{split}-{n}")
    for split, rows in _AFTER_MISSES.items() for n, row in enumerate(rows)])
def test_blind_splits_misses_are_read_after_their_fixes(text: str, attribute: str,
                                                         current: str,
                                                         expected: str | None) -> None:
    assert change_of(text, attribute, current) == expected


def test_chinese_typed_with_spaces_for_commas_is_read_by_clause() -> None:
    """Reproduction (heldout34): with no punctuation, the standing instruction and the
    question after 对了 were one sentence, read as a question."""
    found = extract("以后都用英文回复我吧 想练练英语 对了 今天天气怎么样")
    assert [e.rule for e in found] == ["from_now_on"] and "英文" in found[0].content


# statements of the blind formation splits heldout29-32 read alone
_BLIND_READ_ALONE = [
    ("Now that I've joined Bosch I get a company car. How does the benefit-in-kind tax work?",
     ("employer", "Bosch")),
    ("皈依伊斯兰教之后我不再吃素了，肉也吃，但必须是清真的。附近有清真餐厅吗？", ("diet", "halal")),
    ("我是生酮饮食。", ("diet", "keto")),
    # heldout35: a lower-case city runs on into the sentence; no diet was read from 不忌口
    ("since we relocated to halifax my commute is like 10 min its wild, what do i even do with "
     "all the extra time", ("city", "Halifax")),
    ("我不忌口，荤素都吃。", ("diet", "not vegetarian")),
]


def test_heldout36_instruction_after_a_request_in_one_sentence() -> None:
    """Reproduction (heldout36): "answer everything in german going forward" after ", and"
    in a sentence that opens with a request was not read."""
    found = extract("can u give me a simple pancake recipe, and answer everything in german "
                    "going forward, im trying to get to B2 this year")
    assert [e.rule for e in found] == ["from_now_on"] and "german" in found[0].content


@pytest.mark.parametrize("text", [
    "could u keep it short from here on, like 2-3 sentences max? also whats the capital of "
    "mongolia",
    "ok quick thing - always answer in japanese from now on even when i type english - anyway "
    "whats a good rice cooker",
])
def test_heldout37_instructions_in_chat_shorthand(text: str) -> None:
    """Reproduction (heldout37): "could u ..." was no request (only "could you"), and an
    instruction between dashes was read with the lead-in before it."""
    assert [e.rule for e in extract(text)] == ["from_now_on"]


@pytest.mark.parametrize(("text", "slots"), [
    # a name's last word is no stretch of time ("New York last year" read "New")
    ("I moved to New York last year", [("city", "New York")]),
    ("I moved to San Francisco last month", [("city", "San Francisco")]),
    ("I moved to Salt Lake City a few weeks ago", [("city", "Salt Lake City")]),
    # heldout38: a capitalised city run on into a clause of its own, an employer in lower
    # case beside a role, an age typed "im 42 now" before a question
    ("since we relocated to Seattle my commute is like 10 min so I finally have mornings free",
     [("city", "Seattle")]),
    ("can u help me update my linkedin headline, im a product manager at stripe now (left "
     "google in march)", [("occupation", "product manager"), ("employer", "Stripe")]),
    ("im 42 now and my insurance premium went up again, is that normal? how much does age "
     "actually affect it", [("age", "42")]),
    ("I work as a nurse at night now", [("occupation", "nurse")]),
])
def test_values_read_alone_after_heldout38(text: str, slots: list[tuple[str, str]]) -> None:
    assert [(e.slot.attribute, e.slot.value) for e in extract(text) if e.slot] == slots


@pytest.mark.parametrize("text", [
    "explain recursion to me. and always use bullet points pls, paragraphs are really hard "
    "for me to read",
    "你回答太短了，以后详细点讲，把原理也说清楚。比如为什么天空是蓝的",
    "帮我看看这个合同条款有没有坑……另外以后回答都用繁体字，我在台湾看简体不习惯",
])
def test_heldout38_instructions_replace_the_standing_one(text: str) -> None:
    """Reproduction (heldout38): "always ... pls" was stored without replacing the standing
    instruction, 以后详细点讲 after a comma and 另外 after an ellipsis were not read."""
    assert [e.correction for e in extract(text)] == [True]


def test_heldout37_a_company_ending_in_lai_keeps_its_name() -> None:
    """Reproduction (heldout37): 蔚来 lost its 来 as if it were a verb's complement (搬到上海
    来); 搬过来 still names nothing."""
    found = extract("从华为离职了，现在在蔚来做产品，节奏慢了好多，有点不习惯")
    assert [(e.slot.attribute, e.slot.value) for e in found if e.slot] == [("employer", "蔚来")]
    assert [e.slot.value for e in extract("我搬到上海来了") if e.slot] == ["上海"]
    assert not [e for e in extract("我搬过来了") if e.slot]


def test_heldout35_instruction_after_a_lead_in_without_a_comma() -> None:
    """Reproduction (heldout35): 另外 with no comma after it hid the standing instruction."""
    found = extract("帮我看看这个合同有没有坑 另外以后回答简短点 太长了看不完")
    assert [e.rule for e in found] == ["from_now_on"] and "简短" in found[0].content


@pytest.mark.parametrize(("text", "slots"), [
    ("I'm an engineer at Intel.", [("occupation", "engineer"), ("employer", "Intel")]),
    ("I work as a data analyst at Deloitte.",
     [("occupation", "data analyst"), ("employer", "Deloitte")]),
    ("我是腾讯的工程师。", [("occupation", "工程师"), ("employer", "腾讯")]),
    ("我现在是字节跳动的产品经理", [("occupation", "产品经理"), ("employer", "字节跳动")]),
    # no employer named: a place, a generic workplace
    ("I'm a nurse at the local hospital.", [("occupation", "nurse")]),
    ("我是北京的老师", [("occupation", "老师")]),
    ("我是一家公司的经理", [("occupation", "经理")]),
])
def test_the_employer_named_beside_a_role_is_read_too(text: str,
                                                      slots: list[tuple[str, str]]) -> None:
    """Reproduction: "I'm an engineer at Intel" held the occupation only; a later "where do
    I work?" had no employer to answer with."""
    assert _slots(text) == slots


@pytest.mark.parametrize(("text", "slot"), _BLIND_READ_ALONE)
def test_blind_split_statements_read_alone(text: str, slot: tuple[str, str]) -> None:
    assert _slots(text) == [slot]


@pytest.mark.parametrize("text", [
    "People keep assuming I'm 40 because of the grey hair, ugh. Any hair dyes that don't look "
    "fake?",
    "Everyone thinks I'm 25 when they meet me.",
])
def test_an_age_others_take_the_user_for_is_not_read(text: str) -> None:
    assert _slots(text) == []


@pytest.mark.parametrize("text", [
    "Stop with the bullet points please, I'd rather you write in normal paragraphs for all your "
    "answers.",
    "new rule: no more bullet points, write everything as plain paragraphs in all your answers",
    "之后的回复可以多加点emoji，感觉更活泼😆",
])
def test_a_standing_instruction_for_all_answers_is_read(text: str) -> None:
    from memstrata.policies.extraction import extract

    found = extract(text)
    assert [e.rule for e in found] == ["from_now_on"] and found[0].correction


def test_on_keto_is_a_diet() -> None:
    assert _slots("I'm on keto.") == [("diet", "keto")]


def test_ascii_punctuation_in_chinese_reads_as_full_width() -> None:
    from memstrata.policies._extraction_zh import to_simplified

    assert to_simplified("跳槽成功!现在是腾讯的产品经理了,帮我想想") == \
        "跳槽成功！现在是腾讯的产品经理了，帮我想想"
    # only a mark beside Chinese: numbers and Latin words keep theirs
    assert to_simplified("Google, 3,000 元") == "Google, 3,000 元"
    assert to_simplified("在Google,现在") == "在Google，现在"
    assert to_simplified("I moved, then left.") == "I moved, then left."


def test_a_standing_instruction_after_what_the_user_said_before() -> None:
    from memstrata.policies.extraction import extract

    found = extract("之前说的简短作废,以后都给我讲详细点,每一步都展开说")
    assert [e.rule for e in found] == ["from_now_on"]


@pytest.mark.parametrize("text", [
    "hey can we switch to French for all your replies from now on? trying to practice",
    "new rule: everything in imperial pls, feet pounds fahrenheit",
    "还是换回简体吧,以后都用简体,繁体看着累",
])
def test_heldout33_standing_instructions(text: str) -> None:
    from memstrata.policies.extraction import extract

    assert [e.rule for e in extract(text)][:1] == ["from_now_on"]


def test_an_accented_city_is_read_as_people_type_it() -> None:
    from memstrata.policies.gazetteer import cities_en

    names = cities_en()
    assert {"Montreal", "Montréal", "Zurich", "Sao Paulo"} <= names
    assert "Can" not in names  # Çan folds into a word: only large cities are folded


def test_a_vegan_prior_in_chinese_is_read() -> None:
    assert _slots("我是纯素。") == [("diet", "vegan")]
