"""The LLM behind a token budget, and the prompts the jobs send it.

:class:`LLMGate` wraps a :class:`~memstrata.llm.RecordingModel` (any
:class:`~memstrata.llm.LLMClient` plus the call log), so every call a job makes
lands in the call log under the user it was made for, like the agent's, and
``forget_user`` erases it. Before each call it reserves the call's upper-bound
cost (:func:`~memstrata.llm.token_upper_bound`) against the run's budget - in
the database when the runner gives it the run's :class:`._budget.TokenLedger`,
so every worker of the run draws on one budget - and settles the real usage
after; past the budget, after an authentication or connection failure, or on
a malformed answer, it answers
``None`` and the caller uses the offline method for that item. Calls run
concurrently up to ``concurrency`` (threads over the one sync client: the
jobs' planning - SQL reads, embeddings - is synchronous, the client and its
connection pool are thread-safe, and a few dozen calls in flight cost a few
dozen mostly sleeping threads; an async client would need an async twin of
every step around the call). So a run never
fails because of the model, and its report says which method ran for how many
items (``llm``, ``offline`` or ``llm+offline``). A call that fails is logged
too, with its error.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from memstrata._sql import Transactions
from memstrata.clock import Clock
from memstrata.consolidation._budget import TokenLedger
from memstrata.errors import (
    InvalidSettingError,
    LLMAuthError,
    LLMError,
    LLMUnavailableError,
    UnplannedModelCallError,
)
from memstrata.llm import ChatResult, LLMClient, RecordingModel, token_upper_bound

__all__ = ["Ask", "GateClient", "LLMGate", "Tally", "parse_json"]

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
class _Prepaid:
    """A batch's reservation, drawn on by its calls and settled once at the end.

    A call whose real usage exceeds its upper bound (an endpoint that counts
    more tokens than prompt bytes) *breaks* it: what the finished calls spent
    and the part no call has taken are settled at once, the calls still in
    flight settle one by one, and the calls not started reserve their own - so
    the database always knows what was really spent before anything else is
    reserved.
    """

    reserved: int
    spent: int = 0
    answered: int = 0
    #: upper bounds of the calls started on it and not finished
    in_flight: int = 0
    #: upper bounds of the calls started on it
    taken: int = 0
    broken: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, estimate: int) -> bool:
        with self.lock:
            if self.broken or self.taken + estimate > self.reserved:
                return False
            self.taken += estimate
            self.in_flight += estimate
            return True


@dataclass
class Tally:
    """What the calls made inside one :meth:`LLMGate.tally` block answered and failed on
    (the gate's own counters add up every block's: batches planned at once each
    read their own here)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def counts(self) -> tuple[int, int, int]:
        return (self.calls, self.prompt_tokens, self.completion_tokens)


#: the tally of the block the current call runs in (calls copy their caller's context)
_TALLY: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("memstrata_llm_tally",
                                                                     default=None)


@dataclass(frozen=True, slots=True)
class Ask:
    """One question for :meth:`LLMGate.ask_many`: a system prompt, a prompt, whose and why."""

    system: str
    prompt: str
    user_id: str
    purpose: str


@dataclass
class LLMGate:
    """Budgeted, bounded access to the model for one run (not shared between runs).

    Thread-safe: at most ``concurrency`` calls are in flight at once whatever
    the number of calling threads, and :meth:`ask_many` runs a batch of
    questions on a pool of that size. With a ``ledger`` the budget is the
    run's row in the database (:mod:`._budget`), shared by every worker;
    without one it is kept in this object with the same reserve/settle rule.
    """

    client: RecordingModel
    budget: int
    max_tokens: int
    #: the run's budget row (all workers); None = this gate's own count
    ledger: TokenLedger | None = None
    #: calls in flight at most (one pool per :meth:`ask_many`, one semaphore overall)
    concurrency: int = 1
    #: seconds a call waits for budget held by other calls in flight before the
    #: item runs offline (a crashed worker's reservation is never released)
    reserve_wait: float = 30.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: why the model is no longer used in this run (None while it is)
    disabled: str | None = None
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _slots: threading.BoundedSemaphore | None = field(default=None, repr=False)
    _reserved: int = 0

    @classmethod
    def for_run(cls, client: LLMClient, *, db: Transactions, clock: Clock, run_id: str,
                budget: int, spent: int, max_tokens: int, concurrency: int) -> LLMGate:
        """The gate of one worker of a run: calls logged to ``db``, the budget drawn from
        the run's row (created with ``spent`` already used, unless a worker did)."""
        ledger = TokenLedger(db, run_id, budget, clock=clock, spent=spent)
        return cls(RecordingModel(client, db=db, clock=clock), budget, max_tokens,
                   ledger=ledger, concurrency=concurrency)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise InvalidSettingError("LLMGate.concurrency must be at least 1")
        self._slots = threading.BoundedSemaphore(self.concurrency)

    @property
    def used(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def model(self) -> str:
        return self.client.model

    def _disable(self, why: str) -> None:
        with self._lock:
            if self.disabled is None:
                self.disabled = why

    def _error(self, text: str) -> None:
        tally = _TALLY.get()
        if tally is not None:  # the block's own: its batch reports it
            with tally.lock:
                tally.errors.append(text)
            return
        with self._lock:
            self.errors.append(text)

    @contextlib.contextmanager
    def tally(self) -> Iterator[Tally]:
        """Count the calls made in this block (and in the threads it starts with a copy
        of its context) apart; their errors go to the tally instead of :attr:`errors`."""
        tally = Tally()
        token = _TALLY.set(tally)
        try:
            yield tally
        finally:
            _TALLY.reset(token)

    def _reserve(self, tokens: int) -> bool:
        """Hold ``tokens`` of the budget; False (and the gate disabled) when it is spent."""
        deadline = time.monotonic() + self.reserve_wait
        pause = 0.01
        while True:
            if self.disabled is not None:
                return False
            if self.ledger is not None:
                if self.ledger.reserve(tokens):
                    return True
                state = self.ledger.state()
                limit, spent, held = state.budget, state.spent, state.reserved
            else:
                with self._lock:
                    limit, spent, held = self.budget, self.used, self._reserved
                    if spent + held + tokens <= self.budget:
                        self._reserved += tokens
                        return True
            if spent + tokens > limit:
                self._disable(f"token budget of {limit} reached after {spent} tokens")
                return False
            if held <= 0:
                continue  # released between our attempt and the read: try again
            if time.monotonic() >= deadline:  # held by calls in flight that never settle
                self._disable(f"token budget of {limit}: {held} tokens held by calls "
                              f"in flight for {self.reserve_wait:g} s")
                return False
            time.sleep(pause)
            pause = min(0.2, pause * 2)

    def _prepay(self, tokens: int) -> _Prepaid | None:
        """Reserve a whole batch's upper bounds at once (one statement instead of a
        reserve and a settle per call); None when the budget cannot cover them all
        right now (the calls then reserve one by one)."""
        if self.disabled is not None:
            return None
        if self.ledger is not None:
            return _Prepaid(tokens) if self.ledger.reserve(tokens) else None
        with self._lock:
            if self.used + self._reserved + tokens > self.budget:
                return None
            self._reserved += tokens
        return _Prepaid(tokens)

    def _release(self, reserved: int, spent: int, answered: int) -> None:
        """Give back ``reserved`` and record ``spent`` (the ledger's settle; without one
        the spending is already in this gate's counters)."""
        if self.ledger is not None:
            self.ledger.settle(reserved, spent, answered=answered)
        else:
            with self._lock:
                self._reserved -= reserved

    def _settle_prepaid(self, prepaid: _Prepaid) -> None:
        with prepaid.lock:
            reserved, spent, answered = prepaid.reserved, prepaid.spent, prepaid.answered
            prepaid.reserved = prepaid.spent = prepaid.answered = 0
        if reserved or spent:
            self._release(reserved, spent, answered)

    def _settle(self, reserved: int, result: ChatResult | None,
                prepaid: _Prepaid | None = None) -> None:
        spent = 0 if result is None else result.usage.total_tokens
        if prepaid is None:
            self._release(reserved, spent, int(result is not None))
        else:
            flush: tuple[int, int, int] | None = None
            with prepaid.lock:
                prepaid.in_flight -= reserved
                if prepaid.broken:  # settle this call on its own
                    prepaid.reserved -= reserved
                    flush = (reserved, spent, int(result is not None))
                else:
                    prepaid.spent += spent
                    prepaid.answered += int(result is not None)
                    if spent > reserved:  # the bound did not hold: settle what is known
                        prepaid.broken = True
                        keep = prepaid.in_flight
                        flush = (prepaid.reserved - keep, prepaid.spent, prepaid.answered)
                        prepaid.reserved, prepaid.spent, prepaid.answered = keep, 0, 0
            if flush is not None:
                self._release(*flush)
        with self._lock:
            if result is not None:
                self.calls += 1
                self.prompt_tokens += result.usage.prompt_tokens
                self.completion_tokens += result.usage.completion_tokens
        tally = _TALLY.get()
        if tally is not None and result is not None:
            with tally.lock:
                tally.calls += 1
                tally.prompt_tokens += result.usage.prompt_tokens
                tally.completion_tokens += result.usage.completion_tokens

    def ask(self, system: str, prompt: str, *, user_id: str, purpose: str) -> str | None:
        """The model's answer, or None: use the offline method for this item.

        ``user_id`` is whose data the prompt carries; ``purpose`` (at most 32
        characters: ``"summarize"``, ``"lesson"``, ``"conflicts"``) says what
        for. Both go to the call log.
        """
        return self._ask(system, prompt, user_id=user_id, purpose=purpose, prepaid=None)

    def _ask(self, system: str, prompt: str, *, user_id: str, purpose: str,
             prepaid: _Prepaid | None) -> str | None:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        result = self._chat(messages, None, user_id=user_id, purpose=purpose, prepaid=prepaid)
        return None if result is None else result.content

    def chat(self, messages: Sequence[Mapping[str, Any]], *,
             tools: Sequence[Mapping[str, Any]] | None = None, user_id: str,
             purpose: str) -> ChatResult | None:
        """The model's whole answer (its tool calls too) to ``messages``, under the run's
        budget and in its call log like :meth:`ask`; None: use the offline method."""
        return self._chat([dict(m) for m in messages], tools, user_id=user_id,
                          purpose=purpose, prepaid=None)

    def _chat(self, messages: list[dict[str, Any]], tools: Sequence[Mapping[str, Any]] | None,
              *, user_id: str, purpose: str, prepaid: _Prepaid | None) -> ChatResult | None:
        if self.disabled is not None:
            return None
        # the tools' schema is prompt too (bytes bound tokens, as for the messages)
        estimate = token_upper_bound(messages, self.max_tokens) + (
            len(json.dumps(list(tools), default=str).encode("utf-8")) if tools else 0)
        assert self._slots is not None
        with self._slots:
            if prepaid is not None and not prepaid.take(estimate):
                prepaid = None  # it broke: this call reserves its own
            if prepaid is None and not self._reserve(estimate):
                return None
            result: ChatResult | None = None
            try:
                result = self.client.chat_for(
                    messages, user_id=user_id, task_id=None, turn=None, purpose=purpose,
                    tools=tools, temperature=0.0, max_tokens=self.max_tokens,
                )
            except (LLMAuthError, LLMUnavailableError, UnplannedModelCallError) as exc:
                self._disable(f"model unavailable: {exc}")
                self._error(f"llm: {exc}")
                return None
            except LLMError as exc:
                self._error(f"llm: {exc}")
                return None
            finally:
                self._settle(estimate, result, prepaid)
        return result

    def ask_json(self, system: str, prompt: str, *, user_id: str, purpose: str) -> Any:
        """Like :meth:`ask`, parsed as JSON; a malformed answer counts as no answer."""
        return self._ask_json(system, prompt, user_id=user_id, purpose=purpose, prepaid=None)

    def _ask_json(self, system: str, prompt: str, *, user_id: str, purpose: str,
                  prepaid: _Prepaid | None) -> Any:
        answer = self._ask(system, prompt, user_id=user_id, purpose=purpose, prepaid=prepaid)
        if answer is None:
            return None
        value = parse_json(answer)
        if value is None:
            self._error("llm: the answer was not JSON; used the offline method")
        return value

    def ask_json_many(self, asks: Sequence[Ask]) -> list[Any]:
        """:meth:`ask_json` for each question, at most ``concurrency`` at once; answers in
        the order asked (None where the offline method must be used).

        The upper bounds of all the questions are reserved in one statement when
        the budget covers them, and settled in one after the last answer (a crash
        in between leaves them counted as spent); otherwise each call reserves
        its own."""
        if not asks:
            return []
        prepaid = self._prepay(sum(
            token_upper_bound([{"role": "system", "content": a.system},
                               {"role": "user", "content": a.prompt}], self.max_tokens)
            for a in asks)) if len(asks) > 1 else None

        def one(a: Ask) -> Any:
            return self._ask_json(a.system, a.prompt, user_id=a.user_id, purpose=a.purpose,
                                  prepaid=prepaid)

        try:
            if self.concurrency == 1 or len(asks) <= 1:
                return [one(a) for a in asks]
            # each call runs in a copy of the caller's context, so its span stays in the trace
            caller = contextvars.copy_context()
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(asks)),
                                    thread_name_prefix="memstrata-llm") as pool:
                return list(pool.map(lambda a: caller.copy().run(one, a), asks))
        finally:
            if prepaid is not None:
                self._settle_prepaid(prepaid)


@dataclass(frozen=True)
class GateClient:
    """A run's :class:`LLMGate` as an :class:`~memstrata.llm.LLMClient` for one user and
    purpose, so a reader of :mod:`memstrata.reading` reads through the run's budget and
    call log. A call the gate does not make (budget spent, model unavailable, a failed
    call) raises :class:`~memstrata.errors.LLMUnavailableError`: the job then uses the
    offline method for that item, as for any unanswered question."""

    gate: LLMGate
    user_id: str
    purpose: str

    @property
    def model(self) -> str:
        return self.gate.model

    def chat(self, messages: Sequence[Mapping[str, Any]], *,
             tools: Sequence[Mapping[str, Any]] | None = None,
             temperature: float | None = None, max_tokens: int | None = None) -> ChatResult:
        # the gate's temperature (0) and max_tokens (the run's setting) are the run's
        result = self.gate.chat(messages, tools=tools, user_id=self.user_id,
                                purpose=self.purpose)
        if result is None:
            raise LLMUnavailableError(
                f"the run's model answered nothing ({self.gate.disabled or 'the call failed'})")
        return result


SUMMARY_SYSTEM = (
    "You maintain the long-term memory of a personal assistant. Given one finished "
    "conversation, answer with JSON only: {\"summary\": \"<one line, at most 30 words, "
    "what the user wanted and what was decided>\", \"facts\": [{\"content\": \"<a durable "
    "fact or preference of the user, in their language>\", \"type\": \"preference|profile|"
    "knowledge\", \"attribute\": \"<single-valued attribute or null>\", \"value\": \"<value "
    "or null>\", \"confidence\": 0.0-1.0, \"change\": true|false}]}. Only facts that stay "
    "true beyond this conversation; no small talk, moods or task details. Use [] when there "
    "are none. Name the attribute city, employer, occupation, diet, name (what the user wants "
    "to be called) or age when it is one of these. Set change to true when the user gives a "
    "new value that replaces an earlier one (moved, new job, new diet, a birthday), even "
    "without words like 'actually'; a plan, a wish or someone else's change is not a fact "
    "of the user."
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
