"""A real HTTP server on 127.0.0.1 that speaks the OpenAI wire format, for tests.

It is not a mock of the ``openai`` package: the client under test opens a TCP
connection, sends real JSON and parses real responses, so timeouts, status
codes, malformed bodies and retries behave as they would against a live
endpoint. Replies are scripted::

    with OpenAICompatServer() as server:
        server.push(Reply.text("hello"))
        server.push(Reply.tool_calls([("query_order", {"order_id": "A1"})]))
        server.push(Reply.error(503, "overloaded"))
        server.push(Reply.text("late", delay=2.0))
        client = OpenAIClient(model="m", base_url=server.base_url)

With an empty script, ``on_chat`` (a function of the request JSON) answers, if
set; otherwise the server replies 500 so an unplanned call is loud.

For load and concurrency tests the server can hold every chat answer for a
fixed ``delay`` (seconds, on top of a reply's own), and it keeps
:attr:`OpenAICompatServer.chat_log`: one :class:`ChatEvent` per chat request
(arrival and answer times, status, the usage it reported) and
:attr:`~OpenAICompatServer.max_in_flight`, the most chat requests it was
answering at once. :func:`approx_tokens` counts a request's prompt tokens the
way a tokenizer roughly would (4 characters a token), for ``on_chat`` replies
that report realistic usage.
``/v1/embeddings`` is answered by a real :class:`~memstrata.memory.embedder.Embedder`
when one is given.
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ChatEvent", "OpenAICompatServer", "Reply", "approx_tokens"]


@dataclass
class Reply:
    """One scripted response."""

    status: int = 200
    body: dict[str, Any] | None = None
    raw: bytes | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def text(cls, content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5,
             delay: float = 0.0) -> Reply:
        return cls(body=_completion({"role": "assistant", "content": content}, "stop",
                                    prompt_tokens, completion_tokens), delay=delay)

    @classmethod
    def tool_calls(
        cls,
        calls: Sequence[tuple[str, dict[str, Any] | str]],
        *,
        content: str | None = None,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        delay: float = 0.0,
    ) -> Reply:
        """Tool calls as (name, arguments); a ``str`` argument is sent verbatim
        (use it for malformed JSON)."""
        message = {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {
                    "id": f"call_{uuid.uuid4().hex[:8]}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
                for name, args in calls
            ],
        }
        return cls(body=_completion(message, "tool_calls", prompt_tokens, completion_tokens),
                   delay=delay)

    @classmethod
    def error(cls, status: int, message: str = "error", *, delay: float = 0.0,
              retry_after: float | None = None) -> Reply:
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        return cls(status=status, body={"error": {"message": message, "type": "server_error",
                                                  "code": status}},
                   delay=delay, headers=headers)

    @classmethod
    def malformed(cls, raw: bytes = b"{not json", *, status: int = 200) -> Reply:
        return cls(status=status, raw=raw)


def _completion(message: dict[str, Any], finish: str, prompt: int, completion: int
                ) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }


def approx_tokens(request: dict[str, Any]) -> int:
    """Prompt tokens of a chat request as a tokenizer would roughly count them:
    4 characters a token, plus 4 per message."""
    total = 0
    for m in request.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        total += 4 + (math.ceil(len(content) / 4) if isinstance(content, str) else 0)
    return total


@dataclass(frozen=True, slots=True)
class ChatEvent:
    """One chat request as the server saw it (``time.monotonic()`` seconds)."""

    arrived: float
    answered: float
    status: int
    prompt_tokens: int
    completion_tokens: int


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients connect at once in the load tests


class OpenAICompatServer:
    """Threaded HTTP server on a free loopback port; see the module docstring."""

    def __init__(
        self,
        *,
        on_chat: Callable[[dict[str, Any]], Reply] | None = None,
        embedder: Any = None,
        api_key: str | None = None,
        delay: float = 0.0,
    ) -> None:
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.on_chat = on_chat
        self.embedder = embedder
        self.api_key = api_key
        #: seconds every chat answer is held (on top of the reply's own delay)
        self.delay = delay
        #: every request received: (path, JSON body or None)
        self.requests: list[tuple[str, Any]] = []
        #: every chat request with its timing, status and reported usage
        self.chat_log: list[ChatEvent] = []
        #: chat requests being answered now, and the most at once so far
        self.in_flight = 0
        self.max_in_flight = 0
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def chat_requests(self) -> list[dict[str, Any]]:
        return [body for path, body in self.requests if path.endswith("/chat/completions")]

    def start(self) -> OpenAICompatServer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="openai-compat-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OpenAICompatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_chat_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.on_chat is not None:
            return self.on_chat(request)
        return Reply.error(500, "no scripted reply left for this request")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two writes: with Nagle on, the body waits for
            # the client's delayed ACK of the headers (40 ms on Linux) - a cost no
            # real model server adds
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, reply: Reply,
                      before_write: Callable[[], None] | None = None) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if before_write is not None:
                    # logged before the client can read the answer, so a test that
                    # checks the log right after its call returns sees this request
                    before_write()
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client gave up (a timeout test)

            def _chat(self, body: dict[str, Any]) -> None:
                arrived = time.monotonic()
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                reply = Reply.error(500, "on_chat failed")
                logged = False

                def log() -> None:
                    nonlocal logged
                    if logged:
                        return
                    logged = True
                    ok = reply.status == 200 and isinstance(reply.body, dict)
                    usage = (reply.body or {}).get("usage") or {} if ok else {}
                    event = ChatEvent(arrived, time.monotonic(), reply.status,
                                      int(usage.get("prompt_tokens", 0)),
                                      int(usage.get("completion_tokens", 0)))
                    with server._lock:
                        server.in_flight -= 1
                        server.chat_log.append(event)

                try:
                    reply = server._next_chat_reply(body)
                    if server.delay:
                        time.sleep(server.delay)
                    self._send(reply, before_write=log)
                finally:
                    log()

            def do_GET(self) -> None:
                server.requests.append((self.path, None))
                if self.path.rstrip("/").endswith("/models"):
                    self._send(Reply(body={"object": "list", "data": [
                        {"id": "scripted", "object": "model", "owned_by": "memstrata"}]}))
                else:
                    self._send(Reply.error(404, "not found"))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = None
                server.requests.append((self.path, body))
                if server.api_key is not None and self.headers.get(
                    "authorization"
                ) != f"Bearer {server.api_key}":
                    self._send(Reply.error(401, "invalid api key"))
                    return
                if body is None:
                    self._send(Reply.error(400, "request body is not JSON"))
                elif self.path.rstrip("/").endswith("/chat/completions"):
                    self._chat(body)
                elif self.path.rstrip("/").endswith("/embeddings"):
                    self._send(server._embeddings(body))
                else:
                    self._send(Reply.error(404, f"unknown path {self.path}"))

        return Handler

    def _embeddings(self, body: dict[str, Any]) -> Reply:
        if self.embedder is None:
            return Reply.error(404, "this server has no embedding model")
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return Reply.error(400, "input must be a string or a list of strings")
        vectors = self.embedder.embed(texts)
        return Reply(body={
            "object": "list",
            "model": body.get("model", "embedder"),
            "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                     for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": sum(len(t.split()) for t in texts),
                      "total_tokens": sum(len(t.split()) for t in texts)},
        })
