"""Plots of an evaluation (matplotlib, no display needed).

Each ``plot_*`` function returns a :class:`matplotlib.figure.Figure` built
without pyplot - no global figure state, no backend switching - so a notebook
shows it with ``display(fig)`` and :func:`save_plots` writes PNGs through the
Agg canvas. matplotlib is imported when a plot is made, never at import.

Every figure has a title and labelled axes; rates (recall, precision, shares)
are drawn on a 0-1 axis that starts at 0, so two plots can be compared by eye,
and an axis of k (records returned) has integer ticks only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstrata.eval._result import EvalResult
    from memstrata.eval._sweeps import SweepPoint

__all__ = [
    "plot_by_category",
    "plot_decay_sweep",
    "plot_recall_at_k",
    "plot_threshold_sweep",
    "plot_token_budget",
    "plot_top_k_sweep",
    "save_plots",
]

_DPI = 110


def _figure(width: float = 6.4, height: float = 4.2) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=_DPI)
    return fig, fig.subplots()


def _rate_axis(ax: Any, label: str) -> None:
    ax.set_ylabel(label)
    ax.set_ylim(0, 1.02)


def _integer_ticks(axis: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def plot_recall_at_k(result: EvalResult, *, max_k: int | None = None) -> Any:
    """Evidence recall@k for k = 1..max_k, one line per retriever."""
    depth = min(r.depth for r in result.runs)
    top = min(max_k or max(20, max(result.ks)), depth)
    ks = list(range(1, top + 1))
    fig, ax = _figure()
    for run in result.runs:
        ax.plot(ks, run.recall_curve(ks), marker="o", markersize=3, label=run.name)
    for k in result.ks:
        if k <= top:
            ax.axvline(k, color="0.85", linewidth=0.8, zorder=0)
    ax.set_xlabel("k (records returned)")
    _integer_ticks(ax.xaxis)
    ax.set_xlim(0.5, top + 0.5)
    _rate_axis(ax, "evidence recall@k")
    ax.set_title("Recall@k per retriever")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_token_budget(result: EvalResult, *, max_tokens: int = 2048) -> Any:
    """Share of evidence reached within N tokens of returned context."""
    budgets = list(range(0, max_tokens + 1, 32))
    fig, ax = _figure()
    for run in result.runs:
        ax.plot(budgets, run.token_curve(budgets), label=run.name)
    ax.set_xlabel("context budget (tokens of returned memories)")
    ax.set_xlim(0, max_tokens)
    _rate_axis(ax, "share of evidence within budget")
    ax.set_title("Token budget curve")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_by_category(result: EvalResult, *, k: int | None = None) -> Any:
    """recall@k per question category, one bar per retriever, with 95% CIs."""
    import numpy as np

    k = k or (5 if 5 in result.ks else max(result.ks))
    names = [r.name for r in result.runs]
    cats = list(result.summary(names[0]).by_category)
    width = 0.8 / max(len(names), 1)
    x = np.arange(len(cats))
    fig, ax = _figure(max(6.4, 1.4 * len(cats) + 2))
    for i, name in enumerate(names):
        est = [result.summary(name).by_category[c][f"recall@{k}"] for c in cats]
        means = np.array([e.mean for e in est])
        err = np.array([[e.mean - e.low for e in est], [e.high - e.mean for e in est]])
        ax.bar(x + (i - (len(names) - 1) / 2) * width, means, width, yerr=err, capsize=2,
               label=name)
    ax.set_xticks(x, [result.category_label(c) for c in cats], fontsize=8)
    ax.set_xlabel("question category")
    _rate_axis(ax, f"evidence recall@{k}")
    ax.set_title(f"Recall@{k} by category (95% CI)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_threshold_sweep(points: Sequence[SweepPoint], *, k: int,
                         default: float | None = None) -> Any:
    """Recall, precision of what is returned, and the share of empty answers per
    ``min_relevance`` threshold (:func:`~memstrata.eval.threshold_sweep`)."""
    xs = [p.value for p in points]
    fig, ax = _figure(height=4.0)
    ax.plot(xs, [p.recall for p in points], marker="o", label=f"evidence recall@{k}")
    ax.plot(xs, [p.precision or 0.0 for p in points], marker="o",
            label="precision of what is returned")
    ax.plot(xs, [p.empty for p in points], marker="o", label="share returning nothing")
    if default is not None:
        ax.axvline(default, color="0.6", linestyle="--", label=f"default ({default:g})")
    ax.set_xlabel("min_relevance (threshold on the strongest signal)")
    _rate_axis(ax, "share of questions / of evidence")
    ax.set_title(f"Minimum relevance: what is returned at k = {k}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_decay_sweep(curves: Mapping[float, Sequence[tuple[str, float, float]]]) -> Any:
    """recall@5 and nDCG@10 per event half-life, one pair of lines per decay floor.

    ``curves`` maps a floor to ``(half-life label, recall@5, nDCG@10)`` per setting.
    """
    fig, ax = _figure(height=4.0)
    for floor, points in curves.items():
        labels = [p[0] for p in points]
        ax.plot(labels, [p[1] for p in points], marker="o", label=f"recall@5, floor {floor:g}")
        ax.plot(labels, [p[2] for p in points], marker="s", linestyle="--",
                label=f"nDCG@10, floor {floor:g}")
    ax.set_xlabel("event half-life (days)")
    _rate_axis(ax, "recall@5 / nDCG@10")
    ax.set_title("Decay: half-life and floor")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_top_k_sweep(points: Sequence[SweepPoint]) -> Any:
    """recall@k and precision@k (left axis) and the context tokens returned (right
    axis) per k (:func:`~memstrata.eval.top_k_sweep`)."""
    ks = [int(p.value) for p in points]
    fig, ax = _figure(height=4.0)
    ax.plot(ks, [p.recall for p in points], marker="o", label="recall@k")
    ax.plot(ks, [p.precision or 0.0 for p in points], marker="o", label="precision@k")
    ax.set_xlabel("k (records returned)")
    _integer_ticks(ax.xaxis)
    _rate_axis(ax, "recall@k / precision@k")
    ax.grid(alpha=0.3)
    tokens = ax.twinx()
    tokens.plot(ks, [p.tokens for p in points], color="0.5", linestyle=":",
                label="tokens returned")
    tokens.set_ylabel("mean context tokens returned")
    tokens.set_ylim(0, max([p.tokens for p in points], default=0.0) * 1.1 or 1.0)
    ax.set_title("Top-k: recall, precision and context size")
    lines = ax.get_lines() + tokens.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], loc="center right", fontsize=8)
    fig.tight_layout()
    return fig


def save_plots(result: EvalResult, directory: Path) -> dict[str, Path]:
    """Write the three standard figures as PNG; returns name -> path."""
    out: dict[str, Path] = {}
    for name, make in (("recall_at_k", plot_recall_at_k), ("token_budget", plot_token_budget),
                       ("by_category", plot_by_category)):
        path = directory / f"{name}.png"
        make(result).savefig(path)
        out[name] = path
    return out
