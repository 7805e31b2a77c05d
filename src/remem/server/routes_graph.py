"""``/v1/graph``: the temporal knowledge graph, profile and timeline of a scope of the caller's
tenant, over HTTP and MCP.

The routes and tools are the rows of :data:`remem.graph.operation_table.GRAPH_OPERATIONS`,
made by the router builder (:mod:`remem.server.operation_routes`) and the MCP registrar
(:mod:`remem.server.mcp_registrar`): each takes one request of :mod:`remem.graph.requests`
(the body is the request), run on ``Memory.graph(user_id=..., agent_id=...)`` of the tenant's
memory; each answer is the Python API's own value (:mod:`remem.graph.wire`). The graph lives
under the tenant's prefix, so another tenant's key sees none of it (an entity id from
elsewhere is 404). Errors map as everywhere: a bad field 422, an unknown entity 404, an
ingest without a server model 400.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi import Request as HttpRequest
from mcp.server.mcpserver import Context, MCPServer

from remem.errors import UnsupportedError
from remem.graph.operation_table import GRAPH_OPERATIONS
from remem.graph.requests import GraphRequest, IngestEpisodeRequest
from remem.operations import row_of
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.operation_routes import add_operation_routes
from remem.server.state import Principal, ServerState

__all__ = ["router"]

router = APIRouter(tags=["graph"], responses=ERROR_RESPONSES)


def _run_on(memory: Any, request: GraphRequest[Any]) -> Any:
    """``request`` run on the graph of its scope of ``memory``."""
    return request.run_on(memory.graph(user_id=request.user_id, agent_id=request.agent_id))


def _ingests(request: GraphRequest[Any]) -> bool:
    """Whether ``request`` calls the server's model (an ingest, the one that does)."""
    return isinstance(request, IngestEpisodeRequest)


async def _run_graph(http: HttpRequest, who: Principal, request: GraphRequest[Any]) -> Any:
    """Run ``request`` on the tenant's graph in a worker thread. Ingesting extracts with the
    server's model: refused (400) when it has none."""
    state = server_state(http)
    if _ingests(request) and state.config.llm is None:
        raise UnsupportedError("ingesting an episode needs an LLM and this server has none "
                               "configured: start it with REMEM_LLM_* set")
    memory = state.memory_for(who)
    return await state.run(lambda: _run_on(memory, request), waits_on_llm=_ingests(request))


add_operation_routes(router, GRAPH_OPERATIONS, _run_graph)


def add_graph_tools(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the graph's MCP tools (its rows') to ``server``, a row that calls the model
    (``ingest_episode``) only when the server has one; ``run`` acts for the caller (it
    refuses writes for read-only keys)."""
    def on_graph(request: GraphRequest[Any], ctx: Context | None) -> Work:
        row = row_of(GRAPH_OPERATIONS, type(request))
        return lambda who: row.answer(_run_on(state.memory_for(who), request)).model_dump(
            mode="json")

    # the model's tool last: the list starts the same with a model or without
    for row in sorted(GRAPH_OPERATIONS, key=lambda row: row.calls_model):
        if row.tool is not None and (state.config.llm is not None or not row.calls_model):
            add_request_tool(server, run, McpTool.of(row), on_graph, waits_on_llm=_ingests)
