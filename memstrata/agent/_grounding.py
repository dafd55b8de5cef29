"""Grounding: an identifier must be one the user actually said, as whole words.

Text is normalised (NFKC, so full-width ``Ａ１００２`` is ``a1002``; casefolded)
and split into tokens: runs of letters and digits (``A1002``, ``B-2001`` is
``b``, ``2001``), and each CJK character on its own (Chinese has no spaces, so
``订单A1002`` is ``订``, ``单``, ``a1002``). A value is grounded when its tokens
are non-empty and appear, contiguous and whole, in the evidence tokens: ``""``,
``" "``, ``"1"``, ``"00"`` or ``"A100"`` are not grounded by ``"order A1002"``.

The evidence is the user's own words (the goal's intent and the user's
messages). A tool's output is untrusted data - a poisoned record could name any
id - and grounds a value only for a parameter declared
``Grounded(tool_outputs=True)``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

__all__ = ["grounded_in", "tokens"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


def tokens(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return _TOKEN.findall(folded)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def grounded_in(value: Any, evidence: Sequence[str]) -> bool:
    """Do ``value``'s tokens occur, contiguous and whole, in ``evidence`` tokens?"""
    want = tokens(_text(value))
    if not want:
        return False
    n = len(want)
    first = want[0]
    return any(evidence[i] == first and list(evidence[i:i + n]) == want
               for i in range(len(evidence) - n + 1))
