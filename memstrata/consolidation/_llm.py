"""The LLM behind a token budget, and the prompts the jobs send it.

:class:`LLMGate` wraps a :class:`~memstrata.llm.RecordingModel` (any
:class:`~memstrata.llm.LLMClient` plus the call log), so every call a job makes
lands in the call log under the user it was made for, like the agent's, and
``forget_user`` erases it. Before each call it checks that the estimated cost
(prompt characters / 3 plus the completion allowance) still fits the run's
budget; past the budget, after an authentication or connection failure, or on
a malformed answer, it answers
``None`` and the caller uses the offline method for that item. So a run never
fails because of the model, and its report says which method ran for how many
items (``llm``, ``offline`` or ``llm+offline``). A call that fails is logged
too, with its error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from memstrata.errors import (
    LLMAuthError,
    LLMError,
    LLMUnavailableError,
    UnplannedModelCallError,
)
from memstrata.llm import RecordingModel

__all__ = ["LLMGate", "parse_json"]

_CHARS_PER_TOKEN = 3
_JSON_BLOCK = re.compile(r"```(?:json)?\s*(.+?)```", re.DOTALL)


def parse_json(text: str | None) -> Any:
    """The JSON value in a model answer (bare, or inside a ``` fence); None if absent."""
    if not text:
        return None
    fenced = _JSON_BLOCK.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    for candidate in candidates:
        candidate = candidate.strip()
        pairs = sorted(
            (candidate.find(opener), opener, closer)
            for opener, closer in (("{", "}"), ("[", "]"))
            if candidate.find(opener) != -1
        )
        for start, _, closer in pairs:  # the outermost value first
            end = candidate.rfind(closer)
            if end > start:
                try:
                    return json.loads(candidate[start : end + 1])
                except json.JSONDecodeError:
                    continue
    return None


@dataclass
class LLMGate:
    """Budgeted access to the model for one run (not shared between runs)."""

    client: RecordingModel
    budget: int
    max_tokens: int
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: why the model is no longer used in this run (None while it is)
    disabled: str | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def used(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def model(self) -> str:
        return self.client.model

    def ask(self, system: str, prompt: str, *, user_id: str, purpose: str) -> str | None:
        """The model's answer, or None: use the offline method for this item.

        ``user_id`` is whose data the prompt carries; ``purpose`` (at most 32
        characters: ``"summarize"``, ``"lesson"``, ``"conflicts"``) says what
        for. Both go to the call log.
        """
        if self.disabled is not None:
            return None
        estimate = (len(system) + len(prompt)) // _CHARS_PER_TOKEN + self.max_tokens
        if self.used + estimate > self.budget:
            self.disabled = f"token budget of {self.budget} reached after {self.used} tokens"
            return None
        try:
            result = self.client.chat_for(
                [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                user_id=user_id, task_id=None, turn=None, purpose=purpose,
                temperature=0.0,
                max_tokens=self.max_tokens,
            )
        except (LLMAuthError, LLMUnavailableError, UnplannedModelCallError) as exc:
            self.disabled = f"model unavailable: {exc}"
            self.errors.append(f"llm: {exc}")
            return None
        except LLMError as exc:
            self.errors.append(f"llm: {exc}")
            return None
        self.calls += 1
        self.prompt_tokens += result.usage.prompt_tokens
        self.completion_tokens += result.usage.completion_tokens
        return result.content

    def ask_json(self, system: str, prompt: str, *, user_id: str, purpose: str) -> Any:
        """Like :meth:`ask`, parsed as JSON; a malformed answer counts as no answer."""
        answer = self.ask(system, prompt, user_id=user_id, purpose=purpose)
        if answer is None:
            return None
        value = parse_json(answer)
        if value is None:
            self.errors.append("llm: the answer was not JSON; used the offline method")
        return value


SUMMARY_SYSTEM = (
    "You maintain the long-term memory of a personal assistant. Given one finished "
    "conversation, answer with JSON only: {\"summary\": \"<one line, at most 30 words, "
    "what the user wanted and what was decided>\", \"facts\": [{\"content\": \"<a durable "
    "fact or preference of the user, in their language>\", \"type\": \"preference|profile|"
    "knowledge\", \"attribute\": \"<single-valued attribute or null>\", \"value\": \"<value "
    "or null>\", \"confidence\": 0.0-1.0}]}. Only facts that stay true beyond this "
    "conversation; no small talk, moods or task details. Use [] when there are none."
)

LESSON_SYSTEM = (
    "You maintain the experience memory of an agent. Given one finished task trajectory, "
    "answer with JSON only: {\"lesson\": \"<one line, at most 30 words, of the form "
    "'goal: tried A: failed on <error>; B worked'>\"}."
)

PAIRS_SYSTEM = (
    "You check a user's memories for consistency. For each numbered pair of statements by "
    "the same user (older first), answer with JSON only: a list of {\"pair\": <number>, "
    "\"relation\": \"duplicate|contradiction|update|compatible\", \"reason\": \"<short>\"}. "
    "duplicate = same meaning; contradiction = both cannot be true and the newer one does not "
    "say it replaces the older; update = the newer one explicitly replaces or corrects the "
    "older; compatible = both can be true."
)
