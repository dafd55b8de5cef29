"""Render README.md's "Measured on this machine" table from benchmarks/results/*.json.

The table sits between ``<!-- figures:start -->`` and ``<!-- figures:end -->``;
every figure in it is read from a benchmark's JSON, so the README cannot drift
from the measurements. ``tests/test_readme.py`` fails when the README differs
from what this script renders.

    python scripts/readme_figures.py           # rewrite the table in README.md
    python scripts/readme_figures.py --check   # exit 1 if README.md is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
#: the blind splits after the sixth whose first looks the README lists
FORMATION_LATER = range(7, 41)
KU_LATER = range(7, 39)
#: the knowledge-update guard splits first looked at (guard1 is tuned on)
KU_GUARDS = range(2, 19)
CONTRADICTION_BLIND = range(1, 7)
README = REPO / "README.md"
START = "<!-- figures:start -->"
END = "<!-- figures:end -->"

Row = tuple[str, str, str]


def _load(results: Path, name: str) -> dict[str, Any]:
    data = json.loads((results / name).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{name}: expected a JSON object")
    return data


def _ci(est: dict[str, Any]) -> str:
    return f"**{est['mean']:.3f}** [{est['low']:.3f}, {est['high']:.3f}]"


def _recall_quality(r: dict[str, Any]) -> Row:
    ret, ref = r["retrievers"], r["references"]
    d = ret["default"]
    return (
        "LoCoMo dev, evidence recall@5 / @10 (default hybrid, cat. 5 excluded)",
        f"{_ci(d['recall@5'])} / {_ci(d['recall@10'])} — BM25 "
        f"{ret['keyword']['recall@5']['mean']:.3f}, dense {ret['dense']['recall@5']['mean']:.3f},"
        f" RRF {ret['rrf']['recall@5']['mean']:.3f} on the same ingest; outside references "
        f"BM25 {ref['bm25']['recall@5']:.3f}, mem0 {ref['mem0 (no LLM)']['recall@5']:.3f}",
        "`recall_quality.json`",
    )


def _recall_latency(r: dict[str, Any], ab: dict[str, Any]) -> Row:
    app = r["latency"]["with_embedding_and_use_recorded"]
    cur = ab["results"]["current"]["use_recorded"]
    mem0 = r["references"]["mem0 (no LLM)"]["p50_ms"]
    return (
        "recall latency incl. the query embedding, as apps call it",
        f"p50 **{app['p50_ms']:.1f} ms**, p95 {app['p95_ms']:.1f} ms (interleaved A/B run: "
        f"{cur['p50_ms']:.1f} / {cur['p95_ms']:.1f} ms) (mem0: {mem0:.0f} ms p50)",
        "`recall_quality.json`, `latency_ab.json`",
    )


def _vector_search(ix: dict[str, Any]) -> Row:
    single = ix["single_user"]
    agreement = min(v["top5_agreement_vs_exact_float32"] for v in single.values())
    return (
        "vector search, one user, top-5 (exact float16)",
        f"p95 **{single['10000']['top5']['p95_ms']:.2f} ms** at 10k, "
        f"**{single['100000']['top5']['p95_ms']:.2f} ms** at 100k; top-5 agreement with exact "
        f"float32 search **{agreement:.2f}**",
        "`index.json`",
    )


def _cold_load(ix: dict[str, Any]) -> Row:
    c = ix["cold_load"]
    return (
        f"cold load of a {c['n'] // 1000}k-memory user (vectors + BM25), and its memory",
        f"**{c['total_cold_load_s']:.2f} s**; {c['rss_growth_vector_mb']:.0f} MB + "
        f"{c['rss_growth_keyword_mb']:.0f} MB resident",
        "`index.json`",
    )


def _full_recall(st: dict[str, Any]) -> Row:
    one, many = st["recall_one_user"], st["recall_many_users"]

    def pp(x: dict[str, Any]) -> str:
        e = x["excluding_embedding"]
        return f"{e['p50_ms']:.1f} / {e['p95_ms']:.1f} ms"

    mem0 = st["references"]["mem0_search_ms_excluding_embedding_at_600_per_user"]
    return (
        "full recall excluding the embedding (p50 / p95)",
        f"{pp(one['10000'])} at 10k memories, {pp(one['100000'])} at 100k, {pp(many)} with "
        f"{many['users']:,} users x {many['per_user']:,} (mem0: {mem0} ms at 600)",
        "`store.json`",
    )


def _batch_remember(st: dict[str, Any]) -> Row:
    ing = st["ingest"]
    turns = ing["conversation_turns"]
    return (
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
    )


def _observe(ob: dict[str, Any]) -> Row:
    return (
        "`observe` a turn that forms a memory (incl. embedding)",
        f"p95 **{ob['user_turns_with_extraction']['p95_ms']:.1f} ms** SQLite, "
        f"{ob['postgresql']['user_turns_with_extraction']['p95_ms']:.1f} ms PostgreSQL "
        f"(the embedding alone p50 {ob['embedding']['embed_p50_ms_when_called']:.1f} ms on the "
        "day measured; target 20 ms)",
        "`consolidation_observe.json`",
    )


def _scale(sc: dict[str, Any]) -> Row:
    data, ex, co = sc["data"], sc["expire"], sc["conflicts"]
    return (
        f"`expire` over {data['records']:,} records / {data['users']:,} users (SQLite)",
        f"**{ex['records_per_second']:,} records/s** (target {ex['target_records_per_second']:,});"
        f" `conflicts` {co['records_per_second']:,} records/s",
        "`consolidation_scale.json`",
    )


def _scenarios(sn: dict[str, Any]) -> Row:
    sets = sn["sets"]
    tuned = sets["preference_updates"]
    held = [v for k, v in sets.items() if k.startswith("preference_updates_holdout")]
    runs = [s["job_only"] for s in (tuned, *held)]
    flag_p = min(r["conflicts_flagged"]["precision"] for r in runs)
    recalls = [r["conflicts_flagged"]["recall"] for r in runs]
    merge_p = min(r["duplicates_merged"]["precision"] for r in runs)
    return (
        f"offline conflict detection on the project's own scenario set: {tuned['cases']} "
        f"tuning + {sum(h['cases'] for h in held)} held-out preference-update cases (EN + ZH; "
        "on public contradiction data these rules find far fewer)",
        f"flag precision {flag_p:.2f}, recall {min(recalls):.2f}-{max(recalls):.2f}; "
        f"merge precision {merge_p:.2f}",
        "`consolidation_scenarios.json`",
    )


def _agent(ag: dict[str, Any]) -> Row:
    k, c = ag["kernel_overhead_ms"], ag["context_tokens"]
    return (
        f"agent kernel overhead per step, model excluded, {ag['memories'] // 1000}k memories",
        f"p95 **{k['default_recall_refresh']['p95']:.1f} ms** (recall every turn: "
        f"{k['recall_every_turn']['p95']:.1f} ms); context {100 * c['ratio_total']:.1f} % of "
        "the naive full history",
        "`agent.json`",
    )


def _cold_start(cs: dict[str, Any]) -> Row:
    c = cs["trees"]["current"]["cold_start"]
    before = cs["trees"].get("before", {}).get("cold_start", {})
    was = ""
    if "first_recall" in before:
        was = f" (was {before['first_recall']['p50_s']:.1f} s)"
    return (
        "fresh process to its first recall / first observe (existing SQLite memory)",
        f"p50 **{c['first_recall']['p50_s']:.2f} s**{was} / {c['first_observe']['p50_s']:.2f} s; "
        f"`import numpy` {c['import_numpy']['p50_s']:.2f} s; no PyTorch imported",
        "`cold_start.json`",
    )


def _injection(inj: dict[str, Any]) -> Row:
    return (
        f"prompt injection through memories and tool results ({inj['cases']} cases, EN + ZH, "
        "a model that requests any tool call it reads)",
        f"L2/L3 actions without approval **{inj['executed_l2_l3_without_approval']}**, "
        f"ungrounded arguments **{inj['ungrounded_arguments']}**, injected text outside a "
        f"data block **{inj['injected_text_outside_data_block']}**",
        "`injection.json`",
    )


_UNIT_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
               "fourteen fifteen sixteen seventeen eighteen nineteen").split()
#: numbers in words, zero to ninety-nine ("thirty-two")
_WORDS = _UNIT_WORDS + [
    tens + ("" if unit == 0 else "-" + _UNIT_WORDS[unit])
    for tens in "twenty thirty forty fifty sixty seventy eighty ninety".split()
    for unit in range(10)]


def _formation(sn: dict[str, Any], first2: dict[str, Any], first3: dict[str, Any],
               first4: dict[str, Any], first5: dict[str, Any], first6: dict[str, Any],
               later: list[dict[str, Any]]) -> Row:
    fc = sn["formation_changes"]
    held, look2, look3 = fc["heldout"]["all"], first2["heldout2"], first3["heldout3"]
    look4, look5, look6 = first4["heldout4"], first5["heldout5"], first6["heldout6"]
    return (
        "formation of changes through `observe` (moves, jobs, careers, diets, preferred names, "
        f"birthdays, \"from now on\"; EN + ZH; the project's own set, {held['cases']} held-out "
        "cases)",
        f"changes read **{held['changes_read_correctly']:.2f}**, guards held "
        f"{held['guards_held']:.2f}; a second held-out set in other phrasings, first look: "
        f"changes **{look2['all']['changes_read_correctly']:.2f}** (EN "
        f"{look2['en']['changes_read_correctly']:.2f}, ZH "
        f"{look2['zh']['changes_read_correctly']:.2f}), guards {look2['all']['guards_held']:.2f}; "
        f"a third, written blind ({look3['all']['cases']} cases), first look: changes "
        f"**{look3['all']['changes_read_correctly']:.2f}** (EN "
        f"{look3['en']['changes_read_correctly']:.2f}, ZH "
        f"{look3['zh']['changes_read_correctly']:.2f}), guards {look3['all']['guards_held']:.2f}; "
        f"a fourth, blind, after the reader of known values: changes "
        f"**{look4['all']['changes_read_correctly']:.2f}** (EN "
        f"{look4['en']['changes_read_correctly']:.2f}, ZH "
        f"{look4['zh']['changes_read_correctly']:.2f}), guards {look4['all']['guards_held']:.2f}; "
        f"a fifth, blind ({look5['all']['cases']} cases), after the Chinese reader: changes "
        f"**{look5['all']['changes_read_correctly']:.2f}** (EN "
        f"{look5['en']['changes_read_correctly']:.2f}, ZH "
        f"{look5['zh']['changes_read_correctly']:.2f}), guards {look5['all']['guards_held']:.2f}; "
        f"a sixth, blind ({look6['all']['cases']} cases), after the readers of names and diets: "
        f"changes **{look6['all']['changes_read_correctly']:.2f}** (EN "
        f"{look6['en']['changes_read_correctly']:.2f}, ZH "
        f"{look6['zh']['changes_read_correctly']:.2f}), guards "
        f"**{look6['all']['guards_held']:.2f}**; {_WORDS[len(later)]} more, blind, each after the "
        "fixes of the one before: changes "
        + " / ".join(f"**{x['all']['changes_read_correctly']:.3f}**" for x in later)
        + ", guards "
        + " / ".join(f"{x['all']['guards_held']:.2f}" for x in later),
        "`consolidation_scenarios.json`, "
        f"`formation_changes_heldout{{2,...,{6 + len(later)}}}_first_look.json`",
    )


def _blind_pr(r: dict[str, Any]) -> str:
    """Precision / recall of a blind contradiction split, per language."""
    return (f"**{r['all']['precision']:.2f} / {r['all']['recall']:.2f}** (EN "
            f"{r['en']['precision']:.2f} / {r['en']['recall']:.2f}, ZH "
            f"{r['zh']['precision']:.2f} / {r['zh']['recall']:.2f})")


def _contradiction(c: dict[str, Any], first: dict[str, Any],
                   blind: list[dict[str, Any]]) -> Row:
    look = first["rules"]
    before = c["methods"]["rules_before"]["heldout"]["all"]
    return (
        f"offline contradiction rules on {c['pairs']} own pairs (paraphrases, incidental \"not\","
        " 不/没 in another clause; EN + ZH), held-out first look; then pairs written blind "
        f"({', '.join(str(b['rules']['all']['pairs']) for b in blind)}), first looks, each after "
        "the fixes of the one before; no NLI model ships its weights in a registry package",
        f"precision **{look['all']['precision']:.2f}**, recall **{look['all']['recall']:.2f}** "
        f"(EN {look['en']['precision']:.2f} / {look['en']['recall']:.2f}, ZH "
        f"{look['zh']['precision']:.2f} / {look['zh']['recall']:.2f}); the rules before: "
        f"{before['precision']:.2f} / {before['recall']:.2f}; blind: "
        + " then ".join(_blind_pr(b["rules"]) for b in blind)
        + "; contradictions said in other words (\"allergic to cats\" / \"I sleep with my two "
        "cats\"): none found by rules",
        "`contradiction.json`, `contradiction_first_look.json`, "
        f"`contradiction_blind{{1,...,{len(blind)}}}_first_look.json`",
    )


def _later_look(name: str, look: dict[str, Any]) -> str:
    """A blind knowledge-update split's first look: newest first through ``remember``, per
    language, Chinese on e5-small, and through ``observe`` with the nightly ``summarize``."""
    r = look["remember"]["default"]
    zh_e5 = look["chinese_with_e5"]["remember"][name]
    night = look["observe_nightly"]["default"]["all"]["newest_first"]
    return (f"**{r['all']['newest_first']:.2f}** (EN {r['en']['newest_first']:.2f}, ZH "
            f"{r['zh']['newest_first']:.2f}; ZH with e5 {zh_e5['newest_first']:.2f}; through "
            f"`observe` with the nightly `summarize` {night:.2f})")


def _knowledge_update(ku: dict[str, Any], f1: dict[str, Any], f2: dict[str, Any],
                      f3: dict[str, Any], f4: dict[str, Any], f5: dict[str, Any],
                      f6: dict[str, Any], later: list[tuple[str, dict[str, Any]]]) -> Row:
    a = f1["heldout"]["remember"]
    b = f2["heldout2"]["remember"]
    c = f3["heldout3"]["remember"]
    d = f4["heldout4"]["remember"]["default"]["all"]["newest_first"]
    d5 = f5["heldout5"]["remember"]["default"]["all"]["newest_first"]
    e = f6["heldout6"]["remember"]["default"]
    e5 = f6["heldout6"]["chinese_with_e5"]["remember"]["heldout6"]
    en, zh = e["en"], e["zh"]
    recommended = (en["newest_first"] * en["n"] + e5["newest_first"] * e5["n"]) / (
        en["n"] + e5["n"])
    now = ku["results"]["blind_splits_now"]
    blind = [k for k in now if k.startswith("heldout")]
    names = ku["own_name"]["summary"]
    nightly = ku["results"].get("observe_nightly", {}).get("default", {})
    through_observe = "" if not nightly else (
        "; through `observe` with the nightly `summarize` (offline): "
        + " / ".join(f"{nightly[s]['all']['newest_first']:.2f}"
                     for s in ("tuning", "heldout", "heldout2") if s in nightly)
        + " (own, held-out, held-out 2; `observe` alone "
        + " / ".join(f"{ku['results']['observe']['default'][s]['all']['newest_first']:.2f}"
                     for s in ("tuning", "heldout", "heldout2") if s in nightly) + ")")
    return (
        "knowledge updates: a value stated, then changed 3-8 weeks later without \"actually\" "
        "(own probes, EN + ZH), current value ranked first: first looks at two held-out "
        f"splits and {_WORDS[4 + len(later)]} written blind, each after the fixes of the one "
        "before; the blind "
        "splits as the code stands now; the user's own name in the question",
        f"**{a['default']['all']['newest_first']:.2f}** / "
        f"**{b['default']['all']['newest_first']:.2f}**; blind: "
        f"{c['default']['all']['newest_first']:.2f} / {d:.2f} / {d5:.2f} / "
        f"**{e['all']['newest_first']:.2f}** (that one: EN {en['newest_first']:.2f}, ZH "
        f"{zh['newest_first']:.2f} with MiniLM, ZH **{e5['newest_first']:.2f}** with "
        f"multilingual-e5-small, the embedder for Chinese: **{recommended:.2f}** as "
        "recommended per language) / "
        + " / ".join(_later_look(name, look) for name, look in later)
        + "; the blind splits now (not first looks), MiniLM / e5-small for every language: "
        + ", ".join(f"{k.replace('heldout', 'h')} "
                    f"{now[k]['minilm']['remember']['all']['newest_first']:.2f} / "
                    f"**{now[k]['e5-small']['remember']['all']['newest_first']:.2f}**"
                    for k in blind)
        + f" (MiniLM mean {_mean_now(now, blind, 'remember', 'newest_first'):.3f}; with no "
        "sentence passing the gate for its message "
        f"{_mean_now(now, blind, 'remember_no_sentence_gate', 'newest_first'):.3f})"
        + "; through `observe` with the nightly `summarize` (offline), MiniLM / e5-small: "
        + ", ".join(f"{now[k]['minilm']['observe_nightly']['all']['newest_first']:.2f} / "
                    f"{now[k]['e5-small']['observe_nightly']['all']['newest_first']:.2f}"
                    for k in blind)
        + f" (before: {a['before']['all']['newest_first']:.2f} / "
        f"{b['before']['all']['newest_first']:.2f} / {c['before']['all']['newest_first']:.2f}; "
        f"target 0.85){through_observe}; same top-3 with and without the name "
        f"{names['profile_slot']['same_top3']:.2f}",
        "`knowledge_update.json`, "
        f"`knowledge_update_heldout{{3,...,{6 + len(later)}}}_first_look.json`",
    )


def _mean_now(now: dict[str, Any], splits: list[str], key: str, metric: str) -> float:
    """The mean over ``splits`` of one MiniLM figure of the blind splits now."""
    return sum(now[k]["minilm"][key]["all"][metric] for k in splits) / len(splits)


def _ku_guards(ku: dict[str, Any], looks: list[tuple[str, dict[str, Any]]]) -> Row:
    """The guard side of the knowledge updates: a later statement close to the asked
    thing that does not change it must not pass for the current value."""
    now = ku["results"]["blind_splits_now"]
    guards = [k for k in now if k.startswith("guard")]
    return (
        "knowledge-update guards: a later statement close to the asked thing that does not "
        "change it (someone else's change, a plan, the past, a one-off, a question, a related "
        f"thing), old value still first; {_WORDS[len(guards)]} splits written blind, guard1 "
        "tuned on, each later one but the last two fixed after its first look: first "
        "looks, then as the code stands",
        "first looks (`remember`, MiniLM): "
        + " / ".join(f"{name} **{look['remember']['all']['old_first']:.2f}** (EN "
                     f"{look['remember']['en']['old_first']:.2f}, ZH "
                     f"{look['remember']['zh']['old_first']:.2f}; through `observe` with the "
                     f"nightly `summarize` {look['observe_nightly']['all']['old_first']:.2f})"
                     for name, look in looks)
        + "; now, MiniLM / e5-small for every language: "
        + ", ".join(f"{k} {now[k]['minilm']['remember']['all']['old_first']:.2f} / "
                    f"{now[k]['e5-small']['remember']['all']['old_first']:.2f}" for k in guards)
        + " (MiniLM with no sentence passing the gate for its message: "
        + " / ".join(f"{now[k]['minilm']['remember_no_sentence_gate']['all']['old_first']:.2f}"
                     for k in guards) + ")",
        "`knowledge_update.json`, "
        f"`knowledge_update_guard{{{','.join(str(n) for n in KU_GUARDS)}}}_first_look.json`",
    )


def _temporal(t: dict[str, Any]) -> Row:
    lo = t["locomo_dev"]
    d = lo["paired_default_minus_before"]["recall@10"]
    cat2 = next(v for k, v in lo["by_category"].items() if k.startswith("2"))
    res = t["probes"]["summary"]["heldout"]["resolution"]
    return (
        "time: relative dates resolved at write time (own held-out probes); LoCoMo dev, paired "
        "difference of recall@10 against the ranking before",
        f"resolved {res['correct']:.2f} of {res['n']}; recall@10 **{d['mean']:+.3f}** "
        f"[{d['low']:+.3f}, {d['high']:+.3f}]; category 2 (temporal) "
        f"{cat2['recall@10_before']:.3f} → {cat2['recall@10_default']:.3f}, the relevance gate "
        f"costs {cat2['recall@10_default_no_gate'] - cat2['recall@10_default']:.3f} there",
        "`temporal.json`",
    )


def _nightly(n: dict[str, Any]) -> Row:
    off, llm = n["modes"]["offline"]["all"], n["modes"]["llm_loopback"]["all"]
    return (
        f"nightly path on {n['conversations']} own multi-session conversations where values "
        "change without \"actually\" (EN + ZH)",
        f"current value active **{off['current_value_active']:.2f}** offline, "
        f"{llm['current_value_active']:.2f} with an LLM (loopback server, scripted answers); top "
        f"recall hit current {off['top_recall_hit_current']:.2f}",
        "`nightly_changes.json`",
    )


def _workers(w: dict[str, Any]) -> Row:
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
    return (
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
    )


def _multilingual(m: dict[str, Any]) -> Row:
    zh = m["chinese"]
    mini, e5 = zh["minilm"]["holdout"], zh["e5-small"]["holdout"]
    lat = m["latency"]
    paired = mini["paired_default_minus_keyword"]["hit@5"]
    return (
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
    )


def rows(results: Path = RESULTS) -> list[Row]:
    """One row per figure, each read from the JSON files in ``results``."""
    files: dict[str, dict[str, Any]] = {}

    def j(name: str) -> dict[str, Any]:
        if name not in files:
            files[name] = _load(results, name)
        return files[name]

    makers: list[Callable[[], Row]] = [
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
                           j("formation_changes_heldout2_first_look.json"),
                           j("formation_changes_heldout3_first_look.json"),
                           j("formation_changes_heldout4_first_look.json"),
                           j("formation_changes_heldout5_first_look.json"),
                           j("formation_changes_heldout6_first_look.json"),
                           [j(f"formation_changes_heldout{n}_first_look.json")[f"heldout{n}"]
                            for n in FORMATION_LATER]),
        lambda: _contradiction(j("contradiction.json"), j("contradiction_first_look.json"),
                               [j(f"contradiction_blind{n}_first_look.json")
                                for n in CONTRADICTION_BLIND]),
        lambda: _knowledge_update(j("knowledge_update.json"), j("knowledge_update_first_look.json"),
                                  j("knowledge_update_heldout2_first_look.json"),
                                  j("knowledge_update_heldout3_first_look.json"),
                                  j("knowledge_update_heldout4_first_look.json"),
                                  j("knowledge_update_heldout5_first_look.json"),
                                  j("knowledge_update_heldout6_first_look.json"),
                                  [(f"heldout{n}", j(f"knowledge_update_heldout{n}_first_look.json")
                                    [f"heldout{n}"]) for n in KU_LATER]),
        lambda: _ku_guards(j("knowledge_update.json"),
                           [(f"guard{n}", j(f"knowledge_update_guard{n}_first_look.json")
                             [f"guard{n}"]) for n in KU_GUARDS]),
        lambda: _temporal(j("temporal.json")),
        lambda: _nightly(j("nightly_changes.json")),
        lambda: _workers(j("consolidation_workers.json")),
        lambda: _agent(j("agent.json")),
        lambda: _cold_start(j("cold_start.json")),
        lambda: _injection(j("injection.json")),
    ]
    return [make() for make in makers]


def render(results: Path = RESULTS) -> str:
    """The markdown table (header included), ending with a newline."""
    lines = ["| what | result | where |", "|---|---|---|"]
    lines += [f"| {what} | {result} | {where} |" for what, result, where in rows(results)]
    return "\n".join(lines) + "\n"


def updated(readme_text: str, table: str) -> str:
    """``readme_text`` with the text between the markers replaced by ``table``."""
    head, sep, rest = readme_text.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"README.md needs the markers {START} and {END}")
    return f"{head}{START}\n{table}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if README.md differs from the rendering")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    new = updated(text, render(args.results))
    if args.check:
        if new != text:
            print(f"{args.readme}: the figures table is out of date; run "
                  "python scripts/readme_figures.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        args.readme.write_text(new, encoding="utf-8")
        print(f"{args.readme}: figures table updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
