"""Benchmark: the nightly jobs never make memory worse.

Every question is asked before the nightly jobs and after each of them, on real SQLite
with the packaged MiniLM and the default reader. A question is *right* when recall puts
what the user holds now first:

* ``knowledge_update`` - the update cases of ``data/knowledge_update*.json`` (an old
  value, weeks of filler, a new value said in passing): the new statement is returned
  and ranked above the old one (``k=5``), as in ``bench_knowledge_update.py``;
* ``no_change`` - the guard cases of ``data/knowledge_update_guard*.json`` (the old
  value, then a statement close to it that changes nothing: someone else's move, a plan,
  a one-off): the old statement is returned and ranked above that statement;
* ``nightly_changes`` - the multi-session conversations of ``bench_nightly_changes.py``:
  the top hit (``k=3``) carries the current value (in its text or its slot) and not
  only the old one;
* ``sister_move`` - issue 33's scenario in both languages (I live in Beijing / I moved to
  Shanghai / my sister moved to Shenzhen; the same in English): the top hit of two
  questions carries Shanghai;
* ``others_change`` (``--others``) - multi-session chats of ``data/nightly_others_*.json``,
  written blind for issue 32 item 8: the user's value changes, then someone close to them
  (a sister, a roommate, 老婆) changes theirs: the top hit carries the user's current value.
  Each also counts whether the other person's value became the user's active value
  (``others_taken``).

``--llm`` runs the jobs with the LLM the environment configures (``MEMSTRATA_LLM_MODEL``,
``MEMSTRATA_LLM_BASE_URL``, as ``memstrata run`` reads them): a real model served on
127.0.0.1, ``../shared/tools/local-llm/`` (not for CI). The same cases then run offline in
the same process, so the two columns differ only by the model. ``--loopback`` runs them
with an LLM configured against the loopback OpenAI-format server, a model that reads
nothing and summarises a session by its first user turn (``_loopback``): the LLM path
around the model, measured on every set.

The conversation is observed turn by turn at its own times, then the clock stands one day
after its last turn, and the jobs run for the user one at a time - ``summarize``,
``conflicts``, ``expire`` - with every question asked before the first and after each.
Per job: how many questions were right before it and wrong after (*lost*, the target is
0) and the reverse (*gained*); the lost ones are listed with the top hits before and
after. Offline (no LLM configured), the way most deployments run the nightly jobs.

    python benchmarks/bench_never_worse.py [--per-file 12]   # -> results/never_worse.json

``--per-file`` takes that many cases of each data file (the first ones, in file order,
after ``--offset``; 0 = all 2,298, about half an hour on this machine). The first 12 of
each file were looked at while the jobs were changed; ``--offset 12 --out
never_worse_heldout`` measures the next 12, which were not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(Path(__file__).parent))

import bench_knowledge_update as ku
import bench_nightly_changes as nc
from _common import write_result
from tqdm import tqdm

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.llm import list_calls

DATA = Path(__file__).parent / "data"
JOBS = ("summarize", "conflicts", "expire")
START = datetime(2026, 1, 5, 18, tzinfo=UTC)


@dataclass
class Question:
    text: str
    #: right(hits) -> is what the user holds now first?
    right: Callable[[list[Any]], bool]
    k: int


@dataclass
class Case:
    set: str
    id: str
    lang: str
    #: (session id, time, role, text) in date order
    turns: list[tuple[str, datetime, str, str]]
    questions: list[Question] = field(default_factory=list)
    #: (attribute, someone else's value) that must not become the user's
    others: list[tuple[str, str]] = field(default_factory=list)


def _top(hits: list[Any]) -> list[str]:
    return [h.record.content[:100] for h in hits[:3]]


def _carries(hit: Any, value: str) -> bool:
    slot = hit.record.slot
    v = nc._norm(value)
    return v in nc._norm(hit.record.content) or (slot is not None and nc._norm(slot.value) == v)


def _newer_first(new: str, old: str) -> Callable[[list[Any]], bool]:
    def right(hits: list[Any]) -> bool:
        n, o = ku._rank_of(hits, new), ku._rank_of(hits, old)
        return n is not None and (o is None or n < o)
    return right


def _top_carries(new: str) -> Callable[[list[Any]], bool]:
    return lambda hits: bool(hits) and _carries(hits[0], new)


def ku_cases(per_file: int, offset: int = 0) -> list[Case]:
    out: list[Case] = []
    for path in sorted(DATA.glob("knowledge_update*.json")):
        data = json.loads(path.read_text("utf-8"))
        guard = "guard" in path.stem
        cases = data["cases"][offset:offset + per_file] if per_file else data["cases"]
        for c in cases:
            if guard:  # laid out as an update case, the distractor where the new value goes
                c = {**c, "new": c["distractor"]}
            turns = [(sid, at, "user", text)
                     for sid, at, text in ku._turns(c, data["filler"][c["lang"]])]
            right = _newer_first(c["old"], c["new"]) if guard else _newer_first(c["new"],
                                                                                c["old"])
            out.append(Case("no_change" if guard else "knowledge_update",
                            f"{path.stem}/{c['id']}", c["lang"], turns,
                            [Question(c["question"], right, 5)]))
    return out


def conversation_cases() -> list[Case]:
    out: list[Case] = []
    for conv in nc.CONVERSATIONS:
        turns = []
        for day, texts in conv["sessions"]:
            for i, text in enumerate(texts):
                role = "user" if i % 2 == 0 else "assistant"
                turns.append((f"{conv['id']}-d{day}", START + timedelta(days=day, minutes=i),
                              role, text.lstrip("*")))
        questions = [Question(p["query"], _top_carries(p["new"]), 3) for p in conv["probes"]]
        out.append(Case("nightly_changes", conv["id"], conv["lang"], turns, questions))
    return out


def sister_cases() -> list[Case]:
    said = {
        "zh": (["我住在北京，平时骑车上班。", "我搬到上海了，房子离地铁很近。",
                "我妹妹搬到深圳了，她很喜欢那边。"], ["我住在哪里？", "我现在住哪个城市？"],
               "上海"),
        "en": (["I live in Beijing and cycle to work.",
                "I moved to Shanghai, the flat is close to the metro.",
                "My sister moved to Shenzhen, she loves it there."],
               ["Where do I live?", "Which city do I live in now?"], "Shanghai"),
    }
    out = []
    for lang, (texts, asks, now) in said.items():
        turns = [(f"s{i}", START + timedelta(days=10 * i), "user", t)
                 for i, t in enumerate(texts)]
        out.append(Case("sister_move", f"sister-{lang}", lang, turns,
                        [Question(q, _top_carries(now), 3) for q in asks]))
    return out


def others_cases(files: list[str]) -> list[Case]:
    out: list[Case] = []
    for name in files:
        for conv in json.loads((DATA / f"{name}.json").read_text("utf-8")):
            turns = []
            for day, texts in conv["sessions"]:
                for i, text in enumerate(texts):
                    role = "user" if i % 2 == 0 else "assistant"
                    turns.append((f"{conv['id']}-d{day}",
                                  START + timedelta(days=day, minutes=i), role, text))
            questions = [Question(p["query"], _top_carries(p["new"]), 3)
                         for p in conv["probes"]]
            case = Case("others_change", f"{name}/{conv['id']}", conv["lang"], turns,
                        questions)
            case.others = [(p["attribute"], p["other"]) for p in conv["probes"]]
            out.append(case)
    return out


def _others_taken(mm: MemoryManager, user: str, case: Case) -> list[str]:
    """The other person's values the user holds as their own active value."""
    active = mm.memories(user, statuses="active")
    return [f"{attribute}={other}" for attribute, other in case.others
            for r in active if r.slot is not None and r.slot.attribute == attribute
            and nc._norm(other) in nc._norm(r.slot.value)]


def _loopback(request: dict[str, Any]) -> Any:
    """The loopback model: a model that reads nothing and summarises a session by its first
    user turn. What the LLM path does around the model (the summary line replacing the
    offline statements, the reader's calls, their checks) is measured, not a model's
    reading: with it, a question lost is lost by the path, not by a misreading."""
    from memstrata.testing import Reply

    if request.get("tools"):  # the LLM reader: no readings
        return Reply.text('{"items": []}')
    system = request["messages"][0]["content"]
    if "long-term memory" in system:
        first = next((line.split(": ", 1)[-1] for line in
                      request["messages"][-1]["content"].splitlines()
                      if line.startswith("user")), "")
        return Reply.text(json.dumps({"summary": f"The user said: {first[:120]}",
                                      "facts": []}, ensure_ascii=False))
    if "experience memory" in system:
        return Reply.text('{"lesson": "a task"}')
    return Reply.text("[]")  # conflicts: no verdict, the offline judge decides


def run_case(mm: MemoryManager, clock: ManualClock, jobs: Consolidator, case: Case
             ) -> list[dict[str, Any]]:
    user = case.id.replace("/", "-")
    for sid, at, role, text in case.turns:
        clock.set(at)
        mm.observe(user, sid, role, text, at=at)
    clock.set(case.turns[-1][1] + timedelta(days=1))
    rows = []
    states: list[list[tuple[bool, list[str]]]] = []

    def ask() -> None:
        got = []
        for q in case.questions:
            hits = mm.recall(user, q.text, k=q.k, record_use=False)
            got.append((q.right(hits), _top(hits)))
        states.append(got)

    ask()
    taken = [_others_taken(mm, user, case)]
    for job in JOBS:
        jobs.run(job, user_id=user)
        ask()
        taken.append(_others_taken(mm, user, case))
    for i, q in enumerate(case.questions):
        rows.append({"set": case.set, "id": case.id, "lang": case.lang, "question": q.text,
                     "right": [s[i][0] for s in states], "top": [s[i][1] for s in states],
                     "others_taken": taken if i == 0 and case.others else []})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(rows),
                           "right_before": sum(r["right"][0] for r in rows),
                           "right_after": sum(r["right"][-1] for r in rows)}
    for j, job in enumerate(JOBS):
        lost = [r for r in rows if r["right"][j] and not r["right"][j + 1]]
        gained = [r for r in rows if not r["right"][j] and r["right"][j + 1]]
        out[job] = {"lost": len(lost), "gained": len(gained)}
    taken = [r["others_taken"] for r in rows if r["others_taken"]]
    if taken:
        out["others_taken_before"] = sum(bool(t[0]) for t in taken)
        out["others_taken_after"] = sum(bool(t[-1]) for t in taken)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-file", type=int, default=12)
    parser.add_argument("--offset", type=int, default=0,
                        help="skip this many cases of each file (--offset 12: the next ones, "
                             "a split the jobs' changes were not tuned on)")
    parser.add_argument("--out", default="never_worse")
    parser.add_argument("--only", choices=("all", "scenarios", "others"), default="all",
                        help="scenarios: only the conversations, the sister scenario and "
                             "--others (no knowledge-update sets); others: only the sister "
                             "scenario and --others")
    parser.add_argument("--others", nargs="*", default=[], metavar="NAME",
                        help="data/NAME.json sets of others' changes (nightly_others_a ...)")
    parser.add_argument("--llm", action="store_true",
                        help="also run the jobs with the LLM the environment configures")
    parser.add_argument("--loopback", action="store_true",
                        help="also run the jobs with an LLM configured against the loopback "
                             "OpenAI-format server (see _loopback)")
    args = parser.parse_args(argv)
    cases = ([] if args.only != "all" else ku_cases(args.per_file, args.offset)) \
        + ([] if args.only == "others" else conversation_cases()) + sister_cases() \
        + others_cases(args.others)
    modes = {"offline": ConsolidationSettings.build(schedule={"timezone": "UTC"})}
    if args.llm:
        llm = ConsolidationSettings.from_env(schedule={"timezone": "UTC"},
                                             llm={"token_budget": 10_000_000,
                                                  "read_timeout": 900.0})
        if not llm.llm.configured:
            parser.error("--llm needs MEMSTRATA_LLM_MODEL and MEMSTRATA_LLM_BASE_URL")
        modes["llm"] = llm
    server = None
    if args.loopback:
        from memstrata.testing import OpenAICompatServer

        server = OpenAICompatServer(on_chat=_loopback).start()
        modes["loopback"] = ConsolidationSettings.build(
            schedule={"timezone": "UTC"},
            llm={"model": "loopback", "base_url": server.base_url, "api_key": "k",
                 "retries": 0, "token_budget": 100_000_000})
    result: dict[str, Any] = {"per_file": args.per_file, "offset": args.offset,
                              "jobs": list(JOBS), "others": args.others}
    for mode, settings in modes.items():
        rows: list[dict[str, Any]] = []
        clock = ManualClock(START)
        with tempfile.TemporaryDirectory() as tmp, MemoryManager.open(
                f"sqlite:///{tmp}/never_worse.db", clock=clock,
                index_dir=Path(tmp) / "index") as mm:
            jobs = Consolidator(mm, settings=settings)
            reader = mm.reader.version
            calls: dict[str, dict[str, float]] = {}
            for case in tqdm(cases, desc=f"never worse ({mode})", file=sys.stdout):
                rows += run_case(mm, clock, jobs, case)
                for c in list_calls(mm.db, case.id.replace("/", "-")):
                    tally = calls.setdefault(c.purpose, {"calls": 0, "prompt_tokens": 0,
                                                         "completion_tokens": 0, "seconds": 0})
                    tally["calls"] += 1
                    tally["prompt_tokens"] += c.prompt_tokens
                    tally["completion_tokens"] += c.completion_tokens
                    tally["seconds"] = round(tally["seconds"] + c.latency_ms / 1000, 1)
        sets = sorted({r["set"] for r in rows})
        out: dict[str, Any] = {
            "reader": reader,
            "llm": settings.llm.model,
            "llm_calls": calls,
            "all": summarise(rows),
            "sets": {s: summarise([r for r in rows if r["set"] == s]) for s in sets},
            "langs": {lang: summarise([r for r in rows if r["lang"] == lang])
                      for lang in ("en", "zh")},
            "lost": [{**r, "job": JOBS[j]} for r in rows for j in range(len(JOBS))
                     if r["right"][j] and not r["right"][j + 1]],
            "wrong_after": [r for r in rows if not r["right"][-1]],
        }
        if mode == "offline" and not (args.llm or args.loopback):
            result.update(out)  # the layout the README figures read
        else:
            result[mode] = out
        print(mode, json.dumps({k: out[k] for k in ("all", "sets")}, indent=1))
    if server is not None:
        server.stop()
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
