"""Client-side rate limits: requests per minute, tokens per minute, and pauses.

One :class:`RateLimiter` is shared by every thread that calls through one
:class:`~memstrata.llm.OpenAIClient`, so N concurrent calls together stay under
the provider's limits. Each limit is a token bucket refilled continuously at
``limit / 60`` per second that holds at most one second's worth (so a burst is
small and any window of ``w`` seconds sees at most ``limit * (w + 1) / 60``).
A request takes one unit of the request bucket and its *estimated* tokens from
the token bucket before it is sent; when the answer says how many tokens it
really used, :meth:`RateLimiter.settle` gives back the difference (or takes the
excess). A request larger than the token bucket waits until the bucket is full
and then drives it negative, so it neither starves nor breaks the average.

A ``429`` with ``Retry-After`` pauses *every* caller of the limiter until that
moment (:meth:`RateLimiter.pause`), not only the call that received it: the
other in-flight calls would otherwise run into the same wall.

Why not a library: ``aiolimiter`` is asyncio-only and the calls run on threads;
neither it nor ``pyrate-limiter`` can give back the unused part of an estimate
after the call, which a tokens-per-minute limit needs (the cost is known only
from the answer), nor pause all callers on a server's ``Retry-After``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstrata.errors import InvalidSettingError

__all__ = ["RateLimit", "RateLimiter", "token_upper_bound"]


@dataclass(frozen=True, slots=True)
class RateLimit:
    """Requests and tokens per minute one client may send; ``None`` = no limit."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise InvalidSettingError(f"RateLimit.{name} must be positive or None")


class _Bucket:
    """Refills at ``rate`` units/s up to ``capacity``; may go negative (debt)."""

    __slots__ = ("capacity", "level", "rate", "stamp")

    def __init__(self, per_minute: float, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` (at most the capacity) is available."""
        need = min(amount, self.capacity) - self.level
        return 0.0 if need <= 0 else need / self.rate


class RateLimiter:
    """Thread-safe request/token buckets plus a shared pause (see the module docstring)."""

    def __init__(self, limit: RateLimit | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit or RateLimit()
        self._clock = clock
        now = clock()
        self._cond = threading.Condition()
        self._requests = (None if self.limit.requests_per_minute is None
                          else _Bucket(self.limit.requests_per_minute, now))
        self._tokens = (None if self.limit.tokens_per_minute is None
                        else _Bucket(self.limit.tokens_per_minute, now))
        self._paused_until = 0.0
        #: seconds callers spent waiting here (for reports)
        self.waited = 0.0
        #: called with the limiter clock's time of each grant, under the limiter's lock and
        #: in the calling thread (for reports and checks of the limits as they were kept:
        #: arrival times at a server also carry the wire's and the scheduler's delays)
        self.on_grant: Callable[[float], None] | None = None

    def acquire(self, tokens: int) -> None:
        """Block until one request of ``tokens`` estimated tokens may be sent, and take it."""
        started = self._clock()
        with self._cond:
            while True:
                now = self._clock()
                wait = self._paused_until - now
                for bucket, amount in ((self._requests, 1.0), (self._tokens, float(tokens))):
                    if bucket is not None:
                        bucket.refill(now)
                        wait = max(wait, bucket.wait_for(amount))
                if wait <= 0:
                    if self._requests is not None:
                        self._requests.level -= 1.0
                    if self._tokens is not None:
                        self._tokens.level -= float(tokens)
                    if self.on_grant is not None:
                        self.on_grant(now)
                    break
                self._cond.wait(wait)
            self.waited += self._clock() - started

    def settle(self, estimated: int, actual: int) -> None:
        """A request's real token cost is known: correct the token bucket by the difference."""
        if self._tokens is None or estimated == actual:
            return
        with self._cond:
            self._tokens.refill(self._clock())
            self._tokens.level = min(self._tokens.capacity,
                                     self._tokens.level + float(estimated - actual))
            self._cond.notify_all()

    def pause(self, seconds: float) -> None:
        """No caller may send anything for ``seconds`` from now (a server's ``Retry-After``)."""
        with self._cond:
            self._paused_until = max(self._paused_until, self._clock() + seconds)

    def paused_for(self) -> float:
        """Seconds left of the current pause (0 when none)."""
        with self._cond:
            return max(0.0, self._paused_until - self._clock())


#: chat-format tokens a message costs beyond its text (role markers), generously
_PER_MESSAGE = 8


def token_upper_bound(messages: Sequence[Mapping[str, Any]], max_tokens: int | None) -> int:
    """At least the tokens a call can cost: prompt UTF-8 bytes + per-message framing +
    the completion allowance.

    A byte-level BPE tokenizer (OpenAI's, Qwen's, DeepSeek's, Llama's) never
    makes more tokens than bytes, so this bounds what the endpoint will count;
    it overestimates English prose about four times, which only matters while
    the call is in flight (the real usage replaces it when the answer comes).
    """
    size = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            size += len(content.encode("utf-8"))
        elif content is not None:
            size += len(json.dumps(content, default=str).encode("utf-8"))
        calls = m.get("tool_calls")
        if calls:
            size += len(json.dumps(calls, default=str).encode("utf-8"))
        size += _PER_MESSAGE
    return size + _PER_MESSAGE + (max_tokens or 0)
