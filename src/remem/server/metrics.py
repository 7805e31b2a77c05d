"""Request metrics in the Prometheus text format, through ``prometheus_client``.

``/metrics`` serves request counts and latency histograms labelled by method, route
template (never the raw path, which would carry ids) and status, the requests in flight
and when the server started. It names no tenant: it needs no key, so anyone who can reach
the port can read it.

``remem_bad_records_skipped_total{family=...}`` counts the stored records reads skipped
because they do not parse (:mod:`remem.store.bad_records`; every skip counts, so one bad
record read by three listings counts three): a value above zero means ``remem doctor`` has
something to report.

Per-tenant series (requests by tenant and status class) are kept apart and served only at
``/metrics/tenants`` to the operator's bearer token (``remem serve --metrics-token``);
without a token that route does not exist.

With ``remem serve --workers N`` the workers are separate processes: each writes its
counters to files in one directory (``prometheus_client``'s multiprocess mode, switched on
by ``PROMETHEUS_MULTIPROC_DIR``, which :func:`prepare_multiprocess_dir` sets before the
workers start), and whichever worker answers ``/metrics`` adds up every worker's files, so
all workers report the same totals.
"""

from __future__ import annotations

import atexit
import glob
import hmac
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastapi import FastAPI, Request
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

# the ASGI types under their old names too (remem.server.mcp imports them from here)
from remem.server.asgi import ASGIApp as ASGIApp
from remem.server.asgi import Message as Message
from remem.server.asgi import Receive as Receive
from remem.server.asgi import Scope as Scope
from remem.server.asgi import Send as Send
from remem.store.bad_records import FAMILIES, BadRecord, add_listener

__all__ = ["BUCKETS", "CONTENT_TYPE", "MULTIPROC_VAR", "TENANT_PREFIX", "Metrics",
           "MetricsMiddleware", "install_tenant_metrics", "prepare_multiprocess_dir",
           "token_matches"]

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: the Prometheus text format's content type
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: the variable that switches prometheus_client to its multiprocess mode
MULTIPROC_VAR = "PROMETHEUS_MULTIPROC_DIR"
#: metric names of the per-tenant series, never served on ``/metrics``
TENANT_PREFIX = "remem_tenant_"



def prepare_multiprocess_dir() -> str:
    """Point ``PROMETHEUS_MULTIPROC_DIR`` at an empty directory for the workers about to
    start: the one already set (its metric files from an earlier run are removed, nothing
    else), or a new temporary one, removed when this process exits."""
    path = os.environ.get(MULTIPROC_VAR)
    if path:
        os.makedirs(path, exist_ok=True)
        for stale in glob.glob(os.path.join(glob.escape(path), "*.db")):
            os.remove(stale)  # counters of a previous run would be added to this one's
        return path
    path = tempfile.mkdtemp(prefix="remem-metrics-")
    os.environ[MULTIPROC_VAR] = path
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


class _Selected(Collector):
    """The metric families of ``source`` whose name starts with ``prefix`` (``keep``) or
    does not (``not keep``)."""

    def __init__(self, source: Callable[[], Iterable[Metric]], prefix: str,
                 keep: bool) -> None:
        self.source = source
        self.prefix = prefix
        self.keep = keep

    def collect(self) -> Iterator[Metric]:
        for family in self.source():
            if family.name.startswith(self.prefix) == self.keep:
                yield family


class Metrics:
    """The server's metrics; :meth:`render` and :meth:`render_tenants` expose them.

    ``multiprocess_dir``: where the workers' metric files are (default: the
    ``PROMETHEUS_MULTIPROC_DIR`` variable; unset, this process's own values)."""

    def __init__(self, multiprocess_dir: str | None = None) -> None:
        self.multiprocess_dir = multiprocess_dir or os.environ.get(MULTIPROC_VAR) or None
        # a registry per app: several apps in one process (tests) must not collide
        self._own = CollectorRegistry()
        self.requests = Counter(
            "remem_http_requests", "HTTP requests by method, route and status.",
            ["method", "route", "status"], registry=self._own)
        self.duration = Histogram(
            "remem_http_request_duration_seconds", "Time to answer a request.",
            ["method", "route"], buckets=BUCKETS, registry=self._own)
        self.in_flight = Gauge(
            "remem_http_requests_in_flight", "Requests being answered now.",
            multiprocess_mode="livesum", registry=self._own)
        started = Gauge(
            "remem_process_start_time_seconds", "When the server (its oldest worker) started "
            "(epoch).", multiprocess_mode="min", registry=self._own)
        started.set(time.time())
        self.tenant_requests = Counter(
            f"{TENANT_PREFIX}http_requests", "HTTP requests by tenant and status class "
            "(2xx, 4xx, ...).", ["tenant", "status_class"], registry=self._own)
        self.bad_records = Counter(
            "remem_bad_records_skipped", "Stored records reads skipped because they do not "
            "parse, by family (each skip counts; remem doctor lists and repairs them).",
            ["family"], registry=self._own)
        for family in FAMILIES:  # every family's series exists from the start, at 0
            self.bad_records.labels(family)
        add_listener(self._skipped)  # held weakly: goes with this object
        #: collectors read at each scrape, beside the counters (the job queue's gauges)
        self.extra: list[Collector] = []
        self._bound = False

    def _skipped(self, bad: BadRecord) -> None:
        self.bad_records.labels(bad.family).inc()

    def bind(self, app: Any) -> None:
        """Add the gauges of ``app``'s job queue (read from its database at each scrape, so
        every server process, and every ``remem worker``, counts the same); once."""
        if self._bound:
            return
        self._bound = True
        state = getattr(getattr(app, "state", None), "remem", None)
        if state is not None:
            self.extra.append(JobQueueCollector(state.jobs))

    def observe(self, method: str, route: str, status: int, seconds: float,
                tenant: str | None = None) -> None:
        """Record one finished request (and its tenant's count, if it had one)."""
        self.requests.labels(method, route, str(status)).inc()
        self.duration.labels(method, route).observe(seconds)
        if tenant is not None:
            self.tenant_requests.labels(tenant, f"{status // 100}xx").inc()

    def _source(self) -> Callable[[], Iterable[Metric]]:
        if self.multiprocess_dir is None:
            return self._own.collect
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(  # type: ignore[no-untyped-call]
            merged, path=self.multiprocess_dir)
        return merged.collect

    def _render(self, tenants: bool) -> str:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Selected(self._source(), TENANT_PREFIX, tenants))
        if not tenants:
            for collector in self.extra:
                registry.register(collector)
        return generate_latest(registry).decode("utf-8")

    def render(self) -> str:
        """The Prometheus text of every series without a tenant (``/metrics``)."""
        return self._render(tenants=False)

    def render_tenants(self) -> str:
        """The Prometheus text of the per-tenant series (``/metrics/tenants``)."""
        return self._render(tenants=True)


def token_matches(expected: str, authorization: str | None) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <expected>`` (compared in
    constant time)."""
    if not authorization:
        return False
    scheme, _, credentials = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        credentials.strip().encode("utf-8", "surrogatepass"),
        expected.encode("utf-8", "surrogatepass"))


def install_tenant_metrics(app: FastAPI, metrics: Metrics, token: str) -> None:
    """Serve :meth:`Metrics.render_tenants` at ``GET /metrics/tenants`` on ``app`` (a FastAPI
    app) to requests that carry ``Authorization: Bearer <token>``; others get a 401."""
    from fastapi.responses import PlainTextResponse, Response

    from remem.server.errors import error_response

    @app.get("/metrics/tenants", tags=["ops"], summary="Per-tenant Prometheus metrics",
             response_class=PlainTextResponse,
             responses={401: {"description": "no or another metrics token"}})
    def tenant_metrics(request: Request) -> Response:
        """Requests by tenant and status class, for the operator's metrics token only
        (``remem serve --metrics-token``): tenant names are not for every caller."""
        if not token_matches(token, request.headers.get("authorization")):
            return error_response(401, "unauthorized", "this route needs the server's metrics "
                                  "token: send 'Authorization: Bearer <remem serve "
                                  "--metrics-token>'", headers={"WWW-Authenticate": "Bearer"})
        return PlainTextResponse(metrics.render_tenants(), media_type=CONTENT_TYPE)


class JobQueueCollector(Collector):
    """The background job queue as gauges, read from its table at each scrape: jobs by kind
    and status (queued and running are the queue's depth; done, failed, dead and cancelled
    are how the jobs that ran ended), seconds the oldest due job has waited, and whether the
    queue could be read (a database that does not answer never fails ``/metrics``)."""

    def __init__(self, queue: Callable[[], Any]) -> None:
        self.queue = queue

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        up = GaugeMetricFamily("remem_jobs_up", "1 when the job queue could be read.")
        try:
            queue = self.queue()
            counts = queue.breakdown()
            lag = queue.stats().lag
        except Exception:
            up.add_metric([], 0.0)
            yield up
            return
        up.add_metric([], 1.0)
        yield up
        depth = GaugeMetricFamily(
            "remem_jobs_queue_depth", "Jobs waiting (queued) or running, by kind.",
            labels=["kind", "status"])
        ended = GaugeMetricFamily(
            "remem_jobs_finished", "Jobs that ran to an end, by kind and outcome (done, "
            "failed, dead, cancelled); grows like a counter while jobs are kept.",
            labels=["kind", "outcome"])
        for (kind, status), count in sorted(counts.items()):
            (depth if status in ("queued", "running") else ended).add_metric(
                [kind, status], float(count))
        yield depth
        yield ended
        failures = sum(n for (_, status), n in counts.items() if status in ("failed", "dead"))
        yield GaugeMetricFamily("remem_jobs_failures", "Jobs that will not run again without "
                                "a retry (failed or dead).", value=float(failures))
        yield GaugeMetricFamily("remem_jobs_oldest_queued_lag_seconds", "Seconds the oldest "
                                "due queued job has waited past its start (0: none is late).",
                                value=float(lag))


class MetricsMiddleware:
    """ASGI middleware timing every HTTP request into :class:`Metrics`."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Time the request and record its route template, status and tenant."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        start = time.perf_counter()
        if not self.metrics._bound:  # the app is known from the first request on
            self.metrics.bind(scope.get("app"))

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.in_flight.dec()
            route = scope.get("route")
            template = getattr(route, "path", None) or (
                "/mcp" if scope.get("path", "").startswith("/mcp") else "unmatched")
            # the route's key check leaves who asked in the request state
            who = (scope.get("state") or {}).get("remem_principal")
            self.metrics.observe(scope.get("method", "GET"), template, status,
                                 time.perf_counter() - start,
                                 getattr(who, "tenant", None))
