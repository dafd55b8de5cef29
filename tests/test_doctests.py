"""Docstring examples are part of the documentation: they must keep running."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["memstrata.policies.retention", "memstrata.policies.conflict"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
