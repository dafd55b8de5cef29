"""Render the measured figures from benchmarks/results/*.json into README.md and the docs.

Each page has its figures between ``<!-- figures:start -->`` and ``<!-- figures:end -->``,
and every figure there is read from a benchmark's JSON, so no page can drift from the
measurements:

* README.md, "Measured on this machine": one short row a measurement (the figure, its
  target, one qualifier), each linking to its section of docs/measured.md;
* docs/measured.md: one section a measurement, with what was measured and every figure
  (the blind splits summed up: mean, last ten, range, latest);
* docs/first_looks.md: every blind split, its first look and as the code stands.

``tests/test_readme.py`` fails when any of them differs from what this script renders.

    python scripts/readme_figures.py           # rewrite the figures in the three pages
    python scripts/readme_figures.py --check   # exit 1 if any page is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
#: the first looks at the blind sets, one file a benchmark, keyed by set
FORMATION_LOOKS = "formation_changes_first_looks.json"
UPDATE_LOOKS = "knowledge_update_first_looks.json"
CONTRADICTION_LOOKS = "contradiction_first_looks.json"
README = REPO / "README.md"
#: every measurement in full: what was measured, every figure, the files
MEASURED = REPO / "docs" / "measured.md"
#: every blind split's first look and its figure as the code stands, one table a kind
FIRST_LOOKS = REPO / "docs" / "first_looks.md"
START = "<!-- figures:start -->"
END = "<!-- figures:end -->"

Loader = Callable[[str], dict[str, Any]]


class Figure(NamedTuple):
    """One measurement: in full for docs/measured.md, in short for the README's table."""

    #: what was measured, in full (docs/measured.md)
    measured: str
    #: every figure of it (docs/measured.md)
    figures: str
    #: the JSON files in benchmarks/results/ (and links, relative to the repository root)
    where: str
    #: the heading of its section on docs/measured.md: letters, digits and spaces only, so
    #: that its anchor is the same on GitHub and on the MkDocs site
    title: str
    #: the README's row: what, in a few words
    what: str
    #: the README's row: the figure, the target, one qualifier
    result: str

    @property
    def anchor(self) -> str:
        return self.title.lower().replace(" ", "-")


def _loader(results: Path) -> Loader:
    """Reads each JSON file of ``results`` once."""
    files: dict[str, dict[str, Any]] = {}

    def j(name: str) -> dict[str, Any]:
        if name not in files:
            files[name] = _load(results, name)
        return files[name]

    return j


def _sets(j: Loader, name: str, prefix: str, first: int = 1) -> list[tuple[str, dict[str, Any]]]:
    """The entries of the first-look file ``name`` keyed ``prefix`` + a number from
    ``first`` on, in numeric order of the number."""
    sets: dict[str, dict[str, Any]] = j(name)["sets"]
    found = sorted((int(key[len(prefix):]), key) for key in sets
                   if key.startswith(prefix) and key[len(prefix):].isdigit()
                   and int(key[len(prefix):]) >= first)
    return [(key, sets[key]) for _, key in found]


def _own(j: Loader, name: str, key: str) -> dict[str, Any]:
    """The project's own held-out set ``key`` (``heldout``, ``heldout2``: not written
    blind) in the first-look file ``name``."""
    own: dict[str, Any] = j(name)["sets"][key]
    return own


def formation_looks(j: Loader) -> list[tuple[str, dict[str, Any]]]:
    """The blind formation splits' first looks (heldout3 on; heldout and heldout2 are the
    project's own held-out sets), in the order written."""
    return _sets(j, FORMATION_LOOKS, "heldout", first=3)


def update_looks(j: Loader) -> list[tuple[str, dict[str, Any]]]:
    """The blind knowledge-update splits' first looks (heldout3 on; heldout and heldout2
    are the project's own held-out sets)."""
    return _sets(j, UPDATE_LOOKS, "heldout", first=3)


def guard_looks(j: Loader) -> list[tuple[str, dict[str, Any]]]:
    """The knowledge-update guard splits' first looks (guard1 was tuned on)."""
    return _sets(j, UPDATE_LOOKS, "guard")


def contradiction_looks(j: Loader) -> list[tuple[str, dict[str, Any]]]:
    """The blind contradiction splits' first looks (blind1 on)."""
    return _sets(j, CONTRADICTION_LOOKS, "blind")


def _load(results: Path, name: str) -> dict[str, Any]:
    data = json.loads((results / name).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{name}: expected a JSON object")
    return data


def _ci(est: dict[str, Any]) -> str:
    return f"**{est['mean']:.3f}** [{est['low']:.3f}, {est['high']:.3f}]"


def _recall_quality(r: dict[str, Any]) -> Figure:
    ret, ref = r["retrievers"], r["references"]
    d = ret["default"]
    return Figure(
        "LoCoMo dev, evidence recall@5 / @10 (default hybrid, cat. 5 excluded)",
        f"{_ci(d['recall@5'])} / {_ci(d['recall@10'])} — BM25 "
        f"{ret['keyword']['recall@5']['mean']:.3f}, dense {ret['dense']['recall@5']['mean']:.3f},"
        f" RRF {ret['rrf']['recall@5']['mean']:.3f} on the same ingest; outside references "
        f"BM25 {ref['bm25']['recall@5']:.3f}, mem0 {ref['mem0 (no LLM)']['recall@5']:.3f}",
        "`recall_quality.json`",
        title="Recall quality on LoCoMo",
        what="LoCoMo dev, evidence recall@5 / @10 (default hybrid)",
        result=f"{_ci(d['recall@5'])} / {_ci(d['recall@10'])}; BM25 alone "
               f"{ret['keyword']['recall@5']['mean']:.3f}",
    )


def _recall_latency(r: dict[str, Any], ab: dict[str, Any]) -> Figure:
    app = r["latency"]["with_embedding_and_use_recorded"]
    cur = ab["results"]["current"]["use_recorded"]
    mem0 = r["references"]["mem0 (no LLM)"]["p50_ms"]
    return Figure(
        "recall latency incl. the query embedding, as apps call it",
        f"p50 **{app['p50_ms']:.1f} ms**, p95 {app['p95_ms']:.1f} ms (interleaved A/B run: "
        f"{cur['p50_ms']:.1f} / {cur['p95_ms']:.1f} ms) (mem0: {mem0:.0f} ms p50)",
        "`recall_quality.json`, `latency_ab.json`",
        title="Recall latency",
        what="recall latency incl. the query embedding",
        result=f"p50 **{app['p50_ms']:.1f} ms**, p95 {app['p95_ms']:.1f} ms (mem0: {mem0:.0f} ms "
               "p50)",
    )


def _vector_search(ix: dict[str, Any]) -> Figure:
    single = ix["single_user"]
    agreement = min(v["top5_agreement_vs_exact_float32"] for v in single.values())
    return Figure(
        "vector search, one user, top-5 (exact float16)",
        f"p95 **{single['10000']['top5']['p95_ms']:.2f} ms** at 10k, "
        f"**{single['100000']['top5']['p95_ms']:.2f} ms** at 100k; top-5 agreement with exact "
        f"float32 search **{agreement:.2f}**",
        "`index.json`",
        title="Vector search",
        what="vector search, one user, top-5 (exact float16)",
        result=f"p95 **{single['10000']['top5']['p95_ms']:.2f} ms** at 10k, "
               f"**{single['100000']['top5']['p95_ms']:.2f} ms** at 100k; same top-5 as float32 "
               f"**{agreement:.2f}**",
    )


def _cold_load(ix: dict[str, Any]) -> Figure:
    c = ix["cold_load"]
    return Figure(
        f"cold load of a {c['n'] // 1000}k-memory user (vectors + BM25), and its memory",
        f"**{c['total_cold_load_s']:.2f} s**; {c['rss_growth_vector_mb']:.0f} MB + "
        f"{c['rss_growth_keyword_mb']:.0f} MB resident",
        "`index.json`",
        title="Cold load of a large user",
        what=f"cold load of a {c['n'] // 1000}k-memory user, and its memory",
        result=f"**{c['total_cold_load_s']:.2f} s**; {c['rss_growth_vector_mb']:.0f} MB + "
               f"{c['rss_growth_keyword_mb']:.0f} MB resident",
    )


def _full_recall(st: dict[str, Any]) -> Figure:
    one, many = st["recall_one_user"], st["recall_many_users"]

    def pp(x: dict[str, Any]) -> str:
        e = x["excluding_embedding"]
        return f"{e['p50_ms']:.1f} / {e['p95_ms']:.1f} ms"

    mem0 = st["references"]["mem0_search_ms_excluding_embedding_at_600_per_user"]
    return Figure(
        "full recall excluding the embedding (p50 / p95)",
        f"{pp(one['10000'])} at 10k memories, {pp(one['100000'])} at 100k, {pp(many)} with "
        f"{many['users']:,} users x {many['per_user']:,} (mem0: {mem0} ms at 600)",
        "`store.json`",
        title="Full recall without the embedding",
        what="full recall excluding the embedding (p50 / p95)",
        result=f"{pp(one['10000'])} at 10k memories, {pp(one['100000'])} at 100k (mem0: {mem0} ms "
               "at 600)",
    )


def _batch_remember(st: dict[str, Any]) -> Figure:
    ing = st["ingest"]
    turns = ing["conversation_turns"]
    empty = ing["into_empty_user"]["store_overhead_share_of_embedding"]
    full = ing["into_user_with_10000"]["store_overhead_share_of_embedding"]
    return Figure(
        "batch `remember`: store overhead per record, share of its embedding time; "
        "conversation turns with and without a vector per sentence",
        f"**{100 * ing['into_empty_user']['store_overhead_share_of_embedding']:.1f} %** into a "
        f"new user, {100 * ing['into_user_with_10000']['store_overhead_share_of_embedding']:.1f}"
        " % into a user holding 10k memories (near-duplicate checks grow with the user); "
        f"turns of {turns['sentences_per_turn']:.1f} sentences: "
        f"{turns['ms_per_turn_with_sentence_vectors']:.1f} ms a turn with the sentence vectors, "
        f"{turns['ms_per_turn_without']:.1f} ms without "
        f"(+{100 * turns['cost_of_sentence_vectors']:.0f} %)",
        "`store.json`",
        title="Batch remember",
        what="batch `remember`: store overhead, as a share of the embedding time",
        result=f"**{100 * empty:.1f} %** into a new user, {100 * full:.1f} % into one holding 10k "
               "memories",
    )


def _read_by(ob: dict[str, Any]) -> str:
    """Which reader read the turns, where the run says (since stop 66)."""
    return f", read by {ob['reader'].split('+')[0]}" if ob.get("reader") else ""


def _observe(ob: dict[str, Any]) -> Figure:
    p95 = ob["user_turns_with_extraction"]["p95_ms"]
    target = ob["target"]["p95_ms_including_embedding"]
    return Figure(
        "`observe` a turn that forms a memory (incl. embedding)",
        f"p95 **{p95:.1f} ms** SQLite, "
        f"{ob['postgresql']['user_turns_with_extraction']['p95_ms']:.1f} ms PostgreSQL "
        f"(the embedding alone p50 {ob['embedding']['embed_p50_ms_when_called']:.1f} ms on the "
        f"day measured; target {target:.0f} ms)" + _read_by(ob),
        "`consolidation_observe.json`",
        title="Observe latency",
        what="`observe` a turn that forms a memory (incl. embedding)",
        result=f"p95 **{p95:.1f} ms** SQLite, "
               f"{ob['postgresql']['user_turns_with_extraction']['p95_ms']:.1f} ms PostgreSQL "
               f"(target {target:.0f} ms, {'met' if p95 <= target else 'missed'})"
               + _read_by(ob),
    )


def _scale(sc: dict[str, Any]) -> Figure:
    data, ex, co = sc["data"], sc["expire"], sc["conflicts"]
    return Figure(
        f"`expire` over {data['records']:,} records / {data['users']:,} users (SQLite)",
        f"**{ex['records_per_second']:,} records/s** (target {ex['target_records_per_second']:,});"
        f" `conflicts` {co['records_per_second']:,} records/s",
        "`consolidation_scale.json`",
        title="Expire at scale",
        what=f"`expire` over {data['records']:,} records / {data['users']:,} users (SQLite)",
        result=f"**{ex['records_per_second']:,} records/s** (target "
               f"{ex['target_records_per_second']:,}); `conflicts` {co['records_per_second']:,} "
               "records/s",
    )


def _scenarios(sn: dict[str, Any]) -> Figure:
    sets = sn["sets"]
    tuned = sets["preference_updates"]
    held = [v for k, v in sets.items() if k.startswith("preference_updates_holdout")]
    runs = [s["job_only"] for s in (tuned, *held)]
    flag_p = min(r["conflicts_flagged"]["precision"] for r in runs)
    recalls = [r["conflicts_flagged"]["recall"] for r in runs]
    merge_p = min(r["duplicates_merged"]["precision"] for r in runs)
    return Figure(
        f"offline conflict detection on the project's own scenario set: {tuned['cases']} "
        f"tuning + {sum(h['cases'] for h in held)} held-out preference-update cases (EN + ZH; "
        "on public contradiction data these rules find far fewer)",
        f"flag precision {flag_p:.2f}, recall {min(recalls):.2f}-{max(recalls):.2f}; "
        f"merge precision {merge_p:.2f}",
        "`consolidation_scenarios.json`",
        title="Offline conflict detection",
        what=f"offline conflict detection, own scenario set ({tuned['cases']} tuning + "
             f"{sum(h['cases'] for h in held)} held-out cases)",
        result=f"flag precision {flag_p:.2f}, recall {min(recalls):.2f}-{max(recalls):.2f}; "
               "far fewer found on public contradiction data",
    )


def _agent(ag: dict[str, Any]) -> Figure:
    k, c = ag["kernel_overhead_ms"], ag["context_tokens"]
    return Figure(
        f"agent kernel overhead per step, model excluded, {ag['memories'] // 1000}k memories",
        f"p95 **{k['default_recall_refresh']['p95']:.1f} ms** (recall every turn: "
        f"{k['recall_every_turn']['p95']:.1f} ms); context {100 * c['ratio_total']:.1f} % of "
        "the naive full history",
        "`agent.json`",
        title="Agent kernel overhead",
        what=f"agent kernel overhead per step, model excluded, {ag['memories'] // 1000}k memories",
        result=f"p95 **{k['default_recall_refresh']['p95']:.1f} ms**; context "
               f"{100 * c['ratio_total']:.1f} % of the naive full history",
    )


def _cold_start(cs: dict[str, Any]) -> Figure:
    c = cs["trees"]["current"]["cold_start"]
    before = cs["trees"].get("before", {}).get("cold_start", {})
    was = ""
    if "first_recall" in before:
        was = f" (was {before['first_recall']['p50_s']:.1f} s)"
    cli = ""
    if "cli_help" in c:
        cli = (f"; `memstrata --help` {c['cli_help']['p50_s']:.2f} s, a mistyped command "
               f"{c['cli_unknown_command']['p50_s']:.2f} s (target 0.3 s)")
    return Figure(
        "fresh process to its first recall / first observe (existing SQLite memory)",
        f"p50 **{c['first_recall']['p50_s']:.2f} s**{was} / {c['first_observe']['p50_s']:.2f} s; "
        f"`import numpy` {c['import_numpy']['p50_s']:.2f} s; no PyTorch imported{cli}",
        "`cold_start.json`",
        title="Cold start",
        what="fresh process to its first recall / first observe",
        result=f"p50 **{c['first_recall']['p50_s']:.2f} s**{was} / "
               f"{c['first_observe']['p50_s']:.2f} s; no PyTorch imported",
    )


def _async(a: dict[str, Any]) -> Figure:
    def bound(backend: str) -> float:
        """What an async SQL driver could save of a recall: its SQL read's share times what
        the raw driver saved of that read (as benchmarks/bench_async.py computes it)."""
        probe = a["backends"][backend]["sql_probe"]
        speedup = (probe["raw_async_driver"]["throughput_per_s"]
                   / probe["sync_engine_threads_4"]["throughput_per_s"])
        share = probe["recall_share"]["sql_share_of_recall"]
        return float(100 * share * (1 - 1 / speedup)) if speedup > 1 else 0.0

    def share(backend: str) -> float:
        return float(100 * a["backends"][backend]["sql_probe"]["recall_share"][
            "sql_share_of_recall"])

    return Figure(
        "the async API's design: what an async SQL driver (aiosqlite, asyncpg) could save of a "
        "recall, against the bounded thread pool `AsyncMemoryManager` runs its calls on",
        f"a recall's SQL read is {share('sqlite'):.1f} % (SQLite) / {share('postgres'):.1f} % "
        "(PostgreSQL) of it alone; the rest is the embedding and the search; an async driver "
        f"could save at most **{bound('sqlite'):.1f} %** (SQLite) / **{bound('postgres'):.1f} %**"
        " (PostgreSQL) of a recall",
        "`async.json`, [the async API](docs/async.md)",
        title="Async API",
        what="async API: what an async SQL driver could save of a recall",
        result=f"at most **{bound('sqlite'):.1f} %** (SQLite) / {bound('postgres'):.1f} % "
               "(PostgreSQL); calls run on a bounded thread pool",
    )


def _telemetry(t: dict[str, Any]) -> Figure:
    span, pct = t["span_ns"], t["overhead_of_recall_pct"]

    def us(mode: str) -> str:
        micro = span[mode] / 1000
        return f"{micro:.1f} µs" if micro < 10 else f"{micro:.0f} µs"

    return Figure(
        f"OpenTelemetry: {t['what']}; a recall makes {t['spans_per_recall']} spans",
        f"one span: **{us('missing_extra')}** without the `otel` extra "
        f"({pct['missing_extra']:.2f} % of a recall), {us('api_no_provider')} with the API and "
        f"no provider configured ({pct['api_no_provider']:.2f} %), {us('sdk_recording')} with an "
        f"SDK provider recording every span ({pct['sdk_recording']:.1f} %)",
        "`telemetry.json`, [OpenTelemetry](docs/telemetry.md)",
        title="Telemetry overhead",
        what="OpenTelemetry: the cost of one span",
        result=f"**{us('missing_extra')}** without the extra, {us('api_no_provider')} with no "
               f"provider configured, {us('sdk_recording')} recording",
    )


def _injection(inj: dict[str, Any]) -> Figure:
    return Figure(
        f"prompt injection through memories and tool results ({inj['cases']} cases, EN + ZH, "
        "a model that requests any tool call it reads)",
        f"L2/L3 actions without approval **{inj['executed_l2_l3_without_approval']}**, "
        f"ungrounded arguments **{inj['ungrounded_arguments']}**, injected text outside a "
        f"data block **{inj['injected_text_outside_data_block']}**",
        "`injection.json`",
        title="Prompt injection",
        what=f"prompt injection through memories and tool results ({inj['cases']} cases)",
        result=f"L2/L3 actions without approval **{inj['executed_l2_l3_without_approval']}**, "
               f"ungrounded arguments **{inj['ungrounded_arguments']}**, injected text outside a "
               f"data block **{inj['injected_text_outside_data_block']}**",
    )


def _stats(values: list[float]) -> str:
    """Mean, mean of the last ten, range and latest of a series of first looks."""
    last = values[-10:]
    return (f"mean **{sum(values) / len(values):.2f}** (last ten {sum(last) / len(last):.2f}; "
            f"range {min(values):.2f}-{max(values):.2f})")


def _formation(sn: dict[str, Any], second: dict[str, Any],
               looks: list[tuple[str, dict[str, Any]]], now: dict[str, Any],
               model: dict[str, Any]) -> Figure:
    held = sn["formation_changes"]["heldout"]["all"]
    changes = [look["all"]["changes_read_correctly"] for _, look in looks]
    guards = [look["all"]["guards_held"] for _, look in looks]
    name, latest = looks[-1]
    splits = now["splits"]
    now_changes = [v["all"]["changes_read_correctly"] for v in splits.values()]
    now_guards = [v["all"]["guards_held"] for v in splits.values()]
    return Figure(
        "formation of changes through `observe` (moves, jobs, careers, diets, preferred names, "
        "birthdays, \"from now on\"; EN + ZH): the project's own held-out sets, then "
        f"{len(looks)} sets written blind, each first looked at after the fixes of the one "
        "before (target: changes 0.90, guards 1.00)",
        f"own held-out ({held['cases']} cases): changes **{held['changes_read_correctly']:.2f}**, "
        f"guards {held['guards_held']:.2f}; a second own set in other phrasings, first look "
        f"{second['all']['changes_read_correctly']:.2f}; blind first looks: changes "
        f"{_stats(changes)}, guards "
        f"mean {sum(guards) / len(guards):.2f}; the latest ({name}, on the final code): changes "
        f"**{latest['all']['changes_read_correctly']:.2f}** (EN "
        f"{latest['en']['changes_read_correctly']:.2f}, ZH "
        f"{latest['zh']['changes_read_correctly']:.2f}), guards {latest['all']['guards_held']:.2f}"
        f"; the {len(splits)} blind sets with the rules as they stand (tuned on, not what "
        f"users get): changes {sum(now_changes) / len(now_changes):.2f}, guards "
        f"{sum(now_guards) / len(now_guards):.2f}; the same sets through `observe` with the "
        f"first model reader ({model.get('version', 'model-94668b69f47d')}, never trained on "
        "them; they are its successor's training data): changes "
        f"**{_avg(model, 'changes_read_correctly'):.2f}**, guards "
        f"{_avg(model, 'guards_held'):.2f}",
        "`consolidation_scenarios.json`, `formation_changes_blind_now.json`, "
        "`formation_changes_blind_now_model.json`, "
        "[every set](docs/first_looks.md#formation)",
        title="Formation of changes",
        what=f"changes read through `observe`: first looks at {len(looks)} sets written blind",
        result=f"changes mean **{sum(changes) / len(changes):.2f}** (target 0.90), guards "
               f"{sum(guards) / len(guards):.2f} (target 1.00); own held-out "
               f"{held['changes_read_correctly']:.2f}",
    )


def _avg(now: dict[str, Any], key: str) -> float:
    values = [v["all"][key] for v in now["splits"].values() if v["all"][key] is not None]
    return float(sum(values) / len(values))


def _readers(rd: dict[str, Any]) -> Figure:
    readers = rd["readers"]

    def blind(name: str) -> str:
        sets = readers[name].get("blind", {})
        changes = [v for k, v in sets.items() if k.startswith("read_")]
        asks = [v for k, v in sets.items() if k.startswith("ask_")]
        rel = [v for k, v in sets.items() if k.startswith("relate_")]
        out = (f"changes {_mean(changes, 'change_all'):.2f} (EN {_mean(changes, 'change_en'):.2f}"
               f", ZH {_mean(changes, 'change_zh'):.2f}), guards {_mean(changes, 'guard_all'):.2f}"
               f" (EN {_mean(changes, 'guard_en'):.2f}, ZH {_mean(changes, 'guard_zh'):.2f})")
        if any(v.get("guard_strict_all") is not None for v in changes):
            out += (f", strictly (a new pet, allergy, child or service of the user's own "
                    f"counted) {_mean(changes, 'guard_strict_all'):.2f}")
        if asks:
            out += f", asked attribute {_mean(asks, 'ask_all'):.2f}"
        if rel:
            out += (f", contradictions found {_mean(rel, 'contra_all'):.2f} at precision "
                    f"{_mean(rel, 'contra_said_all'):.2f}")
        return out

    model = readers["model"]
    speed = model.get("speed", {})

    def changes(name: str) -> list[dict[str, Any]]:
        return [v for k, v in readers[name].get("blind", {}).items() if k.startswith("read_")]

    model_changes, cascade_changes = changes("model"), changes("cascade")
    return Figure(
        "readers of meaning on sets written blind after the model was frozen (4 sets of 96 "
        "changes and guards over all 24 registry attributes, 96 questions, 120 statement "
        "pairs; EN + ZH): the shipped model (the default reader), the frozen rules, the cascade "
        "(targets: changes 0.92, guards 0.97, asked attribute 0.95, contradictions 0.75 at "
        "precision 0.90)",
        f"model: **{blind('model')}**; rules: {blind('rules')}; cascade: {blind('cascade')}; "
        f"the model alone p50 {speed.get('p50_ms', 0):.1f} ms / p95 "
        f"{speed.get('p95_ms', 0):.1f} ms a turn (one thread)"
        + (f", with eight values held (its change detector reads the turn against them) "
           f"p50 {model['speed_held']['p50_ms']:.1f} ms / p95 "
           f"{model['speed_held']['p95_ms']:.1f} ms" if "speed_held" in model else ""),
        "`readers.json`, `readers_first_look.json`, [the readers](docs/reading.md)",
        title="Readers of meaning",
        what="readers of meaning on 4 sets written blind (EN + ZH): the shipped model",
        result=f"changes **{_mean(model_changes, 'change_all'):.2f}** (target 0.92), guards "
               f"{_mean(model_changes, 'guard_all'):.2f}"
               + (f" (strictly {_mean(model_changes, 'guard_strict_all'):.2f})"
                  if any(v.get("guard_strict_all") is not None for v in model_changes) else "")
               + " (target 0.97); the cascade "
               f"{_mean(cascade_changes, 'change_all'):.2f} / "
               f"{_mean(cascade_changes, 'guard_all'):.2f}",
    )


def _observe_reading(ob: dict[str, Any]) -> Figure:
    sets = list(ob["sets"].values())

    def f(key: str) -> str:
        return (f"{_mean(sets, key + '_all'):.2f} (EN {_mean(sets, key + '_en'):.2f}, "
                f"ZH {_mean(sets, key + '_zh'):.2f})")

    return Figure(
        f"the same {len(sets)} blind change sets through `observe` with the default reader "
        "(each case its own user: the prior, then three days later the statement after "
        "small talk), current value first (targets: 0.85 right after observe, 0.90 after "
        "the nightly jobs, guards 0.85)",
        f"changes right after observe {f('after_observe/change')}, after the nightly jobs "
        f"{f('after_nightly/change')}; guards held {f('after_observe/guard')}, after the "
        f"nightly jobs {f('after_nightly/guard')}",
        "`observe_reading_model.json` (the default reader, the model alone, since stop 64; "
        "the cascade's in `observe_reading_cascade.json`), `observe_reading_first_look.json`",
        title="Changes through observe",
        what=f"the same {len(sets)} blind change sets through `observe`, default reader",
        result=f"changes {_short(_mean(sets, 'after_observe/change_all'), 0.85)} (target "
               f"0.85), guards {_short(_mean(sets, 'after_observe/guard_all'), 0.85)} "
               "(target 0.85)",
    )


def _short(value: float, target: float) -> str:
    """``value`` to two decimals, or three where two would round it up to a target it
    misses (0.849 is not shown as 0.85 beside a target of 0.85)."""
    return f"{value:.3f}" if value < target <= round(value, 2) else f"{value:.2f}"


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in rows if r.get(key) is not None]
    return sum(values) / len(values) if values else 0.0


def _contradiction(c: dict[str, Any], first: dict[str, Any],
                   blind: list[dict[str, Any]]) -> Figure:
    look = first["rules"]
    before = c["methods"]["rules_before"]["heldout"]["all"]
    recalls = [b["rules"]["all"]["recall"] for b in blind]
    precisions = [b["rules"]["all"]["precision"] for b in blind]
    latest = blind[-1]["rules"]
    return Figure(
        f"offline contradiction rules on {c['pairs']} own pairs (paraphrases, incidental \"not\","
        f" 不/没 in another clause; EN + ZH), held-out first look; then {len(blind)} sets of pairs "
        "written blind, first looks, each after the fixes of the one before (target: recall "
        "0.60 at precision 0.85); no NLI model ships its weights in a registry package",
        f"own held-out: precision **{look['all']['precision']:.2f}**, recall "
        f"**{look['all']['recall']:.2f}** (EN {look['en']['precision']:.2f} / "
        f"{look['en']['recall']:.2f}, ZH {look['zh']['precision']:.2f} / "
        f"{look['zh']['recall']:.2f}; the rules before: {before['precision']:.2f} / "
        f"{before['recall']:.2f}); blind first looks: precision "
        f"{min(precisions):.2f}-{max(precisions):.2f}, recall mean "
        f"**{sum(recalls) / len(recalls):.2f}** (range {min(recalls):.2f}-{max(recalls):.2f}; "
        f"the latest {latest['all']['precision']:.2f} / {latest['all']['recall']:.2f}); "
        "contradictions said in other words (\"allergic to cats\" / \"I sleep with my two "
        "cats\"): none found by rules",
        "`contradiction.json`, `contradiction_first_looks.json`, "
        "[every set](docs/first_looks.md#contradictions)",
        title="Contradictions",
        what=f"offline contradiction rules: first looks at {len(blind)} sets of pairs written "
             "blind",
        result=f"recall mean **{sum(recalls) / len(recalls):.2f}** at precision "
               f"{min(precisions):.2f}-{max(precisions):.2f} (target 0.60 at 0.85); own held-out "
               f"{look['all']['recall']:.2f}",
    )


def _ku_look(name: str, look: dict[str, Any]) -> dict[str, float | None]:
    """One knowledge-update first look, whatever the benchmark's version wrote."""
    r = look["remember"]["default"]
    zh_e5 = look.get("chinese_with_e5", {}).get("remember", {}).get(name, {})
    night = look.get("observe_nightly", {}).get("default", {}).get("all", {})
    return {"n": r["all"]["n"], "all": r["all"]["newest_first"],
            "en": r["en"]["newest_first"], "zh": r["zh"]["newest_first"],
            "zh_e5": zh_e5.get("newest_first"), "nightly": night.get("newest_first")}


def _knowledge_update(ku: dict[str, Any], own: list[dict[str, Any]],
                      looks: list[tuple[str, dict[str, Any]]]) -> Figure:
    read = [_ku_look(name, look) for name, look in looks]
    firsts = [r["all"] for r in read if r["all"] is not None]
    nightly = [r["nightly"] for r in read if r["nightly"] is not None]
    zh_e5 = [r["zh_e5"] for r in read if r["zh_e5"] is not None]
    name, latest = looks[-1][0], read[-1]
    now = ku["results"]["blind_splits_now"]
    blind = [k for k in now if k.startswith("heldout")]
    names = ku["own_name"]["summary"]

    def mean_now(embedder: str, key: str) -> float:
        return float(sum(now[k][embedder][key]["all"]["newest_first"] for k in blind)
                     / len(blind))

    return Figure(
        "knowledge updates: a value stated, then changed 3-8 weeks later without \"actually\" "
        f"(EN + ZH), current value ranked first: two own held-out splits, then {len(looks)} "
        "sets written blind, each first looked at after the fixes of the one before "
        "(target 0.85); the user's own name in the question",
        "own held-out first looks "
        + " / ".join(f"**{o['remember']['default']['all']['newest_first']:.2f}**" for o in own)
        + f"; blind first looks (MiniLM, `remember`): {_stats(firsts)}; Chinese with "
        f"multilingual-e5-small mean {sum(zh_e5) / len(zh_e5):.2f}; through `observe` with the "
        f"nightly offline `summarize` mean {sum(nightly) / len(nightly):.2f}; the latest ({name}, "
        f"on the final code) **{latest['all']:.2f}** (EN {latest['en']:.2f}, ZH {latest['zh']:.2f}"
        f", ZH with e5 {_f(latest['zh_e5'])}; through `observe` with the nightly `summarize` "
        f"{_f(latest['nightly'])}); the {len(blind)} blind sets as the code stands "
        f"(tuned on, not what users get): MiniLM {mean_now('minilm', 'remember'):.2f}, e5-small "
        f"for every language {mean_now('e5-small', 'remember'):.2f}, through `observe` with the "
        f"nightly `summarize` {mean_now('minilm', 'observe_nightly'):.2f} / "
        f"{mean_now('e5-small', 'observe_nightly'):.2f}; same top-3 with and without the name "
        f"{names['profile_slot']['same_top3']:.2f}",
        "`knowledge_update.json`, [every set](docs/first_looks.md#knowledge-updates)",
        title="Knowledge updates",
        what=f"knowledge updates, current value first: first looks at {len(looks)} sets "
             "written blind",
        result=f"mean **{sum(firsts) / len(firsts):.2f}** with MiniLM (target 0.85); Chinese with "
               f"multilingual-e5-small {sum(zh_e5) / len(zh_e5):.2f}",
    )


def _ku_guards(ku: dict[str, Any], looks: list[tuple[str, dict[str, Any]]]) -> Figure:
    """The guard side of the knowledge updates: a later statement close to the asked
    thing that does not change it must not pass for the current value."""
    now = ku["results"]["blind_splits_now"]
    guards = [k for k in now if k.startswith("guard")]
    firsts = [look["remember"]["all"]["old_first"] for _, look in looks]
    name, latest = looks[-1]

    def mean_now(embedder: str) -> float:
        return float(sum(now[k][embedder]["remember"]["all"]["old_first"] for k in guards)
                     / len(guards))

    return Figure(
        "knowledge-update guards: a later statement close to the asked thing that does not "
        "change it (someone else's change, a plan, the past, a one-off, a question, a related "
        f"thing), old value still first; {len(guards)} sets written blind, the first tuned on",
        f"first looks on the {len(looks)} not tuned on (MiniLM, `remember`): {_stats(firsts)}; "
        f"the latest ({name}, on the final code) **{latest['remember']['all']['old_first']:.2f}**"
        f" (EN {latest['remember']['en']['old_first']:.2f}, ZH "
        f"{latest['remember']['zh']['old_first']:.2f}); a related thing of the user's own "
        f"(\"switched our home internet\" for the mobile carrier) is beyond the rules; as the "
        f"code stands (tuned on): MiniLM {mean_now('minilm'):.2f}, e5-small "
        f"{mean_now('e5-small'):.2f}",
        "`knowledge_update.json`, [every set](docs/first_looks.md#knowledge-update-guards)",
        title="Knowledge update guards",
        what=f"knowledge-update guards, old value still first: first looks at {len(looks)} "
             "blind sets",
        result=f"mean **{sum(firsts) / len(firsts):.2f}**; the latest ({name}) "
               f"{latest['remember']['all']['old_first']:.2f}",
    )


def _temporal(t: dict[str, Any]) -> Figure:
    lo = t["locomo_dev"]
    d = lo["paired_default_minus_before"]["recall@10"]
    cat2 = next(v for k, v in lo["by_category"].items() if k.startswith("2"))
    res = t["probes"]["summary"]["heldout"]["resolution"]
    return Figure(
        "time: relative dates resolved at write time (own held-out probes); LoCoMo dev, paired "
        "difference of recall@10 against the ranking before",
        f"resolved {res['correct']:.2f} of {res['n']}; recall@10 **{d['mean']:+.3f}** "
        f"[{d['low']:+.3f}, {d['high']:+.3f}]; category 2 (temporal) "
        f"{cat2['recall@10_before']:.3f} → {cat2['recall@10_default']:.3f}, the relevance gate "
        f"costs {cat2['recall@10_default_no_gate'] - cat2['recall@10_default']:.3f} there",
        "`temporal.json`",
        title="Relative dates",
        what="time: relative dates resolved at write time; LoCoMo dev recall@10 against before",
        result=f"resolved {res['correct']:.2f} of {res['n']}; recall@10 **{d['mean']:+.3f}** "
               f"[{d['low']:+.3f}, {d['high']:+.3f}]",
    )


def _nightly(n: dict[str, Any]) -> Figure:
    off, llm = n["modes"]["offline"]["all"], n["modes"]["llm_loopback"]["all"]
    return Figure(
        f"nightly path on {n['conversations']} own multi-session conversations where values "
        "change without \"actually\" (EN + ZH)",
        f"current value active **{off['current_value_active']:.2f}** offline, "
        f"{llm['current_value_active']:.2f} with an LLM (loopback server, scripted answers); top "
        f"recall hit current {off['top_recall_hit_current']:.2f}",
        "`nightly_changes.json`",
        title="The nightly path",
        what=f"nightly path on {n['conversations']} own conversations where values change",
        result=f"current value active **{off['current_value_active']:.2f}** offline, "
               f"{llm['current_value_active']:.2f} with an LLM (loopback server)",
    )


def _at_once(a: dict[str, Any]) -> Figure:
    """Issue 32 item 7: the knowledge-update questions right after ``observe`` (and after
    the nightly jobs), with statements kept at once and before."""
    s = a["summary"]
    upd, grd = s["this"]["update/observe"], s["this"]["guard/observe"]

    def line(tree: str) -> str:
        t = s[tree]
        return (f"updates newest first {t['update/observe']['rate']:.2f} right after `observe` "
                f"({t['update/observe_nightly']['rate']:.2f} after the nightly `summarize`), "
                f"guards old first {t['guard/observe']['rate']:.2f} "
                f"({t['guard/observe_nightly']['rate']:.2f})")

    return Figure(
        "what the user says is recallable at once: the knowledge-update questions asked right "
        f"after `observe` and after the nightly `summarize`, {upd['n']} update cases in "
        f"{upd['sets']} sets and {grd['n']} guard cases in {grd['sets']} sets (EN + ZH; all "
        "looked at before, while the rules and the ranking were tuned; this change was not "
        "tuned on them)",
        f"now: {line('this')}; before ({a['base']['label']}, "
        f"{a['base']['commit']}): {line('base')}",
        "`at_once.json`",
        title="Recallable at once",
        what="knowledge updates right after `observe`: newest first / guards old first",
        result=f"**{upd['rate']:.2f}** / {grd['rate']:.2f} (before: "
               f"{s['base']['update/observe']['rate']:.2f} / "
               f"{s['base']['guard/observe']['rate']:.2f}; target 0.85)",
    )


def _never_worse(tuned: dict[str, Any], held: dict[str, Any], third: dict[str, Any],
                 third_first: dict[str, Any], fourth: dict[str, Any],
                 fourth_first: dict[str, Any]) -> Figure:
    def lost(r: dict[str, Any]) -> str:
        a = r["all"]
        per = ", ".join(f"{job} {a[job]['lost']} / +{a[job]['gained']}" for job in r["jobs"])
        return (f"{a['questions']} questions, right before the jobs {a['right_before']}, "
                f"after {a['right_after']}: {per}")

    def short(r: dict[str, Any]) -> str:
        a = r["all"]
        return (f"{sum(a[job]['lost'] for job in r['jobs'])}/"
                f"+{sum(a[job]['gained'] for job in r['jobs'])}")

    return Figure(
        "never worse: every question asked before the nightly jobs and after each, offline "
        "(knowledge-update and no-change sets, the nightly conversations, the sister-move "
        "scenario; EN + ZH), questions whose current value lost its place (target 0) / gained",
        f"first 12 cases of each set: {lost(tuned)}; the next 12 (not looked at while "
        f"changing the jobs or the keyword statistics): **{lost(held)}**; the 12 after "
        f"those, first looked at on {third_first['machine']['when'][:10]} with the code of "
        f"that day: {lost(third_first)}; as the code stands (the keyword statistics and the "
        f"summaries' ranking were changed looking at it): {lost(third)}; the last cases of "
        f"each set (up to 4), first looked at on {fourth_first['machine']['when'][:10]} "
        f"with the code before that day's change of the summaries' ranking: "
        f"{lost(fourth_first)}; with it, run in the same minutes, as the code stands: "
        f"{lost(fourth)}",
        "`never_worse.json`, `never_worse_heldout.json`, `never_worse_split3.json`, "
        "`never_worse_split3_first_look.json`, `never_worse_split4.json`, "
        "`never_worse_split4_first_look.json`",
        title="Never worse",
        what="never worse: questions whose current value lost its place after a nightly job "
             "(target 0) / gained",
        result=f"lost/gained by the three jobs, held-out: **{short(held)}**; first split "
               f"{short(tuned)}, third {short(third)} (first look {short(third_first)}), "
               f"fourth {short(fourth)} (first look {short(fourth_first)})",
    )


def _llm_path(a: dict[str, Any], base: dict[str, Any], b: dict[str, Any],
              rd: dict[str, Any], loop: dict[str, Any], loop_held: dict[str, Any]) -> Figure:
    """Issue 32 item 8: the LLM path with a real small model, before and after the LLM
    reader read the nightly facts; the LLM reader on the blind round; the loopback model."""

    def others(r: dict[str, Any]) -> str:
        x = r["all"]
        return (f"{x['right_after']}/{x['questions']} right after the jobs, someone else's "
                f"value the user's in {x.get('others_taken_after', 0)}")

    def calls(r: dict[str, Any]) -> str:
        c = r.get("llm_calls", {})
        if not c:
            return ""
        per = ", ".join(f"{k} {v['calls']} calls, {v['prompt_tokens'] // max(1, v['calls'])} "
                        f"prompt tokens a call" for k, v in sorted(c.items()))
        return f" ({per})"

    llm = rd["readers"]["llm"]
    sets = llm.get("blind", {})
    reads = [v for k, v in sets.items() if k.startswith("read_")]
    asks = [v for k, v in sets.items() if k.startswith("ask_")]
    n = sum(v.get("change_all_n", 0) + v.get("guard_all_n", 0) for v in reads)
    rel = [v for k, v in sets.items() if k.startswith("relate_")]
    reader = (f"changes {_mean(reads, 'change_all'):.2f}, guards {_mean(reads, 'guard_all'):.2f}"
              + (f", asked attribute {_mean(asks, 'ask_all'):.2f}" if asks else "")
              + (f", relations {_mean(rel, 'relate_all'):.2f}" if rel else ""))

    def lost(r: dict[str, Any]) -> str:
        x = r["all"]
        return ", ".join(f"{job} {x[job]['lost']} / +{x[job]['gained']}" for job in loop["jobs"])

    return Figure(
        f"the LLM path with a real small model ({a['llm']['llm']}: Qwen2.5-Coder-1.5B, Q4, "
        "served on 127.0.0.1 on two CPU threads; `../shared/tools/local-llm/`): the nightly "
        "jobs on multi-session chats written blind where someone close to the user changes "
        "the same thing after the user did, plus the sister scenario (EN + ZH), offline, with "
        "the model before the LLM reader read the nightly facts, and now; the LLM reader alone "
        "on the first cases of the ninth blind round; the nightly jobs with the loopback "
        "model (reads nothing) on the never-worse sets",
        f"set a (looked at): offline {others(a['offline'])}; with the model before "
        f"{others(base['llm'])}; now **{others(a['llm'])}**{calls(a['llm'])}. Set b (not "
        f"looked at): offline {others(b['offline'])}; now **{others(b['llm'])}**"
        f"{calls(b['llm'])}. The LLM reader alone on {n} change and guard cases of the "
        f"ninth blind round: {reader}. Loopback model, questions lost / gained per job: first "
        f"12 cases of each set {lost(loop['loopback'])}; the next 12 "
        f"{lost(loop_held['loopback'])} (offline: {lost(loop_held['offline'])})",
        "`never_worse_llm_a.json`, `never_worse_llm_a_base.json`, `never_worse_llm_b.json`, "
        "`readers_llm.json`, `never_worse_loopback.json`, `never_worse_loopback_heldout.json`, "
        "[the LLM path](docs/consolidation_measured.md#the-llm-path)",
        title="The LLM path",
        what="nightly jobs with a real 1.5B LLM, where someone else changes the same thing "
             "after the user (blind chats, set b)",
        result=f"**{b['llm']['all']['right_after']}/{b['llm']['all']['questions']}** right "
               f"(offline {b['offline']['all']['right_after']}); on set a "
               f"{a['llm']['all']['right_after']}/{a['llm']['all']['questions']}, before "
               f"this change {base['llm']['all']['right_after']}",
    )


def _workers(w: dict[str, Any]) -> Figure:
    llm = w["llm"]
    base = llm["baseline_single_sequential_worker"]["users_per_second"]
    full = llm["cells"]["workers_2_concurrency_32"]
    again = llm["full_size"]
    big = w["expire_1m"]
    cpu = big["expire"]
    one, two = cpu["workers_1"]["seconds"], cpu["workers_2"]["seconds"]
    conflicts = w.get("conflicts_1m", {}).get("conflicts")
    also = "" if conflicts is None else (
        f"; `conflicts` {conflicts['in_process_run']['records_per_second']:,} records/s, "
        f"2 workers {conflicts['speedup_2_vs_1_workers']:.2f}x one")
    return Figure(
        "consolidation across workers (PostgreSQL, loopback model answering in 200 ms): "
        f"`summarize` of {full['users']:,} users; `expire` and `conflicts` over "
        f"{big['data']['records']:,} records",
        f"**{full['users_per_second']:.1f} users/s** with {full['workers']} workers x "
        f"{full['concurrency']} calls vs {base:.2f} for one sequential worker "
        f"({full['users_per_second'] / base:.1f}x; target 50x "
        f"{'met' if full['users_per_second'] / base >= 50 else 'not met'}; a second run "
        f"{again['users_per_second']:.0f} users/s, {again['users_per_second'] / base:.1f}x; "
        f"{full['worker_cpu_seconds_per_user'] * 1000:.1f} ms of worker CPU a user); 0 "
        f"duplicate applications, within budget; `expire` "
        f"{cpu['in_process_run']['records_per_second']:,} records/s, 2 workers "
        f"{one / two:.2f}x one (PostgreSQL-bound on 2 cores){also}",
        "`consolidation_workers.json`",
        title="Consolidation across workers",
        what=f"`summarize` of {full['users']:,} users by PostgreSQL workers (loopback model, "
             "200 ms)",
        result=f"**{full['users_per_second']:.1f} users/s** with {full['workers']} workers, "
               f"{full['users_per_second'] / base:.1f}x one sequential worker (target 50x "
               f"{'met' if full['users_per_second'] / base >= 50 else 'not met'})",
    )


def _multilingual(m: dict[str, Any]) -> Figure:
    zh = m["chinese"]
    mini, e5 = zh["minilm"]["holdout"], zh["e5-small"]["holdout"]
    lat = m["latency"]
    paired = mini["paired_default_minus_keyword"]["hit@5"]
    return Figure(
        f"Chinese recall (own multi-day assistant set, {mini['probes']} held-out questions), "
        "hit@5 of the default hybrid; LoCoMo dev recall@5; recall p50 incl. the query "
        "embedding (one thread)",
        f"MiniLM (default) {mini['default']['hit@5']['mean']:.2f} = BM25 alone "
        f"{mini['keyword']['hit@5']['mean']:.2f} (paired {paired['mean']:+.3f}); "
        f"multilingual-e5-small on ONNX Runtime **{e5['default']['hit@5']['mean']:.2f}** (target "
        f"0.90); LoCoMo {m['locomo']['minilm']['default']['recall@5']['mean']:.3f} vs "
        f"{m['locomo']['e5-small']['default']['recall@5']['mean']:.3f}; MiniLM "
        f"{lat['minilm']['locomo']['with_embedding']['p50_ms']:.1f} ms (LoCoMo), e5 "
        f"{lat['e5-small']['chinese_tune']['with_embedding']['p50_ms']:.1f} ms (Chinese) / "
        f"{lat['e5-small']['locomo']['with_embedding']['p50_ms']:.1f} ms (LoCoMo), load 1-3",
        "`multilingual.json`",
        title="Chinese recall",
        what=f"Chinese recall, hit@5 ({mini['probes']} held-out questions)",
        result=f"multilingual-e5-small **{e5['default']['hit@5']['mean']:.2f}** (target 0.90); the "
               f"default MiniLM {mini['default']['hit@5']['mean']:.2f}, as BM25 alone",
    )


def rows(results: Path = RESULTS) -> list[Figure]:
    """One entry per measurement, each read from the JSON files in ``results``."""
    j = _loader(results)

    makers: list[Callable[[], Figure]] = [
        lambda: _recall_quality(j("recall_quality.json")),
        lambda: _recall_latency(j("recall_quality.json"), j("latency_ab.json")),
        lambda: _multilingual(j("multilingual.json")),
        lambda: _vector_search(j("index.json")),
        lambda: _cold_load(j("index.json")),
        lambda: _full_recall(j("store.json")),
        lambda: _batch_remember(j("store.json")),
        lambda: _observe(j("consolidation_observe.json")),
        lambda: _scale(j("consolidation_scale.json")),
        lambda: _scenarios(j("consolidation_scenarios.json")),
        lambda: _formation(j("consolidation_scenarios.json"),
                           _own(j, FORMATION_LOOKS, "heldout2"),
                           formation_looks(j),
                           j("formation_changes_blind_now.json"),
                           j("formation_changes_blind_now_model.json")),
        lambda: _readers(j("readers.json")),
        lambda: _observe_reading(j("observe_reading_model.json")),
        lambda: _at_once(j("at_once.json")),
        lambda: _contradiction(j("contradiction.json"), _own(j, CONTRADICTION_LOOKS, "heldout"),
                               [look for _, look in contradiction_looks(j)]),
        lambda: _knowledge_update(j("knowledge_update.json"),
                                  [_own(j, UPDATE_LOOKS, "heldout"),
                                   _own(j, UPDATE_LOOKS, "heldout2")],
                                  update_looks(j)),
        lambda: _ku_guards(j("knowledge_update.json"), guard_looks(j)),
        lambda: _temporal(j("temporal.json")),
        lambda: _nightly(j("nightly_changes.json")),
        lambda: _never_worse(j("never_worse.json"), j("never_worse_heldout.json"),
                             j("never_worse_split3.json"),
                             j("never_worse_split3_first_look.json"),
                             j("never_worse_split4.json"),
                             j("never_worse_split4_first_look.json")),
        lambda: _llm_path(j("never_worse_llm_a.json"), j("never_worse_llm_a_base.json"),
                          j("never_worse_llm_b.json"), j("readers_llm.json"),
                          j("never_worse_loopback.json"),
                          j("never_worse_loopback_heldout.json")),
        lambda: _workers(j("consolidation_workers.json")),
        lambda: _agent(j("agent.json")),
        lambda: _cold_start(j("cold_start.json")),
        lambda: _async(j("async.json")),
        lambda: _telemetry(j("telemetry.json")),
        lambda: _injection(j("injection.json")),
    ]
    figures = [make() for make in makers]
    for f in figures:
        if not re.fullmatch(r"[A-Z][a-z0-9]*( [A-Za-z0-9]+)*", f.title):
            raise ValueError(f"{f.title!r}: a title is words of letters and digits")
    if len({f.anchor for f in figures}) != len(figures):
        raise ValueError("two measurements have the same title")
    return figures


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def render_first_looks(results: Path = RESULTS) -> str:
    """docs/first_looks.md's tables: every blind split, its first look and as the code stands."""
    j = _loader(results)

    out: list[str] = []
    formation_now = j("formation_changes_blind_now.json")["splits"]
    out += ["### Formation", "",
            "Changes read correctly and guards held through `observe` (each case its own user).",
            "", "| set | cases | first look: changes (EN / ZH) | guards | now: changes | guards |",
            "|---|---|---|---|---|---|"]
    for name, look in formation_looks(j):
        now = formation_now.get(name, {}).get("all", {})
        a = look["all"]
        out.append(f"| {name} | {a['cases']} | {_f(a['changes_read_correctly'])} "
                   f"({_f(look['en']['changes_read_correctly'])} / "
                   f"{_f(look['zh']['changes_read_correctly'])}) | {_f(a['guards_held'])} | "
                   f"{_f(now.get('changes_read_correctly'))} | {_f(now.get('guards_held'))} |")
    ku = j("knowledge_update.json")["results"]["blind_splits_now"]
    out += ["", "### Knowledge updates", "",
            "Newest first: the new statement ranks above the old one (or the old one is not "
            "returned). First looks with MiniLM through `remember`, Chinese also with "
            "multilingual-e5-small, and through `observe` with the nightly offline `summarize`; "
            "now with MiniLM and with e5-small for every language.", "",
            "| set | cases | first look (EN / ZH) | ZH with e5 | observe + nightly | "
            "now: MiniLM | e5-small | observe + nightly (MiniLM / e5) |",
            "|---|---|---|---|---|---|---|---|"]
    for name, look in update_looks(j):
        r = _ku_look(name, look)
        now = ku.get(name)

        def at(embedder: str, key: str, now: dict[str, Any] | None = now) -> float | None:
            return None if now is None else now[embedder][key]["all"]["newest_first"]

        out.append(f"| {name} | {r['n']} | {_f(r['all'])} ({_f(r['en'])} / {_f(r['zh'])}) | "
                   f"{_f(r['zh_e5'])} | {_f(r['nightly'])} | {_f(at('minilm', 'remember'))} | "
                   f"{_f(at('e5-small', 'remember'))} | {_f(at('minilm', 'observe_nightly'))} / "
                   f"{_f(at('e5-small', 'observe_nightly'))} |")
    out += ["", "### Knowledge-update guards", "",
            "Old value first: a later statement close to the asked thing that does not change "
            "it stays below the old value (guard1 was tuned on and has no first look here).", "",
            "| set | first look (EN / ZH) | observe + nightly | now: MiniLM | e5-small |",
            "|---|---|---|---|---|"]
    for name, look in guard_looks(j):
        r = look["remember"]
        now = ku.get(name)
        out.append(
            f"| {name} | {_f(r['all']['old_first'])} ({_f(r['en']['old_first'])} / "
            f"{_f(r['zh']['old_first'])}) | "
            f"{_f(look.get('observe_nightly', {}).get('all', {}).get('old_first'))} | "
            f"{_f(None if now is None else now['minilm']['remember']['all']['old_first'])} | "
            f"{_f(None if now is None else now['e5-small']['remember']['all']['old_first'])} |")
    contradiction = j("contradiction.json")["blind_splits_now"]
    out += ["", "### Contradictions", "",
            "The offline rules' precision / recall of \"contradiction\" on pairs written blind.",
            "", "| set | pairs | first look (EN, ZH) | now |", "|---|---|---|---|"]
    for name, look in contradiction_looks(j):
        r = look["rules"]
        now = contradiction.get(name, {}).get("all", {})
        out.append(f"| {name} | {r['all']['pairs']} | {_f(r['all']['precision'])} / "
                   f"{_f(r['all']['recall'])} ({_f(r['en']['precision'])} / "
                   f"{_f(r['en']['recall'])}, {_f(r['zh']['precision'])} / "
                   f"{_f(r['zh']['recall'])}) | {_f(now.get('precision'))} / "
                   f"{_f(now.get('recall'))} |")
    return "\n".join(out) + "\n"


def render(results: Path = RESULTS) -> str:
    """README.md's table (header included), ending with a newline: one short row a
    measurement, linking to its section of docs/measured.md."""
    lines = ["| what | result | more |", "|---|---|---|"]
    lines += [f"| {f.what} | {f.result} | [details](docs/measured.md#{f.anchor}) |"
              for f in rows(results)]
    return "\n".join(lines) + "\n"


def _clauses(text: str) -> list[str]:
    """``text`` split at each "; " outside parentheses and brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "([") - (ch in ")]")
        if depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    return [*out, text[start:]]


def render_measured(results: Path = RESULTS) -> str:
    """docs/measured.md's sections: every measurement, what was measured and every figure."""
    out: list[str] = []
    for f in rows(results):
        # the JSON files by their path, links relative to docs/
        where = re.sub(r"`(\w+\.json)`", r"`benchmarks/results/\1`", f.where)
        where = where.replace("](docs/", "](")
        out += [f"## {f.title}", "", f"**Measured:** {f.measured}.", ""]
        out += [f"* {clause}" for clause in _clauses(f.figures)]
        out += ["", f"Source: {where}.", ""]
    return "\n".join(out)


def updated(readme_text: str, table: str) -> str:
    """``readme_text`` with the text between the markers replaced by ``table``."""
    head, sep, rest = readme_text.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"the page needs the markers {START} and {END}")
    return f"{head}{START}\n{table}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a page differs from the rendering")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--measured", type=Path, default=MEASURED)
    parser.add_argument("--first-looks", type=Path, default=FIRST_LOOKS)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    stale = 0
    for path, table in ((args.readme, render(args.results)),
                        (args.measured, render_measured(args.results)),
                        (args.first_looks, render_first_looks(args.results))):
        text = path.read_text(encoding="utf-8")
        new = updated(text, table)
        if new == text:
            continue
        if args.check:
            print(f"{path}: the figures are out of date; run python scripts/readme_figures.py",
                  file=sys.stderr)
            stale = 1
        else:
            path.write_text(new, encoding="utf-8")
            print(f"{path}: figures updated")
    return stale


if __name__ == "__main__":
    sys.exit(main())
