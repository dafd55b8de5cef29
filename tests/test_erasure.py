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
