"""A long message that states one thing and asks another is found by what it states:
each sentence of a record has its own vector, and the relevance gate admits the record
when one sentence passes it (``RetrievalPolicy.sentence_gate``).

Before, "Finally drove my new Subaru Outback home ... Any tips for keeping the seats
clean with a muddy dog?" (cosine 0.23 as a whole against "What car do I drive?", 0.36
by its first sentence) was never returned, and recall answered with the car the user
had sold. Real SQLite and PostgreSQL, the real embedding model.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from memstrata import ManualClock, MemoryInput, MemoryManager
from memstrata._text import MAX_SENTENCES, sentences
from memstrata.memory.embedder import Embedder
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.policies.write import WritePolicy

DAY0 = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
OLD_CAR = "I drive a silver 2011 Toyota Corolla."
NEW_CAR = ("Finally drove my new Subaru Outback home from the dealer on Friday. Any tips for "
           "keeping the seats clean with a muddy dog?")
CAR_QUESTION = "What car do I drive? The parking permit form wants the make and model."
#: the gate alone: the question for the car not answered by the newest make named
#: (``RetrievalPolicy.answer_asked``, tested in test_recall_possessions.py)
GATE_ONLY = RetrievalPolicy(answer_asked=False)
FILLER = ["Why is the sky blue?", "Give me a quick recipe for garlic butter shrimp.",
          "How many ounces are in a cup?"]


def _remember(manager: MemoryManager, user: str, rows: list[tuple[int, str]]) -> dict[str, str]:
    ids = {}
    for day, text in rows:
        decision = manager.remember(user, MemoryInput(
            content=text, at=DAY0 + timedelta(days=day), session_id=f"s{day}"))
        assert decision.record_id is not None
        ids[text] = decision.record_id
    return ids


def test_a_changed_value_said_in_a_long_message_is_found_and_ranks_first(
        manager: MemoryManager, clock: ManualClock) -> None:
    ids = _remember(manager, "u", [(0, OLD_CAR), (0, FILLER[0]), (30, FILLER[1]),
                                   (45, NEW_CAR), (45, FILLER[2])])
    clock.set(DAY0 + timedelta(days=60))
    ranked = [h.id for h in manager.recall("u", CAR_QUESTION, record_use=False)]
    assert ranked[0] == ids[NEW_CAR]
    # the defect, with the sentences not read: the whole message is under the gate and
    # the sold car is the answer
    before = [h.id for h in manager.recall("u", CAR_QUESTION, record_use=False,
                                           policy=replace(GATE_ONLY, sentence_gate=False))]
    assert ids[NEW_CAR] not in before
    assert before[0] == ids[OLD_CAR]


def test_a_sentence_admits_but_the_whole_message_ranks(
        manager: MemoryManager, clock: ManualClock) -> None:
    ids = _remember(manager, "u", [(0, NEW_CAR), (0, FILLER[0]), (0, FILLER[1])])
    clock.set(DAY0 + timedelta(days=10))
    hits = manager.recall("u", CAR_QUESTION, record_use=False, policy=GATE_ONLY)
    assert [h.id for h in hits] == [ids[NEW_CAR]]
    # ranked by the cosine of the whole message (under the gate), not by its sentence's
    assert hits[0].parts.dense < RetrievalPolicy().min_relevance
    assert manager.recall("u", CAR_QUESTION, record_use=False,
                          policy=replace(GATE_ONLY, sentence_gate=False)) == []


def test_records_stored_without_sentence_vectors_get_them_on_reindex(
        manager: MemoryManager, clock: ManualClock) -> None:
    """A database written before migration 0008 has no sentence vectors: ``reindex``
    adds them and leaves every record's own vector as it was."""
    from memstrata.memory._schema import memory_vectors

    ids = _remember(manager, "u", [(0, NEW_CAR), (0, FILLER[0])])
    with manager.db.write() as conn:
        conn.execute(update(memory_vectors).values(sentences=None))
    with manager.db.read() as conn:
        vectors = {r[0]: r[1] for r in conn.execute(
            select(memory_vectors.c.memory_id, memory_vectors.c.vector))}
    clock.set(DAY0 + timedelta(days=10))
    assert manager.recall("u", CAR_QUESTION, record_use=False, policy=GATE_ONLY) == []
    report = manager.reindex("u")["u"]
    assert report["reembedded"] == 0
    assert report["sentences_added"] == 1  # the car message; the filler is one sentence
    with manager.db.read() as conn:
        after = {r[0]: r[1] for r in conn.execute(
            select(memory_vectors.c.memory_id, memory_vectors.c.vector))}
        parts = {r[0]: r[1] for r in conn.execute(
            select(memory_vectors.c.memory_id, memory_vectors.c.sentences))}
    assert after == vectors
    assert parts[ids[FILLER[0]]] is None and parts[ids[NEW_CAR]] is not None
    assert [h.id for h in manager.recall("u", CAR_QUESTION, record_use=False,
                                         policy=GATE_ONLY)] == [ids[NEW_CAR]]
    assert manager.reindex("u")["u"]["sentences_added"] == 0


@pytest.mark.parametrize(("text", "expected"), [
    ("One sentence only.", []),
    ("", []),
    ("Mr. Smith moved to St. Louis last May. He loves it.",
     ["Mr. Smith moved to St. Louis last May.", "He loves it."]),
    ("first week at Halvorsen Freight — they've got me on three systems. any tips?",
     ["first week at Halvorsen Freight", "they've got me on three systems.", "any tips?"]),
    ("我们搬到了杭州，新家离西湖很近。你能推荐几家附近的餐厅吗？",
     ["我们搬到了杭州，新家离西湖很近。", "你能推荐几家附近的餐厅吗？"]),
    ("Well-known e-bike, a 2-for-1 deal.", []),
])
def test_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_a_long_text_is_read_as_its_first_sentences() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(20))
    assert sentences(text) == [f"Sentence number {i} is here." for i in range(MAX_SENTENCES)]


def test_sentence_vectors_can_be_left_out_at_write(
        db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path) -> None:
    """``WritePolicy(sentence_vectors=False)`` (an embedding API paid by the token):
    nothing but the whole is embedded, stored or added by ``reindex``."""
    from memstrata.memory._schema import memory_vectors

    with MemoryManager.open(db_url, embedder=embedder, clock=clock, index_dir=tmp_path / "i",
                            write=WritePolicy(sentence_vectors=False)) as mm:
        _remember(mm, "u", [(0, NEW_CAR)])
        assert mm.reindex("u")["u"]["sentences_added"] == 0
        with mm.db.read() as conn:
            assert list(conn.execute(select(memory_vectors.c.sentences)).scalars()) == [None]
        clock.set(DAY0 + timedelta(days=10))
        assert mm.recall("u", CAR_QUESTION, record_use=False, policy=GATE_ONLY) == []


def test_the_make_named_answers_the_car_question_without_the_sentence_gate(
        manager: MemoryManager, clock: ManualClock) -> None:
    """The two readings stand apart: with no sentence read, the question for the car is
    still answered by the newest statement of the user's own naming a make (the Subaru),
    and with that answer switched off too, by the sold car."""
    ids = _remember(manager, "u", [(0, OLD_CAR), (0, FILLER[0]), (45, NEW_CAR)])
    clock.set(DAY0 + timedelta(days=60))
    no_gate = RetrievalPolicy(sentence_gate=False)
    ranked = [h.id for h in manager.recall("u", CAR_QUESTION, record_use=False, policy=no_gate)]
    assert ranked[0] == ids[NEW_CAR]
    neither = replace(no_gate, answer_asked=False)
    ranked = [h.id for h in manager.recall("u", CAR_QUESTION, record_use=False, policy=neither)]
    assert ranked[0] == ids[OLD_CAR] and ids[NEW_CAR] not in ranked
