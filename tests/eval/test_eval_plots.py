"""Every plot of the evaluation - the report's and the notebook's - is readable on its own:
a title, labelled axes, rates on an axis that starts at 0, integer ticks for k."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memstrata.eval import (
    EvalConfig,
    SweepPoint,
    evaluate,
    load_dataset,
    plot_by_category,
    plot_decay_sweep,
    plot_recall_at_k,
    plot_threshold_sweep,
    plot_token_budget,
    plot_top_k_sweep,
)
from memstrata.memory.embedder import Embedder


def _check(fig: Any, *, integer_x: bool = False) -> None:
    main = fig.axes[0]
    assert main.get_title(), "no title"
    for ax in fig.axes:
        assert ax.get_ylabel(), "an unlabelled y axis"
        low = ax.get_ylim()[0]
        assert low == 0, f"the {ax.get_ylabel()!r} axis starts at {low}"
    assert main.get_xlabel(), "an unlabelled x axis"
    assert main.get_ylim()[1] >= 1  # a rate axis shows the whole 0-1 range
    if integer_x:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig).draw()
        ticks = [t for t in main.get_xticks() if main.get_xlim()[0] <= t <= main.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks


def _points(values: list[float]) -> list[SweepPoint]:
    return [SweepPoint(value=v, recall=0.5 + 0.01 * i, precision=None if i == 0 else 0.3,
                       empty=0.1, returned=3.0, tokens=40.0 * (i + 1))
            for i, v in enumerate(values)]


def test_sweep_plots_have_titles_labels_and_rates_from_zero():
    _check(plot_threshold_sweep(_points([0.0, 0.1, 0.2, 0.3]), k=5, default=0.25))
    _check(plot_decay_sweep({0.5: [("30", 0.6, 0.5), ("none", 0.7, 0.55)],
                             0.8: [("30", 0.68, 0.58), ("none", 0.7, 0.6)]}))
    fig = plot_top_k_sweep(_points([float(k) for k in range(1, 8)]))
    _check(fig, integer_x=True)
    assert fig.axes[1].get_ylabel() == "mean context tokens returned"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Any:
    from tests.eval.conftest import TINY_PROBES, TINY_TURNS

    path = tmp_path_factory.mktemp("plots") / "tiny.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [*TINY_TURNS, *TINY_PROBES]) + "\n")
    return evaluate(load_dataset(path), EvalConfig.build(k=(1, 3), depth=10, bootstrap=20),
                    embedder=embedder, progress=False)


def test_result_plots_have_titles_labels_rates_from_zero_and_integer_k(result: Any,
                                                                       tmp_path: Path):
    _check(plot_recall_at_k(result, max_k=7), integer_x=True)
    _check(plot_token_budget(result, max_tokens=256))
    _check(plot_by_category(result))
    paths = result.save(tmp_path / "out")
    assert (tmp_path / "out" / "recall_at_k.png").is_file() and paths
