"""Docstring examples are part of the documentation: they must keep running."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

import memstrata

#: every module whose docstrings carry examples (found, so a new one is not forgotten)
MODULES = sorted(
    ".".join(path.relative_to(Path(memstrata.__file__).parent.parent).with_suffix("").parts)
    for path in Path(memstrata.__file__).parent.rglob("*.py")
    if re.search(r"^\s*>>> ", path.read_text(encoding="utf-8"), re.MULTILINE))


def test_the_examples_are_found():
    assert {"memstrata.policies.temporal", "memstrata.policies.extraction"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
