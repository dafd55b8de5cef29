"""An application process of the soak test: writes and recalls against one database.

Usage: python _soak_child.py URL PROC WRITES LEDGER_DIR

It makes WRITES writes of records for its own users and, after each write returned,
appends ``{user, id, code}`` to ``LEDGER_DIR/p<PROC>.jsonl``; it recalls its own
last write at once and a random write another process had already appended, by
the record's unique code word. A hit must be the record itself or the record
that absorbed it (a consolidation merge). Prints a JSON summary; a read that
missed a returned write is listed under ``stale``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from memstrata import MemoryManager

SUBJECTS = ["the garden shed", "my bicycle", "our kitchen", "the quarterly report", "grandma",
            "the violin", "the server rack", "my passport", "the sailing boat", "the attic"]
VERBS = ["needs", "reminds me of", "is stored near", "was repaired with", "smells like"]


def _code(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(4))


def _accepted(mm: MemoryManager, user: str, memory_id: str) -> set[str]:
    """The record and every record it was merged into since (SQL, the system of record)."""
    out = {memory_id}
    current = mm.get(user, memory_id)
    while current.superseded_by is not None and current.superseded_by not in out:
        out.add(current.superseded_by)
        current = mm.get(user, current.superseded_by)
    return out


def _found(mm: MemoryManager, entry: dict[str, Any]) -> bool:
    for _ in range(2):  # a merge may land between the recall and the SQL read: look again
        hits = mm.recall(entry["user"], entry["code"], k=10, min_relevance=0.0,
                         record_use=False)
        ids = {h.record.id for h in hits}
        if ids & _accepted(mm, entry["user"], entry["id"]):
            return True
    return False


def main() -> None:
    url, proc, count, ledger_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        Path(sys.argv[4])
    rng = random.Random(proc)
    own = ledger_dir / f"p{proc}.jsonl"
    writes = reads = 0
    stale: list[dict[str, Any]] = []
    with MemoryManager.open(url) as mm, own.open("a") as ledger:
        i = 0
        while writes < count:
            user = f"p{proc}-u{i % 5}"
            code = _code(rng)
            text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {code}"
            decision = mm.remember(user, text, type="knowledge")
            i += 1
            if decision.record_id is None:
                continue
            entry = {"user": user, "id": decision.record_id, "code": code}
            ledger.write(json.dumps(entry) + "\n")
            ledger.flush()
            writes += 1
            if not _found(mm, entry):
                stale.append({**entry, "read": "own"})
            others = [p for p in ledger_dir.glob("p*.jsonl") if p != own]
            if others:
                lines = [line for line in rng.choice(others).read_text().splitlines()
                         if line.endswith("}")]  # a line being appended is not whole yet
                if lines:
                    other = json.loads(rng.choice(lines))
                    reads += 1
                    if not _found(mm, other):
                        stale.append({**other, "read": "other"})
    print(json.dumps({"proc": proc, "writes": writes, "reads": reads, "stale": stale}))


if __name__ == "__main__":
    main()
