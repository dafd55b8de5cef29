"""The model reader: a small multilingual encoder the project trains and ships.

One pass of an int8 ONNX encoder (multilingual-e5-small, fine-tuned by
:mod:`memstrata.reading.train`) over a turn, then small heads in numpy: which words carry a
value of which registry attribute, and for each such value whose it is, when it holds,
whether it is denied and, for a diet, which one. ``ask`` and ``relate`` read a question or a
pair of statements with the same encoder. No torch, no LLM: a few milliseconds a turn on
one thread.

The files (``reader.onnx``, ``heads.npz``, ``tokenizer.json``) sit beside ``manifest.json``,
which names the base model, the training data's digest, the settings, the figures the model
was released with and each file's SHA-256. Loading checks the digests: a damaged or
replaced file is refused with :class:`~memstrata.errors.ReaderModelError` rather than read.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memstrata.errors import ReaderModelError
from memstrata.reading import _layout as L
from memstrata.reading.registry import registry
from memstrata.reading.types import Asked, Held, Reading, Relation

__all__ = ["DEFAULT_MODEL_DIR", "ModelReader", "check_pair", "decode_spans", "model_available",
           "span_chars", "write_manifest"]

#: where the shipped model lives (package data)
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "model"
_FILES = ("reader.onnx", "heads.npz", "tokenizer.json")
_STRIP = " \t\r\n.,!?;:'\"…。，！？；：、“”‘’()（）[]【】~～"
_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_CAPITALISED = frozenset({"name", "preferred_name", "city"})


def model_available(path: Path = DEFAULT_MODEL_DIR) -> bool:
    """Whether the model's files are there (not whether they are intact: loading checks)."""
    return all((path / f).is_file() for f in (*_FILES, "manifest.json"))


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(path: Path, info: dict[str, Any]) -> None:
    """Write ``manifest.json``: ``info`` plus each model file's size and SHA-256."""
    files = {name: {"bytes": (path / name).stat().st_size, "sha256": _digest(path / name)}
             for name in _FILES}
    manifest = {"format": 1, "registry_version": registry().version, **info, "files": files}
    (path / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False)
                                        + "\n", "utf-8")


def _softmax(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    out: npt.NDArray[np.float32] = e / e.sum(axis=-1, keepdims=True)
    return out


def _number(text: str) -> str | None:
    """Digits from ``35``, ``3-0``, ``thirty-five``, ``三十五``; None when none are there."""
    digits = "".join(ch for ch in text if ch.isascii() and ch.isdigit())
    if digits:
        return str(int(digits)) if len(digits) <= 3 else None
    words = re.findall(r"[a-z]+", text.lower())
    if words and all(w in _WORDS or w in _TENS for w in words):
        return str(sum(_WORDS.get(w, 0) + _TENS.get(w, 0) for w in words))
    zh = "".join(ch for ch in text if ch in "零〇一二两三四五六七八九十百")
    if zh:
        try:
            import cn2an

            return str(int(cn2an.cn2an(zh.replace("两", "二"), "smart")))
        except (ValueError, KeyError, TypeError):
            return None
    return None


def continues_word(text: str, offsets: Sequence[tuple[int, int]], i: int) -> bool:
    """Whether piece ``i`` continues the Latin word or number the piece before began."""
    a, b = offsets[i]
    pa, pb = offsets[i - 1]
    if b <= a or pb <= pa or pb != a:
        return False
    left, right = text[a - 1], text[a]
    return all(ch.isalnum() and ord(ch) < 0x250 for ch in (left, right))


def decode_spans(text: str, offsets: Sequence[tuple[int, int]], tags: Sequence[int],
                 start: int = 0) -> list[tuple[int, int, str]]:
    """The value spans ``(first token, last token + 1, attribute)`` that a window's tags
    mark; a word's later pieces follow its first ("Pri|ya", "Raz|or|pay")."""
    spans: list[tuple[int, int, str]] = []
    for i in range(1, len(tags) - 1):
        if continues_word(text, offsets, start + i):
            if spans and spans[-1][1] == i:
                spans[-1] = (spans[-1][0], i + 1, spans[-1][2])
            continue
        tag = L.TAGS[int(tags[i])]
        if tag == "O":
            continue
        attr = tag[2:]
        if tag.startswith("I-") and spans and spans[-1][1] == i and spans[-1][2] == attr:
            spans[-1] = (spans[-1][0], i + 1, attr)
        else:
            spans.append((i, i + 1, attr))
    return spans


def span_chars(text: str, offsets: Sequence[tuple[int, int]], a: int, b: int
               ) -> tuple[int, int] | None:
    """The characters of tokens ``a:b``, without the punctuation and spaces around them."""
    char_a, char_b = offsets[a][0], offsets[b - 1][1]
    words = text[char_a:char_b].strip(_STRIP)
    if not words:
        return None
    char_a += text[char_a:char_b].find(words)
    return char_a, char_a + len(words)


def check_pair(tok: Any, attribute: str, text: str, start: int, end: int,
               specials: tuple[int, int]) -> tuple[list[int], int, int] | None:
    """The checker's input for one candidate value: ``<s> attribute: value </s></s> the turn
    with the value marked «so» </s>``, cut to a window around the value, and where the
    marked value's tokens are in it. ``None`` when the value has no tokens."""
    value = text[start:end]
    marked = text[:start] + "\u00ab" + value + "\u00bb" + text[end:]
    head = tok.encode(f"{attribute.replace('_', ' ')}: {value}",
                      add_special_tokens=False).ids[:24]
    enc = tok.encode(marked, add_special_tokens=False)
    inside = [i for i, (a, b) in enumerate(enc.offsets) if b > a and a < end + 2 and b > start]
    if not inside:
        return None
    room = L.MAX_TOKENS - 4 - len(head)
    lo = max(0, min(inside[0] - room // 3, len(enc.ids) - room))
    body = enc.ids[lo:lo + room]
    first = inside[0] - lo + len(head) + 3
    last = min(inside[-1] - lo, len(body) - 1) + len(head) + 4
    bos, eos = specials
    return [bos, *head, eos, eos, *body, eos], first, last


class ModelReader:
    """Reads turns with the shipped model; see the module docstring.

    Thread-safe: ONNX Runtime sessions may be run from several threads; the session is
    created once, on the first read (so opening a manager costs nothing).
    """

    name = "model"

    #: the checker's least probability that a marked value is one of its attribute; None
    #: reads without the checker. The trainer chooses it on the dev split and records it in
    #: the manifest (``reader``), which sets it for that model; this is the value for a
    #: manifest that records none
    check_threshold: float | None = 0.2

    #: a value the first pass is at least this sure of is not checked (from the manifest
    #: likewise)
    check_above = 0.95

    def __init__(self, path: Path | None = None, *, threads: int = 1,
                 verify: bool = True) -> None:
        self.path = Path(path) if path is not None else DEFAULT_MODEL_DIR
        self._threads = threads
        self._verify = verify
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, dict[str, npt.NDArray[np.float32]]] | None = None
        self._manifest: dict[str, Any] | None = None

    # ------------------------------------------------------------------ loading

    @property
    def manifest(self) -> dict[str, Any]:
        if self._manifest is None:
            try:
                self._manifest = json.loads((self.path / "manifest.json").read_text("utf-8"))
            except FileNotFoundError as exc:
                raise ReaderModelError(
                    f"no reader model in {self.path} (manifest.json is missing); "
                    "train one with `python -m memstrata.reading.train`") from exc
            except (OSError, ValueError) as exc:
                raise ReaderModelError(f"the reader model's manifest in {self.path} cannot "
                                       f"be read: {exc}") from exc
            chosen = self._manifest.get("reader") or {}
            # the checker's thresholds chosen for this model, unless set on the instance
            for name in ("check_threshold", "check_above"):
                if name in chosen and name not in self.__dict__:
                    setattr(self, name, chosen[name])
        return self._manifest

    @property
    def version(self) -> str:
        """The model's identity: its ONNX file's digest (stored with every reading)."""
        return "model-" + str(self.manifest["files"]["reader.onnx"]["sha256"])[:12]

    def _load(self) -> tuple[Any, Any, dict[str, npt.NDArray[np.float32]]]:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            files = self.manifest.get("files", {})
            for name in _FILES:
                where = self.path / name
                if not where.is_file():
                    raise ReaderModelError(f"the reader model file {where} is missing")
                if self._verify and _digest(where) != files.get(name, {}).get("sha256"):
                    raise ReaderModelError(
                        f"the reader model file {where} does not match its manifest (damaged "
                        "or replaced); restore it from the package or retrain with "
                        "`python -m memstrata.reading.train`")
            import onnxruntime as ort
            from tokenizers import Tokenizer

            options = ort.SessionOptions()
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            try:
                session = ort.InferenceSession(str(self.path / "reader.onnx"), options,
                                               providers=["CPUExecutionProvider"])
                tok = Tokenizer.from_file(str(self.path / "tokenizer.json"))
                with np.load(self.path / "heads.npz") as npz:
                    heads = {k: np.asarray(npz[k], dtype=np.float32) for k in npz.files}
            except (OSError, ValueError, RuntimeError) as exc:
                raise ReaderModelError(f"the reader model in {self.path} cannot be loaded: "
                                       f"{exc}") from exc
            bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
            if bos is None or eos is None:
                raise ReaderModelError(f"the reader model's tokenizer in {self.path} has no "
                                       "<s> or </s>")
            self._bos: int = bos
            self._eos: int = eos
            self._loaded = (session, tok, heads)
            return self._loaded

    # ------------------------------------------------------------------ encoder

    def _encode(self, texts: Sequence[str]) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
        _, tok, _ = self._load()
        ids, offsets = [], []
        for enc in tok.encode_batch(list(texts), add_special_tokens=False):
            ids.append([self._bos, *enc.ids, self._eos])
            offsets.append([(0, 0), *enc.offsets, (0, 0)])
        return ids, offsets

    def _hidden(self, seqs: Sequence[Sequence[int]]) -> list[npt.NDArray[np.float32]]:
        session, _, _ = self._load()
        out: list[npt.NDArray[np.float32]] = [np.empty(0, np.float32)] * len(seqs)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        for c in range(0, len(order), 32):
            chunk = order[c:c + 32]
            width = max(len(seqs[i]) for i in chunk)
            ids = np.ones((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for j, i in enumerate(chunk):
                ids[j, :len(seqs[i])] = seqs[i]
                mask[j, :len(seqs[i])] = 1
            hidden = session.run(None, {"input_ids": ids, "mask": mask})[0]
            for j, i in enumerate(chunk):
                out[i] = hidden[j, :len(seqs[i])]
        return out

    @staticmethod
    def _clip(ids: list[int]) -> list[int]:
        """A question's first MAX_TOKENS tokens, still closed by ``</s>``."""
        return ids if len(ids) <= L.MAX_TOKENS else [*ids[:L.MAX_TOKENS - 1], ids[-1]]

    def _windows(self, ids: list[int]) -> list[tuple[int, list[int]]]:
        """``(offset, ids)`` windows of at most MAX_TOKENS, overlapping by a quarter."""
        body = ids[1:-1]
        size = L.MAX_TOKENS - 2
        if len(body) <= size:
            return [(0, ids)]
        step = size * 3 // 4
        out = []
        for start in range(0, len(body), step):
            out.append((start, [ids[0], *body[start:start + size], ids[-1]]))
            if start + size >= len(body):
                break
        return out

    def _dense(self, x: npt.NDArray[np.float32], name: str) -> npt.NDArray[np.float32]:
        heads = self._load()[2]
        out: npt.NDArray[np.float32] = x @ heads[name + ".w"] + heads[name + ".b"]
        return out

    def _pooled(self, hidden: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return np.tanh(self._dense(hidden.mean(axis=0), "pooled"))

    # ------------------------------------------------------------------ protocol

    def read(self, turn: str, held: Sequence[Held] = ()) -> list[Reading]:
        """Every value of a registry attribute in ``turn``; see :class:`Reader`."""
        return self.read_many([turn])[0]

    def read_many(self, turns: Sequence[str]) -> list[list[Reading]]:
        """``read`` for several turns at once (one batched pass; the nightly jobs use it)."""
        if not turns:
            return []
        ids, offsets = self._encode(turns)
        windows: list[tuple[int, int, list[int]]] = []
        for t, seq in enumerate(ids):
            windows += [(t, start, w) for start, w in self._windows(seq)]
        hidden = self._hidden([w for _, _, w in windows])
        found: list[dict[tuple[int, int], Reading]] = [{} for _ in turns]
        for (t, start, _), h in zip(windows, hidden, strict=True):
            for reading in self._readings(turns[t], offsets[t], start, h):
                assert reading.span is not None
                found[t].setdefault(reading.span, reading)
        readings = [sorted(f.values(), key=lambda r: r.span or (0, 0)) for f in found]
        if "check.w" in self._load()[2] and self.check_threshold is not None:
            readings = self._checked(turns, readings)
        return readings

    def _checked(self, turns: Sequence[str], readings: list[list[Reading]]
                 ) -> list[list[Reading]]:
        """Each value the first pass reads as the user's own, now, read again in a pass of
        its own with the value marked in the turn: one the checker does not take for the
        user's current value of its attribute ("dr" of "dr. who knows", "Yorker", the
        "Chase" of a comparison) is dropped. Values of the past, of others or denied are
        left as read (the checker learnt only "the user's own, now, or not").

        The checker also has whose / when / denied heads; on the dev split they read worse
        than the first pass's (changes 0.74 against 0.78), so the first pass's are kept.
        """
        _, tok, _ = self._load()
        pairs: list[tuple[int, int, tuple[list[int], int, int]]] = []
        for t, rs in enumerate(readings):
            for k, r in enumerate(rs):
                assert r.span is not None
                if not r.current_own or r.confidence >= self.check_above:
                    continue  # it learnt "the user's own value now, or not": only those
                pair = check_pair(tok, r.attribute, turns[t], r.span[0], r.span[1],
                                  (self._bos, self._eos))
                if pair is not None:
                    pairs.append((t, k, pair))
        hidden = self._hidden([pair[0] for _, _, pair in pairs]) if pairs else []
        dropped: set[tuple[int, int]] = set()
        for (t, k, (_, a, b)), h in zip(pairs, hidden, strict=True):
            feat = self._gelu(self._dense(np.concatenate([h[a:b].mean(axis=0),
                                                          h.mean(axis=0)]), "check"))
            valid = _softmax(self._dense(feat, "check_valid"))
            if valid[1] < (self.check_threshold or 0.0):
                dropped.add((t, k))
        return [[r for k, r in enumerate(rs) if (t, k) not in dropped]
                for t, rs in enumerate(readings)]

    @staticmethod
    def _gelu(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32] = 0.5 * x * (1.0 + np.vectorize(_erf)(x / np.sqrt(2.0)))
        return out

    def _readings(self, text: str, offsets: list[tuple[int, int]], start: int,
                  h: npt.NDArray[np.float32]) -> list[Reading]:
        probs = _softmax(self._dense(h, "tags"))
        tags = probs.argmax(axis=-1)
        spans = decode_spans(text, offsets, [int(x) for x in tags], start)
        if not spans:
            return []
        mean = h.mean(axis=0)
        out = []
        reg = registry()
        for a, b, attr in spans:
            chars = span_chars(text, offsets, start + a, start + b)
            if chars is None:
                continue
            char_a, char_b = chars
            words = text[char_a:char_b]
            feat = self._gelu(self._dense(np.concatenate([h[a:b].mean(axis=0), mean]), "span"))
            holder = _softmax(self._dense(feat, "holder"))
            when = _softmax(self._dense(feat, "when"))
            negated = _softmax(self._dense(feat, "negated"))
            kind = reg[attr].value
            if kind == "label":
                scores = _softmax(self._dense(feat, "label"))
                allowed = [i for i, lab in enumerate(L.LABELS) if lab.startswith(attr + ":")]
                best = max(allowed, key=lambda i: scores[i])
                value: str | None = L.LABELS[best].split(":", 1)[1]
            elif kind == "number":
                value = _number(words)
            else:
                value = words
                if attr in _CAPITALISED and value.islower():
                    value = " ".join(w[:1].upper() + w[1:] for w in value.split(" "))
            if value is None:
                continue
            confidence = float(min(probs[a:b, tags[a:b]].diagonal().mean(), holder.max(),
                                   when.max(), negated.max()))
            out.append(Reading(attribute=attr, value=value,
                               holder=L.HOLDER[int(holder.argmax())],
                               when=L.WHEN[int(when.argmax())],
                               negated=bool(negated.argmax()), confidence=confidence,
                               span=(char_a, char_b)))
        return out

    def ask(self, query: str) -> Asked | None:
        """Which attribute ``query`` asks for (None for a question about no attribute)."""
        ids, _ = self._encode([query])
        h = self._hidden([self._clip(ids[0])])[0]
        pooled = self._pooled(h)
        attr = _softmax(self._dense(pooled, "ask"))
        best = int(attr.argmax())
        if L.ASK[best] == "none":
            return None
        whose = _softmax(self._dense(pooled, "whose"))
        time = _softmax(self._dense(pooled, "time"))
        return Asked(attribute=L.ASK[best], whose=L.HOLDER[int(whose.argmax())],
                     time="past" if int(time.argmax()) == 1 else "current",
                     confidence=float(attr[best]))

    def relate(self, older: str, newer: str) -> Relation:
        """How ``newer`` stands to ``older`` (same, update, contradiction, ...)."""
        _, tok, _ = self._load()
        a = tok.encode(older, add_special_tokens=False).ids[:60]
        b = tok.encode(newer, add_special_tokens=False).ids[:L.MAX_TOKENS - 4 - len(a)]
        h = self._hidden([[self._bos, *a, self._eos, self._eos, *b, self._eos]])[0]
        probs = _softmax(self._dense(self._pooled(h), "relate"))
        best = int(probs.argmax())
        return Relation(kind=L.RELATE[best], confidence=float(probs[best]))


def _erf(x: float) -> float:
    import math

    return math.erf(x)
