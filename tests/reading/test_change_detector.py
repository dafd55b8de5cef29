"""The model reader's change detector: a turn read against what the user holds.

Reproduces misreadings of the model read alone on cases of its dev split (never trained
on): a work laptop, a city only considered, read as the user's new value; a new employer
or carrier said in passing, read as nothing. With the detector, the held value and the
turn are read as one pair, and the turn's reading of that attribute is kept, dropped or
taken from what the first pass read less surely.
"""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.errors import ReaderModelError
from memstrata.memory.embedder import Embedder
from memstrata.reading import Held, ModelReader
from memstrata.reading.model import DEFAULT_MODEL_DIR, DETECTOR
from memstrata.types import Status

#: (held, turn): the turn changes nothing of what is held
GUARDS = [
    (Held("laptop", "MacBook Air M1"),
     "IT gave me a Dell Latitude for work but cant install anything on it, can i just do "
     "teams calls on my macbook instead?"),
    pytest.param(Held("city", "北京"),
                 "在纠结要不要润去成都 成都房租差不多是北京一半 但工资也要砍三成 "
                 "帮我算算到底值不值",
                 marks=pytest.mark.xfail(strict=True, reason=(
                     "known misreading of model-6c498d15f19c and model-1c911b2bf5ff, to be "
                     "fixed with training data: "
                     "it reads 北京 in '成都房租差不多是北京一半' as the user's city now (0.64), "
                     "the held value itself, which changes nothing held but is a current "
                     "value the test expects none of"))),
]
#: (held, turn, the user's new value)
CHANGE_CASES = [
    (Held("employer", "Avera McKennan"),
     "badge came in the mail today, officially Sanford Health as of monday 🙌 how do i roll "
     "my 403b over from the old place", "Sanford Health"),
    (Held("mobile_carrier", "移动"), "携号转网转到广电了 19块的套餐 号码没变 就是信号不知道咋样",
     "广电"),
]
CHANGES = CHANGE_CASES


@pytest.fixture(scope="module")
def reader() -> ModelReader:
    return ModelReader()


@pytest.fixture(scope="module")
def alone() -> ModelReader:
    plain = ModelReader()
    plain.detect_veto = None
    return plain


def _own_now(reader: ModelReader, turn: str, held: Held) -> list[str]:
    return [r.value for r in reader.read(turn, [held])
            if r.attribute == held.attribute and r.current_own]


def test_the_shipped_model_has_a_detector_and_says_so_in_its_version(
        reader: ModelReader, alone: ModelReader) -> None:
    manifest = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text("utf-8"))
    assert DETECTOR in manifest["files"] and manifest["reader"]["detect_veto"] is not None
    assert "+detect-" in reader.version and "+detect" not in alone.version
    assert reader.version.startswith(alone.version)


@pytest.mark.parametrize(("held", "turn"), GUARDS)
def test_a_value_the_user_only_uses_or_considers_does_not_change_what_they_hold(
        reader: ModelReader, held: Held, turn: str) -> None:
    """model-39a313c9f04f alone read both as the user's new value; what its detector adds
    on the whole dev split is the sweep's test below (a later model may read them right
    alone)."""
    assert _own_now(reader, turn, held) == []


@pytest.mark.parametrize(("held", "turn", "value"), CHANGES)
def test_a_change_said_in_passing_is_read_against_what_the_user_holds(
        reader: ModelReader, held: Held, turn: str, value: str) -> None:
    """model-39a313c9f04f alone missed both (see the docstring above)."""
    assert _own_now(reader, turn, held) == [value]


@pytest.mark.parametrize("order", [1, -1])
def test_the_likeliest_words_are_not_a_piece_of_another_value(reader: ModelReader,
                                                              order: int) -> None:
    """With 腾讯 and 产品经理 held, 入职字节 is a new employer; the occupation's detector also
    says the turn changes it, and its likeliest words were 字, a piece of 字节, which
    superseded 产品经理 through observe, whichever of the two was held first."""
    held = [Held("employer", "腾讯"), Held("occupation", "产品经理")][::order]
    got = reader.read("入职字节快两个月了，新组节奏比之前快太多，周报都写不过来。", held)
    own = [(r.attribute, r.value) for r in got if r.current_own]
    assert own == [("employer", "字节")]


def test_with_nothing_held_the_detector_reads_nothing(reader: ModelReader,
                                                      alone: ModelReader) -> None:
    for _, turn, _ in CHANGE_CASES:
        assert reader.read(turn) == alone.read(turn)
    # a held attribute the turn says nothing of is not read again
    turn = "what's a good stretching routine for a stiff back?"
    assert reader.read(turn, [Held("employer", "Siemens")]) == alone.read(turn)


def test_a_change_and_a_guard_reach_the_users_memory_through_observe(
        db_url: str, embedder: Embedder, clock: ManualClock) -> None:
    mm = MemoryManager.open(db_url, embedder=embedder, clock=clock)

    def active(attribute: str) -> list[str]:
        return [r.slot.value for r in mm.lookup("u", attribute=attribute,
                                                include_pending=False)
                if r.slot is not None and r.status is Status.ACTIVE]

    try:
        mm.observe("u", "s1", "user", "I work at Avera McKennan")
        mm.observe("u", "s1", "user", "my laptop is a MacBook Air M1")
        clock.advance(timedelta(days=3))
        mm.observe("u", "s2", "user", CHANGE_CASES[0][1])
        mm.observe("u", "s2", "user", GUARDS[0][1])
        assert active("employer") == ["Sanford Health"]
        assert active("laptop") == ["MacBook Air M1"]  # the work laptop is not the user's
    finally:
        mm.close()


def _model_copy(tmp_path: Path) -> Path:
    out = tmp_path / "model"
    out.mkdir(parents=True)
    for name in ("reader.onnx", "heads.npz", "tokenizer.json"):
        (out / name).symlink_to(DEFAULT_MODEL_DIR / name)
    manifest = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text("utf-8"))
    manifest["files"].pop(DETECTOR)
    (out / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    return out


def test_the_detector_trains_seeded_on_the_change_cases(tmp_path: Path) -> None:
    """``train_detector`` on the same cases writes the same weights twice, and the model
    with them reads (a small sample here; the shipped one used every training case)."""
    from memstrata.reading.model import write_manifest
    from memstrata.reading.train import is_dev, load_changes, train_detector

    cases = [c for c in load_changes(["read_blind33.jsonl"]) if not is_dev(c["id"])][:40]
    weights = []
    for run in ("a", "b"):
        out = _model_copy(tmp_path / run)
        info = train_detector(out, cases, threads=1)
        assert info["pairs"] > 20 and 0 < info["changes"] < info["pairs"]
        with np.load(out / DETECTOR) as npz:
            weights.append({k: npz[k].copy() for k in npz.files})
        manifest = json.loads((out / "manifest.json").read_text("utf-8"))
        manifest.pop("files")
        manifest["reader"]["detect_veto"] = 0.3
        write_manifest(out, manifest)
        trained = ModelReader(out)
        assert "+detect-" in trained.version
        trained.read(CHANGE_CASES[0][1], [CHANGE_CASES[0][0]])
    assert weights[0].keys() == weights[1].keys()
    for k in weights[0]:
        assert np.array_equal(weights[0][k], weights[1][k]), k


def test_the_detectors_inputs_read_in_two_processes_are_those_read_in_one(
        tmp_path: Path) -> None:
    """Training reads the detector's inputs in ``threads`` processes of one thread each
    (the 10k change cases took a quarter of an hour in one): the same pairs, in the same
    order, with the same numbers as one process reads."""
    from memstrata.reading.train import detector_cases, is_dev, load_changes

    cases = [c for c in load_changes(["read_blind33.jsonl"]) if not is_dev(c["id"])][:100]
    out = _model_copy(tmp_path / "m")
    x1, y1 = detector_cases(out, cases, threads=1)
    x2, y2 = detector_cases(out, cases, threads=2)
    assert len(y1) > 40 and 0 < int(y1.sum()) < len(y1)
    assert np.array_equal(y1, y2)
    assert np.array_equal(x1, x2)


def test_a_damaged_detector_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, out)
    with (out / DETECTOR).open("r+b") as f:
        f.seek(200)
        f.write(b"\x00\x01\x02")
    with pytest.raises(ReaderModelError, match=r"detector\.npz"):
        ModelReader(out).read("I moved to Porto", [Held("city", "Lisbon")])


def test_the_detectors_thresholds_keep_the_guards_of_reading_without_it() -> None:
    """The shipped thresholds are the trainer's rule applied to the sweep it recorded."""
    from memstrata.reading.train import CHECK_TOLERANCE

    manifest = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text("utf-8"))
    alone, *points = manifest["detect_sweep"]
    assert alone["detect_veto"] is None
    fit = [p for p in points if p["guard_all"] >= alone["guard_all"] - CHECK_TOLERANCE
           and p["unrelated_all"] >= alone["unrelated_all"] - CHECK_TOLERANCE]
    best = max(fit, key=lambda p: (p["change_all"] + p["guard_all"] + p["unrelated_all"],
                                   p["detect_veto"], p["detect_rescue"]))
    chosen = manifest["reader"]
    assert (chosen["detect_veto"], chosen["detect_rescue"], chosen["detect_words"]) == \
        (best["detect_veto"], best["detect_rescue"], best["detect_words"])
    assert best["guard_all"] >= alone["guard_all"] and best["change_all"] > alone["change_all"]


#: (held, a turn about another attribute): statements of change cases of the dev split,
#: read with a held value of an attribute they do not speak of
UNRELATED = [
    pytest.param(Held("city", "Austin"),
                 "Oi my new boss at Grab damn chill one, never need to OT. Can help me write "
                 "the leave email anot, want to take Deepavali week"),
    pytest.param(Held("gym", "Smart Fit"),
                 "It has been three years since Dale passed. Winston from my church and I are "
                 "officially an item now, he is taking me to Ocho Rios on Sunday. What should "
                 "I pack for a day trip"),
    (Held("home_internet", "Unifi"), "so jonas and i are over (amicably!!) and i've been "
                                     "seeing Elif for about three months, she's great — ideas "
                                     "for a weekend trip from vienna by train?"),
    (Held("employer", "Atlassian"), "cult.fit membership activated today bhai, let the "
                                    "Anytime one lapse. which cult class is best for a total "
                                    "beginner with bad knees?"),
]


@pytest.mark.parametrize(("held", "turn"), UNRELATED)
def test_a_turn_about_another_attribute_changes_nothing_held(reader: ModelReader,
                                                             held: Held, turn: str) -> None:
    """With its first thresholds (``detect_words`` 0.01, chosen on change cases alone,
    which are all about the held attribute) the detector took the likeliest words of a
    turn about something else as the held attribute's new value: home internet jonas,
    employer bhai (and city Deepavali, gym Ocho Rios: still). Its thresholds are now chosen
    with turns about another attribute on the dev split too (the sweep's test below keeps
    that rule; a later model may read these right at any threshold)."""
    assert _own_now(reader, turn, held) == []
