"""The model reader: a small multilingual encoder the project trains and ships.

One pass of an int8 ONNX encoder (multilingual-e5-small, fine-tuned by
:mod:`memstrata.reading.train`) over a turn, then small heads in numpy: which words carry a
value of which registry attribute, and for each such value whose it is, when it holds,
whether it is denied and, for a diet, which one. ``ask`` and ``relate`` read a question or a
pair of statements with the same encoder. With what the user holds (``read(turn, held)``),
the change detector reads the turn again beside each held value it may change, and drops
or takes that attribute's new value (:attr:`ModelReader.detect_veto`). No torch, no LLM: a
few milliseconds a turn on one thread.

The files (``reader.onnx``, ``heads.npz``, ``tokenizer.json``, and the change detector's
``detector.npz``) sit beside ``manifest.json``,
which names the base model, the training data's digest, the settings, the figures the model
was released with and each file's SHA-256. Loading checks the digests: a damaged or
replaced file is refused with :class:`~memstrata.errors.ReaderModelError` rather than read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memstrata._ort import ort_errors
from memstrata.errors import ReaderModelError
from memstrata.reading import _layout as L
from memstrata.reading.registry import registry
from memstrata.reading.score import value_matches
from memstrata.reading.types import Asked, Held, Reading, Relation, RelationKind

__all__ = ["DEFAULT_MODEL_DIR", "POINTER", "POINTER_WIDTH", "ModelReader", "best_tags",
           "check_pair", "decode_spans", "join_split_characters", "model_available",
           "pointer_heads", "pointer_probs", "pointer_runs", "span_chars", "write_manifest"]

#: where the shipped model lives (package data)
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "model"
_FILES = ("reader.onnx", "heads.npz", "tokenizer.json")
#: the change detector's weights (:meth:`ModelReader.detection_inputs`): optional, a model
#: trained before it reads without one
DETECTOR = "detector.npz"
#: the pointer head's weights (:meth:`ModelReader._bounded`): optional, a model without
#: them reads its values' words from the tags
POINTER = "pointer.npz"
#: the longest value the pointer head reads, in tokens
POINTER_WIDTH = 24
_STRIP = " \t\r\n.,!?;:'\"…。，！？；：、“”‘’()（）[]【】~～"
_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_CAPITALISED = frozenset({"name", "preferred_name", "city"})
#: in the model's version: a number the tags began on a piece of is read whole (五十歲 was
#: read 10, "sixty-five" 60 and 5); readings stored before it are reread
_NUMBERS = "+numbers"


def model_available(path: Path = DEFAULT_MODEL_DIR) -> bool:
    """Whether the model's files are there (not whether they are intact: loading checks)."""
    return all((path / f).is_file() for f in (*_FILES, "manifest.json"))


def _unsaturated(path: Path) -> bytes:
    """The int8 graph at ``path`` with the weights of its integer matrix products moved from
    int8 to uint8 (every value and zero point + 128): the same exact integer result, but
    computed by onnxruntime's u8u8 kernels. Its u8s8 kernels on x86 CPUs without VNNI (AVX2
    only) add pairs of products in 16 bits, which saturate: the same model read other values
    on an AMD EPYC than where it was trained and tested (18 tests, the dev figures among
    them). The file and its digest are unchanged; only the session's copy is."""
    import onnx
    from google.protobuf.message import DecodeError
    from onnx import numpy_helper

    try:
        model = onnx.load(str(path))
    except DecodeError as exc:  # a damaged file, read without its digest checked
        raise ValueError(f"not an ONNX graph: {exc}") from exc
    inits = {i.name: i for i in model.graph.initializer}
    shifted: set[str] = set()

    def shift(name: str) -> None:
        init = inits.get(name)
        if init is None or name in shifted or init.data_type != onnx.TensorProto.INT8:
            return
        values = numpy_helper.to_array(init).astype(np.int16) + 128
        init.CopyFrom(numpy_helper.from_array(values.astype(np.uint8), name))
        shifted.add(name)

    for node in model.graph.node:
        if node.op_type != "MatMulInteger" or len(node.input) < 2:
            continue
        weight = inits.get(node.input[1])
        if weight is None or weight.data_type != onnx.TensorProto.INT8:
            continue
        if len(node.input) < 4 or not node.input[3]:
            zero = f"{node.input[1]}_zero_point_u8"
            if zero not in inits:
                inits[zero] = numpy_helper.from_array(np.array(0, dtype=np.int8), zero)
                model.graph.initializer.append(inits[zero])
            while len(node.input) < 4:
                node.input.append("")
            node.input[3] = zero
        shift(node.input[1])
        shift(node.input[3])
    return bytes(model.SerializeToString())


#: the manifest's word for a graph whose integer products already have uint8 weights (as
#: the trainer exports them since stop 56): the session reads the file as it is, without
#: :func:`_unsaturated`'s rewrite (which imports ``onnx``: about a second on the first read)
UNSIGNED = "uint8"


def write_unsigned(path: Path) -> None:
    """Replace the int8 graph at ``path`` by its uint8 form (:func:`_unsaturated`: the same
    exact integer products), atomically; its manifest then says ``"weights": "uint8"``."""
    tmp = path.with_name(path.name + ".u8.tmp")
    tmp.write_bytes(_unsaturated(path))
    os.replace(tmp, path)


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(path: Path, info: dict[str, Any]) -> None:
    """Write ``manifest.json``: ``info`` plus each model file's size and SHA-256."""
    files = {name: {"bytes": (path / name).stat().st_size, "sha256": _digest(path / name)}
             for name in (*_FILES, DETECTOR, POINTER) if (path / name).is_file()}
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


def _words_value(attr: str, kind: str, words: str) -> str | None:
    """The value of a span or number attribute in ``words``: digits for a number (None
    where there are none), else the words, a name or a city capitalised where typed in
    lower case."""
    if kind == "number":
        return _number(words)
    if attr in _CAPITALISED and words.islower():
        return " ".join(w[:1].upper() + w[1:] for w in words.split(" "))
    return words


_ZH_NUMERALS = frozenset("零〇一二两三四五六七八九十百")


def whole_number(text: str, a: int, b: int) -> tuple[int, int]:
    """Characters ``a:b`` of ``text`` widened to the whole number they are a piece of:
    五十 rather than 十, "sixty-five" rather than "sixty" and "five" (the tags may begin a
    number on any of its words); unchanged where the span is no number's piece."""
    if _number(text[a:b]) is None:
        return a, b
    while a > 0 and text[a - 1] in _ZH_NUMERALS:
        a -= 1
    while b < len(text) and text[b] in _ZH_NUMERALS:
        b += 1
    words = text[a:b].lower()
    if words and all(w in _WORDS or w in _TENS for w in re.split(r"[\s-]+", words)):
        right = re.match(r"[ -]([a-z]+)\b", text[b:], re.I)
        if right and words in _TENS and right.group(1).lower() in _WORDS \
                and 0 < _WORDS[right.group(1).lower()] < 10:
            b += right.end()
        left = re.search(r"\b([a-z]+)[ -]$", text[:a], re.I)
        if left and left.group(1).lower() in _TENS and words in _WORDS \
                and 0 < _WORDS[words] < 10:
            a = left.start()
    return a, b


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


@functools.cache
def _bio_rule() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """BIO's rule over :data:`~memstrata.reading._layout.TAGS`: which tag may follow which
    (an inside tag only continues a value of its own attribute) and which may begin."""
    inside = [t[2:] if t.startswith("I-") else None for t in L.TAGS]
    follows = np.array([[inside[c] is None or (t != "O" and t[2:] == inside[c])
                         for c in range(len(L.TAGS))] for t in L.TAGS])
    begins = np.array([a is None for a in inside])
    return follows, begins


def best_tags(logp: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
    """The likeliest tags of a window's tokens (``logp``: log-probabilities, tokens x
    tags) that obey BIO's rule: an inside tag (``I-city``) continues a value of its own
    attribute and never begins one.

    Each token's likeliest tag where those obey the rule (most windows); otherwise the best
    path under it (Viterbi), so that a value's words are read as one value: 格尔木 rather
    than 格 and 尔, "长城宽带" rather than "长城". Measured on the reader's blind change
    sets of rounds 4-8 (1,920 cases), against each token's likeliest tag alone: changes
    read 0.758 -> 0.782, guards held 0.909 -> 0.903 (``benchmarks/results/reader_decode.json``).
    """
    tags: npt.NDArray[np.int64] = logp.argmax(axis=-1)
    follows, begins = _bio_rule()
    if len(tags) == 0 or (begins[tags[0]] and follows[tags[:-1], tags[1:]].all()):
        return tags
    penalty = np.where(follows, 0.0, -np.inf)
    score = np.where(begins, logp[0], -np.inf)
    back = np.zeros(logp.shape, dtype=np.int64)
    for i in range(1, len(logp)):
        step = score[:, None] + penalty
        back[i] = step.argmax(axis=0)
        score = step.max(axis=0) + logp[i]
    path = [int(score.argmax())]
    for i in range(len(logp) - 1, 0, -1):
        path.append(int(back[i, path[-1]]))
    return np.array(path[::-1], dtype=np.int64)


def join_split_characters(tags: npt.NDArray[np.int64], offsets: Sequence[tuple[int, int]],
                          start: int = 0) -> npt.NDArray[np.int64]:
    """``tags`` with a value's first character read as one token: the tokenizer gives a
    character after a space, or at the start of a text, a bare ``▁`` piece of its own that
    covers the same character (``▁`` ``电`` ``信`` for 电信), and the tagger, trained to begin
    the value on the first piece that covers it, often begins it on both; the second
    ``B-`` becomes ``I-`` there (电信, not 电 and 电信)."""
    out = tags.copy()
    for i in range(1, len(out)):
        (pa, pb), (a, _) = offsets[start + i - 1], offsets[start + i]
        if pb == pa + 1 and a == pa and out[i] == out[i - 1] \
                and L.TAGS[int(out[i])].startswith("B-"):
            out[i] = L.tag_of(L.TAGS[int(out[i])][2:], begin=False)
    return out


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


#: what the change detector reads of one held attribute (:meth:`ModelReader._detect_items`)
_Item = tuple[Held, npt.NDArray[np.float32], npt.NDArray[np.float32], list[Reading]]


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

    #: reading a turn with values held: what the first tag of a held attribute's value
    #: (``B-``, a logit) gains, and what its inside tags (``I-``) gain; 0 and 0 read as if
    #: nothing were held, the default (from the manifest likewise; ``python -m
    #: memstrata.reading.train --choose-held`` chooses them on the dev change cases, see
    #: :func:`memstrata.reading.train.choose_held` for why the shipped model leaves them 0)
    held_bias = 0.0
    held_bias_inside = 0.0

    #: how the tags of a window are read: ``"bio"``, the likeliest tags that obey BIO's rule
    #: (:func:`best_tags`), or ``"argmax"``, each token's likeliest tag (from the manifest
    #: likewise; a manifest that records none reads ``"argmax"``, as its model was released)
    decode = "argmax"

    #: the change detector (a model whose manifest lists ``detector.npz``): for each
    #: attribute the user holds, how likely the turn changes the user's own value of it,
    #: read from the held value and the turn as one pair. Below ``detect_veto`` the turn's
    #: new own values of that attribute are dropped (someone else's move read as the
    #: user's); above ``detect_rescue`` with no new own value read, the likeliest one is
    #: taken: a value read as not the user's now, else the likeliest words the tags give
    #: the attribute where the first of them has at least ``detect_words`` and, with
    #: ``detect_apart``, they are not a piece of the words of another value read in the
    #: turn (入职字节 read 字节 as the employer, and the occupation's likeliest words were
    #: 字) (the thresholds chosen on the dev change cases by ``python -m
    #: memstrata.reading.train --detector``; from the manifest likewise; a ``detect_veto``
    #: of None reads without the detector)
    detect_veto: float | None = None
    detect_rescue = 0.9
    detect_words = 0.01
    detect_apart = True

    #: where a value's words begin and end: ``"tags"``, as the first pass's tags mark them
    #: (read as :attr:`decode` says), or ``"bounds"`` (a model whose manifest lists
    #: ``pointer.npz``): the tags say that a value of an attribute is there, and the
    #: pointer head, which scores every run of up to :data:`POINTER_WIDTH` whole words as a
    #: value of each attribute or none, says where its words begin and end - the run it
    #: likeliest gives that attribute among the runs that contain the tagged words
    #: (湖南农业大学继续教育学院 where the tags marked 南农业大学, "TU Delft" for "TU"); whose it
    #: is and when it holds are read on those words (from the manifest likewise; a
    #: manifest that records none reads the tags)
    values = "tags"

    def __init__(self, path: Path | None = None, *, threads: int = 1,
                 verify: bool = True) -> None:
        self.path = Path(path) if path is not None else DEFAULT_MODEL_DIR
        self._threads = threads
        self._verify = verify
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, dict[str, npt.NDArray[np.float32]]] | None = None
        self._manifest: dict[str, Any] | None = None
        self._encodings: dict[tuple[tuple[int, ...], ...],
                              list[npt.NDArray[np.float32]]] | None = None

    def share_encodings(self, encodings: dict[tuple[tuple[int, ...], ...],
                                              list[npt.NDArray[np.float32]]]) -> None:
        """Keep the encoder's outputs in ``encodings``, keyed by the token ids of each call,
        and read them from there when the same ids come again: readers of one model that
        differ only in their thresholds (the trainer's sweeps) share one dict, and the
        encoder runs once for each text instead of once for each reader. The readings are
        the same as without it (a call's outputs are those of the same call run alone).
        Nothing is ever dropped: for a sweep over a fixed split, not for serving."""
        self._encodings = encodings

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
            for name in ("check_threshold", "check_above", "held_bias", "held_bias_inside",
                         "decode", "detect_veto", "detect_rescue", "detect_words",
                         "detect_apart", "values"):
                if name in chosen and name not in self.__dict__:
                    setattr(self, name, chosen[name])
        return self._manifest

    @property
    def version(self) -> str:
        """The model's identity: its ONNX file's digest (stored with every reading), how it
        reads numbers (``_NUMBERS``), and every setting that makes it read otherwise than
        its manifest chose: what a held attribute's tags gain, the pointer head, the
        decoding, the change detector's thresholds and the checker's."""
        digest = "model-" + str(self.manifest["files"]["reader.onnx"]["sha256"])[:12] \
            + _NUMBERS
        if self.held_bias or self.held_bias_inside:
            digest += f"+held{self.held_bias:g}/{self.held_bias_inside:g}"
        if self._bounding:
            digest += f"+bounds-{str(self.manifest['files'][POINTER]['sha256'])[:8]}"
        if self.decode != "argmax":
            digest += f"+{self.decode}"
        if self._detecting:
            detector = str(self.manifest["files"][DETECTOR]["sha256"])[:8]
            digest += f"+detect-{detector}/{self.detect_veto:g}/{self.detect_rescue:g}" \
                      f"/{self.detect_words:g}{'/apart' if self.detect_apart else ''}"
        chosen = self.manifest.get("reader") or {}
        if (self.check_threshold, self.check_above) != (
                chosen.get("check_threshold", ModelReader.check_threshold),
                chosen.get("check_above", ModelReader.check_above)):
            threshold = "off" if self.check_threshold is None else f"{self.check_threshold:g}"
            digest += f"+check-{threshold}/{self.check_above:g}"
        return digest

    @property
    def _detecting(self) -> bool:
        """Whether reads use the change detector (the manifest lists one and it is on)."""
        return self.detect_veto is not None and DETECTOR in self.manifest.get("files", {})

    @property
    def _bounding(self) -> bool:
        """Whether the pointer head bounds the values' words (the manifest lists one and
        :attr:`values` asks for it)."""
        return self.values == "bounds" and POINTER in self.manifest.get("files", {})

    def _load(self) -> tuple[Any, Any, dict[str, npt.NDArray[np.float32]]]:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            files = self.manifest.get("files", {})
            for name in (*_FILES, *(f for f in (DETECTOR, POINTER) if f in files)):
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

            load_errors: tuple[type[BaseException], ...] = (OSError, *ort_errors())
            options = ort.SessionOptions()
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            try:
                graph = self.path / "reader.onnx"
                session = ort.InferenceSession(
                    str(graph) if self.manifest.get("weights") == UNSIGNED
                    else _unsaturated(graph), options, providers=["CPUExecutionProvider"])
                tok = Tokenizer.from_file(str(self.path / "tokenizer.json"))
                with np.load(self.path / "heads.npz") as npz:
                    heads = {k: np.asarray(npz[k], dtype=np.float32) for k in npz.files}
                if DETECTOR in files:
                    with np.load(self.path / DETECTOR) as npz:
                        heads |= {"detect." + k: np.asarray(npz[k], dtype=np.float32)
                                  for k in npz.files}
                if POINTER in files:
                    with np.load(self.path / POINTER) as npz:
                        heads |= pointer_heads({k: npz[k] for k in npz.files})
            except load_errors as exc:
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
        if self._encodings is not None:
            key = tuple(tuple(s) for s in seqs)
            kept = self._encodings.get(key)
            if kept is None:
                kept = self._encodings[key] = self._encode_hidden(seqs)
                for h in kept:
                    h.setflags(write=False)  # shared by every reader of the dict
            return list(kept)
        return self._encode_hidden(seqs)

    def _encode_hidden(self, seqs: Sequence[Sequence[int]]) -> list[npt.NDArray[np.float32]]:
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
        return self.read_many([turn], [held])[0]

    def read_many(self, turns: Sequence[str], held: Sequence[Sequence[Held]] | None = None
                  ) -> list[list[Reading]]:
        """``read`` for several turns at once (one batched pass; the nightly jobs use it);
        ``held[i]`` is what the user holds when ``turns[i]`` is said (see :attr:`held_bias`
        and :attr:`detect_veto`)."""
        if not turns:
            return []
        helds = list(held) if held is not None else [()] * len(turns)
        readings, first = self._first_pass(turns, helds)
        if self._detecting and any(helds):
            readings = self._detected(turns, helds, readings, first)
        return readings

    def _first_pass(self, turns: Sequence[str], held: Sequence[Sequence[Held]]
                    ) -> tuple[list[list[Reading]], list[tuple[npt.NDArray[np.float32],
                                                               list[tuple[int, int]]]]]:
        """The readings of each turn (tags, then the checker), and each turn's first
        window's token states with the turn's token offsets (for the change detector)."""
        ids, offsets = self._encode(turns)
        windows: list[tuple[int, int, list[int]]] = []
        for t, seq in enumerate(ids):
            windows += [(t, start, w) for start, w in self._windows(seq)]
        hidden = self._hidden([w for _, _, w in windows])
        found: list[dict[tuple[int, int], Reading]] = [{} for _ in turns]
        first: list[tuple[npt.NDArray[np.float32], list[tuple[int, int]]]] = \
            [(np.empty(0, np.float32), [])] * len(turns)
        held_attrs = [frozenset(h.attribute for h in hs) for hs in held]
        for (t, start, _), h in zip(windows, hidden, strict=True):
            if start == 0:
                first[t] = (h, offsets[t])
            for reading in self._readings(turns[t], offsets[t], start, h, held_attrs[t]):
                assert reading.span is not None
                found[t].setdefault(reading.span, reading)
        readings = [sorted(f.values(), key=lambda r: r.span or (0, 0)) for f in found]
        if "check.w" in self._load()[2] and self.check_threshold is not None:
            readings = self._checked(turns, readings)
        return readings, first

    # ------------------------------------------------------------------ change detector

    def detection_inputs(self, turn: str, held: Sequence[Held], *, every: bool = False
                         ) -> list[tuple[Held, npt.NDArray[np.float32]]]:
        """The change detector's input for each attribute in ``held`` that ``turn`` may
        change (its trainer's view; ``every``: each single-valued registry attribute in
        ``held``, also one the turn shows nothing of), read without the detector."""
        readings, first = self._first_pass([turn], [held])
        items = self._detect_items(turn, held, readings[0], first[0], every=every)
        feats = self._detect_features([turn] * len(items), items)
        return [(item[0], f) for item, f in zip(items, feats, strict=True)]

    def _detect_items(self, turn: str, held: Sequence[Held], readings: Sequence[Reading],
                      first: tuple[npt.NDArray[np.float32], list[tuple[int, int]]], *,
                      every: bool = False) -> list[_Item]:
        """``(held value, the token states of the turn's first window, their tags'
        probabilities, the turn's readings of the held attribute's family)`` for each held
        single-valued attribute the turn reads a value of, or whose values' first tag it
        gives at least :attr:`detect_words` somewhere (the detector changes nothing
        elsewhere)."""
        probs = _softmax(self._dense(first[0], "tags"))
        out: list[_Item] = []
        seen: set[str] = set()
        for h in held:
            if h.attribute in seen or h.attribute not in registry().names \
                    or registry()[h.attribute].cardinality != "single":
                continue
            seen.add(h.attribute)
            of = [r for r in readings if r.attribute in L.family(h.attribute)]
            if every or of or probs[:, L.tag_of(h.attribute, True)].max() >= self.detect_words:
                out.append((h, first[0], probs, of))
        return out

    def _detect_features(self, turns: Sequence[str], items: Sequence[_Item]
                         ) -> list[npt.NDArray[np.float32]]:
        """One pass over ``<s> attribute: held value </s></s> turn </s>`` per item: the
        pair's mean, its turn part's mean, its first token, the relation it reads, and the
        tags' and first pass's view of the turn alone."""
        if not items:
            return []
        pairs = [self._pair_ids(f"{h.attribute.replace('_', ' ')}: {h.value}", turn)
                 for turn, (h, _, _, _) in zip(turns, items, strict=True)]
        hidden = self._hidden(pairs)
        out = []
        for ids, hp, (h, alone, probs, of) in zip(pairs, hidden, items, strict=True):
            turn_part = hp[ids.index(self._eos) + 2:]
            own = [r for r in of if r.current_own]
            new = [r for r in own if not value_matches(h.attribute, r.value, h.value)]
            out.append(np.concatenate([
                hp.mean(axis=0), turn_part.mean(axis=0), hp[0],
                _softmax(self._dense(self._pooled(hp), "relate")),
                alone.mean(axis=0),
                [probs[:, L.tag_of(h.attribute, True)].max(), bool(own), bool(new),
                 max((r.confidence for r in own), default=0.0)]]).astype(np.float32))
        return out

    def _detect_scores(self, feats: Sequence[npt.NDArray[np.float32]]) -> list[float]:
        """The detector's probability for each input that the turn changes the held value."""
        if not feats:
            return []
        heads = self._load()[2]
        x = (np.stack(feats) - heads["detect.mean"]) / heads["detect.scale"]
        hidden = np.maximum(x @ heads["detect.w1"] + heads["detect.b1"], 0.0)
        return [float(p) for p in _softmax(hidden @ heads["detect.w2"] + heads["detect.b2"])[:, 1]]

    def _detected(self, turns: Sequence[str], held: Sequence[Sequence[Held]],
                  readings: list[list[Reading]],
                  first: Sequence[tuple[npt.NDArray[np.float32], list[tuple[int, int]]]]
                  ) -> list[list[Reading]]:
        """``readings`` as the change detector corrects them (see :attr:`detect_veto`)."""
        todo = [(t, item) for t, turn in enumerate(turns)
                for item in self._detect_items(turn, held[t], readings[t], first[t])]
        scores = self._detect_scores(self._detect_features([turns[t] for t, _ in todo],
                                                           [item for _, item in todo]))
        out = [list(rs) for rs in readings]
        guessed: list[tuple[int, Reading]] = []
        for (t, (h, _, probs, of)), p in zip(todo, scores, strict=True):
            def new(r: Reading, h: Held = h) -> bool:
                return not value_matches(h.attribute, r.value, h.value)

            if p < (self.detect_veto or 0.0):
                out[t] = [r for r in out[t] if not (r in of and r.current_own and new(r))]
            elif p > self.detect_rescue and not any(r.current_own and new(r) for r in of):
                told = [r for r in of if new(r) and not r.negated and r in out[t]]
                if told:
                    best = max(told, key=lambda r: r.confidence)
                    out[t][out[t].index(best)] = replace(best, holder="user", when="now",
                                                         confidence=p)
                else:
                    words = self._likeliest_words(turns[t], first[t][1], probs, h.attribute, p)
                    if words is not None and new(words):
                        guessed.append((t, words))
        # the likeliest words last, the surest first, each unless a piece of a value read
        for t, words in sorted(guessed, key=lambda g: -g[1].confidence):
            if not self.detect_apart or not any(_overlap(words, r) for r in out[t]):
                out[t].append(words)
        return [sorted(rs, key=lambda r: r.span or (0, 0)) for rs in out]

    def _likeliest_words(self, text: str, offsets: list[tuple[int, int]],
                         probs: npt.NDArray[np.float32], attr: str, p: float) -> Reading | None:
        """The words the tags of a turn's first window likeliest give ``attr``'s value (the
        likeliest first token, and the tokens after it while their inside tag has at least
        0.2), read as the user's own now with confidence ``p``; None where the first token
        has less than :attr:`detect_words`, or the attribute's value is a label."""
        kind = registry()[attr].value
        begin, inside = L.tag_of(attr, True), L.tag_of(attr, False)
        n = len(probs)
        if kind == "label" or n < 3:
            return None
        a = int(np.argmax(probs[1:n - 1, begin])) + 1
        if probs[a, begin] < self.detect_words:
            return None
        b = a + 1
        while b < n - 1 and (probs[b, inside] >= 0.2 or continues_word(text, offsets, b)):
            b += 1
        chars = span_chars(text, offsets, a, b)
        if chars is None:
            return None
        if kind == "number":
            chars = whole_number(text, *chars)
        value = _words_value(attr, kind, text[chars[0]:chars[1]])
        if value is None:
            return None
        return Reading(attribute=attr, value=value, holder="user", when="now", negated=False,
                       confidence=p, span=chars)

    def _check_scores(self, items: Sequence[tuple[str, str, tuple[int, int]]]
                      ) -> list[float | None]:
        """The checker's probability that each ``(turn, attribute, span)`` marks a current
        value of the user's own of that attribute (None where the value has no tokens)."""
        _, tok, _ = self._load()
        pairs = [check_pair(tok, attribute, turn, span[0], span[1], (self._bos, self._eos))
                 for turn, attribute, span in items]
        hidden = iter(self._hidden([p[0] for p in pairs if p is not None]))
        out: list[float | None] = []
        for pair in pairs:
            if pair is None:
                out.append(None)
                continue
            h, a, b = next(hidden), pair[1], pair[2]
            feat = self._gelu(self._dense(np.concatenate([h[a:b].mean(axis=0),
                                                          h.mean(axis=0)]), "check"))
            out.append(float(_softmax(self._dense(feat, "check_valid"))[1]))
        return out

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
        asked = [(t, k) for t, rs in enumerate(readings) for k, r in enumerate(rs)
                 if r.current_own and r.confidence < self.check_above]
        scores = self._check_scores([(turns[t], readings[t][k].attribute,
                                      readings[t][k].span or (0, 0)) for t, k in asked])
        dropped = {(t, k) for (t, k), p in zip(asked, scores, strict=True)
                   if p is not None and p < (self.check_threshold or 0.0)}
        return [[r for k, r in enumerate(rs) if (t, k) not in dropped]
                for t, rs in enumerate(readings)]

    def _held_bias(self, held: frozenset[str]) -> npt.NDArray[np.float32]:
        """What the tags of the held attributes gain: a value of an attribute the user holds
        is likelier in their turn than the tags learnt from turns read alone (a change or
        a restatement is what such a turn most often says)."""
        bias = np.zeros(len(L.TAGS), dtype=np.float32)
        for attr in held:
            if attr in registry().names:
                bias[L.tag_of(attr, True)] = self.held_bias
                bias[L.tag_of(attr, False)] = self.held_bias_inside
        return bias

    @staticmethod
    def _gelu(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32] = 0.5 * x * (1.0 + np.vectorize(_erf)(x / np.sqrt(2.0)))
        return out

    def _readings(self, text: str, offsets: list[tuple[int, int]], start: int,
                  h: npt.NDArray[np.float32], held: frozenset[str] = frozenset()
                  ) -> list[Reading]:
        logits = self._dense(h, "tags")
        if held and (self.held_bias or self.held_bias_inside):
            logits = logits + self._held_bias(held)
        probs = _softmax(logits)
        if self.decode == "bio":
            tags = join_split_characters(best_tags(np.log(probs + 1e-12)), offsets, start)
        else:
            tags = probs.argmax(axis=-1)
        spans = decode_spans(text, offsets, [int(x) for x in tags], start)
        if not spans:
            return []
        if self._bounding:
            spans = self._bounded(text, offsets, start, h, spans)
        mean = h.mean(axis=0)
        out = []
        for a, b, attr in spans:
            reading = self._reading_of(text, offsets, start, h, mean, a, b, attr,
                                       float(probs[a:b, tags[a:b]].diagonal().mean()))
            if reading is not None:
                out.append(reading)
        return out

    def _bounded(self, text: str, offsets: list[tuple[int, int]], start: int,
                 h: npt.NDArray[np.float32], spans: list[tuple[int, int, str]]
                 ) -> list[tuple[int, int, str]]:
        """``spans`` (what the tags read: first token, last token + 1, attribute), each
        widened to the run of whole words that contains it and that the pointer head
        likeliest gives a value of its attribute (the span itself where no wider run is
        likelier); two spans widened to one run are one value (格 and 尔 of 格尔木)."""
        runs = pointer_runs(text, offsets, start, len(h))
        first, last = runs[:, 0], runs[:, 0] + runs[:, 1] + 1
        arounds = [(first <= a) & (last >= b) for a, b, _ in spans]
        # only the runs that contain a tagged span are scored (the head reads each run alone)
        wanted = np.logical_or.reduce(arounds) if arounds else np.zeros(len(runs), bool)
        probs = np.zeros((len(runs), len(L.attributes()) + 1), dtype=np.float32)
        if wanted.any():
            probs[wanted] = pointer_probs(self._load()[2], h, runs[wanted])
        attrs = L.attributes()
        out: list[tuple[int, int, str]] = []
        for (a, b, attr), around in zip(spans, arounds, strict=True):
            bounded = (a, b, attr)
            if around.any():
                k = int(np.where(around, probs[:, attrs.index(attr) + 1], -1.0).argmax())
                bounded = (int(first[k]), int(last[k]), attr)
            if bounded not in out:
                out.append(bounded)
        return out

    def _reading_of(self, text: str, offsets: list[tuple[int, int]], start: int,
                    h: npt.NDArray[np.float32], mean: npt.NDArray[np.float32], a: int, b: int,
                    attr: str, tagged: float) -> Reading | None:
        """The reading of tokens ``a:b`` of a window as a value of ``attr``; ``tagged`` is
        how sure the tags are of the words."""
        chars = span_chars(text, offsets, start + a, start + b)
        if chars is None:
            return None
        kind = registry()[attr].value
        char_a, char_b = whole_number(text, *chars) if kind == "number" else chars
        words = text[char_a:char_b]
        feat = self._gelu(self._dense(np.concatenate([h[a:b].mean(axis=0), mean]), "span"))
        holder = _softmax(self._dense(feat, "holder"))
        when = _softmax(self._dense(feat, "when"))
        negated = _softmax(self._dense(feat, "negated"))
        if kind == "label":
            scores = _softmax(self._dense(feat, "label"))
            allowed = [i for i, lab in enumerate(L.LABELS) if lab.startswith(attr + ":")]
            best = max(allowed, key=lambda i: scores[i])
            value: str | None = L.LABELS[best].split(":", 1)[1]
        else:
            value = _words_value(attr, kind, words)
        if value is None:
            return None
        confidence = float(min(tagged, holder.max(), when.max(), negated.max()))
        return Reading(attribute=attr, value=value, holder=L.HOLDER[int(holder.argmax())],
                       when=L.WHEN[int(when.argmax())], negated=bool(negated.argmax()),
                       confidence=confidence, span=(char_a, char_b))

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

    @property
    def relations(self) -> tuple[RelationKind, ...]:
        """The relations this model's relate head can answer: the first five for a model
        trained before ``correction`` existed (stop 63), all six after."""
        return L.RELATE[:self._load()[2]["relate.b"].shape[0]]

    def _pair_ids(self, older: str, newer: str) -> list[int]:
        """``<s> older </s></s> newer </s>``, older cut to 60 tokens, the whole to
        MAX_TOKENS (as the trainer's ``pair_ids``)."""
        _, tok, _ = self._load()
        a = tok.encode(older, add_special_tokens=False).ids[:60]
        b = tok.encode(newer, add_special_tokens=False).ids[:L.MAX_TOKENS - 4 - len(a)]
        return [self._bos, *a, self._eos, self._eos, *b, self._eos]

    def relate(self, older: str, newer: str) -> Relation:
        """How ``newer`` stands to ``older`` (same, update, contradiction, ...; a model
        trained before ``correction`` existed never answers it)."""
        h = self._hidden([self._pair_ids(older, newer)])[0]
        probs = _softmax(self._dense(self._pooled(h), "relate"))
        best = int(probs.argmax())
        return Relation(kind=L.RELATE[best], confidence=float(probs[best]))


def pointer_runs(text: str, offsets: Sequence[tuple[int, int]], start: int, n: int
                 ) -> npt.NDArray[np.int64]:
    """The runs of a window of ``n`` tokens (``<s>`` and ``</s>`` at its ends) the pointer
    head scores: ``(first token, width - 1)`` rows for every run of up to
    :data:`POINTER_WIDTH` tokens inside the window that begins and ends on whole words."""
    cont = np.zeros(n + POINTER_WIDTH + 1, dtype=bool)
    for i in range(1, n - 1):
        cont[i] = continues_word(text, offsets, start + i)
    first = np.arange(n)[:, None]
    last = first + np.arange(POINTER_WIDTH)[None, :]
    ok = (first >= 1) & (last <= n - 2) & ~cont[first] & ~cont[last + 1]
    return np.argwhere(ok).astype(np.int64)


def pointer_heads(arrays: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[np.float32]]:
    """The pointer head's weights (``pointer.npz``) as :func:`pointer_probs` reads them:
    prefixed ``pointer.``, and its three token projections side by side (one product)."""
    heads = {"pointer." + k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
    heads["pointer.stacked"] = np.hstack([heads["pointer.first.w"], heads["pointer.last.w"],
                                          heads["pointer.mean.w"]])
    return heads


def pointer_probs(heads: dict[str, npt.NDArray[np.float32]], h: npt.NDArray[np.float32],
                  runs: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    """The pointer head's probabilities (none, then each registry attribute) of each run:
    a layer over the run's first token, its last, its tokens' mean and its width, then a
    GELU and the output layer (the trainer's :class:`PointerHead`)."""
    if len(runs) == 0:
        return np.zeros((0, len(L.attributes()) + 1), dtype=np.float32)
    a, w = runs[:, 0], runs[:, 1]
    b = a + w
    # the three projections of the tokens the runs span only, as one product
    lo, hi = int(a.min()), int(b.max()) + 1
    size = heads["pointer.first.w"].shape[1]
    projected = h[lo:hi] @ heads["pointer.stacked"]
    first_p = projected[:, :size] + heads["pointer.first.b"]
    last_p = projected[:, size:2 * size]
    mean_p = np.vstack([np.zeros((1, size), np.float32),
                        np.cumsum(projected[:, 2 * size:], axis=0)])
    a, b = a - lo, b - lo
    pre = first_p[a] + last_p[b] + (mean_p[b + 1] - mean_p[a]) / (w + 1)[:, None] \
        + heads["pointer.width"][w]
    # GELU, tanh form, in place: 0.5 x (1 + tanh(0.79788 x (1 + 0.044715 x^2)))
    act = pre * pre
    act *= 0.044715
    act += 1.0
    act *= pre
    act *= 0.7978845608028654
    np.tanh(act, out=act)
    act += 1.0
    act *= pre
    act *= 0.5
    return _softmax(act @ heads["pointer.out.w"] + heads["pointer.out.b"])


def _overlap(a: Reading, b: Reading) -> bool:
    """Whether two readings' words share a character but are not the same words."""
    return a.span is not None and b.span is not None and a.span != b.span \
        and a.span[0] < b.span[1] and b.span[0] < a.span[1]


def _erf(x: float) -> float:
    import math

    return math.erf(x)
