"""``build_server`` in process, through the SDK's in-memory client (the real protocol layer,
no subprocess): how it is configured, and inputs a JSON client rarely sends."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_harness import error_text, payload

from memstrata import MemoryManager
from memstrata.errors import (
    ContentTooLargeError,
    InvalidInputError,
    InvalidSettingError,
    MemoryNotFoundError,
    NotInConflictError,
    StorageFullError,
)
from memstrata.mcp.server import build_server, describe_error
from memstrata.mcp.tokens import TokenFile, add_token
from memstrata.memory.embedder import Embedder


def test_a_server_serves_exactly_one_kind_of_user(tmp_path: Path, embedder: Embedder):
    path = tmp_path / "tokens.json"
    add_token(path, "alice")
    with MemoryManager.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder) as memory:
        with pytest.raises(InvalidInputError, match="exactly one"):
            build_server(memory)
        with pytest.raises(InvalidInputError, match="exactly one"):
            build_server(memory, user_id="alice", tokens=TokenFile(path))
        with pytest.raises(InvalidInputError):
            build_server(memory, user_id=" ")
        with pytest.raises(InvalidSettingError, match="public_url"):
            build_server(memory, tokens=TokenFile(path), public_url="not a url")
        assert build_server(memory, tokens=TokenFile(path)).name == "memstrata"


def test_odd_values_are_refused_and_change_nothing(tmp_path: Path, embedder: Embedder):
    async def calls(memory: MemoryManager) -> list[str]:
        async with Client(build_server(memory, user_id="alice")) as client:
            ok = payload(await client.call_tool("remember", {"content": "Drinks green tea daily",
                                                             "type": "preference"}))
            assert ok["outcome"] == "written"
            return [error_text(await client.call_tool(tool, args)) for tool, args in (
                ("remember", {"content": "Drinks black tea", "confidence": 1.5}),
                ("remember", {"content": "Drinks black tea", "confidence": -0.1}),
                ("remember", {"content": "Drinks\x00black tea"}),
                ("observe", {"text": "I live in Rome", "session_id": ""}),
                ("recall", {"query": "tea", "types": ["profile", "gossip"]}),
                ("forget", {"memory_id": "\x00"}),
            )]

    with MemoryManager.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder) as memory:
        before = memory.stats("alice")
        texts = anyio.run(calls, memory)
        after = memory.stats("alice")
        assert after["records"] == before["records"] + 1  # only the good write
        assert [h.content for h in memory.recall("alice", "which tea?")] == [
            "Drinks green tea daily"]
    assert "confidence" in texts[0] and "confidence" in texts[1]
    assert texts[2].count("InvalidInputError") == 1 and "NUL" in texts[2]
    assert "session id is empty" in texts[3]
    assert "gossip" in texts[4]
    assert "NUL" in texts[5]


def test_error_texts_name_the_error_and_what_to_do():
    assert describe_error(ContentTooLargeError(10, 5)) == (
        "ContentTooLargeError: content has 10 characters; the limit is 5 (nothing was "
        "changed; fix the argument and call again)")
    assert "recall to find current ids" in describe_error(MemoryNotFoundError("no memory 'x'"))
    assert "call conflicts" in describe_error(NotInConflictError("not in a conflict"))
    assert "try again later" in describe_error(StorageFullError("disk full"))
