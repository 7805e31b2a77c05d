"""``/v1/memories``: the :class:`~remem.api.Memory` facade of the caller's tenant.

Each tenant gets its own ``Memory`` over its scoped store, so ids, history, undo and locks
are confined to the tenant like everything else. The routes are built from the operation
tables (:data:`~remem.memory.operation_table.MEMORY_OPERATIONS`, and context assembly's
:data:`~remem.context.operation_table.CONTEXT_OPERATIONS`) by the router builder
(:mod:`remem.server.operation_routes`): each takes its request value (the body, or the path's
id and the query), and answers with the row's result model.

What the rows cannot say is here, in the two handlers: the server records the caller's key as
the ``actor`` of changes (``key:<id>``), whatever the body says; an add left to decide
whether to extract does so when the server has a chat model (and then waits on it); context
assembly reads the caller's threads as well as their memory.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi import Request as HttpRequest

from remem.context.assemble import ContextRequest, assemble
from remem.context.operation_table import CONTEXT_OPERATIONS
from remem.memory.operation_table import MEMORY_OPERATIONS
from remem.memory.requests import AddRequest, MemoryRequest
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.operation_routes import add_operation_routes
from remem.server.state import Principal

__all__ = ["router"]

router = APIRouter(tags=["memories"], responses=ERROR_RESPONSES)


def _actor(who: Principal) -> str:
    return f"key:{who.key_id}" if who.key_id else "user"


async def _run_memory(http: HttpRequest, who: Principal, request: MemoryRequest[Any]) -> Any:
    """Run ``request`` on the caller's tenant, changes recorded as the caller's."""
    state = server_state(http)
    if "actor" in type(request).model_fields:
        request = request.model_copy(update={"actor": _actor(who)})
    waits_on_llm = False
    if isinstance(request, AddRequest):  # infer left out: extract when there is a model
        request = request.with_model(state.config.llm is not None)
        waits_on_llm = bool(request.infer)
    memory = state.memory_for(who)
    return await state.run(lambda: memory.run(request), waits_on_llm=waits_on_llm)


async def _assemble_context(http: HttpRequest, who: Principal, request: ContextRequest) -> Any:
    """The context of the caller's memory and threads."""
    state = server_state(http)
    memory, threads = state.memory_for(who), state.threads_for(who)
    return await state.run(lambda: assemble(memory, request, threads))


add_operation_routes(router, MEMORY_OPERATIONS, _run_memory)
add_operation_routes(router, CONTEXT_OPERATIONS, _assemble_context)
