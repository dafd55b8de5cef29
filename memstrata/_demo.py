"""`memstrata demo`: two users of a personal assistant, a few sessions, every layer shown.

Runs on a fresh SQLite file with the local index and the packaged model, and
prints one screen: what each layer kept and why, a recall per user, a corrected
preference with its history, the isolation check, and the time of each step.
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
from rich.table import Table

from memstrata.clock import ManualClock
from memstrata.memory.manager import MemoryManager
from memstrata.types import MemoryInput, MemoryType, Slot

__all__ = ["SCRIPT", "run_demo"]


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
        Utterance("I eat fish now, I'm pescatarian.", "profile", "food",
                  slot=("bob", "diet", "pescatarian")),
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
    console = console or Console(width=120)
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
        table = Table(title="What each layer kept, and why", show_lines=False, expand=True,
                      padding=(0, 1))
        for col, width in (("user", 5), ("day", 3), ("said", None), ("layer", 9),
                           ("decision", 21), ("why", None)):
            table.add_column(col, min_width=width, max_width=width, no_wrap=True,
                             overflow="ellipsis", ratio=None if width else 1)
        for n, session in enumerate(SCRIPT, start=1):
            clock.set(start_day + timedelta(days=session.day))
            session_id = f"{session.user}-s{n}"
            wm = memory.working(session.user, session_id)
            with _timed(timings, f"session {n} ({session.user}, {len(session.utterances)} turns)"):
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
                    table.add_row(session.user, str(session.day), u.text, layer, outcome, why)
            if n == 1:
                first_session = dict(wm.items())
        console.print(table)

        recall_table = Table(title="Recall (top 3; score = relevance x decay x "
                             "confidence x status)", expand=True, padding=(0, 1))
        for col, width in (("user", 5), ("query", None), ("recalled", None), ("score", 5)):
            recall_table.add_column(col, min_width=width, max_width=width, no_wrap=True,
                                    overflow="ellipsis", ratio=None if width else 1)
        for user, query, scope in RECALLS:
            with _timed(timings, f"recall for {user}"):
                hits = memory.recall(user, query, scope=scope, k=3)
            summary["recalls"][query] = [h.content for h in hits]
            for i, hit in enumerate(hits or [None]):
                recall_table.add_row(
                    user if i == 0 else "", query if i == 0 else "",
                    "(nothing relevant)" if hit is None else hit.content,
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

        later = dict(memory.working("alice", "alice-s1").items())
        console.print(f"[bold]Working memory[/] alice-s1: {first_session} at the end of the "
                      f"session, {later} three weeks later (entries live "
                      f"{memory.settings.working_ttl_seconds / 60:.0f} min; nothing reaches "
                      "long-term memory except through the write policy)")
        stats = memory.stats()
        console.print(f"[bold]Stored[/]: {stats['by_status']} in {db_path}")

    timing_line = " · ".join(f"{label} {ms:.0f} ms" for label, ms in timings)
    console.print(f"[bold]Timings[/]: {timing_line}")
    summary["timings_ms"] = dict(timings)
    return summary

