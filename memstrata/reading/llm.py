"""The LLM reader: any chat model of :mod:`memstrata.llm` behind the :class:`Reader` protocol.

The model is offered one tool whose parameters are a JSON schema generated from pydantic
models (the registry's attribute names as an enum) and is asked to call it; a model or
server that answers in text instead may give the same JSON object there (bare or in a
fence). The prompt is generated from the attribute registry, so an attribute added there
is read here with no change.

Nothing the model says is returned unchecked. The answer's envelope (items named by the
index of their turn) is validated whole, each reading alone, so one bad reading costs only
itself:

* an unknown attribute, a holder or a when outside the literals: dropped;
* a ``span`` attribute's value must be words of the turn (compared after NFKC and case
  folding): values stay in the user's own words and language, so "Shanghai" for a turn
  that says 上海 is dropped; the value returned is the turn's own text at ``span``;
* a ``label`` attribute's value must be one of its labels; a ``number`` one digits.

A malformed answer (not JSON, cut off at ``max_tokens``, the wrong shape) gives no readings
for its batch, ``Relation("unrelated", 0.0)`` or ``None``; it never raises. What was
refused and why is kept on :attr:`LLMReader.rejected`. Errors of the endpoint itself
(:class:`~memstrata.errors.LLMError` and its subclasses) propagate: a reader that cannot
reach its model is the caller's to handle, not an empty reading.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memstrata.errors import InvalidInputError, InvalidSettingError
from memstrata.llm import ChatResult, LLMClient, Usage
from memstrata.reading.registry import Attribute, Registry, registry
from memstrata.reading.types import Asked, Held, Holder, Reading, Relation, RelationKind, When

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_TEMPERATURE",
    "PROMPT_VERSION",
    "REJECTIONS_KEPT",
    "LLMReader",
    "Rejection",
]

#: bumped whenever a prompt or a schema changes (it is part of :attr:`LLMReader.version`)
PROMPT_VERSION = "1"
#: turns per call of ``read_many``: more is cheaper per turn, but a longer answer to cut off
DEFAULT_BATCH_SIZE = 8
#: readings should not vary from one call to the next
DEFAULT_TEMPERATURE = 0.0
#: the confidence of an answer that gives none
DEFAULT_CONFIDENCE = 0.8
#: the most recent rejections kept on :attr:`LLMReader.rejected`
REJECTIONS_KEPT = 1000

_READ_TOOL = "submit_readings"
_RELATE_TOOL = "submit_relation"
_ASK_TOOL = "submit_question"
_STRIP = " \t\r\n.,!?;:'\"…。，！？；：、“”‘’()（）[]【】~～"
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)
_KINDS = {"span": "words copied from the turn", "label": "one of the labels",
          "number": "digits"}


@dataclass(frozen=True, slots=True)
class Rejection:
    """Something the model answered that the reader did not return, and why.

    ``reason`` quotes the refused value, so it may hold words of a user's turn; the
    rejections live in memory only and are never stored.
    """

    call: Literal["read", "relate", "ask"]
    reason: str
    #: the turn's index in its ``read_many`` call; None when the whole answer was refused
    turn: int | None = None
    kind: Literal["rejection"] = "rejection"


# ---------------------------------------------------------------------------- wire models
# The strict models are what the model is shown; the loose envelope is what a whole answer
# must be, so that one bad reading is dropped alone instead of failing its whole batch.


class _Found(BaseModel):
    """One value of one attribute found in a turn."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True, title="Reading")
    attribute: str = Field(description="the attribute's name, from the list")
    value: str = Field(min_length=1, description="words copied from the turn, a label or "
                                                 "digits, as the attribute says")
    holder: Holder = Field(description="user: the user's own; other: someone else's")
    when: When = Field(description="now, past, plan, hypothetical or one_off")
    negated: bool = Field(description="true when the turn denies the value")
    confidence: float = Field(default=DEFAULT_CONFIDENCE, ge=0.0, le=1.0)


class _Item(BaseModel):
    model_config = ConfigDict(title="Turn")
    index: int = Field(description="the index of the turn, as given")
    readings: list[_Found]


class _ReadAnswer(BaseModel):
    model_config = ConfigDict(title="Readings")
    items: list[_Item]


class _LooseItem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    index: int
    readings: list[Any] = Field(default_factory=list)


class _LooseAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    items: list[_LooseItem]


class _RelateAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", title="Relation")
    kind: RelationKind
    attribute: str | None = Field(default=None, description="the attribute both are about")
    confidence: float = Field(default=DEFAULT_CONFIDENCE, ge=0.0, le=1.0)


class _AskAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", title="Question")
    attribute: str | None = Field(description="the attribute asked for; null for none")
    whose: Holder = "user"
    time: Literal["current", "past"] = "current"
    confidence: float = Field(default=DEFAULT_CONFIDENCE, ge=0.0, le=1.0)


# ---------------------------------------------------------------------------- the reader


class LLMReader:
    """Reads turns with a chat model; see the module docstring.

    Thread-safe as far as its client is (:class:`~memstrata.llm.OpenAIClient` is): the
    counters are kept under a lock. ``held`` is not sent: a turn is read alone, so one
    turn's reading does not depend on which batch it was read in.
    """

    name = "llm"

    def __init__(self, client: LLMClient, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 max_tokens: int | None = None,
                 temperature: float | None = DEFAULT_TEMPERATURE) -> None:
        if batch_size < 1:
            raise InvalidSettingError("batch_size must be at least 1")
        if max_tokens is not None and max_tokens < 1:
            raise InvalidSettingError("max_tokens must be at least 1 (or None: no limit)")
        self._client = client
        self.batch_size = batch_size
        #: sent with every call; a batch's answer grows with ``batch_size``
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._registry: Registry = registry()
        self._lock = threading.Lock()
        #: the most recent :class:`Rejection` s, oldest first
        self.rejected: deque[Rejection] = deque(maxlen=REJECTIONS_KEPT)
        #: every rejection so far (``rejected`` keeps only the last ones)
        self.rejected_total = 0
        #: tokens spent by this reader's calls, and how many calls it made
        self.usage = Usage()
        self.calls = 0
        names = list(self._registry.names)
        self._tools = {
            _READ_TOOL: _tool(_READ_TOOL, "Submit the readings of every turn.",
                              _ReadAnswer, names),
            _RELATE_TOOL: _tool(_RELATE_TOOL, "Submit how the newer statement stands to "
                                "the older.", _RelateAnswer, names),
            _ASK_TOOL: _tool(_ASK_TOOL, "Submit which attribute the question asks for.",
                             _AskAnswer, names),
        }
        self._prompts = {_READ_TOOL: _read_prompt(self._registry),
                         _RELATE_TOOL: _relate_prompt(self._registry),
                         _ASK_TOOL: _ask_prompt(self._registry)}

    @property
    def version(self) -> str:
        """The model the client uses, the prompt version and the registry version."""
        model = getattr(self._client, "model", None)
        named = f"{model}," if isinstance(model, str) and model else ""
        return f"llm({named}prompt={PROMPT_VERSION},registry={self._registry.version})"

    # ------------------------------------------------------------------ protocol

    def read(self, turn: str, held: Sequence[Held] = ()) -> list[Reading]:
        """Every value of a registry attribute in ``turn``; see :class:`Reader`."""
        return self.read_many([turn])[0]

    def read_many(self, turns: Sequence[str]) -> list[list[Reading]]:
        """``read`` for several turns, ``batch_size`` turns a call; a list per turn."""
        if isinstance(turns, str):
            raise InvalidInputError("read_many takes a sequence of turns, not one string")
        out: list[list[Reading]] = [[] for _ in turns]
        for first in range(0, len(turns), self.batch_size):
            chunk = turns[first:first + self.batch_size]
            batch = {i: text for i, text in enumerate(chunk) if text.strip()}
            if batch:
                for i, readings in self._read_batch(batch, first).items():
                    out[first + i] = readings
        return out

    def relate(self, older: str, newer: str) -> Relation:
        """How ``newer`` stands to ``older``; ``unrelated`` at 0.0 for an invalid answer."""
        unsure = Relation(kind="unrelated", confidence=0.0)
        raw = self._call(_RELATE_TOOL, "relate", {"older": older, "newer": newer})
        if raw is None:
            return unsure
        try:
            answer = _RelateAnswer.model_validate(raw)
        except ValidationError as exc:
            self._reject("relate", f"malformed relation: {_first(exc)}")
            return unsure
        if answer.attribute is not None and answer.attribute not in self._registry:
            self._reject("relate", f"unknown attribute {answer.attribute!r}")
            return unsure
        return Relation(kind=answer.kind, confidence=answer.confidence,
                        attribute=answer.attribute)

    def ask(self, query: str) -> Asked | None:
        """Which attribute ``query`` asks for; None for none and for an invalid answer."""
        raw = self._call(_ASK_TOOL, "ask", {"question": query})
        if raw is None:
            return None
        try:
            answer = _AskAnswer.model_validate(raw)
        except ValidationError as exc:
            self._reject("ask", f"malformed answer: {_first(exc)}")
            return None
        if answer.attribute is None:
            return None
        if answer.attribute not in self._registry:
            self._reject("ask", f"unknown attribute {answer.attribute!r}")
            return None
        return Asked(attribute=answer.attribute, whose=answer.whose, time=answer.time,
                     confidence=answer.confidence)

    # ------------------------------------------------------------------ reading

    def _read_batch(self, batch: dict[int, str], first: int) -> dict[int, list[Reading]]:
        """The checked readings of each turn of ``batch`` (keyed by index in the batch)."""
        raws = self._answers(_READ_TOOL, "read", {"turns": [
            {"index": i, "text": text} for i, text in batch.items()]})
        found: dict[int, list[Reading]] = {}
        for raw in raws:
            try:
                answer = _LooseAnswer.model_validate(raw)
            except ValidationError as exc:
                self._reject("read", f"the answer has the wrong shape: {_first(exc)}")
                continue
            for item in answer.items:
                if item.index not in batch:
                    self._reject("read", f"the answer names turn {item.index}, which was "
                                 "not asked")
                    continue
                if item.index in found:
                    self._reject("read", f"turn {item.index} is answered twice; the second "
                                 "is ignored", turn=first + item.index)
                    continue
                found[item.index] = self._checked(batch[item.index], item.readings,
                                                  first + item.index)
        return found

    def _checked(self, turn: str, raws: list[Any], index: int) -> list[Reading]:
        out: list[Reading] = []
        for raw in raws:
            reading = self._check(turn, raw)
            if isinstance(reading, str):
                self._reject("read", reading, turn=index)
            elif reading not in out:
                out.append(reading)
        return out

    def _check(self, turn: str, raw: object) -> Reading | str:
        """The reading ``raw`` says is in ``turn``, or why it is refused."""
        try:
            found = _Found.model_validate(raw)
        except ValidationError as exc:
            return f"malformed reading: {_first(exc)}"
        if found.attribute not in self._registry:
            return f"unknown attribute {found.attribute!r}"
        grounded = _ground(self._registry[found.attribute], found.value, turn)
        if isinstance(grounded, str):
            return grounded
        value, span = grounded
        return Reading(attribute=found.attribute, value=value, holder=found.holder,
                       when=found.when, negated=found.negated,
                       confidence=found.confidence, span=span)

    # ------------------------------------------------------------------ calls

    def _call(self, tool: str, call: Literal["relate", "ask"],
              payload: dict[str, Any]) -> object | None:
        """The first JSON object the model answered for ``tool``; None if it gave none."""
        answers = self._answers(tool, call, payload)
        return answers[0] if answers else None

    def _answers(self, tool: str, call: Literal["read", "relate", "ask"],
                 payload: dict[str, Any]) -> list[dict[str, Any]]:
        """Every JSON object the model answered for ``tool`` (a model may call it once per
        item); what cannot be parsed is recorded and left out."""
        messages = [{"role": "system", "content": self._prompts[tool]},
                    {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}]
        result = self._client.chat(messages, tools=[self._tools[tool]],
                                   temperature=self.temperature, max_tokens=self.max_tokens)
        with self._lock:
            self.calls += 1
            self.usage = self.usage + result.usage
        texts = _texts(result, tool)
        if isinstance(texts, str):
            self._reject(call, texts)
            return []
        out: list[dict[str, Any]] = []
        cut = " (the answer was cut off at max_tokens)" if result.finish_reason == "length" \
            else ""
        for text in texts:
            value = _loads(text)
            if value is None:
                self._reject(call, f"the answer is not JSON{cut}: {_short(text)}")
            elif not isinstance(value, dict):
                self._reject(call, f"the answer is not a JSON object: {_short(text)}")
            else:
                out.append(value)
        return out

    def _reject(self, call: Literal["read", "relate", "ask"], reason: str,
                turn: int | None = None) -> None:
        with self._lock:
            self.rejected.append(Rejection(call=call, reason=reason, turn=turn))
            self.rejected_total += 1


# ---------------------------------------------------------------------------- checks


def _fold(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` after NFKC and case folding, with the offsets in ``text`` of the character
    (and its combining marks) each folded character came from: ``(folded, starts, ends)``."""
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and unicodedata.combining(text[j]):
            j += 1
        piece = unicodedata.normalize("NFKC", text[i:j]).casefold()
        pieces.append(piece)
        starts += [i] * len(piece)
        ends += [j] * len(piece)
        i = j
    return "".join(pieces), starts, ends


def _locate(turn: str, value: str, *, number: bool = False) -> tuple[int, int] | None:
    """The offsets in ``turn`` of the first occurrence of ``value`` (NFKC, any case); a
    ``number`` only where no digit stands right before or after it (34 is not in 340)."""
    needle = _fold(value)[0]
    if not needle:
        return None
    folded, starts, ends = _fold(turn)
    at = folded.find(needle)
    while number and at >= 0 and (folded[at - 1:at].isdigit()
                                  or folded[at + len(needle):at + len(needle) + 1].isdigit()):
        at = folded.find(needle, at + 1)
    if at < 0:
        return None
    return starts[at], ends[at + len(needle) - 1]


def _ground(attr: Attribute, value: str, turn: str) -> tuple[str, tuple[int, int] | None] | str:
    """``(value, span)`` as returned for ``attr``, or why ``value`` is refused."""
    if attr.value == "label":
        labels = {_fold(label)[0]: label for label in attr.labels}
        label = labels.get(_fold(value.strip())[0])
        if label is None:
            return (f"{attr.name} {value!r} is not one of its labels "
                    f"({', '.join(attr.labels)})")
        zh = attr.labels_zh.get(label)
        return label, _locate(turn, label) or (_locate(turn, zh) if zh else None)
    if attr.value == "number":
        digits = unicodedata.normalize("NFKC", value).strip()
        if not (digits.isascii() and digits.isdigit()):
            return f"{attr.name} {value!r} is not digits"
        # not int(): Python refuses to convert a string of more than 4300 digits
        number = digits.lstrip("0") or "0"
        return number, (_locate(turn, digits, number=True)
                        or _locate(turn, number, number=True))
    words = value.strip(_STRIP)
    span = _locate(turn, words) if words else None
    if span is None:
        return f"{attr.name} {value!r} is not words of the turn"
    return turn[span[0]:span[1]], span


def _texts(result: ChatResult, tool: str) -> list[str] | str:
    """The JSON texts of an answer: the arguments of each call of ``tool``, else the
    content; or why there are none."""
    if result.tool_calls:
        mine = [c.arguments for c in result.tool_calls if c.name == tool]
        if not mine:
            called = ", ".join(sorted({c.name for c in result.tool_calls}))
            return f"the model called {called} instead of {tool}"
        return mine
    if not (result.content or "").strip():
        cut = " (cut off at max_tokens)" if result.finish_reason == "length" else ""
        return f"the answer is empty{cut}"
    return [result.content or ""]


def _loads(text: str) -> object | None:
    """The JSON value of ``text`` (bare, in a fence, or the outermost object in prose);
    None when there is none."""
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text.strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            value: object = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        return value
    return None


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "answer"
    return f"{where}: {error['msg']}"


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "…")


# ---------------------------------------------------------------------------- prompts


def _tool(name: str, description: str, model: type[BaseModel],
          attributes: list[str]) -> dict[str, Any]:
    """A tool definition whose parameters are ``model``'s schema, with every ``attribute``
    property limited to the registry's names."""
    schema = model.model_json_schema()
    _name_attributes(schema, attributes)
    return {"type": "function",
            "function": {"name": name, "description": description, "parameters": schema}}


def _name_attributes(schema: Any, names: list[str]) -> None:
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict) and "attribute" in props:
            enum = {"type": "string", "enum": names}
            nullable = "anyOf" in props["attribute"]
            described = {k: v for k, v in props["attribute"].items()
                         if k in ("description", "title", "default")}
            props["attribute"] = {**described, **(
                {"anyOf": [enum, {"type": "null"}]} if nullable else enum)}
        for value in schema.values():
            _name_attributes(value, names)
    elif isinstance(schema, list):
        for value in schema:
            _name_attributes(value, names)


def _attribute_lines(reg: Registry, *, full: bool) -> str:
    lines = []
    for a in reg:
        kind = _KINDS[a.value]
        if a.value == "label":
            kind += ": " + ", ".join(a.labels)
        count = "one value at a time" if a.cardinality == "single" else "several values"
        line = f"- {a.name} ({kind}; {count}): {a.en} / {a.zh}"
        if full and a.examples:
            line += ". Examples: " + "; ".join(json.dumps(e, ensure_ascii=False)
                                               for e in a.examples)
        lines.append(line)
    return "\n".join(lines)


def _read_prompt(reg: Registry) -> str:
    return f"""\
You read turns a user wrote to an assistant and list the facts they state, as values of \
the attributes below. The user message is a JSON object with the turns, each with an index.

Answer by calling {_READ_TOOL} once, with one item per turn, naming the turn by its index \
(an item with no readings, or no item, for a turn that states none). If you cannot call \
tools, answer with only the JSON object of its arguments.

Each reading has:
- attribute: one of the names below, nothing else.
- value: for an attribute whose value is words copied from the turn, copy those words \
exactly as written, in the turn's language and script: never translate, transliterate or \
correct them (a turn that says 上海 gives 上海, never Shanghai). For a label attribute, one \
of its labels exactly as listed, whatever the language of the turn (我现在吃素 gives \
vegetarian). For a number attribute, digits only (我今年三十了 gives 30).
- holder: "user" when the fact is the user's own; "other" when it is someone else's \
(a sister, a partner, a friend, a colleague): "my sister moved to Lyon" gives city Lyon \
with holder "other".
- when: "now" when it holds now; "past" when it no longer holds ("I used to live in \
Leeds"); "plan" when it is intended or arranged ("we move to Berlin in May"); \
"hypothetical" when it is only supposed, wished or asked about ("if I lived in Paris"); \
"one_off" for one occasion, not a standing fact ("I had a vegan burger today").
- negated: true when the turn denies the value ("I'm not vegetarian"), else false.
- confidence: how sure you are, from 0 to 1.

Attributes:
{_attribute_lines(reg, full=True)}
"""


def _relate_prompt(reg: Registry) -> str:
    return f"""\
You compare two statements a user made, an older and a newer one (the user message is a \
JSON object with "older" and "newer"), and say how the newer stands to the older. Answer \
by calling {_RELATE_TOOL}; if you cannot call tools, answer with only the JSON object of \
its arguments.

- kind: "same" (the same fact restated), "update" (a new value that replaces the old one: \
a move, a new job), "correction" (the newer says the older was wrong and gives the right \
value: "scratch that, it's the 14th", a denial of the older value), "contradiction" (the \
two cannot both hold and the newer neither says anything changed nor that the older was \
wrong), "elaboration" (adds detail to the same fact without replacing it) or "unrelated" \
(about different things).
- attribute: the attribute below both statements are about, or null.
- confidence: how sure you are, from 0 to 1.

Attributes:
{_attribute_lines(reg, full=False)}
"""


def _ask_prompt(reg: Registry) -> str:
    return f"""\
You read a question a user asks an assistant (the user message is a JSON object with \
"question") and say which attribute below it asks for. Answer by calling {_ASK_TOOL}; if \
you cannot call tools, answer with only the JSON object of its arguments.

- attribute: the attribute asked for, or null when the question asks for none of them.
- whose: "user" for the user's own value ("where do I live?"), "other" for someone \
else's ("where does my sister live?").
- time: "current", or "past" for a former value ("where did I live before?").
- confidence: how sure you are, from 0 to 1.

Attributes:
{_attribute_lines(reg, full=False)}
"""
