"""The block operations, one row each (:class:`remem.operations.Operation`): the table the
``/v1/blocks`` and ``/v1/agents/{agent_id}/blocks`` routes (:mod:`remem.server.routes_blocks`,
by the router builder), ``client.blocks`` (:mod:`remem.blocks.remote`), the application's MCP
block tools and the blocks' parity tests read.

Each row's answer is its request's result model (:data:`remem.blocks.requests.RESULT_MODELS`).
Route names are the endpoints' from before the rows, so are the OpenAPI operation ids; a
block's ``id`` is ``{block_id}`` in the paths (``renamed``), and the agent an edit acts for is
a query parameter (``query``). The MCP tools are served on request (``build_mcp(block_admin=
True)``): they change read-only blocks too, so they are for the application, not an agent
(whose tools, ``core_memory_append`` and the rest, are :mod:`remem.tools.blocks`').
"""

from __future__ import annotations

from remem.blocks.requests import (
    RESULT_MODELS,
    AgentAppendRequest,
    AgentBlocksRequest,
    AgentReplaceRequest,
    AgentRethinkRequest,
    AttachBlockRequest,
    BlockHistoryRequest,
    ChangeBlockRequest,
    CreateBlockRequest,
    DeleteBlockRequest,
    DetachBlockRequest,
    GetBlockRequest,
    ListBlocksRequest,
    RenderBlocksRequest,
)
from remem.operations import HttpMethod, McpToolRow, Operation, Route
from remem.requests import Request

__all__ = ["BLOCK_OPERATIONS"]

_BLOCK = "/v1/blocks/{block_id}"
_AGENT_BLOCK = "/v1/agents/{agent_id}/blocks/{block_id}"
_ID = (("block_id", "id"),)


def _row(request: type[Request], method: HttpMethod, path: str, name: str, summary: str,
         description: str, *, writes: bool, python: str, tool: McpToolRow | None = None,
         part: str | None = None, query: tuple[str, ...] = (),
         renamed: tuple[tuple[str, str], ...] = (), status: int = 200,
         command: str | None = None) -> Operation:
    return Operation(request, RESULT_MODELS[request], writes=writes, tool=tool, python=python,
                     command=command,
                     route=Route(method, path, name, summary, description, part=part,
                                 query=query, renamed=renamed, status=status))


def _tool(name: str, description: str) -> McpToolRow:
    return McpToolRow(name, description, on_request=True)


def _edit(request: type[Request], name: str, description: str) -> Operation:
    """An agent's edit: the block tool's request in the body, the agent in the query."""
    return _row(request, "POST", f"/v1/blocks/{name}", name, request.operation, description,
                writes=True, python=name, part="".join(w.title() for w in
                                                      request.operation.split("_")),
                query=("agent_id",))


BLOCK_OPERATIONS: tuple[Operation, ...] = (
    _row(ListBlocksRequest, "GET", "/v1/blocks", "list_blocks", "List blocks",
         "Every block of the tenant, by id (or those ``agent_id`` sees).", writes=False,
         python="list_blocks", command="blocks list",
         tool=_tool("list_blocks", "List the core memory blocks (of one agent, in prompt "
                                   "order, with agent_id).")),
    _row(GetBlockRequest, "GET", _BLOCK, "get_block", "Read a block",
         "The block, with its etag.", writes=False, python="get", renamed=_ID,
         command="blocks get",
         tool=_tool("get_block", "Read one core memory block, with its etag.")),
    _row(CreateBlockRequest, "POST", "/v1/blocks", "create_block", "Create a block",
         "A new block (409 if the id is taken).", writes=True, python="create", status=201,
         command="blocks create",
         tool=_tool("create_block", "Create a core memory block.")),
    _row(ChangeBlockRequest, "PATCH", _BLOCK, "update_block", "Change a block",
         "Change the given fields (read-only blocks too; 409 if ``etag`` is stale).",
         command="blocks update", writes=True, python="update", renamed=_ID,
         tool=_tool("update_block", "Change a block's value, limit, description or "
                                    "read-only flag (read-only blocks too).")),
    _row(DeleteBlockRequest, "DELETE", _BLOCK, "delete_block", "Delete a block",
         "Delete the block; agents it was attached to no longer see it.", writes=True,
         python="delete", renamed=_ID, command="blocks delete",
         tool=_tool("delete_block", "Delete a block (agents stop seeing it).")),
    _row(AttachBlockRequest, "PUT", _AGENT_BLOCK, "attach", "Attach a block to an agent",
         "Show the block to the agent (after its others); 422 if the agent already has a "
         "block\nwith that label. Attaching a block to several agents shares it.",
         command="blocks attach", writes=True, python="attach",
         tool=_tool("attach_block", "Show a block to an agent; a block attached to several "
                                    "agents is shared.")),
    _row(DetachBlockRequest, "DELETE", _AGENT_BLOCK, "detach", "Detach a block",
         "Stop showing the block to the agent (the block stays).", writes=True,
         python="detach", command="blocks detach",
         tool=_tool("detach_block", "Stop showing a block to an agent.")),
    _row(RenderBlocksRequest, "GET", "/v1/blocks/render", "render_blocks",
         "An agent's blocks as its system prompt shows them",
         "The rendered blocks, their token count and what did not fit ``budget``.",
         writes=False, python="render"),
    _row(BlockHistoryRequest, "GET", _BLOCK + "/history", "block_history", "A block's history",
         "Every change of the block, oldest first (``before`` / ``after`` are its JSON).",
         writes=False, python="history", renamed=_ID),
    _row(AgentBlocksRequest, "GET", "/v1/agents/{agent_id}/blocks", "agent_blocks",
         "The blocks an agent sees", "The agent's blocks, in the order its prompt shows them.",
         writes=False, python="blocks_of"),
    _edit(AgentAppendRequest, "append",
          "Append a line to the agent's block ``label`` (422 past its limit, 403 read-only)."),
    _edit(AgentReplaceRequest, "replace", "Replace exact text in the agent's block ``label``."),
    _edit(AgentRethinkRequest, "rethink", "Rewrite the agent's block ``label``."),
)
"""Every block request's row: the application's tools' first (MCP lists them in this order),
then the other routes and the agent's edits."""
