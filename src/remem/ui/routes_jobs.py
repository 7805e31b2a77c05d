"""The jobs page: background jobs of the tenant (queue depth by status, lag, failures),
one job's payload, result and error, and retry for a job that will not run again."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.responses import Response

from remem.background import STATUSES, JobStatus
from remem.ui.web import inspector

__all__ = ["router"]

router = APIRouter()

#: jobs per page (the queue lists newest first, bounded)
JOBS_PAGE = 50
#: statuses a retry takes back to the queue
RETRYABLE = ("failed", "dead", "cancelled")

JobPath = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f\x7f/]+$")]


@router.get("/jobs")
async def jobs(request: Request, status: JobStatus | None = None,
               kind: Annotated[str | None, Query(max_length=64)] = None) -> Response:
    """Queue depth by status, the oldest due job's lag, and the newest jobs."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    tenant = ui.tenant_of(who)

    def load() -> tuple[Any, Any]:
        queue = ui.state.jobs()
        return (queue.stats(tenant=tenant),
                queue.list_jobs(status=status, kind=kind or None, tenant=tenant,
                                limit=JOBS_PAGE))

    stats, found = await ui.run(load)
    return ui.page(request, viewer, "jobs.html", stats=stats, jobs=found, statuses=STATUSES,
                   status_filter=status or "", kind=kind or "", retryable=RETRYABLE,
                   page_size=JOBS_PAGE)


@router.get("/jobs/{job_id}")
async def job_page(request: Request, job_id: JobPath) -> Response:
    """One job: what it was asked to do, its attempts, lease, result or last error."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    tenant = ui.tenant_of(who)
    job = await ui.run(lambda: ui.state.jobs().get(job_id, tenant=tenant))
    return ui.page(request, viewer, "job.html", job=job, retryable=RETRYABLE,
                   payload=json.dumps(job.payload, indent=2, ensure_ascii=False),
                   result=None if job.result is None else
                   json.dumps(job.result, indent=2, ensure_ascii=False))


@router.post("/jobs/{job_id}/retry")
async def retry(request: Request, job_id: JobPath) -> Response:
    """Queue a failed, dead or cancelled job again (CSRF-checked; writing keys only)."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    await ui.form(request, viewer)
    if who.read_only:
        raise HTTPException(403, "this API key is read-only; log in with a key created "
                                 "without --read-only to retry jobs")
    tenant = ui.tenant_of(who)
    await ui.run(lambda: ui.state.jobs().retry(job_id, tenant=tenant))
    return ui.redirect(request, f"{ui.prefix}/jobs/{job_id}")
