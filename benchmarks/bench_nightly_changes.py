"""Benchmark: the nightly path keeps the current value current on multi-session chats.

Ten conversations written for this benchmark (six English, four Chinese), each
three or four sessions days or weeks apart, the way users talk: a fact is stated
in passing, small talk and task chatter around it, and later the value changes
without an "actually" ("We moved to Munich last month, so I need a new dentist").
Some changes are readable by the fast extractor, some only by a reader of the
whole session (marked ``llm_only``: "the commute from our new place in Munich").

Every turn goes through ``MemoryManager.observe`` in date order; after each
session day the nightly jobs run (``summarize``, ``conflicts``, ``expire``). Two
modes:

* ``offline`` - no LLM configured: the fast extractor plus the jobs' offline rules;
* ``llm_loopback`` - an LLM configured against the loopback OpenAI-format server,
  whose answers to the LLM reader's calls are the readings a careful reader would give
  the unread turns (``llm``: written with the conversations; the real prompt and schema
  are sent and the real checks read the answer). This measures the plumbing - the
  reader's request, its checks, readings forming memories, supersession - not a
  model's reading (``bench_never_worse.py --llm`` runs a real one).

Per probe (a value that changed): is the new value the active one and the old one
retired; does the top ``recall`` hit (k=3) for the probe's question carry the new
value (``top_recall_hit_current``: in its text, or as its slot's value), the old
one only (``stale``), or is there no hit at all? Also: how many evidence turns
became memories at ``observe`` time. A probe's question asks for a profile fact, so
recall answers it from the current slot first (``asked_attribute``); these columns
show what the user would get today.

    python benchmarks/bench_nightly_changes.py   # -> results/nightly_changes.json
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

RESULTS = Path(__file__).parent / "results" / "nightly_changes.json"
START = datetime(2026, 1, 5, 18, tzinfo=UTC)

#: (days after START, turns); a user turn starting with "*" carries a durable fact
Session = tuple[int, list[str]]

CONVERSATIONS: list[dict[str, Any]] = [
    {"id": "en-anna", "lang": "en", "sessions": [
        (0, ["Hi! Can you help me plan a weekend?", "Of course.",
             "*I live in Berlin, so something within a few hours by train.", "Noted.",
             "*I work as a teacher, so it has to be a school holiday.", "Understood.",
             "Thanks, that's all for today."]),
        (21, ["Hey again.", "Hello!",
              "*We moved to Munich last month, so I need a new dentist nearby.", "Sure.",
              "Ideally one that is open on Saturdays.", "I'll look."]),
        (60, ["Quick one.", "Yes?",
              "*I quit teaching and became a nurse, so my shifts are all over the place.",
              "That's a big change.", "Can you suggest meal prep ideas?", "Of course."]),
    ], "probes": [
        {"attribute": "city", "old": "Berlin", "new": "Munich",
         "query": "Which city do I live in?"},
        {"attribute": "occupation", "old": "teacher", "new": "nurse",
         "query": "What is my job?"},
    ], "llm": {}},
    {"id": "en-ben", "lang": "en", "sessions": [
        (0, ["Morning!", "Good morning.", "*I work at Siemens in the energy division.",
             "Nice.", "I need a reminder for the quarterly report.", "Set."]),
        (14, ["Hi.", "Hello.", "*I started a new job at Google this week!", "Congratulations!",
              "Can you help me with my onboarding checklist?", "Sure."]),
        (40, ["*I'm vegetarian, by the way, so no steakhouses for the team dinner.",
              "Got it.", "Somewhere near the office please.", "Okay."]),
        (80, ["*I went vegan in January and feel great.", "Good to hear.",
              "Please find a place for Friday.", "Will do."]),
    ], "probes": [
        {"attribute": "employer", "old": "Siemens", "new": "Google",
         "query": "Where do I work?"},
        {"attribute": "diet", "old": "vegetarian", "new": "vegan",
         "query": "What is my diet?"},
    ], "llm": {}},
    {"id": "en-cara", "lang": "en", "sessions": [
        (0, ["*My name is Katherine.", "Nice to meet you.",
             "*I'm 29 and training for my first marathon.", "Great goal.",
             "Can you make me a plan?", "Sure."]),
        (30, ["Hi there.", "Hello!", "*Please call me Kate, everyone does.", "Will do, Kate.",
              "How's my plan looking?", "On track."]),
        (50, ["*I turned 30 yesterday!", "Happy birthday!",
              "Let's adjust my heart-rate zones.", "Done."]),
    ], "probes": [
        # what the user wants to be called is its own attribute: it does not replace the name
        {"attribute": "preferred_name", "old": None, "new": "Kate",
         "query": "What should you call me?"},
        {"attribute": "age", "old": "29", "new": "30", "query": "How old am I?"},
    ], "llm": {}},
    {"id": "en-dev", "lang": "en", "sessions": [
        (0, ["Hey.", "Hi!", "*I live in Leeds with my partner.", "Okay.",
             "What's a good weekend hike nearby?", "Try the Dales."]),
        (35, ["Hi again.", "Hello.",
              "*The commute from our new place in Bristol is so much shorter.",
              "Nice.", "Can you find climbing gyms nearby?", "Sure."]),
        (70, ["Thanks for the gym list.", "You're welcome.",
              "I went twice already.", "Great!"]),
    ], "probes": [
        {"attribute": "city", "old": "Leeds", "new": "Bristol", "llm_only": True,
         "query": "Which city do I live in?"},
    ], "llm": {
        "The commute from our new place in Bristol is so much shorter.": [
            {"attribute": "city", "value": "Bristol", "holder": "user", "when": "now",
             "negated": False, "confidence": 0.9}],
    }},
    {"id": "en-eli", "lang": "en", "sessions": [
        (0, ["*I work as a data analyst at a bank.", "Okay.",
             "Can you summarise this article?", "Sure."]),
        (28, ["Hi.", "Hello.",
              "*Since I joined the product team I mostly write specs, so I'm a product "
              "manager now.", "Congrats.", "Help me write a spec template?", "Of course."]),
        (56, ["*From now on, answer in bullet points please.", "Understood.",
              "What's on my calendar?", "Two meetings."]),
    ], "probes": [
        {"attribute": "occupation", "old": "data analyst", "new": "product manager",
         "query": "What is my job?"},
    ], "llm": {}},
    {"id": "en-fay", "lang": "en", "sessions": [
        (0, ["*I'm a pescatarian, just so you know.", "Noted.",
             "Plan three dinners for the week?", "Here you go."]),
        (20, ["Hi.", "Hello!",
              "*These days I eat meat again, my doctor wanted more iron.", "Okay.",
              "Plan three dinners for the week?", "Sure."]),
        (45, ["*We relocated to Lisbon for my partner's job.", "Exciting!",
              "Any Portuguese dishes to try?", "Bacalhau."]),
    ], "probes": [
        {"attribute": "city", "old": None, "new": "Lisbon",
         "query": "Which city do I live in?"},
    ], "llm": {
        "These days I eat meat again, my doctor wanted more iron.": [
            {"attribute": "diet", "value": "omnivore", "holder": "user", "when": "now",
             "negated": False, "confidence": 0.9}],
    }},
    {"id": "zh-wang", "lang": "zh", "sessions": [
        (0, ["你好。", "你好！", "*我住在北京，平时坐地铁上班。", "好的。",
             "*我在腾讯工作。", "明白。", "帮我订个周末的餐厅吧。", "好的。"]),
        (30, ["在吗？", "在的。", "*我上个月搬到上海了，想找个新的牙医。", "好的。",
              "最好周六也开门。", "我来查。"]),
        (60, ["*我跳槽到了阿里巴巴，下周一入职。", "恭喜！", "帮我准备一下入职清单。", "好的。"]),
    ], "probes": [
        {"attribute": "city", "old": "北京", "new": "上海", "query": "我住在哪个城市？"},
        {"attribute": "employer", "old": "腾讯", "new": "阿里巴巴", "query": "我在哪家公司工作？"},
    ], "llm": {}},
    {"id": "zh-li", "lang": "zh", "sessions": [
        (0, ["*我叫李小红。", "你好，小红。", "*我今年29岁。", "好的。",
             "帮我制定健身计划。", "好的。"]),
        (25, ["*以后叫我小李就行。", "好的，小李。", "计划进行得怎么样？", "很顺利。"]),
        (50, ["*今天是我30岁生日！", "生日快乐！", "帮我推荐一家蛋糕店。", "好的。"]),
    ], "probes": [
        {"attribute": "preferred_name", "old": None, "new": "小李",
         "query": "我希望你怎么称呼我？"},
        {"attribute": "age", "old": "29", "new": "30", "query": "我多大了？"},
    ], "llm": {}},
    {"id": "zh-zhao", "lang": "zh", "sessions": [
        (0, ["*我吃素。", "好的。", "帮我安排一下这周的晚餐。", "好的。"]),
        (30, ["嗨。", "你好。", "*我现在吃全素了，蛋和奶也不吃。", "明白。",
              "重新安排一下晚餐吧。", "好的。"]),
        (60, ["*我是一名老师。", "好的。", "*我转行当程序员了，最近在学Python。", "加油！",
              "推荐几本书。", "好的。"]),
    ], "probes": [
        {"attribute": "diet", "old": "vegetarian", "new": "vegan", "query": "我的饮食习惯是什么？"},
        {"attribute": "occupation", "old": "老师", "new": "程序员", "query": "我的职业是什么？"},
    ], "llm": {}},
    {"id": "zh-chen", "lang": "zh", "sessions": [
        (0, ["*我住在广州。", "好的。", "周末有什么好玩的？", "可以去白云山。"]),
        (40, ["你好。", "你好！", "*新家在深圳，离公司近多了。", "太好了。",
              "附近有什么健身房？", "我查一下。"]),
        (70, ["谢谢你的推荐。", "不客气。"]),
    ], "probes": [
        {"attribute": "city", "old": "广州", "new": "深圳", "llm_only": True,
         "query": "我住在哪个城市？"},
    ], "llm": {
        "新家在深圳，离公司近多了。": [
            {"attribute": "city", "value": "深圳", "holder": "user", "when": "now",
             "negated": False, "confidence": 0.9}],
    }},
]


def _norm(text: str | None) -> str:
    return " ".join((text or "").casefold().split())


def _label(attribute: str, value: str | None) -> str:
    """A value as compared: a label attribute's value by its label, in any language (the
    slot of 我现在吃全素了 says 纯素, the registry's Chinese for vegan)."""
    from memstrata.reading import registry

    reg = registry()
    if value and attribute in reg and reg[attribute].value == "label":
        for label in reg[attribute].labels:
            zh = reg[attribute].labels_zh.get(label)
            if _norm(value) in (_norm(label), _norm(zh)):
                return _norm(label)
    return _norm(value)


def run(mode: str) -> dict[str, Any]:
    from memstrata import ManualClock, MemoryManager
    from memstrata.consolidation import ConsolidationSettings, Consolidator
    from memstrata.memory import default_embedder
    from memstrata.testing import OpenAICompatServer, Reply

    reads = {text: readings for conv in CONVERSATIONS
             for text, readings in conv["llm"].items()}

    def answer(request: dict[str, Any]) -> Reply:
        tools = [t["function"]["name"] for t in request.get("tools") or []]
        if "submit_readings" in tools:  # the LLM reader, asked about the unread turns
            turns = json.loads(request["messages"][-1]["content"])["turns"]
            return Reply.text(json.dumps({"items": [
                {"index": t["index"], "readings": reads.get(t["text"], [])} for t in turns]},
                ensure_ascii=False))
        return Reply.text(json.dumps({"summary": "A conversation with the user.",
                                      "facts": []}))

    tmp = tempfile.mkdtemp(prefix="memstrata-nightly-")
    clock = ManualClock(START)
    evidence = formed = 0
    probes_out = []
    with OpenAICompatServer() as server, MemoryManager.open(
            f"sqlite:///{tmp}/n.db", embedder=default_embedder(), clock=clock,
            index_dir=Path(tmp) / "index") as mm:
        server.on_chat = answer
        llm = {"model": "reader", "base_url": server.base_url, "api_key": "k", "retries": 0,
               "token_budget": 10_000_000} if mode == "llm_loopback" else {}
        settings = ConsolidationSettings.build(schedule={"timezone": "UTC"}, llm=llm)
        jobs = Consolidator(mm, settings=settings)
        days = sorted({day for conv in CONVERSATIONS for day, _ in conv["sessions"]})
        for day in days:
            clock.set(START + timedelta(days=day))
            for conv in CONVERSATIONS:
                for n, (d, turns) in enumerate(conv["sessions"]):
                    if d != day:
                        continue
                    for i, text in enumerate(turns):
                        role = "user" if i % 2 == 0 else "assistant"
                        obs = mm.observe(conv["id"], f"s{n}", role, text.lstrip("*"))
                        clock.advance(minutes=1)
                        if text.startswith("*"):
                            evidence += 1
                            formed += bool(obs.written)
            clock.set(START + timedelta(days=day, hours=9))  # the night after
            for job in ("summarize", "conflicts", "expire"):
                jobs.run(job)
        for conv in CONVERSATIONS:
            active = mm.memories(conv["id"], statuses="active")
            for probe in conv["probes"]:
                values = [_label(probe["attribute"], r.slot.value) for r in active
                          if r.slot is not None and r.slot.attribute == probe["attribute"]]
                hits = mm.recall(conv["id"], probe["query"], k=3, record_use=False)
                top = _norm(hits[0].content) if hits else ""
                # the top hit names the value in its text, or holds it as its slot
                # ("我现在吃全素了" is the slot diet = vegan)
                slot = hits[0].record.slot if hits else None
                if slot is not None and slot.attribute == probe["attribute"]:
                    top = f"{top} {_norm(slot.value)} {_label(slot.attribute, slot.value)}"
                new, old = (_label(probe["attribute"], probe["new"]),
                            _label(probe["attribute"], probe["old"]))
                probes_out.append({
                    "conversation": conv["id"], "lang": conv["lang"],
                    "attribute": probe["attribute"], "llm_only": bool(probe.get("llm_only")),
                    "current_active": new in values and (not old or old not in values),
                    "top_hit_current": bool(top) and new in top,
                    "top_hit_stale": bool(top) and bool(old) and old in top and new not in top,
                    "active_values": values, "top_hit": hits[0].content if hits else None,
                })

    def share(rows: list[dict[str, Any]], key: str) -> float | None:
        return round(sum(r[key] for r in rows) / len(rows), 3) if rows else None

    out: dict[str, Any] = {"evidence_turns": evidence, "formed_at_observe": formed}
    for name, sel in (("all", probes_out),
                      ("en", [p for p in probes_out if p["lang"] == "en"]),
                      ("zh", [p for p in probes_out if p["lang"] == "zh"]),
                      ("fast_readable", [p for p in probes_out if not p["llm_only"]]),
                      ("llm_only", [p for p in probes_out if p["llm_only"]])):
        out[name] = {"probes": len(sel), "current_value_active": share(sel, "current_active"),
                     "top_recall_hit_current": share(sel, "top_hit_current"),
                     "top_recall_hit_stale": share(sel, "top_hit_stale"),
                     "no_recall_hit": share([{"x": r["top_hit"] is None} for r in sel], "x")}
    out["misses"] = [p for p in probes_out if not (p["current_active"] and p["top_hit_current"])]
    return out


def main() -> None:
    result = {
        "benchmark": "nightly path on multi-session conversations where values change",
        "conversations": len(CONVERSATIONS),
        "probes": sum(len(c["probes"]) for c in CONVERSATIONS),
        "note": "own conversations (6 English, 4 Chinese); the llm_loopback mode answers from "
                "the facts written with the conversations, so it measures the prompt/parse/"
                "supersede plumbing, not a model",
        "modes": {mode: run(mode) for mode in ("offline", "llm_loopback")},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    for mode, m in result["modes"].items():
        print(mode, {k: m[k] for k in ("evidence_turns", "formed_at_observe", "all",
                                       "fast_readable", "llm_only")})
        for miss in m["misses"]:
            print("   miss", miss["conversation"], miss["attribute"], miss["active_values"],
                  "| top:", miss["top_hit"])


if __name__ == "__main__":
    main()
