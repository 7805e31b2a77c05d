"""Background memory over HTTP: ``POST /v1/memories/submit`` (and flush, cancel) and
``/v1/jobs``, confined to the caller's tenant like every route.

A submission is queued in the server's database (beside the store) and answered with
its job id at once; ``remem worker`` processes, or the server itself with
``remem serve --workers-in-process N`` (:func:`install_in_process_worker`), run it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, FastAPI, Path, Query
from fastapi import Request as HttpRequest
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

from remem.background import STATUSES, JobQueue, JobStatus
from remem.background.extraction import MemoryJobs, handlers
from remem.background.requests import (
    BudgetScope,
    SetBudgetRequest,
    SubmitRequest,
    ThreadJobsRequest,
)
from remem.background.wire import JobOut
from remem.background.worker import Worker
from remem.errors import UnsupportedError
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, MODEL_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.state import Principal, ServerState

__all__ = ["add_submit_tool", "install_in_process_worker", "jobs_queue", "router"]

log = logging.getLogger("remem.server")

router = APIRouter(prefix="/v1", tags=["jobs"], responses=ERROR_RESPONSES)

JobIdPath = Annotated[str, Path(description="a job id", min_length=1, max_length=64)]


class JobsOut(BaseModel):
    """Jobs, newest first."""

    jobs: list[JobOut]


class SubmitOut(BaseModel):
    """The job that will run a submission."""

    job_id: str
    status: str
    run_after: str = Field(description="when it runs unless replaced (ISO 8601)")
    messages: int = Field(description="messages the job holds")
    replaced: bool = Field(description="the submission extended a pending job")


class CancelOut(BaseModel):
    """Ids of the pending jobs dropped."""

    cancelled: list[str]


class StatsOut(BaseModel):
    """Queue depth by status, lag of the oldest due job (seconds), failures."""

    counts: dict[str, int]
    depth: int
    lag: float
    failures: int


class BudgetOut(BaseModel):
    """A namespace's stored budget."""

    namespace: list[str]
    max_memories: int | None
    max_tokens: int | None
    policy: str
    half_life: float
    importance_weight: float
    recency_weight: float
    use_weight: float
    consolidate_first: bool
    updated_at: float = Field(description="when it was set (epoch seconds)")


class BudgetsOut(BaseModel):
    """The tenant's stored budgets, by namespace."""

    budgets: list[BudgetOut]


class BudgetDeletedOut(BaseModel):
    """Whether the namespace had a budget."""

    deleted: bool


def jobs_queue(http: HttpRequest | FastAPI) -> JobQueue:
    """The job queue of the app serving ``http``."""
    app = http if isinstance(http, FastAPI) else http.app
    return app.state.remem.jobs()  # type: ignore[no-any-return]


def _memory_jobs(http: HttpRequest, who: Principal) -> MemoryJobs:
    state = server_state(http)
    return MemoryJobs(state.memory_for(who), jobs_queue(http), tenant=who.tenant)


def _needs_llm(http: HttpRequest) -> None:
    if server_state(http).config.llm is None:
        raise UnsupportedError(
            "background extraction needs an LLM and this server has none configured: start "
            "the server with REMEM_LLM_* set, or add memories with \"infer\": false")


@router.post("/memories/submit", response_model=SubmitOut,
             summary="Submit messages for background extraction", tags=["memories"])
async def submit_memories(body: SubmitRequest, who: Writer, http: HttpRequest) -> SubmitOut:
    """Queue extraction of ``messages`` after ``delay`` seconds of quiet on the thread; a
    later submission to the same thread and scope replaces the pending job and carries its
    messages. Answers at once with the job id."""
    _needs_llm(http)
    jobs = _memory_jobs(http, who)
    result = await server_state(http).run(lambda: jobs.submit(body))
    return SubmitOut(**result.to_dict())


@router.post("/memories/flush", response_model=JobsOut, summary="Run a thread's pending "
             "extraction now", tags=["memories"], responses=MODEL_RESPONSES)
async def flush_memories(body: ThreadJobsRequest, who: Writer, http: HttpRequest) -> JobsOut:
    """Run the thread's pending extraction now and answer with the jobs and their results."""
    _needs_llm(http)
    jobs = _memory_jobs(http, who)
    result = await server_state(http).run(lambda: jobs.flush(body), waits_on_llm=True)
    return JobsOut(jobs=[JobOut(**job) for job in result.jobs])


@router.post("/memories/cancel", response_model=CancelOut, summary="Drop a thread's pending "
             "extraction", tags=["memories"])
async def cancel_memories(body: ThreadJobsRequest, who: Writer,
                          http: HttpRequest) -> CancelOut:
    """Drop the thread's pending extraction (a running one finishes)."""
    jobs = _memory_jobs(http, who)
    result = await server_state(http).run(lambda: jobs.cancel(body))
    return CancelOut(cancelled=list(result.cancelled))


@router.get("/jobs", response_model=JobsOut, summary="List jobs")
async def list_jobs(
    who: Reader, http: HttpRequest,
    status: Annotated[JobStatus | None, Query(description=f"one of {', '.join(STATUSES)}")]
    = None,
    kind: Annotated[str | None, Query(max_length=64)] = None,
    thread_id: Annotated[str | None, Query(max_length=256)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JobsOut:
    """The tenant's jobs, newest first."""
    queue = jobs_queue(http)
    found = await server_state(http).run(lambda: queue.list_jobs(
        status=status, kind=kind, thread_id=thread_id, tenant=who.tenant, limit=limit))
    return JobsOut(jobs=[JobOut(**job.to_dict()) for job in found])


@router.get("/jobs/stats", response_model=StatsOut, summary="Queue depth, lag, failures")
async def job_stats(who: Reader, http: HttpRequest) -> StatsOut:
    """How many of the tenant's jobs have each status, how late the oldest due one is."""
    queue = jobs_queue(http)
    stats = await server_state(http).run(lambda: queue.stats(tenant=who.tenant))
    return StatsOut(**stats.to_dict())


@router.get("/jobs/{job_id}", response_model=JobOut, summary="Get a job")
async def get_job(job_id: JobIdPath, who: Reader, http: HttpRequest) -> JobOut:
    """One of the tenant's jobs: payload, attempts, lease, result or last error."""
    queue = jobs_queue(http)
    job = await server_state(http).run(lambda: queue.get(job_id, tenant=who.tenant))
    return JobOut(**job.to_dict())


@router.post("/jobs/{job_id}/retry", response_model=JobOut, summary="Retry a job")
async def retry_job(job_id: JobIdPath, who: Writer, http: HttpRequest) -> JobOut:
    """Queue a failed, dead or cancelled job again (attempts reset)."""
    queue = jobs_queue(http)
    job = await server_state(http).run(lambda: queue.retry(job_id, tenant=who.tenant))
    return JobOut(**job.to_dict())


@router.post("/jobs/{job_id}/cancel", response_model=JobOut, summary="Cancel a job")
async def cancel_job(job_id: JobIdPath, who: Writer, http: HttpRequest) -> JobOut:
    """Drop a queued (or failed, dead) job."""
    queue = jobs_queue(http)
    job = await server_state(http).run(lambda: queue.cancel(job_id, tenant=who.tenant))
    return JobOut(**job.to_dict())


@router.put("/budgets", response_model=BudgetOut, summary="Set a namespace's budget",
            tags=["memories"])
async def set_budget(body: SetBudgetRequest, who: Writer, http: HttpRequest) -> BudgetOut:
    """Store a budget for a namespace; every later write to it is checked, and a namespace
    over its budget gets a ``forget`` job (checked at once too)."""
    jobs = _memory_jobs(http, who)
    stored = await server_state(http).run(lambda: jobs.apply_budget(body))
    return BudgetOut(**stored.to_dict())


@router.get("/budgets", response_model=BudgetsOut, summary="List budgets", tags=["memories"])
async def list_budgets(who: Reader, http: HttpRequest) -> BudgetsOut:
    """The tenant's stored budgets, by namespace."""
    jobs = _memory_jobs(http, who)
    found = await server_state(http).run(lambda: jobs.budgets.all())
    return BudgetsOut(budgets=[BudgetOut(**b.to_dict()) for b in found])


@router.delete("/budgets", response_model=BudgetDeletedOut, summary="Drop a budget",
               tags=["memories"])
async def delete_budget(
    who: Writer, http: HttpRequest,
    user_id: Annotated[str | None, Query(max_length=256)] = None,
    agent_id: Annotated[str | None, Query(max_length=256)] = None,
    namespace: Annotated[list[str] | None, Query(max_length=60)] = None,
) -> BudgetDeletedOut:
    """Drop the budget of ``user_id`` / ``agent_id`` (or ``namespace``, one label per
    repeated parameter); nothing is evicted when a budget goes."""
    scope = BudgetScope.of(user_id=user_id, agent_id=agent_id, namespace=namespace)
    jobs = _memory_jobs(http, who)
    deleted = await server_state(http).run(lambda: jobs.delete_budget(scope))
    return BudgetDeletedOut(deleted=deleted)


def install_in_process_worker(app: FastAPI, concurrency: int, *, poll: float = 1.0) -> None:
    """Run a :class:`~remem.background.worker.Worker` inside the server while it serves
    (``remem serve --workers-in-process N``): started with the app, stopped (running jobs
    finish, the rest are released) when it shuts down. Tenants' jobs run on their views."""
    state = app.state.remem

    def memory_for(tenant: str) -> Any:
        return state.memory_for(Principal(tenant=tenant))

    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(application: FastAPI) -> AsyncIterator[Any]:
        queue = jobs_queue(application)
        worker = Worker(queue, handlers(memory_for, queue), concurrency=concurrency,
                        poll=poll)
        worker.start()
        log.info("in-process worker %s: %d at once", worker.name, concurrency)
        try:
            async with inner(application) as value:
                yield value
        finally:
            await anyio.to_thread.run_sync(worker.stop)

    app.router.lifespan_context = lifespan


SUBMIT_TOOL_DESCRIPTION = (
    "Remember a conversation turn in the background: facts are extracted once the thread "
    "has been quiet for delay seconds (a later call for the same thread extends the pending "
    "job). Answers at once with the job id.")


def add_submit_tool(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the MCP tool ``submit_memories`` (parameters: :class:`SubmitRequest`'s fields) to
    ``server``; ``run`` acts for the caller."""
    def submit(request: SubmitRequest, ctx: Context | None) -> Work:
        def work(who: Principal) -> dict[str, Any]:
            jobs = MemoryJobs(state.memory_for(who), state.jobs(), tenant=who.tenant)
            return jobs.submit(request).to_dict()
        return work

    tool = McpTool("submit_memories", SubmitRequest, True, SUBMIT_TOOL_DESCRIPTION)
    add_request_tool(server, run, tool, submit)
