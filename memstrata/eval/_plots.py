"""Plots of an evaluation (matplotlib, no display needed).

Each ``plot_*`` function returns a :class:`matplotlib.figure.Figure` built
without pyplot - no global figure state, no backend switching - so a notebook
shows it with ``display(fig)`` and :func:`save_plots` writes PNGs through the
Agg canvas. matplotlib is imported when a plot is made, never at import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstrata.eval._result import EvalResult

__all__ = ["plot_by_category", "plot_recall_at_k", "plot_token_budget", "save_plots"]

_DPI = 110


def _figure(width: float = 6.4, height: float = 4.2) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=_DPI)
    return fig, fig.subplots()


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
    ax.set_ylabel("evidence recall@k")
    ax.set_ylim(0, 1)
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
    ax.set_ylabel("share of evidence within budget")
    ax.set_ylim(0, 1)
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
    ax.set_ylabel(f"evidence recall@{k}")
    ax.set_ylim(0, 1)
    ax.set_title(f"Recall@{k} by category (95% CI)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
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
