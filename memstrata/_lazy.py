"""Names of a package imported on first use (PEP 562), so that importing the package - or
one module of it, as the command line does - does not import everything it re-exports."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name of ``where`` is imported from
    its module (a full name, or one relative to ``package``) on first use and kept."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        full = module if module.startswith("memstrata.") else f"{package}.{module}"
        value = getattr(importlib.import_module(full), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
