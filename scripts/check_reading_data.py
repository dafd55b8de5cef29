#!/usr/bin/env python3
"""Check reader training or evaluation files (JSONL) against the attribute registry.

Usage: python3 scripts/check_reading_data.py FILE [FILE ...]

Standard library only, so that people writing data need nothing installed. Exits 1 and
names every bad line when a file breaks the format; prints a summary otherwise.

Line formats (one JSON object a line):

* read:    {"id", "lang": "en"|"zh", "task": "read", "text",
            "readings": [{"attribute", "span", "value", "holder": "user"|"other",
                          "when": "now"|"past"|"plan"|"hypothetical"|"one_off",
                          "negated": bool}]}
* ask:     {"id", "lang", "task": "ask", "text", "attribute": NAME|null,
            "whose": "user"|"other", "time": "current"|"past"}
* relate:  {"id", "lang", "task": "relate", "attribute": NAME|null, "older", "newer",
            "relation": "same"|"update"|"contradiction"|"elaboration"|"unrelated"|
                        "correction"}
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

REGISTRY = Path(__file__).resolve().parents[1] / "memstrata" / "reading" / "attributes.json"
HOLDERS = {"user", "other"}
WHENS = {"now", "past", "plan", "hypothetical", "one_off"}
RELATIONS = {"same", "update", "contradiction", "elaboration", "unrelated", "correction"}


def check_line(obj: object, attrs: dict[str, dict[str, object]]) -> list[str]:
    errs: list[str] = []
    if not isinstance(obj, dict):
        return ["not a JSON object"]
    for key in ("id", "lang", "task"):
        if not isinstance(obj.get(key), str) or not obj.get(key):
            errs.append(f"missing or empty {key!r}")
    if obj.get("lang") not in ("en", "zh"):
        errs.append("lang must be 'en' or 'zh'")
    task = obj.get("task")
    if task == "read":
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            return [*errs, "read needs a non-empty 'text'"]
        readings = obj.get("readings")
        if not isinstance(readings, list):
            return [*errs, "read needs 'readings' (a list, maybe empty)"]
        for i, r in enumerate(readings):
            if not isinstance(r, dict):
                errs.append(f"reading {i} is not an object")
                continue
            a = r.get("attribute")
            if a not in attrs:
                errs.append(f"reading {i}: unknown attribute {a!r}")
                continue
            span, value = r.get("span"), r.get("value")
            if not isinstance(span, str) or not span or span not in text:
                errs.append(f"reading {i}: span {span!r} is not an exact substring of text")
            if not isinstance(value, str) or not value.strip():
                errs.append(f"reading {i}: empty value")
            elif attrs[a]["value"] == "label" and value not in attrs[a]["labels"]:  # type: ignore[operator]
                errs.append(f"reading {i}: {a} value must be one of {attrs[a]['labels']}")
            elif attrs[a]["value"] == "number" and not re.fullmatch(r"\d{1,3}", value):
                errs.append(f"reading {i}: {a} value must be digits")
            if r.get("holder") not in HOLDERS:
                errs.append(f"reading {i}: holder must be one of {sorted(HOLDERS)}")
            if r.get("when") not in WHENS:
                errs.append(f"reading {i}: when must be one of {sorted(WHENS)}")
            if not isinstance(r.get("negated"), bool):
                errs.append(f"reading {i}: negated must be true or false")
    elif task == "ask":
        if not isinstance(obj.get("text"), str) or not obj["text"].strip():
            errs.append("ask needs a non-empty 'text'")
        if obj.get("attribute") is not None and obj.get("attribute") not in attrs:
            errs.append(f"unknown attribute {obj.get('attribute')!r}")
        if obj.get("whose") not in HOLDERS:
            errs.append("whose must be 'user' or 'other'")
        if obj.get("time") not in ("current", "past"):
            errs.append("time must be 'current' or 'past'")
    elif task == "relate":
        for key in ("older", "newer"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                errs.append(f"relate needs a non-empty {key!r}")
        if obj.get("attribute") is not None and obj.get("attribute") not in attrs:
            errs.append(f"unknown attribute {obj.get('attribute')!r}")
        if obj.get("relation") not in RELATIONS:
            errs.append(f"relation must be one of {sorted(RELATIONS)}")
    else:
        errs.append("task must be 'read', 'ask' or 'relate'")
    return errs


def main(paths: list[str]) -> int:
    attrs = {a["name"]: a for a in json.loads(REGISTRY.read_text("utf-8"))["attributes"]}
    bad = 0
    ids: set[str] = set()
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    per_attr: collections.Counter[str] = collections.Counter()
    for path in paths:
        for n, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                print(f"{path}:{n}: not JSON ({exc})")
                bad += 1
                continue
            errs = check_line(obj, attrs)
            if isinstance(obj, dict) and obj.get("id") in ids:
                errs.append(f"duplicate id {obj.get('id')!r}")
            if isinstance(obj, dict):
                ids.add(str(obj.get("id")))
            for e in errs:
                print(f"{path}:{n}: {e}")
            bad += bool(errs)
            if not errs:
                counts[(obj["task"], obj["lang"])] += 1
                for r in obj.get("readings", []):
                    per_attr[r["attribute"]] += 1
                if obj["task"] != "read" and obj.get("attribute"):
                    per_attr[obj["attribute"]] += 1
    total = sum(counts.values())
    per_task = ", ".join(f"{t}/{lang} {c}" for (t, lang), c in sorted(counts.items()))
    print(f"{total} good lines, {bad} bad: {per_task}")
    print("readings per attribute: " + ", ".join(f"{a} {c}" for a, c in sorted(per_attr.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
