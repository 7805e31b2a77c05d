"""Request metrics in the Prometheus text format, kept in process (no dependency).

Counters and latency histograms are labelled by method, route template (never the raw path,
which would carry ids) and status; there is no tenant label, so ``/metrics`` reveals nothing
about who stores what.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["BUCKETS", "Metrics", "MetricsMiddleware"]

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Metrics:
    """Thread-safe counters and histograms, rendered by :meth:`render`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str], int] = {}
        self._hist: dict[tuple[str, str], list[float]] = {}  # bucket counts + [sum, count]
        self.in_flight = 0
        self.started = time.time()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Record one finished request."""
        with self._lock:
            key = (method, route, str(status))
            self._requests[key] = self._requests.get(key, 0) + 1
            hist = self._hist.setdefault((method, route), [0.0] * (len(BUCKETS) + 2))
            hist[bisect.bisect_left(BUCKETS, seconds)] += 1  # the first bucket >= seconds
            hist[-2] += seconds
            hist[-1] += 1

    def render(self) -> str:
        """The Prometheus text exposition (version 0.0.4)."""
        lines = [
            "# HELP remem_http_requests_total HTTP requests by method, route and status.",
            "# TYPE remem_http_requests_total counter",
        ]
        with self._lock:
            for (method, route, status), count in sorted(self._requests.items()):
                lines.append(f'remem_http_requests_total{{method="{method}",route="{_esc(route)}",'
                             f'status="{status}"}} {count}')
            lines += [
                "# HELP remem_http_request_duration_seconds Time to answer a request.",
                "# TYPE remem_http_request_duration_seconds histogram",
            ]
            for (method, route), hist in sorted(self._hist.items()):
                labels = f'method="{method}",route="{_esc(route)}"'
                running = 0
                for bound, in_bucket in zip(BUCKETS, hist, strict=False):
                    running += int(in_bucket)
                    lines.append(f'remem_http_request_duration_seconds_bucket{{{labels},'
                                 f'le="{bound}"}} {running}')
                lines.append(f'remem_http_request_duration_seconds_bucket{{{labels},le="+Inf"}} '
                             f"{int(hist[-1])}")
                lines.append(f"remem_http_request_duration_seconds_sum{{{labels}}} {hist[-2]}")
                lines.append(f"remem_http_request_duration_seconds_count{{{labels}}} "
                             f"{int(hist[-1])}")
            lines += [
                "# HELP remem_http_requests_in_flight Requests being answered now.",
                "# TYPE remem_http_requests_in_flight gauge",
                f"remem_http_requests_in_flight {self.in_flight}",
                "# HELP remem_process_start_time_seconds When the server started (epoch).",
                "# TYPE remem_process_start_time_seconds gauge",
                f"remem_process_start_time_seconds {self.started}",
            ]
        return "\n".join(lines) + "\n"


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class MetricsMiddleware:
    """ASGI middleware timing every HTTP request into :class:`Metrics`."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Time the request and record its route template and status."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        start = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        self.metrics.in_flight += 1
        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.in_flight -= 1
            route = scope.get("route")
            template = getattr(route, "path", None) or (
                "/mcp" if scope.get("path", "").startswith("/mcp") else "unmatched")
            self.metrics.observe(scope.get("method", "GET"), template, status,
                                 time.perf_counter() - start)
