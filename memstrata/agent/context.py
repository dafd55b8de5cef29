"""The context builder: the planner's view, rebuilt from memory every turn.

Messages, in order::

    system: goal profile + the sentence to echo       mandatory (trusted: the goal and
            how to work (operator instructions)       the operator's words only)
    user:   <memory-data nonce=...> block              untrusted data, one escaped item a line:
              the user's standing rules               mandatory ("always answer in English")
              pending confirmations from memory        (conflicts the user must settle)
              task table                               mandatory
              finished work, one line per round        foldable
              recalled long-term memories (3-5)        shrinkable
              lessons from past trajectories           shrinkable
    the last two rounds, verbatim                      mandatory, as native chat messages;
                                                       tool outputs fenced the same way

Stored text (a memory, a tool result, a lesson) never reaches the system
message: it is data inside a block its text can neither close nor imitate
(:mod:`memstrata.agent._fence`). Rounds are sent as chat messages so the tool-call
protocol (assistant ``tool_calls`` followed by ``tool`` messages) holds for
every endpoint. Tokens are counted with a pluggable counter - by default the
embedding model's tokenizer (:meth:`Embedder.count_tokens`, nothing is
downloaded). Over budget, the builder folds the finished-work lines least
relevant to the current subtask into one line (their full text is already in
the episodic store: the builder only renders recorded steps), then shrinks
memories to 3 and lessons to 1, then drops them, then trims old verbatim
observations; if the mandatory part still does not fit it raises
:class:`~memstrata.agent.errors.ContextBudgetExceeded`. :class:`BuiltContext`
says what it included, folded or dropped, and why, and maps every recorded
step to how it appears.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from memstrata._text import content_words

from ._fence import encode, memory_block, new_nonce, section, tool_output
from ._prompts import prompt
from .errors import ContextBudgetExceeded, UsageError
from .goal import Criterion, Goal, Subtask, TaskState
from .steps import Action, ActionStarted, LogEntry, ModelTurn, RetryRequest, UserMessage

__all__ = [
    "BuiltContext",
    "CharCounter",
    "ContextBuilder",
    "ContextSettings",
    "Folded",
    "MemoryContext",
    "MemoryLine",
    "Section",
    "TokenCounter",
]


_CONFIRM = "pending_confirmations (settle with the user before relying on them)"
_RULES = "user_standing_rules (what the user asked of every answer in earlier conversations)"
_TABLE = "task_table"
_FINISHED = "finished_work (earlier rounds, one a line)"
_MEMORIES = "memories (long-term, may be outdated)"
_LESSONS = "lessons (from past tasks)"


class TokenCounter(Protocol):
    """Anything with ``count_tokens(text) -> int`` (an :class:`Embedder` qualifies)."""

    def count_tokens(self, text: str) -> int: ...


class CharCounter:
    """A tokenizer-free estimate (one token per 4 characters); for tests and tiny setups."""

    def count_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4


class _CachedCounter:
    def __init__(self, inner: TokenCounter, size: int = 8192) -> None:
        self._inner = inner
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        n = sum(int(self._inner.count_tokens(chunk)) for chunk in _chunks(text))
        with self._lock:
            self._cache[text] = n
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return n


def _chunks(text: str, size: int = 600) -> list[str]:
    """Split long text at whitespace so a tokenizer with a short maximum length (MiniLM:
    256) never sees an over-long sequence; the count differs by at most a token per cut."""
    if len(text) <= size:
        return [text]
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            end = cut if cut > start else end
        out.append(text[start:end])
        start = end
    return out


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """Budget and shape of the context."""

    #: tokens of all messages together (tool schemas are not counted)
    budget_tokens: int = 2000
    #: rounds kept verbatim
    verbatim_rounds: int = 2
    #: long-term memories shown (at most / at least, before dropping them)
    memories_k: int = 5
    memories_min_k: int = 3
    lessons_k: int = 3
    #: pending confirmations shown
    confirmations_k: int = 3
    #: finished-work lines kept; the least relevant beyond this are folded even under budget
    max_finished_lines: int = 5
    #: characters an old verbatim observation is trimmed to when over budget
    trimmed_observation_chars: int = 200

    def __post_init__(self) -> None:
        if self.budget_tokens < 100:
            raise UsageError("budget_tokens must be at least 100")
        if not 1 <= self.memories_min_k <= self.memories_k <= 10:
            raise UsageError("need 1 <= memories_min_k <= memories_k <= 10")
        if self.verbatim_rounds < 1:
            raise UsageError("verbatim_rounds must be at least 1")


@dataclass(frozen=True, slots=True)
class MemoryLine:
    id: str
    text: str
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class MemoryContext:
    """The memory part of the planner's context for this goal and scope, as lines
    (made from :class:`memstrata.Briefing` plus a recall by
    :func:`~memstrata.agent.memory_view.brief`)."""

    #: questions to settle with the user (open conflicts)
    confirmations: list[str] = field(default_factory=list)
    #: profile facts, then recalled facts
    memories: list[MemoryLine] = field(default_factory=list)
    #: lessons from past trajectories relevant to the goal
    lessons: list[MemoryLine] = field(default_factory=list)
    #: the user's standing rules ("always answer in English"), newest first: always sent
    rules: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    tokens: int
    items: int


@dataclass(frozen=True, slots=True)
class Folded:
    """Something left out of (or shortened in) the context, and why."""

    what: str
    reason: str
    step_nos: tuple[int, ...] = ()
    tokens_saved: int = 0


@dataclass(frozen=True, slots=True)
class BuiltContext:
    messages: list[dict[str, Any]]
    sections: list[Section]
    folded: list[Folded]
    tokens: int
    budget: int
    #: step number -> "verbatim" | "line" | "folded" for every recorded step shown or folded
    coverage: dict[int, str]
    #: the tag nonce of this context's data blocks (:mod:`._fence`)
    nonce: str = ""

    def report(self) -> str:
        parts = [f"{s.name}={s.tokens}t/{s.items}" for s in self.sections]
        out = f"context {self.tokens}/{self.budget} tokens: " + ", ".join(parts)
        for f in self.folded:
            out += f"\n  folded {f.what}: {f.reason}"
        return out


@dataclass(slots=True)
class _Round:
    entries: list[LogEntry]

    @property
    def step_nos(self) -> tuple[int, ...]:
        return tuple(e.step_no for e in self.entries)

    def messages(self) -> list[dict[str, Any]]:
        return [m for e in self.entries for m in e.item.to_messages()]

    def line(self) -> str:
        head = next((e.item for e in self.entries if isinstance(e.item, ModelTurn)), None)
        actions = [e.item for e in self.entries if isinstance(e.item, Action)]
        users = [e.item for e in self.entries if isinstance(e.item, UserMessage)]
        bits = [u.line()[:160] for u in users]
        if actions:
            bits += [a.line()[:160] for a in actions]
        elif head is not None:
            bits.append(head.line()[:200])
        if not bits:
            bits = [e.item.line()[:160] for e in self.entries]
        return " | ".join(bits)


def split_rounds(entries: Sequence[LogEntry]) -> list[_Round]:
    """A round starts at a model turn or at a user message following other items."""
    rounds: list[_Round] = []
    for entry in entries:
        item = entry.item
        if not isinstance(item, UserMessage | ModelTurn | Action | RetryRequest):
            continue
        starts = isinstance(item, ModelTurn) and not (
            rounds and rounds[-1].entries
            and all(isinstance(e.item, UserMessage | RetryRequest) for e in rounds[-1].entries)
        )
        starts = starts or (isinstance(item, UserMessage) and bool(rounds) and any(
            not isinstance(e.item, UserMessage) for e in rounds[-1].entries))
        if starts or not rounds:
            rounds.append(_Round([]))
        rounds[-1].entries.append(entry)
    return rounds


def _relevance(text: str, query: set[str]) -> float:
    words = set(content_words(text))
    if not words or not query:
        return 0.0
    return float(len(words & query) / len(words | query) ** 0.5)


class ContextBuilder:
    """Builds the model's messages for one turn within a token budget."""

    def __init__(self, counter: TokenCounter, settings: ContextSettings = ContextSettings(),
                 *, instructions: str | None = None) -> None:
        self.settings = settings
        self.count = _CachedCounter(counter)
        self.instructions = (instructions.strip() + "\n\n" if instructions else "") + \
            prompt("system").strip()

    # ------------------------------------------------------------ sections

    @staticmethod
    def goal_block(goal: Goal, criteria: Sequence[Criterion], state: TaskState) -> str:
        lines = ["## Goal", f"Goal sentence (echo it first): {goal.sentence}"]
        if goal.intent.strip() != goal.sentence:  # the intent says more than its sentence
            lines.append(f"Intent: {goal.intent}")
        lines += [f"Priority: {goal.priority}", "Acceptance criteria:"]
        for c in criteria:
            mark = "met" if state.criterion_met(c.id) else "open"
            lines.append(f"- {c.id} [{mark}] {c.text}")
        if goal.constraints:
            lines.append("Constraints:")
            lines += [f"- {c}" for c in goal.constraints]
        return "\n".join(lines)

    @staticmethod
    def table_rows(state: TaskState, interrupted: Sequence[ActionStarted]) -> list[str]:
        """The task table as data rows (titles are model-written, results quote tools)."""
        current = state.current()
        rows = [f"current: {current.id if current else 'none'}", *state.render().splitlines()]
        rows += [f"INTERRUPTED: {s.tool}({s.args}) was running when the process stopped; its "
                 "outcome is unknown - check with a read-only tool before repeating it."
                 for s in interrupted]
        return rows

    @staticmethod
    def table_block(state: TaskState, interrupted: Sequence[ActionStarted]) -> str:
        return "## Task table\n" + "\n".join(ContextBuilder.table_rows(state, interrupted))

    def build(
        self,
        *,
        goal: Goal,
        criteria: Sequence[Criterion],
        state: TaskState,
        entries: Sequence[LogEntry],
        memory: MemoryContext,
        interrupted: Sequence[ActionStarted] = (),
        task_id: str = "",
        nonce: str | None = None,
    ) -> BuiltContext:
        cfg = self.settings
        budget = cfg.budget_tokens
        nonce = nonce or new_nonce()
        instructions = self.instructions.replace("{nonce}", nonce)
        folded: list[Folded] = []
        goal_text = self.goal_block(goal, criteria, state)
        table_rows = self.table_rows(state, interrupted)
        confirmations = memory.confirmations[: cfg.confirmations_k]
        if len(memory.confirmations) > cfg.confirmations_k:
            folded.append(Folded(f"{len(memory.confirmations) - cfg.confirmations_k} "
                                 "confirmations", "only the oldest few are shown"))

        def line(label: str, rows: Sequence[Any]) -> str:
            return section(label, list(rows))

        conf_text = line(_CONFIRM, confirmations)
        rules = list(memory.rules)
        rules_text = line(_RULES, rules)
        table_text = line(_TABLE, table_rows)
        framing = self.count(memory_block(nonce, []))

        rounds = split_rounds(entries)
        recent = rounds[-cfg.verbatim_rounds:]
        older = rounds[: max(0, len(rounds) - cfg.verbatim_rounds)]
        verbatim = [m for r in recent for m in r.messages()]  # tool contents raw until sent
        if not verbatim or verbatim[0]["role"] != "user":
            verbatim.insert(0, {"role": "user", "content": f"(original request) {goal.intent}"})
        lines = [(r, r.line()) for r in older]

        current: Subtask | None = state.current()
        query = set(content_words(f"{current.title if current else ''} {goal.sentence}"))
        memories = list(memory.memories[: cfg.memories_k])
        lessons = list(memory.lessons[: cfg.lessons_k])

        def fenced(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{**m, "content": tool_output(nonce, str(m.get("content") or ""))}
                    if m["role"] == "tool" else m for m in messages]

        def msg_tokens(messages: Sequence[dict[str, Any]]) -> int:
            return _msg_tokens(self.count, fenced(messages))

        mandatory = (self.count(goal_text) + self.count(table_text) + self.count(conf_text)
                     + self.count(rules_text) + self.count(instructions) + framing
                     + msg_tokens(verbatim) + 8)
        # ---- trim verbatim observations (oldest first) if even the mandatory part is over
        if mandatory > budget:
            for i, m in enumerate(verbatim):
                if mandatory <= budget:
                    break
                text = str(m.get("content") or "")
                if m["role"] == "tool" and len(text) > cfg.trimmed_observation_chars:
                    short = text[: cfg.trimmed_observation_chars] + "... (trimmed; full text " \
                        "in the episodic store)"
                    saved = msg_tokens([m]) - msg_tokens([{**m, "content": short}])
                    verbatim[i] = {**m, "content": short}
                    mandatory -= saved
                    folded.append(Folded("a verbatim observation", "mandatory part over budget; "
                                         "trimmed", tokens_saved=saved))
            if mandatory > budget:
                raise ContextBudgetExceeded(
                    f"the goal, task table and last {cfg.verbatim_rounds} rounds need "
                    f"{mandatory} tokens; the budget is {budget}", task_id=task_id or None)

        def mem_block() -> str:
            return line(_MEMORIES, [m.text for m in memories])

        def lesson_block() -> str:
            return line(_LESSONS, [m.text for m in lessons])

        line_cost = [self.count(encode(text)) + 2 for _, text in lines]  # + "- ", the break
        finished_tokens = sum(line_cost) + (6 if lines else 0)
        optional = finished_tokens + self.count(mem_block()) + self.count(lesson_block())
        over = mandatory + optional - budget
        coverage: dict[int, str] = {}
        fold_ids: set[int] = set()
        extra = len(lines) - cfg.max_finished_lines
        if (over > 0 or extra > 0) and lines:
            order = sorted(range(len(lines)),
                           key=lambda i: (_relevance(lines[i][1], query), i))
            saved = 0
            fold_line_cost = 30
            for i in order:
                if saved - fold_line_cost >= over and len(fold_ids) >= extra:
                    break
                fold_ids.add(i)
                saved += line_cost[i]
            steps = tuple(s for i in sorted(fold_ids) for s in lines[i][0].step_nos)
            why = f"over budget by {over} tokens" if over > 0 else \
                f"more than {cfg.max_finished_lines} finished rounds"
            folded.append(Folded(
                f"{len(fold_ids)} finished rounds", f"{why}; least relevant to the current "
                f"subtask; full text in the episodic store (task {task_id}, steps "
                f"{min(steps)}-{max(steps)})", steps, saved))
            over -= saved - fold_line_cost
        while over > 0 and (len(memories) > cfg.memories_min_k or len(lessons) > 1):
            victim = lessons if len(lessons) > 1 else memories
            gone = victim.pop()
            cost = self.count(encode(gone.text)) + 2
            over -= cost
            folded.append(Folded(f"memory {gone.id}", "over budget: fewer recalled items",
                                 tokens_saved=cost))
        for victim, name in ((lessons, "lessons"), (memories, "memories")):
            if over > 0 and victim:
                cost = self.count(line(name, [m.text for m in victim]))
                over -= cost
                folded.append(Folded(f"{len(victim)} {name}", "over budget: dropped",
                                     tokens_saved=cost))
                victim.clear()

        finished_rows: list[str] = []
        fold_written = False
        for i, (rnd, text) in enumerate(lines):
            if i in fold_ids:
                for s in rnd.step_nos:
                    coverage[s] = "folded"
                if not fold_written:
                    f = folded[next(j for j, x in enumerate(folded) if x.what.endswith(
                        "finished rounds"))]
                    finished_rows.append(f"({len(fold_ids)} earlier rounds folded: steps "
                                         f"{min(f.step_nos)}-{max(f.step_nos)}, kept in the "
                                         "episodic store)")
                    fold_written = True
                continue
            for s in rnd.step_nos:
                coverage[s] = "line"
            finished_rows.append(text)
        for r in recent:
            for s in r.step_nos:
                coverage[s] = "verbatim"

        # untrusted data (memories, lessons, questions, the table, earlier steps) goes in
        # one escaped block outside the system message, which keeps only the goal and the
        # operator's instructions (see _fence)
        data = [(_RULES, rules), (_CONFIRM, confirmations), (_TABLE, table_rows),
                (_FINISHED, finished_rows),
                (_MEMORIES, [m.text for m in memories]), (_LESSONS, [m.text for m in lessons])]
        system = f"{goal_text}\n\n{instructions}"
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": memory_block(nonce, data)},
                    *fenced(verbatim)]
        parts = [("goal", goal_text, 1), ("rules", rules_text, len(rules)),
                 ("confirmations", conf_text, len(confirmations)),
                 ("task_table", table_text, len(state.subtasks)),
                 ("finished", line(_FINISHED, finished_rows), len(finished_rows)),
                 ("memories", mem_block(), len(memories)),
                 ("lessons", lesson_block(), len(lessons)),
                 ("instructions", instructions, 1)]
        sections = [Section(name, self.count(text), n) for name, text, n in parts if text]
        sections.insert(len(sections) - 1 if sections else 0,
                        Section("recent_rounds", msg_tokens(verbatim), len(recent)))
        total = _msg_tokens(self.count, messages)
        if total > budget:
            raise ContextBudgetExceeded(f"context needs {total} tokens; the budget is {budget}",
                                        task_id=task_id or None)
        return BuiltContext(messages, sections, folded, total, budget, coverage, nonce)

    def naive_tokens(self, *, goal: Goal, criteria: Sequence[Criterion], state: TaskState,
                     entries: Sequence[LogEntry]) -> int:
        """Tokens of the naive alternative: the same system block plus the whole history
        verbatim (what an agent without a context builder sends)."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": "\n\n".join([
            self.goal_block(goal, criteria, state), self.table_block(state, ()),
            self.instructions])}]
        for r in split_rounds(entries):
            messages += r.messages()
        return _msg_tokens(self.count, messages)


def _msg_tokens(count: Any, messages: Sequence[dict[str, Any]]) -> int:
    """Tokens of chat messages: contents and tool calls, plus 4 per message of framing."""
    total = 0
    for m in messages:
        total += 4 + int(count(str(m.get("content") or "")))
        for call in m.get("tool_calls") or ():
            fn = call["function"]
            total += 4 + int(count(fn["name"] + fn["arguments"]))
    return total
