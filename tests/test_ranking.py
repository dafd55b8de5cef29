"""Recall's ranking in one place (issue 32, part 5): ``hit.parts`` shows each stage.

Before, ordering by currency multiplied its lifts into ``status_weight``: a promoted newer
value showed a status weight of 1.76-3.93 where docs/memory.md documents 1.0 / 0.9 / 0.5.
Now ``status_weight`` is the status's weight alone, ``currency`` what ordering by currency
did, ``range_weight`` what a date range did, and the score is their product.

Real SQLite and PostgreSQL, the real embedding model.
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata.errors import EmbeddingError
from memstrata.memory._openai_embedder import OpenAIEmbedder
from memstrata.memory.embedder import Embedder
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.testing import OpenAICompatServer
from memstrata.types import MemoryType, ScoreParts, Slot, Status

DAY0 = datetime(2026, 1, 5, 19, 0, tzinfo=UTC)


def _product(p: ScoreParts) -> float:
    return p.relevance * p.decay * p.confidence * p.status_weight * p.currency * p.range_weight


def test_every_stage_shows_in_the_parts_and_status_weight_is_the_documented_one(
        manager: MemoryManager, clock: ManualClock) -> None:
    policy = manager.settings.retrieval
    texts = [(0, "I work as a nurse at St. Mary's hospital."),
             (0, "I visited the art museum downtown."),
             (35, "I started teaching biology at Lincoln High this month."),
             (36, "My sister just got a job at the bakery on Elm Street.")]
    ids = []
    for day, text in texts:
        d = manager.remember("u1", MemoryInput(content=text, at=DAY0 + timedelta(days=day),
                                               session_id=f"s{day}"))
        assert d.record_id
        ids.append(d.record_id)
    # a stable fact said twice differently waits for confirmation: its weight is 0.9
    for day, value in ((1, "3 May"), (2, "4 May")):
        manager.remember("u1", MemoryInput(content=f"My birthday is on {value}.",
                                           at=DAY0 + timedelta(days=day),
                                           slot=Slot("user", "birthday", value)))
    clock.set(DAY0 + timedelta(days=100))
    seen = set()
    for question in ("Where do I work?", "Where do I work these days?",
                     "What did I do in January?", "When is my birthday?"):
        hits = manager.recall("u1", question, record_use=False)
        assert hits
        for h in hits:
            status = manager.get("u1", h.id).status
            # the status's weight, nothing else: 1.0 active, 0.9 pending, ...
            assert h.parts.status_weight == policy.weight_of(status), (question, h.parts)
            assert h.parts.status_weight in (1.0, 0.9, 0.5)
            seen.add(status)
            assert h.parts.score == _product(h.parts) == h.score
            assert h.currency == h.parts.currency
    assert Status.PENDING_CONFIRMATION in seen
    hits = manager.recall("u1", "Where do I work?", record_use=False)
    by_id = {h.id: h for h in hits}
    # the newer value is lifted above the one it updates, which weighs outdated_weight
    assert [h.id for h in hits][:2] == [ids[2], ids[0]]
    assert by_id[ids[2]].parts.currency > 1.0
    assert by_id[ids[0]].parts.currency == RetrievalPolicy().outdated_weight
    # the status weights stay the documented ones even where the lift was large
    assert {by_id[i].parts.status_weight for i in (ids[0], ids[2])} == {1.0}


def test_a_date_range_goes_into_range_weight(manager: MemoryManager,
                                             clock: ManualClock) -> None:
    for day, text in [(0, "Went to a pottery class with Ana."),
                      (60, "Went to a climbing gym with Ana.")]:
        manager.remember("u1", MemoryInput(content=text, type=MemoryType.EVENT,
                                           at=DAY0 + timedelta(days=day)))
    clock.set(DAY0 + timedelta(days=90))
    hits = manager.recall("u1", "What did I do with Ana in January 2026?", record_use=False)
    assert hits and hits[0].record.content == "Went to a pottery class with Ana."
    assert hits[0].parts.range_weight == RetrievalPolicy().range_boost
    assert hits[0].parts.status_weight == hits[0].parts.currency == 1.0
    assert hits[0].parts.score == _product(hits[0].parts)



def test_what_a_question_asks_is_read_once_beside_its_embedding(
        manager: MemoryManager, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader reads what the question asks for on another thread while the question
    is embedded."""
    from memstrata.memory import longterm

    calls: list[tuple[str, str]] = []
    asked = longterm.LongTermMemory._asked

    def counted(self: longterm.LongTermMemory, query: str) -> str | None:
        calls.append((query, threading.current_thread().name))
        return asked(self, query)

    monkeypatch.setattr(longterm.LongTermMemory, "_asked", counted)
    written = manager.remember("u1", "I work as a nurse at St. Mary's hospital.")
    hits = manager.recall("u1", "Where do I work?", record_use=False)
    assert [h.id for h in hits][:1] == [written.record_id]
    assert [q for q, _ in calls] == ["Where do I work?"]
    assert calls[0][1].startswith("memstrata-ask")
    # not asked at all where the policy does not answer the asked attribute
    manager.recall("u1", "Where do I work?", record_use=False,
                   policy=RetrievalPolicy(answer_asked=False))
    assert len(calls) == 1


def test_an_embedding_error_is_raised_as_it_is_after_the_read_has_finished(
        embedder: Embedder, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedding endpoint (a real HTTP server on 127.0.0.1 with the real model behind
    it) starts refusing the embedder's key: recall raises the embedder's typed error, and
    the read beside it has finished, not been left running."""
    from memstrata.memory import longterm

    calls: list[str] = []
    asked = longterm.LongTermMemory._asked

    def counted(self: longterm.LongTermMemory, query: str) -> str | None:
        found = asked(self, query)
        calls.append(query)
        return found

    monkeypatch.setattr(longterm.LongTermMemory, "_asked", counted)
    with OpenAICompatServer(embedder=embedder, api_key="sk-test") as server, \
            MemoryManager.open(sqlite_url, embedder=OpenAIEmbedder(
                model="minilm", base_url=server.base_url, api_key="sk-test")) as mm:
        mm.remember("u1", "I work as a nurse at St. Mary's hospital.")
        assert mm.recall("u1", "Where do I work?", record_use=False)
        server.api_key = "sk-rotated"  # the endpoint now refuses the embedder's key
        with pytest.raises(EmbeddingError, match="invalid api key"):
            mm.recall("u1", "Which hospital do I work at?", record_use=False)
        assert calls == ["Where do I work?", "Which hospital do I work at?"]


def test_recall_reads_the_asking_users_rows_through_an_index_of_their_own(
        embedder: Embedder, clock: ManualClock, tmp_path: Path) -> None:
    """A question for an attribute reads the user's slot values and latest statements:
    SQLite answered both through the status index - every user's active rows, sorted -
    until migration 9 gave it the user's records newest first. Every statement recall
    runs on ``memories`` is planned through an index that starts with the user."""
    from sqlalchemy import event

    with MemoryManager.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder,
                            clock=clock, index_dir=tmp_path / "index") as m:
        for user in ("a", "b", "c"):
            m.remember_many(user, [MemoryInput(content=text) for text in (
                "I live in Leeds.", "I work at Siemens as an engineer.",
                "My sister moved to Porto.", "Thinking about getting a dog.")])
        statements: list[tuple[str, Any]] = []

        def seen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
                 executemany: bool) -> None:
            if statement.lstrip().upper().startswith("SELECT") and " memories" in statement:
                statements.append((statement, parameters))

        event.listen(m.db.engine, "before_cursor_execute", seen)
        try:
            for question in ("Which city do I live in?", "Where do I work now?",
                             "我现在住在哪里？"):
                m.recall("b", question, record_use=False)
        finally:
            event.remove(m.db.engine, "before_cursor_execute", seen)
        assert statements
        raw = sqlite3.connect(tmp_path / "m.db")
        try:
            for statement, parameters in statements:
                plan = " | ".join(str(row[3]) for row in raw.execute(
                    "EXPLAIN QUERY PLAN " + statement, parameters))
                assert "SCAN memories" not in plan, (statement, plan)
                assert "ix_memories_status_expiry" not in plan, (statement, plan)
        finally:
            raw.close()
