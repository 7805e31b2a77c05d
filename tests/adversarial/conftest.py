"""Shared probes of the adversarial suite: every error body any probe receives is checked
for file paths, hosts and ports (defect 3 of issue 16)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

#: what no error body may contain: an absolute path, a URL, a host:port
LEAK = re.compile(r"(?:^|[\s'\"(=])/(?:tmp|home|root|var|usr|work|etc)\b|\w+://|"
                  r"\b(?:127\.0\.0\.1|localhost|\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?\b|:\d{4,5}\b")


def assert_no_leak(response: httpx.Response) -> None:
    """``response``, if an error, names no file path, URL, host or port."""
    if response.status_code >= 400:
        assert not LEAK.search(response.text), (response.status_code, response.text)


@pytest.fixture(autouse=True)
def _error_bodies_leak_nothing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Check every response any httpx client (TestClient included) receives in this suite."""
    original = httpx.Client.send

    def checked(self: httpx.Client, request: httpx.Request, **kwargs: object) -> httpx.Response:
        response = original(self, request, **kwargs)  # type: ignore[arg-type]
        if not kwargs.get("stream"):
            response.read()
            assert_no_leak(response)
        return response

    monkeypatch.setattr(httpx.Client, "send", checked)
    yield
