"""Recall-quality evaluation: LoCoMo-format and JSONL datasets, retrieval metrics, reports.

::

    from memstrata.eval import EvalConfig, evaluate, load_dataset

    result = evaluate(load_dataset("locomo_dev.json"), EvalConfig(k=(1, 5, 10)))
    print(result.to_markdown())
    result.save("eval-out")          # results.json, report.md, PNG plots

The command line does the same: ``memstrata eval DATA --out DIR``.
See ``docs/eval.md`` for the JSONL format and how to read the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memstrata._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from memstrata.eval._data import (
        LOCOMO_CATEGORIES,
        Conversation,
        Dataset,
        LoadReport,
        MissingEvidence,
        Probe,
        Turn,
        load_dataset,
        load_jsonl,
        load_locomo,
    )
    from memstrata.eval._ingest import (
        DEFAULT_CONTEXT,
        EVAL_WRITE_POLICY,
        IngestedMemory,
        IngestOptions,
        IngestReport,
        open_ingested,
        turn_context,
    )
    from memstrata.eval._metrics import (
        Estimate,
        bootstrap_mean,
        bootstrap_paired_difference,
        hit_at,
        mrr,
        ndcg_at,
        recall_at,
    )
    from memstrata.eval._plots import (
        plot_by_category,
        plot_decay_sweep,
        plot_recall_at_k,
        plot_threshold_sweep,
        plot_token_budget,
        plot_top_k_sweep,
    )
    from memstrata.eval._report import (
        explain,
        summary_table,
    )
    from memstrata.eval._result import (
        EvalResult,
        QuestionResult,
        RetrieverRun,
        RetrieverSummary,
    )
    from memstrata.eval._retrievers import (
        BASELINES,
        DenseRetriever,
        HybridRetriever,
        KeywordRetriever,
        Ranked,
        Retriever,
        RRFRetriever,
    )
    from memstrata.eval._run import (
        EvalConfig,
        Evaluation,
        evaluate,
        policy_from,
    )
    from memstrata.eval._sweeps import (
        SweepPoint,
        threshold_sweep,
        top_k_sweep,
    )

#: where each name lives: imported on first use, so the command line (``memstrata
#: --help``) and the modules that need one name do not import the whole package
_WHERE = {
    "LOCOMO_CATEGORIES": "memstrata.eval._data",
    "Conversation": "memstrata.eval._data",
    "Dataset": "memstrata.eval._data",
    "LoadReport": "memstrata.eval._data",
    "MissingEvidence": "memstrata.eval._data",
    "Probe": "memstrata.eval._data",
    "Turn": "memstrata.eval._data",
    "load_dataset": "memstrata.eval._data",
    "load_jsonl": "memstrata.eval._data",
    "load_locomo": "memstrata.eval._data",
    "DEFAULT_CONTEXT": "memstrata.eval._ingest",
    "EVAL_WRITE_POLICY": "memstrata.eval._ingest",
    "IngestedMemory": "memstrata.eval._ingest",
    "IngestOptions": "memstrata.eval._ingest",
    "IngestReport": "memstrata.eval._ingest",
    "open_ingested": "memstrata.eval._ingest",
    "turn_context": "memstrata.eval._ingest",
    "Estimate": "memstrata.eval._metrics",
    "bootstrap_mean": "memstrata.eval._metrics",
    "bootstrap_paired_difference": "memstrata.eval._metrics",
    "hit_at": "memstrata.eval._metrics",
    "mrr": "memstrata.eval._metrics",
    "ndcg_at": "memstrata.eval._metrics",
    "recall_at": "memstrata.eval._metrics",
    "plot_by_category": "memstrata.eval._plots",
    "plot_decay_sweep": "memstrata.eval._plots",
    "plot_recall_at_k": "memstrata.eval._plots",
    "plot_threshold_sweep": "memstrata.eval._plots",
    "plot_token_budget": "memstrata.eval._plots",
    "plot_top_k_sweep": "memstrata.eval._plots",
    "explain": "memstrata.eval._report",
    "summary_table": "memstrata.eval._report",
    "EvalResult": "memstrata.eval._result",
    "QuestionResult": "memstrata.eval._result",
    "RetrieverRun": "memstrata.eval._result",
    "RetrieverSummary": "memstrata.eval._result",
    "BASELINES": "memstrata.eval._retrievers",
    "DenseRetriever": "memstrata.eval._retrievers",
    "HybridRetriever": "memstrata.eval._retrievers",
    "KeywordRetriever": "memstrata.eval._retrievers",
    "Ranked": "memstrata.eval._retrievers",
    "Retriever": "memstrata.eval._retrievers",
    "RRFRetriever": "memstrata.eval._retrievers",
    "EvalConfig": "memstrata.eval._run",
    "Evaluation": "memstrata.eval._run",
    "evaluate": "memstrata.eval._run",
    "policy_from": "memstrata.eval._run",
    "SweepPoint": "memstrata.eval._sweeps",
    "threshold_sweep": "memstrata.eval._sweeps",
    "top_k_sweep": "memstrata.eval._sweeps",
}

__all__ = [
    "BASELINES",
    "DEFAULT_CONTEXT",
    "EVAL_WRITE_POLICY",
    "LOCOMO_CATEGORIES",
    "Conversation",
    "Dataset",
    "DenseRetriever",
    "Estimate",
    "EvalConfig",
    "EvalResult",
    "Evaluation",
    "HybridRetriever",
    "IngestOptions",
    "IngestReport",
    "IngestedMemory",
    "KeywordRetriever",
    "LoadReport",
    "MissingEvidence",
    "Probe",
    "QuestionResult",
    "RRFRetriever",
    "Ranked",
    "Retriever",
    "RetrieverRun",
    "RetrieverSummary",
    "SweepPoint",
    "Turn",
    "bootstrap_mean",
    "bootstrap_paired_difference",
    "evaluate",
    "explain",
    "hit_at",
    "load_dataset",
    "load_jsonl",
    "load_locomo",
    "mrr",
    "ndcg_at",
    "open_ingested",
    "plot_by_category",
    "plot_decay_sweep",
    "plot_recall_at_k",
    "plot_threshold_sweep",
    "plot_token_budget",
    "plot_top_k_sweep",
    "policy_from",
    "recall_at",
    "summary_table",
    "threshold_sweep",
    "top_k_sweep",
    "turn_context",
]


__getattr__ = _lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
