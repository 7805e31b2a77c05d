"""What every HTTP chat client shares: settings, connection pools, the concurrency limit,
retries, error mapping and usage accounting.

A provider subclass only says how to build a request body from a :class:`ChatRequest`
(:meth:`HTTPChatModel._payload`), how to read the answer (:meth:`HTTPChatModel._parse`), and
whether a rejected request can be sent again in a simpler structured-output mode
(:meth:`HTTPChatModel._fallback`). One generator (:meth:`HTTPChatModel._flow`) runs a call;
:meth:`~HTTPChatModel.complete` and :meth:`~HTTPChatModel.acomplete` drive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import weakref
from collections.abc import Generator, Mapping
from types import TracebackType
from typing import Any, Self

import httpx

from remem._http import (
    LOOPBACK_HOSTS,
    Failure,
    RetryPolicy,
    check_host_allowed,
    scrub,
    send_async,
    send_sync,
    snippet,
    ssl_context,
    user_agent,
)
from remem.errors import (
    ConfigError,
    ContextWindowError,
    LLMConnectionError,
    LLMError,
    LLMResponseError,
    LLMStatusError,
    RateLimitError,
    UsageError,
)
from remem.llm.base import ChatRequest, ChatResponse, Usage, UsageLedger
from remem.tokens import DEFAULT_COUNTER, count_messages

__all__ = ["HTTPChatModel"]

_SECRET_HEADER_WORDS = ("key", "auth", "token", "secret")
# how providers say a prompt is too long (OpenAI, Anthropic, vLLM, llama.cpp, Ollama)
_CONTEXT_MARKERS = ("context_length_exceeded", "context length", "maximum context",
                    "prompt is too long", "too many tokens", "exceeds the context",
                    "context window", "context size", "n_ctx")

_Flow = Generator[dict[str, Any], "httpx.Response | Failure", ChatResponse]


class HTTPChatModel:
    """Base of the HTTP chat clients (:class:`~remem.llm.OpenAIChatModel`,
    :class:`~remem.llm.AnthropicChatModel`); not used directly.

    ``timeout``: seconds per HTTP request. ``max_retries``: retries of a request failing with
    429, 5xx, a timeout or a connection error (waiting what ``Retry-After`` asks, else jittered
    exponential backoff from ``retry_backoff`` seconds up to ``max_backoff``).
    ``max_concurrency``: requests in flight at once through this object (per thread pool and per
    event loop). ``context_window``: the model's window in tokens, when known. ``headers`` are
    sent with every request. ``transport`` / ``async_transport`` replace httpx's network layer
    (for proxies or tests).
    """

    _provider = "chat"
    _key_env: tuple[str, ...] = ()

    def __init__(self, model: str, *, url: httpx.URL, base_url: str, api_key: str | None,
                 timeout: float, max_retries: int, retry_backoff: float, max_backoff: float,
                 max_concurrency: int, context_window: int | None,
                 headers: Mapping[str, str] | None,
                 transport: httpx.BaseTransport | None,
                 async_transport: httpx.AsyncBaseTransport | None) -> None:
        cls = type(self).__name__
        if not isinstance(model, str) or not model:
            raise ConfigError(f"{cls} needs a model name, e.g. {cls}('gpt-4.1-mini'); got "
                              f"{model!r} (or set REMEM_LLM_MODEL and use model_from_env())")
        _require(cls, isinstance(timeout, int | float) and timeout > 0, "timeout",
                 "a positive number of seconds", timeout)
        _require(cls, isinstance(max_retries, int) and max_retries >= 0, "max_retries",
                 "an integer >= 0", max_retries)
        _require(cls, retry_backoff >= 0 and max_backoff >= 0, "retry_backoff/max_backoff",
                 "numbers of seconds >= 0", (retry_backoff, max_backoff))
        _require(cls, isinstance(max_concurrency, int) and max_concurrency >= 1,
                 "max_concurrency", "an integer >= 1", max_concurrency)
        _require(cls, context_window is None or (isinstance(context_window, int)
                                                 and context_window >= 1),
                 "context_window", "a positive number of tokens or None", context_window)
        self._model = model
        self._url = url
        self._base_url = base_url
        self._api_key = api_key or None
        self._timeout = float(timeout)
        self._policy = RetryPolicy(max_retries, retry_backoff, max_backoff)
        self._max_concurrency = max_concurrency
        self._context_window = context_window
        self._extra_headers = dict(headers or {})
        self._transport = transport
        self._async_transport = async_transport
        self._secrets = [s for s in [self._api_key, *(
            v for k, v in self._extra_headers.items()
            if any(w in k.lower() for w in _SECRET_HEADER_WORDS))] if s]
        self._usage = UsageLedger()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._client: httpx.Client | None = None
        # an AsyncClient and a semaphore belong to one event loop: keep them per loop
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary())
        self._slots_by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
        self._closed = False

    # -- the ChatModel protocol -----------------------------------------------------------------

    @property
    def model(self) -> str:
        """The provider's model name."""
        return self._model

    @property
    def context_window(self) -> int | None:
        """The window given at construction (``None``: unknown)."""
        return self._context_window

    @property
    def usage(self) -> UsageLedger:
        """Usage of every call through this object, per operation."""
        return self._usage

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` and return the answer (retrying transient failures).

        A plain blocking call over httpx's sync client: it also works on a thread whose event
        loop is running (a notebook cell), holding that loop until the answer arrives; use
        :meth:`acomplete` where other tasks must keep running."""
        flow = self._flow(request)
        payload = next(flow)
        client = self._sync_client()
        with self._slots:
            while True:
                result = send_sync(self._policy, self._timeout,
                                   functools.partial(client.post, self._url, json=payload))
                try:
                    payload = flow.send(result)
                except StopIteration as done:
                    response: ChatResponse = done.value
                    return response

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        """Async :meth:`complete`."""
        flow = self._flow(request)
        payload = next(flow)
        client, slots = self._async_state()
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(slots)
            if client is None:  # outside `async with model`: a pool for this call only
                client = await stack.enter_async_context(self._new_async_client())
            while True:
                result = await send_async(self._policy, self._timeout,
                                          functools.partial(client.post, self._url,
                                                            json=payload))
                try:
                    payload = flow.send(result)
                except StopIteration as done:
                    response: ChatResponse = done.value
                    return response
        raise AssertionError("unreachable")  # pragma: no cover

    # -- settings and lifecycle -------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The base URL requests go to."""
        return self._base_url

    @property
    def url(self) -> str:
        """The full endpoint URL."""
        return str(self._url)

    def close(self) -> None:
        """Close the HTTP connections; the model cannot be used afterwards."""
        with self._lock:
            client, self._client, self._closed = self._client, None, True
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close the HTTP connections (this event loop's pool too); the model cannot be used
        afterwards."""
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
        if pool is not None:
            await pool.aclose()
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        """Keep one connection pool for this event loop until the block ends (outside such a
        block each async call opens and closes its own)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if loop not in self._pools:
                self._pools[loop] = self._new_async_client()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
        if pool is not None:
            await pool.aclose()

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"

    # -- the call flow ---------------------------------------------------------------------

    def _flow(self, request: ChatRequest) -> _Flow:
        """Yields request bodies, receives their outcome; returns the parsed answer."""
        if not isinstance(request, ChatRequest):
            raise UsageError(f"{type(self).__name__}.complete takes a ChatRequest, got "
                             f"{type(request).__name__}; build ChatRequest((Message.user(...),))")
        self._check_ready()
        check_host_allowed(self._url)
        mode = self._mode()
        while True:
            outcome = yield self._payload(request, mode)
            if isinstance(outcome, Failure):
                fallback = self._fallback(mode, outcome)
                if fallback is None:
                    raise self._error(outcome)
                mode = fallback
                self._remember_mode(mode)
                continue
            try:
                body = outcome.json()
            except ValueError as exc:
                raise LLMResponseError(self._scrub(
                    f"POST {self._url} for {self._model} answered HTTP {outcome.status_code} "
                    f"with a body that is not JSON: {snippet(outcome.text)!r}")) from exc
            try:
                response = self._parse(body, request, mode)
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise LLMResponseError(self._scrub(
                    f"POST {self._url} for {self._model} answered with a body remem cannot "
                    f"read ({type(exc).__name__}: {exc}): {snippet(outcome.text)!r}")) from exc
            if response.usage.calls == 0:  # the server sent no usage: estimate it
                usage = Usage(1, count_messages(request.messages, DEFAULT_COUNTER),
                              count_messages([response.message], DEFAULT_COUNTER))
                response = ChatResponse(response.message, usage, response.model,
                                        response.finish_reason, response.raw)
            self._usage.record(request.operation, response.usage)
            return response

    # -- provider hooks ---------------------------------------------------------------------

    def _mode(self) -> str:
        """The structured-output mode to start a call with."""
        return ""

    def _remember_mode(self, mode: str) -> None:
        """A fallback mode worked around a rejection: start later calls with it."""

    def _payload(self, request: ChatRequest, mode: str) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, body: Any, request: ChatRequest, mode: str) -> ChatResponse:
        raise NotImplementedError

    def _fallback(self, mode: str, failure: Failure) -> str | None:
        """A simpler mode to retry a rejected request with, or ``None``."""
        return None

    def _auth_headers(self) -> dict[str, str]:
        return {}

    # -- errors and plumbing ----------------------------------------------------------------

    def _error(self, failure: Failure) -> LLMError:
        where = f"POST {self._url} for {self._model}"
        response = failure.response
        if response is None:
            return LLMConnectionError(self._scrub(
                f"{where} failed after {failure.attempts} attempt(s): {failure.description}"
                + (f"; raise timeout= (now {self._timeout}s) for slow local models"
                   if failure.timed_out else "; check that the server is running at "
                   f"{self._base_url}")))
        status = response.status_code
        body = self._scrub(snippet(response.text, 2000))
        message = f"{where} failed with {failure.description}"
        if status == 429 and not failure.retryable:  # quota exhausted, not a rate limit
            return LLMStatusError(self._scrub(
                f"{message}; the account's quota or credit is used up: check the provider's "
                "billing page (retrying will not help)"), status=status, body=body)
        if status == 429:
            return RateLimitError(self._scrub(
                f"{message} (after {failure.attempts} attempt(s)); lower max_concurrency or "
                "raise max_retries"), body=body, retry_after=failure.retry_after)
        lowered = response.text.lower()
        if status in (400, 413, 422) and any(m in lowered for m in _CONTEXT_MARKERS):
            return ContextWindowError(self._scrub(
                f"{message}; the prompt does not fit the model's context window: trim the "
                "messages (remem.threads.trim_messages) or summarise older turns"))
        if status in (401, 403):
            env = " or ".join(self._key_env)
            message += (". The API key was refused: check api_key= (or " + env + ")"
                        if self._api_key else ". No API key was sent: pass api_key= or set "
                        + env)
        elif status == 404:
            message += (". Check base_url (OpenAI-compatible servers usually end in /v1) and "
                        "that the server has this model")
        return LLMStatusError(self._scrub(message), status=status, body=body)

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    def _check_ready(self) -> None:
        """Raise :class:`~remem.errors.ConfigError` when a request could not succeed as
        configured (e.g. no key for a provider that needs one): called before the first
        request, so nothing is sent or retried (providers override)."""

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": user_agent(), **self._auth_headers()}
        headers.update(self._extra_headers)
        return headers

    def _sync_client(self) -> httpx.Client:
        with self._lock:
            if self._closed:
                raise UsageError(f"this {type(self).__name__} is closed; create a new one")
            if self._client is None:
                trust_env = self._url.host not in LOOPBACK_HOSTS
                self._client = httpx.Client(headers=self._headers(), timeout=self._timeout,
                                            trust_env=trust_env, verify=ssl_context(trust_env),
                                            transport=self._transport)
            return self._client

    def _new_async_client(self) -> httpx.AsyncClient:
        trust_env = self._url.host not in LOOPBACK_HOSTS
        return httpx.AsyncClient(headers=self._headers(), timeout=self._timeout,
                                 trust_env=trust_env, verify=ssl_context(trust_env),
                                 transport=self._async_transport)

    def _async_state(self) -> tuple[httpx.AsyncClient | None, asyncio.Semaphore]:
        """This loop's pool (``None`` outside ``async with model``) and its slots."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                raise UsageError(f"this {type(self).__name__} is closed; create a new one")
            slots = self._slots_by_loop.get(loop)
            if slots is None:
                slots = self._slots_by_loop[loop] = asyncio.Semaphore(self._max_concurrency)
            return self._pools.get(loop), slots



def _require(cls: str, ok: bool, name: str, rule: str, value: object) -> None:
    if not ok:
        raise ConfigError(f"{cls} {name} must be {rule}, got {value!r}")


def endpoint(cls: str, base_url: str, default: str) -> httpx.URL:
    """``base_url`` parsed and checked (http or https with a host), or a :class:`ConfigError`."""
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL:
        url = httpx.URL()
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(f"{cls} base_url (or REMEM_LLM_BASE_URL) must be an http:// or "
                          f"https:// URL such as {default!r}, got {base_url!r}")
    return url
