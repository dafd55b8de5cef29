"""Forget means forgotten: canary strings enter through every path, then ``forget`` and
``forget_user``; every column of every table (found by reflection, so a new table is
covered without editing this test) and every file under the data directory and the
model cache is scanned - zero canaries, on SQLite and PostgreSQL.

A bystander user's canary must still be found at the end: it proves the scan sees
what it looks for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import MetaData, select

from memstrata import ManualClock, MemoryManager, Status
from memstrata.agent import Agent, AgentSettings, CharCounter, tool
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.memory.embedder import Embedder
from memstrata.testing import OpenAICompatServer, Reply, ScriptedLLM, call, plan, say

# single lower-case tokens ending in a digit: the keyword index keeps them whole
REMEMBER = "zqremember7"
OBSERVE = "zqobserve7"
PROMOTE = "zqpromote7"
SUMMARY = "zqsummary7"
MERGE = "zqmerge7"
UNDO = "zqundo7"
LLM = "zqllmfact7"
CORRECTED = "zqcorrected7"
TOOL = "zqtoolarg7"
BYSTANDER = "zqbystander7"
VICTIM_CANARIES = (REMEMBER, OBSERVE, PROMOTE, SUMMARY, MERGE, UNDO, LLM, CORRECTED, TOOL)


@tool(cache=False)
def lookup_catalogue(q: str) -> list[str]:
    """Look something up in the catalogue.

    Args:
        q: What to look for.
    """
    return [f"one result for {q}"]


def scan_database(memory: MemoryManager, needles: tuple[str, ...]) -> dict[str, list[str]]:
    """needle -> ["table.column", ...] wherever it occurs, by reflection of the database."""
    found: dict[str, list[str]] = {}
    reflected = MetaData()
    reflected.reflect(memory.db.engine)
    with memory.db.read() as conn:
        for table in reflected.sorted_tables:
            for row in conn.execute(select(table)):
                for column, value in row._mapping.items():
                    if value is None:
                        continue
                    if isinstance(value, bytes | bytearray | memoryview):
                        text = bytes(value).decode("latin-1")
                    elif isinstance(value, str):
                        text = value
                    else:
                        text = json.dumps(value, ensure_ascii=False, default=str)
                    for needle in needles:
                        if needle in text:
                            found.setdefault(needle, []).append(f"{table.name}.{column}")
    return found


def scan_files(roots: list[Path], needles: tuple[str, ...]) -> dict[str, list[str]]:
    """needle -> [path, ...]: every file read once, all needles matched in one pass (the
    model cache holds hundreds of MB of exports)."""
    found: dict[str, list[str]] = {}
    pattern = re.compile(b"|".join(re.escape(n.encode()) for n in needles))
    for root in roots:
        if not root.exists():
            continue
        for path in root.rglob("*"):
            if not path.is_file():
                continue
            for needle in {m.decode() for m in pattern.findall(path.read_bytes())}:
                found.setdefault(needle, []).append(str(path))
    return found


@pytest.fixture
def server() -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer() as srv:
        yield srv


@pytest.fixture
def memory(db_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
           ) -> Iterator[MemoryManager]:
    with MemoryManager.open(db_url, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "home" / "index") as mm:
        yield mm


def _records_with(memory: MemoryManager, user: str, needle: str) -> list[str]:
    return [r.id for r in memory.memories(user, statuses=list(Status), limit=1000)
            if needle in r.content or (r.slot is not None and needle in r.slot.value)]


def test_no_canary_survives_forget_and_forget_user(
        memory: MemoryManager, clock: ManualClock, server: OpenAICompatServer, tmp_path: Path):
    v, b = "victim", "bystander"
    # --- canaries in through every path
    memory.remember(v, f"My locker code is {REMEMBER} at the gym", type="knowledge")
    memory.remember(b, f"My locker code is {BYSTANDER} at the gym", type="knowledge")
    memory.observe(v, "s1", "user", f"I prefer {OBSERVE} tea in the morning.")
    memory.observe(v, "s1", "user", f"Remember that my favourite snack is {SUMMARY} crackers.")
    memory.observe(v, "s1", "assistant", "Noted, I will keep that in mind.")
    memory.observe(v, "s1", "user", f"Actually not {CORRECTED} but oolong for the evening.")
    wm = memory.working(v, "s2")
    wm.set("note", f"My passport number is {PROMOTE} and it expires in May.")
    wm.promote("note", type="profile")
    # paraphrases the write path lets through and the conflicts job merges (one pair is
    # merged and stays merged, the other is merged by a run that is then undone)
    memory.remember(v, f"I prefer trains with a quiet {MERGE} coach.", type="preference")
    clock.advance(days=1)
    memory.remember(v, f"I like travelling by train in the {MERGE} quiet coach.",
                    type="preference")

    # summarize through the loopback model: the transcript and the answer are logged
    memory.observe(v, "s3", "user", "Let us plan the weekend.")
    clock.advance(hours=2)
    jobs = Consolidator(memory, settings=ConsolidationSettings.build(
        schedule={"timezone": "UTC"},
        llm={"model": "scripted", "base_url": server.base_url, "api_key": "k", "retries": 0}))
    server.push(
        Reply.text(json.dumps({"summary": f"Snack {SUMMARY} and tea {OBSERVE} talk",
                               "facts": []})),
        Reply.text(json.dumps({"summary": "Weekend planning", "facts": [
            {"content": f"The user collects {LLM} stamps", "type": "preference",
             "attribute": None, "value": None, "confidence": 0.7}]})),
    )
    assert jobs.run("summarize").status == "finished"
    jobs_offline = Consolidator(memory, settings=ConsolidationSettings.build(
        schedule={"timezone": "UTC"}))
    merged = jobs_offline.run("conflicts")
    assert merged.status == "finished" and merged.counts.get("merge")
    memory.remember(v, f"I read {UNDO} science fiction novels before bed.",
                    type="preference")
    clock.advance(days=1)
    memory.remember(v, f"At night I often read {UNDO} sci-fi.", type="preference")
    to_undo = jobs_offline.run("conflicts")
    assert to_undo.counts.get("merge")
    assert jobs_offline.undo(to_undo.run_id or "").status == "finished"

    # the agent: a tool argument holding a canary, recorded in steps and the call log
    model = ScriptedLLM(plan([("Look it up", "c1", "lookup_catalogue")]),
                        call("lookup_catalogue", {"q": f"spare {TOOL} part"}),
                        say("Found it."))
    Agent(model, memory=memory, tools=[lookup_catalogue],
          settings=AgentSettings(detect_drift=False), token_counter=CharCounter()
          ).run("Find the spare part", user=v)

    roots = [tmp_path / "home", Path.home() / ".cache" / "memstrata"]
    if memory.db.sqlite_path is not None:
        roots.append(memory.db.sqlite_path.parent)
    everything = (*VICTIM_CANARIES, BYSTANDER)
    before = {**scan_database(memory, everything)}
    for needle in (REMEMBER, OBSERVE, PROMOTE, SUMMARY, MERGE, UNDO, LLM, CORRECTED, TOOL):
        assert needle in before, f"{needle} never reached the database: the test is wrong"

    # --- forget every memory holding a canary (the session summary first: forgetting
    # it takes the turns it was formed from, and the facts read from those turns)
    # (which of them a turn's readings put where depends on the reader: the correction is
    # forgotten with the summary when the summary was formed from its turn, else on its own)
    for needle in (SUMMARY, REMEMBER, OBSERVE, PROMOTE, MERGE, UNDO, LLM, CORRECTED):
        while ids := _records_with(memory, v, needle):
            memory.forget(v, ids[0])
    remembered = (REMEMBER, OBSERVE, PROMOTE, SUMMARY, MERGE, UNDO, LLM, CORRECTED)
    memory.keyword_index.flush()
    memory.vector_index.flush()
    left = scan_database(memory, remembered)
    assert left == {}, f"forgotten text survives in: {left}"
    on_disk = scan_files(roots, remembered)
    assert on_disk == {}, f"forgotten text survives in files: {on_disk}"
    assert memory.recall(v, f"{REMEMBER} {OBSERVE} {MERGE} {UNDO}") == []

    # --- forget the user: nothing of theirs anywhere, the bystander untouched
    memory.forget_user(v)
    memory.keyword_index.flush()
    memory.vector_index.flush()
    left = scan_database(memory, everything)
    assert set(left) == {BYSTANDER}, f"erased user's text survives in: {left}"
    on_disk = scan_files(roots, VICTIM_CANARIES)
    assert on_disk == {}, f"erased user's text survives in files: {on_disk}"
    user_refs = scan_database(memory, (v,))
    assert user_refs == {}, f"the erased user's id survives in: {user_refs}"
    assert [h.content for h in memory.recall(b, "locker code")] == [
        f"My locker code is {BYSTANDER} at the gym"]


def test_forget_also_clears_the_embedding_cache(memory: MemoryManager):
    from memstrata.memory.embedder import CachingEmbedder, EmbeddingCache

    embedder = memory.embedder
    assert isinstance(embedder, CachingEmbedder)
    d = memory.remember("u", f"The alarm code is {REMEMBER}", type="knowledge")
    cache: EmbeddingCache = embedder._cache  # type: ignore[attr-defined]
    assert cache.get_many([f"The alarm code is {REMEMBER}"])[0] is not None
    assert d.record_id is not None
    memory.forget("u", d.record_id)
    assert cache.get_many([f"The alarm code is {REMEMBER}"])[0] is None


def test_forget_drops_every_vector_the_write_put_in_the_embedding_cache(memory: MemoryManager):
    """Not only the content's: the indexed text (context and content) and each
    sentence's vector were cached too; forgetting the first left them behind."""
    from memstrata import MemoryInput
    from memstrata.memory.embedder import CachingEmbedder, EmbeddingCache

    embedder = memory.embedder
    assert isinstance(embedder, CachingEmbedder)
    cache: EmbeddingCache = embedder._cache  # type: ignore[attr-defined]
    embedder.forget_cached(None)  # the embedder is shared with the other backend's run
    before = set(cache._lru.keys())  # type: ignore[attr-defined]
    d = memory.remember("u", MemoryInput(
        content=f"We moved to Lisbon in May. The {REMEMBER} flat is tiny.",
        context="said on a Monday morning", type="profile"))
    added = set(cache._lru.keys()) - before  # type: ignore[attr-defined]
    assert len(added) == 3  # the indexed text, then each of the two sentences
    assert d.record_id is not None
    memory.forget("u", d.record_id)
    assert not set(cache._lru.keys()) & added  # type: ignore[attr-defined]


REINFORCED = "zqreinforced7"


@pytest.mark.parametrize("times", [2, 3])
def test_a_fact_restated_then_forgotten_does_not_come_back_through_the_nightly_summary(
        memory: MemoryManager, clock: ManualClock, times: int):
    """Issue 33: said twice (the second time ``observe`` answers ``reinforced``), forgotten,
    then the nightly summary quoted it again - the restating turn had no link to the
    record, so forget left it, and the summary was formed from it."""
    v = "victim"
    said = [f"My email is {REINFORCED}@example.com, by the way.",
            f"As I said, my email is {REINFORCED}@example.com.",
            f"Just so you have it, my email is {REINFORCED}@example.com."][:times]
    outcomes = []
    for text in said:
        outcomes.append(memory.observe(v, "s1", "user", text))
        clock.advance(minutes=1)
    memory.observe(v, "s1", "user", "Also, can you help me plan a trip to the coast?")
    reinforced = [d for o in outcomes[1:] for d in o.decisions if d.outcome == "reinforced"]
    assert len(reinforced) == times - 1, outcomes
    while ids := _records_with(memory, v, REINFORCED):
        memory.forget(v, ids[0])
    clock.advance(hours=3)
    jobs = Consolidator(memory, settings=ConsolidationSettings.build(
        schedule={"timezone": "UTC"}))
    assert jobs.run("summarize").status == "finished"
    memory.keyword_index.flush()
    memory.vector_index.flush()
    assert scan_database(memory, (REINFORCED,)) == {}
    assert all(REINFORCED not in h.content for h in memory.recall(v, "what is my email"))


def test_a_record_erased_with_the_hop_takes_the_turns_that_restated_it(
        memory: MemoryManager, clock: ManualClock):
    """Reproduction (v23 read "My email is X" as an email and a gym, then forgetting every
    record with X left "As I said, my email is X", which the nightly summary quoted): one
    turn forms two records, a later turn restates one of them; forgetting the other erases
    the first turn and, with it, the record formed from it - and now the turn that
    restated that record too."""
    v = "hop"
    first = memory.observe(v, "s1", "user", "I live in Zqleeds and I work at Zqsiemens.")
    formed = [d.record_id for d in first.decisions if d.outcome == "written"]
    assert len(formed) == 2, first
    clock.advance(minutes=1)
    again = memory.observe(v, "s1", "user", "As I said, I live in Zqleeds.")
    assert [d.outcome for d in again.decisions] == ["reinforced"], again
    employer = [r.id for r in memory.memories(v, limit=10)
                if r.slot is not None and r.slot.attribute == "employer"]
    memory.forget(v, employer[0])
    assert memory.memories(v, limit=10) == []
    assert scan_database(memory, ("Zqleeds", "Zqsiemens")) == {}
