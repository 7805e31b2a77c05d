"""``/v1/graph``: the temporal knowledge graph, profile and timeline of a scope of the caller's
tenant.

Each body is a request value of :mod:`remem.graph.requests` (the OpenAPI schema), run on
``Memory.graph(user_id=..., agent_id=...)`` of the tenant's memory; each answer is the Python
API's own value (:mod:`remem.graph.types`; a list in an envelope). The graph lives under the
tenant's prefix, so another tenant's key sees none of it (an entity id from elsewhere is
404). Errors map as everywhere: a bad field 422, an unknown entity 404, an ingest without a
server model 400.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi import Request as HttpRequest
from mcp.server.mcpserver import Context, MCPServer

from remem.errors import UnsupportedError
from remem.graph.profile import Profile
from remem.graph.requests import (
    EntityRequest,
    ExpandRequest,
    FactHitsOut,
    GraphRequest,
    IngestEpisodeRequest,
    PatchProfileRequest,
    ProfileChangesOut,
    ProfileRequest,
    SearchFactsRequest,
    TimelineOut,
    TimelineRequest,
    dump_result,
    run_graph_request,
)
from remem.graph.types import EntityPage, IngestResult
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, MODEL_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.state import Principal, ServerState

__all__ = ["router"]

router = APIRouter(prefix="/v1/graph", tags=["graph"], responses=ERROR_RESPONSES)


async def _run(http: HttpRequest, who: Principal, request: GraphRequest, *,
               waits_on_llm: bool = False) -> dict[str, Any]:
    state = server_state(http)
    memory = state.memory_for(who)

    def run() -> dict[str, Any]:
        graph = memory.graph(user_id=request.user_id, agent_id=request.agent_id)
        return dump_result(request, run_graph_request(graph, request))

    result: dict[str, Any] = await state.run(run, waits_on_llm=waits_on_llm)
    return result


@router.post("/episodes", response_model=IngestResult, summary="Ingest an episode",
             responses=MODEL_RESPONSES)
async def ingest_episode(body: IngestEpisodeRequest, who: Writer,
                         http: HttpRequest) -> dict[str, Any]:
    """Learn entities, facts, profile changes and events from one episode with the server's
    model (one call; two when a name is ambiguous). 400 when the server has no model."""
    if server_state(http).config.llm is None:
        raise UnsupportedError("ingesting an episode needs an LLM and this server has none "
                               "configured: start it with REMEM_LLM_* set")
    return await _run(http, who, body, waits_on_llm=True)


@router.post("/search", response_model=FactHitsOut, summary="Search facts")
async def search_facts(body: SearchFactsRequest, who: Reader,
                       http: HttpRequest) -> dict[str, Any]:
    """Facts for ``query`` (keywords, meaning, graph distance), best first; ``as_of``: true
    then; ``known_at``: as known then. Each hit has its path and validity interval."""
    return await _run(http, who, body)


@router.post("/entity", response_model=EntityPage, summary="Read an entity's page")
async def get_entity(body: EntityRequest, who: Reader, http: HttpRequest) -> dict[str, Any]:
    """The entity (by id, name or alias), its current facts and its fact timeline (404 if
    none; 422 when a name fits several entities, naming their ids)."""
    return await _run(http, who, body)


@router.post("/expand", response_model=FactHitsOut, summary="Facts around an entity")
async def expand_entity(body: ExpandRequest, who: Reader, http: HttpRequest) -> dict[str, Any]:
    """Every fact within ``hops`` of the entity, nearest first, with its path."""
    return await _run(http, who, body)


@router.post("/profile", response_model=Profile, summary="Read a user's profile")
async def get_profile(body: ProfileRequest, who: Reader, http: HttpRequest) -> dict[str, Any]:
    """The user's profile: topic -> sub-topic -> value (``as_of``: as it stood then)."""
    return await _run(http, who, body)


@router.patch("/profile", response_model=ProfileChangesOut, summary="Edit a user's profile")
async def patch_profile(body: PatchProfileRequest, who: Writer,
                        http: HttpRequest) -> dict[str, Any]:
    """Apply JSON Patch operations (add / replace / remove on ``/topic/sub_topic``), checked
    against the profile's schema; answers the changes recorded."""
    return await _run(http, who, body)


@router.post("/timeline", response_model=TimelineOut, summary="Read a user's timeline")
async def get_timeline(body: TimelineRequest, who: Reader, http: HttpRequest) -> dict[str, Any]:
    """Dated events of the user's life with ``since <= happened_at < until``, by time."""
    return await _run(http, who, body)


# -- MCP tools ----------------------------------------------------------------------------------

_TOOLS: tuple[tuple[str, type[GraphRequest], bool, str], ...] = (
    ("search_facts", SearchFactsRequest, False,
     "Facts about people, places and organisations for a query, best first, each with the "
     "time it held (valid_at .. invalid_at) and its path from the entity the query names; "
     "as_of: what was true then, known_at: what was known then."),
    ("get_entity", EntityRequest, False,
     "An entity (by name, alias or id): its current facts and the timeline of every fact "
     "about it, ended ones included."),
    ("get_profile", ProfileRequest, False,
     "The user's profile: topics (basic_info, work, interests, ...) and their values."),
    ("get_timeline", TimelineRequest, False,
     "Dated events of the user's life (since <= time < until), optionally by tag."),
)
#: served only when the server has a model to ingest with
_INGEST_TOOL = ("ingest_episode", IngestEpisodeRequest, True,
                "Learn from an episode (text or messages): the people, places and facts it "
                "states, the user's profile changes and dated events.")


def add_graph_tools(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the graph MCP tools to ``server`` (``ingest_episode`` only with a model); ``run``
    acts for the caller (it refuses writes for read-only keys)."""
    def on_graph(request: GraphRequest, ctx: Context | None) -> Work:
        def work(who: Principal) -> dict[str, Any]:
            graph = state.memory_for(who).graph(user_id=request.user_id,
                                                agent_id=request.agent_id)
            return dump_result(request, run_graph_request(graph, request))
        return work

    def ingests(request: GraphRequest) -> bool:  # the one tool that calls the model
        return isinstance(request, IngestEpisodeRequest)

    tools = (*_TOOLS, *((_INGEST_TOOL,) if state.config.llm is not None else ()))
    for name, model, writes, description in tools:
        add_request_tool(server, run, McpTool(name, model, writes, description), on_graph,
                         waits_on_llm=ingests)
