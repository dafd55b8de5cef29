"""The third held-out split of issue 11, written blind: formation of changes and knowledge updates.

``data/formation_changes_heldout3.json`` (96 cases) and
``data/knowledge_update_heldout3.json`` (32 cases) were written by a colleague who
had not read the extractor, the ranking code or any result, in phrasings of their
own (values stated mid-sentence, "X is officially home now", long sentences,
traps such as a quoted note or "I didn't take the job"). They are evaluated with
the harnesses of ``consolidation_scenarios.py`` (formation) and
``bench_knowledge_update.py`` (newest first), unchanged:

* formation: each case is its own user; the prior through ``observe``, ten days
  later the statement. The first two held-out splits used fixed prior values
  (Berlin, Siemens); this one varies them: a guard's is its ``expect``, a change's
  is what the fast extractor reads from the prior alone (listed when it reads
  nothing). A change is read when the expected value is the only
  active value of the slot and the briefing no longer quotes the prior; a guard
  holds when nothing changed.
* knowledge updates: old value in session 1, the new one 3-8 weeks later, filler
  around both, asked 100 days after the start; newest first = the new statement
  ranks above the old one (or the old one is not returned).

The first evaluation is written to ``results/formation_changes_heldout3_first_look.json``
and ``results/knowledge_update_heldout3_first_look.json`` once and never
overwritten; later runs print without writing.

    python benchmarks/heldout3_first_look.py [--heldout4 | ... | --heldout9]

After that first look, heldout3 became a development split: the reader of a new
value of what the user already holds (``memstrata.policies.slot_change``) was built
on its misses. ``--heldout4`` evaluates a fourth formation split (64 cases), written
blind after it, and writes its first look once
(``results/formation_changes_heldout4_first_look.json``). heldout4 then became a
development split too (the Chinese reader of held values and the mid-sentence
"from now on" guard were built on its misses); ``--heldout5`` evaluates a fifth
split (80 cases, half Chinese), written blind after that. heldout5 then became a
development split too (the readers of a held name and diet, the city gazetteer, clause-level
English guards); ``--heldout6`` evaluates a sixth split (96 cases, half Chinese), written
blind after that, and ``--heldout7`` a seventh, written blind after heldout6's misses and
lost guards were fixed (heldout6 is a development split since); ``--heldout8`` an
eighth, written blind after heldout7 was used the same way, ``--heldout9`` a
ninth, written blind after heldout8 was, and ``--heldout10`` a tenth, written blind after
heldout9's misses were fixed (96 cases), ``--heldout11`` an eleventh, written
blind after heldout10's misses were fixed (96 cases), ``--heldout12`` a twelfth,
written blind after heldout11's misses were fixed (96 cases), ``--heldout13`` a
thirteenth, written blind after heldout12's were (96 cases), ``--heldout14`` a
fourteenth, written blind after heldout13's were (96 cases), and ``--heldout15`` a
fifteenth, written blind after heldout14's were (96 cases).

``--updates4`` evaluates a fourth knowledge-update split (``data/knowledge_update_heldout4.json``,
40 cases, 22 English / 18 Chinese), written blind after heldout3's knowledge-update misses
were used to build the reading of questions about the present ("where do I work these
days?"), and writes its first look once (``results/knowledge_update_heldout4_first_look.json``).
heldout4 then became a development split (questions and requests about the user read
as about the present, "have been ... since" and "left for" as changes); ``--updates5``
evaluates a fifth split (40 cases), written blind after that, with the Chinese cases
also on the embedder the README tells Chinese users to choose (multilingual-e5-small).
heldout5 then became a development split too (subjectless Chinese changes kept offline,
the asked attribute read from free-text candidates); ``--updates6`` evaluates a sixth split
(40 cases), written blind after that, ``--updates7`` a seventh (40 cases), written blind
after heldout11's formation fixes, ``--updates8`` an eighth (40 cases), written blind
after heldout7's first look, and ``--updates9`` a ninth (40 cases), written blind after
heldout8's misses led to the offline diary statements.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import bench_knowledge_update as ku
import consolidation_scenarios as cs
from _common import RESULTS

from memstrata import ManualClock, MemoryManager
from memstrata.memory import default_embedder

DATA = Path(__file__).parent / "data"
FORMATION = DATA / "formation_changes_heldout3.json"
UPDATES = DATA / "knowledge_update_heldout3.json"
FORMATION_LOOK = RESULTS / "formation_changes_heldout3_first_look.json"
UPDATES_LOOK = RESULTS / "knowledge_update_heldout3_first_look.json"
UPDATES4 = DATA / "knowledge_update_heldout4.json"
UPDATES4_LOOK = RESULTS / "knowledge_update_heldout4_first_look.json"
UPDATES5 = DATA / "knowledge_update_heldout5.json"
UPDATES5_LOOK = RESULTS / "knowledge_update_heldout5_first_look.json"
UPDATES6 = DATA / "knowledge_update_heldout6.json"
UPDATES6_LOOK = RESULTS / "knowledge_update_heldout6_first_look.json"
UPDATES7 = DATA / "knowledge_update_heldout7.json"
UPDATES7_LOOK = RESULTS / "knowledge_update_heldout7_first_look.json"
UPDATES8 = DATA / "knowledge_update_heldout8.json"
UPDATES8_LOOK = RESULTS / "knowledge_update_heldout8_first_look.json"
UPDATES9 = DATA / "knowledge_update_heldout9.json"
UPDATES9_LOOK = RESULTS / "knowledge_update_heldout9_first_look.json"
#: a fourth formation split, written blind after the heldout3 first look (which made
#: heldout3 a development split: the reader of known values was built on its misses)
FORMATION4 = DATA / "formation_changes_heldout4.json"
FORMATION4_LOOK = RESULTS / "formation_changes_heldout4_first_look.json"
#: a fifth, written blind after the Chinese reader of held values was built on heldout4
FORMATION5 = DATA / "formation_changes_heldout5.json"
FORMATION5_LOOK = RESULTS / "formation_changes_heldout5_first_look.json"
#: a sixth, written blind after the readers of held names and diets, the city gazetteer
#: and the clause-level English guards were built on heldout5 (and 3, 4)
FORMATION6 = DATA / "formation_changes_heldout6.json"
FORMATION6_LOOK = RESULTS / "formation_changes_heldout6_first_look.json"
#: a seventh, written blind after the fixes of heldout6's misses and lost guards
FORMATION7 = DATA / "formation_changes_heldout7.json"
FORMATION7_LOOK = RESULTS / "formation_changes_heldout7_first_look.json"
#: an eighth, written blind after the fixes of heldout7's misses and lost guards
FORMATION8 = DATA / "formation_changes_heldout8.json"
FORMATION8_LOOK = RESULTS / "formation_changes_heldout8_first_look.json"
#: a ninth, written blind after the fixes of heldout8's misses
FORMATION9 = DATA / "formation_changes_heldout9.json"
FORMATION10 = DATA / "formation_changes_heldout10.json"
FORMATION9_LOOK = RESULTS / "formation_changes_heldout9_first_look.json"
FORMATION10_LOOK = RESULTS / "formation_changes_heldout10_first_look.json"
#: an eleventh, written blind after the fixes of heldout10's misses
FORMATION11 = DATA / "formation_changes_heldout11.json"
FORMATION11_LOOK = RESULTS / "formation_changes_heldout11_first_look.json"
#: a twelfth, written blind after the fixes of heldout11's misses
FORMATION12 = DATA / "formation_changes_heldout12.json"
FORMATION12_LOOK = RESULTS / "formation_changes_heldout12_first_look.json"
#: a thirteenth, written blind after the fixes of heldout12's misses
FORMATION13 = DATA / "formation_changes_heldout13.json"
FORMATION13_LOOK = RESULTS / "formation_changes_heldout13_first_look.json"
#: a fourteenth, written blind after the fixes of heldout13's misses
FORMATION14 = DATA / "formation_changes_heldout14.json"
FORMATION14_LOOK = RESULTS / "formation_changes_heldout14_first_look.json"
#: a fifteenth, written blind after the fixes of heldout14's misses
FORMATION15 = DATA / "formation_changes_heldout15.json"
FORMATION15_LOOK = RESULTS / "formation_changes_heldout15_first_look.json"


def _prior_value(mm: MemoryManager, case: dict[str, Any]) -> str | None:
    """The slot value the fast extractor reads from the prior alone."""
    if case["attribute"] is None:
        return None
    user = f"{case['id']}:prior"
    mm.observe(user, "s1", "user", case["prior"])
    values = [r.slot.value for r in mm.memories(user, statuses="active")
              if r.slot is not None and r.slot.attribute == case["attribute"]]
    return values[0] if len(values) == 1 else None


def formation(path: Path = FORMATION) -> dict[str, Any]:
    cases = json.loads(path.read_text())["cases"]
    embedder = default_embedder()
    tmp = tempfile.mkdtemp(prefix="memstrata-heldout3-")
    clock = ManualClock(cs.START)
    rows = []
    priors_unread = []
    with MemoryManager.open(f"sqlite:///{tmp}/f.db", embedder=embedder, clock=clock,
                            index_dir=Path(tmp) / "index") as mm:
        for c in cases:
            prior = _prior_value(mm, c)
            if c["attribute"] is not None and prior is None:
                priors_unread.append(c["id"])
            # a guard keeps the value its author gave (the prior's); a change is
            # compared with what was read from the prior
            c = {**c, "prior_value": c["expect"] if c["kind"] == "guard" else prior}
            rows.append({**cs.formation_case(mm, clock, c), "lang": c["lang"],
                         "category": c["category"]})
    out: dict[str, Any] = {"all": cs._formation_metrics(rows)}
    for lang in ("en", "zh"):
        out[lang] = cs._formation_metrics([r for r in rows if r["lang"] == lang])
    out["by_category"] = {
        cat: {k: v for k, v in cs._formation_metrics(
            [r for r in rows if r["category"] == cat]).items() if k != "misses"}
        for cat in sorted({r["category"] for r in rows})}
    out["priors_not_read_alone"] = priors_unread
    return out


def updates(path: Path = UPDATES, *, chinese_with_e5: bool = False) -> dict[str, Any]:
    data = json.loads(path.read_text())
    cases = data["cases"]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(ku.START)
        with MemoryManager.open(f"sqlite:///{tmp}/ku.db", clock=clock, home=tmp) as mm:
            for mode in ku.MODES:
                clock.set(ku.START)
                per_variant = ku._run_cases(mm, clock, cases, data["filler"], mode)
                results[mode] = {
                    name: {"all": ku._score(rows),
                           **{lang: ku._score([r for r in rows if r["lang"] == lang])
                              for lang in ("en", "zh")}}
                    for name, rows in per_variant.items()}
                results[mode]["misses"] = [
                    {k: r[k] for k in ("id", "lang", "new_rank", "old_rank")}
                    for r in per_variant["default"] if not r["newest_first"]]
            if chinese_with_e5:
                results["chinese_with_e5"] = ku.chinese_with_e5(
                    tmp, clock, cases, data["filler"], sorted({c["split"] for c in cases}))
    return results


def _write_once(path: Path, name: str, payload: dict[str, Any]) -> None:
    if path.exists():
        print(f"{path.name} exists (the first look is never overwritten); not written")
        return
    path.write_text(json.dumps({
        "benchmark": path.stem, "note": f"the first evaluation of the blind {name} split, "
        "written before any tuning on it; never overwritten",
        "when": datetime.now(UTC).isoformat(timespec="seconds"), name: payload},
        indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {path}")


def main() -> None:
    for flag, data, look in (("--heldout4", FORMATION4, FORMATION4_LOOK),
                             ("--heldout5", FORMATION5, FORMATION5_LOOK),
                             ("--heldout6", FORMATION6, FORMATION6_LOOK),
                             ("--heldout7", FORMATION7, FORMATION7_LOOK),
                             ("--heldout8", FORMATION8, FORMATION8_LOOK),
                             ("--heldout9", FORMATION9, FORMATION9_LOOK),
                             ("--heldout10", FORMATION10, FORMATION10_LOOK),
                             ("--heldout11", FORMATION11, FORMATION11_LOOK),
                             ("--heldout12", FORMATION12, FORMATION12_LOOK),
                             ("--heldout13", FORMATION13, FORMATION13_LOOK),
                             ("--heldout14", FORMATION14, FORMATION14_LOOK),
                             ("--heldout15", FORMATION15, FORMATION15_LOOK)):
        if flag in sys.argv:
            found = formation(data)
            print(json.dumps({k: v for k, v in found.items() if k != "by_category"},
                             indent=1, ensure_ascii=False))
            _write_once(look, flag.lstrip("-"), found)
            return
    for flag, data, look in (("--updates4", UPDATES4, UPDATES4_LOOK),
                             ("--updates5", UPDATES5, UPDATES5_LOOK),
                             ("--updates6", UPDATES6, UPDATES6_LOOK),
                             ("--updates7", UPDATES7, UPDATES7_LOOK),
                             ("--updates8", UPDATES8, UPDATES8_LOOK),
                             ("--updates9", UPDATES9, UPDATES9_LOOK)):
        if flag in sys.argv:
            ranked = updates(data, chinese_with_e5=flag != "--updates4")
            print(json.dumps(ranked, indent=1, ensure_ascii=False))
            _write_once(look, "heldout" + flag[-1], ranked)
            return
    found = formation()
    print(json.dumps({k: v for k, v in found.items() if k != "by_category"}, indent=1,
                     ensure_ascii=False))
    _write_once(FORMATION_LOOK, "heldout3", found)
    ranked = updates()
    print(json.dumps(ranked, indent=1, ensure_ascii=False))
    _write_once(UPDATES_LOOK, "heldout3", ranked)


if __name__ == "__main__":
    main()
