"""Run an exported sentence-transformers model with ONNX Runtime and ``tokenizers`` only.

No torch, transformers or sentence-transformers is imported here: this is what lets a
process reach its first recall in about a second instead of 11-40 s. The pipeline is
the sentence-transformers one for a ``Transformer -> Pooling(mean) [-> Normalize]``
model, rebuilt from the model folder's own files:

* ``tokenizer.json`` through the ``tokenizers`` package, its own padding and truncation
  replaced by sentence-transformers' (``max_seq_length`` from
  ``sentence_bert_config.json``, longest-first truncation, padding to the longest text
  of each batch - MiniLM's ``tokenizer.json`` says "pad everything to 128", which
  sentence-transformers never does);
* the exported graph (:mod:`memstrata.memory._onnx`), which contains the transformer,
  attention-mask mean pooling and L2 normalisation, so padded positions never count.

Batches are sorted by length before they are cut into chunks, as sentence-transformers
does, so a chunk pads to a length close to its texts'. Whether the graph reproduces
PyTorch is checked when it is exported, and again (two probe vectors) when it is loaded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memstrata.memory.embedder import Vectors

__all__ = ["ModelSpec", "OnnxEncoder", "cpu_session", "read_spec"]

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What the ONNX pipeline needs to know about a model folder."""

    path: Path
    dim: int
    max_seq_length: int
    do_lower_case: bool

    @property
    def tokenizer_file(self) -> Path:
        return self.path / "tokenizer.json"


def read_spec(model_dir: Path) -> ModelSpec | None:
    """The folder's layout if it is one this pipeline reproduces, else None.

    Only ``Transformer -> Pooling(mean only) [-> Normalize]`` with a ``tokenizer.json``
    qualifies; anything else (CLS pooling, a Dense layer, prompts) stays on PyTorch.
    """
    try:
        modules = json.loads((model_dir / "modules.json").read_text())
        types = [str(m["type"]) for m in modules]
        if types[:2] != [_TRANSFORMER, _POOLING] or types[2:] not in ([], [_NORMALIZE]):
            return None
        if str(modules[0].get("path", "")) not in ("", "."):
            return None
        pooling = json.loads((model_dir / str(modules[1]["path"]) / "config.json").read_text())
        flags = {k: v for k, v in pooling.items() if k.startswith("pooling_mode")}
        if flags.get("pooling_mode_mean_tokens") is not True or any(
                v for k, v in flags.items() if k != "pooling_mode_mean_tokens"):
            return None
        if pooling.get("include_prompt") is False:
            return None
        bert = json.loads((model_dir / "sentence_bert_config.json").read_text())
        max_len = int(bert["max_seq_length"])
        if not (model_dir / "tokenizer.json").is_file():
            return None
        return ModelSpec(path=model_dir, dim=int(pooling["word_embedding_dimension"]),
                         max_seq_length=max_len,
                         do_lower_case=bool(bert.get("do_lower_case", False)))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


class OnnxEncoder:
    """Tokenizer plus ONNX Runtime sessions for one exported model.

    Single texts run on a one-thread session (two-thread single encodes stalled on
    a shared machine). Large batches get their own session with ``batch_threads``
    threads, built the first time one arrives. ``run`` is thread-safe: ONNX Runtime
    sessions are, and the tokenizer is only read.
    """

    def __init__(self, spec: ModelSpec, model: bytes | Path, *, batch_size: int = 64,
                 batch_threads: int = 1, batch_threads_min: int = 16,
                 optimized: bool = False) -> None:
        from tokenizers import Tokenizer

        self.spec = spec
        # a path lets ONNX Runtime read the file itself (faster than handing it bytes)
        self._model: bytes | str = str(model) if isinstance(model, Path) else model
        #: the model was saved already optimised: building a session skips the graph passes
        self._optimized = optimized
        self._batch_size = batch_size
        self._batch_threads = batch_threads
        self._batch_threads_min = batch_threads_min
        tokenizer = Tokenizer.from_file(str(spec.tokenizer_file))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=spec.max_seq_length)
        self._tokenizer = tokenizer
        self._counter: Any = None
        self._single = self._session(1)
        self._batch: Any = self._single if batch_threads <= 1 else None
        self._lock = threading.Lock()
        self._inputs = [i.name for i in self._single.get_inputs()]
        missing = set(self._inputs) - set(_INPUTS)
        if missing:
            raise ValueError(f"unexpected ONNX inputs: {sorted(missing)}")

    def _session(self, threads: int) -> Any:
        return cpu_session(self._model, threads=threads, optimized=self._optimized)

    def _batch_session(self) -> Any:
        if self._batch is None:
            with self._lock:
                if self._batch is None:
                    self._batch = self._session(self._batch_threads)
        return self._batch

    def count_tokens(self, text: str) -> int:
        """Tokens without special tokens and without truncation (as the HF tokenizer)."""
        if self._counter is None:
            from tokenizers import Tokenizer

            counter = Tokenizer.from_file(str(self.spec.tokenizer_file))
            counter.no_padding()
            counter.no_truncation()
            self._counter = counter
        return len(self._counter.encode(self._prepare(text), add_special_tokens=False).ids)

    def _prepare(self, text: str) -> str:
        return text.lower() if self.spec.do_lower_case else text

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids the model sees (for the export check against the PyTorch tokenizer)."""
        return [e.ids for e in self._tokenizer.encode_batch([self._prepare(t) for t in texts])]

    def encode(self, texts: Sequence[str]) -> Vectors:
        """float32 ``(len(texts), dim)``, unit rows, in the order given."""
        out = np.empty((len(texts), self.spec.dim), dtype=np.float32)
        if not texts:
            return out
        if len(texts) == 1:
            out[:] = self._run(self._single, [self._prepare(texts[0])])
            return out
        session = (self._batch_session() if len(texts) >= self._batch_threads_min
                   else self._single)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start:start + self._batch_size]
            out[chunk] = self._run(session, [self._prepare(texts[i]) for i in chunk])
        return out

    def _run(self, session: Any, texts: list[str]) -> Vectors:
        encodings = (self._tokenizer.encode_batch(texts) if len(texts) > 1
                     else [self._tokenizer.encode(texts[0])])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        types = np.zeros((len(texts), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = 1
            types[row, :n] = e.type_ids
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        result = session.run(None, {name: arrays[name] for name in self._inputs})[0]
        return np.asarray(result, dtype=np.float32)


def cpu_session(model: Any, *, threads: int, optimized: bool) -> Any:
    """An ONNX Runtime CPU session of ``model`` (a path or bytes) on ``threads`` threads;
    ``optimized``: the graph was saved optimised, so it is loaded with optimisation off."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL if optimized
        else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    options.log_severity_level = 3  # errors only: nothing on stderr when all is well
    if threads > 1:  # no busy-waiting workers: the cores are shared with the caller
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
