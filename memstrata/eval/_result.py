"""Typed evaluation results: per question, per retriever, and their summaries.

:class:`EvalResult` renders to JSON (:meth:`EvalResult.to_dict` /
:meth:`EvalResult.save`, readable back with :meth:`EvalResult.load`), a
markdown report (:meth:`EvalResult.to_markdown`) and PNG plots
(:mod:`memstrata.eval._plots`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from memstrata.eval._metrics import (
    DEFAULT_BOOTSTRAP,
    Estimate,
    bootstrap_mean,
    bootstrap_paired_difference,
    hit_at,
    mrr,
    ndcg_at,
    recall_at,
)
from memstrata.eval._retrievers import Ranked
from memstrata.policies.language import language_of

__all__ = [
    "DEFAULT_TOKEN_BUDGETS",
    "EvalResult",
    "QuestionResult",
    "RetrieverRun",
    "RetrieverSummary",
]

DEFAULT_TOKEN_BUDGETS: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """What one retriever returned for one probe, reduced to what the metrics need."""

    probe_id: str
    user: str
    question: str
    category: str | None
    evidence_ids: tuple[str, ...]
    #: 1-based rank of the record covering each evidence turn (None: not within the depth)
    evidence_ranks: tuple[int | None, ...]
    #: context tokens read up to and including that record (None: not reached)
    evidence_tokens: tuple[int | None, ...]
    #: evidence turns per evidence record, for the ideal DCG
    ideal_gains: tuple[int, ...]
    retrieved: tuple[Ranked, ...]
    #: does the record at each retrieved position cover an evidence turn?
    relevant: tuple[bool, ...]
    #: context tokens of the retrieved records up to and including each position
    cumulative_tokens: tuple[int, ...]
    latency_ms: float
    answer: str | None = None
    kind: Literal["question_result"] = "question_result"

    def recall(self, k: int) -> float:
        return recall_at(self.evidence_ranks, k)

    def hit(self, k: int) -> float:
        return hit_at(self.evidence_ranks, k)

    def ndcg(self, k: int) -> float:
        return ndcg_at(self.evidence_ranks, self.ideal_gains, k)

    @property
    def mrr(self) -> float:
        return mrr(self.evidence_ranks)

    @property
    def tokens_to_all(self) -> int | None:
        """Context tokens needed to reach every evidence turn (None: not all reached)."""
        if any(t is None for t in self.evidence_tokens):
            return None
        return max(t for t in self.evidence_tokens if t is not None)

    @property
    def tokens_to_first(self) -> int | None:
        found = [t for t in self.evidence_tokens if t is not None]
        return min(found) if found else None

    def recall_within(self, tokens: int) -> float:
        """Share of evidence reached within a context budget of ``tokens``."""
        got = sum(1 for t in self.evidence_tokens if t is not None and t <= tokens)
        return got / len(self.evidence_tokens)

    def to_dict(self, keep: int) -> dict[str, Any]:
        return {
            "probe": self.probe_id,
            "user": self.user,
            "question": self.question,
            "category": self.category,
            "answer": self.answer,
            "evidence": list(self.evidence_ids),
            "ranks": list(self.evidence_ranks),
            "tokens": list(self.evidence_tokens),
            "ideal_gains": list(self.ideal_gains),
            "latency_ms": round(self.latency_ms, 4),
            "retrieved": [
                {"id": r.record_id, "score": round(r.score, 6),
                 "relevance": None if r.relevance is None else round(r.relevance, 6),
                 "parts": {k: round(v, 6) for k, v in r.parts.items()},
                 "relevant": rel, "tokens": tok}
                for r, rel, tok in list(zip(self.retrieved, self.relevant,
                                            self.cumulative_tokens, strict=True))[:keep]
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionResult:
        items = data["retrieved"]
        return cls(
            probe_id=data["probe"], user=data["user"], question=data["question"],
            category=data["category"], evidence_ids=tuple(data["evidence"]),
            evidence_ranks=tuple(data["ranks"]), evidence_tokens=tuple(data["tokens"]),
            ideal_gains=tuple(data["ideal_gains"]),
            retrieved=tuple(
                Ranked(r["id"], r["score"], r["relevance"], dict(r["parts"])) for r in items
            ),
            relevant=tuple(bool(r["relevant"]) for r in items),
            cumulative_tokens=tuple(int(r["tokens"]) for r in items),
            latency_ms=float(data["latency_ms"]), answer=data.get("answer"),
        )


@dataclass(frozen=True, slots=True)
class RetrieverRun:
    """One retriever over every probe of the dataset."""

    name: str
    description: str
    questions: tuple[QuestionResult, ...]
    depth: int

    def values(self, metric: str, questions: Sequence[QuestionResult] | None = None
               ) -> np.ndarray:
        """Per-question values of ``recall@k``, ``hit@k``, ``ndcg@k`` or ``mrr``."""
        return np.array([_metric(metric)(q) for q in (questions or self.questions)])

    def recall_curve(self, ks: Iterable[int]) -> list[float]:
        return [float(self.values(f"recall@{k}").mean()) for k in ks]

    def token_curve(self, budgets: Iterable[int]) -> list[float]:
        """Mean share of evidence reached within each context-token budget."""
        return [float(np.mean([q.recall_within(b) for q in self.questions])) for b in budgets]

    def latency(self) -> dict[str, float]:
        lat = np.array([q.latency_ms for q in self.questions])
        if lat.size == 0:
            return {"p50_ms": math.nan, "p95_ms": math.nan, "mean_ms": math.nan}
        return {"p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
                "mean_ms": float(lat.mean())}


def _metric(name: str) -> Callable[[QuestionResult], float]:
    if name == "mrr":
        return lambda q: q.mrr
    kind, _, k_text = name.partition("@")
    if not k_text.isdigit() or kind not in ("recall", "hit", "ndcg"):
        raise ValueError(f"unknown metric {name!r}: use recall@k, hit@k, ndcg@k or mrr")
    k = int(k_text)
    if kind == "recall":
        return lambda q: q.recall(k)
    if kind == "hit":
        return lambda q: q.hit(k)
    return lambda q: q.ndcg(k)


@dataclass(frozen=True, slots=True)
class RetrieverSummary:
    """Aggregates of one retriever: overall, per category, per conversation."""

    name: str
    description: str
    overall: dict[str, Estimate]
    by_category: dict[str, dict[str, Estimate]]
    by_conversation: dict[str, dict[str, Estimate]]
    latency: dict[str, float]
    #: median tokens to reach all evidence (over questions where it was reached)
    tokens_to_all_median: float | None
    #: share of questions whose evidence was all reached within the depth
    all_reached: float
    token_curve: dict[int, float]
    #: per language of the question (script detection, :func:`language_of`)
    by_language: dict[str, dict[str, Estimate]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def block(d: dict[str, Estimate]) -> dict[str, Any]:
            return {k: v.to_dict() for k, v in d.items()}

        return {
            "name": self.name,
            "description": self.description,
            "overall": block(self.overall),
            "by_category": {c: block(m) for c, m in self.by_category.items()},
            "by_conversation": {c: block(m) for c, m in self.by_conversation.items()},
            "by_language": {c: block(m) for c, m in self.by_language.items()},
            "latency": self.latency,
            "tokens_to_all_median": self.tokens_to_all_median,
            "all_reached": self.all_reached,
            "token_curve": {str(k): v for k, v in self.token_curve.items()},
        }


@dataclass
class EvalResult:
    """Everything one evaluation measured; render with ``to_markdown`` / ``save``."""

    dataset: dict[str, Any]
    ingest: dict[str, Any]
    config: dict[str, Any]
    ks: tuple[int, ...]
    runs: tuple[RetrieverRun, ...]
    #: user -> record id -> {"turns": [...], "content": ...}
    records: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    category_names: dict[str, str] = field(default_factory=dict)
    n_boot: int = DEFAULT_BOOTSTRAP
    seed: int = 0
    token_budgets: tuple[int, ...] = DEFAULT_TOKEN_BUDGETS
    keep_retrieved: int = 10

    # ------------------------------------------------------------ access

    def run(self, name: str) -> RetrieverRun:
        for r in self.runs:
            if r.name == name:
                return r
        raise KeyError(f"no retriever {name!r}; have {[r.name for r in self.runs]}")

    @property
    def metrics(self) -> list[str]:
        names = []
        for kind in ("recall", "hit", "ndcg"):
            names += [f"{kind}@{k}" for k in self.ks]
        return [*names, "mrr"]

    def category_label(self, category: str | None) -> str:
        if category is None:
            return "(none)"
        name = self.category_names.get(category)
        return category if name is None else f"{category} {name}"

    def _estimates(self, run: RetrieverRun, questions: Sequence[QuestionResult]
                   ) -> dict[str, Estimate]:
        return {
            m: bootstrap_mean(run.values(m, questions), n_boot=self.n_boot, seed=self.seed)
            for m in self.metrics
        }

    def summary(self, name: str) -> RetrieverSummary:
        return self._summaries[name]

    @cached_property
    def _summaries(self) -> dict[str, RetrieverSummary]:
        out = {}
        for run in self.runs:
            qs = run.questions
            cats: dict[str, list[QuestionResult]] = {}
            convs: dict[str, list[QuestionResult]] = {}
            langs: dict[str, list[QuestionResult]] = {}
            for q in qs:
                cats.setdefault(q.category or "(none)", []).append(q)
                convs.setdefault(q.user, []).append(q)
                langs.setdefault(language_of(q.question), []).append(q)
            reached = [q.tokens_to_all for q in qs if q.tokens_to_all is not None]
            out[run.name] = RetrieverSummary(
                name=run.name,
                description=run.description,
                overall=self._estimates(run, qs),
                by_category={c: self._estimates(run, v) for c, v in sorted(cats.items())},
                by_conversation={u: self._estimates(run, v) for u, v in convs.items()},
                by_language={g: self._estimates(run, v) for g, v in sorted(langs.items())},
                latency=run.latency(),
                tokens_to_all_median=float(np.median(reached)) if reached else None,
                all_reached=len(reached) / len(qs) if qs else math.nan,
                token_curve=dict(zip(self.token_budgets, run.token_curve(self.token_budgets),
                                     strict=True)),
            )
        return out

    def compare(self, a: str, b: str, metric: str) -> Estimate:
        """Paired bootstrap of ``metric(a) - metric(b)`` over the same questions."""
        ra, rb = self.run(a), self.run(b)
        if [q.probe_id for q in ra.questions] != [q.probe_id for q in rb.questions]:
            raise ValueError("runs were made on different questions")
        return bootstrap_paired_difference(
            ra.values(metric), rb.values(metric), n_boot=self.n_boot, seed=self.seed
        )

    def failures(self, name: str, k: int) -> list[QuestionResult]:
        """Questions whose evidence was not all found within ``k``, worst first."""
        qs = [q for q in self.run(name).questions if q.recall(k) < 1.0]
        return sorted(qs, key=lambda q: (q.recall(k), q.mrr, q.probe_id))

    def content(self, user: str, record_id: str) -> str:
        return str(self.records.get(user, {}).get(record_id, {}).get("content", ""))

    def turns_of(self, user: str, record_id: str) -> list[str]:
        return list(self.records.get(user, {}).get(record_id, {}).get("turns", []))

    # ------------------------------------------------------------ JSON

    def to_dict(self, *, per_question: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": _FORMAT,
            "dataset": self.dataset,
            "ingest": self.ingest,
            "config": self.config,
            "ks": list(self.ks),
            "n_boot": self.n_boot,
            "seed": self.seed,
            "token_budgets": list(self.token_budgets),
            "category_names": self.category_names,
            "summary": {r.name: self.summary(r.name).to_dict() for r in self.runs},
            "comparisons": self.comparisons(),
        }
        if per_question:
            keep_ids: dict[str, set[str]] = {}
            runs = []
            for r in self.runs:
                for q in r.questions:
                    ids = keep_ids.setdefault(q.user, set())
                    ids.update(x.record_id for x in q.retrieved[: self.keep_retrieved])
                runs.append({
                    "name": r.name, "description": r.description, "depth": r.depth,
                    "questions": [q.to_dict(self.keep_retrieved) for q in r.questions],
                })
            out["runs"] = runs
            out["keep_retrieved"] = self.keep_retrieved
            out["records"] = {
                user: {i: recs[i] for i in sorted(keep_ids.get(user, set())) if i in recs}
                for user, recs in self.records.items()
            }
        return out

    def comparisons(self, reference: str = "default") -> dict[str, dict[str, Any]]:
        """``reference`` minus every other retriever, paired, on each recall@k and nDCG."""
        names = [r.name for r in self.runs]
        if reference not in names:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for other in names:
            if other == reference:
                continue
            out[other] = {
                m: self.compare(reference, other, m).to_dict()
                for m in [*(f"recall@{k}" for k in self.ks), f"ndcg@{max(self.ks)}"]
            }
        return out

    def save(self, directory: str | Path, *, plots: bool = True) -> dict[str, Path]:
        """Write ``results.json``, ``report.md`` and (with ``plots``) PNG figures."""
        from memstrata.eval._plots import save_plots

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        figures = save_plots(self, directory) if plots else {}
        paths.update(figures)
        results = directory / "results.json"
        results.write_text(json.dumps(self.to_dict(), indent=1, default=_json_default))
        paths["results"] = results
        report = directory / "report.md"
        report.write_text(self.to_markdown(figures={k: p.name for k, p in figures.items()}))
        paths["report"] = report
        return paths

    @classmethod
    def load(cls, path: str | Path) -> EvalResult:
        """Read a ``results.json`` written by :meth:`save` (retrieved lists are truncated)."""
        data = json.loads(Path(path).read_text())
        if data.get("format") != _FORMAT or "runs" not in data:
            raise ValueError(f"{path} is not a memstrata evaluation result with questions")
        runs = tuple(
            RetrieverRun(r["name"], r["description"],
                         tuple(QuestionResult.from_dict(q) for q in r["questions"]), r["depth"])
            for r in data["runs"]
        )
        return cls(
            dataset=data["dataset"], ingest=data["ingest"], config=data["config"],
            ks=tuple(data["ks"]), runs=runs, records=data.get("records", {}),
            category_names=data.get("category_names", {}), n_boot=data["n_boot"],
            seed=data["seed"], token_budgets=tuple(data["token_budgets"]),
            keep_retrieved=data.get("keep_retrieved", 10),
        )

    # ------------------------------------------------------------ markdown

    def to_markdown(self, *, figures: dict[str, str] | None = None) -> str:
        from memstrata.eval._report import render_markdown

        return render_markdown(self, figures or {})


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")
