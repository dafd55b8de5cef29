"""The pointer head: where a value's words begin and end, judged run by run over whole
words, widening what the tags mark; the same in numpy as the trainer's network, trained
seeded, and verified like the model's other files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata.errors import ReaderModelError
from memstrata.reading import ModelReader
from memstrata.reading.model import (
    DEFAULT_MODEL_DIR,
    POINTER,
    POINTER_WIDTH,
    continues_word,
    pointer_heads,
    pointer_probs,
    pointer_runs,
    write_manifest,
)
from memstrata.reading.registry import registry


@pytest.fixture(scope="module")
def reader() -> ModelReader:
    return ModelReader()


@pytest.mark.parametrize("text", [
    "just started at Razorpay in Bengaluru, the onboarding is a lot",
    "我在湖南农业大学继续教育学院读在职研究生",
    "x",
])
def test_runs_begin_and_end_on_whole_words(reader: ModelReader, text: str) -> None:
    ids, offsets = reader._encode([text])
    n = len(ids[0])
    runs = pointer_runs(text, offsets[0], 0, n)
    assert len(runs) or n <= 3
    for a, w in runs:
        b = a + w  # the run's last token
        assert a >= 1 and b <= n - 2 and w < POINTER_WIDTH
        assert not continues_word(text, offsets[0], int(a))
        assert b + 1 == n - 1 or not continues_word(text, offsets[0], int(b) + 1)
    # every run of whole words is there: as many as the words' starts and ends allow
    starts = [i for i in range(1, n - 1) if not continues_word(text, offsets[0], i)]
    ends = [i for i in range(1, n - 1)
            if i + 1 == n - 1 or not continues_word(text, offsets[0], i + 1)]
    want = sum(1 for a in starts for b in ends if a <= b < a + POINTER_WIDTH)
    assert len(runs) == want


def test_the_numpy_head_is_the_trainers_network() -> None:
    import torch  # a dev dependency, as the trainer's

    from memstrata.reading.train import build_pointer, pointer_arrays

    torch.manual_seed(7)
    net = build_pointer(32, POINTER_WIDTH)
    with torch.no_grad():  # the output layer starts near zero; make the test sharp
        net.out.weight.mul_(20.0)
    net.eval()
    rng = np.random.default_rng(7)
    h = rng.normal(size=(30, 384)).astype(np.float32)
    runs = np.array([(a, w) for a in range(1, 29) for w in range(POINTER_WIDTH)
                     if a + w <= 28], dtype=np.int64)
    with torch.no_grad():
        want = torch.softmax(net(torch.from_numpy(h), torch.from_numpy(runs)), -1).numpy()
    heads = pointer_heads(pointer_arrays(net))
    got = pointer_probs(heads, h, runs)
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 1e-4
    assert want[:, 0].std() > 0.01  # the runs are told apart


def _model_copy(tmp_path: Path) -> Path:
    out = tmp_path / "model"
    out.mkdir(parents=True)
    for name in ("reader.onnx", "heads.npz", "tokenizer.json", "detector.npz"):
        (out / name).symlink_to(DEFAULT_MODEL_DIR / name)
    manifest = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text("utf-8"))
    manifest["files"].pop(POINTER, None)
    manifest.get("reader", {}).pop("values", None)
    manifest.pop("files")
    write_manifest(out, manifest)
    return out


def test_the_pointer_trains_seeded_and_widens_what_the_tags_mark(tmp_path: Path) -> None:
    """``train_pointer`` on the same lines writes the same weights twice, and the model with
    them reads each value the tags mark as a run of whole words that contains the tagged
    words (a small sample here; the shipped head learnt from every training line)."""
    from memstrata.reading.train import DATA, char_span_tokens, is_dev, load_lines, train_pointer

    lines = [x for x in load_lines([DATA / "read_v6a.jsonl"])
             if x["task"] == "read" and not is_dev(x["id"])][:40]
    weights = []
    for run in ("a", "b"):
        out = _model_copy(tmp_path / run)
        info = train_pointer(out, lines, threads=1)
        assert info["lines"] == 40 and info["losses"][-1] < info["losses"][0]
        with np.load(out / POINTER) as npz:
            weights.append({k: npz[k].copy() for k in npz.files})
        manifest = json.loads((out / "manifest.json").read_text("utf-8"))
        manifest.pop("files")
        manifest["reader"] = {**manifest["reader"], "values": "bounds"}
        write_manifest(out, manifest)
        trained = ModelReader(out)
        assert "+bounds-" in trained.version
        text = "hey can u help me write a cover letter, i'm a pharmacist at Boots right now"
        ids, offsets = trained._encode([text])
        h = trained._hidden(ids)[0]
        tagged = []
        for words, attr in (("pharm", "occupation"), ("Boots", "employer"),
                            ("right", "employer")):
            where = char_span_tokens(offsets[0], text.index(words), text.index(words) + 3)
            assert where is not None
            tagged.append((*where, attr))
        bounded = trained._bounded(text, offsets[0], 0, h, tagged)
        assert 1 <= len(bounded) <= len(tagged)
        for a, b, attr in bounded:
            assert any(a <= ta and tb <= b and attr == tattr for ta, tb, tattr in tagged)
            assert not continues_word(text, offsets[0], a)
            assert b == len(ids[0]) - 1 or not continues_word(text, offsets[0], b)
        for r in trained.read(text):
            assert r.span is not None
            a, b = r.span
            assert (a == 0 or not text[a - 1].isalnum()) and (b == len(text)
                                                             or not text[b].isalnum())
    assert weights[0].keys() == weights[1].keys()
    for k in weights[0]:
        assert np.array_equal(weights[0][k], weights[1][k]), k


def test_a_model_without_a_pointer_reads_its_tags(tmp_path: Path) -> None:
    out = _model_copy(tmp_path)
    plain = ModelReader(out)
    plain.values = "bounds"  # asked for, but the manifest lists no pointer.npz
    assert "+bounds" not in plain.version
    assert plain.read("I live in Leeds.")


def test_a_damaged_pointer_is_refused(tmp_path: Path) -> None:
    out = _model_copy(tmp_path)
    rng = np.random.default_rng(1)
    size, classes = 8, len(registry().names) + 1
    arrays: dict[str, Any] = {
        "first.w": rng.normal(size=(384, size)), "first.b": np.zeros(size),
        "last.w": rng.normal(size=(384, size)), "mean.w": rng.normal(size=(384, size)),
        "width": rng.normal(size=(POINTER_WIDTH, size)),
        "out.w": rng.normal(size=(size, classes)), "out.b": np.zeros(classes)}
    np.savez(out / POINTER, **arrays)
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    manifest.pop("files")
    manifest["reader"] = {**manifest["reader"], "values": "bounds"}
    write_manifest(out, manifest)
    assert "+bounds-" in ModelReader(out).version
    ModelReader(out).read("I moved to Porto")  # intact: it reads
    with (out / POINTER).open("r+b") as f:
        f.seek(200)
        f.write(b"\x00\x01\x02")
    with pytest.raises(ReaderModelError, match=r"pointer\.npz"):
        ModelReader(out).read("I moved to Porto")
