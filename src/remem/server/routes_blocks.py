"""``/v1/blocks`` and ``/v1/agents/{agent_id}/blocks``: core memory blocks in the caller's
tenant (kept as files under the store namespace ``("blocks",)`` of the tenant's scoped store,
where the MCP block tools and :class:`~remem.blocks.Blocks` on that layout find them).

The application's API manages blocks: create (:class:`~remem.blocks.requests.
CreateBlockRequest`), list, read, change (:class:`~remem.blocks.requests.UpdateBlockRequest`,
read-only blocks included), delete, history, and attach / detach them to agents (a block
attached to several agents is shared: an edit by one is what the others see next). The
agent's edits (``core_memory_append``, ``core_memory_replace``, ``memory_rethink``) take the
block tools' request values and act on the agent's block by label; they refuse a read-only
block with a 403 ``read_only`` (change it with ``PATCH /v1/blocks/{id}`` instead), an edit
past the limit with a 422 naming the overflow, and a stale etag with a 409.

``GET /v1/blocks/render`` is the rendered prompt section, so ``render`` is the one block id
the single-block routes cannot reach with ``GET``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from mcp.server.mcpserver import Context, MCPServer

from remem.blocks import Block, Blocks
from remem.blocks.requests import (
    AppendRequest,
    CreateBlockRequest,
    ReplaceRequest,
    RethinkRequest,
    UpdateBlockRequest,
    run_block_admin,
)
from remem.errors import ReadOnlyError
from remem.files import StoreFileBackend
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, error_response
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.schemas import Label
from remem.server.state import Principal, ServerState
from remem.store.reserved import BLOCKS

__all__ = ["add_block_admin_tools", "blocks_for", "router"]

router = APIRouter(tags=["blocks"], responses={
    **ERROR_RESPONSES,
    403: {"description": "a read-only key used for a write, or an agent edit of a read-only "
                         "block (`read_only`)"},
})

AgentQuery = Annotated[Label, Query(description="the agent whose blocks are edited")]
AgentPath = Annotated[Label, Path(description="an agent id")]
BlockPath = Annotated[Label, Path(description="a block id")]


def blocks_for(store: Any) -> Blocks:
    """The blocks of a tenant's scoped ``store`` (the layout the server and MCP share)."""
    return Blocks(StoreFileBackend(store, (BLOCKS,)))


async def _do(request: Request, who: Principal, work: Callable[[Blocks], Any],
              status: int = 200) -> Any:
    state = server_state(request)
    blocks = blocks_for(state.store_for(who))
    try:
        result = await state.run(lambda: work(blocks))
    except ReadOnlyError as exc:  # the agent may not edit it; the application may
        return error_response(403, "read_only", f"{exc} (the application can change it with "
                                                "PATCH /v1/blocks/{id})")
    if isinstance(result, Block):
        result = result.to_dict()
    return JSONResponse(result, status_code=status) if status != 200 else result


def _actor(who: Principal) -> str:
    return f"api:{who.tenant}"


# -- the application's API --------------------------------------------------------------------

@router.get("/v1/blocks", summary="List blocks")
async def list_blocks(who: Reader, request: Request) -> Any:
    """Every block of the tenant, by id."""
    return await _do(request, who, lambda b: {"blocks": [x.to_dict() for x in
                                                         b.list_blocks()]})


@router.post("/v1/blocks", summary="Create a block", status_code=201)
async def create_block(body: CreateBlockRequest, who: Writer, request: Request) -> Any:
    """A new block (409 if the id is taken)."""
    return await _do(request, who, lambda b: b.create(
        body.id, label=body.label, value=body.value, limit=body.limit,
        description=body.description, read_only=body.read_only, actor=_actor(who)),
        status=201)


@router.get("/v1/blocks/render", summary="An agent's blocks as its system prompt shows them")
async def render_blocks(agent_id: AgentQuery, who: Reader, request: Request,
                        budget: Annotated[int | None, Query(ge=1, le=1_000_000)] = None) -> Any:
    """The rendered blocks, their token count and what did not fit ``budget``."""
    return await _do(request, who, lambda b: b.render(agent_id, budget=budget).to_dict())


@router.get("/v1/blocks/{block_id}", summary="Read a block")
async def get_block(block_id: BlockPath, who: Reader, request: Request) -> Any:
    """The block, with its etag."""
    return await _do(request, who, lambda b: b.get(block_id))


@router.patch("/v1/blocks/{block_id}", summary="Change a block")
async def update_block(block_id: BlockPath, body: UpdateBlockRequest, who: Writer,
                       request: Request) -> Any:
    """Change the given fields (read-only blocks too; 409 if ``etag`` is stale)."""
    return await _do(request, who, lambda b: b.update(
        block_id, value=body.value, limit=body.limit, description=body.description,
        read_only=body.read_only, etag=body.etag, actor=_actor(who)))


@router.delete("/v1/blocks/{block_id}", summary="Delete a block")
async def delete_block(block_id: BlockPath, who: Writer, request: Request) -> Any:
    """Delete the block; agents it was attached to no longer see it."""
    def work(blocks: Blocks) -> Any:
        blocks.get(block_id)  # a 404 naming the block, not a file path
        blocks.delete(block_id)
        return {"deleted": block_id}

    return await _do(request, who, work)


@router.get("/v1/blocks/{block_id}/history", summary="A block's history")
async def block_history(block_id: BlockPath, who: Reader, request: Request) -> Any:
    """Every change of the block, oldest first (``before`` / ``after`` are its JSON)."""
    def work(blocks: Blocks) -> Any:
        blocks.get(block_id)
        return [e.to_value() for e in blocks.history(block_id)]

    return await _do(request, who, work)


@router.get("/v1/agents/{agent_id}/blocks", summary="The blocks an agent sees")
async def agent_blocks(agent_id: AgentPath, who: Reader, request: Request) -> Any:
    """The agent's blocks, in the order its prompt shows them."""
    return await _do(request, who, lambda b: {"blocks": [x.to_dict() for x in
                                                         b.blocks_of(agent_id)]})


@router.put("/v1/agents/{agent_id}/blocks/{block_id}", summary="Attach a block to an agent")
async def attach(agent_id: AgentPath, block_id: BlockPath, who: Writer,
                 request: Request) -> Any:
    """Show the block to the agent (after its others); 422 if the agent already has a block
    with that label. Attaching a block to several agents shares it."""
    def work(blocks: Blocks) -> Any:
        blocks.attach(agent_id, block_id)
        return {"agent_id": agent_id, "blocks": blocks.attached(agent_id)}

    return await _do(request, who, work)


@router.delete("/v1/agents/{agent_id}/blocks/{block_id}", summary="Detach a block")
async def detach(agent_id: AgentPath, block_id: BlockPath, who: Writer,
                 request: Request) -> Any:
    """Stop showing the block to the agent (the block stays)."""
    def work(blocks: Blocks) -> Any:
        blocks.detach(agent_id, block_id)
        return {"agent_id": agent_id, "blocks": blocks.attached(agent_id)}

    return await _do(request, who, work)


# -- the agent's edits (the block tools) ------------------------------------------------------

@router.post("/v1/blocks/append", summary="core_memory_append")
async def append(body: AppendRequest, agent_id: AgentQuery, who: Writer,
                 request: Request) -> Any:
    """Append a line to the agent's block ``label`` (422 past its limit, 403 read-only)."""
    return await _do(request, who, lambda b: b.append(agent_id, body.label, body.content,
                                                      actor=_actor(who)))


@router.post("/v1/blocks/replace", summary="core_memory_replace")
async def replace(body: ReplaceRequest, agent_id: AgentQuery, who: Writer,
                  request: Request) -> Any:
    """Replace exact text in the agent's block ``label``."""
    return await _do(request, who, lambda b: b.replace(
        agent_id, body.label, body.old_content, body.new_content, actor=_actor(who)))


@router.post("/v1/blocks/rethink", summary="memory_rethink")
async def rethink(body: RethinkRequest, agent_id: AgentQuery, who: Writer,
                  request: Request) -> Any:
    """Rewrite the agent's block ``label``."""
    return await _do(request, who, lambda b: b.rethink(agent_id, body.label, body.new_memory,
                                                       actor=_actor(who)))


# -- MCP: the application's block tools ---------------------------------------------------------

def _admin_tools() -> dict[str, tuple[type[Any], str]]:
    from remem.blocks import requests as r

    return {
        "list_blocks": (r.ListBlocksRequest, "List the core memory blocks (of one agent, in "
                                             "prompt order, with agent_id)."),
        "get_block": (r.GetBlockRequest, "Read one core memory block, with its etag."),
        "create_block": (r.CreateBlockRequest, "Create a core memory block."),
        "update_block": (r.ChangeBlockRequest, "Change a block's value, limit, description or "
                                               "read-only flag (read-only blocks too)."),
        "delete_block": (r.DeleteBlockRequest, "Delete a block (agents stop seeing it)."),
        "attach_block": (r.AttachBlockRequest, "Show a block to an agent; a block attached to "
                                               "several agents is shared."),
        "detach_block": (r.DetachBlockRequest, "Stop showing a block to an agent."),
    }


def add_block_admin_tools(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the application's block tools (``list_blocks``, ``get_block``, ``create_block``,
    ``update_block``, ``delete_block``, ``attach_block``, ``detach_block``) to MCP
    ``server``, on the caller's tenant's blocks (where ``/v1/blocks`` keeps them). They can
    change read-only blocks, so they are for the application's own MCP client, not an
    agent's toolset; ``run`` acts for the caller (refusing writes for read-only keys)."""
    def administer(request: Any, ctx: Context | None) -> Work:
        return lambda who: run_block_admin(blocks_for(state.store_for(who)), request,
                                           actor=f"mcp:{who.tenant}")

    reads = {"list_blocks", "get_block"}
    for name, (model, description) in _admin_tools().items():
        add_request_tool(server, run, McpTool(name, model, name not in reads, description),
                         administer)
