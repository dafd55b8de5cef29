"""Score a reader on labelled lines: the figures of the scoreboard and the model's manifest.

Three kinds of data, all JSON Lines or the benchmark JSON files:

* reader lines (``task`` read / ask / relate, the format of ``scripts/check_reading_data.py``);
* change cases (``prior``, ``statement``, ``kind`` change / guard, ``attribute``, ``expect``:
  the blind formation sets) - a change is read when the reader gives the user's own
  current value of the attribute, equal to ``expect``; a guard holds when it gives no
  current value of the attribute other than the prior one (``guard_*``: a new value of a
  multi-valued attribute - another pet - is no change of the one held; ``guard_strict_*``
  counts it too: a guard holds strictly when the reader gives the user no current value
  of the attribute that the prior did not say, which is what ``observe`` then keeps;
  ``change_kept_*`` counts a change read only when the one value of a single-valued
  attribute a write keeps (:func:`memstrata.reading.kept.one_value_each`) is the right one,
  not any of several read as holding now);
* ask cases (``text``, ``attribute``, ``whose``, ``time``).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from memstrata.reading.kept import one_value_each
from memstrata.reading.protocol import Reader
from memstrata.reading.registry import registry
from memstrata.reading.types import CLASHES, Held, Reading

__all__ = ["change_case_attribute", "prior_value", "prior_values", "score_changes",
           "score_lines", "value_matches"]

_PUNCT = re.compile(r"[\s\-_.,'’\"“”!?。，！？()（）]+")
#: the words the blind sets' writers use for a diet that the registry labels otherwise
_DIET = {"plant-based": "vegan", "plant based": "vegan", "not vegetarian": "omnivore",
         "not vegan": "omnivore", "meat": "omnivore", "eats meat": "omnivore",
         "pescetarian": "pescatarian", "gluten free": "gluten-free", "dairy free": "dairy-free",
         "素食": "vegetarian", "吃素": "vegetarian", "纯素": "vegan", "全素": "vegan",
         "生酮": "keto", "无麸质": "gluten-free", "清真": "halal", "鱼素": "pescatarian",
         "低碳水": "low-carb", "荤素都吃": "omnivore", "吃肉": "omnivore", "不吃素": "omnivore"}


def _diet_label(value: str) -> str:
    """The registry's label of a diet as written: a writer's word for it, or the label as
    ``observe`` stores it for a Chinese turn (the registry's ``labels_zh``: 不吃乳制品 is
    dairy-free)."""
    v = value.strip().casefold()
    return registry()["diet"].label_of(_DIET.get(v, v))


def _norm(value: str) -> str:
    return _PUNCT.sub("", unicodedata.normalize("NFKC", value).casefold())


def value_matches(attribute: str, got: str, expect: str) -> bool:
    """Whether a read value is the expected one (case, spacing and punctuation aside)."""
    if attribute == "diet":
        return _diet_label(got) == _diet_label(expect)
    a, b = _norm(got), _norm(expect)
    if not a or not b:
        return False
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    # "腾讯" for "腾讯公司", "Kat" for "kat" - not "Porto" for "Porto Alegre"
    return short in long_ and len(short) >= 0.6 * len(long_)


def change_case_attribute(case: dict[str, Any]) -> str:
    """The registry attribute a change case is about (the old sets left instructions None)."""
    attr = case.get("attribute")
    if attr:
        return str(attr)
    expect = str(case.get("expect") or "")
    languages = ("english", "french", "german", "spanish", "chinese", "japanese", "korean",
                 "italian", "portuguese", "cantonese", "英文", "英语", "中文", "日语", "粤语",
                 "法语", "德语", "韩语", "西班牙语", "普通话")
    return "language" if expect.casefold() in languages else "instruction"


def _own_now(readings: Iterable[Reading], attribute: str) -> list[Reading]:
    return [r for r in readings if r.attribute == attribute and r.current_own]


def score_changes(reader: Reader, cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Changes read with the right value and guards held, overall and per language."""
    tally: Counter[str] = Counter()
    misses: list[dict[str, Any]] = []
    reg = registry()
    for case in cases:
        attr = change_case_attribute(case)
        priors = prior_values(reader, case, attr)
        prior = priors[0] if priors else None
        held = (Held(attr, prior),) if prior else ()
        readings = reader.read(case["statement"], held)
        own = _own_now(readings, attr)
        if attr == "name":  # "call me Kat" is a preferred name: the sets call it a name change
            own += _own_now(readings, "preferred_name")
        if attr in ("language", "instruction"):
            own = _own_now(readings, "language") + _own_now(readings, "instruction")
        lang = case.get("lang", "en")
        if case["kind"] == "change":
            expect = str(case["expect"])
            ok = any(value_matches(attr, r.value, expect) for r in own) if attr != "instruction" \
                else bool(own)
            if attr == "language":
                ok = any(value_matches("language", r.value, expect) for r in own)
            tally[f"change/{lang}"] += 1
            tally[f"change_ok/{lang}"] += ok
            # kept: the one value of a single-valued attribute a write keeps is the right one
            kept = ok
            if ok and reg[attr].cardinality == "single" and attr not in ("language",
                                                                          "instruction"):
                family = (attr, "preferred_name") if attr == "name" else (attr,)
                kept = any(r.attribute in family and value_matches(attr, r.value, expect)
                           for r in one_value_each(reg, [r for r in readings if r.current_own],
                                                   held))
            tally[f"change_kept/{lang}"] += 1
            tally[f"change_kept_ok/{lang}"] += kept
        else:
            changed = [r for r in own if not (prior and value_matches(attr, r.value, prior))]
            # strict: no value of the user's own, now, that the prior did not say - also of
            # a multi-valued attribute (a neighbour's husky read as the user's new pet is
            # what observe then keeps, though it changes none of the pets held)
            added = [r for r in own if not any(value_matches(attr, r.value, p) for p in priors)]
            if reg[attr].cardinality == "multi" and attr not in ("instruction", "language"):
                changed = []  # another pet is no change of the one held
            ok = not changed
            tally[f"guard/{lang}"] += 1
            tally[f"guard_ok/{lang}"] += ok
            tally[f"guard_strict/{lang}"] += 1
            tally[f"guard_strict_ok/{lang}"] += not added
        if not ok:
            misses.append({"id": case.get("id"), "kind": case["kind"], "attribute": attr,
                           "statement": case["statement"], "expect": case.get("expect"),
                           "read": [f"{r.attribute}={r.value} ({r.holder}/{r.when}"
                                    f"{'/not' if r.negated else ''})" for r in readings]})
    return {**_rates(tally, ("change", "change_kept", "guard", "guard_strict")),
            "misses": misses}


def prior_value(reader: Reader, case: dict[str, Any], attr: str) -> str | None:
    """The user's own value of ``attr`` that ``reader`` reads in a change case's prior."""
    values = prior_values(reader, case, attr)
    return values[0] if values else None


def prior_values(reader: Reader, case: dict[str, Any], attr: str) -> list[str]:
    """Every value of the user's own of ``attr`` that ``reader`` reads in a change case's
    prior, in the order read (a cat and its name: ``["cat", "Mochi"]``)."""
    prior = case.get("prior") or ""
    return [r.value for r in reader.read(prior) if r.attribute == attr and r.holder == "user"]


def _rates(tally: Counter[str], kinds: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in kinds:
        for lang in ("en", "zh", "all"):
            n = sum(tally[f"{kind}/{x}"] for x in ("en", "zh")) if lang == "all" \
                else tally[f"{kind}/{lang}"]
            ok = sum(tally[f"{kind}_ok/{x}"] for x in ("en", "zh")) if lang == "all" \
                else tally[f"{kind}_ok/{lang}"]
            out[f"{kind}_{lang}"] = round(ok / n, 4) if n else None
            out[f"{kind}_{lang}_n"] = n
    return out


def score_lines(reader: Reader, lines: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Figures on reader lines: own current values (recall and precision), every value's
    whose / when, the asked attribute, and relations (contradictions' recall and precision)."""
    tally: Counter[str] = Counter()
    for ex in lines:
        lang = ex["lang"]
        if ex["task"] == "read":
            gold = ex["readings"]
            got = reader.read(ex["text"])
            gold_own = [g for g in gold if g["holder"] == "user" and g["when"] == "now"
                        and not g["negated"]]
            for g in gold_own:
                tally[f"own/{lang}"] += 1
                tally[f"own_ok/{lang}"] += any(
                    r.attribute == g["attribute"] and (value_matches(r.attribute, r.value,
                                                                     g["value"])
                                                       or value_matches(r.attribute, r.value,
                                                                        g["span"]))
                    for r in _own_now(got, g["attribute"]))
            for r in got:
                if not r.current_own:
                    continue
                tally[f"own_said/{lang}"] += 1
                tally[f"own_said_ok/{lang}"] += any(
                    g["attribute"] == r.attribute and (value_matches(r.attribute, r.value,
                                                                     g["value"])
                                                       or value_matches(r.attribute, r.value,
                                                                        g["span"]))
                    for g in gold_own)
            for g in gold:
                hit = [r for r in got if r.attribute == g["attribute"] and r.span is not None
                       and ex["text"][r.span[0]:r.span[1]].casefold() == g["span"].casefold()]
                tally[f"span/{lang}"] += 1
                tally[f"span_ok/{lang}"] += bool(hit)
                if hit:
                    tally[f"status/{lang}"] += 1
                    tally[f"status_ok/{lang}"] += (hit[0].holder == g["holder"]
                                                   and hit[0].when == g["when"]
                                                   and hit[0].negated == g["negated"])
        elif ex["task"] == "ask":
            asked = reader.ask(ex["text"])
            want = ex["attribute"]
            ok = (asked is None) if want is None else (
                asked is not None and asked.attribute == want and asked.whose == ex["whose"]
                and asked.time == ex["time"])
            tally[f"ask/{lang}"] += 1
            tally[f"ask_ok/{lang}"] += ok
        elif ex["task"] == "relate":
            rel = reader.relate(ex["older"], ex["newer"])
            tally[f"relate/{lang}"] += 1
            tally[f"relate_ok/{lang}"] += rel.kind == ex["relation"]
            # a contradiction found: one made on purpose (a correction) or not, either way
            # (the sets before stop 63 label both "contradiction")
            if ex["relation"] in CLASHES:
                tally[f"contra/{lang}"] += 1
                tally[f"contra_ok/{lang}"] += rel.kind in CLASHES
            if rel.kind in CLASHES:
                tally[f"contra_said/{lang}"] += 1
                tally[f"contra_said_ok/{lang}"] += ex["relation"] in CLASHES
            if ex["relation"] == "correction":
                tally[f"correction/{lang}"] += 1
                tally[f"correction_ok/{lang}"] += rel.kind == "correction"
    return _rates(tally, ("own", "own_said", "span", "status", "ask", "relate", "contra",
                          "contra_said", "correction"))
