"""A newer statement close to the asked thing that does not report the user's own state
now - someone else's change, a plan, the past, a one-off, a question - never passes for
the current value (knowledge-update guard cases, ``benchmarks/data/knowledge_update_guard1.json``).

Real SQLite and PostgreSQL, the real embedding model.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.policies.standing import (
    reads_as_own_change,
    reports_own_state,
    why_not_own_state,
)

DAY0 = datetime(2026, 1, 5, 19, 0, tzinfo=UTC)
FILLER = ["Why is the sky blue?", "Give me a quick recipe for garlic butter shrimp.",
          "为什么天空是蓝色的？", "红烧肉怎么做才不腻？"]

#: (old statement, later distractor, question) - the Mint/Verizon, Netflix/Hulu, salary
#: and rent rows ranked the distractor above the old value (on both backends) before
#: the statement was read for whose state it reports
GUARDS = [
    ("I'm on Mint Mobile, $30 a month for unlimited. Does that plan include hotspot?",
     "Is Verizon's coverage better than T-Mobile's up in the Rockies? Going camping in "
     "Colorado next month.",
     "Which carrier is my phone plan with? Checking whether I get wifi calling abroad."),
    ("We only pay for Netflix right now, cut everything else to save money. What's good on "
     "there this month?",
     "Is the new season of The Bear on Hulu? Everyone at work keeps talking about it.",
     "Going through my monthly subscriptions: which streaming service am I paying for?"),
    ("我现在用的是小米14，拍照还挺不错的。请问怎么关掉系统里的广告推送？",
     "华为Mate 70出来了，有点心动，你说要不要等双十一再入手？",
     "我现在用的是什么手机来着？要买个手机壳。"),
    ("我现在税前月薪一万八，在成都算中等水平吧？年终奖一般怎么谈比较好？",
     "大学室友跳槽去了华为，月薪直接涨到三万五，好羡慕。跳槽涨多少算正常？",
     "我现在每个月工资多少？办房贷要填收入。"),
    ("我开的视频会员是爱奇艺的年卡，主要看综艺。最近有什么好看的新节目？",
     "双十一腾讯视频年卡在打折，犹豫要不要入一个，你觉得划算吗？",
     "我现在开的是哪个平台的视频会员？想整理一下每个月的订阅支出。"),
    ("我现在每个月房租4500，一室一厅，在杭州滨江。这个价格算贵吗？",
     "上海徐汇的一室户现在一般多少钱一个月？帮朋友打听一下。",
     "我每个月交多少房租？在做记账预算。"),
]


@pytest.mark.parametrize(("old", "distractor", "question"), GUARDS)
def test_a_newer_statement_that_is_not_the_users_state_does_not_pass_for_the_current_value(
        manager: MemoryManager, clock: ManualClock, old: str, distractor: str,
        question: str) -> None:
    user = "guard"
    ids = {}
    for day, text in [(0, FILLER[0]), (0, old), (0, FILLER[2]), (20, FILLER[1]),
                      (40, distractor), (40, FILLER[3])]:
        decision = manager.remember(user, MemoryInput(content=text, at=DAY0 + timedelta(
            days=day), session_id=f"s{day}"))
        assert decision.record_id
        ids[text] = decision.record_id
    clock.set(DAY0 + timedelta(days=100))
    ranked = [h.id for h in manager.recall(user, question, record_use=False)]
    assert ids[old] in ranked
    assert ids[distractor] not in ranked or ranked.index(ids[old]) < ranked.index(
        ids[distractor])
    # the reading can be switched off: it is a policy weight, not a filter
    assert RetrievalPolicy(not_current_weight=1.0).not_current_weight == 1.0


def test_a_newer_change_of_the_users_own_state_still_ranks_first(
        manager: MemoryManager, clock: ManualClock) -> None:
    ids = [manager.remember("u", MemoryInput(content=text, at=DAY0 + timedelta(days=day),
                                             session_id=f"s{day}")).record_id
           for day, text in [
               (0, "I drive a red 2012 Honda Civic."),
               (0, FILLER[0]),
               (40, "Sold the Civic and got a Tesla Model 3."),
               (40, "My sister finally bought a Subaru Outback, she loves it.")]]
    clock.set(DAY0 + timedelta(days=100))
    ranked = [h.id for h in manager.recall("u", "What car do I drive these days?",
                                           record_use=False)]
    assert ranked[0] == ids[2]
    # the sister's new car ranked level with the user's before; now below the old value
    assert ids[3] not in ranked or ranked.index(ids[3]) > ranked.index(ids[0])


@pytest.mark.parametrize(("text", "question", "why"), [
    # the user's own state, a change or not, with a question to the assistant after it
    ("Setting up my new iPhone 15 tonight. How do I move my WhatsApp chats?", "", None),
    ("finally caved and got an iPhone 15 Pro 🙃 how do I move my chats over??", "", None),
    ("Since going fully vegan in October I miss cheese - any cashew-based recipes?", "", None),
    ("Sorry if I'm slow today, first week at Halvorsen Freight and onboarding is a lot.",
     "", None),
    ("Got offered a secondment in Lisbon, so I've dropped Italian and started Portuguese.",
     "", None),
    ("We moved to Denver last month and I'm still not used to the altitude.", "", None),
    ("My wife Dana is a nurse at St. Mary's.", "What does Dana do for work?", None),
    ("My son Leo goes to Oakwood Elementary.", "What school does Leo go to?", None),
    ("All my accounts are at Alliant Credit Union now.", "", None),
    ("比亚迪海豹提车一周了，开着是真安静。小区车位想装个充电桩，需要物业同意吗？", "", None),
    ("我在学日语，准备今年十二月考N2。", "", None),
    ("我工作用的是一台联想ThinkPad。", "", None),
    ("我女儿朵朵在阳光幼儿园上大班。", "朵朵在哪个学校上学？", None),
    ("续约合同签了，从下个月起每月5200，押一付三，这个涨幅算正常吗？", "", None),
    ("walgreens just texted that my refill is ready but i cant get over there till thursday, "
     "will they hold it that long?", "", None),
    # not the user's own state now
    ("Is Verizon's coverage better than T-Mobile's?", "", "question"),
    ("Can you compare the iPhone 15 Pro and the Galaxy S24 cameras?", "", "question"),
    ("My dad finally got an iPhone 15 Pro. How do I help him move his photos?", "",
     "someone else"),
    ("My husband just signed up with a doctor at One Medical because he can book same-day "
     "visits.", "Who's my doctor?", "someone else"),
    ("Really eyeing the new MacBook Air. Should I wait for Black Friday?", "", "plan"),
    ("Got an offer from Stripe today, but I'm not sure yet.", "", "plan"),
    ("Found my old lease from 2014 while cleaning, I was paying $700 back then.", "", "past"),
    ("On a work trip in Phoenix and grabbed a day pass at a gym near the hotel.", "",
     "one-off"),
    ("大学室友跳槽去了华为，月薪直接涨到三万五，好羡慕。", "", "someone else"),
    ("有点想明年开始学西班牙语，听说发音比较简单。", "", "plan"),
    ("收拾房间翻出了小学时学过的电子琴，好多年没碰了。", "", "past"),
    ("今天下大暴雨，干脆打车去的公司，花了快八十块。", "", "one-off"),
    ("上海徐汇的一室户现在一般多少钱一个月？帮朋友打听一下。", "", "question"),
    # heldout30's and guard10's first-look misses: a question without its mark, a short
    # rhetorical tail, "got used to", 想像 (imagine), hearsay, a memory kept to this day
    ("all 3 squat racks at my Crunch were taken again at 6pm smh. whats a decent squat "
     "substitute when theres no rack free", "", None),
    ("finally got used to the trackpad gestures on my macbook air and now every other laptop "
     "feels broken lol.", "", None),
    ("我那支遠傳門號的5G在家附近訊號比想像中好，昨天在捷運上看直播都沒卡。", "", None),
    ("mate since moving up to Sheffield for work I've bought a Sheffield United season ticket "
     "and honestly I'm all in on the Blades now, Arsenal who?", "", None),
    ("I'm vegetarian.", "", None),
    ("real talk is the iphone 15 camera actually better than mine or is that just apple "
     "marketing", "", "question"),
    # (a plan asked with "??" reads as the plan since guard16's first look)
    ("once winter hits maybe ill switch to the train?? idk. are monthly transit passes usually "
     "worth it or nah", "", "plan"),
    ("a friend swears the viola is easier to learn than what i play. is that true at all?", "",
     "question"),
    ("is united polaris business class worth it compared to the airline i usually fly? seen "
     "some crazy reviews", "", "question"),
    ("lol remember in college i basically lived on caramel frappuccinos.", "", "past"),
    ("man i miss my old thinkpad x220, that keyboard was unreal.", "", "past"),
    ("my usual place was closed so i grabbed a cut at some supercuts by the airport lmaoo.", "",
     "one-off"),
    ("说真的 iphone15拍照比我这台强很多吗？还是纯营销", "", "question"),
    ("陪室友搞三天生酮饮食，纯属陪她哈哈😂 第一天就头晕正常吗", "", "one-off"),
    ("联通宽带是不是比我家现在这个便宜？听人说晚上更稳 真的假的", "", "plan"),
    ("小时候外婆家只喝茉莉花茶，那个香味到现在都记得🥲", "", "past"),
    # small talk states nothing (guard splits 2-9: with Chinese read by word overlap, such a
    # filler message was read as the user's and outdated the value asked for)
    ("给我讲个冷笑话吧。", "", "question"),
    ("今天天气真好，你最喜欢哪个季节？", "", "question"),
    ("周末愉快！有什么放松心情的小建议吗？", "", "question"),
    ("「三人行，必有我师焉」出自哪里？", "", "question"),
    ("帮我想一个有趣的周末桌游,适合四五个人玩。", "", "question"),
    # read after the first looks at guard2, guard3 and heldout23-24
    ("联通这个59元的套餐居然有100G流量，就是在地铁里信号偶尔会差一点，这正常吗？", "", None),
    ("爸妈搬来苏州跟我们一起住以后，周末带他们去哪儿逛比较好？", "我父母现在住在哪里？", None),
    ("Leo's best friend Owen just switched to the Eastside Strikers.",
     "Which team does Leo play for?", "someone else"),
    ("我爸刚换了台小米14，让我教他用。给老人用的手机有哪些设置要调？", "我手机是什么型号？",
     "someone else"),
    ("比亚迪海豹现在落地大概多少钱？随便问问。", "", "question"),
    ("My new earbuds came with a free 3-month Apple Music trial so I'm poking around in it.",
     "", "one-off"),
    ("Back at my old apartment I had Comcast and it took four visits to fix an outage.", "",
     "past"),
    # read after the first look at guard4
    ("My brother just accepted an offer from Figma!! We're taking him out tonight.", "",
     "someone else"),
    ("My brother got a job in Austin, so we moved there too.", "", None),
    ("我堂哥刚从北京搬去了厦门，说那边空气好多了。我国庆去找他玩。", "", "someone else"),
    ("I might switch to Mint next spring, but for now I'm holding off.", "", "plan"),
    ("Drove to the office this week because the train line is closed. Should be back to "
     "normal by Friday.", "", "one-off"),
    ("My dentist was out on leave, so a fill-in saw me for the cleaning.", "", "one-off"),
    ("Is the Garmin Forerunner better than the Coros Pace? Asking because my knees hurt.",
     "", "question"),
    ("高铁站附近没有喜茶，只好买了杯蜜雪冰城凑合一下。", "", "one-off"),
    ("小米手环8的续航真有两周吗？跟华为手环比，哪个心率更准？", "", "question"),
    ("隔壁组的老陈刚跳槽去了字节，工资涨了四成。", "", "someone else"),
    # read after the first look at guard5
    ("Dana from my book club keeps raving about Orangetheory, she signed up last month.", "",
     "someone else"),
    ("Might move to Fastweb once our contract ends. Just an idea for now.", "", "plan"),
    ("If Spotify ever drops its price I'd probably switch back. Not until then.", "", "plan"),
    ("Found my very first library card from when I was twelve. Wild how long ago that was.",
     "", "past"),
    ("The shop ran out of almond milk so I had to get regular milk this morning.", "",
     "one-off"),
    ("今天公交坏了，只好骑共享单车去上班，累死了。", "", "one-off"),
    ("在考虑要不要换到电信，还没想好，怕信号不如现在的好。", "", "plan"),
    ("翻到大学时乐队演出的照片，那时候天天练鼓，现在连节奏都找不准了。", "", "past"),
    ("Ditched the gym membership for now, I run outside every morning.", "", None),
    # read after the first look at guard6
    ("Omar from choir just left Deloitte for a startup, he's thrilled.", "", "someone else"),
    ("neighbor got a new golden retriever puppy and it barks all night.", "", "someone else"),
    ("Spent Saturday helping my mom move her number over to Visible.", "", "someone else"),
    ("If I ever get the bonus I'm buying a Peloton. Not sure it's worth it though.", "",
     "plan"),
    ("A Google recruiter emailed about a staff role. I said I'd think about it, but I don't "
     "have the energy right now.", "", "plan"),
    ("Left my Kindle at my sister's, so I'm reading on my partner's old iPad until I get it "
     "back.", "", "one-off"),
    ("Bus drivers are on strike, so for the next two weeks I'm cycling in.", "", "one-off"),
    ("Found a box of Chase statements from 2011, from my very first account.", "", "past"),
    ("How does Starlink compare to fiber for gaming? Saw an ad and got curious.", "",
     "question"),
    ("王医生这周休年假，先让代班的李医生看了看。", "", "one-off"),
    ("移动的宽带现在什么价位？就是问问，了解一下行情。", "", "question"),
    # guard7's distractors (its first look was 0.525, English 0.35): a lead-in before the
    # someone else, a question opened by "And", research, a plan said in other words, a
    # childhood "from when I was a kid", a car in the shop, a pay that stays the same, a
    # later sentence's plan, a change said of a thing and not of the user
    ("Well, my sister finally did it. She packed up everything and moved to Denver this "
     "weekend. I helped her load the truck.", "", "someone else"),
    ("Crazy news: my coworker Dana's landlord just bumped her rent to $2,300.", "",
     "someone else"),
    ("Is Google Fiber available in most cities these days? And how does its pricing usually "
     "stack up against cable plans?", "", "question"),
    ("What's the deal with Ally Bank for high-yield savings? Just doing some research.", "",
     "question"),
    ("I keep toying with the idea of going fully vegan in the new year.", "", "plan"),
    ("Found a stack of appointment cards from when I was a kid: Dr. Feldman, the dentist with "
     "the fish tank.", "", "past"),
    ("Ha, my mom sent me a photo of me at age eight in a White Sox cap.", "", "someone else"),
    ("I dug out a photo of me at age eight in a White Sox cap.", "", "past"),
    ("Mine's at the dealership all week, so they handed me a Kia Sportage to get around in.",
     "", "one-off"),
    ("Annual bonus just hit my account: $6,500! Base pay stays the same, sadly.", "",
     "unchanged"),
    ("We toured Westbrook Academy on Saturday. Gorgeous campus. Still just weighing options for "
     "next fall.", "", "plan"),
    ("Found my old guitar in the back of the closet. The strings are completely rusted now.", "",
     "past"),
    ("突然好想大学门口那家黄焖鸡米饭，那几年几乎天天去。现在估计早就关门了吧。", "", "plan"),
    ("大学门口那家黄焖鸡米饭，那几年几乎天天去。现在估计早就关门了吧。", "", "past"),
    ("昨天阿里的HR给了个口头offer，涨幅有30%。不过我还挺舍不得现在的团队，想了一晚上还是婉拒了。",
     "", "plan"),
    ("为了听周杰伦的新歌，领了张QQ音乐七天绿钻体验卡，听了好几遍。", "", "one-off"),
    ("听说公司可能要搬到望京，真搬的话我估计得改开车了。不过目前还只是传言。", "", "plan"),
    # guard8's (first look 0.65): someone named after a lead-in or further in, a one-time
    # urgent care visit, a plan put off (再说, 不划算), a drink sold out
    ("Big news at lunch today, Marcus, my buddy from work, accepted an offer at Stripe.", "",
     "someone else"),
    ("Haha so after like 30 years my dad finally ditched his old barber and now goes to Clip "
     "Joint.", "", "someone else"),
    ("Couldn't get in with my usual office so I did a one-time urgent care visit this morning.",
     "", "one-off"),
    ("跟你说个事，我表弟上周辞职去深圳了，说那边机会多。", "", "someone else"),
    ("试驾完有点心动，不过算了算账现在换车不划算，等这辆开满十年再说。", "", "plan"),
    ("今天早上瑞幸的椰浆卖完了，店员推荐我换了杯燕麦拿铁，味道还行吧。", "", "one-off"),
    # (a relative the question asks about is no one else)
    ("Now that my wife is teaching in the nursing program, she's home by 4.",
     "What does my wife do for work these days?", None),
    # ... and what must stay the user's own: a subject dropped before a past act, a tool
    # sold "to make room ... in the garage"
    ("Dropped Spanish for now — got a job offer in Osaka so it's all Japanese all the time.", "",
     None),
    ("Sold most of my shop tools to make room for the pottery wheel in the garage.", "", None),
    # guard13's (first look 0.45): "if i ever" and "id probably" typed without an
    # apostrophe, a work conference till Friday, a comparison asked out of curiosity, a
    # request with no "can you", "back when" parted from its clause, a sister's move with
    # spaces for commas (馋死我了 is no move of the user's), Chinese questions without a
    # question mark, a phone borrowed while one is repaired
    ("if i ever end up moving to europe id probably have to pick up german lol. anyway can you "
     "explain what a roth ira is like im 5", "", "plan"),
    ("In Chicago for a work conference till Friday, the hotel coffee is tragic lol.", "",
     "one-off"),
    ("Can you compare Apple Music vs Tidal sound quality for me? Just reading about lossless "
     "audio out of curiosity.", "", "question"),
    ("tell me a joke about penguins", "", "question"),
    ("back when I worked retail at Target I thought closing shifts were rough lol, nothing "
     "compared to now.", "", "past"),
    ("我表姐刚搬去成都了 天天给我发火锅照片 馋死我了😂 对了帮我想想周末干点啥", "", "someone else"),
    ("地球到月亮有多远", "", "question"),
    ("饿了么和京东外卖现在哪个补贴多 给我比较下呗", "", "question"),
    ("手机拿去修屏幕了 这几天借我妈的旧iPhone用 好不习惯", "", "one-off"),
    # guard14's (first look 0.60): a flatmate typed "roomate", a trip booked, a phone work
    # hands out, a question after "wait" or "anyway", a posting at a client's site, a
    # commute this week's roadworks forced, a company account; Chinese trivia asked
    # without a question word but as a request (简单说说, 出个脑筋急转弯给我猜猜, 到底)
    ("my roomate went full keto and now our fridge is literally just bacon and cheese "
     "lmaooo. anyway whats a good podcast for a long drive", "", "someone else"),
    ("booked 10 days in japan for april!!! so hyped. whats the best way to pack light for a "
     "trip like that, carry-on only", "", "one-off"),
    ("Work just handed me a Samsung Galaxy S23 for on-call stuff, which is fine I guess.", "",
     "one-off"),
    ("ngl if marco ever retires i might try that salon velvet on main st, heard good things. "
     "wait what year did the first iphone come out", "", "question"),
    ("这个月被派到合作方那边驻场 在华为坂田基地办公一个月 食堂还挺好吃的哈哈", "", "one-off"),
    ("这周地铁那段在施工 只能打车去公司 钱包在滴血😂 帮我写个请假条吧", "", "one-off"),
    ("公司给我开了企业邮箱 linyue@xinghe-tech.com 以后工作上的事都用这个", "", "one-off"),
    ("为什么天空是蓝色的 简单说说", "", "question"),
    ("出个脑筋急转弯给我猜猜", "", "question"),
    ("西红柿到底算水果还是蔬菜哈哈", "", "question"),
    # guard15's (first look 0.575): a work phone only for on-call, a brokerage account
    # "separate from my everyday banking", a comparison "just curious" (after "Dr." that
    # ended no sentence), "is it normal" asked without a mark, a wish given up (不过先不想了
    # changes nothing), a yoga class 跟健身房是两码事
    ("got my work phone set up today, number's 555-0199, it's only for the on-call rotation "
     "ugh. anyway how do i get a coffee stain out of a white shirt", "", "one-off"),
    ("Just opened a brokerage account with Fidelity for retirement stuff, totally separate "
     "from my everyday banking. Anyway, can you recommend a good intro book on stoicism?", "",
     "unchanged"),
    ("Can you compare the reviews for Dr. Nguyen and Dr. Okafor? Just curious how they stack "
     "up. Also, what's a good stretch for tight hamstrings?", "", "question"),
    ("compare verizon fios and spectrum for me? just curious how prices look these days. also "
     "is it normal for a fridge to hum at night", "", "question"),
    ("以后有机会的话也想学学西班牙语 感觉挺好听的 不过先不想了 帮我算下120打八五折是多少", "",
     "plan"),
    ("公司楼下新开了家瑜伽馆 报了个周末瑜伽课 跟健身房是两码事哈 对了 最近有什么好看的电影", "",
     "unchanged"),
    # ... "Dr." ends no sentence, and a clause describing a name keeps the past it states
    ("Cleaning out a drawer I found an appointment card from Dr. Kaplan, the dentist I used to "
     "see back in my college town.", "", "past"),
    # heldout35's (and 30/33/34's): what a question takes for granted the user has
    ("how do i get my macbook air to stop dimming the screen when i unplug it, its driving me "
     "nuts during meetings", "", None),
    ("whats the cheapest way to get from my place in seattle to seatac at 5am, uber surge is "
     "gonna be insane", "", None),
    ("ok whats the real difference between は and が, my japanese tutor explained it twice and "
     "i still dont get it 😭", "", None),
    # ... not a common noun, nor a thing weighed or left behind
    ("would google fiber be worth it if its on my street? how do u even check availability",
     "", "question"),
    ("how do i reset my old iphone 12?", "", "question"),
    ("Is my Verizon plan worth keeping?", "", "question"),
    # heldout36's and guard16's first looks: "maybe 40%" is no plan, "my bf daniel" is
    # the boyfriend the question asks about; a plan asked with "??", the other half of an
    # alternative question, an account kept for one purpose (专门存定期的)
    ("first all-hands at medtronic today and i understood maybe 40% of the acronyms 😅 whats "
     "CAPA stand for", "", None),
    ("my bf daniel bought like 6 lbs of peaches at the farmers mkt 🍑 what can we make that "
     "isnt pie", "Can you draft a short anniversary note to my boyfriend?", None),
    ("thinking of maybe switching to netflix next month?? idk the price just went up again 🙄 "
     "whats a good comfort show rn", "", "plan"),
    ("does verizon have better coverage in rural montana than the others? or is it all bad out "
     "there", "", "question"),
    ("今天去建行开了个户 专门存定期的 利率高一丢丢 顺便问下大额存单是啥", "", "unchanged"),
    # ... while 只用来 is said of the old one as often as of the new
    ("公司这个月起统一改成建设银行代发工资了，招行那张卡我以后基本就只用来还信用卡。", "", None),
    # guards the reading of a thing's make lost (3, 4, 7, 8, 12, 13): a question after 问一下
    # or "Quick one:", its other half after 吗, "how big should ..." unmarked, a laptop at the
    # repair shop - while a laptop IT hands out is the user's
    ("问一下，移动的号码出国漫游一天大概多少钱？", "", "question"),
    ("电信现在是不是有那种29块100G的卡？靠谱吗还是坑", "", "question"),
    ("Quick one: would an iPhone 15 Pro be noticeably better for low-light photos? Give me the "
     "honest pros and cons.", "", "question"),
    ("is ally's savings rate better than marcus rn? just curious. also how big should an "
     "emergency fund even be", "", "question"),
    ("Spilled coffee on the keyboard (of course), so it's at the repair shop and IT handed me "
     "a beat-up Dell Latitude to use till Friday.", "", "one-off"),
    ("IT handed me a MacBook Pro yesterday. How do I right-click on this thing?", "", None),
    # guards the reading of home internet lost (2, 16): an offer not yet taken up, a
    # second place's provider
    ("楼下有个联通的业务员说可以免费给我装千兆，不过要签两年合约，我还没答应。这种推销靠谱吗？", "",
     "plan"),
    ("signed up for starlink for the cabin up north, the dish is way bigger than i expected lol",
     "", "unchanged"),
    # ... and what stays the user's own: a company laptop given for home use is the
    # user's laptop, a statement with a mark of surprise, "还是" that asks nothing
    ("公司给配了台MacBook Pro，那台ThinkPad就留家里给孩子上网课了。", "", None),
    ("been fully vegan for like a month and honestly my skin is so much better?? random but "
     "how long does opened tofu last in the fridge", "", None),
    ("我还是喜欢吃辣", "", None),
    # ... while a word of "any" asks nothing: 什么都吃 states the diet
    ("我什么都吃", "", None),
    ("我每天坐地铁上班 2号线 四十分钟左右", "", None),
])
def test_whose_state_a_statement_reports(text: str, question: str, why: str | None) -> None:
    assert why_not_own_state(text, question) == why
    assert reports_own_state(text, question) is (why is None)


@pytest.mark.parametrize(("text", "change"), [
    ("我调到风控组了。", True),  # the general reader does not list 调到
    ("上周提了一辆小米SU7，开着挺稳。", True),
    ("维生素D和钙片能一起吃吗？上次医生提了一句我没记住。", False),  # 提了一句 is "mentioned"
    ("First week at Brightline done.", True),
    ("I live in Munich.", False),
])
def test_a_change_of_the_users_own_state_reads_as_a_change(text: str, change: bool) -> None:
    assert reads_as_own_change(text) is change


def test_not_current_weight_is_checked() -> None:
    with pytest.raises(ValueError, match="not_current_weight"):
        RetrievalPolicy(not_current_weight=1.5)


def test_someone_elses_news_is_weighed_at_a_fifth_for_a_question_about_now(
        manager: MemoryManager, clock: ManualClock) -> None:
    """guard10 and guard11 at first look: news read as someone else's still outranked the
    user's own value at half weight when it shared more words with the question; the
    default ``not_current_weight`` is 0.2 since."""
    old = "I live in Denver now, been here about two years."
    news = ("my sister finally did it, she packed up and moved to portland last weekend!! "
            "any ideas for a housewarming gift i can ship long distance?")
    for day, text in [(0, old), (0, FILLER[0]), (40, news), (40, FILLER[1])]:
        assert manager.remember("g11", MemoryInput(content=text, at=DAY0 + timedelta(
            days=day), session_id=f"s{day}")).record_id
    clock.set(DAY0 + timedelta(days=100))
    question = "which city should i be searching in for a local hiking meetup?"

    def score(policy: RetrievalPolicy) -> float:
        hits = manager.recall("g11", question, record_use=False, min_relevance=0.0,
                              policy=policy)
        return next(h.score for h in hits if h.record.content == news)

    assert RetrievalPolicy().not_current_weight == 0.2
    assert score(RetrievalPolicy()) == pytest.approx(
        0.2 * score(RetrievalPolicy(not_current_weight=1.0)), rel=1e-6)


def _recording_what_is_read(monkeypatch: pytest.MonkeyPatch, manager: MemoryManager
                            ) -> list[str]:
    """Every rule recall could read a memory's text with, and the reader, wrapped: the
    texts they are called with are recorded (the question may be read; a stored text may
    not)."""
    from memstrata.memory import ranking
    from memstrata.policies import standing

    seen: list[str] = []

    def recording(fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen.extend(a for a in args if isinstance(a, str))
            return fn(*args, **kwargs)
        return wrapper

    for module, name in [(ranking, "reads_as_own_change"), (ranking, "reports_own_state"),
                         (ranking, "extract"), (ranking, "change_of"),
                         (ranking, "names_possession"), (standing, "own_state")]:
        monkeypatch.setattr(module, name, recording(getattr(module, name)))
    reader = manager.reader
    for name in ("read", "relate"):
        monkeypatch.setattr(reader, name, recording(getattr(reader, name)))
    return seen


@pytest.mark.parametrize(("old", "distractor", "question"), GUARDS[:4] + GUARDS[5:])
def test_recall_reads_no_stored_text_whose_and_when_are_stored_with_the_memory(
        manager: MemoryManager, clock: ManualClock, monkeypatch: pytest.MonkeyPatch,
        old: str, distractor: str, question: str) -> None:
    """Issue 32: the currency stage weighs someone else's news, a plan or a one-off by
    the stance stored when the memory was written - recall runs no rule and no reader
    over stored text (only over the question)."""
    user = "stance"
    texts = [FILLER[0], old, FILLER[2], FILLER[1], distractor, FILLER[3]]
    ids = {}
    for day, text in zip([0, 0, 0, 20, 40, 40], texts, strict=True):
        decision = manager.remember(user, MemoryInput(content=text, at=DAY0 + timedelta(
            days=day), session_id=f"s{day}"))
        assert decision.record_id
        ids[text] = decision.record_id
    clock.set(DAY0 + timedelta(days=100))
    seen = _recording_what_is_read(monkeypatch, manager)
    ranked = [h.id for h in manager.recall(user, question, record_use=False)]
    assert not set(seen) & set(texts)
    assert ids[old] in ranked
    assert ids[distractor] not in ranked or ranked.index(ids[old]) < ranked.index(
        ids[distractor])
    # the control: a memory without a stored stance (written before stances were) is
    # read at query time - what the recording above would have caught
    from memstrata.memory import ranking

    monkeypatch.setattr(ranking, "stored_stance", lambda meta, text: None)
    assert [h.id for h in manager.recall(user, question, record_use=False)] == ranked
    assert set(seen) & set(texts)
