"""Background memory over HTTP: ``POST /v1/memories/submit`` (and flush, cancel),
``/v1/jobs`` and ``/v1/budgets``, confined to the caller's tenant like every route.

The routes are the rows of :data:`remem.background.operation_table.JOB_OPERATIONS`, made by
the router builder (:mod:`remem.server.operation_routes`), each run by its own handler (flush
and cancel take the same request); the ``submit_memories`` MCP tool is its row's. A
submission is queued in the server's database (beside the store) and answered with its job id
at once; ``remem worker`` processes, or the server itself with ``remem serve
--workers-in-process N`` (:func:`install_in_process_worker`), run it. Submitting and flushing
need the server's chat model (400 ``unsupported`` without one).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, FastAPI
from fastapi import Request as HttpRequest
from mcp.server.mcpserver import Context, MCPServer

from remem.background import JobQueue
from remem.background.extraction import MemoryJobs, handlers
from remem.background.operation_table import (
    CANCEL,
    FLUSH,
    JOB_OPERATIONS,
    ON_QUEUE,
    SUBMIT,
    run_on_queue,
)
from remem.background.requests import (
    BudgetScope,
    ListBudgetsRequest,
    SetBudgetRequest,
    SubmitRequest,
)
from remem.background.worker import Worker
from remem.errors import UnsupportedError
from remem.operations import Operation, row_of
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.operation_routes import add_operation_routes
from remem.server.state import Principal, ServerState

__all__ = ["add_submit_tool", "install_in_process_worker", "jobs_queue", "router"]

log = logging.getLogger("remem.server")

router = APIRouter(tags=["jobs"], responses=ERROR_RESPONSES)


def jobs_queue(http: HttpRequest | FastAPI) -> JobQueue:
    """The job queue of the app serving ``http``."""
    app = http if isinstance(http, FastAPI) else http.app
    return app.state.remem.jobs()  # type: ignore[no-any-return]


def _row(request: type[Any]) -> Operation:
    return row_of(JOB_OPERATIONS, request)


#: what a memory row runs: on the tenant's MemoryJobs (its memory, the server's queue)
_ON_MEMORY: Mapping[Operation, Callable[[MemoryJobs, Any], Any]] = {
    SUBMIT: MemoryJobs.submit, FLUSH: MemoryJobs.flush, CANCEL: MemoryJobs.cancel,
    _row(SetBudgetRequest): MemoryJobs.apply_budget,
    _row(ListBudgetsRequest): lambda jobs, r: jobs.budgets.all(),
    _row(BudgetScope): MemoryJobs.delete_budget,
}


async def _run(row: Operation, http: HttpRequest, who: Principal, request: Any) -> Any:
    """Run ``request`` (``row``'s) for the caller in a worker thread. Submitting and flushing
    need the server's model: refused (400) without one; a flush waits on it."""
    state = server_state(http)
    if row in (SUBMIT, FLUSH) and state.config.llm is None:
        raise UnsupportedError(
            "background extraction needs an LLM and this server has none configured: start "
            "the server with REMEM_LLM_* set, or add memories with \"infer\": false")
    queue = jobs_queue(http)
    if row.request in ON_QUEUE:
        return await state.run(lambda: run_on_queue(queue, request, tenant=who.tenant))
    on_memory = _ON_MEMORY[row]
    jobs = MemoryJobs(state.memory_for(who), queue, tenant=who.tenant)
    return await state.run(lambda: on_memory(jobs, request), waits_on_llm=row.calls_model)


# a handler per row (flush and cancel take the same request), literal paths first as the
# builder adds them (/v1/jobs/{job_id} would take /v1/jobs/stats)
for _each in sorted(JOB_OPERATIONS, key=lambda row: bool(row.path_fields)):
    add_operation_routes(router, (_each,), functools.partial(_run, _each))


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


def add_submit_tool(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the MCP tool ``submit_memories`` (its row's: parameters :class:`SubmitRequest`'s
    fields) to ``server``; ``run`` acts for the caller."""
    def submit(request: SubmitRequest, ctx: Context | None) -> Work:
        def work(who: Principal) -> dict[str, Any]:
            jobs = MemoryJobs(state.memory_for(who), state.jobs(), tenant=who.tenant)
            return SUBMIT.answer(jobs.submit(request)).model_dump(mode="json")
        return work

    add_request_tool(server, run, McpTool.of(SUBMIT), submit)
