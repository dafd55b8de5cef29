"""The markdown report of an :class:`~memstrata.eval.EvalResult`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memstrata.eval._metrics import Estimate
from memstrata.policies.language import LANGUAGE_LABELS

if TYPE_CHECKING:
    from memstrata.eval._data import Dataset
    from memstrata.eval._result import EvalResult, QuestionResult

__all__ = ["explain", "language_table", "render_markdown", "summary_table"]


def _ci(e: Estimate) -> str:
    return f"{e.mean:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _signed(e: Estimate) -> str:
    return f"{e.mean:+.3f} [{e.low:+.3f}, {e.high:+.3f}]"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def summary_table(result: EvalResult) -> str:
    """The main table: every retriever, recall@k and nDCG with 95% CIs, MRR, latency."""
    top = max(result.ks)
    head = ["retriever", *(f"recall@{k}" for k in result.ks), f"nDCG@{top}", "MRR",
            "p50 ms", "tokens to evidence (median)"]
    lines = [_row(head), _row(["---"] * len(head))]
    for run in result.runs:
        s = result.summary(run.name)
        tokens = "-" if s.tokens_to_all_median is None else f"{s.tokens_to_all_median:.0f}"
        lines.append(_row([
            f"`{run.name}`",
            *(_ci(s.overall[f"recall@{k}"]) for k in result.ks),
            _ci(s.overall[f"ndcg@{top}"]),
            f"{s.overall['mrr'].mean:.3f}",
            f"{s.latency['p50_ms']:.2f}",
            f"{tokens} ({s.all_reached:.0%} reached)",
        ]))
    return "\n".join(lines)


def language_table(result: EvalResult, k: int = 5) -> str | None:
    """recall@k (with its interval) / hit@k of every retriever per language of the
    question (its script, :func:`~memstrata.policies.language.language_of`);
    ``None`` when the questions are all in one language."""
    names = [r.name for r in result.runs]
    first = result.summary(names[0])
    if len(first.by_language) < 2:
        return None
    lines = [_row(["language", "n", *(f"`{n}`" for n in names)]),
             _row(["---"] * (len(names) + 2))]
    for lang, block in first.by_language.items():
        cells = [f"{_ci(result.summary(n).by_language[lang][f'recall@{k}'])} / "
                 f"{result.summary(n).by_language[lang][f'hit@{k}'].mean:.3f}" for n in names]
        lines.append(_row([LANGUAGE_LABELS.get(lang, lang), str(block[f"recall@{k}"].n),
                           *cells]))
    return "\n".join(lines)


def render_markdown(result: EvalResult, figures: dict[str, str]) -> str:
    ds: dict[str, Any] = result.dataset
    ing: dict[str, Any] = result.ingest
    top = max(result.ks)
    main_k = 5 if 5 in result.ks else result.ks[len(result.ks) // 2]
    out = [
        f"# Recall quality: {ds.get('name', 'dataset')}",
        "",
        f"{ds.get('conversations', '?')} conversations, {ds.get('turns', '?')} turns "
        f"(one memory each), {ds.get('probes', '?')} questions. "
        f"Evidence recall is turn-level; 95% bootstrap intervals over questions "
        f"({result.n_boot} resamples). Latency is the ranking time per query with the query "
        "embedding cached (`benchmarks/bench_recall_quality.py` measures it with the "
        "embedding).",
        "",
        summary_table(result),
        "",
    ]
    comparisons = result.comparisons()
    if comparisons:
        metrics = [*(f"recall@{k}" for k in result.ks), f"ndcg@{top}"]
        out += [
            "## `default` minus each other retriever (paired bootstrap)",
            "",
            _row(["vs", *metrics]),
            _row(["---"] * (len(metrics) + 1)),
        ]
        for other, diffs in comparisons.items():
            cells = [_signed(Estimate(**diffs[m])) for m in metrics]
            out.append(_row([f"`{other}`", *cells]))
        out += [
            "",
            "An interval that excludes 0 means the difference is not explained by which "
            "questions happened to be asked.",
            "",
        ]
    for key, title in (("recall_at_k", "Recall@k"), ("token_budget", "Token budget"),
                       ("by_category", "By category")):
        if key in figures:
            out += [f"![{title}]({figures[key]})", ""]
    names = [r.name for r in result.runs]
    first = result.summary(names[0])
    out += [f"## recall@{main_k} by category", "",
            _row(["category", "n", *(f"`{n}`" for n in names)]),
            _row(["---"] * (len(names) + 2))]
    for cat in first.by_category:
        cells = [_ci(result.summary(n).by_category[cat][f"recall@{main_k}"]) for n in names]
        n_q = first.by_category[cat][f"recall@{main_k}"].n
        out.append(_row([result.category_label(cat), str(n_q), *cells]))
    languages = language_table(result, main_k)
    if languages is not None:
        out += ["", f"## recall@{main_k} / hit@{main_k} by language of the question", "",
                languages]
    out += ["", f"## recall@{main_k} by conversation", "",
            _row(["conversation", "n", *(f"`{n}`" for n in names)]),
            _row(["---"] * (len(names) + 2))]
    for conv in first.by_conversation:
        cells = [f"{result.summary(n).by_conversation[conv][f'recall@{main_k}'].mean:.3f}"
                 for n in names]
        out.append(_row([conv, str(first.by_conversation[conv][f"recall@{main_k}"].n),
                         *cells]))
    budgets = list(first.token_curve)
    out += ["", "## Share of evidence within a context budget (tokens)", "",
            _row(["retriever", *(str(b) for b in budgets)]),
            _row(["---"] * (len(budgets) + 1))]
    for n in names:
        curve = result.summary(n).token_curve
        out.append(_row([f"`{n}`", *(f"{curve[b]:.3f}" for b in budgets)]))
    load = ds.get("load_report", {})
    out += [
        "",
        "## Data and ingest",
        "",
        f"- questions read: {load.get('probes_read', '?')}; excluded by category: "
        f"{load.get('excluded_by_category', 0)}; excluded for lack of any existing evidence "
        f"id: {load.get('excluded_without_evidence', 0)}; evidence ids skipped because no "
        f"such turn exists: {load.get('missing_evidence_ids', 0)}",
        f"- write decisions: {ing.get('outcomes', {})} (a merged turn counts as covered by "
        "the record it was merged into)",
        f"- ingest options: `{ing.get('options', {})}`",
        f"- embedder: `{ing.get('embedder', '?')}`; ingest took {ing.get('seconds', 0):.1f} s"
        + (" (cached)" if ing.get("cached") else ""),
        "",
    ]
    for run in result.runs:
        out.append(f"- `{run.name}`: {run.description}")
    out.append("")
    return "\n".join(out)


def explain(result: EvalResult, question: QuestionResult, *, show: int = 5,
            dataset: Dataset | None = None) -> str:
    """A failure-browser entry in markdown: the question, the gold evidence (with
    the rank it got), and what came back with its score parts.

    Pass the ``dataset`` to show evidence turns the write policy did not store."""
    user = question.user
    turn_text: dict[str, str] | None = None
    if dataset is not None:
        conv = next((c for c in dataset.conversations if c.user == user), None)
        turn_text = None if conv is None else {t.id: t.text for t in conv.turns}
    record_of: dict[str, str] = {}
    for record_id, rec in result.records.get(user, {}).items():
        for turn in rec.get("turns", []):
            record_of[turn] = record_id
    cat = result.category_label(question.category)
    lines = [f"**{question.question}**  ", f"category {cat}; answer: {question.answer!r}; "
             f"recall@5 {question.recall(5):.2f}, first evidence at rank "
             f"{min((r for r in question.evidence_ranks if r is not None), default='-')}", "",
             "gold evidence:"]
    for turn, rank in zip(question.evidence_ids, question.evidence_ranks, strict=True):
        text = (turn_text or {}).get(turn)
        if text is None and turn in record_of:
            text = result.content(user, record_of[turn])
        where = "not stored" if turn not in record_of and turn_text is None else (
            f"rank {rank}" if rank is not None else "not in the ranked list")
        lines.append(f"- `{turn}` ({where}): {_clip(text or '?')}")
    lines += ["", "returned:"]
    for i, (item, rel) in enumerate(
        zip(question.retrieved[:show], question.relevant[:show], strict=False), start=1
    ):
        parts = " ".join(f"{k} {v:.2f}" for k, v in item.parts.items())
        mark = "✓" if rel else "✗"
        turns = ",".join(result.turns_of(user, item.record_id))
        lines.append(f"{i}. {mark} {item.score:.3f} ({parts}) `{turns}`: "
                     f"{_clip(result.content(user, item.record_id))}")
    return "\n".join(lines)


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
