"""``memstrata mcp --transport http``: a shared server; each request acts for the user of
its bearer token, and no request can reach another user's memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError
from mcp_harness import HttpServer, error_text, payload

from memstrata import MemoryManager
from memstrata.mcp.tokens import add_token, token_digest

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "1"}}}
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


def stats(server: HttpServer, user: str) -> dict[str, Any]:
    """Record counts read straight from the server's SQLite file (no model)."""
    with MemoryManager.open(server.db_url) as memory:
        return memory.stats(user)["by_status"]  # type: ignore[no-any-return]


def test_a_request_without_a_valid_token_is_refused(http_server: HttpServer):
    before = stats(http_server, "alice")
    with httpx2.Client(timeout=30) as http:
        for headers in ({}, {"Authorization": "Bearer not-a-token"},
                        {"Authorization": f"Bearer {http_server.alice}x"},
                        {"Authorization": f"Basic {http_server.alice}"},
                        # the file holds digests: the digest itself is no token
                        {"Authorization": f"Bearer {token_digest(http_server.alice)}"}):
            r = http.post(http_server.url, json=INITIALIZE, headers={**ACCEPT, **headers})
            assert r.status_code == 401, (headers, r.text)
            assert r.json()["error"] == "invalid_token"
        ok = http.post(http_server.url, json=INITIALIZE,
                       headers={**ACCEPT, "Authorization": f"Bearer {http_server.alice}"})
        assert ok.status_code == 200

    async def with_sdk_client(token: str | None) -> None:
        async with http_server.client(token) as client:
            await client.call_tool("remember", {"content": "I should never be stored"})

    for token in (None, "wrong"):
        # the SDK's client reports the refused initialize as an MCPError (in task groups)
        with pytest.raises(BaseException) as refused:
            anyio.run(with_sdk_client, token)
        assert any(isinstance(e, MCPError) for e in leaves(refused.value)), refused.value
    assert stats(http_server, "alice") == before


def test_a_second_user_sees_nothing_of_the_first(http_server: HttpServer):
    async def scenario() -> None:
        async with http_server.client(http_server.alice) as alice:
            written = payload(await alice.call_tool("remember", {
                "content": "My locker code at the gym is 4711", "type": "profile",
                "scope": "health", "pinned": True}))
            assert written["outcome"] == "written" and written["reason"]
            secret_id = written["id"]
            # the conflict is made with slots, whatever a reader reads (observe's own is
            # test_observe_over_http_opens_a_conflict_for_a_bare_new_city below)
            first = payload(await alice.call_tool("remember", {
                "content": "I live in Lisbon", "type": "profile",
                "slot": {"subject": "user", "attribute": "city", "value": "Lisbon"}}))
            second = payload(await alice.call_tool("remember", {
                "content": "I live in Porto", "type": "profile",
                "slot": {"subject": "user", "attribute": "city", "value": "Porto"}}))
            assert second["outcome"] == "conflict"
            conflict_ids = {first["id"], second["id"]}
            hits = payload(await alice.call_tool("recall", {"query": "locker code gym"}))["hits"]
            assert [h["id"] for h in hits][:1] == [secret_id]

        async with http_server.client(http_server.bob) as bob:
            mine = payload(await bob.call_tool("remember", {
                "content": "Bob's bike is a red Gazelle", "type": "knowledge"}))
            # the same queries, every filter, and an argument naming alice: nothing of hers
            for args in ({"query": "locker code gym"}, {"query": "locker code", "scope": "health"},
                         {"query": "where do I live", "types": ["profile"]},
                         {"query": "locker code gym", "user_id": "alice"},
                         {"query": "Lisbon Porto", "k": 20}):
                found = payload(await bob.call_tool("recall", args))
                assert all(h["id"] != secret_id and h["id"] not in conflict_ids
                           for h in found["hits"]), args
                assert "4711" not in json.dumps(found) and "Lisbon" not in json.dumps(found)
            assert payload(await bob.call_tool("conflicts", {}))["conflicts"] == []
            brief = payload(await bob.call_tool("briefing", {"goal": "open my gym locker"}))
            assert brief["confirmations"] == [] and brief["profile"] == []
            for uri in ("memstrata://profile", "memstrata://confirmations"):
                text = (await bob.read_resource(uri)).contents[0].text  # type: ignore[union-attr]
                assert "4711" not in text and "Lisbon" not in text
            # alice's ids do not open her records to bob, and change nothing
            for tool, args in (("history", {"memory_id": secret_id}),
                               ("forget", {"memory_id": secret_id}),
                               ("resolve_conflict", {"keep": sorted(conflict_ids)[0]})):
                text = error_text(await bob.call_tool(tool, args))
                assert text.count("MemoryNotFoundError") == 1 and "nothing was changed" in text
                assert "4711" not in text
            assert mine["outcome"] == "written"

        async with http_server.client(http_server.alice) as alice:
            hits = payload(await alice.call_tool("recall", {"query": "locker code gym"}))["hits"]
            assert hits and hits[0]["id"] == secret_id  # bob's forget did nothing
            groups = payload(await alice.call_tool("conflicts", {}))["conflicts"]
            assert {r["id"] for g in groups for r in g["records"]} == conflict_ids
            profile = json.loads((await alice.read_resource("memstrata://profile"))
                                 .contents[0].text)  # type: ignore[union-attr]
            assert [r["id"] for r in profile["profile"]] == [secret_id]
            assert profile["profile"][0]["pinned"] is True
            found = payload(await alice.call_tool("recall", {"query": "red Gazelle bike"}))
            assert all(h["id"] != mine["id"] for h in found["hits"])

    anyio.run(scenario)


@pytest.mark.xfail(strict=True, reason=(
    "known misreading of model-1c911b2bf5ff, to be fixed with training data: with Lisbon "
    "held it reads nothing in 'I live in Porto' (the change detector sets the city aside), "
    "so the turn is kept as a statement, 'written', where the test expects a city conflict "
    "to confirm"))
def test_observe_over_http_opens_a_conflict_for_a_bare_new_city(http_server: HttpServer):
    async def scenario() -> None:
        async with http_server.client(http_server.bob) as bob:  # bob holds no city yet
            await bob.call_tool("observe", {"text": "I live in Lisbon"})
            second = payload(await bob.call_tool("observe", {"text": "I live in Porto"}))
            assert second["decisions"][0]["outcome"] == "conflict"

    anyio.run(scenario)


def test_concurrent_users_never_cross(http_server: HttpServer):
    """Both users at once, calls interleaved on one server: each request acts for its own
    token's user (the identity is read per request, not per process or thread)."""
    rounds = 4

    async def user(token: str, name: str, seen: dict[str, list[str]]) -> None:
        async with http_server.client(token) as client:
            for n in range(rounds):
                w = payload(await client.call_tool("remember", {
                    "content": f"{name} keeps parcel {n} at locker {name}-{n}",
                    "scope": "parcels"}))
                assert w["outcome"] == "written", w
                found = payload(await client.call_tool("recall", {
                    "query": "parcel locker", "scope": "parcels", "k": 20}))
                seen[name] += [h["content"] for h in found["hits"]]

    async def both() -> dict[str, list[str]]:
        seen: dict[str, list[str]] = {"alice": [], "bob": []}
        async with anyio.create_task_group() as tg:
            tg.start_soon(user, http_server.alice, "alice", seen)
            tg.start_soon(user, http_server.bob, "bob", seen)
        return seen

    seen = anyio.run(both)
    for name, other in (("alice", "bob"), ("bob", "alice")):
        assert seen[name], name
        assert all(text.startswith(f"{name} keeps") for text in seen[name]), seen[name]
        assert not any(other in text for text in seen[name])


def test_a_session_belongs_to_the_token_that_opened_it(http_server: HttpServer):
    with httpx2.Client(timeout=30) as http:
        opened = http.post(http_server.url, json=INITIALIZE,
                           headers={**ACCEPT, "Authorization": f"Bearer {http_server.alice}"})
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        common = {**ACCEPT, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
        as_bob = http.post(http_server.url, json=listing,
                           headers={**common, "Authorization": f"Bearer {http_server.bob}"})
        assert as_bob.status_code == 404
        as_alice = http.post(http_server.url, json=listing,
                             headers={**common, "Authorization": f"Bearer {http_server.alice}"})
        assert as_alice.status_code == 200 and '"remember"' in as_alice.text


def test_forget_over_http_makes_a_memory_unrecallable(http_server: HttpServer):
    async def scenario() -> None:
        async with http_server.client(http_server.alice) as alice:
            written = payload(await alice.call_tool("remember", {
                "content": "My passport number is X1234567", "type": "profile"}))
            hits = payload(await alice.call_tool("recall", {"query": "passport number"}))
            assert written["id"] in [h["id"] for h in hits["hits"]]
            gone = payload(await alice.call_tool("forget", {"memory_id": written["id"]}))
            assert gone["forgotten"] == [written["id"]]
            hits = payload(await alice.call_tool("recall", {"query": "passport number"}))
            assert "X1234567" not in json.dumps(hits)
            assert "MemoryNotFoundError" in error_text(
                await alice.call_tool("history", {"memory_id": written["id"]}))
            assert "MemoryNotFoundError" in error_text(
                await alice.call_tool("forget", {"memory_id": written["id"]}))

    anyio.run(scenario)
    with MemoryManager.open(http_server.db_url) as memory:  # SQL says so too (no model)
        assert all("X1234567" not in r.content
                   for r in memory.memories("alice", statuses=["active", "deleted",
                                                               "superseded"]))


def test_bad_input_is_a_tool_error_and_changes_nothing(http_server: HttpServer):
    async def scenario() -> list[str]:
        texts = []
        async with http_server.client(http_server.alice) as alice:
            for tool, args in (
                ("remember", {"content": "   "}),
                ("remember", {"content": "x" * 100_000}),
                ("remember", {"content": "Likes tea", "scope": "Not A Scope!"}),
                ("remember", {"content": "Likes tea", "type": "gossip"}),
                ("remember", {"content": "Likes tea", "confidence": 1.5}),
                ("remember", {"content": "Likes tea", "slot": {"subject": "user"}}),
                ("observe", {"text": ""}),
                ("observe", {"text": "I like tea", "role": "system"}),
                ("recall", {"query": ""}),
                ("recall", {"query": "tea", "k": 0}),
                ("recall", {"query": "tea", "scope": "../etc"}),
                ("history", {"memory_id": ""}),
                ("forget", {}),
                ("resolve_conflict", {"keep": "0" * 32}),
                ("briefing", {"goal": "   "}),
            ):
                texts.append(error_text(await alice.call_tool(tool, args)))
        return texts

    before = stats(http_server, "alice")
    texts = anyio.run(scenario)
    assert stats(http_server, "alice") == before
    assert "EmptyContentError" in texts[0] and "nothing was changed" in texts[0]
    assert "ContentTooLargeError" in texts[1]
    assert "UnknownScopeError" in texts[2]
    assert "gossip" in texts[3] and "profile" in texts[3]      # the schema's choices
    assert "confidence" in texts[4]
    assert "attribute" in texts[5]
    assert "MemoryNotFoundError" in texts[13]


def test_a_token_deleted_from_the_file_is_refused_without_a_restart(
        http_server: HttpServer, tmp_path: Path):
    carol = add_token(http_server.tokens, "carol")  # picked up on the next request

    async def remember(token: str) -> dict[str, Any]:
        async with http_server.client(token) as client:
            return payload(await client.call_tool("remember", {"content": "Carol likes jazz",
                                                               "type": "preference"}))

    assert anyio.run(remember, carol)["outcome"] == "written"
    data = json.loads(http_server.tokens.read_text())
    data["tokens"] = [t for t in data["tokens"] if t["user"] != "carol"]
    http_server.tokens.write_text(json.dumps(data))
    with httpx2.Client(timeout=30) as http:
        r = http.post(http_server.url, json=INITIALIZE,
                      headers={**ACCEPT, "Authorization": f"Bearer {carol}"})
        assert r.status_code == 401
        r = http.post(http_server.url, json=INITIALIZE,
                      headers={**ACCEPT, "Authorization": f"Bearer {http_server.bob}"})
        assert r.status_code == 200


def test_the_server_log_has_no_tracebacks(http_server: HttpServer):
    # every refusal above was answered, none crashed a handler
    assert "Traceback" not in http_server.log.read_text()


def test_tools_are_described_and_typed(http_server: HttpServer):
    async def listing() -> Any:
        async with http_server.client(http_server.bob) as client:
            return (await client.list_tools()).tools, (await client.list_resources()).resources

    tools, resources = anyio.run(listing)
    assert sorted(t.name for t in tools) == sorted([
        "remember", "recall", "observe", "forget", "history", "conflicts", "resolve_conflict",
        "briefing"])
    for tool in tools:
        assert tool.description and len(tool.description) > 80, tool.name
        assert tool.output_schema is not None, tool.name
        assert "user_id" not in json.dumps(tool.input_schema), tool.name  # never an argument
        for name, spec in tool.input_schema.get("properties", {}).items():
            assert spec.get("description"), (tool.name, name)
    by_name = {t.name: t for t in tools}
    assert by_name["forget"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert by_name["recall"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert {str(r.uri) for r in resources} == {"memstrata://profile",
                                               "memstrata://confirmations"}


