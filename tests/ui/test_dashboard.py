"""The dashboard: latency percentiles from the server's histogram, the tenant's jobs and
threads; and the quantile estimate itself."""

from __future__ import annotations

import math
import re

import pytest

from remem.ui.dashboard import latencies, quantile
from tests.ui_support import server

INF = math.inf


def test_quantile_interpolates_within_a_bucket_like_prometheus() -> None:
    buckets = [(0.01, 0.0), (0.1, 50.0), (1.0, 100.0), (INF, 100.0)]
    assert quantile(0.5, buckets) == pytest.approx(0.1)
    assert quantile(0.25, buckets) == pytest.approx(0.055)
    assert quantile(0.95, buckets) == pytest.approx(0.91)
    assert quantile(0.99, [(0.1, 1.0), (INF, 10.0)]) == 0.1  # beyond the last finite bound
    assert quantile(0.5, [(0.1, 0.0), (INF, 0.0)]) is None


def test_latencies_of_the_busiest_routes() -> None:
    text = "\n".join([
        "# TYPE remem_http_request_duration_seconds histogram",
        'remem_http_request_duration_seconds_bucket{le="0.01",method="POST",route="/a"} 8.0',
        'remem_http_request_duration_seconds_bucket{le="0.1",method="POST",route="/a"} 10.0',
        'remem_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/a"} 10.0',
        'remem_http_request_duration_seconds_bucket{le="0.01",method="GET",route="/b"} 1.0',
        'remem_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/b"} 1.0',
        ""])
    rows = latencies(text)
    assert [(r.method, r.route, r.count) for r in rows] == [("POST", "/a", 10), ("GET", "/b", 1)]
    assert rows[0].p50_ms == pytest.approx(6.2, abs=0.1)


def test_dashboard_shows_search_latency_jobs_and_threads() -> None:
    with server() as srv:
        token = srv.key("acme")
        api = srv.browser()
        headers = {"Authorization": f"Bearer {token}"}
        assert api.post("/v1/memories", headers=headers, json={
            "messages": "tea at five", "user_id": "u", "infer": False}).status_code == 200
        for _ in range(3):
            assert api.post("/v1/memories/search", headers=headers,
                            json={"query": "tea", "user_id": "u"}).status_code == 200
        srv.threads("acme").create("t1", messages="hello")
        page = srv.logged_in("acme").get("/ui/dashboard")
        assert page.status_code == 200
        row = re.search(r'class="latency-row" data-route="/v1/memories/search" '
                        r'data-method="POST">\s*<td><code>[^<]+</code></td>\s*<td>(\d+)</td>',
                        page.text)
        assert row is not None and row.group(1) == "3"
        assert 'id="dash-threads" data-count="1"' in page.text
        again = srv.logged_in("acme").get("/ui/dashboard")  # the first one is counted now
        assert 'data-route="/ui/dashboard" data-method="GET"' in again.text
        assert 'id="dash-jobs-depth" data-count="0"' in page.text
        assert "acme" not in page.text.split("</header>")[1]  # the figures name no tenant
