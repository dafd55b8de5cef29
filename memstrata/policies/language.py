"""Language-aware fusion: trust the dense score only in scripts the model covers.

An embedding model trained on English (all-MiniLM-L6-v2) maps Chinese text to
near-unknown tokens: every Chinese sentence looks alike to it, and its cosine
similarities are noise. Fused with BM25 at the default weight, that noise made
Chinese recall worse than keyword search alone (issue 12: hit@5 0.78 hybrid vs
0.83 BM25 only). The fix is local to one query: the dense weight is multiplied
by the share of the query written in scripts the active model covers.

* Script detection is enough for the languages that hurt: Han (Chinese),
  kana (Japanese) and Hangul (Korean) are told apart from Latin letters by code
  point. Other alphabets (Cyrillic, Greek, Arabic, ...) count as ``"other"``.
* The share counts Latin words and CJK characters, a CJK character as half a
  word (a Chinese word is about two characters), so "我想学Python" is about
  60% Chinese.
* A query with no letters (digits, emoji) keeps the policy's weight.
* When the share is 0 the dense score takes no part at all: the weight is 0,
  and :meth:`RetrievalPolicy.score` then does not let the cosine alone admit
  a candidate, so the ranking is the keyword ranking.

The coverage of a model comes from the embedder (its ``scripts`` attribute,
``None`` meaning every script) or, for models that do not say, from
:data:`KNOWN_COVERAGE` by model name. A model nobody describes is trusted in
every script (an OpenAI-compatible endpoint usually is multilingual).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from types import MappingProxyType

__all__ = [
    "ALL_SCRIPTS",
    "CJK_SCRIPTS",
    "KNOWN_COVERAGE",
    "LANGUAGE_LABELS",
    "LATIN",
    "covered_share",
    "dense_weight_for",
    "language_of",
    "model_scripts",
    "script_counts",
]

LATIN = "latin"
HAN = "han"
KANA = "kana"
HANGUL = "hangul"
OTHER = "other"
CJK_SCRIPTS: frozenset[str] = frozenset({HAN, KANA, HANGUL})
ALL_SCRIPTS: frozenset[str] = frozenset({LATIN, HAN, KANA, HANGUL, OTHER})
#: weight of one CJK character against one Latin word
CJK_CHAR_WEIGHT = 0.5

#: coverage of models that do not declare it, by the model part of the vector
#: space name (``"all-MiniLM-L6-v2:384"`` -> ``"all-MiniLM-L6-v2"``)
KNOWN_COVERAGE: Mapping[str, frozenset[str]] = MappingProxyType({
    "all-MiniLM-L6-v2": frozenset({LATIN}),
    "all-MiniLM-L12-v2": frozenset({LATIN}),
    "all-mpnet-base-v2": frozenset({LATIN}),
})


def _script(char: str) -> str | None:
    code = ord(char)
    if 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF \
            or 0x20000 <= code <= 0x2FA1F:
        return HAN
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF:
        return KANA
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return HANGUL
    if not char.isalpha():
        return None
    if code < 0x250 or 0x1E00 <= code <= 0x1EFF or 0xFF21 <= code <= 0xFF5A:
        return LATIN
    return OTHER if unicodedata.category(char).startswith("L") else None


def script_counts(text: str) -> dict[str, float]:
    """Words per script: Latin (and other alphabetic) words count 1, CJK characters
    :data:`CJK_CHAR_WEIGHT` each."""
    counts: dict[str, float] = {}
    previous: str | None = None
    for char in text:
        script = _script(char)
        if script in CJK_SCRIPTS:
            counts[script] = counts.get(script, 0.0) + CJK_CHAR_WEIGHT
        elif script is not None and script != previous:
            counts[script] = counts.get(script, 0.0) + 1.0
        previous = script
    return counts


def covered_share(text: str, scripts: Iterable[str] | None) -> float:
    """The share of ``text``'s words in ``scripts`` (``None``: all); 1.0 without letters."""
    if scripts is None:
        return 1.0
    covered = frozenset(scripts)
    counts = script_counts(text)
    total = sum(counts.values())
    if total <= 0:
        return 1.0
    return sum(v for k, v in counts.items() if k in covered) / total


def dense_weight_for(dense_weight: float, query: str, scripts: Iterable[str] | None,
                     boost: Mapping[str, float] | None = None) -> float:
    """The dense weight to fuse ``query`` with, given the scripts the model covers.

    ``boost`` (script -> multiplier) is what a model declares for scripts where its
    similarity is worth more than the keyword index's (e5 on Chinese, where BM25 over
    character n-grams is weak): the weight of that share of the query is multiplied
    by it, capped at 1. A weight of 0 (keyword only) stays 0.
    """
    if not boost:
        return dense_weight * covered_share(query, scripts)
    covered = None if scripts is None else frozenset(scripts)
    counts = script_counts(query)
    total = sum(counts.values())
    if total <= 0:
        return dense_weight
    weight = 0.0
    for script, n in counts.items():
        if covered is None or script in covered:
            weight += n / total * min(1.0, dense_weight * boost.get(script, 1.0))
    return weight


def model_scripts(model_name: str, declared: Iterable[str] | None = None, *,
                  says: bool = False) -> frozenset[str] | None:
    """What a model covers: what it declares (``says``), else :data:`KNOWN_COVERAGE`
    by the model part of its vector-space name, else everything (``None``)."""
    if says:
        return None if declared is None else frozenset(declared)
    return KNOWN_COVERAGE.get(model_name.rsplit(":", 1)[0])


#: the labels :func:`language_of` gives (script-level: "latin" is not only English)
LANGUAGE_LABELS: Mapping[str, str] = MappingProxyType({
    "zh": "Chinese (Han)", "ja": "Japanese (kana)", "ko": "Korean (Hangul)",
    "latin": "Latin script", "other": "other scripts", "none": "no letters",
})


def language_of(text: str) -> str:
    """The text's main script as a language label: ``"zh"`` (Han without kana),
    ``"ja"`` (any kana), ``"ko"``, ``"latin"``, ``"other"`` or ``"none"``.

    The label with the most words wins (a CJK character is half a word), so
    "我想学Python编程" is ``"zh"`` and "What does 你好 mean?" is ``"latin"``.
    """
    counts = script_counts(text)
    if not counts:
        return "none"
    if counts.get(KANA):  # Japanese writes Han too; kana tells it apart
        counts[KANA] = counts.pop(KANA) + counts.pop(HAN, 0.0)
    best = max(sorted(counts), key=lambda k: counts[k])
    return {HAN: "zh", KANA: "ja", HANGUL: "ko"}.get(best, best)
