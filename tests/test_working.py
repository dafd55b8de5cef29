"""Working memory: per session, TTL + LRU, promotion only through the write policy."""

from __future__ import annotations

import pytest

from memstrata import ManualClock, MemoryManager
from memstrata.errors import InvalidInputError, MissingUserError


def test_entries_expire_after_the_ttl(sqlite_manager: MemoryManager, clock: ManualClock):
    wm = sqlite_manager.working("alice", "s1")
    wm.set("budget", 2000)
    wm.add_turn("user", "my budget is 2000")
    clock.advance(seconds=sqlite_manager.settings.working_ttl_seconds - 1)
    assert wm.get("budget") == 2000 and len(wm.turns()) == 1
    clock.advance(seconds=2)
    assert wm.get("budget") is None and "budget" not in wm and len(wm) == 0
    assert wm.turns() == []


def test_lru_bound_drops_least_recently_used(embedder, clock: ManualClock, sqlite_url: str):
    with MemoryManager.open(sqlite_url, embedder=embedder, clock=clock,
                            working_max_entries=3) as mm:
        wm = mm.working("u", "s")
        for key in "abc":
            wm.set(key, key)
        wm.get("a")  # a is now recently used
        wm.set("d", "d")
        assert {k for k, _ in wm.items()} == {"a", "c", "d"} and "b" not in wm
        assert wm.key_space == "session:s:working"


def test_sessions_are_per_user(sqlite_manager: MemoryManager):
    sqlite_manager.working("alice", "shared-id").set("secret", "alice's")
    assert sqlite_manager.working("bob", "shared-id").get("secret") is None
    with pytest.raises(MissingUserError):
        sqlite_manager.working("", "s")
    with pytest.raises(InvalidInputError):
        sqlite_manager.working("alice", " ")


def test_promote_goes_through_the_write_policy(sqlite_manager: MemoryManager):
    wm = sqlite_manager.working("alice", "s1")
    wm.set("seat", "From now on I want aisle seats on every flight")
    wm.set("mood", "This hotel is awful")
    wm.set("budget", 2000)
    kept = wm.promote("seat", type="preference", scope="travel")
    assert kept.outcome == "written"
    record = sqlite_manager.get("alice", kept.record_id)
    assert record.session_id == "s1" and record.scope == "travel"
    assert wm.promote("mood").outcome == "dropped_not_memorable"
    budget = wm.promote("budget", type="preference", ephemeral=True)
    assert budget.outcome == "dropped_not_memorable"
    with pytest.raises(KeyError):
        wm.promote("missing")
    # nothing reaches long-term memory without promotion
    assert len(sqlite_manager.memories("alice")) == 1
