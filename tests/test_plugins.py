"""Plugins by name: the built-ins from memstrata's own metadata, without reading every
installed distribution's (opening a memory resolved two names that way, about 70 ms a
scan on a machine with a hundred packages), and a third-party registration still found."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import Any

import pytest

from memstrata import _plugins
from memstrata.errors import InvalidSettingError
from memstrata.memory.embedder import EMBEDDER_GROUP, load_embedder
from memstrata.memory.vector import BACKEND_GROUP, available_backends, load_backend


@pytest.fixture
def no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading every distribution (``Distribution.discover`` without a name, as
    ``entry_points()`` does) fails; one distribution by name is still found."""
    discover = importlib.metadata.Distribution.discover

    def one_by_name(**kwargs: Any) -> Any:
        if kwargs.get("name") is None:
            raise AssertionError("every distribution's metadata was read")
        return discover(**kwargs)

    monkeypatch.setattr(importlib.metadata.Distribution, "discover", one_by_name)


@pytest.mark.usefixtures("no_scan")
def test_a_built_in_name_is_found_in_memstratas_own_metadata() -> None:
    assert load_backend("local").__name__ == "LocalVectorIndex"
    found = _plugins.find(EMBEDDER_GROUP, "minilm")
    assert found is not None and found.value.endswith(":SentenceTransformerEmbedder")


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry_points: str) -> None:
    info = tmp_path / "memstrata_test_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memstrata-test-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert str(tmp_path) in sys.path


def test_a_third_party_backend_is_found_and_cannot_shadow_a_built_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(tmp_path, monkeypatch, f"[{BACKEND_GROUP}]\n"
             "their-index = memstrata.memory.vector:SearchFilter\n"
             "local = json:JSONDecoder\n")
    assert load_backend("their-index").__name__ == "SearchFilter"
    assert load_backend("local").__name__ == "LocalVectorIndex"
    listed = available_backends()
    assert {"their-index", "local", "weaviate"} <= set(listed)
    assert listed["local"].value.endswith(":LocalVectorIndex")


def test_an_unknown_name_says_what_is_available() -> None:
    with pytest.raises(InvalidSettingError, match=r"unknown vector backend 'lokal'.*'local'"):
        load_backend("lokal")
    with pytest.raises(InvalidSettingError, match=r"unknown embedder 'mini-lm'.*'minilm'"):
        load_embedder("mini-lm")
