"""The erasure registry covers every table that can hold a user's data."""

from __future__ import annotations

from sqlalchemy import inspect

from memstrata.erasure import Forgotten, contains, load_erasers, scrub, scrubbable
from memstrata.memory import Database


def test_every_table_with_a_user_column_is_claimed_by_an_eraser(db_url: str):
    db = Database(db_url)
    db.migrate()
    inspector = inspect(db.engine)
    with_users = {
        name for name in inspector.get_table_names()
        if any(c["name"] in ("user_id", "only_user") for c in inspector.get_columns(name))
    }
    claimed = {t for eraser in load_erasers() for t in eraser.tables}
    db.dispose()
    assert with_users, "the reflection found no user tables: the test is wrong"
    assert with_users - claimed == set(), "tables no eraser erases"
    assert claimed - with_users == set(), "erasers claim tables that do not exist"


def test_the_builtin_erasers_are_registered_by_entry_point():
    names = {type(e).__module__ for e in load_erasers()}
    assert names == {"memstrata.memory._erase", "memstrata.consolidation.erasure",
                     "memstrata.llm._erasure"}


def test_scrub_replaces_every_quoted_text_in_text_and_json():
    texts = scrubbable(["my code is 4711", "x", "  my code is 4711 "])
    assert texts == ("my code is 4711",)  # unique, stripped, too-short ones dropped
    value = {"a": ["said: my code is 4711!", 3], "my code is 4711": None}
    assert contains(value, texts)
    cleaned = scrub(value, texts)
    assert not contains(cleaned, texts)
    assert cleaned == {"a": ["said: [forgotten]!", 3], "[forgotten]": None}
    assert Forgotten("u", frozenset(), frozenset(), texts).reason == "user request"


def test_forget_user_leaves_no_id_in_runs_and_records_a_keyed_hash(manager):
    from sqlalchemy import select, update

    from memstrata.consolidation import ConsolidationSettings, Consolidator
    from memstrata.consolidation._tables import runs
    from memstrata.erasure import user_tombstone
    from memstrata.memory._erase import tombstone_salt
    from memstrata.memory._schema import memory_events

    for user in ("alice", "bob", "carol"):
        manager.remember(user, f"{user} likes quiet hotels", type="preference")
    jobs = Consolidator(manager, settings=ConsolidationSettings.build(
        schedule={"timezone": "UTC"}))
    only_bob = jobs.run("expire", user_id="bob")
    everyone = jobs.run("expire")
    with manager.db.write() as conn:  # a run interrupted right after bob's batch
        conn.execute(update(runs).where(runs.c.id == everyone.run_id)
                     .values(cursor="bob", status="interrupted", errors=["bob: disk full"]))
    manager.forget_user("bob")
    with manager.db.read() as conn:
        tomb = user_tombstone("bob", tombstone_salt(conn))
        rows = {r.id: r for r in conn.execute(select(runs))}
        events = conn.execute(select(memory_events.c.user_id, memory_events.c.reason).where(
            memory_events.c.action == "user_erased")).all()
    assert rows[only_bob.run_id].only_user == tomb
    assert rows[everyone.run_id].cursor == "alice"  # resuming after alice skips nothing
    assert rows[everyone.run_id].errors == [f"{tomb}: disk full"]
    assert [e.user_id for e in events] == [tomb]
    assert tomb.startswith("erased:") and "bob" not in tomb


def test_undo_after_a_record_of_the_run_was_forgotten_restores_the_rest(manager, clock):
    from memstrata import Status
    from memstrata.consolidation import ConsolidationSettings, Consolidator

    keep = manager.remember("u", "I prefer hotels near the city center.",
                            type="preference").record_id
    clock.advance(days=1)
    para = manager.remember("u", "I like staying in hotels close to the city centre.",
                            type="preference").record_id
    manager.remember("u", "I prefer trains with a quiet coach.", type="preference")
    clock.advance(days=1)
    other = manager.remember("u", "I like travelling by train in the quiet coach.",
                             type="preference").record_id
    jobs = Consolidator(manager, settings=ConsolidationSettings.build(
        schedule={"timezone": "UTC"}))
    run = jobs.run("conflicts")
    assert run.counts.get("merge") == 2
    assert keep and para and other
    manager.forget("u", para, history=False)  # one merged duplicate, forgotten
    undone = jobs.undo(run.run_id or "")
    assert undone.status == "finished"
    assert any("forgotten since" in e for e in undone.errors)
    assert manager.get("u", other).status is Status.ACTIVE  # the other merge was undone
