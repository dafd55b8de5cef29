"""What text means, read in one place: the :class:`Reader` protocol and its readers.

* :class:`ModelReader` - the small multilingual encoder the project trains and ships
  (milliseconds a turn, no LLM); the default where its files are present.
* :class:`LLMReader` - an OpenAI-compatible LLM through :mod:`memstrata.llm` (structured
  output, validated per reading, batched); for the nightly jobs where an LLM is configured.
* :class:`RuleReader` - the hand-written rules, frozen; the fallback.

Readers say what a turn means (:class:`Reading`: attribute, value, whose, when, denied),
how a newer statement stands to an older one (:class:`Relation`) and what a question asks
for (:class:`Asked`); the attributes are declared once, in the :func:`registry`.
"""

from functools import lru_cache
from typing import Literal

from memstrata import errors as _errors
from memstrata.reading.llm import LLMReader
from memstrata.reading.model import ModelReader, model_available
from memstrata.reading.protocol import Reader
from memstrata.reading.registry import Attribute, Registry, registry
from memstrata.reading.rules import RuleReader
from memstrata.reading.types import Asked, Held, Reading, Relation, from_stored, to_stored

__all__ = [
    "Asked",
    "Attribute",
    "Held",
    "LLMReader",
    "ModelReader",
    "Reader",
    "ReaderName",
    "Reading",
    "Registry",
    "Relation",
    "RuleReader",
    "from_stored",
    "load_reader",
    "model_available",
    "registry",
    "to_stored",
]

#: the readers a manager can be configured with; ``auto`` is the model where its files are
#: present and the rules otherwise (``cascade``: the model, the rules confirming its unsure
#: readings)
ReaderName = Literal["auto", "model", "cascade", "rules"]


@lru_cache(maxsize=8)
def load_reader(name: str = "auto") -> Reader:
    """The reader called ``name``, one per process (the model is loaded on its first read)."""
    if name == "auto":
        # the model alone: through observe it keeps more changes than the cascade for fewer
        # guards lost than twice as many (results/reader_candidates.json,
        # default_reader_round24: the twenty-fourth blind round and the dev split)
        name = "model" if model_available() else "rules"
    if name == "model":
        return ModelReader()
    if name == "rules":
        return RuleReader()
    if name == "cascade":
        from memstrata.reading.cascade import CascadeReader

        return CascadeReader()
    raise _errors.InvalidSettingError(
        f"unknown reader {name!r}; choose auto, model, cascade or rules")
