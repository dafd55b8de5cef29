"""Review conventions as tests: each package's __all__ matches what it exposes."""

from __future__ import annotations

import importlib
import inspect

import pytest

PACKAGES = ["memstrata", "memstrata.memory", "memstrata.policies", "memstrata.errors",
            "memstrata.types", "memstrata.clock", "memstrata.config", "memstrata.testing",
            "memstrata.reading"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str):
    module = importlib.import_module(name)
    exported = set(module.__all__)
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names things it does not have: {missing}"
    is_package = hasattr(module, "__path__")

    def ours(obj: object) -> bool:
        origin = getattr(obj, "__module__", "") or ""
        return origin.startswith("memstrata") if is_package else origin == name

    public = {
        n for n, obj in vars(module).items()
        if not n.startswith("_")
        and not inspect.ismodule(obj)
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and ours(obj)
    }
    assert public - exported == set(), f"{name} exposes names missing from __all__"


def test_every_error_is_a_memstrata_error():
    import memstrata.errors as errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.MemstrataError)
