"""The ONNX export of a sentence-transformers model: made once, checked, cached.

The export is the model's transformer plus attention-mask mean pooling and L2
normalisation, traced from the loaded sentence-transformers model (the exporter is
PyTorch; the runtime, :mod:`memstrata.memory._onnx_embedder`, needs neither). It is made
by ``python -m memstrata.memory.export`` at set-up, or on first use, and cached in
``$XDG_CACHE_HOME/memstrata/models/`` (default ``~/.cache/memstrata/models``;
``MEMSTRATA_MODEL_CACHE`` overrides); nothing is downloaded.

A cache entry is a folder ``<model>-<key>/`` holding ``model.onnx`` and
``manifest.json``. The key hashes the model's identity (names, sizes and modification
times of its files, the contents of the small ones), the onnxruntime and tokenizers
versions and this module's format, so a changed model or runtime looks under another
key and never finds a stale export. The manifest is written last and records the
identity, the versions, the SHA-256 of ``model.onnx`` and the verification: before it
is written, the export - run through the very pipeline used at run time - must give the
PyTorch token ids and vectors (cosine >= 0.9999999, computed in float64) for a fixed
set of texts, one at a time and as padded batches, including texts cut by truncation.

``model.onnx`` is saved with ONNX Runtime's (extended) graph optimisations applied, so
a session on it skips those passes. Loading re-checks the identity, the versions, the
file's size and SHA-256 (read on a thread while the session is built, ~0.1 s for the
90 MB MiniLM) and two recorded probe vectors. An entry that fails any check (a
truncated or bit-flipped file, a foreign manifest) is deleted, with a warning on the
``memstrata`` logger that says why; the caller then exports again or stays on PyTorch -
a corrupt cache never reaches the caller as an ONNX Runtime error.

Loading marks an entry used (its manifest's time); a new export keeps the
:data:`KEEP_OTHERS` most recently used other entries of the same model (other
environments on the machine) and deletes older ones, so a cache shared by many
environments does not grow by ~90 MB with each.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from memstrata._ort import ort_errors
from memstrata.memory._onnx_embedder import ModelSpec, OnnxEncoder

__all__ = ["MIN_COSINE", "default_cache_dir", "entry_dir", "export", "load", "writable"]

FORMAT = 4  # 4: the graph is saved optimised (3: short load probes)
#: other entries of a model a new export keeps (the most recently used)
KEEP_OTHERS = 2
log = logging.getLogger("memstrata")
MIN_COSINE = 0.9999999
_OPSET = 17
_SMALL = 1 << 20  # files up to 1 MiB are hashed by content, larger ones by size and time
_PROBES = (
    "",
    "hi",
    "  Hello   World  ",
    "What did Caroline research about adoption agencies last week?",
    "I prefer window seats on long flights because I like to sleep against the wall.",
    "以后都用支付宝付款",
    "Café naïve résumé - ÉLAN 🙂 tab\there",
    " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 30),
    " ".join(["a long memory about gardening and tomatoes"] * 60),
    "x " * 300,
)
_LOAD_PROBES = (3, 4)  # short probes re-checked on every load (a 256-token one costs 0.1 s)


def default_cache_dir() -> Path:
    """Where exported models are cached (read from the environment when called)."""
    if os.environ.get("MEMSTRATA_MODEL_CACHE"):
        return Path(os.environ["MEMSTRATA_MODEL_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memstrata" / "models"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def model_identity(model_dir: Path) -> str:
    """A cheap fingerprint of the model folder (no 90 MB hash on every start)."""
    h = hashlib.sha256()
    for path in sorted(model_dir.rglob("*")):
        if not path.is_file():
            continue
        stat = path.stat()
        h.update(f"{path.relative_to(model_dir).as_posix()}:{stat.st_size}:".encode())
        if stat.st_size <= _SMALL:
            h.update(path.read_bytes())
        else:
            h.update(str(stat.st_mtime_ns).encode())
    return h.hexdigest()


def _runtime() -> dict[str, str]:
    return {"onnxruntime": _version("onnxruntime"), "tokenizers": _version("tokenizers")}


def entry_dir(spec: ModelSpec, cache_dir: Path, identity: str | None = None) -> Path:
    identity = identity or model_identity(spec.path)
    key = hashlib.sha256(json.dumps(
        {"identity": identity, "format": FORMAT, **_runtime()}, sort_keys=True).encode())
    return cache_dir / f"{spec.path.name}-{key.hexdigest()[:24]}"


def writable(cache_dir: Path) -> bool:
    """Whether an export could be stored (a folder we can create files in)."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        probe = cache_dir / f".write-test.{os.getpid()}.{threading.get_ident()}"
        probe.write_bytes(b"")
        probe.unlink()
        return True
    except OSError:
        return False


def load(spec: ModelSpec, cache_dir: Path, **encoder_options: Any) -> OnnxEncoder | None:
    """The cached, verified export as a ready encoder; None (and the entry deleted) when
    there is none or it fails a check."""
    identity = model_identity(spec.path)
    entry = entry_dir(spec, cache_dir, identity)
    manifest_path = entry / "manifest.json"
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text())
        onnx = manifest["onnx"]
        if (manifest.get("format") != FORMAT or manifest["model"]["identity"] != identity
                or manifest["runtime"] != _runtime()
                or manifest["verification"]["verified"] is not True
                or manifest["dim"] != spec.dim
                or manifest["max_seq_length"] != spec.max_seq_length):
            raise ValueError("foreign or stale manifest")
        model_file = entry / "model.onnx"
        if model_file.stat().st_size != onnx["bytes"]:
            raise ValueError("model.onnx does not have its recorded size")
        # the checksum is read on a thread while ONNX Runtime reads the same file and
        # builds its session (both release the GIL); nothing is encoded before it matches
        digest: list[str] = []
        hasher = threading.Thread(target=_sha256_into, args=(model_file, digest),
                                  name="memstrata-onnx-sha256")
        hasher.start()
        try:
            encoder = OnnxEncoder(spec, model_file, optimized=True, **encoder_options)
        finally:
            hasher.join()
        if digest != [onnx["sha256"]]:
            raise ValueError("model.onnx does not match its recorded checksum")
        probes = manifest["verification"]["probes"]
        texts = [str(p["text"]) for p in probes]
        reference = np.asarray([p["vector"] for p in probes], dtype=np.float64)
        if not texts or _min_cosine(reference, encoder.encode(texts)) < MIN_COSINE:
            raise ValueError("the export no longer reproduces its probe vectors")
        with contextlib.suppress(OSError):
            os.utime(manifest_path)  # used: kept when another environment prunes
        return encoder
    except _errors() as exc:
        log.warning("the cached ONNX export %s failed a check (%s); it is deleted and "
                    "made again", entry, exc)
        shutil.rmtree(entry, ignore_errors=True)
        return None


def export(model: Any, spec: ModelSpec, cache_dir: Path,
           **encoder_options: Any) -> OnnxEncoder | None:
    """Export ``model`` (a loaded SentenceTransformer), verify it against PyTorch, cache it.

    None when the export or the check fails or nothing can be written.
    """
    if not writable(cache_dir):
        return None
    identity = model_identity(spec.path)
    entry = entry_dir(spec, cache_dir, identity)
    tmp = cache_dir / f".{entry.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        _trace(model, spec, tmp / "traced.onnx")
        _optimize(tmp / "traced.onnx", tmp / "model.onnx")
        (tmp / "traced.onnx").unlink()
        data = (tmp / "model.onnx").read_bytes()
        encoder = OnnxEncoder(spec, data, optimized=True, **encoder_options)
        verification = _verify(model, encoder)
        if verification is None:
            return None
        manifest = {
            "format": FORMAT,
            "model": {"name": spec.path.name, "path": str(spec.path), "identity": identity,
                      "sha256": _weights_sha256(spec.path)},
            "runtime": _runtime(),
            "exported_with": {p: _version(p) for p in (
                "torch", "transformers", "sentence-transformers", "onnx")},
            "opset": _OPSET,
            "dim": spec.dim,
            "max_seq_length": spec.max_seq_length,
            "onnx": {"file": "model.onnx", "bytes": len(data),
                     "sha256": hashlib.sha256(data).hexdigest()},
            "verification": verification,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        try:
            shutil.rmtree(entry, ignore_errors=True)  # a corrupt one, deleted by load
            os.replace(tmp, entry)
        except OSError:  # another process stored the same export first
            pass
        prune(spec, cache_dir, keep=entry)
        return encoder
    except _errors():
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prune(spec: ModelSpec, cache_dir: Path, *, keep: Path) -> list[Path]:
    """Delete the entries of ``spec``'s model but ``keep`` and the :data:`KEEP_OTHERS`
    most recently used others; returns what was deleted."""
    others = []
    for path in cache_dir.glob(f"{spec.path.name}-*"):
        if path == keep or not path.is_dir():
            continue
        try:
            others.append((path.joinpath("manifest.json").stat().st_mtime, path))
        except OSError:
            others.append((0.0, path))  # half an entry: nothing uses it
    gone = [path for _, path in sorted(others, reverse=True)[KEEP_OTHERS:]]
    for path in gone:
        shutil.rmtree(path, ignore_errors=True)
    return gone


def _optimize(source: Path, target: Path) -> None:
    """Save ``source`` with ONNX Runtime's graph optimisations applied (offline mode).

    Sessions on the saved graph skip the optimisation passes: building one takes
    ~0.14 s instead of ~0.26 s plus reading the bytes, which is most of what a cold
    start waits for. The extended level is the highest whose saved graph does not
    depend on this machine's CPU (the "all" level adds layout rewrites that may);
    the runtime's version is part of the cache key, so the saved graph always meets
    the runtime that wrote it.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def _sha256_into(path: Path, out: list[str]) -> None:
    with path.open("rb") as fh:
        out.append(hashlib.file_digest(fh, "sha256").hexdigest())


def _errors() -> tuple[type[BaseException], ...]:
    """What a missing, truncated, corrupt or foreign entry can raise."""
    return (OSError, KeyError, ImportError, *ort_errors())


def _weights_sha256(model_dir: Path) -> dict[str, str]:
    out = {}
    for path in sorted(model_dir.glob("*")):
        if path.is_file() and path.stat().st_size > _SMALL:
            h = hashlib.sha256()
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            out[path.name] = h.hexdigest()
    return out


def _min_cosine(a: Any, b: Any) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(cos.min())


def _verify(model: Any, encoder: OnnxEncoder) -> dict[str, Any] | None:
    """Token ids and vectors against PyTorch, single and batched; None on any mismatch."""
    import torch

    texts = list(_PROBES)
    features = _features(model, texts)
    mask = features["attention_mask"].numpy().astype(bool)
    theirs = [row[m].tolist() for row, m in zip(features["input_ids"].numpy(), mask,
                                                  strict=True)]
    if theirs != encoder.token_ids(texts):
        return None
    with torch.inference_mode():
        batch = model.encode(texts, batch_size=4, convert_to_numpy=True,
                             normalize_embeddings=True, show_progress_bar=False)
        single = np.concatenate([model.encode([t], convert_to_numpy=True,
                                              normalize_embeddings=True,
                                              show_progress_bar=False) for t in texts])
    ours_single = np.concatenate([encoder.encode([t]) for t in texts])
    ours_batch = encoder.encode(texts)
    cosines = [_min_cosine(single, ours_single), _min_cosine(batch, ours_batch),
               _min_cosine(single, ours_batch)]
    if min(cosines) < MIN_COSINE:
        return None
    return {
        "verified": True,
        "against": "sentence-transformers encode (PyTorch), token ids and vectors",
        "texts": len(texts),
        "min_cosine": min(cosines),
        "threshold": MIN_COSINE,
        "probes": [{"text": texts[i], "vector": [float(x) for x in ours_single[i]]}
                   for i in _LOAD_PROBES],
    }


def _features(model: Any, texts: list[str]) -> Any:
    prepare = getattr(model, "preprocess", None) or model.tokenize
    return prepare(texts)


def _trace(model: Any, spec: ModelSpec, path: Path) -> None:
    import torch

    transformer = model[0].auto_model

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    sample = _features(model, [_PROBES[3], _PROBES[1]])  # padded: the mask is exercised
    args = tuple(sample[name] for name in ("input_ids", "attention_mask", "token_type_ids"))
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled().eval(),
            args,
            str(path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "token_type_ids": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
            opset_version=_OPSET,
            dynamo=False,
        )
