"""Offline one-line summaries: extractive over embeddings, and trajectory lessons.

Pure functions (the embedding is passed in). A session summary picks the
user's sentences nearest the centroid of everything the user said in the
session, then adds the next most central sentence that is not redundant
(maximal marginal relevance), while the line stays within ``max_chars``. A
lesson reads a trajectory's steps: which tools failed with which error, which
worked, and how the task ended ("tried A: failed on timeout; B worked").

Trade-off: extractive lines use the user's own words - nothing invented, but
nothing abstracted either; with an LLM configured the job asks the model
instead and falls back to these when the budget runs out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memstrata.policies.write import memorability

__all__ = ["Turn", "lesson_line", "one_line", "session_sentences", "session_summary"]

_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
_MMR_LAMBDA = 0.7
_MAX_SENTENCES = 3
_REDUNDANT = 0.9


@dataclass(frozen=True, slots=True)
class Turn:
    id: int
    role: str
    text: str
    at: datetime
    metadata: Mapping[str, Any]


def one_line(text: str, max_chars: int) -> str:
    """Whitespace collapsed to one line, cut at ``max_chars`` with an ellipsis."""
    line = re.sub(r"\s+", " ", text).strip()
    if len(line) <= max_chars:
        return line
    cut = line[: max_chars - 1]
    space = cut.rfind(" ")
    if space > max_chars * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def session_sentences(turns: Sequence[Turn]) -> list[str]:
    """The user's memorable sentences, in order (small talk and moods left out)."""
    out: list[str] = []
    for turn in turns:
        if turn.role.lower() not in ("user", "human"):
            continue
        for part in _SPLIT.split(turn.text):
            sentence = part.strip()
            if len(sentence) < 4 or sentence in out:
                continue
            if memorability(sentence)[0]:
                out.append(sentence)
    return out


def session_summary(
    turns: Sequence[Turn],
    embed: Callable[[list[str]], np.ndarray],
    *,
    max_chars: int,
) -> str | None:
    """``Session 2026-03-01 (12 turns): <central sentence>; <next one>`` or None when the
    user said nothing worth keeping."""
    sentences = session_sentences(turns)
    if not sentences:
        return None
    head = f"Session {turns[0].at:%Y-%m-%d} ({len(turns)} turns): "
    budget = max_chars - len(head)
    if len(sentences) == 1:
        return one_line(head + _strip_end(sentences[0]), max_chars)
    vectors = embed(sentences)
    centroid = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centroid)) or 1.0
    relevance = vectors @ (centroid / norm)
    chosen: list[int] = []
    while len(chosen) < _MAX_SENTENCES:
        best, best_score = -1, -np.inf
        for i in range(len(sentences)):
            if i in chosen:
                continue
            redundancy = max((float(vectors[i] @ vectors[j]) for j in chosen), default=0.0)
            if redundancy >= _REDUNDANT:
                continue
            score = _MMR_LAMBDA * float(relevance[i]) - (1 - _MMR_LAMBDA) * redundancy
            if score > best_score:
                best, best_score = i, score
        if best < 0:
            break
        picked = [*chosen, best]
        if chosen and len("; ".join(_strip_end(sentences[i]) for i in sorted(picked))) > budget:
            break
        chosen = picked
    body = "; ".join(_strip_end(sentences[i]) for i in sorted(chosen))
    return one_line(head + body, max_chars)


def _strip_end(sentence: str) -> str:
    return sentence.rstrip(" .!。！")


def lesson_line(
    goal: Mapping[str, Any],
    status: str,
    steps: Sequence[Mapping[str, Any]],
    feedback: Mapping[str, Any] | None,
    *,
    max_chars: int,
) -> str:
    """One line of what a finished task teaches: ``goal: tried A: failed on timeout;
    B worked -> done``."""
    intent = str(goal.get("intent") or goal.get("goal") or next(iter(goal.values()), "task"))
    order: list[str] = []
    outcomes: dict[str, list[tuple[bool, str | None]]] = {}
    for step in steps:
        action = step.get("action")
        outcome = str(step.get("outcome") or "")
        if not action or outcome in ("final", "refused"):
            continue
        ok = step.get("error_type") is None and outcome not in ("failure", "error", "failed")
        if action not in outcomes:
            order.append(str(action))
            outcomes[str(action)] = []
        outcomes[str(action)].append((ok, step.get("error_type") or (None if ok else outcome)))
    parts = []
    for action in order:
        results = outcomes[action]
        errors = sorted({str(e) for ok, e in results if not ok and e})
        failed = [r for r in results if not r[0]]
        worked = any(ok for ok, _ in results)
        if failed and worked:
            parts.append(f"{action} failed on {', '.join(errors) or 'an error'}, then worked")
        elif failed:
            times = f" (x{len(failed)})" if len(failed) > 1 else ""
            parts.append(f"tried {action}: failed on {', '.join(errors) or 'an error'}{times}")
        else:
            parts.append(f"{action} worked")
    body = "; ".join(parts) if parts else "no tool steps recorded"
    line = f"{_strip_end(intent)}: {body} -> {status}"
    if feedback and _rejected(feedback):
        line += " (the user rejected the result)"
    return one_line(line, max_chars)


def _rejected(feedback: Mapping[str, Any]) -> bool:
    if feedback.get("accepted") is False or feedback.get("rejected") is True:
        return True
    rating = feedback.get("rating")
    return isinstance(rating, int | float) and rating <= 2
