"""The graph operations, one row each (:class:`remem.operations.Operation`): the table the
``/v1/graph`` routes and MCP tools (:mod:`remem.server.routes_graph`), ``client.graph(...)``
(:mod:`remem.graph.remote`) and the graph's parity tests read.

Every route is a ``POST`` (or the ``PATCH`` of the profile) whose body is the request; the
route names are the endpoints' (so are the OpenAPI operation ids); ``python`` is the method
of :class:`~remem.graph.Graph` and :class:`~remem.graph.remote.RemoteGraph` (the request's
``operation``). The MCP tools are served when the server is asked for the graph's, and
``ingest_episode`` (the row that calls the model) only when the server has a model. No row
names a CLI command: ``remem graph`` works on a database file, not on these requests.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from remem.graph.requests import (
    EntityRequest,
    ExpandRequest,
    GraphRequest,
    IngestEpisodeRequest,
    PatchProfileRequest,
    ProfileRequest,
    SearchFactsRequest,
    TimelineRequest,
)
from remem.graph.wire import (
    EntityPageOut,
    FactHitsOut,
    IngestResultOut,
    ProfileChangesOut,
    ProfileOut,
    TimelineOut,
)
from remem.operations import HttpMethod, McpToolRow, Operation, Route

__all__ = ["GRAPH_OPERATIONS"]


def _row(request: type[GraphRequest[Any]], result: type[BaseModel], method: HttpMethod,
         path: str, name: str, summary: str, description: str, *, writes: bool = False,
         tool: str | None = None, calls_model: bool = False,
         command: str | None = None) -> Operation:
    return Operation(request, result, writes=writes, command=command,
                     route=Route(method, "/v1/graph" + path, name, summary, description),
                     tool=McpToolRow(name, tool, on_request=True) if tool else None,
                     python=request.operation, calls_model=calls_model)


GRAPH_OPERATIONS: tuple[Operation, ...] = (
    _row(IngestEpisodeRequest, IngestResultOut, "POST", "/episodes", "ingest_episode",
         "Ingest an episode",
         "Learn entities, facts, profile changes and events from one episode with the "
         "server's\nmodel (one call; two when a name is ambiguous). 400 when the server has "
         "no model.", writes=True, calls_model=True,
         tool="Learn from an episode (text or messages): the people, places and facts it "
              "states, the user's profile changes and dated events."),
    _row(SearchFactsRequest, FactHitsOut, "POST", "/search", "search_facts", "Search facts",
         "Facts for ``query`` (keywords, meaning, graph distance), best first; ``as_of``: "
         "true\nthen; ``known_at``: as known then. Each hit has its path and validity "
         "interval.", command="graph search",
         tool="Facts about people, places and organisations for a query, best first, each "
              "with the time it held (valid_at .. invalid_at) and its path from the entity "
              "the query names; as_of: what was true then, known_at: what was known then."),
    _row(EntityRequest, EntityPageOut, "POST", "/entity", "get_entity",
         "Read an entity's page",
         "The entity (by id, name or alias), its current facts and its fact timeline (404 "
         "if\nnone; 422 when a name fits several entities, naming their ids).",
         command="graph entity",
         tool="An entity (by name, alias or id): its current facts and the timeline of every "
              "fact about it, ended ones included."),
    _row(ExpandRequest, FactHitsOut, "POST", "/expand", "expand_entity",
         "Facts around an entity",
         "Every fact within ``hops`` of the entity, nearest first, with its path."),
    _row(ProfileRequest, ProfileOut, "POST", "/profile", "get_profile",
         "Read a user's profile",
         "The user's profile: topic -> sub-topic -> value (``as_of``: as it stood then).",
         tool="The user's profile: topics (basic_info, work, interests, ...) and their "
              "values."),
    _row(PatchProfileRequest, ProfileChangesOut, "PATCH", "/profile", "patch_profile",
         "Edit a user's profile",
         "Apply JSON Patch operations (add / replace / remove on ``/topic/sub_topic``), "
         "checked\nagainst the profile's schema; answers the changes recorded.", writes=True),
    _row(TimelineRequest, TimelineOut, "POST", "/timeline", "get_timeline",
         "Read a user's timeline",
         "Dated events of the user's life with ``since <= happened_at < until``, by time.",
         tool="Dated events of the user's life (since <= time < until), optionally by tag."),
)
"""Every graph request's row, in the order the routes were declared."""
