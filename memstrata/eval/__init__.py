"""Recall-quality evaluation: LoCoMo-format and JSONL datasets, retrieval metrics, reports.

::

    from memstrata.eval import EvalConfig, evaluate, load_dataset

    result = evaluate(load_dataset("locomo_dev.json"), EvalConfig(k=(1, 5, 10)))
    print(result.to_markdown())
    result.save("eval-out")          # results.json, report.md, PNG plots

The command line does the same: ``memstrata eval DATA --out DIR``.
See ``docs/eval.md`` for the JSONL format and how to read the report.
"""

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
from memstrata.eval._report import explain, summary_table
from memstrata.eval._result import EvalResult, QuestionResult, RetrieverRun, RetrieverSummary
from memstrata.eval._retrievers import (
    BASELINES,
    DenseRetriever,
    HybridRetriever,
    KeywordRetriever,
    Ranked,
    Retriever,
    RRFRetriever,
)
from memstrata.eval._run import EvalConfig, Evaluation, evaluate, policy_from
from memstrata.eval._sweeps import SweepPoint, threshold_sweep, top_k_sweep

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
