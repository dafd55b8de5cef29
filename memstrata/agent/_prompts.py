"""Prompt templates are package data files (``memstrata/agent/prompts/*.md``)."""

from __future__ import annotations

import functools
from importlib import resources

__all__ = ["prompt"]


@functools.cache
def prompt(name: str) -> str:
    return resources.files("memstrata.agent.prompts").joinpath(f"{name}.md").read_text("utf-8")
