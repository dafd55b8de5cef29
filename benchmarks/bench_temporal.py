"""Time in recall: relative dates resolved at write time, temporal questions, the gate.

Two parts, both through the public API on real SQLite with the packaged MiniLM.

1. **Temporal probes** (written for issue 11; generated below from fixed event
   and phrase lists, English and Chinese): each user says what they did with a
   relative date ("Yesterday I went to the dentist", "三天前我去了医院") in
   sessions spread over four months, between filler turns. Measured:
   * *resolution* - the stored ``event_date`` contains the true day;
   * recall@10 of the evidence for "when did I ...?", "how many days between
     ... and ...?" (two evidence turns) and "what did I do in March?" (every
     event dated in March - the range filters and boosts), with the gate and
     without it (``min_relevance=0``): the gate must cost < 0.02;
   * the same for ``before`` (the issue-11 ranking off: plain gate, no range).
   Users are split by a hash of their id into tuning and held-out; the first
   run with ``--heldout`` writes ``temporal_first_look.json`` (never overwritten).
2. **LoCoMo dev** (the recall lab's ingest: one memory per turn, session date as
   ``at``): recall@10 with and without the gate on category 2 (temporal), and the
   paired difference default - before over all questions (recall@1/5/10,
   nDCG@10, MRR, 95% paired bootstrap) - LoCoMo must not drop.

Run: ``flock /tmp/memstrata-bench.lock python benchmarks/bench_temporal.py
[--heldout] [--no-locomo]`` -> ``benchmarks/results/temporal.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import time
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from _common import CACHE, LOCOMO, RESULTS, write_result

from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata.eval import (
    EvalConfig,
    Evaluation,
    HybridRetriever,
    bootstrap_paired_difference,
    load_dataset,
)
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.policies.temporal import DateRange

FIRST_LOOK = RESULTS / "temporal_first_look.json"
GATE_BUDGET = 0.02
START = datetime(2026, 1, 3, 18, 0, tzinfo=UTC)
BEFORE = replace(RetrievalPolicy(), outdated_weight=1.0, range_boost=1.0,
                 temporal_min_relevance=RetrievalPolicy().min_relevance)
METRICS = ("recall@1", "recall@5", "recall@10", "ndcg@10", "mrr")

#: (statement with {when}, question stem after "When did I", short name for "between")
EVENTS_EN = [
    ("{when} I went to the dentist for a filling.", "go to the dentist", "the dentist"),
    ("{when} I ran my first half marathon in the rain.", "run my first half marathon",
     "the half marathon"),
    ("{when} I adopted a kitten from the shelter.", "adopt the kitten", "adopting the kitten"),
    ("{when} I had a job interview at a design agency.", "have the job interview",
     "the job interview"),
    ("{when} I went to my cousin's wedding in Porto.", "go to my cousin's wedding",
     "the wedding"),
    ("{when} I got my driving licence.", "get my driving licence", "the driving test"),
    ("{when} I repainted the kitchen blue.", "repaint the kitchen", "repainting the kitchen"),
    ("{when} I flew to Oslo for a conference.", "fly to Oslo", "the Oslo trip"),
    ("{when} I broke my wrist skateboarding.", "break my wrist", "the wrist injury"),
    ("{when} I finished reading War and Peace.", "finish War and Peace",
     "finishing War and Peace"),
]
EVENTS_ZH = [
    ("{when}我去牙医那里补了牙。", "我什么时候去看的牙医？", "看牙医"),
    ("{when}我跑完了第一个半程马拉松。", "我什么时候跑的半程马拉松？", "半马"),
    ("{when}我从收容所领养了一只小猫。", "我什么时候领养的小猫？", "领养小猫"),
    ("{when}我去一家设计公司面试了。", "我什么时候去面试的？", "面试"),
    ("{when}我去参加了表哥的婚礼。", "我什么时候参加的婚礼？", "婚礼"),
    ("{when}我拿到了驾照。", "我什么时候拿到的驾照？", "拿驾照"),
    ("{when}我把厨房刷成了蓝色。", "我什么时候刷的厨房？", "刷厨房"),
    ("{when}我飞去奥斯陆开会。", "我什么时候去的奥斯陆？", "去奥斯陆"),
]
#: (phrase, days before the day it is said) - written independently of the resolver
PHRASES_EN = [("Yesterday", 1), ("Two days ago", 2), ("The day before yesterday", 2),
              ("Three days ago", 3), ("Today", 0), ("Four days ago", 4)]
PHRASES_ZH = [("昨天", 1), ("前天", 2), ("三天前", 3), ("今天", 0), ("两天前", 2)]
FILLER_EN = [
    "I had pasta with friends and we talked about movies.", "The weather was awful.",
    "I watched a documentary about octopuses.", "My mum called about the holidays.",
    "Work was busy with quarterly reports.", "I tried a new recipe for banana bread.",
    "I'm planning a weekend trip to the coast.", "My laptop battery is dying quickly.",
    "I love how quiet the mornings are.", "My favourite band is releasing a new album.",
    "I want to learn more about astronomy.", "Our team lunch is usually on Fridays.",
    "I keep forgetting to water the plants.", "My brother sent me photos of his garden.",
    "I prefer window seats on trains.", "I think I need a new winter coat.",
    "The neighbours are renovating again.", "I like podcasts about history.",
]
FILLER_ZH = [
    "今天和朋友去看了电影。", "这周工作特别忙。", "晚饭后去公园散了步。", "我试着做了香蕉面包。",
    "电脑电池不太行了。", "最近在看一部关于海洋的纪录片。", "我喜欢安静的早晨。",
    "我想多了解一些天文知识。", "我总是忘记给花浇水。", "我哥发来了他花园的照片。",
    "坐火车我喜欢靠窗。", "我需要一件新的冬季外套。", "邻居家又在装修了。", "我喜欢听历史播客。",
]
MONTHS_EN = {1: "January", 2: "February", 3: "March", 4: "April"}


def _split(user: str) -> str:
    return "heldout" if int(hashlib.sha256(user.encode()).hexdigest(), 16) % 5 < 2 else "tuning"


def _users(n_en: int = 16, n_zh: int = 8) -> list[dict[str, Any]]:
    """Per user: turns (session, time, text, event day or None) and probes."""
    users = []
    for u in range(n_en + n_zh):
        zh = u >= n_en
        uid = f"{'zh' if zh else 'en'}-{u:02d}"
        seed = int(hashlib.sha256(uid.encode()).hexdigest(), 16)
        events = EVENTS_ZH if zh else EVENTS_EN
        phrases = PHRASES_ZH if zh else PHRASES_EN
        filler = FILLER_ZH if zh else FILLER_EN
        chosen = [events[(seed + 3 * i) % len(events)] for i in range(6)]
        chosen = list(dict.fromkeys(chosen))
        turns: list[tuple[str, datetime, str, date | None]] = []
        facts = []
        for i, (template, question, short) in enumerate(chosen):
            said = START + timedelta(days=(seed >> (i + 3)) % 9 + 19 * i)
            phrase, back = phrases[(seed + i) % len(phrases)]
            text = template.format(when=phrase + ("" if zh else ","))
            if not zh:
                text = text.replace(",,", ",")
            day = (said - timedelta(days=back)).date()
            sid = f"s{i + 1}"
            for j in range(4):
                turns.append((sid, said + timedelta(minutes=j),
                              filler[(seed + 5 * i + j) % len(filler)], None))
            turns.append((sid, said + timedelta(minutes=5), text, day))
            facts.append({"text": text, "day": day, "question": question, "short": short})
        probes = []
        for f in facts[:4]:
            q = f["question"] if zh else f"When did I {f['question']}?"
            probes.append({"kind": "when", "question": q, "evidence": [f["text"]]})
        a, b = facts[0], facts[-1]
        q = f"{a['short']}和{b['short']}之间隔了多少天？" if zh else \
            f"How many days passed between {a['short']} and {b['short']}?"
        probes.append({"kind": "between", "question": q, "evidence": [a["text"], b["text"]]})
        month = facts[1]["day"].month
        in_month = [f["text"] for f in facts if f["day"].month == month]
        q = f"我{month}月份做了什么？" if zh else f"What did I do in {MONTHS_EN[month]}?"
        probes.append({"kind": "in_month", "question": q, "evidence": in_month})
        users.append({"id": uid, "lang": "zh" if zh else "en", "split": _split(uid),
                      "turns": turns, "probes": probes})
    return users


def _recall_at(hits: list[str], evidence: list[str], k: int = 10) -> float:
    top = set(hits[:k])
    return sum(e in top for e in evidence) / len(evidence)


def _probes(splits: list[str]) -> dict[str, Any]:
    users = [u for u in _users() if u["split"] in splits]
    variants = {"default": (None, None), "default_no_gate": (None, 0.0),
                "before": (BEFORE, None), "before_no_gate": (BEFORE, 0.0)}
    rows: list[dict[str, Any]] = []
    resolution: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(START)
        with MemoryManager.open(f"sqlite:///{tmp}/t.db", clock=clock, home=tmp) as mm:
            for u in users:
                mm.remember_many(u["id"], [MemoryInput(content=t, at=at, session_id=sid)
                                           for sid, at, t, _ in u["turns"]])
            clock.set(START + timedelta(days=130))
            for u in users:
                stored = {r.content: r for r in mm.memories(u["id"], limit=100)}
                for _, _, text, day in u["turns"]:
                    if day is None:
                        continue
                    rec = stored.get(text)
                    got = DateRange.from_json(rec.metadata.get("event_date")) if rec else None
                    resolution.append({"user": u["id"], "lang": u["lang"], "split": u["split"],
                                       "text": text, "true": day.isoformat(),
                                       "stored": got.label() if got else None,
                                       "ok": got is not None and got.contains(day)})
                for p in u["probes"]:
                    row: dict[str, Any] = {"user": u["id"], "lang": u["lang"],
                                           "split": u["split"], "kind": p["kind"],
                                           "question": p["question"]}
                    for name, (policy, gate) in variants.items():
                        hits = mm.recall(u["id"], p["question"], k=10, record_use=False,
                                         policy=policy, min_relevance=gate)
                        row[name] = _recall_at([h.record.content for h in hits], p["evidence"])
                    rows.append(row)

    def agg(sel: list[dict[str, Any]]) -> dict[str, Any]:
        if not sel:
            return {"n": 0}
        out: dict[str, Any] = {"n": len(sel)}
        for name in variants:
            out[f"recall@10_{name}"] = round(float(np.mean([r[name] for r in sel])), 4)
        out["gate_cost"] = round(out["recall@10_default_no_gate"] - out["recall@10_default"], 4)
        return out

    summary: dict[str, Any] = {}
    for split in splits:
        sel = [r for r in rows if r["split"] == split]
        res = [r for r in resolution if r["split"] == split]
        summary[split] = {
            "all": agg(sel),
            **{kind: agg([r for r in sel if r["kind"] == kind])
               for kind in ("when", "between", "in_month")},
            **{lang: agg([r for r in sel if r["lang"] == lang]) for lang in ("en", "zh")},
            "resolution": {"n": len(res), "correct": round(sum(r["ok"] for r in res)
                                                           / max(1, len(res)), 4)},
        }
    return {"users": {s: sum(u["split"] == s for u in users) for s in splits},
            "summary": summary, "resolution_misses": [r for r in resolution if not r["ok"]],
            "questions": rows}


def _locomo(cache: str) -> dict[str, Any]:
    dataset = load_dataset(str(LOCOMO))
    config = EvalConfig.build(bootstrap=2000, depth=50)
    retrievers = [HybridRetriever(name="default"),
                  HybridRetriever(name="default_no_gate", min_relevance=0.0),
                  HybridRetriever(name="before", policy=BEFORE),
                  HybridRetriever(name="before_no_gate", policy=BEFORE, min_relevance=0.0)]
    with Evaluation.open(dataset, config, cache_dir=cache) as ev:
        result = ev.evaluate(retrievers)
    out: dict[str, Any] = {"questions": len(result.run("default").questions)}
    out["overall"] = {r.name: {m: round(result.summary(r.name).overall[m].mean, 4)
                               for m in METRICS} for r in retrievers}
    out["paired_default_minus_before"] = {
        m: result.compare("default", "before", m).to_dict() for m in METRICS}
    cat: dict[str, Any] = {}
    for c in ("1", "2", "3", "4"):
        label = result.category_label(c)
        qs = {r.name: [q for q in result.run(r.name).questions if q.category == c]
              for r in retrievers}
        if not qs["default"]:
            continue
        vals = {name: result.run(name).values("recall@10", q) for name, q in qs.items()}
        cat[label] = {
            "n": len(qs["default"]),
            **{f"recall@10_{name}": round(float(v.mean()), 4) for name, v in vals.items()},
            "gate_cost": round(float(vals["default_no_gate"].mean() - vals["default"].mean()),
                               4),
            "paired_recall@10_default_minus_before": bootstrap_paired_difference(
                vals["default"], vals["before"], n_boot=2000).to_dict(),
        }
    out["by_category"] = cat
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--heldout", action="store_true")
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--cache", default=str(CACHE / "temporal"))
    args = parser.parse_args()
    started = time.perf_counter()
    splits = ["tuning", "heldout"] if args.heldout else ["tuning"]
    probes = _probes(splits)
    payload: dict[str, Any] = {
        "description": __doc__.split("\n\n")[0],
        "gate_budget": GATE_BUDGET,
        "probes": probes,
    }
    if args.heldout and not FIRST_LOOK.exists():
        FIRST_LOOK.write_text(json.dumps({
            "benchmark": "temporal_first_look",
            "note": "the first evaluation on the held-out users, written before any further "
                    "tuning; never overwritten",
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "heldout": probes["summary"]["heldout"]}, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {FIRST_LOOK}")
    if not args.no_locomo:
        payload["locomo_dev"] = _locomo(args.cache)
    payload["seconds"] = round(time.perf_counter() - started, 1)
    write_result("temporal", payload)
    for split in splits:
        print(split, json.dumps(probes["summary"][split], indent=None)[:1500])
    if "locomo_dev" in payload:
        print(json.dumps({k: v for k, v in payload["locomo_dev"].items()}, indent=1)[:4000])


if __name__ == "__main__":
    main()
