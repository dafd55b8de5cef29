"""`memstrata demo`: two users of a personal assistant, a few sessions, every layer shown.

Runs on a fresh SQLite file with the local index and the packaged model, and
prints every layer in an 80-column terminal: what each layer kept and why (the
reasons in full under the table), working memory's session variables, long-term
recall per user, a corrected preference with its history, the isolation check,
episodic memory (a booking task interrupted, resumed and finished, then the
one-line lesson the ``summarize`` job drew from it), and the time of each step.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from memstrata.clock import ManualClock
from memstrata.consolidation.runner import Consolidator
from memstrata.consolidation.settings import ConsolidationSettings
from memstrata.memory.episodic import Step
from memstrata.memory.manager import MemoryManager
from memstrata.types import MemoryInput, MemoryType, Slot

__all__ = ["SCRIPT", "WIDTH", "run_demo"]

#: the demo fits a classic terminal
WIDTH = 80


@dataclass(frozen=True)
class Utterance:
    """One thing a user said, with what the assistant's integration knows about it."""

    text: str
    type: str = "knowledge"
    scope: str = "default"
    slot: tuple[str, str, str] | None = None
    correction: bool = False
    #: a session variable: goes to working memory only
    variable: tuple[str, Any] | None = None


@dataclass(frozen=True)
class Session:
    user: str
    day: int
    utterances: list[Utterance] = field(default_factory=list)


SCRIPT: list[Session] = [
    Session("alice", 0, [
        Utterance("Hi! Good morning :)"),
        Utterance("I'm Alice, I live in Berlin.", "profile", slot=("alice", "city", "Berlin")),
        Utterance("From now on always book me window seats.", "preference", "travel"),
        Utterance("Budget for this trip is 2000 euros.", variable=("budget", 2000)),
        Utterance("This airport lounge is awful."),
        Utterance("I'm allergic to shellfish.", "profile", "food",
                  slot=("alice", "allergy", "shellfish")),
    ]),
    Session("bob", 1, [
        Utterance("hey, thanks for yesterday!"),
        Utterance("I prefer aisle seats, I get up a lot.", "preference", "travel"),
        Utterance("I'm vegetarian.", "profile", "food", slot=("bob", "diet", "vegetarian")),
        Utterance("My birthday is on 3 March.", "profile", slot=("bob", "birthday", "3 March")),
        Utterance("Meeting notes go to Notion, never email.", "rule", "work"),
    ]),
    Session("alice", 14, [
        Utterance("Book me window seats from now on.", "preference", "travel"),
        Utterance("I prefer quiet hotels away from nightlife.", "preference", "travel"),
        Utterance("Actually I moved to Munich last week.", "profile",
                  slot=("alice", "city", "Munich"), correction=True),
        Utterance("I'm so tired today."),
    ]),
    Session("bob", 20, [
        # a change of state: supersedes the old diet (kept as history)
        Utterance("I eat fish now, I'm pescatarian.", "profile", "food",
                  slot=("bob", "diet", "pescatarian")),
        # a stable fact with another value: a contradiction, kept for bob to confirm
        Utterance("My birthday is on 13 March.", "profile",
                  slot=("bob", "birthday", "13 March")),
        Utterance("ok cool"),
    ]),
]

RECALLS = [
    ("alice", "Which seat should I book for Alice's flight?", "travel"),
    ("alice", "Where does Alice live?", None),
    ("bob", "What can I cook for Bob?", "food"),
]


@contextmanager
def _timed(timings: list[tuple[str, float]], label: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    timings.append((label, (time.perf_counter() - start) * 1000))


def run_demo(db_path: Path, console: Console | None = None) -> dict[str, Any]:
    """Run the scripted demo on a fresh database at ``db_path``; return a summary."""
    console = console or Console(width=WIDTH)
    if db_path.exists():
        raise FileExistsError(f"{db_path} exists; the demo needs a fresh database")
    clock = ManualClock(datetime.now(UTC).replace(microsecond=0) - timedelta(days=21))
    timings: list[tuple[str, float]] = []
    summary: dict[str, Any] = {"decisions": [], "recalls": {}, "isolation_ok": None}
    with _timed(timings, "open + load model"), MemoryManager.open(
        f"sqlite:///{db_path}", clock=clock
    ) as memory:
        _ = memory.longterm.recall  # load the model inside the timed step
        memory.embedder.embed(["warm up"])
    with MemoryManager.open(f"sqlite:///{db_path}", clock=clock) as memory:
        start_day = clock.now()
        first_session: dict[str, Any] = {}
        reasons: list[str] = []
        table = Table(title="What each layer kept (why: below)", width=WIDTH, padding=(0, 1))
        table.add_column("#", justify="right", width=2)
        table.add_column("user", width=5)
        table.add_column("day", justify="right", width=3)
        table.add_column("said", ratio=1)
        table.add_column("layer", width=9)
        table.add_column("decision", width=13, overflow="fold")
        for n, session in enumerate(SCRIPT, start=1):
            clock.set(start_day + timedelta(days=session.day))
            session_id = f"{session.user}-s{n}"
            wm = memory.working(session.user, session_id)
            with _timed(timings, f"session {n}"):
                for u in session.utterances:
                    memory.episodic.append_turn(session.user, session_id, "user", u.text)
                    wm.add_turn("user", u.text)
                    if u.variable is not None:
                        wm.set(*u.variable)
                        layer, outcome, why = "working", "kept", (
                            f"session variable {u.variable[0]}={u.variable[1]} "
                            "(temporary task state)"
                        )
                    else:
                        d = memory.remember(
                            session.user,
                            MemoryInput(
                                content=u.text, type=MemoryType(u.type), scope=u.scope,
                                slot=Slot(*u.slot) if u.slot else None,
                                correction=u.correction, session_id=session_id,
                            ),
                        )
                        layer = "long-term" if d.record_id else "-"
                        outcome, why = d.outcome.replace("dropped_", "dropped: "), d.reason
                        summary["decisions"].append((session.user, u.text, d.outcome))
                    reasons.append(why)
                    table.add_row(str(len(reasons)), session.user, str(session.day),
                                  escape(u.text), layer, escape(outcome))
            if n == 1:
                first_session = dict(wm.items())
        console.print(table)
        why_table = Table.grid(padding=(0, 1))
        why_table.add_column(justify="right", width=3)
        why_table.add_column(ratio=1)
        for i, why in enumerate(reasons, start=1):
            why_table.add_row(f"{i}", Text(why))
        console.print("[bold]Why[/] (the write policy's reason for each line):")
        console.print(why_table, width=WIDTH)

        console.rule("[bold]Working memory[/]")
        later = dict(memory.working("alice", "alice-s1").items())
        console.print(f"alice-s1 at the end of the session: {escape(str(first_session))}")
        console.print(f"three weeks later: {escape(str(later))} - entries live "
                      f"{memory.settings.working_ttl_seconds / 60:.0f} min, and nothing "
                      "reaches long-term memory except through the write policy.")

        console.rule("[bold]Long-term memory[/]")
        recall_table = Table(title="Recall (top 3; score = relevance x decay x "
                             "confidence x status)", width=WIDTH, padding=(0, 1))
        recall_table.add_column("user", width=5)
        recall_table.add_column("query", ratio=2)
        recall_table.add_column("recalled", ratio=3)
        recall_table.add_column("score", width=5, justify="right")
        for user, query, scope in RECALLS:
            with _timed(timings, f"recall ({user})"):
                hits = memory.recall(user, query, scope=scope, k=3)
            summary["recalls"][query] = [h.content for h in hits]
            for i, hit in enumerate(hits or [None]):
                recall_table.add_row(
                    user if i == 0 else "", escape(query) if i == 0 else "",
                    "(nothing relevant)" if hit is None else escape(hit.content),
                    "" if hit is None else f"{hit.score:.2f}",
                )
        console.print(recall_table)

        city = memory.lookup("alice", subject="alice", attribute="city")[0]
        history = memory.history("alice", city.id)
        console.print("[bold]Corrected preference, with history[/] (alice.city):")
        for rec in history:
            until = rec.valid_to.date().isoformat() if rec.valid_to else "now"
            console.print(f"  {rec.slot.value if rec.slot else rec.content:<8} "
                          f"{rec.valid_from.date()} → {until:<10} "
                          + escape(f"[{rec.status.value}]"))
        conflicts = memory.conflicts("bob")
        if conflicts:
            values = " vs ".join(r.slot.value if r.slot else r.content for r in conflicts[0])
            console.print(f"[bold]Pending confirmation[/] for bob: {values} "
                          "(both kept until bob confirms)")
        summary["history"] = [r.slot.value if r.slot else r.content for r in history]

        with _timed(timings, "isolation check"):
            leaked = [
                h for h in memory.recall("bob", "Where does Alice live? window seats",
                                         min_relevance=0.0, record_use=False)
                if h.record.user_id != "bob"
            ]
            alice_ids = {r.id for r in memory.memories("alice", limit=1000)}
            bob_sees = {h.id for h in memory.recall("bob", "Alice Berlin Munich shellfish",
                                                    min_relevance=0.0, k=20)}
        summary["isolation_ok"] = not leaked and not (alice_ids & bob_sees)
        console.print(f"[bold]Isolation[/]: bob's recalls returned {len(bob_sees)} records, "
                      f"{len(alice_ids & bob_sees)} of them alice's → "
                      + ("[green]isolated[/]" if summary["isolation_ok"] else "[red]LEAK[/]"))

        console.rule("[bold]Episodic memory[/]")
        with _timed(timings, "task + lesson"):
            summary["lesson"] = _episode(memory, clock, start_day, console)

        stats = memory.stats()
        console.print(f"[bold]Stored[/]: {stats['by_status']}")
        console.print(Text(f"in {db_path}"))

    console.print("[bold]Timings[/]:")
    for label, ms in timings:
        console.print(f"  {label:<20} {ms:>8.0f} ms")
    summary["timings_ms"] = dict(timings)
    return summary


#: the booking task of the episodic part: (thought, action, observation, outcome, error)
TASK_STEPS: list[tuple[str, str | None, str, str, str | None]] = [
    ("Which seat does Alice like?", "recall", "window seats (preference, travel)",
     "success", None),
    ("Find a flight Munich -> Lisbon on Friday.", "search_flights",
     "3 flights; LH1790 at 07:05 fits", "success", None),
    ("Book LH1790 with a window seat.", "book_seat",
     "the airline did not answer within 10 s", "failure", "timeout"),
]
RESUMED_STEPS: list[tuple[str, str | None, str, str, str | None]] = [
    ("Retry the booking once the airline answers.", "book_seat", "seat 14A booked on LH1790",
     "success", None),
    ("Tell Alice.", None, "Booked LH1790, window seat 14A.", "final", None),
]


def _episode(memory: MemoryManager, clock: ManualClock, start_day: datetime,
             console: Console) -> str | None:
    """A task with steps, interrupted and resumed, then the lesson the ``summarize``
    job (offline rules, no model) draws from it."""
    clock.set(start_day + timedelta(days=15))
    goal = "Book a flight Munich -> Lisbon for Friday, window seat"
    task = memory.episodic.start_task("alice", goal, scope="travel", status="running")
    for thought, action, observation, outcome, error in TASK_STEPS:
        memory.episodic.record_step("alice", task.task_id, Step(
            thought=thought, action=action, observation=observation, outcome=outcome,
            error_type=error))
    memory.episodic.update_task("alice", task.task_id, status="pending")
    console.print(f"[bold]Task[/] {escape(goal)} (alice): interrupted after a timeout")
    clock.set(clock.now() + timedelta(minutes=20))
    resumed = memory.episodic.resume("alice", task.task_id)
    console.print(f"[bold]Resumed[/] at step {resumed.next_step_no} with "
                  f"{len(resumed.steps)} steps on record")
    memory.episodic.update_task("alice", task.task_id, status="running")
    for thought, action, observation, outcome, error in RESUMED_STEPS:
        memory.episodic.record_step("alice", task.task_id, Step(
            thought=thought, action=action, observation=observation, outcome=outcome,
            error_type=error))
    memory.episodic.finish_task("alice", task.task_id, "done")
    steps = Table(title="Trajectory", width=WIDTH, padding=(0, 1))
    steps.add_column("#", justify="right", width=2)
    steps.add_column("action", width=14)
    steps.add_column("observation", ratio=1)
    steps.add_column("outcome", width=8)
    for rec in memory.episodic.trajectory("alice", task.task_id).steps:
        s = rec.step
        seen = str(s.observation or "")
        if s.error_type:
            seen = f"[{s.error_type}] {seen}"
        steps.add_row(str(rec.step_no), s.action or "-", escape(seen), escape(s.outcome or ""))
    console.print(steps)
    clock.set(clock.now() + timedelta(days=1))
    Consolidator(memory, settings=ConsolidationSettings()).run("summarize", user_id="alice")
    lessons = [r for r in memory.memories("alice", types=["experience"])
               if r.task_id == task.task_id]
    lesson = lessons[0].content if lessons else None
    console.print("[bold]Lesson[/] (one line, from the summarize job; recalled next time):")
    console.print(Padding(Text(lesson or "(none)"), (0, 0, 0, 2)))
    return lesson
