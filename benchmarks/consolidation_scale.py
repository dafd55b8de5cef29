"""Benchmark: ``expire`` and ``conflicts`` throughput over 1,000,000 records, 1,000 users.

The records are **bulk-inserted as SQL rows with synthetic vectors** (random
unit vectors, float16, 384-d) - embedding a million texts would take hours and
measures the model, not the jobs. Contents are templated English statements.
Per user: creation times spread over the last 300 days, types mixed
(preference 55%, knowledge 20%, experience 10%, profile 10%, event 5%), 40%
used (recalled) once since creation, 2% pinned; records long past expiry are
mostly soft-deleted already and half of the expired ones demoted (as an hourly
sweep would have left them), plus planted pairs the conflicts job must find:
5 exact duplicates, 5 near duplicates (vector + noise), 3 negation
contradictions.

The jobs run exactly as in production (``Consolidator.run``: lease, batches of
20 users, checkpoints, every action recorded), on a SQLite file (WAL).
Throughput is *records in the database / wall time of the run*.

    flock /tmp/memstrata-bench.lock python benchmarks/consolidation_scale.py

Writes ``benchmarks/results/consolidation_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import func, insert, select

from memstrata import ManualClock, MemoryManager
from memstrata._text import content_hash
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.consolidation._tables import actions
from memstrata.memory._schema import memories, memory_vectors, users
from memstrata.policies.retention import DEFAULT_TTL
from memstrata.types import MemoryType

RESULTS = Path(__file__).parent / "results" / "consolidation_scale.json"
NOW = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)
DIM = 384
MODEL = "all-MiniLM-L6-v2:384"
VERBS = ["like", "prefer", "enjoy", "need", "use", "want", "book", "order", "visit", "read",
         "watch", "cook", "buy", "keep", "try", "plan", "love", "choose", "rent", "collect"]
_LETTERS = "bcdfghjklmnprstvz"
_VOWELS = "aeiou"
ADJS = ["quiet", "early", "cheap", "local", "spicy", "green", "fast", "small", "large", "warm",
        "cold", "fresh", "organic", "modern", "classic", "short", "long", "direct", "vegan",
        "electric", "wooden", "paper", "digital", "public", "private", "shared", "weekly",
        "daily", "monthly", "annual"]
NOUNS = ["hotels", "flights", "trains", "seats", "rooms", "meals", "coffee", "tea", "books",
         "films", "podcasts", "shoes", "bikes", "cars", "phones", "laptops", "plants", "tours",
         "museums", "concerts", "markets", "beaches", "parks", "gyms", "classes", "lessons",
         "reports", "meetings", "invoices", "newsletters", "deliveries", "restaurants",
         "bakeries", "cafes", "pools", "trails", "boats", "buses", "taxis", "hostels"]
TYPES = [(MemoryType.PREFERENCE, 0.55), (MemoryType.KNOWLEDGE, 0.20),
         (MemoryType.EXPERIENCE, 0.10), (MemoryType.PROFILE, 0.10), (MemoryType.EVENT, 0.05)]


def _tag(rng: random.Random) -> str:
    """A letters-only place name: unique enough, and no digits for the number checks."""
    return "".join(rng.choice(_LETTERS) + rng.choice(_VOWELS) for _ in range(4)).title()


def _rows_for_user(uid: str, per_user: int, rng: random.Random, np_rng: np.random.Generator,
                   seq0: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    now = NOW.timestamp()
    kinds = rng.choices([t for t, _ in TYPES], weights=[w for _, w in TYPES], k=per_user)
    vecs = np_rng.standard_normal((per_user, DIM)).astype(np.float32)
    texts = [f"I {rng.choice(VERBS)} {rng.choice(ADJS)} {rng.choice(NOUNS)} at {_tag(rng)}"
             for k in range(per_user)]
    # planted pairs at fixed positions: exact dups, near dups, contradictions
    for p in range(5):
        a, b = 10 * p, 10 * p + 1
        texts[b], kinds[b], vecs[b] = texts[a], kinds[a], vecs[a]
        a, b = 10 * p + 2, 10 * p + 3
        texts[b], kinds[b] = texts[a] + ", really", kinds[a]
        vecs[b] = vecs[a] + 0.08 * np.linalg.norm(vecs[a]) / np.sqrt(DIM) * \
            np_rng.standard_normal(DIM).astype(np.float32)
    for p in range(3):
        a, b = 60 + 10 * p, 61 + 10 * p
        obj = f"{rng.choice(ADJS)} {rng.choice(NOUNS)}"
        texts[a], texts[b] = f"I like {obj}", f"I don't like {obj}"
        kinds[a] = kinds[b] = MemoryType.PREFERENCE
        vecs[b] = vecs[a] + 0.15 * np.linalg.norm(vecs[a]) / np.sqrt(DIM) * \
            np_rng.standard_normal(DIM).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    half = vecs.astype("<f2")
    rows: list[dict[str, Any]] = []
    vrows: list[dict[str, Any]] = []
    grace = 30 * 86400
    for k in range(per_user):
        created = now - rng.uniform(0, 300) * 86400
        ttl = DEFAULT_TTL[kinds[k]]
        last_used = None
        if rng.random() < 0.4:  # used (recalled) at some point since
            last_used = rng.uniform(created, now)
        expires = None if ttl is None else max(
            created, last_used or created) + ttl.total_seconds()
        status, confidence, updated = "active", 0.9, created
        if expires is not None and expires + grace < now and rng.random() < 0.9:
            # the hourly sweep deleted most long-dead records already (a few still wait)
            status, updated = "deleted", rng.uniform(expires + grace, now)
        elif expires is not None and expires < now and rng.random() < 0.5:
            status, confidence = "demoted", 0.45
        memory_id = f"{uid:>8}{k:08x}{uuid.uuid4().hex[:16]}"[:32]
        rows.append({
            "id": memory_id, "user_id": uid, "scope": "default", "type": kinds[k].value,
            "content": texts[k], "context": None, "content_hash": content_hash(texts[k]),
            "subject": None, "attribute": None, "value": None, "slot_key": None,
            "confidence": confidence, "importance": 0.5, "source": "import",
            "session_id": None, "task_id": None, "step_id": None, "created_at": created,
            "updated_at": updated, "valid_from": created, "valid_to": None,
            "last_accessed_at": last_used, "access_count": 0 if last_used is None else 1,
            "expires_at": expires,
            "status": status, "pinned": rng.random() < 0.02, "supersedes": None,
            "superseded_by": None, "conflict_group": None, "metadata": {}, "seq": seq0 + k + 1,
        })
        vrows.append({"memory_id": memory_id, "user_id": uid, "model": MODEL, "dim": DIM,
                      "vector": half[k].tobytes()})
    return rows, vrows


PLANTED_DUPLICATES = [(10 * p, 10 * p + 1) for p in range(5)] + \
    [(10 * p + 2, 10 * p + 3) for p in range(5)]
PLANTED_CONTRADICTIONS = [(60 + 10 * p, 61 + 10 * p) for p in range(3)]


def expected(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Planted pairs whose two records are both live (the others cannot be judged)."""
    mergeable = ("active", "demoted")
    live = ("active", "demoted", "pending_confirmation")
    out = {"merge": 0, "flag_conflict": 0}
    for a, b in PLANTED_DUPLICATES:
        if rows[a]["status"] in mergeable and rows[b]["status"] in mergeable:
            out["merge"] += 1
    for a, b in PLANTED_CONTRADICTIONS:
        if rows[a]["status"] in live and rows[b]["status"] in live:
            out["flag_conflict"] += 2
    return out


def generate(mm: MemoryManager, n_users: int, per_user: int, seed: int
             ) -> tuple[float, dict[str, int]]:
    rng, np_rng = random.Random(seed), np.random.default_rng(seed)
    started = time.perf_counter()
    planted = {"merge": 0, "flag_conflict": 0}
    for start in range(0, n_users, 10):
        with mm.db.write() as conn:
            for u in range(start, min(start + 10, n_users)):
                uid = f"user{u:05d}"
                rows, vrows = _rows_for_user(uid, per_user, rng, np_rng, 0)
                for key, n in expected(rows).items():
                    planted[key] += n
                conn.execute(insert(users).values(
                    user_id=uid, seq=per_user, generation=uuid.uuid4().hex, embed_model=MODEL,
                    created_at=NOW.timestamp() - 400 * 86400))
                conn.execute(insert(memories), rows)
                conn.execute(insert(memory_vectors), vrows)
        if start % 100 == 0:
            print(f"  generated {start + 10} users", flush=True)
    return time.perf_counter() - started, planted


def _timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memstrata-scale-"))
    url = f"sqlite:///{tmp / 'scale.db'}"
    clock = ManualClock(NOW)
    total = args.users * args.per_user
    result: dict[str, Any] = {
        "benchmark": "expire and conflicts throughput",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "database": "sqlite (file, WAL, synchronous=NORMAL)",
        "data": {
            "users": args.users, "records": total,
            "generation": "bulk SQL insert of rows with synthetic random unit vectors "
                          "(float16, 384-d) and templated English contents; not embedded",
            "planted_per_user": {"exact_duplicates": 5, "near_duplicates": 5,
                                 "negation_contradictions": 3},
        },
    }
    try:
        with MemoryManager.open(url, clock=clock, index_dir=tmp / "index") as mm:
            print(f"generating {total:,} records ...", flush=True)
            seconds, planted = generate(mm, args.users, args.per_user, args.seed)
            result["data"]["generation_seconds"] = round(seconds, 1)
            with mm.db.read() as conn:
                result["data"]["records_by_status"] = {
                    str(k): int(v) for k, v in conn.execute(
                        select(memories.c.status, func.count()).group_by(memories.c.status))}
            result["data"]["database_mb"] = round(
                sum(f.stat().st_size for f in tmp.glob("scale.db*")) / 2**20, 1)
            jobs = Consolidator(mm, settings=ConsolidationSettings.build())
            dry, dry_s = _timed(lambda: jobs.run("expire", dry_run=True))
            report, expire_s = _timed(lambda: jobs.run("expire"))
            print(f"expire: {expire_s:.1f} s {report.counts}", flush=True)
            result["expire"] = {
                "seconds": round(expire_s, 2),
                "records_per_second": round(total / expire_s),
                "actions": report.counts, "actions_total": report.total_actions,
                "batches": report.batches, "errors": len(report.errors),
                "dry_run_seconds": round(dry_s, 2),
                "dry_run_records_per_second": round(total / dry_s),
                "dry_run_planned_equals_run": dry.counts == report.counts,
                "target_records_per_second": 50_000,
            }
            again, again_s = _timed(lambda: jobs.run("expire"))
            result["expire"]["rerun_seconds_nothing_to_do"] = round(again_s, 2)
            result["expire"]["rerun_actions"] = again.total_actions
            undo, undo_s = _timed(lambda: jobs.undo(str(report.run_id)))
            result["expire"]["undo"] = {
                "seconds": round(undo_s, 2), "actions": undo.counts,
                "actions_per_second": round(undo.total_actions / undo_s),
                "not_restorable_purges": report.counts.get("purge", 0),
                "errors_kept_in_report": len(undo.errors),
            }
            print(f"undo expire: {undo_s:.1f} s {undo.counts}", flush=True)
            report, conflicts_s = _timed(lambda: jobs.run("conflicts"))
            print(f"conflicts: {conflicts_s:.1f} s {report.counts}", flush=True)
            with mm.db.read() as conn:
                recorded = conn.execute(select(func.count()).select_from(actions)).scalar_one()
            result["conflicts"] = {
                "seconds": round(conflicts_s, 2),
                "records_per_second": round(total / conflicts_s),
                "actions": report.counts, "batches": report.batches,
                "method": report.method, "errors": len(report.errors),
                "planted_and_live": planted,
                "actions_recorded_in_db_total": int(recorded),
            }
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
