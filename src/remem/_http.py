"""HTTP plumbing shared by the clients that call remote providers (embedders, chat models).

One retry flow, written once as a generator (:func:`retry_flow`) and driven by a sync shell
(:func:`send_sync`) and an async one (:func:`send_async`): requests failing with HTTP 429,
5xx, a timeout or a connection error are retried with jittered exponential backoff, or after
what ``Retry-After`` / ``retry-after-ms`` asks (capped). Whatever the flow ends with, a 2xx
response or a :class:`Failure`, the caller turns into its own typed error.

It also holds the test-suite guard: after :func:`block_remote_requests`, any request to a host
that is not loopback raises :class:`~remem.errors.UsageError` before it is sent.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import importlib.metadata
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx

from remem.errors import UsageError

__all__ = [
    "LOOPBACK_HOSTS",
    "Failure",
    "RetryPolicy",
    "Sleep",
    "block_remote_requests",
    "check_host_allowed",
    "provider_message",
    "remote_requests_blocked",
    "retry_after",
    "retry_flow",
    "scrub",
    "send_async",
    "send_sync",
    "snippet",
    "ssl_context",
    "user_agent",
]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

_block_remote = False


def block_remote_requests(blocked: bool = True) -> None:
    """Make every remem HTTP client refuse non-loopback hosts (test suites call this once)."""
    global _block_remote
    _block_remote = blocked


def remote_requests_blocked() -> bool:
    """Whether :func:`block_remote_requests` is in force."""
    return _block_remote


def check_host_allowed(url: httpx.URL) -> None:
    """Raise :class:`UsageError` for a non-loopback ``url`` while remote requests are blocked."""
    if _block_remote and url.host not in LOOPBACK_HOSTS:
        raise UsageError(
            f"a request to {url.scheme}://{url.host} was blocked: remote provider requests are "
            "disabled in this process (remem.testing.block_remote_requests); point the client "
            "at remem.testing.LoopbackServer instead")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to wait before retrying a failed request."""

    max_retries: int = 3
    #: first backoff in seconds, doubling per attempt up to ``max_backoff`` (jittered)
    backoff: float = 0.5
    max_backoff: float = 20.0
    #: a server asking for a longer wait than this is better served by failing loudly
    retry_after_cap: float = 60.0

    def delay(self, attempt: int, hint: float | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based), given a server hint."""
        if hint is not None:
            return min(hint, self.retry_after_cap)
        # jitter spreads out clients that failed together
        return min(self.max_backoff, self.backoff * 2.0**attempt) * random.uniform(0.5, 1.0)


@dataclass(frozen=True, slots=True)
class Sleep:
    """A step of :func:`retry_flow`: wait this many seconds, then send again."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Failure:
    """How a request finally failed.

    ``response`` is the last error response (``None`` after a timeout or connection error);
    ``retryable`` is False when the status was not worth retrying (a 4xx other than 429),
    True when retries ran out. ``description`` says what went wrong last.
    """

    attempts: int
    description: str
    response: httpx.Response | None = None
    retryable: bool = True
    retry_after: float | None = None
    timed_out: bool = False


def retry_flow(policy: RetryPolicy, timeout: float | None
               ) -> Generator[Sleep | None, httpx.Response | httpx.TransportError,
                              httpx.Response | Failure]:
    """The retry loop. Yields ``None`` (send the request now: reply with the response or the
    transport error) or :class:`Sleep`; returns a 2xx response or a :class:`Failure`."""
    attempt = 0
    while True:
        outcome = yield None
        hint: float | None = None
        response: httpx.Response | None = None
        timed_out = False
        if isinstance(outcome, httpx.TimeoutException):
            description = f"timed out after {timeout}s"
            timed_out = True
        elif isinstance(outcome, httpx.TransportError):
            description = f"connection failed ({type(outcome).__name__}: {outcome})"
        else:
            status = outcome.status_code
            if 200 <= status < 300:
                return outcome
            response = outcome
            if (status != 429 and status < 500) or _quota_exhausted(outcome):
                return Failure(attempt + 1, f"HTTP {status}: {provider_message(outcome)}",
                               outcome, retryable=False)
            description = f"HTTP {status}: {provider_message(outcome)}"
            hint = retry_after(outcome.headers)
        if attempt >= policy.max_retries:
            return Failure(attempt + 1, description, response, retry_after=hint,
                           timed_out=timed_out)
        yield Sleep(policy.delay(attempt, hint))
        attempt += 1


def _quota_exhausted(response: httpx.Response) -> bool:
    # OpenAI answers 429 "insufficient_quota" when billing runs out: waiting does not help
    return response.status_code == 429 and "insufficient_quota" in response.text


def send_sync(policy: RetryPolicy, timeout: float | None, send: Callable[[], httpx.Response],
              sleep: Callable[[float], None] = time.sleep) -> httpx.Response | Failure:
    """Drive :func:`retry_flow` with a blocking ``send``."""
    flow = retry_flow(policy, timeout)
    step = next(flow)
    while True:
        outcome: httpx.Response | httpx.TransportError | None = None
        if isinstance(step, Sleep):
            sleep(step.seconds)
            step = next(flow)
            continue
        try:
            outcome = send()
        except httpx.TransportError as exc:
            outcome = exc
        try:
            step = flow.send(outcome)
        except StopIteration as done:
            result: httpx.Response | Failure = done.value
            return result


async def send_async(policy: RetryPolicy, timeout: float | None,
                     send: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response | Failure:
    """Drive :func:`retry_flow` with an awaitable ``send``."""
    flow = retry_flow(policy, timeout)
    step = next(flow)
    while True:
        outcome: httpx.Response | httpx.TransportError | None = None
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            step = next(flow)
            continue
        try:
            outcome = await send()
        except httpx.TransportError as exc:
            outcome = exc
        try:
            step = flow.send(outcome)
        except StopIteration as done:
            result: httpx.Response | Failure = done.value
            return result


def provider_message(response: httpx.Response) -> str:
    """The error message from ``{"error": {"message": ...}}`` (OpenAI, Anthropic) or the
    look-alikes of Ollama, vLLM and FastAPI servers."""
    try:
        body = response.json()
    except ValueError:
        return snippet(response.text) or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return snippet(error["message"])
        for candidate in (error, body.get("message"), body.get("detail")):
            if isinstance(candidate, str):
                return snippet(candidate)
    return snippet(response.text)


def retry_after(headers: httpx.Headers | Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or date)."""
    headers = httpx.Headers(headers)
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    if (value := headers.get("retry-after")) is None:
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
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def snippet(text: str, limit: int = 300) -> str:
    """``text`` stripped and cut to ``limit`` characters."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every secret replaced by ``***`` (error messages never carry keys)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


@functools.cache
def ssl_context(trust_env: bool) -> ssl.SSLContext:
    """A cached SSL context: loading the CA bundle takes ~20 ms, paid once per process."""
    return httpx.create_ssl_context(trust_env=trust_env)


@functools.cache
def user_agent() -> str:
    """``remem/<version>``."""
    try:
        version = importlib.metadata.version("remem")
    except importlib.metadata.PackageNotFoundError:
        version = "dev"
    return f"remem/{version}"
