"""``/v1/threads``: the caller's tenant's conversations (messages and checkpoints).

The routes are the rows of :data:`remem.threads.operation_table.THREAD_OPERATIONS`, made by
the router builder (:mod:`remem.server.operation_routes`): each takes one thread request
(:mod:`remem.threads.requests`), its path parameters from the path and the rest from the
body (or the query string of a ``GET``). The request runs on the tenant's
:class:`~remem.threads.scoped.ScopedThreads` view (``ServerState.threads_for``), which keeps
the tenancy: ids, listings, metadata and error messages are the tenant's own there, and
nothing here rewrites them. Answers are the rows' result models (:mod:`remem.threads.wire`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi import Request as HttpRequest

from remem.errors import UnsupportedError
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.operation_routes import add_operation_routes
from remem.server.state import Principal
from remem.threads.operation_table import THREAD_OPERATIONS
from remem.threads.requests import CompactRequest, ThreadRequest
from remem.threads.thread import Thread

__all__ = ["router"]

router = APIRouter(tags=["threads"], responses=ERROR_RESPONSES)


async def _run_thread(http: HttpRequest, who: Principal, request: ThreadRequest[Any]) -> Any:
    """Run ``request`` on the tenant's threads in a worker thread (a new thread answers with
    its record). Compaction summarises with the server's LLM: refused (400) when it has
    none."""
    state = server_state(http)
    compacts = isinstance(request, CompactRequest)
    if compacts and state.config.llm is None:
        raise UnsupportedError(
            "compaction needs an LLM and this server has none configured: start the server "
            "with REMEM_LLM_* set")

    def work() -> Any:
        result = state.threads_for(who).run(request)
        return result.info() if isinstance(result, Thread) else result

    return await state.run(work, waits_on_llm=compacts)


add_operation_routes(router, THREAD_OPERATIONS, _run_thread)
