"""The dashboard's figures (pure code): request latency percentiles per route from the
server's Prometheus text, estimated from the histogram buckets as Prometheus'
``histogram_quantile`` does (linear within a bucket); and the plots of the tenant's chat
model calls, tokens and memory changes per day (:mod:`remem.usage`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from remem.usage import ActivityReport, BarChart, Series, UsageReport, stacked_bars
from remem.usage.plot import COLOURS

__all__ = ["RouteLatency", "latencies", "quantile", "usage_charts"]

#: operations drawn as their own series in the calls plot; the rest are summed as "other"
TOP_OPERATIONS = 3

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


def usage_charts(report: UsageReport, activity: ActivityReport) -> dict[str, BarChart]:
    """The three plots of the dashboard: chat model calls per day stacked by operation (the
    busiest :data:`TOP_OPERATIONS`, then "other"), input and output tokens per day, and
    memories written, changed and removed per day."""
    days = [d.day for d in report.by_day()]
    ops = sorted(report.by_operation().items(), key=lambda kv: (-kv[1].calls, kv[0]))
    named = [name for name, _ in ops[:TOP_OPERATIONS]]
    per: dict[str, dict[str, int]] = {}
    for row in report.rows:
        label = row.operation if row.operation in named else "other"
        per.setdefault(label, {})
        per[label][row.day] = per[label].get(row.day, 0) + row.calls
    labels = named + (["other"] if len(ops) > TOP_OPERATIONS else [])
    calls = [Series(label, tuple(per.get(label, {}).get(day, 0) for day in days),
                    COLOURS[n % len(COLOURS)]) for n, label in enumerate(labels)]
    if not calls:
        calls = [Series("calls", tuple(0 for _ in days))]
    by_day = report.by_day()
    tokens = [Series("input tokens", tuple(d.input_tokens for d in by_day), COLOURS[0]),
              Series("output tokens", tuple(d.output_tokens for d in by_day), COLOURS[2])]
    changes = [Series("written", tuple(d.written for d in activity.days), COLOURS[1]),
               Series("changed", tuple(d.changed for d in activity.days), COLOURS[0]),
               Series("removed", tuple(d.removed for d in activity.days), COLOURS[2])]
    activity_days = [d.day for d in activity.days]
    return {
        "calls": stacked_bars(days, calls, title="Chat model calls per day",
                              y_label="calls"),
        "tokens": stacked_bars(days, tokens, title="Tokens per day", y_label="tokens"),
        "memories": stacked_bars(activity_days, changes, title="Memory changes per day",
                                 y_label="memories"),
    }
