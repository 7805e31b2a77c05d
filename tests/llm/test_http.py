"""The shared retry flow (remem._http): what it waits, when it gives up, and the remote guard."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from remem._http import (
    Failure,
    RetryPolicy,
    block_remote_requests,
    check_host_allowed,
    remote_requests_blocked,
    retry_after,
    send_async,
    send_sync,
)
from remem.embed.openai import OpenAIEmbedder
from remem.errors import UsageError

REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def replies(*items: int | tuple[int, dict[str, str]] | Exception) -> list[object]:
    out: list[object] = []
    for item in items:
        if isinstance(item, Exception):
            out.append(item)
        else:
            status, headers = item if isinstance(item, tuple) else (item, {})
            out.append(httpx.Response(status, headers=headers, json={"ok": status},
                                      request=REQUEST))
    return out


def sender(queue: list[object]) -> tuple[list[int], object]:
    sent: list[int] = []

    def send() -> httpx.Response:
        sent.append(1)
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        assert isinstance(item, httpx.Response)
        return item
    return sent, send


def test_retry_after_is_honoured_and_capped() -> None:
    slept: list[float] = []
    sent, send = sender(replies((429, {"Retry-After": "7"}), (503, {"retry-after-ms": "250"}),
                                (429, {"Retry-After": "600"}), 200))
    result = send_sync(RetryPolicy(max_retries=3, retry_after_cap=60.0), 5.0, send,
                       sleep=slept.append)
    assert isinstance(result, httpx.Response) and result.status_code == 200
    assert slept == [7.0, 0.25, 60.0]
    assert len(sent) == 4


def test_backoff_doubles_with_jitter_up_to_the_maximum() -> None:
    slept: list[float] = []
    _, send = sender(replies(500, 502, 503, 504, 200))
    send_sync(RetryPolicy(max_retries=4, backoff=1.0, max_backoff=3.0), 5.0, send,
              sleep=slept.append)
    bounds = [(0.5, 1.0), (1.0, 2.0), (1.5, 3.0), (1.5, 3.0)]
    assert len(slept) == 4
    assert all(low <= wait <= high for wait, (low, high) in zip(slept, bounds, strict=True))


def test_gives_up_with_a_failure_describing_the_last_error() -> None:
    _, send = sender(replies(503, httpx.ConnectError("refused"),
                             httpx.ReadTimeout("slow")))
    result = send_sync(RetryPolicy(max_retries=2, backoff=0.0), 1.5, send, sleep=lambda s: None)
    assert isinstance(result, Failure)
    assert (result.attempts, result.retryable, result.timed_out) == (3, True, True)
    assert result.description == "timed out after 1.5s"
    assert result.response is None


def test_4xx_is_final_at_once() -> None:
    sent, send = sender(replies(400, 200))
    result = send_sync(RetryPolicy(max_retries=5), 1.0, send, sleep=lambda s: None)
    assert isinstance(result, Failure) and not result.retryable
    assert result.response is not None and result.response.status_code == 400
    assert len(sent) == 1


def test_async_shell_drives_the_same_flow() -> None:
    queue = replies((429, {"Retry-After": "0"}), 200)

    async def send() -> httpx.Response:
        item = queue.pop(0)
        assert isinstance(item, httpx.Response)
        return item

    result = asyncio.run(send_async(RetryPolicy(max_retries=1), 1.0, send))
    assert isinstance(result, httpx.Response) and result.status_code == 200


def test_retry_after_forms() -> None:
    assert retry_after({"Retry-After": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5
    assert retry_after({"Retry-After": "soon"}) is None
    assert retry_after({}) is None
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    waited = retry_after({"Retry-After": future})
    assert waited is not None and 25 <= waited <= 30


def test_remote_guard_is_on_in_this_suite_and_lets_loopback_through() -> None:
    assert remote_requests_blocked()
    check_host_allowed(httpx.URL("http://127.0.0.1:8080/v1"))
    check_host_allowed(httpx.URL("http://localhost:11434/v1"))
    with pytest.raises(UsageError, match=r"api\.openai\.com"):
        check_host_allowed(httpx.URL("https://api.openai.com/v1"))
    block_remote_requests(False)
    try:
        check_host_allowed(httpx.URL("https://api.openai.com/v1"))
    finally:
        block_remote_requests(True)


def test_the_embedder_honours_the_guard_too() -> None:
    embedder = OpenAIEmbedder("text-embedding-3-small", base_url="https://api.openai.com/v1",
                              api_key="sk-never-sent", max_retries=0)
    with pytest.raises(UsageError, match="blocked"):
        embedder.embed_documents(["hello"])
    assert embedder.requests_sent == 0
    embedder.close()
