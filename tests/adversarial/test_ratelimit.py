"""Per-key rate limits (issue 16): the token bucket's logic on a fake clock, and the 429
with ``Retry-After`` a real server answers. (Whether a key is held to its rate under 32
concurrent clients is measured in benchmarks/ratelimit.py, not asserted on timing here.)"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from remem.errors import ConfigError
from remem.server import ServerConfig, create_app
from remem.server.ratelimit import RateLimiter
from remem.testing.server import ThreadedServer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(10, burst=3, clock=clock)
    assert [limiter.check("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.check("k") == pytest.approx(0.1)
    clock.now += 0.05
    assert limiter.check("k") == pytest.approx(0.05)  # refused requests cost nothing
    clock.now += 0.05
    assert limiter.check("k") == 0.0
    assert limiter.check("k") > 0
    assert limiter.check("other") == 0.0  # keys are limited one by one


def test_long_run_admits_rate_times_time_plus_burst() -> None:
    clock = Clock()
    limiter = RateLimiter(50, clock=clock)
    admitted = 0
    for _ in range(100_000):  # 1000 attempts per second for 100 s
        clock.now += 0.001
        admitted += limiter.check("k") == 0.0
    assert admitted == pytest.approx(50 * 100 + 50, abs=2)


def test_idle_keys_refill_to_burst_only() -> None:
    clock = Clock()
    limiter = RateLimiter(1, burst=2, clock=clock)
    clock.now += 3600
    assert [limiter.check("k") == 0.0 for _ in range(3)] == [True, True, False]


def test_full_buckets_are_evicted_past_max_keys() -> None:
    clock = Clock()
    limiter = RateLimiter(1, burst=1, clock=clock, max_keys=2)
    limiter.check("a")
    limiter.check("b")
    clock.now += 5  # both refilled: forgetting them changes nothing
    limiter.check("c")
    assert set(limiter._buckets) == {"c"}
    assert limiter.check("c") > 0  # c's own bucket is kept


def test_retry_after_is_whole_seconds() -> None:
    assert [RateLimiter.retry_after(w) for w in (0.01, 1.0, 1.2)] == ["1", "1", "2"]


@pytest.mark.parametrize("settings", [{"rate_limit": 0}, {"rate_limit": -1},
                                      {"rate_limit": float("nan")}, {"rate_limit": True},
                                      {"rate_limit": 5, "rate_burst": 0.5},
                                      {"ready_timeout": 0}])
def test_config_refuses_bad_limits(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        ServerConfig(db=":memory:", **settings)


def test_server_answers_429_with_retry_after_per_key() -> None:
    # a rate of one request per 100 s: the burst is all a key gets within the test
    app = create_app(ServerConfig(db=":memory:", rate_limit=0.01, rate_burst=2))
    keys = app.state.remem.keys
    alpha, beta = keys.create("alpha")[0], keys.create("beta")[0]
    with ThreadedServer(app) as server, httpx.Client(base_url=server.url) as http:
        def search(token: str) -> httpx.Response:
            return http.post("/v1/memories/search", json={"query": "x"},
                             headers={"Authorization": f"Bearer {token}"})
        assert [search(alpha).status_code for _ in range(2)] == [200, 200]
        limited = search(alpha)
        assert limited.status_code == 429, limited.text
        assert limited.json()["error"] == "rate_limited"
        assert 1 <= int(limited.headers["Retry-After"]) <= 100
        assert search(beta).status_code == 200  # another key has its own bucket
        mcp = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers={"Authorization": f"Bearer {alpha}",
                                 "Accept": "application/json, text/event-stream"})
        assert mcp.status_code == 429 and "Retry-After" in mcp.headers, mcp.text
        assert http.get("/healthz").status_code == 200  # no key, no limit
    app.state.remem.close()


def test_no_limit_by_default() -> None:
    app = create_app(ServerConfig(db=":memory:", auth=False, mcp=False))
    with ThreadedServer(app) as server:
        async def burst() -> list[int]:
            async with httpx.AsyncClient(base_url=server.url) as http:
                answers = await asyncio.gather(*[http.get("/v1/store/namespaces")
                                                 for _ in range(50)])
                return [r.status_code for r in answers]
        assert set(asyncio.run(burst())) == {200}
    app.state.remem.close()
