"""The attribute registry: every attribute a reader may name, declared once.

The declarations live in ``attributes.json`` beside this module (package data), so adding
an attribute ("pet", "partner") is one entry there plus training examples for the model.
Each attribute says whether it holds one value or several (``cardinality``), whether a
different value is an update or a contradiction to confirm (``stability``), and what its
value is: words of the turn (``span``), a label of a closed set (``label``: a diet) or
digits (``number``: an age).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Literal

from memstrata.errors import InvalidInputError

__all__ = ["Attribute", "Registry", "registry"]


@dataclass(frozen=True, slots=True)
class Attribute:
    """One registry attribute; ``en`` / ``zh`` describe it for people and prompts."""

    name: str
    cardinality: Literal["single", "multi"]
    stability: Literal["stable", "changing"]
    value: Literal["span", "label", "number"]
    en: str
    zh: str
    examples: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    #: the Chinese word for each label, so a Chinese user's value stays Chinese
    labels_zh: Mapping[str, str] = field(default_factory=dict)

    def display(self, value: str, lang: str) -> str:
        """``value`` as the user would write it: a label in Chinese for a Chinese turn."""
        if self.value == "label" and lang == "zh":
            return self.labels_zh.get(value, value)
        return value

    def label_of(self, shown: str) -> str:
        """The label a value :meth:`display` showed stands for (不吃乳制品 -> dairy-free);
        any other value as given."""
        return next((label for label, zh in self.labels_zh.items() if zh == shown), shown)


@dataclass(frozen=True)
class Registry:
    """The attributes in declaration order; ``registry()["city"]`` looks one up."""

    version: int
    attributes: tuple[Attribute, ...]

    def __post_init__(self) -> None:
        names = [a.name for a in self.attributes]
        if len(set(names)) != len(names):
            raise ValueError("the attribute registry declares a name twice")

    def __getitem__(self, name: str) -> Attribute:
        for a in self.attributes:
            if a.name == name:
                return a
        raise InvalidInputError(f"unknown attribute {name!r}; the registry has "
                                f"{', '.join(self.names)}")

    def __contains__(self, name: object) -> bool:
        return any(a.name == name for a in self.attributes)

    def __iter__(self) -> Iterator[Attribute]:
        return iter(self.attributes)

    def __len__(self) -> int:
        return len(self.attributes)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)


@cache
def registry() -> Registry:
    """The registry shipped with memstrata (read once)."""
    raw = json.loads(resources.files("memstrata.reading").joinpath("attributes.json")
                     .read_text("utf-8"))
    attrs = tuple(
        Attribute(name=a["name"], cardinality=a["cardinality"], stability=a["stability"],
                  value=a["value"], en=a["en"], zh=a["zh"],
                  examples=tuple(a.get("examples", ())), labels=tuple(a.get("labels", ())),
                  labels_zh=dict(a.get("labels_zh", {})))
        for a in raw["attributes"])
    return Registry(version=int(raw["version"]), attributes=attrs)
