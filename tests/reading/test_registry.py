"""The attribute registry and the reader data: declared once, checked, in both languages."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from memstrata.errors import InvalidInputError
from memstrata.reading import registry

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "reading"

#: the attributes the reading layer issue asks the registry to cover
REQUIRED = ("name", "preferred_name", "city", "employer", "occupation", "school", "age",
            "birthday", "diet", "allergies", "partner", "children", "pets", "car", "phone",
            "laptop", "bank", "mobile_carrier", "home_internet", "streaming", "gym", "doctor",
            "language", "instruction")


def test_the_registry_declares_every_attribute_once_with_both_languages() -> None:
    reg = registry()
    assert set(REQUIRED) <= set(reg.names)
    assert len(set(reg.names)) == len(reg.names)
    for a in reg:
        assert a.en.strip() and a.zh.strip() and a.examples
        assert a.cardinality in ("single", "multi")
        assert a.stability in ("stable", "changing")
        if a.value == "label":
            assert a.labels and set(a.labels_zh) == set(a.labels)


def test_a_label_is_shown_in_the_users_language() -> None:
    diet = registry()["diet"]
    assert diet.display("vegan", "zh") == "纯素"
    assert diet.display("vegan", "en") == "vegan"
    assert registry()["city"].display("上海", "zh") == "上海"
    # and back: what display showed stands for its label
    assert all(diet.label_of(diet.display(x, "zh")) == x for x in diet.labels)
    assert diet.label_of("vegan") == "vegan" and registry()["city"].label_of("上海") == "上海"


def test_an_unknown_attribute_is_a_typed_error() -> None:
    with pytest.raises(InvalidInputError, match="unknown attribute 'shoe_size'"):
        registry()["shoe_size"]


def _checker():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("check", ROOT / "scripts" /
                                                  "check_reading_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_line_of_the_reader_data_passes_the_checker(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    paths = sorted(str(p) for p in [*DATA.glob("train/*.jsonl"),
                                    *DATA.glob("blind/relate_*.jsonl")])
    assert paths
    assert _checker().main(paths) == 0, capsys.readouterr().out


def test_the_checker_names_a_span_that_is_not_in_the_text() -> None:
    bad = {"id": "x", "lang": "en", "task": "read", "text": "i moved to porto",
           "readings": [{"attribute": "city", "span": "lisbon", "value": "Lisbon",
                         "holder": "user", "when": "now", "negated": False}]}
    attrs = {a["name"]: a for a in json.loads(
        (ROOT / "memstrata" / "reading" / "attributes.json").read_text())["attributes"]}
    assert any("not an exact substring" in e for e in _checker().check_line(bad, attrs))


def test_the_training_data_is_large_enough_and_a_third_chinese() -> None:
    lines = [json.loads(x) for p in sorted((DATA / "train").glob("*.jsonl"))
             for x in p.read_text("utf-8").splitlines() if x.strip()]
    assert len(lines) >= 15000
    assert sum(x["lang"] == "zh" for x in lines) >= len(lines) / 3
    read = {r["attribute"] for x in lines if x["task"] == "read" for r in x["readings"]}
    assert read == set(registry().names)
