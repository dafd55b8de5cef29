"""The language-model protocol and the OpenAI-compatible client.

:class:`OpenAIClient` talks to any endpoint that speaks the chat-completions
wire format (OpenAI, Qwen, DeepSeek, vLLM, Ollama, ...) through the ``openai``
package, with connect/read timeouts, bounded exponential backoff on retriable
errors only (connection, timeout, 429, 5xx), native tool calling and token
usage recorded per call. openai's exceptions become :mod:`memstrata.errors`
``LLM*`` errors at this seam.

Error tree raised here (all in :mod:`memstrata.errors`)::

    LLMError
    ├── LLMUnavailableError   connection refused, 5xx (after the retry budget)
    ├── LLMTimeoutError       connect/read timeout (after the retry budget)
    ├── LLMRateLimitError     429 (after the retry budget)
    ├── LLMAuthError          401/403
    ├── LLMResponseError      4xx, malformed or empty response, bad tool-call JSON
    └── UnplannedModelCallError  a call while model requests are switched off

Tests swap the client for :class:`memstrata.testing.ScriptedLLM` or point this
client at :class:`memstrata.testing.OpenAICompatServer` on 127.0.0.1.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

from memstrata.errors import (
    InvalidSettingError,
    LLMAuthError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMTimeoutError,
    LLMUnavailableError,
    UnplannedModelCallError,
)
from memstrata.llm._limits import RateLimit, RateLimiter, token_upper_bound

__all__ = [
    "DEFAULT_RETRY",
    "DEFAULT_TIMEOUTS",
    "CallRecord",
    "ChatResult",
    "LLMClient",
    "Message",
    "OpenAIClient",
    "Retry",
    "Timeouts",
    "ToolCall",
    "Usage",
    "model_requests_allowed",
    "set_model_requests_allowed",
]

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Connect and read timeouts in seconds."""

    connect: float = 10.0
    read: float = 120.0

    def __post_init__(self) -> None:
        if not (self.connect > 0 and self.read > 0):
            raise InvalidSettingError("timeouts must be positive seconds")


@dataclass(frozen=True, slots=True)
class Retry:
    """Bounded exponential backoff: ``base * 2**n`` capped at ``max_delay``, plus jitter."""

    max_attempts: int = 4
    base_delay: float = 2.0
    max_delay: float = 8.0
    jitter: float = 0.1
    #: the longest ``Retry-After`` waited for; a server asking for more gets no retry
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise InvalidSettingError("Retry.max_attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0 or not 0 <= self.jitter <= 1:
            raise InvalidSettingError("Retry delays must be >= 0 and jitter in [0, 1]")
        if self.max_retry_after < 0:
            raise InvalidSettingError("Retry.max_retry_after must be >= 0")

    def delay(self, attempt: int, *, retry_after: float | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1``.

        The backoff is ``base * 2**(n-1)`` capped at ``max_delay``, plus jitter. A
        server's ``Retry-After`` is honoured in full: the wait is never shorter
        than it (retrying earlier only earns another 429). The caller gives up
        instead when it exceeds ``max_retry_after``.
        """
        raw = min(self.max_delay, self.base_delay * (2.0 ** (attempt - 1)))
        backoff = float(min(self.max_delay, raw * (1.0 + self.jitter * random.random())))
        if retry_after is not None and retry_after >= 0:
            return max(backoff, float(retry_after))
        return backoff


DEFAULT_TIMEOUTS = Timeouts()
DEFAULT_RETRY = Retry()


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call requested by the model; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str
    kind: Literal["tool_call"] = "tool_call"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; :class:`LLMResponseError` if not a JSON object."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise LLMResponseError(
                f"tool call {self.name!r} has malformed JSON arguments: {exc}"
            ) from exc
        if not isinstance(value, dict):
            raise LLMResponseError(f"tool call {self.name!r} arguments are not a JSON object")
        return value


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class ChatResult:
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None
    latency_ms: float = 0.0
    #: HTTP attempts this result took (1 = no retry)
    attempts: int = 1
    kind: Literal["chat_result"] = "chat_result"


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One model call, for audit: what was sent, what came back, cost and time."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    result: ChatResult | None
    error: str | None
    attempts: int
    latency_ms: float
    kind: Literal["llm_call"] = "llm_call"


@runtime_checkable
class LLMClient(Protocol):
    """Chat completion with optional native tool calling."""

    @property
    def model(self) -> str: ...

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult: ...


_allowed = threading.Event()
_allowed.set()


def set_model_requests_allowed(allowed: bool) -> None:
    """Tests switch real model calls off; any call then raises UnplannedModelCallError."""
    if allowed:
        _allowed.set()
    else:
        _allowed.clear()


def model_requests_allowed() -> bool:
    return _allowed.is_set()


class OpenAIClient:
    """An OpenAI-compatible chat endpoint via the ``openai`` package.

    Retries only what can succeed later (connection refused, timeouts, 429,
    5xx), at most ``retry.max_attempts`` times with capped exponential backoff;
    4xx, bad credentials and malformed responses fail at once. A server's
    ``Retry-After`` (or ``retry-after-ms``) is waited in full and pauses every
    thread using this client (:class:`~memstrata.llm.RateLimiter`); one asking
    for more than ``retry.max_retry_after`` is not retried. Every attempt
    passes the client-side ``rate_limit`` (requests and tokens per minute).

    openai's own retry loop is switched off, though it also honours
    ``Retry-After``: its retries would bypass the rate limiter (each is a
    request), could not pause the other threads, retry 409s, and cap a long
    ``Retry-After`` at its own backoff instead of giving up; with ours there is
    exactly one budget and ``attempts`` is recorded. Thread-safe (httpx's pool):
    concurrent callers share one client. A context manager: ``close()``
    releases the HTTP connection pool.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retry: Retry = DEFAULT_RETRY,
        on_call: Callable[[CallRecord], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rate_limit: RateLimit | RateLimiter | None = None,
    ) -> None:
        if not model:
            raise InvalidSettingError("an LLM model name is required")
        import openai

        self._model = model
        self.base_url = base_url or "https://api.openai.com/v1"
        self._retry = retry
        self._on_call = on_call
        self._sleep = sleep
        #: shared by every thread calling this client: rate limits and Retry-After pauses
        self.limiter = rate_limit if isinstance(rate_limit, RateLimiter) else \
            RateLimiter(rate_limit)
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=openai.Timeout(timeouts.read, connect=timeouts.connect),
            max_retries=0,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> OpenAIClient:
        """``MEMSTRATA_LLM_BASE_URL``, ``MEMSTRATA_LLM_API_KEY`` (or ``OPENAI_API_KEY``),
        ``MEMSTRATA_LLM_MODEL``."""
        env = os.environ if environ is None else environ
        model = env.get("MEMSTRATA_LLM_MODEL")
        if not model:
            raise InvalidSettingError("set MEMSTRATA_LLM_MODEL (and MEMSTRATA_LLM_BASE_URL)")
        return cls(
            model=model,
            base_url=env.get("MEMSTRATA_LLM_BASE_URL") or None,
            api_key=env.get("MEMSTRATA_LLM_API_KEY") or env.get("OPENAI_API_KEY"),
            **kwargs,
        )

    @property
    def model(self) -> str:
        return self._model

    def close(self) -> None:
        """Release the HTTP connection pool. Idempotent."""
        self._client.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        if not model_requests_allowed():
            raise UnplannedModelCallError(
                "a real model call was attempted while model requests are disabled"
            )
        payload: dict[str, Any] = {"model": self._model, "messages": [dict(m) for m in messages]}
        if tools:
            payload["tools"] = [dict(t) for t in tools]
        if temperature is not None:
            payload["temperature"] = temperature
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        started = time.perf_counter()
        estimate = token_upper_bound(payload["messages"], max_tokens)
        attempt = 0
        while True:
            attempt += 1
            self.limiter.acquire(estimate)
            try:
                response = self._client.chat.completions.create(**payload)
                result = self._parse(response, (time.perf_counter() - started) * 1000)
            except LLMError as exc:
                self._record(payload, None, str(exc), attempt, started)
                raise
            except Exception as exc:
                self.limiter.settle(estimate, 0)  # a refused request spent no tokens
                error = self._translate(exc)
                retry_after = _retry_after(exc)
                if retry_after is not None and isinstance(error, LLMRateLimitError):
                    self.limiter.pause(min(retry_after, self._retry.max_retry_after))
                too_long = retry_after is not None and retry_after > self._retry.max_retry_after
                if error.retriable and attempt < self._retry.max_attempts and not too_long:
                    self._sleep(self._retry.delay(attempt, retry_after=retry_after))
                    continue
                if too_long:
                    error = type(error)(f"{error} (the server asked to retry after "
                                        f"{retry_after:g} s, more than the "
                                        f"{self._retry.max_retry_after:g} s allowed)")
                elif error.retriable and attempt > 1:
                    error = type(error)(f"{error} (gave up after {attempt} attempts)")
                self._record(payload, None, str(error), attempt, started)
                raise error from exc
            self.limiter.settle(estimate, result.usage.total_tokens or estimate)
            if attempt > 1:
                result = replace(result, attempts=attempt)
            self._record(payload, result, None, attempt, started)
            return result

    def _record(
        self, payload: dict[str, Any], result: ChatResult | None, error: str | None,
        attempts: int, started: float,
    ) -> None:
        if self._on_call is not None:
            self._on_call(
                CallRecord(
                    model=self._model,
                    messages=payload["messages"],
                    tools=payload.get("tools"),
                    result=result,
                    error=error,
                    attempts=attempts,
                    latency_ms=(time.perf_counter() - started) * 1000,
                )
            )

    def _translate(self, exc: Exception) -> LLMError:
        o = self._openai
        if isinstance(exc, o.APITimeoutError):
            return LLMTimeoutError(
                f"the model endpoint {self.base_url} did not answer in time: {exc}"
            )
        if isinstance(exc, o.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            return LLMUnavailableError(
                f"cannot reach the model endpoint {self.base_url} ({detail}); is the server "
                "running and is MEMSTRATA_LLM_BASE_URL right?"
            )
        if isinstance(exc, o.RateLimitError):
            return LLMRateLimitError(f"rate limited by the model endpoint: {exc}")
        if isinstance(exc, o.AuthenticationError | o.PermissionDeniedError):
            return LLMAuthError(f"the model endpoint refused the credentials: {exc}")
        if isinstance(exc, o.APIStatusError):
            if exc.status_code >= 500:
                error: LLMError = LLMUnavailableError(
                    f"the model endpoint failed ({exc.status_code}): {exc}"
                )
                return error
            return LLMResponseError(f"the model endpoint rejected the request: {exc}")
        if isinstance(exc, o.APIResponseValidationError | ValueError | KeyError | TypeError):
            return LLMResponseError(f"unexpected response from the model endpoint: {exc}")
        if isinstance(exc, o.OpenAIError):
            return LLMResponseError(f"model endpoint error: {exc}")
        raise exc

    @staticmethod
    def _parse(response: Any, latency_ms: float) -> ChatResult:
        if not getattr(response, "choices", None):
            raise LLMResponseError("the model endpoint returned no choices")
        choice = response.choices[0]
        message = choice.message
        calls = tuple(
            ToolCall(
                id=call.id or f"call_{i}",
                name=call.function.name,
                arguments=call.function.arguments or "{}",
            )
            for i, call in enumerate(message.tool_calls or [])
        )
        usage = getattr(response, "usage", None)
        return ChatResult(
            content=message.content,
            tool_calls=calls,
            usage=Usage(
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
            ),
            model=getattr(response, "model", "") or "",
            finish_reason=choice.finish_reason,
            latency_ms=latency_ms,
        )


def _retry_after(exc: Exception) -> float | None:
    """The seconds an HTTP error response asked us to wait, if it said so:
    ``retry-after-ms`` (OpenAI's), else ``Retry-After`` as seconds or an HTTP date."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())
