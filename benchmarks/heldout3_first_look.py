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

The first evaluation is written once, as the entry ``heldout3`` of
``results/formation_changes_first_looks.json`` and of
``results/knowledge_update_first_looks.json`` (one file a benchmark, keyed by set), and
never overwritten; later runs print without writing.

    python benchmarks/heldout3_first_look.py [--heldout4 | ... | --heldout9]

After that first look, heldout3 became a development split: the reader of a new
value of what the user already holds (``memstrata.policies.slot_change``) was built
on its misses. ``--heldout4`` evaluates a fourth formation split (64 cases), written
blind after it, and writes its first look once
(``heldout4`` in ``results/formation_changes_first_looks.json``). heldout4 then became a
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
fourteenth, written blind after heldout13's were (96 cases), ``--heldout15`` a
fifteenth, written blind after heldout14's were (96 cases), ``--heldout16`` a
sixteenth, written blind after heldout15's were (96 cases), ``--heldout17`` a
seventeenth, written blind after heldout16's were (96 cases), ``--heldout18`` an
eighteenth, written blind after heldout17's were (96 cases), ``--heldout19`` a
nineteenth, written blind after heldout18's were (96 cases), ``--heldout20`` a
twentieth, written blind after heldout19's were (96 cases), ``--heldout21`` a
twenty-first, written blind after heldout20's were (96 cases), ``--heldout22`` a
twenty-second, written blind after heldout21's were (96 cases), ``--heldout23`` a
twenty-third, written blind after heldout22's were (96 cases), ``--heldout24`` a
twenty-fourth, written blind after heldout23's were (96 cases), ``--heldout25`` a
twenty-fifth, written blind after heldout24's were (96 cases), ``--heldout26`` a
twenty-sixth, written blind after heldout25's were (96 cases), ``--heldout27`` a
twenty-seventh, written blind after heldout26's were (96 cases), ``--heldout28`` a
twenty-eighth, written blind after heldout27's were (96 cases), ``--heldout29`` a
twenty-ninth, written blind after heldout28's first look (96 cases; no formation fix
between the two: both read the extractor as heldout27's fixes left it), and
``--heldout30`` a thirtieth, written blind after heldout29's were (96 cases), and
``--heldout31`` a thirty-first, written blind while heldout28's and heldout30's misses
were fixed (96 cases; evaluated once those fixes were committed), and ``--heldout32``
a thirty-second, written blind while heldout31's were (96 cases; evaluated the same way),
and ``--heldout33`` a thirty-third, written blind while heldout32's were (96 cases; the
same way), and ``--heldout34`` a thirty-fourth, written blind after the knowledge-update
splits' values said in passing were read (slot_change's readers of a value in passing;
no formation split's misses were fixed in between), and ``--heldout35`` a thirty-fifth,
written blind after heldout34's were (96 cases; evaluated before any change after them),
and ``--heldout36`` a thirty-sixth, written blind after heldout35's were (96 cases;
evaluated on the code after heldout35's and guard13's fixes, 62567bd), and ``--heldout37``
a thirty-seventh, written blind after heldout36's were (96 cases; evaluated on the final code
of that round, 63952a1, with no change after it), and ``--heldout38`` a thirty-eighth,
written blind while heldout37's misses were fixed (96 cases; evaluated on the code after
those fixes, a5db7df), and ``--heldout39`` a thirty-ninth, written blind while heldout38's
were fixed (96 cases; evaluated on the code after those fixes, 03b8171), and ``--heldout40``
a fortieth, written blind after heldout39's first look (96 cases; evaluated on the code
after the reading of a thing's make was added, 8ac2281, with no formation change since
heldout39's first look).

``--updates4`` evaluates a fourth knowledge-update split (``data/knowledge_update_heldout4.json``,
40 cases, 22 English / 18 Chinese), written blind after heldout3's knowledge-update misses
were used to build the reading of questions about the present ("where do I work these
days?"), and writes its first look once (``heldout4`` in
``results/knowledge_update_first_looks.json``; the guard splits' are ``guardN`` there).
heldout4 then became a development split (questions and requests about the user read
as about the present, "have been ... since" and "left for" as changes); ``--updates5``
evaluates a fifth split (40 cases), written blind after that, with the Chinese cases
also on the embedder the README tells Chinese users to choose (multilingual-e5-small).
heldout5 then became a development split too (subjectless Chinese changes kept offline,
the asked attribute read from free-text candidates); ``--updates6`` evaluates a sixth split
(40 cases), written blind after that, ``--updates7`` a seventh (40 cases), written blind
after heldout11's formation fixes, ``--updates8`` an eighth (40 cases), written blind
after heldout7's first look, ``--updates9`` a ninth (40 cases), written blind after
heldout8's misses led to the offline diary statements, ``--updates10`` a tenth (40
cases), written blind after heldout9's first look, ``--updates11`` an eleventh (40
cases), written blind after heldout16's formation fixes, ``--updates12`` a twelfth (40
cases), written blind after heldout17's, ``--updates13`` a thirteenth (40 cases),
written blind after heldout18's, ``--updates14`` a fourteenth (40 cases), written
blind after heldout19's, ``--updates15`` a fifteenth (40 cases), written blind after
heldout20's, ``--updates16`` a sixteenth (40 cases), written blind after heldout21's,
``--updates17`` a seventeenth (40 cases), written blind after heldout22's,
``--updates18`` an eighteenth (40 cases), written blind after heldout23's,
``--updates19`` a nineteenth (40 cases), written blind after heldout24's,
``--updates20`` a twentieth (40 cases), written blind after heldout27's, with no
knowledge-update change since heldout19's first look, and ``--updates21`` and
``--updates22`` (40 cases each), written blind while heldout10-20's misses led to
the employer questions, the latest statements read for the asked attribute, Chinese
changes found by a question about now, and reasons after a question. ``--updates23``
and ``--updates24`` (40 cases each) were written blind with the guard splits, before
the reading of whose state a statement reports (``memstrata.policies.standing``) and
``current_similarity`` 0.05 were built on guard1; ``--guards2`` and ``--guards3``
evaluate the guard splits written with them (40 cases each: a later statement close
to the asked thing that does not change it). ``--updates25`` and ``--guards4`` (40 cases
each) were written blind after heldout23-24's and guard2-3's first looks, while their
misses led to a vector per sentence of a record (the relevance gate admits a message by
one of its sentences). ``--updates26`` and ``--guards5`` (40 cases each) were written blind
after those first looks and the fixes they led to (the reader of whose state a statement
reports, the user's own changes read as changes in the ranking); ``--updates27`` and
``--guards6`` (40 cases each) after heldout26's and guard5's, and guard5's fixes (a "now"
that states no change, more plan, past and one-off cues); ``--updates28`` and ``--guards7``
(40 cases each) after heldout27's and guard6's, and guard6's fixes. ``--guards8`` (40
cases) was written blind while guard7's misses were fixed (evaluated once those fixes were
committed), ``--guards9`` (40 cases) while guard8's were (the same way). ``--updates29``
(40 cases, 22 English / 18 Chinese) was written blind after guard8's fixes, with no change
to the ranking of updates since heldout28's first look. ``--updates30`` (40 cases, 22 / 18)
and ``--guards10`` (40 cases) were written blind while heldout3-29's misses were fixed (a
value said in passing read when a request asks for its attribute, Chinese read by word
overlap updated as a cosine does) and evaluated once those fixes were committed.
``--updates31`` and ``--guards11`` (40 cases each) were written blind after heldout30's and
guard10's first looks and the reader's fixes on their misses. ``--updates32`` and
``--guards12`` (40 cases each) were written blind after heldout34's formation fixes and
``not_current_weight`` 0.2, with no change after their first looks. ``--guards13`` (40
cases, 20 / 20) and ``--updates33`` (40 cases, 22 / 18) were written blind after those
and evaluated on the same code (6b0ef38). ``--updates34`` (40 cases, 22 / 18) and
``--guards14`` (40 cases, 20 / 20) were written blind while heldout33's and guard13's misses
were fixed, and evaluated on the code after those fixes (62567bd). ``--updates35`` and
``--guards15`` (40 cases each) were written blind while heldout34's and guard14's misses were
fixed, and evaluated on the code after those fixes (63952a1), with no change after them.
``--updates36`` and ``--guards16`` (40 cases each) were written blind while heldout35's and
guard15's misses were fixed, and evaluated on the code after those fixes (a5db7df).
``--updates37`` and ``--guards17`` (40 cases each) were written blind while heldout36's and
guard16's misses were fixed, and evaluated on the code after those fixes (03b8171).
``--updates38`` and ``--guards18`` (40 cases each) were written blind after those first
looks, and evaluated on the code after the reading of a thing's make or provider
(``policies/possessions.py``) was added, 8ac2281; the two commits after it (c46adbb,
642de4d) change the reading of none of their statements or questions.
``--updates39`` and ``--guards19`` (40 cases each) were written blind after the nightly
offline ``summarize`` began to keep a question that takes the user's own thing for granted
and to give its records sentence vectors (ec2a944), and evaluated on that code; the one
change after them (1dcff2d: a question for the thing the user had, read in the question)
changes the reading of one of guard19's questions (g19-carrier-1, "my phone's had no signal
since this morning", read as about the past at the first look) and none of heldout39's.

``--formation-now`` evaluates every blind formation split (3-40) on the code as it stands
and writes ``results/formation_changes_blind_now.json`` (rewritten on each run: these are
not first looks - most of the splits were tuned on after theirs).
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
from _common import RESULTS, record_first_look

from memstrata import ManualClock, MemoryManager
from memstrata.memory import default_embedder

DATA = Path(__file__).parent / "data"
FORMATION = DATA / "formation_changes_heldout3.json"
UPDATES = DATA / "knowledge_update_heldout3.json"
#: the first looks, one file a benchmark: an entry per blind set (``heldoutN``, ``guardN``),
#: each written once and never overwritten
FORMATION_LOOKS = RESULTS / "formation_changes_first_looks.json"
UPDATE_LOOKS = RESULTS / "knowledge_update_first_looks.json"
#: the later blind splits, each written after the fixes of the one before it (the
#: docstring says what each followed): ``--heldoutN`` evaluates
#: ``data/formation_changes_heldoutN.json``, ``--updatesN``
#: ``data/knowledge_update_heldoutN.json``, and each writes its first look once
FORMATION_SPLITS = range(4, 41)
UPDATE_SPLITS = range(4, 40)
#: the knowledge-update guard splits first looked at here (``--guardsN``,
#: ``data/knowledge_update_guardN.json``; guard1 is the split tuned on)
GUARD_SPLITS = range(2, 20)


def _formation_split(n: int) -> Path:
    return DATA / f"formation_changes_heldout{n}.json"


def _update_split(n: int) -> Path:
    return DATA / f"knowledge_update_heldout{n}.json"


def _prior_value(mm: MemoryManager, case: dict[str, Any]) -> str | None:
    """The slot value the fast extractor reads from the prior alone."""
    if case["attribute"] is None:
        return None
    user = f"{case['id']}:prior"
    mm.observe(user, "s1", "user", case["prior"])
    values = [r.slot.value for r in mm.memories(user, statuses="active")
              if r.slot is not None and r.slot.attribute == case["attribute"]]
    return values[0] if len(values) == 1 else None


def formation(path: Path = FORMATION, *, reader: str = "auto") -> dict[str, Any]:
    cases = json.loads(path.read_text())["cases"]
    embedder = default_embedder()
    tmp = tempfile.mkdtemp(prefix="memstrata-heldout3-")
    clock = ManualClock(cs.START)
    rows = []
    priors_unread = []
    with MemoryManager.open(f"sqlite:///{tmp}/f.db", embedder=embedder, clock=clock,
                            index_dir=Path(tmp) / "index", reader=reader) as mm:
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


def guards(path: Path) -> dict[str, Any]:
    """A guard split: does the old value stay first when a later statement close to
    it does not change it (``remember`` and ``observe`` with the nightly summaries)?"""
    data = json.loads(path.read_text())
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(ku.START)
        with MemoryManager.open(f"sqlite:///{tmp}/guard.db", clock=clock, home=tmp) as mm:
            for mode in ("remember", "observe_nightly"):
                clock.set(ku.START)
                results[mode] = ku.guard_report(
                    ku.run_guards(mm, clock, data["cases"], data["filler"], mode))
    return results


def formation_now(reader: str = "auto") -> dict[str, Any]:
    """Every blind formation split on the code as it stands (not first looks), read by
    ``reader`` (``--reader rules|model|cascade``; the default is the manager's)."""
    from tqdm import tqdm

    splits = [3, *FORMATION_SPLITS]
    out: dict[str, Any] = {}
    for n in tqdm(splits, desc="formation splits", unit="split"):
        data = FORMATION if n == 3 else _formation_split(n)
        found = formation(data, reader=reader)
        out[f"heldout{n}"] = {k: found[k] for k in ("all", "en", "zh")}
    return out


def main() -> None:
    if "--formation-now" in sys.argv:
        reader = sys.argv[sys.argv.index("--reader") + 1] if "--reader" in sys.argv else "auto"
        now = formation_now(reader)
        path = RESULTS / ("formation_changes_blind_now.json" if reader == "auto"
                          else f"formation_changes_blind_now_{reader}.json")
        path.write_text(json.dumps({
            "benchmark": path.stem,
            "note": "every blind formation split on the code as it stands; rewritten on each "
                    "run (not first looks: the first looks are in formation_changes_"
                    "first_looks.json)",
            "when": datetime.now(UTC).isoformat(timespec="seconds"), "splits": now},
            indent=2, ensure_ascii=False) + "\n")
        for name, entry in now.items():
            print(f"{name:<10} changes {entry['all']['changes_read_correctly']:.3f} "
                  f"guards {entry['all']['guards_held']:.3f}")
        print(f"wrote {path}")
        return
    for n in FORMATION_SPLITS:
        if f"--heldout{n}" in sys.argv:
            found = formation(_formation_split(n))
            print(json.dumps({k: v for k, v in found.items() if k != "by_category"},
                             indent=1, ensure_ascii=False))
            record_first_look(FORMATION_LOOKS, f"heldout{n}", found)
            return
    for n in GUARD_SPLITS:
        if f"--guards{n}" in sys.argv:
            found = guards(DATA / f"knowledge_update_guard{n}.json")
            print(json.dumps(found, indent=1, ensure_ascii=False))
            record_first_look(UPDATE_LOOKS, f"guard{n}", found)
            return
    for n in UPDATE_SPLITS:
        if f"--updates{n}" in sys.argv:
            ranked = updates(_update_split(n), chinese_with_e5=n != 4)
            print(json.dumps(ranked, indent=1, ensure_ascii=False))
            record_first_look(UPDATE_LOOKS, f"heldout{n}", ranked)
            return
    found = formation()
    print(json.dumps({k: v for k, v in found.items() if k != "by_category"}, indent=1,
                     ensure_ascii=False))
    record_first_look(FORMATION_LOOKS, "heldout3", found)
    ranked = updates()
    print(json.dumps(ranked, indent=1, ensure_ascii=False))
    record_first_look(UPDATE_LOOKS, "heldout3", ranked)


if __name__ == "__main__":
    main()
