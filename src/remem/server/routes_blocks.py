"""``/v1/blocks`` and ``/v1/agents/{agent_id}/blocks``: core memory blocks in the caller's
tenant (kept as files under the store namespace ``("blocks",)`` of the tenant's scoped store,
where the MCP block tools and :class:`~remem.blocks.Blocks` on that layout find them).

The application's API manages blocks: create, list, read, change (read-only blocks
included), delete, history, and attach / detach them to agents (a block
attached to several agents is shared: an edit by one is what the others see next). The
agent's edits (``core_memory_append``, ``core_memory_replace``, ``memory_rethink``) take the
block tools' request values and act on the agent's block by label; they refuse a read-only
block with a 403 ``read_only`` (change it with ``PATCH /v1/blocks/{id}`` instead), an edit
past the limit with a 422 naming the overflow, and a stale etag with a 409.

``GET /v1/blocks/render`` is the rendered prompt section, so ``render`` is the one block id
the single-block routes cannot reach with ``GET``.

The routes and the application's MCP block tools are the rows of
:data:`remem.blocks.operation_table.BLOCK_OPERATIONS` (the router builder,
:mod:`remem.server.operation_routes`, and the MCP registrar make them); both run a request
with :func:`~remem.blocks.requests.run_block_request` on the tenant's blocks.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi import Request as HttpRequest
from mcp.server.mcpserver import Context, MCPServer

from remem.blocks import Blocks
from remem.blocks.operation_table import BLOCK_OPERATIONS
from remem.blocks.requests import AnyBlockRequest, run_block_request
from remem.errors import ReadOnlyError
from remem.files import StoreFileBackend
from remem.operations import Operation
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.operation_routes import add_operation_routes
from remem.server.state import Principal, ServerState
from remem.store.reserved import BLOCKS

__all__ = ["add_block_admin_tools", "blocks_for", "router"]

router = APIRouter(tags=["blocks"], responses={
    **ERROR_RESPONSES,
    403: {"description": "a read-only key used for a write, or an agent edit of a read-only "
                         "block (`read_only`)"},
})


def blocks_for(store: Any) -> Blocks:
    """The blocks of a tenant's scoped ``store`` (the layout the server and MCP share)."""
    return Blocks(StoreFileBackend(store, (BLOCKS,)))


async def _run_block(http: HttpRequest, who: Principal, request: AnyBlockRequest) -> Any:
    """Run ``request`` on the tenant's blocks in a worker thread, as ``api:<tenant>``."""
    state = server_state(http)
    blocks = blocks_for(state.store_for(who))
    try:
        return await state.run(lambda: run_block_request(blocks, request,
                                                         actor=f"api:{who.tenant}"))
    except ReadOnlyError as exc:  # the agent may not edit it; the application may
        raise ReadOnlyError(f"{exc} (the application can change it with "
                            "PATCH /v1/blocks/{id})") from None


add_operation_routes(router, BLOCK_OPERATIONS, _run_block)


def add_block_admin_tools(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the application's block tools (``list_blocks``, ``get_block``, ``create_block``,
    ``update_block``, ``delete_block``, ``attach_block``, ``detach_block``: the rows with a
    tool) to MCP ``server``, on the caller's tenant's blocks (where ``/v1/blocks`` keeps
    them), answering what the routes answer. They can change read-only blocks, so they are
    for the application's own MCP client, not an agent's toolset; ``run`` acts for the caller
    (refusing writes for read-only keys)."""
    for row in BLOCK_OPERATIONS:
        if row.tool is None:
            continue

        def administer(request: Any, ctx: Context | None, row: Operation = row) -> Work:
            return lambda who: row.answer(run_block_request(
                blocks_for(state.store_for(who)), request,
                actor=f"mcp:{who.tenant}")).model_dump(mode="json", by_alias=True)

        add_request_tool(server, run, McpTool.of(row), administer)
