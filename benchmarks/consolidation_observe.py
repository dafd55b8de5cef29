"""Benchmark: ``MemoryManager.observe`` latency per turn, no LLM, with the embedding share.

A synthetic but realistic conversation mix (English and Chinese): explicit
preferences, profile facts, corrections, small talk, task requests and
questions from the user, interleaved with assistant turns. Every user text is
unique (the embedder's text cache never hits). The embedder is the packaged
all-MiniLM-L6-v2, wrapped to time its calls. Each turn is one ``observe`` call:
the turn is appended, the fast extractor runs, and any candidates go through
the write policy (one embedding call, one transaction).

Run (the lock keeps benchmarks from overlapping)::

    flock /tmp/memstrata-bench.lock python benchmarks/consolidation_observe.py

Writes ``benchmarks/results/consolidation_observe.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from memstrata import ManualClock, MemoryManager
from memstrata.memory._st_embedder import SentenceTransformerEmbedder

RESULTS = Path(__file__).parent / "results" / "consolidation_observe.json"

CITIES = ["Berlin", "Munich", "Lisbon", "Porto", "Rome", "Madrid", "Oslo", "Vienna", "Prague",
          "Dublin", "Lyon", "Seville", "Krakow", "Zurich", "Ghent", "Turin", "Bergen", "Graz"]
FOODS = ["sushi", "ramen", "tapas", "pasta", "curry", "dumplings", "falafel", "pho", "tacos",
         "risotto", "paella", "kimchi", "goulash", "pierogi", "bibimbap", "laksa"]
THINGS = ["window seats", "aisle seats", "quiet hotels", "boutique hotels", "morning flights",
          "night trains", "rental cars with GPS", "vegetarian meals", "hotels with a gym",
          "rooms on a high floor", "direct flights", "early check-in"]
ZH_THINGS = ["靠窗的座位", "靠过道的座位", "安静的酒店", "早上的航班", "高铁", "素食", "川菜",
             "粤菜", "有健身房的酒店", "直飞航班", "高楼层的房间", "民宿"]
ZH_CITIES = ["上海", "北京", "杭州", "深圳", "成都", "南京", "苏州", "西安", "厦门", "青岛"]


def _user_turn(rng: random.Random, n: int) -> tuple[str, str]:
    """(kind, text) - ``n`` makes every text unique."""
    kind = rng.choices(
        ["preference", "profile", "correction", "small_talk", "task", "question", "zh_pref",
         "zh_chat"],
        weights=[18, 8, 4, 20, 22, 12, 8, 8],
    )[0]
    city, food, thing = rng.choice(CITIES), rng.choice(FOODS), rng.choice(THINGS)
    hours = rng.randint(2, 14)
    if kind == "preference":
        text = rng.choice([
            f"I prefer {thing} on trips longer than {hours} hours.",
            f"I really like {food}, especially the place near gate {n}.",
            f"I don't like {food} with more than {hours} spices.",
            f"Please always book me {thing} when the trip is over {hours} hours.",
            f"I usually eat {food} on Fridays after {hours} pm.",
        ])
    elif kind == "profile":
        text = rng.choice([
            f"I live in {city} since {1990 + n % 30}.",
            f"My name is Sam {city}son number {n}.",
            f"I work at {city} Robotics, team {n}.",
            f"I'm allergic to {food} since age {hours}.",
        ])
    elif kind == "correction":
        text = rng.choice([
            f"Actually, not {rng.choice(THINGS)} but {thing}, for trip {n}.",
            f"From now on, book {thing} for trip number {n}.",
            f"I moved to {city} in {1990 + n % 30}.",
        ])
    elif kind == "small_talk":
        text = rng.choice([f"Thanks a lot! ({n})", f"Hi there, good morning #{n}",
                           f"ok cool {n}", f"This airport lounge is awful, gate {n}.",
                           f"haha nice one {n}"])
    elif kind == "task":
        text = rng.choice([
            f"Book me a flight to {city} on the {1 + n % 28}th.",
            f"Find a hotel in {city} for {hours} nights, budget {100 + n} euros.",
            f"Order {food} for {hours} people at 7pm, reference {n}.",
        ])
    elif kind == "question":
        text = rng.choice([f"What's the weather in {city} tomorrow? ({n})",
                           f"How long is the flight to {city}, roughly {hours} hours?",
                           f"Can you check gate {n} for me?"])
    elif kind == "zh_pref":
        text = rng.choice([f"我更喜欢{rng.choice(ZH_THINGS)}，第{n}次出行也一样",
                           f"以后都给我订{rng.choice(ZH_THINGS)}，订单{n}",
                           f"我住在{rng.choice(ZH_CITIES)}{n}号"])
    else:
        text = rng.choice([f"谢谢！{n}", f"帮我查一下去{rng.choice(ZH_CITIES)}的航班{n}",
                           f"好的，收到{n}"])
    return kind, text


class TimedEmbedder:
    """Delegates to the real model and times each call (benchmark instrumentation)."""

    def __init__(self, inner: SentenceTransformerEmbedder) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0
        self.texts = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Any:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1
            self.texts += len(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else 0.0


def _stats(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50_ms": round(_pct(ms, 50), 3), "p95_ms": round(_pct(ms, 95), 3),
            "p99_ms": round(_pct(ms, 99), 3), "mean_ms": round(statistics.fmean(ms), 3)
            if ms else 0.0}


def run(url: str | None, users: int, turns_per_user: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    embedder = TimedEmbedder(SentenceTransformerEmbedder())
    embedder.embed(["warm up the model"])
    clock = ManualClock(datetime(2026, 3, 1, 8, tzinfo=UTC))
    tmp = tempfile.mkdtemp(prefix="memstrata-observe-")
    url = url or f"sqlite:///{tmp}/observe.db"
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    n = 0
    with MemoryManager.open(url, embedder=embedder, clock=clock,
                            index_dir=Path(tmp) / "index") as memory:
        for u in range(users):  # warm the per-user index paths once
            memory.observe(f"warm{u}", "w", "user", f"I prefer window seats {u}.")
        for turn in range(turns_per_user):
            for u in range(users):
                user, session = f"user{u:03d}", f"s{u}-{turn // 20}"
                n += 1
                kind, text = _user_turn(rng, n)
                if text in seen:  # the few templates without a counter
                    text = f"{text.rstrip('.?!')} (#{n})."
                assert text not in seen
                seen.add(text)
                before_s, before_calls = embedder.seconds, embedder.calls
                start = time.perf_counter()
                obs = memory.observe(user, session, "user", text, scope="travel")
                total = (time.perf_counter() - start) * 1000
                rows.append({
                    "kind": kind, "role": "user", "ms": total,
                    "embed_ms": (embedder.seconds - before_s) * 1000,
                    "embedded": embedder.calls > before_calls,
                    "outcomes": [d.outcome for d in obs.decisions],
                })
                start = time.perf_counter()
                memory.observe(user, session, "assistant", f"Done ({n}).", scope="travel")
                rows.append({"kind": "assistant", "role": "assistant",
                             "ms": (time.perf_counter() - start) * 1000, "embed_ms": 0.0,
                             "embedded": False, "outcomes": []})
                clock.advance(timedelta(seconds=30))
        stats = memory.stats()
        reader = memory.reader.version  # the reader observe read every turn with
    user_rows = [r for r in rows if r["role"] == "user"]
    extracting = [r for r in user_rows if r["embedded"]]
    plain = [r for r in user_rows if not r["embedded"]]
    outcomes: dict[str, int] = {}
    for r in user_rows:
        for o in r["outcomes"]:
            outcomes[o] = outcomes.get(o, 0) + 1
    total_ms = sum(r["ms"] for r in user_rows)
    embed_ms = sum(r["embed_ms"] for r in user_rows)
    return {
        "benchmark": "observe latency per turn, no LLM",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                    "when": datetime.now(UTC).isoformat(timespec="seconds")},
        "database": "sqlite (file, WAL)" if url.startswith("sqlite") else url.split(":")[0],
        "embedder": embedder.name + " (packaged, one torch thread for single texts)",
        "reader": reader,
        "setup": {"users": users, "user_turns": len(user_rows),
                  "assistant_turns": len(rows) - len(user_rows), "seed": seed,
                  "unique_texts": True, "records_at_end": stats["records"]},
        "user_turns": _stats([r["ms"] for r in user_rows]),
        "user_turns_with_extraction": _stats([r["ms"] for r in extracting]),
        "user_turns_without_extraction": _stats([r["ms"] for r in plain]),
        "assistant_turns": _stats([r["ms"] for r in rows if r["role"] == "assistant"]),
        "embedding": {
            "share_of_user_turn_time": round(embed_ms / total_ms, 3) if total_ms else 0.0,
            "share_of_extracting_turn_time": round(
                embed_ms / sum(r["ms"] for r in extracting), 3) if extracting else 0.0,
            "embed_p50_ms_when_called": round(_pct([r["embed_ms"] for r in extracting], 50), 3),
            "embed_p95_ms_when_called": round(_pct([r["embed_ms"] for r in extracting], 95), 3),
            "calls": embedder.calls, "texts": embedder.texts,
        },
        "fraction_of_user_turns_extracted": round(len(extracting) / len(user_rows), 3),
        "write_outcomes": outcomes,
        "target": {"p95_ms_including_embedding": 20.0},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="database URL (default: a temp SQLite file)")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--turns", type=int, default=60, help="user turns per user")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres", action="store_true",
                        help="also measure on a throwaway PostgreSQL cluster (local socket)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = run(args.url, args.users, args.turns, args.seed)
    if args.postgres:
        from memstrata.testing import PostgresServer

        server = PostgresServer().start()
        try:
            pg = run(server.create_database(), args.users, args.turns, args.seed)
        finally:
            server.stop()
        result["postgresql"] = {k: pg[k] for k in (
            "user_turns", "user_turns_with_extraction", "user_turns_without_extraction",
            "assistant_turns", "embedding")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: result[k] for k in ("user_turns", "user_turns_with_extraction",
                                              "user_turns_without_extraction", "embedding")},
                     indent=2))


if __name__ == "__main__":
    main()
