"""The benchmarks' first-look files keep every run's first looks when runs finish at once
(``bench_observe_reading --reader auto`` beside ``--reader model`` lost one run's keys at the
eighteenth and nineteenth rounds: each rewrote the whole file it had read at its start)."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def _common() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_common",
                                                  REPO / "benchmarks" / "_common.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _at_once(writer: Callable[[str, str, object], None], path: Path,
             tags: tuple[str, ...]) -> None:
    """Runs ``writer(path, tag, start)`` in one process a tag, all released at once."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=writer, args=(str(path), tag, start)) for tag in tags]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0


def _writer(path: str, tag: str, start: object) -> None:
    common = _common()
    start.wait()  # type: ignore[attr-defined]
    for i in range(40):
        common.add_first_looks(Path(path), {f"set{i}/{tag}/v1": {"changes": i}})


def test_runs_finishing_at_once_keep_each_others_first_looks(tmp_path: Path) -> None:
    path = tmp_path / "first_look.json"
    _at_once(_writer, path, ("auto", "model"))
    looks = json.loads(path.read_text("utf-8"))
    assert len(looks) == 80
    assert {k.split("/")[1] for k in looks} == {"auto", "model"}


def test_a_first_look_is_never_overwritten(tmp_path: Path) -> None:
    common = _common()
    path = tmp_path / "first_look.json"
    assert common.add_first_looks(path, {"read_blind1/model/v1": {"changes": 0.5}}) == [
        "read_blind1/model/v1"]
    assert common.add_first_looks(path, {"read_blind1/model/v1": {"changes": 0.9},
                                         "read_blind2/model/v1": {"changes": 0.7}}) == [
        "read_blind2/model/v1"]
    looks = json.loads(path.read_text("utf-8"))
    assert looks["read_blind1/model/v1"] == {"changes": 0.5}
    assert looks["read_blind2/model/v1"] == {"changes": 0.7}


def _set_writer(path: str, tag: str, start: object) -> None:
    common = _common()
    start.wait()  # type: ignore[attr-defined]
    for i in range(25):
        assert common.record_first_look(Path(path), f"{tag}{i}", {"recall": i})


def test_set_keyed_first_looks_of_runs_finishing_at_once_are_all_kept(tmp_path: Path) -> None:
    """The set-keyed files (``{"sets": {name: entry}}``, bench_knowledge_update and
    bench_contradiction) are merged under the same lock."""
    path = tmp_path / "first_look.json"
    _at_once(_set_writer, path, ("heldout", "guard"))
    sets = json.loads(path.read_text("utf-8"))["sets"]
    assert len(sets) == 50
    # each kind in the order it first appears, its sets in numeric order
    for tag in ("heldout", "guard"):
        assert [k for k in sets if k.startswith(tag)] == [f"{tag}{i}" for i in range(25)]


def test_a_set_keyed_first_look_is_never_overwritten(tmp_path: Path) -> None:
    common = _common()
    path = tmp_path / "first_look.json"
    assert common.record_first_look(path, "heldout", {"recall": 0.5})
    assert not common.record_first_look(path, "heldout", {"recall": 0.9})
    assert json.loads(path.read_text("utf-8"))["sets"]["heldout"]["recall"] == 0.5


def _section_writer(path: str, tag: str, start: object) -> None:
    common = _common()
    start.wait()  # type: ignore[attr-defined]
    for i in range(25):
        assert common.record_section_first_look(Path(path), f"{tag}{i}", {"recall": i})


def test_sectioned_first_looks_of_runs_finishing_at_once_are_all_kept(tmp_path: Path) -> None:
    """bench_multilingual's sectioned file is merged under the same lock, and a section's
    first look is never overwritten."""
    path = tmp_path / "first_look.json"
    _at_once(_section_writer, path, ("chinese_holdout_", "keyword_"))
    sections = json.loads(path.read_text("utf-8"))["sections"]
    assert len(sections) == 50
    common = _common()
    assert not common.record_section_first_look(path, "keyword_0", {"recall": 99})
    assert json.loads(path.read_text("utf-8"))["sections"]["keyword_0"]["recall"] == 0
