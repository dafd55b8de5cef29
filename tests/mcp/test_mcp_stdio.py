"""``memstrata mcp --user alice`` over stdio, the desktop case: the SDK's client spawns the
server the way Claude Desktop or Cursor would, and every tool and resource is used."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client
from mcp_harness import MEMSTRATA, error_text, payload

from memstrata import MemoryManager


def params(command: list[str], home: Path) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:],
                                 env={"MEMSTRATA_HOME": str(home), "HF_HUB_OFFLINE": "1",
                                      "TOKENIZERS_PARALLELISM": "false"})


async def read_json(client: Client, uri: str) -> dict[str, Any]:
    return json.loads((await client.read_resource(uri)).contents[0].text)  # type: ignore


def test_a_desktop_session_over_stdio(tmp_path: Path):
    db_url = f"sqlite:///{tmp_path / 'memory.db'}"
    home = tmp_path / "home"
    errlog = tmp_path / "stderr.log"
    ids: dict[str, str] = {}

    def counts() -> dict[str, int]:
        with MemoryManager.open(db_url) as memory:
            return memory.stats("alice")["by_status"]  # type: ignore[no-any-return]

    async def first_session() -> None:
        command = [MEMSTRATA, "mcp", "--url", db_url, "--user", "alice"]
        with errlog.open("w") as err:
            async with Client(stdio_client(params(command, home), errlog=err)) as client:
                info = client.server_info
                assert info is not None and info.name == "memstrata" and info.version
                assert "briefing" in (client.instructions or "")

                # a write: the decision, its reason and the id; a repeat reinforces it
                w = payload(await client.call_tool("remember", {
                    "content": "Prefers aisle seats on long flights", "type": "preference",
                    "scope": "travel"}))
                assert w["outcome"] == "written" and "memorable" in w["reason"]
                ids["seat"] = w["id"]
                again = payload(await client.call_tool("remember", {
                    "content": "Prefers aisle seats on long flights", "type": "preference",
                    "scope": "travel"}))
                assert again["outcome"] == "reinforced" and again["id"] == w["id"]

                # recall: ids, scores, dates
                hits = payload(await client.call_tool("recall", {
                    "query": "which seat on a flight?", "scope": "travel"}))["hits"]
                assert hits[0]["id"] == ids["seat"] and 0 < hits[0]["score"] <= 1
                assert hits[0]["created_at"].endswith("Z") and hits[0]["status"] == "active"
                assert payload(await client.call_tool("recall", {
                    "query": "favourite opera composer", "scope": "work"})) == {
                    "hits": [], "note": "nothing relevant is remembered; try other words, or "
                                        "no scope or type filter"}

                # an explicit correction supersedes, with history
                old = payload(await client.call_tool("remember", {
                    "content": "Works at Acme", "type": "profile",
                    "slot": {"subject": "user", "attribute": "employer", "value": "Acme"}}))
                new = payload(await client.call_tool("remember", {
                    "content": "Works at Globex", "type": "profile", "correction": True,
                    "slot": {"subject": "user", "attribute": "employer", "value": "Globex"}}))
                assert new["outcome"] == "corrected" and new["related_ids"] == [old["id"]]
                ids["employer"] = new["id"]
                versions = payload(await client.call_tool(
                    "history", {"memory_id": new["id"]}))["versions"]
                assert [v["id"] for v in versions] == [old["id"], new["id"]]
                assert versions[0]["status"] == "superseded"
                assert versions[0]["superseded_by"] == new["id"] and versions[0]["valid_to"]

                # a contradiction opens a conflict; the user settles it
                first = payload(await client.call_tool("observe", {
                    "text": "I live in Berlin", "session_id": "chat-1"}))
                assert first["decisions"][0]["outcome"] == "written"
                assert first["decisions"][0]["rule"] and first["decisions"][0]["type"] == "profile"
                second = payload(await client.call_tool("observe", {
                    "text": "I live in Munich", "session_id": "chat-1"}))
                d = second["decisions"][0]
                assert d["outcome"] == "conflict" and d["related_ids"] == [
                    first["decisions"][0]["id"]]
                chit = payload(await client.call_tool("observe", {
                    "text": "ok thanks", "session_id": "chat-1"}))
                assert chit["decisions"] == [] and "stored" in chit["note"]
                groups = payload(await client.call_tool("conflicts", {}))["conflicts"]
                assert len(groups) == 1 and {r["id"] for r in groups[0]["records"]} == {
                    d["id"], first["decisions"][0]["id"]}
                asks = (await read_json(client, "memstrata://confirmations"))["confirmations"]
                assert asks and "Berlin" in asks[0]["question"] and "Munich" in asks[0]["question"]
                brief = payload(await client.call_tool("briefing", {"goal": "plan a trip"}))
                assert brief["confirmations"][0]["question"] == asks[0]["question"]
                settled = payload(await client.call_tool("resolve_conflict", {"keep": d["id"]}))
                assert settled["kept"]["status"] == "active"
                assert settled["superseded"] == [first["decisions"][0]["id"]]
                assert payload(await client.call_tool("conflicts", {}))["conflicts"] == []
                assert "NotInConflictError" in error_text(
                    await client.call_tool("resolve_conflict", {"keep": d["id"]}))
                profile = (await read_json(client, "memstrata://profile"))["profile"]
                assert {p["content"] for p in profile} >= {"I live in Munich", "Works at Globex"}

                # bad input: a tool error, nothing changed
                before = counts()
                assert "EmptyContentError" in error_text(
                    await client.call_tool("remember", {"content": ""}))
                assert "UnknownScopeError" in error_text(
                    await client.call_tool("observe", {"text": "I like tea", "scope": "A B"}))
                # a query or goal over the cap is refused by the tool's schema, before any
                # work (a 500,000-character query held a worker for seconds; issue 34)
                for tool_name, args in (("recall", {"query": "x" * 500_000}),
                                        ("briefing", {"goal": "x" * 10_001})):
                    assert "at most 10000 characters" in error_text(
                        await client.call_tool(tool_name, args))
                assert counts() == before

                # forget: unrecallable at once
                gone = payload(await client.call_tool("forget", {"memory_id": ids["seat"]}))
                assert gone["forgotten"] == [ids["seat"]]
                hits = payload(await client.call_tool("recall", {"query": "aisle seats"}))
                assert ids["seat"] not in [h["id"] for h in hits["hits"]]

    async def second_session() -> None:
        # a new process (python -m memstrata.mcp): what was written is there, the forgotten
        # memory is not
        command = [sys.executable, "-m", "memstrata.mcp", "--url", db_url, "--user", "alice"]
        with errlog.open("a") as err:
            async with Client(stdio_client(params(command, home), errlog=err)) as client:
                hits = payload(await client.call_tool("recall", {"query": "employer"}))["hits"]
                assert hits[0]["id"] == ids["employer"]
                seats = payload(await client.call_tool("recall", {"query": "aisle seats"}))
                assert "aisle" not in json.dumps(seats)

    anyio.run(first_session)
    anyio.run(second_session)
    assert errlog.read_text() == ""  # nothing but the protocol, nothing on stderr
