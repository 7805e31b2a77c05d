"""Failed authentications are rate limited per client address (issue 32, item 9): an address
that sent too many unknown, revoked or malformed keys gets a 429 with ``Retry-After`` before
its next key is looked up, on ``/v1``, ``/mcp`` and the inspector's login alike, until its
bucket refills. A key verified moments ago still works from that address; other addresses,
and requests without a key, are not affected. (The token bucket itself is tested in
test_ratelimit.py, on a fake clock as here.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.server import ServerConfig, create_app
from remem.server.ratelimit import AUTH_FAILURE_BURST, AUTH_FAILURE_RATE, RateLimiter
from tests.ui_support import csrf_of

BAD = "rk_0123456789ab_not-a-real-key"
MCP_BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[Any, Clock]]:
    app = create_app(ServerConfig(db=tmp_path / "auth.db", mcp=True, key_cache_seconds=60))
    clock = Clock()
    # three failures at once, then one every 10 s (the defaults are ten, then ten a minute)
    app.state.remem.auth_failures = RateLimiter(0.1, 3, clock=clock)
    yield app, clock
    app.state.remem.close()


def _list(client: TestClient, key: str | None) -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return client.get("/v1/store/namespaces", headers=headers)


def test_the_defaults_allow_a_few_mistakes_then_ten_a_minute() -> None:
    assert AUTH_FAILURE_BURST == 10
    assert round(AUTH_FAILURE_RATE * 60, 9) == 10


def test_v1_refuses_an_address_after_its_failures(app: tuple[Any, Clock]) -> None:
    app_, clock = app
    good = app_.state.remem.keys.create("acme")[0]
    other_good = app_.state.remem.keys.create("acme")[0]
    # another address (no lifespan of its own: the first client runs the app's)
    elsewhere = TestClient(app_, client=("10.0.0.2", 4000))
    with TestClient(app_) as client:
        assert _list(client, good).status_code == 200  # verified: cached for 60 s
        for _ in range(5):  # no key at all is not a guess: never limited
            assert _list(client, None).status_code == 401
        assert [_list(client, f"{BAD}{n}").status_code for n in range(3)] == [401, 401, 401]
        refused = _list(client, BAD)
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] == "10"
        assert refused.json()["error"] == "rate_limited"
        assert "too many failed authentications" in refused.json()["message"]
        # a valid key not verified lately is not looked up either: the same answer
        assert _list(client, other_good).status_code == 429
        # the key this process verified moments ago keeps working from that address
        assert _list(client, good).status_code == 200
        # another address has its own count
        assert _list(elsewhere, BAD).status_code == 401
        assert _list(elsewhere, other_good).status_code == 200
        clock.now += 10  # one more attempt earned
        assert _list(client, BAD).status_code == 401
        assert _list(client, BAD).status_code == 429
        clock.now += 10
        assert _list(client, other_good).status_code == 200  # a success costs nothing


def test_mcp_counts_and_refuses_alike(app: tuple[Any, Clock]) -> None:
    app_, _ = app
    with TestClient(app_) as client:
        statuses = [client.post("/mcp/", json=MCP_BODY, headers={
            **MCP_HEADERS, "Authorization": f"Bearer {BAD}{n}"}).status_code
            for n in range(4)]
        assert statuses == [401, 401, 401, 429]
        refused = client.post("/mcp/", json=MCP_BODY,
                              headers={**MCP_HEADERS, "Authorization": f"Bearer {BAD}"})
        assert refused.status_code == 429 and refused.headers["retry-after"] == "10"
        assert refused.json()["error"] == "rate_limited"
        # the same address is refused on /v1 too: one count per address
        assert _list(client, BAD).status_code == 429


def test_the_inspector_login_counts_and_refuses_alike(app: tuple[Any, Clock]) -> None:
    app_, clock = app
    good = app_.state.remem.keys.create("acme")[0]
    with TestClient(app_, base_url="http://127.0.0.1") as browser:
        def login(key: str) -> Any:
            page = browser.get("/ui/login")
            return browser.post("/ui/login", data={"csrf_token": csrf_of(page.text),
                                                   "api_key": key}, follow_redirects=False)

        assert [login(f"{BAD}{n}").status_code for n in range(3)] == [401, 401, 401]
        refused = login(good)  # not verified lately: refused without a look-up
        assert refused.status_code == 429 and refused.headers["retry-after"] == "10"
        assert "too many failed authentications" in refused.text
        assert _list(browser, BAD).status_code == 429  # one count for the address
        clock.now += 10
        assert login(good).status_code == 303
