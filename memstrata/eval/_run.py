"""Run retrievers over an ingested dataset and collect an :class:`EvalResult`.

::

    from memstrata.eval import Evaluation, EvalConfig, load_dataset

    data = load_dataset("locomo_dev.json")
    with Evaluation.open(data, EvalConfig(), cache_dir=".cache") as ev:
        result = ev.evaluate()                       # dense, keyword, rrf, default
        print(result.to_markdown())

Recall is called with ``record_use=False``: a recall normally counts as a use
(it refreshes the record's decay and expiry), which would let the order of
the questions change the answers. All questions are embedded up front in one
batch (the embedder caches them), so the per-query latency recorded here is
the ranking alone; the benchmark measures it with the embedding.
"""

from __future__ import annotations

import time
import tomllib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from memstrata import __version__
from memstrata.errors import InvalidSettingError
from memstrata.eval._data import Dataset, Probe
from memstrata.eval._ingest import (
    DEFAULT_CONTEXT,
    DEFAULT_PREVIOUS_WORDS,
    ContextPart,
    IngestedMemory,
    IngestOptions,
    open_ingested,
    phase_bar,
    say,
)
from memstrata.eval._result import EvalResult, QuestionResult, RetrieverRun
from memstrata.eval._retrievers import (
    BASELINES,
    HybridRetriever,
    Retriever,
    builtin_retriever,
)
from memstrata.memory.embedder import Embedder, embed_queries
from memstrata.memory.manager import MemoryManager
from memstrata.policies.retrieval import MAX_TOP_K, RetrievalPolicy
from memstrata.policies.write import WritePolicy
from memstrata.types import MemoryType, Status

__all__ = ["DEFAULT_DEPTH", "EvalConfig", "Evaluation", "evaluate", "policy_from"]

#: how deep each ranked list is read (MRR, token curves, recall@k curves)
DEFAULT_DEPTH = 50

_DESCRIPTIONS = {
    "dense": "cosine similarity of the query embedding only",
    "keyword": "BM25 only",
    "rrf": "reciprocal rank fusion of dense and BM25 (k=60)",
    "default": "MemoryManager.recall with the configured retrieval policy",
}


def policy_from(overrides: dict[str, Any], base: RetrievalPolicy | None = None
                ) -> RetrievalPolicy:
    """A :class:`RetrievalPolicy` from JSON-able overrides.

    Plain fields by name (``dense_weight``, ``min_relevance``, ...);
    ``half_life_days`` maps a memory type to days (``null``, or ``"none"`` in TOML:
    no decay);
    ``status_weight`` maps a status to a weight.
    """
    base = base or RetrievalPolicy()
    values: dict[str, Any] = {}
    fields = set(RetrievalPolicy.__dataclass_fields__) - {"half_life", "status_weight"}
    try:
        for key, value in overrides.items():
            if key == "half_life_days":
                values["half_life"] = {
                    MemoryType(t): None if _no_decay(d) else timedelta(days=float(d))
                    for t, d in dict(value).items()
                }
            elif key == "status_weight":
                values["status_weight"] = {Status(s): float(w) for s, w in dict(value).items()}
            elif key in fields:
                values[key] = value
            else:
                raise InvalidSettingError(
                    f"unknown retrieval setting {key!r}; known: "
                    f"{sorted(fields | {'half_life_days', 'status_weight'})}"
                )
        return replace(base, **values)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InvalidSettingError):
            raise
        raise InvalidSettingError(f"invalid retrieval settings: {exc}") from exc


def _no_decay(days: Any) -> bool:
    # TOML has no null: "none" / "never" spell "this type does not decay"
    return days is None or (isinstance(days, str) and days.strip().lower() in ("none", "never"))


class EvalConfig(BaseModel):
    """What to measure and how to ingest; loadable from TOML or JSON (``--config``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: cut-offs reported in the tables
    k: tuple[int, ...] = (1, 5, 10)
    #: how deep each retriever's ranked list is read
    depth: int = Field(default=DEFAULT_DEPTH, ge=1, le=MAX_TOP_K)
    #: built-in retrievers to compare (dense, keyword, rrf, default)
    retrievers: tuple[str, ...] = BASELINES
    #: extra hybrid retrievers: name -> retrieval overrides (see ``policy_from``)
    variants: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: overrides of the manager's retrieval policy (applies to ``default``)
    retrieval: dict[str, Any] = Field(default_factory=dict)
    bm25_k1: float | None = Field(default=None, ge=0)
    bm25_b: float | None = Field(default=None, ge=0, le=1)
    #: ingest: what is indexed as each turn's context
    context: tuple[ContextPart, ...] = DEFAULT_CONTEXT
    previous_words: int = Field(default=DEFAULT_PREVIOUS_WORDS, ge=1)
    memory_type: MemoryType = MemoryType.EVENT
    #: ingest through the production write policy (drops small talk) instead of keeping all
    write_policy: str = Field(default="keep_all", pattern="^(keep_all|default)$")
    #: give records their type's TTL (default: no expiry during the evaluation)
    expire: bool = False
    #: LoCoMo: append shared images' captions to the turn text
    include_captions: bool = True
    #: probe categories left out (default: LoCoMo's 5, nothing for JSONL)
    exclude_categories: tuple[str, ...] | None = None
    #: evaluate on a subset
    conversations: int | None = Field(default=None, ge=1)
    probes_per_conversation: int | None = Field(default=None, ge=1)
    bootstrap: int = Field(default=1000, ge=0)
    seed: int = 0
    #: records per question kept in results.json (the failure browser)
    keep_retrieved: int = Field(default=10, ge=0)

    @field_validator("k")
    @classmethod
    def _ks(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or any(k < 1 or k > MAX_TOP_K for k in value):
            raise ValueError(f"k values must be in 1..{MAX_TOP_K}")
        return tuple(sorted(set(value)))

    @field_validator("retrievers")
    @classmethod
    def _retrievers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [r for r in value if r not in BASELINES]
        if unknown:
            raise ValueError(f"unknown retrievers {unknown}; built-in: {list(BASELINES)}")
        return value

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> EvalConfig:
        """Read a TOML (``.toml``) or JSON config; ``overrides`` win over the file."""
        import json

        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            raw = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
        except FileNotFoundError as exc:
            raise InvalidSettingError(f"config file not found: {path}") from exc
        except (OSError, ValueError) as exc:
            raise InvalidSettingError(f"cannot read config {path}: {exc}") from exc
        if not isinstance(raw, dict):
            raise InvalidSettingError(f"config {path} must be a table / object")
        return cls.build(**{**raw, **overrides})

    @classmethod
    def build(cls, **values: Any) -> EvalConfig:
        try:
            config = cls(**values)
        except PydanticValidationError as exc:
            raise InvalidSettingError(f"invalid evaluation config: {exc}") from exc
        config.policy()  # validate the overrides now, not after ingesting
        for overrides in config.variants.values():
            policy_from(overrides, config.policy())
        return config

    def ingest_options(self) -> IngestOptions:
        return IngestOptions(
            context=self.context,
            previous_words=self.previous_words,
            memory_type=self.memory_type,
            write_policy=WritePolicy() if self.write_policy == "default"
            else WritePolicy(drop_small_talk=False),
            expire=self.expire,
        )

    def policy(self) -> RetrievalPolicy:
        return policy_from(self.retrieval)

    def build_retrievers(self) -> list[Retriever]:
        out = [builtin_retriever(name) for name in self.retrievers]
        base = self.policy()
        for name, overrides in self.variants.items():
            out.append(HybridRetriever(name=name, policy=policy_from(overrides, base)))
        return out


class Evaluation:
    """An ingested dataset, ready to run retrievers on; see the module docstring."""

    def __init__(self, dataset: Dataset, ingested: IngestedMemory, config: EvalConfig,
                 *, progress: bool = True) -> None:
        self.dataset = dataset
        self.ingested = ingested
        self.config = config
        self.progress = progress
        self._tokens: dict[tuple[str, str], int] = {}
        self._warm()

    @classmethod
    @contextmanager
    def open(
        cls,
        dataset: Dataset,
        config: EvalConfig | None = None,
        *,
        embedder: Embedder | None = None,
        cache_dir: str | Path | None = None,
        progress: bool = True,
    ) -> Iterator[Evaluation]:
        """Ingest ``dataset`` (or reuse the cache) and yield an :class:`Evaluation`."""
        config = config or EvalConfig()
        if config.conversations or config.probes_per_conversation:
            dataset = dataset.subset(conversations=config.conversations,
                                     probes_per_conversation=config.probes_per_conversation,
                                     seed=config.seed)
        with open_ingested(
            dataset, config.ingest_options(), embedder=embedder, cache_dir=cache_dir,
            retrieval=config.policy(), bm25_k1=config.bm25_k1, bm25_b=config.bm25_b,
            progress=progress,
        ) as ingested:
            yield cls(dataset, ingested, config, progress=progress)

    @property
    def memory(self) -> MemoryManager:
        return self.ingested.memory

    def _warm(self) -> None:
        questions = [p.question for c in self.dataset.conversations for p in c.probes]
        if questions:
            say(self.progress, f"embedding {len(questions):,} questions")
            embed_queries(self.memory.embedder, questions)

    def _count(self, user: str, record_id: str) -> int:
        key = (user, record_id)
        if key not in self._tokens:
            content = self.ingested.report.users[user].record_content.get(record_id)
            if content is None:
                content = self.memory.get(user, record_id).content
            self._tokens[key] = self.memory.embedder.count_tokens(content)
        return self._tokens[key]

    def _question(self, retriever: Retriever, user: str, probe: Probe, depth: int
                  ) -> QuestionResult:
        report = self.ingested.report.users[user]
        started = time.perf_counter()
        items = retriever.retrieve(self.memory, user, probe.question, depth)
        latency = (time.perf_counter() - started) * 1000.0
        items = items[:depth]
        first_rank: dict[str, int] = {}
        cumulative: list[int] = []
        total = 0
        for rank, item in enumerate(items, start=1):
            first_rank.setdefault(item.record_id, rank)
            total += self._count(user, item.record_id)
            cumulative.append(total)
        ranks: list[int | None] = []
        tokens: list[int | None] = []
        groups: Counter[str] = Counter()
        for turn_id in probe.evidence_ids:
            record = report.turn_record.get(turn_id)
            groups[record if record is not None else f"unstored:{turn_id}"] += 1
            found = None if record is None else first_rank.get(record)
            ranks.append(found)
            tokens.append(None if found is None else cumulative[found - 1])
        evidence = set(probe.evidence_ids)
        relevant = tuple(
            bool(evidence.intersection(report.record_turns.get(i.record_id, ())))
            for i in items
        )
        return QuestionResult(
            probe_id=probe.id, user=user, question=probe.question, category=probe.category,
            evidence_ids=probe.evidence_ids, evidence_ranks=tuple(ranks),
            evidence_tokens=tuple(tokens), ideal_gains=tuple(groups.values()),
            retrieved=tuple(items), relevant=relevant, cumulative_tokens=tuple(cumulative),
            latency_ms=latency,
            answer=probe.answer,
        )

    def run(self, retriever: Retriever, *, depth: int | None = None,
            description: str | None = None) -> RetrieverRun:
        """Ask every probe of the dataset through ``retriever``."""
        depth = depth or self.config.depth
        probes = [(c.user, p) for c in self.dataset.conversations for p in c.probes]
        questions: list[QuestionResult] = []
        with phase_bar(self.progress, len(probes), f"recall {retriever.name}", "question") as bar:
            for user, p in probes:
                questions.append(self._question(retriever, user, p, depth))
                bar.advance(1)
        if description is None:
            description = _DESCRIPTIONS.get(retriever.name, type(retriever).__name__)
            if isinstance(retriever, HybridRetriever) and retriever.policy is not None:
                description = f"recall with {retriever.policy!r}"
        return RetrieverRun(retriever.name, description, tuple(questions), depth)

    def result(self, runs: Sequence[RetrieverRun]) -> EvalResult:
        """Bundle runs with what the data and the ingest were."""
        ds = self.dataset
        report = self.ingested.report
        records: dict[str, dict[str, dict[str, Any]]] = {}
        for user, u in report.users.items():
            records[user] = {
                rid: {"turns": turns, "content": u.record_content.get(rid, "")}
                for rid, turns in u.record_turns.items()
            }
        return EvalResult(
            dataset={
                "name": ds.name, "format": ds.format,
                "conversations": len(ds.conversations), "turns": ds.n_turns,
                "probes": ds.n_probes, "fingerprint": ds.fingerprint(),
                "load_report": ds.report.to_dict(),
            },
            ingest={
                "options": report.options, "outcomes": report.outcomes,
                "seconds": round(report.seconds, 2), "cached": report.cached,
                "embedder": report.embedder,
            },
            config={**self.config.model_dump(mode="json"), "memstrata": __version__},
            ks=self.config.k,
            runs=tuple(runs),
            records=records,
            category_names=dict(ds.category_names),
            n_boot=self.config.bootstrap,
            seed=self.config.seed,
            keep_retrieved=self.config.keep_retrieved,
        )

    def evaluate(self, retrievers: Sequence[Retriever] | None = None) -> EvalResult:
        """Run ``retrievers`` (default: the config's) and return the result."""
        chosen = list(retrievers) if retrievers is not None else self.config.build_retrievers()
        names = [r.name for r in chosen]
        if len(set(names)) != len(names):
            raise InvalidSettingError(f"retriever names must be unique: {names}")
        return self.result([self.run(r) for r in chosen])


def evaluate(
    dataset: Dataset,
    config: EvalConfig | None = None,
    *,
    retrievers: Sequence[Retriever] | None = None,
    embedder: Embedder | None = None,
    cache_dir: str | Path | None = None,
    progress: bool = True,
) -> EvalResult:
    """Ingest ``dataset`` and compare ``retrievers`` on it (one call)."""
    with Evaluation.open(dataset, config, embedder=embedder, cache_dir=cache_dir,
                         progress=progress) as ev:
        return ev.evaluate(retrievers)
