"""MCP server latency -> benchmarks/results/mcp.json.

The real ``memstrata mcp`` command in a subprocess, driven by the official SDK's client,
over stdio and over streamable HTTP on 127.0.0.1 (bearer token), on a fresh SQLite file:

1. start: wall time from spawning the server to the first tool result (the server loads
   the embedding model and opens the indexes before it answers);
2. per call: ``remember`` (distinct sentences) and ``recall`` (varied queries) p50/p95,
   end to end through the protocol;
3. the same calls on a ``MemoryManager`` in this process (the same data and model), so
   the difference is what MCP adds (JSON-RPC, transport, validation, a worker thread).

Run: ``flock /tmp/memstrata-bench.lock python benchmarks/bench_mcp.py``
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import anyio
import httpx2
from _common import machine, percentiles
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memstrata import MemoryManager
from memstrata.mcp.tokens import add_token

OUT = Path(__file__).parent / "results" / "mcp.json"
MEMSTRATA = str(Path(sys.executable).with_name("memstrata"))
WRITES = 40
RECALLS = 80
TOPICS = ["window seats", "vegetarian food", "quiet hotels", "morning flights", "green tea",
          "jazz concerts", "the Berlin office", "cycling to work", "Italian novels", "night trains"]


def sentences() -> list[str]:
    return [f"Likes {TOPICS[i % len(TOPICS)]} ({i // len(TOPICS) + 1}), noted on trip {i}"
            for i in range(WRITES)]


def queries() -> list[str]:
    return [f"what about {TOPICS[i % len(TOPICS)]}?" for i in range(RECALLS)]


async def drive(client: Client) -> dict[str, Any]:
    writes, recalls = [], []
    for text in sentences():
        t = time.perf_counter()
        r = await client.call_tool("remember", {"content": text, "type": "preference"})
        writes.append(time.perf_counter() - t)
        assert not r.is_error, r.content
    hits = 0
    for q in queries():
        t = time.perf_counter()
        r = await client.call_tool("recall", {"query": q})
        recalls.append(time.perf_counter() - t)
        assert not r.is_error and r.structured_content is not None
        hits += len(r.structured_content["hits"])
    return {"remember": percentiles(writes), "recall": percentiles(recalls),
            "recall_hits_mean": round(hits / RECALLS, 2)}


async def first_answer(client: Client, spawned: float) -> float:
    r = await client.call_tool("recall", {"query": "anything"})
    assert not r.is_error
    return time.perf_counter() - spawned


def env(home: Path) -> dict[str, str]:
    return {"MEMSTRATA_HOME": str(home), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def over_stdio(base: Path) -> dict[str, Any]:
    db = f"sqlite:///{base / 'stdio.db'}"
    params = StdioServerParameters(command=MEMSTRATA, args=["mcp", "--url", db, "--user", "alice"],
                                   env=env(base / "home"))

    async def run() -> dict[str, Any]:
        spawned = time.perf_counter()
        async with Client(params) as client:
            start = await first_answer(client, spawned)
            return {"start_to_first_result_s": round(start, 3), **await drive(client)}

    return anyio.run(run)


def over_http(base: Path) -> dict[str, Any]:
    tokens = base / "tokens.json"
    token = add_token(tokens, "alice")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    spawned = time.perf_counter()
    proc = subprocess.Popen(
        [MEMSTRATA, "mcp", "--transport", "http", "--port", str(port), "--tokens", str(tokens),
         "--url", f"sqlite:///{base / 'http.db'}"], env={**os.environ, **env(base / "home")})
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("the server exited") from None
                time.sleep(0.05)

        async def run() -> dict[str, Any]:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                          timeout=httpx2.Timeout(60, read=300)) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                start = await first_answer(client, spawned)
                return {"start_to_first_result_s": round(start, 3), **await drive(client)}

        return anyio.run(run)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def in_process(base: Path) -> dict[str, Any]:
    with MemoryManager.open(f"sqlite:///{base / 'direct.db'}") as memory:
        memory.recall("alice", "warm up")
        writes, recalls = [], []
        for text in sentences():
            t = time.perf_counter()
            memory.remember("alice", text, type="preference")
            writes.append(time.perf_counter() - t)
        for q in queries():
            t = time.perf_counter()
            memory.recall("alice", q)
            recalls.append(time.perf_counter() - t)
    return {"remember": percentiles(writes), "recall": percentiles(recalls)}


def main() -> None:
    load = os.getloadavg()
    results: dict[str, Any] = {}
    runs: list[tuple[str, Callable[[Path], dict[str, Any]]]] = [
        ("stdio", over_stdio), ("http", over_http), ("in_process", in_process)]
    for name, fn in runs:
        with tempfile.TemporaryDirectory(prefix=f"bench-mcp-{name}-") as tmp:
            results[name] = fn(Path(tmp))
            print(name, json.dumps(results[name]), flush=True)
    overhead = {
        transport: {
            call: round(results[transport][call]["p50_ms"] - results["in_process"][call]["p50_ms"],
                        3)
            for call in ("remember", "recall")}
        for transport in ("stdio", "http")}
    OUT.write_text(json.dumps({
        "benchmark": "mcp",
        "machine": machine(),
        "load_average_at_start": [round(x, 2) for x in load],
        "what": ("`memstrata mcp` in a subprocess driven by the official SDK client over stdio "
                 "and streamable HTTP (bearer token) on a fresh SQLite file: spawn to first tool "
                 f"result; {WRITES} remember and {RECALLS} recall calls end to end; the same "
                 "calls on an in-process MemoryManager"),
        "results": results,
        "mcp_overhead_p50_ms": overhead,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
