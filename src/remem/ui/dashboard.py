"""The dashboard's figures from the server's Prometheus text (pure code): request latency
percentiles per route, estimated from the histogram buckets as Prometheus'
``histogram_quantile`` does (linear within a bucket)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["RouteLatency", "latencies", "quantile"]

_DURATION = "remem_http_request_duration_seconds"


def quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """The ``q`` quantile (0-1) of a histogram given as ``(upper bound, cumulative count)``
    pairs sorted by bound (the last bound may be infinite); ``None`` without observations.
    A quantile in the last, unbounded bucket is the largest finite bound."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank and count > below:
            if math.isinf(bound):
                return lower
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = (bound if not math.isinf(bound) else lower), count
    return lower


@dataclass(frozen=True, slots=True)
class RouteLatency:
    """How fast one route answered: requests, and the 50th, 95th and 99th percentiles in
    milliseconds (from the histogram buckets)."""

    method: str
    route: str
    count: int
    p50_ms: float
    p95_ms: float
    p99_ms: float


def latencies(prometheus_text: str, *, limit: int = 15) -> list[RouteLatency]:
    """The ``limit`` busiest routes of the server's request-duration histogram, busiest
    first."""
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for family in text_string_to_metric_families(prometheus_text):
        if family.name != _DURATION:
            continue
        for sample in family.samples:
            if not sample.name.endswith("_bucket"):
                continue
            key = (sample.labels.get("method", ""), sample.labels.get("route", ""))
            series.setdefault(key, []).append((float(sample.labels["le"]), sample.value))
    rows = []
    for (method, route), buckets in series.items():
        buckets.sort()
        if buckets[-1][1] <= 0:
            continue
        values = [quantile(q, buckets) or 0.0 for q in (0.5, 0.95, 0.99)]
        rows.append(RouteLatency(method, route, int(buckets[-1][1]),
                                 *(round(v * 1000, 1) for v in values)))
    rows.sort(key=lambda r: (-r.count, r.route, r.method))
    return rows[:limit]
