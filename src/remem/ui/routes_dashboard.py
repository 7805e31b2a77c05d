"""The dashboard: request latency percentiles per route (the server's own metrics, as
``/metrics`` serves them: no tenant in them) drawn as bars, and the tenant's background
job queue and threads at a glance."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from remem.server.routes_jobs import queue_of
from remem.ui.dashboard import latencies
from remem.ui.web import inspector

__all__ = ["router"]

router = APIRouter()

#: threads counted before "N+"
THREADS_CAP = 100


@router.get("/dashboard")
async def dashboard(request: Request) -> Response:
    """Latency percentiles of the busiest routes, job queue depth and failures, threads."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    tenant = ui.tenant_of(who)

    def load() -> tuple[Any, int]:
        stats = queue_of(ui.state).stats(tenant=tenant)
        threads = len(ui.threads(who).list_threads(limit=THREADS_CAP + 1))
        return stats, threads

    stats, threads = await ui.run(load)
    rows = latencies(ui.metrics.render()) if ui.metrics is not None else []
    # the server records the inspector's pages by their route inside the inspector
    # ("/memories"): show them under the mount point, as a browser requests them
    from remem.ui.app import page_routes  # (the app module imports this one)

    own = {route.path for route in page_routes(request.app.routes)}
    rows = [replace(row, route=ui.prefix + row.route) if row.route in own else row
            for row in rows]
    scale = max((row.p99_ms for row in rows), default=0.0) or 1.0
    return ui.page(request, viewer, "dashboard.html", rows=rows, scale=scale, stats=stats,
                   threads=min(threads, THREADS_CAP), more_threads=threads > THREADS_CAP,
                   has_metrics=ui.metrics is not None)
