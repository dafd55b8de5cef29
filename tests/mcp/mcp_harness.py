"""Helpers of the MCP tests: the console script, free ports, the server's environment,
reading tool results, and a client of the HTTP server with a bearer token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

#: the console script of this environment: the command an MCP client configuration names
MEMSTRATA = str(Path(sys.executable).with_name("memstrata"))
TIMEOUT = httpx2.Timeout(60.0, read=300.0)


def server_env(home: Path) -> dict[str, str]:
    env = {**os.environ, "MEMSTRATA_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    env.pop("MEMSTRATA_URL", None)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def payload(result: CallToolResult) -> dict[str, Any]:
    """A successful tool result: its JSON text, which equals its structured content."""
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    data = json.loads(text)
    assert data == result.structured_content
    return data  # type: ignore[no-any-return]


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.content
    assert result.structured_content is None
    return result.content[0].text  # type: ignore[union-attr]


@dataclass
class HttpServer:
    url: str
    db_url: str
    tokens: Path
    alice: str
    bob: str
    log: Path
    process: subprocess.Popen[bytes]

    @asynccontextmanager
    async def client(self, token: str | None) -> AsyncIterator[Client]:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http, \
                Client(streamable_http_client(self.url, http_client=http)) as client:
            yield client
