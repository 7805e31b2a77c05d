"""The graph's operations as values: what HTTP, MCP and ``remem.Client`` send.

Each request names its scope (``user_id`` / ``agent_id``, as :meth:`remem.api.Memory.graph`
takes them) and the arguments of one :class:`~remem.graph.Graph` method;
:func:`run_graph_request` runs it on the graph of that scope and :func:`dump_result` turns
the answer into JSON values (the answer types themselves describe them in the OpenAPI
schema) and :func:`load_result` reads them back into the same values the Python API returns, so
``client.graph(user_id=...)`` answers as ``mem.graph(user_id=...)`` does.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, TypeAdapter, model_validator

from remem.graph.profile import Profile, ProfileChange, TimelineEvent, XPatch
from remem.graph.types import EntityPage, FactHit, IngestResult
from remem.requests import Limit, Messages, Request, ScopeId, Timestamp

__all__ = ["EntityRequest", "ExpandRequest", "FactHitsOut", "GraphRequest",
           "IngestEpisodeRequest", "PatchProfileRequest", "ProfileChangesOut", "ProfileRequest",
           "SearchFactsRequest", "TimelineOut", "TimelineRequest", "dump_result", "load_result",
           "run_graph_request"]

Text = Annotated[str, Field(min_length=1, max_length=200_000)]
EntityRef = Annotated[int, Field(ge=1, le=2**62)] | Annotated[str, Field(min_length=1,
                                                                         max_length=200)]
Hops = Annotated[int, Field(ge=1, le=5)]


class GraphRequest(Request):
    """A graph operation on the graph of a scope."""

    operation: ClassVar[str] = ""
    user_id: ScopeId | None = Field(None, description="whose graph (a user id)")
    agent_id: ScopeId | None = Field(None, description="an agent id (with or without user_id)")


class IngestEpisodeRequest(GraphRequest):
    """Learn from one episode (one model call, two when a name is ambiguous)."""

    operation: ClassVar[str] = "ingest"
    text: Text | None = Field(None, description="the episode as text")
    messages: Messages | None = Field(None, description="or as chat messages (OpenAI-style)")
    event_at: Timestamp | None = Field(
        None, description="when it happened (epoch seconds; default: the latest message's "
                          "time, else now); relative dates are resolved against it")
    source_ids: list[Annotated[str, Field(max_length=256)]] = Field(
        default_factory=list, max_length=100, description="where it came from")

    @model_validator(mode="after")
    def _one_source(self) -> IngestEpisodeRequest:
        if (self.text is None) == (self.messages is None):
            raise ValueError("give exactly one of text and messages")
        if self.text is not None and not self.text.strip():
            raise ValueError("text is blank: give the episode's text")
        return self


class SearchFactsRequest(GraphRequest):
    """Facts for a query: keywords, meaning and graph distance, fused."""

    operation: ClassVar[str] = "search"
    query: Annotated[str, Field(min_length=1, max_length=10_000)] = Field(
        description="what to look for")
    limit: Limit = Field(10, description="most facts returned")
    as_of: Timestamp | None = Field(None, description="only facts true then (epoch seconds)")
    known_at: Timestamp | None = Field(None, description="as the graph knew them then")
    focal: EntityRef | None = Field(None, description="an entity (id or name) whose "
                                                      "neighbourhood seeds the graph signal")
    hops: Annotated[int, Field(ge=0, le=5)] = Field(2, description="how far expansion walks")
    rerank: Literal["fusion", "distance", "mmr"] = Field("fusion", description="final order")


class EntityRequest(GraphRequest):
    """An entity's page: its current facts and its fact timeline."""

    operation: ClassVar[str] = "entity"
    entity: EntityRef = Field(description="the entity's id or name (or alias)")
    as_of: Timestamp | None = Field(None, description="current at this time (default now)")


class ExpandRequest(GraphRequest):
    """Every fact within ``hops`` of an entity, nearest first."""

    operation: ClassVar[str] = "expand"
    entity: EntityRef = Field(description="the entity's id or name (or alias)")
    hops: Hops = Field(2, description="how far to walk")
    as_of: Timestamp | None = Field(None, description="only facts true then")
    known_at: Timestamp | None = Field(None, description="as the graph knew them then")


class ProfileRequest(GraphRequest):
    """The user's profile (topics and sub-topics)."""

    operation: ClassVar[str] = "profile"
    user_id: ScopeId = Field(description="whose profile")
    as_of: Timestamp | None = Field(None, description="the profile as it stood then")


class PatchProfileRequest(GraphRequest):
    """Change the profile by hand with JSON Patch operations on /topic/sub_topic."""

    operation: ClassVar[str] = "patch_profile"
    user_id: ScopeId = Field(description="whose profile")
    patch: list[XPatch] = Field(min_length=1, max_length=100,
                                description="add / replace / remove operations")


class TimelineRequest(GraphRequest):
    """Dated events of the user's timeline, ``since <= happened_at < until``."""

    operation: ClassVar[str] = "timeline"
    user_id: ScopeId = Field(description="whose timeline")
    since: Timestamp | None = Field(None, description="from this time (inclusive)")
    until: Timestamp | None = Field(None, description="to this time (exclusive)")
    tags: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=20, description="only events with one of these tags")


# -- answers --------------------------------------------------------------------------------
# The answers are the Python API's own values (dataclasses FastAPI documents and pydantic
# reads and writes); only lists get an envelope naming them.


class FactHitsOut(BaseModel):
    """Hits, best first."""

    hits: list[FactHit]


class ProfileChangesOut(BaseModel):
    """Recorded profile changes."""

    changes: list[ProfileChange]


class TimelineOut(BaseModel):
    """Events, by time."""

    events: list[TimelineEvent]


# -- running and (de)serialising --------------------------------------------------------------


def run_graph_request(graph: Any, request: GraphRequest) -> Any:
    """Run ``request`` on ``graph`` (the :class:`~remem.graph.Graph` of its scope)."""
    if isinstance(request, IngestEpisodeRequest):
        episode = request.text if request.text is not None else request.messages
        assert episode is not None
        return graph.ingest(episode, event_at=request.event_at, source_ids=request.source_ids)
    if isinstance(request, SearchFactsRequest):
        return graph.search(request.query, limit=request.limit, as_of=request.as_of,
                            known_at=request.known_at, focal=request.focal, hops=request.hops,
                            rerank=request.rerank)
    if isinstance(request, EntityRequest):
        return graph.entity(request.entity, as_of=request.as_of)
    if isinstance(request, ExpandRequest):
        return graph.expand(request.entity, hops=request.hops, as_of=request.as_of,
                            known_at=request.known_at)
    if isinstance(request, ProfileRequest):
        return graph.profile(as_of=request.as_of)
    if isinstance(request, PatchProfileRequest):
        return graph.patch_profile(request.patch)
    if isinstance(request, TimelineRequest):
        return graph.timeline(since=request.since, until=request.until, tags=request.tags)
    raise TypeError(f"not a graph request: {type(request).__name__}")


#: per request: the answer's type, and the envelope key a list answer goes under
_ANSWERS: dict[type[GraphRequest], tuple[Any, str | None]] = {
    IngestEpisodeRequest: (IngestResult, None), SearchFactsRequest: (list[FactHit], "hits"),
    EntityRequest: (EntityPage, None), ExpandRequest: (list[FactHit], "hits"),
    ProfileRequest: (Profile, None), PatchProfileRequest: (list[ProfileChange], "changes"),
    TimelineRequest: (list[TimelineEvent], "events"),
}
_ADAPTERS: dict[type[GraphRequest], TypeAdapter[Any]] = {
    kind: TypeAdapter(answer) for kind, (answer, _) in _ANSWERS.items()}

#: the response model of each request (what the route declares)
RESPONSE_MODELS: dict[type[GraphRequest], Any] = {
    IngestEpisodeRequest: IngestResult, SearchFactsRequest: FactHitsOut,
    EntityRequest: EntityPage, ExpandRequest: FactHitsOut, ProfileRequest: Profile,
    PatchProfileRequest: ProfileChangesOut, TimelineRequest: TimelineOut,
}


def _kind(request_type: type[GraphRequest]) -> type[GraphRequest]:
    if request_type not in _ANSWERS:
        raise TypeError(f"not a graph request: {request_type.__name__}")
    return request_type


def dump_result(request: GraphRequest, result: Any) -> dict[str, Any]:
    """The answer to ``request`` as JSON values (the response model's shape)."""
    kind = _kind(type(request))
    value = _ADAPTERS[kind].dump_python(result, mode="json")
    key = _ANSWERS[kind][1]
    return value if key is None else {key: value}


def load_result(request_type: type[GraphRequest], data: dict[str, Any]) -> Any:
    """Read an answer (:func:`dump_result`'s shape) back into the Python API's values."""
    kind = _kind(request_type)
    key = _ANSWERS[kind][1]
    return _ADAPTERS[kind].validate_python(data if key is None else data[key])
