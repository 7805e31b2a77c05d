"""Requests per second per API key: a token bucket per key, refilled continuously.

A key may send ``burst`` requests at once, then ``rate`` per second on average; a request
over that gets a 429 with ``Retry-After`` (whole seconds, at least 1) and costs nothing. The
buckets live in the process: with ``remem serve --workers N`` each worker holds a key to
the rate, so N workers allow N times it. The limiter is pure logic over a clock, so tests
drive it with a fake one (tests/adversarial/test_ratelimit.py) and benchmarks/ratelimit.py
measures it against a real server.

Failed authentications are limited the same way, per client address rather than per key
(:func:`auth_failure_limiter`): an address that sent :data:`AUTH_FAILURE_BURST` unknown,
revoked or malformed keys may try again at :data:`AUTH_FAILURE_RATE` per second; until then
its authentications get a 429 with ``Retry-After`` without the key being looked up, so
guessing keys, or flooding the store with look-ups of unknown ones, is slowed to that rate.
Behind a reverse proxy every client has the proxy's address unless the server is told to
trust its ``X-Forwarded-For`` (``uvicorn --forwarded-allow-ips``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["AUTH_FAILURE_BURST", "AUTH_FAILURE_RATE", "RateLimiter", "TokenBucket",
           "auth_failure_limiter"]

#: failed authentications one client address may make at once (a person retyping a key a
#: few times is never stopped)
AUTH_FAILURE_BURST = 10.0
#: failed authentications per second an address may make after its burst (ten a minute)
AUTH_FAILURE_RATE = 10 / 60


@dataclass(slots=True)
class TokenBucket:
    """``tokens`` left of ``burst``, as of ``updated`` (a clock reading)."""

    rate: float
    burst: float
    tokens: float
    updated: float

    def take(self, now: float) -> float:
        """Spend a token at ``now``: ``0.0`` if there was one, else the seconds until there
        will be (nothing is spent then)."""
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1.0 - 1e-9:  # a whole token, give or take clock arithmetic
            self.tokens = max(0.0, self.tokens - 1.0)
            return 0.0
        return (1.0 - self.tokens) / self.rate

    def wait(self, now: float) -> float:
        """Seconds from ``now`` until a token will be there (``0.0``: there is one); spends
        nothing and changes nothing."""
        tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        return 0.0 if tokens >= 1.0 - 1e-9 else (1.0 - tokens) / self.rate


class RateLimiter:
    """One :class:`TokenBucket` per key: ``rate`` requests per second, ``burst`` at once
    (default: one second's worth, at least 1).

    ``clock``: seconds, monotonic (tests pass a fake). ``max_keys``: buckets kept; past it,
    the full ones (keys idle long enough to have refilled) are dropped, which forgets nothing
    a bucket would have enforced."""

    def __init__(self, rate: float, burst: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000) -> None:
        if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
            raise ValueError(f"rate must be a positive number of requests per second, got "
                             f"{rate!r}")
        self.rate = float(rate)
        self.burst = float(burst) if burst is not None else max(1.0, self.rate)
        if not (math.isfinite(self.burst) and self.burst >= 1):
            raise ValueError(f"burst must be a number >= 1, got {burst!r}")
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> float:
        """Count a request of ``key``: ``0.0`` if allowed, else the seconds to wait."""
        with self._lock:
            now = self.clock()
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= self.max_keys:
                    self._evict(now)
                bucket = self._buckets[key] = TokenBucket(self.rate, self.burst, self.burst,
                                                          now)
            return bucket.take(now)

    def wait(self, key: str) -> float:
        """Seconds until ``key`` may make a request (``0.0``: now), counting nothing: for a
        limit on failures, checked before an attempt and counted (:meth:`check`) only when
        it fails."""
        with self._lock:
            bucket = self._buckets.get(key)
            return 0.0 if bucket is None else bucket.wait(self.clock())

    def _evict(self, now: float) -> None:
        full = self.burst / self.rate
        self._buckets = {k: b for k, b in self._buckets.items() if now - b.updated < full}

    @staticmethod
    def retry_after(wait: float) -> str:
        """``wait`` seconds as a ``Retry-After`` value: whole seconds, at least 1."""
        return str(max(1, math.ceil(wait)))


def auth_failure_limiter(clock: Callable[[], float] = time.monotonic) -> RateLimiter:
    """The limiter of failed authentications per client address
    (:data:`AUTH_FAILURE_BURST` at once, then :data:`AUTH_FAILURE_RATE` per second)."""
    return RateLimiter(AUTH_FAILURE_RATE, AUTH_FAILURE_BURST, clock=clock)
