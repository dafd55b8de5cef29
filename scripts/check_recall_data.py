"""Check recall data files (memstrata JSONL with the categories of ``data/recall/``).

``python scripts/check_recall_data.py FILE...``: the rules the helpers who wrote
``benchmarks/data/recall/`` checked their files with (``BRIEF.md`` there). Turn lines
have exactly user, session, time (ISO 8601 with a zone), speaker (user or assistant),
text and id (``<session>:<n>``, counting the session's turns from 1); question lines have
exactly user, question, evidence_ids, category, answer and id. Every evidence id names a
turn of the user; an absent question has none, a multi-hop or an update question two or
more. Prints each error and a summary; exits 1 on any error.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from datetime import datetime

CATEGORIES = {"single-hop", "multi-hop", "temporal", "update", "absent"}
TURN_KEYS = {"user", "session", "time", "speaker", "text", "id"}
QUESTION_KEYS = {"user", "question", "evidence_ids", "category", "answer", "id"}


def check(path: str) -> list[str]:
    """The errors of one file, each ``path:line: what``."""
    errors: list[str] = []
    turns: dict[str, set[str]] = defaultdict(set)
    counts: Counter[tuple[str, str]] = Counter()
    questions: list[tuple[int, dict[str, object]]] = []

    def error(n: int, what: str) -> None:
        errors.append(f"{path}:{n}: {what}")

    with open(path, encoding="utf-8") as f:
        raw = f.read().split("\n")
    for n, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            error(n, f"not JSON: {exc}")
            continue
        if "question" in obj:
            if set(obj) != QUESTION_KEYS:
                error(n, f"a question line has exactly {sorted(QUESTION_KEYS)}")
            else:
                questions.append((n, obj))
            continue
        if set(obj) != TURN_KEYS:
            error(n, f"a turn line has exactly {sorted(TURN_KEYS)}")
            continue
        if obj["speaker"] not in ("user", "assistant"):
            error(n, "speaker is user or assistant")
        if not str(obj["text"]).strip():
            error(n, "blank text")
        try:
            if datetime.fromisoformat(str(obj["time"]).replace("Z", "+00:00")).tzinfo is None:
                error(n, "time needs a zone")
        except ValueError:
            error(n, "time is not ISO 8601")
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", str(obj["user"])):
            error(n, "user id: letters, digits, _ . - only")
        key = (str(obj["user"]), str(obj["session"]))
        counts[key] += 1
        if obj["id"] != f"{key[1]}:{counts[key]}":
            error(n, f"id is {key[1]}:{counts[key]}")
        turns[key[0]].add(str(obj["id"]))
    for n, q in questions:
        user, evidence, category = str(q["user"]), q["evidence_ids"], q["category"]
        if user not in turns:
            error(n, f"user {user} has no turns")
            continue
        if category not in CATEGORIES:
            error(n, f"category is one of {sorted(CATEGORIES)}")
        if not isinstance(evidence, list):
            error(n, "evidence_ids is a list")
            continue
        error_ids = [e for e in evidence if e not in turns[user]]
        if error_ids:
            error(n, f"evidence {error_ids} names no turn of {user}")
        if (category == "absent") == bool(evidence):
            error(n, "an absent question has no evidence, any other has some")
        if category in ("multi-hop", "update") and len(set(evidence)) < 2:
            error(n, f"a {category} question has two or more evidence turns")
        if not str(q["answer"]).strip():
            error(n, "blank answer")
    return errors


def main(paths: list[str]) -> int:
    errors = [e for p in paths for e in check(p)]
    for e in errors:
        print(e)
    print(f"{len(paths)} files, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
