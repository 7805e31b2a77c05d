"""``/v1/store``: the raw long-term store of the caller's tenant (items, search, counts,
namespaces).

The routes are built from the store's operation table
(:data:`~remem.raw_store.operation_table.STORE_OPERATIONS`) by the router builder
(:mod:`remem.server.operation_routes`): each takes its request value (the body, or the query)
and answers with the row's result model; ``client.store`` sends the same rows.

The one handler runs each request on the store of :meth:`ServerState.raw_store_for`, a
:class:`~remem.store.guarded.GuardedStore`: a write under a family's root (memories, files,
approvals, blocks, prompts, episodes, graph, threads, remem's ``_remem`` bookkeeping) is a
403 ``reserved_namespace`` naming the family's API, and so is a read of files or approvals
unless the key is an admin key; a search, count or listing over every root leaves those out
(see :mod:`remem.store.reserved` for the table)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi import Request as HttpRequest

from remem.raw_store.operation_table import STORE_OPERATIONS
from remem.raw_store.requests import StoreRequest
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.operation_routes import add_operation_routes
from remem.server.state import Principal

__all__ = ["router"]

router = APIRouter(tags=["store"], responses=ERROR_RESPONSES)


async def _run_store(http: HttpRequest, who: Principal, request: StoreRequest[Any]) -> Any:
    """Run ``request`` on the caller's guarded raw store."""
    state = server_state(http)
    store = state.raw_store_for(who)
    return await state.run(lambda: request.run_on(store))


add_operation_routes(router, STORE_OPERATIONS, _run_store)
