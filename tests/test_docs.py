"""The documentation is true: its code runs and its signatures are the real ones.

The convention, for README.md and docs/*.md:

* Every fenced ``python`` block is a complete program. The blocks of one page run
  in order, each in a fresh namespace (one interpreter per page, so the model loads
  once), with a fresh ``MEMSTRATA_HOME`` and working directory for the page and
  ``HF_HUB_OFFLINE=1`` (the packaged model only, nothing downloaded). A block that
  raises fails the test with the page and line.
* An HTML comment on the line before the fence changes that:

  - ``<!-- doctest: skip REASON -->`` - not run (the reason is required);
  - ``<!-- doctest: signatures -->`` - each line (or parenthesised group) is a call
    signature, ``Owner.name(params) -> Return``, checked against the real object:
    parameter names and order, positional or keyword-only, defaults and the return
    annotation (``...`` among the parameters stands for ones left out);
  - ``<!-- doctest: file NAME -->`` - the block's text is written to ``NAME`` in the
    page's working directory before any block of the page runs (the JSONL example
    in docs/eval.md is the data its Python example evaluates).

* Inline signatures of ``MemoryManager`` methods in docs/memory.md - a code span
  with a return annotation, in the headings and the table of calls, e.g.
  ``get(user_id, memory_id) -> MemoryRecord`` - are checked the same way; a call
  without ``->`` (``lookup("alice", subject="alice")``) is an example, not checked.
"""

from __future__ import annotations

import ast
import enum
import inspect
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstrata import ManualClock, MemoryManager

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(
    r"(?:^<!--\s*doctest:\s*(?P<directive>[^\n]*?)\s*-->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```",
    re.S | re.M,
)
_SIGNATURE = re.compile(r"(?P<owner>[\w.]+\.)?(?P<name>\w+)\((?P<params>.*)\)"
                        r"\s*(?:->\s*(?P<ret>.+))?", re.S)
#: names a signature's owner may have in the docs
_OWNERS: dict[str, Any] = {"MemoryManager": MemoryManager, "memory": MemoryManager,
                           "ManualClock": ManualClock}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    directive: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start("lang")) + 1
        out.append(Block(page, line, m.group("lang"), m.group("body"),
                         (m.group("directive") or "").strip()))
    return out


def _all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def test_every_directive_is_known_and_every_skip_has_a_reason():
    for b in _all_blocks():
        if not b.directive:
            continue
        word, _, rest = b.directive.partition(" ")
        assert word in ("skip", "signatures", "file"), f"{b.where}: unknown directive {word!r}"
        if word in ("skip", "file"):
            assert rest.strip(), f"{b.where}: '{word}' needs a reason / a file name"


def _runnable_pages() -> list[Path]:
    return [p for p in PAGES
            if any(b.lang == "python" and not b.directive for b in blocks(p))]


@pytest.mark.parametrize("page", _runnable_pages(), ids=lambda p: p.name)
def test_python_blocks_run(page: Path, tmp_path: Path):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    page_blocks = blocks(page)
    for b in page_blocks:
        if b.directive.startswith("file "):
            (cwd / b.directive.split(" ", 1)[1].strip()).write_text(b.body, encoding="utf-8")
    env = {**os.environ, "MEMSTRATA_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(REPO)}
    for key in ("MEMSTRATA_URL", "MEMSTRATA_LLM_BASE_URL", "MEMSTRATA_LLM_MODEL",
                "MEMSTRATA_LLM_API_KEY"):
        env.pop(key, None)
    programs = [(b.where, b.body) for b in page_blocks if b.lang == "python" and not b.directive]
    assert programs
    # one interpreter per page (the model loads once), a fresh namespace per block
    done = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(programs)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]


_DRIVER = """
import json, sys, traceback
for where, body in json.loads(sys.argv[1]):
    try:
        exec(compile(body, where, "exec"), {"__name__": "__main__"})
    except BaseException:
        traceback.print_exc()
        sys.exit(f"{where}: this block failed")
"""


# ------------------------------------------------------------ signatures


def _doc_params(params: str) -> tuple[list[tuple[str, str, str | None]], bool]:
    """(name, kind, default source) per documented parameter, and whether ``...`` elides."""
    elided = bool(re.search(r"(^|,)\s*\.\.\.\s*(,|$)", params))
    params = re.sub(r"(^|,)\s*\.\.\.\s*(?=,|$)", r"\1", params).strip().strip(",")
    params = re.sub(r",\s*,", ",", params)
    params = re.sub(r"<[^>]*>", "...", params)  # "<active, demoted>": some default
    tree = ast.parse(f"def f({params}): pass")
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    a = fn.args
    out: list[tuple[str, str, str | None]] = []
    positional = a.posonlyargs + a.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += list(a.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        out.append((arg.arg, "positional", None if default is None else ast.unparse(default)))
    if a.vararg:
        out.append((a.vararg.arg, "var_positional", None))
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append((arg.arg, "keyword", None if kw_default is None else ast.unparse(kw_default)))
    if a.kwarg:
        out.append((a.kwarg.arg, "var_keyword", None))
    return out, elided


_KIND = {
    inspect.Parameter.POSITIONAL_ONLY: "positional",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def _same_default(doc: str, real: Any) -> bool:
    if doc == "...":
        return real is not inspect.Parameter.empty
    try:
        value = ast.literal_eval(doc)
    except ValueError:
        return real is not inspect.Parameter.empty and doc.strip() in repr(real)
    if isinstance(real, enum.Enum):
        real = real.value
    return bool(value == real and type(value) is type(real)) or (
        isinstance(value, int | float) and isinstance(real, int | float) and value == real
        and not isinstance(real, bool))


def signature_problems(text: str, target: Any) -> list[str]:
    m = _SIGNATURE.fullmatch(" ".join(text.split()))
    assert m, f"not a signature: {text!r}"
    func = getattr(target, m.group("name"))
    real = inspect.signature(func)
    real_params = [p for p in real.parameters.values() if p.name not in ("self", "cls")]
    documented, elided = _doc_params(m.group("params"))
    names = [p.name for p in real_params]
    problems: list[str] = []
    doc_names = [n for n, _, _ in documented]
    if elided:
        it = iter(names)
        if not all(n in it for n in doc_names):
            problems.append(f"parameters {doc_names} are not in the order of {names}")
    elif doc_names != names:
        problems.append(f"parameters {doc_names}, the code has {names}")
    by_name = {p.name: p for p in real_params}
    for name, kind, default in documented:
        if name not in by_name:
            problems.append(f"no parameter {name!r}")
            continue
        p = by_name[name]
        if _KIND[p.kind] != kind:
            problems.append(f"{name} is {_KIND[p.kind]} in the code, {kind} in the docs")
        if default is None and p.default is not inspect.Parameter.empty:
            problems.append(f"{name} has the default {p.default!r}, the docs show none")
        if default is not None and not _same_default(default, p.default):
            problems.append(f"{name}={default} in the docs, {p.default!r} in the code")
    ret = m.group("ret")
    if ret is not None:
        annotation = real.return_annotation
        shown = annotation if isinstance(annotation, str) else inspect.formatannotation(
            annotation)
        if ret.replace(" ", "") != str(shown).replace(" ", ""):
            problems.append(f"returns {ret} in the docs, {shown} in the code")
    return [f"{m.group('name')}: {p}" for p in problems]


def _signature_lines(body: str) -> list[str]:
    """One signature per line; a line with an open parenthesis continues."""
    out: list[str] = []
    current = ""
    for line in body.splitlines():
        current = f"{current} {line.strip()}" if current else line.strip()
        if current and current.count("(") == current.count(")"):
            out.append(current)
            current = ""
    return out


def _signature_cases() -> list[tuple[str, str]]:
    cases = []
    for b in _all_blocks():
        if b.directive == "signatures":
            cases += [(b.where, s) for s in _signature_lines(b.body)]
    memory_md = REPO / "docs" / "memory.md"
    for n, line in enumerate(memory_md.read_text().splitlines(), start=1):
        for span in re.findall(r"`([^`]+)`", line):
            m = _SIGNATURE.fullmatch(span)
            if (m and m.group("ret") and not m.group("owner")
                    and hasattr(MemoryManager, m.group("name"))):
                cases.append((f"docs/memory.md:{n}", f"MemoryManager.{span}"))
    return cases


def test_the_docs_show_signatures():
    where = {w.split(":")[0] for w, _ in _signature_cases()}
    assert {"docs/memory.md", "docs/consolidation.md"} <= where


@pytest.mark.parametrize(("where", "text"), _signature_cases(),
                         ids=[f"{w}" for w, _ in _signature_cases()])
def test_documented_signatures_match_the_code(where: str, text: str):
    owner = text.split(".", 1)[0]
    assert owner in _OWNERS, f"{where}: unknown owner {owner!r}"
    assert signature_problems(text, _OWNERS[owner]) == [], where


def test_the_signature_check_finds_each_kind_of_mistake():
    assert signature_problems("MemoryManager.get(user_id, memory_id) -> MemoryRecord",
                              MemoryManager) == []
    found = signature_problems(
        "MemoryManager.lookup(user_id, subject=None, *, attribute=None, scope=None, "
        "include_pending=False, limit=100, extra=1) -> MemoryRecord", MemoryManager)
    assert any("subject is keyword" in p for p in found)
    assert any("include_pending=False" in p for p in found)
    assert any("no parameter 'extra'" in p for p in found)
    assert any("returns MemoryRecord" in p for p in found)
    assert signature_problems(
        "MemoryManager.recall(user_id, query, *, k=None, ..., reranker=None) "
        "-> list[RecallHit]", MemoryManager) == []
    assert signature_problems("MemoryManager.recall(query, user_id, ...)", MemoryManager)


# ------------------------------------------------------------ conventions the docs state


def test_lookup_treats_the_users_own_id_me_and_i_as_the_speaker(sqlite_manager: MemoryManager):
    """docs/memory.md, "Whose fact is it": the speaker's facts have the subject "user"."""
    memory = sqlite_manager
    memory.observe("alice", "s1", "user", "I live in Berlin")            # ("user", "city", ...)
    memory.remember("alice", "Alice's employer is Acme", type="profile",
                    slot=("Alice", "employer", "Acme"))                  # an older app's way
    memory.remember("alice", "Her mother lives in Porto", type="profile",
                    slot=("mother", "city", "Porto"))
    for subject in ("user", "me", "I", "alice", " ALICE "):
        found = memory.lookup("alice", subject=subject, attribute="city")
        assert [r.slot.value for r in found if r.slot] == ["Berlin"], subject
    # the user's own id also finds facts stored under it literally; "me" means "user" only
    assert sorted(r.slot.value for r in memory.lookup("alice", subject="alice") if r.slot) == [
        "Acme", "Berlin"]
    assert [r.slot.value for r in memory.lookup("alice", subject="me") if r.slot] == ["Berlin"]
    assert [r.slot.value for r in memory.lookup("alice", subject="mother") if r.slot] == [
        "Porto"]
    # another user's id is an ordinary subject
    assert memory.lookup("alice", subject="bob", attribute="city") == []
    assert len(memory.lookup("alice", subject="alice", limit=1)) == 1
