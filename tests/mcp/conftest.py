"""The MCP server as a client sees it: the SDK's real client, the real ``memstrata mcp``
command in a subprocess (stdio, or streamable HTTP on a free port of 127.0.0.1), a real
SQLite file and the real embedding model (loaded once per server process)."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from mcp_harness import MEMSTRATA, HttpServer, free_port, server_env

from memstrata.mcp.tokens import add_token


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """``memstrata mcp --transport http`` with tokens for alice and bob."""
    base = tmp_path_factory.mktemp("mcp-http")
    tokens = base / "tokens.json"
    alice = add_token(tokens, "alice", label="alice-laptop")
    bob = add_token(tokens, "bob")
    db_url = f"sqlite:///{base / 'memory.db'}"
    port = free_port()
    log = base / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [MEMSTRATA, "mcp", "--transport", "http", "--host", "127.0.0.1",
             "--port", str(port), "--tokens", str(tokens), "--url", db_url],
            stdout=out, stderr=subprocess.STDOUT, env=server_env(base / "home"))
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                pytest.fail(f"the server exited: {log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the server did not listen: {log.read_text()}")
                time.sleep(0.2)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", db_url, tokens, alice, bob, log,
                         process)
    finally:
        process.send_signal(signal.SIGTERM)  # how a service manager stops it
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    # a clean stop: the server closed the memory (index files saved), nothing crashed
    assert process.returncode == 0, log.read_text()
    assert "Traceback" not in log.read_text()
    assert any((base / "memory.db.index").rglob("*.*")), "no index file was saved"
