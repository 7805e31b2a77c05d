"""The dashboard: memories added per day (from the records' ``created_at``), the tenant's
chat model calls, tokens and memory changes per day over the last ``days`` days (inline SVG
plots with their figures as tables), request latency percentiles per route (the server's own
metrics, as ``/metrics`` serves them: no tenant in them) drawn as bars, and the tenant's
background job queue and threads at a glance."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from remem.errors import InvalidInputError
from remem.ui.added import added_chart, added_per_day
from remem.ui.dashboard import latencies, usage_charts
from remem.ui.web import inspector, page_routes
from remem.usage import MAX_DAYS, day_window

__all__ = ["router"]

router = APIRouter()

#: threads counted before "N+"
THREADS_CAP = 100
#: days plotted unless the page asks for others (``?days=``)
DEFAULT_DAYS = 30


def _days(raw: str | None) -> int:
    if raw is None or not raw.strip():
        return DEFAULT_DAYS
    text = raw.strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_DAYS:
        raise InvalidInputError(f"days must be a whole number from 1 to {MAX_DAYS}, got "
                                f"{raw!r}; e.g. ?days=30")
    return int(text)


@router.get("/dashboard")
async def dashboard(request: Request, days: str | None = None) -> Response:
    """Calls, tokens and memory changes per day; latency percentiles of the busiest routes,
    job queue depth and failures, threads."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    tenant = ui.tenant_of(who)
    window = day_window(days=_days(days))

    def load() -> tuple[Any, int, Any, Any, Any]:
        stats = ui.state.jobs().stats(tenant=tenant)
        threads = len(ui.threads(who).list_threads(limit=THREADS_CAP + 1))
        # the tenant's rows (a local database's inspector: every row of the file)
        recorder = ui.state.usage()
        report = recorder.report(window, tenant=tenant)
        activity = recorder.activity(window, tenant=tenant)
        # from the records: what any writer added (remem add on a local file included)
        added = added_per_day(ui.memory(who).store, window)
        return stats, threads, report, activity, added

    stats, threads, report, activity, added = await ui.run(load)
    rows = latencies(ui.metrics.render()) if ui.metrics is not None else []
    # the server records the inspector's pages by their route inside the inspector
    # ("/memories"): show them under the mount point, as a browser requests them
    own = {route.path for route in page_routes(request.app.routes)}
    rows = [replace(row, route=ui.prefix + row.route) if row.route in own else row
            for row in rows]
    scale = max((row.p99_ms for row in rows), default=0.0) or 1.0
    return ui.page(request, viewer, "dashboard.html", rows=rows, scale=scale, stats=stats,
                   threads=min(threads, THREADS_CAP), more_threads=threads > THREADS_CAP,
                   has_metrics=ui.metrics is not None, window=window, report=report,
                   activity=activity, charts=usage_charts(report, activity),
                   added=added, added_plot=added_chart(added),
                   days=len(window.days()))
