"""The graph's operations as values: what HTTP, MCP and ``remem.Client`` send.

Each request names its scope (``user_id`` / ``agent_id``, as :meth:`remem.api.Memory.graph`
takes them) and the arguments of one :class:`~remem.graph.Graph` method;
:func:`run_graph_request` runs it on the graph of that scope and :func:`dump_result` turns
the answer into JSON values, which the response models below describe (the OpenAPI schema)
and :func:`load_result` reads back into the same values the Python API returns, so
``client.graph(user_id=...)`` answers as ``mem.graph(user_id=...)`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from remem.graph.profile import (
    Profile,
    ProfileChange,
    ProfileSlot,
    TimelineEvent,
    XPatch,
)
from remem.graph.types import Entity, EntityPage, Episode, Fact, FactHit, IngestResult
from remem.memory.requests import Messages
from remem.requests import Limit, Request, ScopeId, Timestamp

__all__ = ["EntityPageOut", "EntityRequest", "ExpandRequest", "FactHitsOut",
           "GraphRequest", "IngestEpisodeRequest", "IngestOut", "PatchProfileRequest",
           "ProfileChangesOut", "ProfileOut", "ProfileRequest", "SearchFactsRequest",
           "TimelineOut", "TimelineRequest", "dump_result", "load_result",
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


class FactOut(BaseModel):
    """A fact with both time lines (epoch seconds)."""

    id: int
    subject_id: int
    predicate: str
    object_id: int | None
    value: str | None
    fact: str
    valid_at: float | None
    invalid_at: float | None
    recorded_at: float
    expired_at: float | None
    episodes: list[int]


class FactHitOut(BaseModel):
    """A search hit: the fact, its score, its signals and its path."""

    fact: FactOut
    score: float
    signals: dict[str, list[float]]
    distance: int | None
    path: list[str]
    subject: str
    object: str | None


class FactHitsOut(BaseModel):
    """Hits, best first."""

    hits: list[FactHitOut]


class EntityOut(BaseModel):
    """An entity."""

    id: int
    name: str
    type: str
    aliases: list[str]
    summary: str
    created_at: float
    updated_at: float


class EntityPageOut(BaseModel):
    """An entity with its current facts and fact timeline."""

    entity: EntityOut
    current: list[FactOut]
    timeline: list[FactOut]
    names: dict[str, str] = Field(description="entity id -> name of every entity touched")


class IngestOut(BaseModel):
    """What an episode changed and what it cost."""

    episode: dict[str, Any]
    entity_ids: list[int]
    created_entities: list[int]
    added: list[int]
    confirmed: list[int]
    invalidated: list[int]
    llm_calls: int
    input_tokens: int
    output_tokens: int
    resolutions: list[str]
    profile_changes: list[list[str | None]]
    events: list[int]


class SlotOut(BaseModel):
    """A profile slot."""

    value: str
    updated_at: float
    episode_id: int | None


class ProfileOut(BaseModel):
    """topic -> sub-topic -> slot."""

    topics: dict[str, dict[str, SlotOut]]


class ProfileChangesOut(BaseModel):
    """Recorded profile changes."""

    changes: list[dict[str, Any]]


class TimelineOut(BaseModel):
    """Events, by time."""

    events: list[dict[str, Any]]


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


def _entity(e: Entity) -> dict[str, Any]:
    return {"id": e.id, "name": e.name, "type": e.type, "aliases": list(e.aliases),
            "summary": e.summary, "created_at": e.created_at, "updated_at": e.updated_at}


def dump_result(request: GraphRequest, result: Any) -> dict[str, Any]:
    """The answer to ``request`` as JSON values (the response model's shape)."""
    if isinstance(request, SearchFactsRequest | ExpandRequest):
        return {"hits": [h.to_dict() for h in result]}
    if isinstance(request, EntityRequest):
        page: EntityPage = result
        return {"entity": _entity(page.entity), "current": [f.to_dict() for f in page.current],
                "timeline": [f.to_dict() for f in page.timeline],
                "names": {str(k): v for k, v in page.names.items()}}
    if isinstance(request, IngestEpisodeRequest):
        r: IngestResult = result
        e = r.episode
        return {"episode": {"id": e.id, "content": e.content, "event_at": e.event_at,
                            "recorded_at": e.recorded_at, "source_ids": list(e.source_ids),
                            "source": e.source},
                "entity_ids": list(r.entity_ids), "created_entities": list(r.created_entities),
                "added": list(r.added), "confirmed": list(r.confirmed),
                "invalidated": list(r.invalidated), "llm_calls": r.llm_calls,
                "input_tokens": r.input_tokens, "output_tokens": r.output_tokens,
                "resolutions": list(r.resolutions),
                "profile_changes": [list(c) for c in r.profile_changes],
                "events": list(r.events)}
    if isinstance(request, ProfileRequest):
        profile: Profile = result
        return {"topics": {t: {s: {"value": slot.value, "updated_at": slot.updated_at,
                                   "episode_id": slot.episode_id} for s, slot in subs.items()}
                           for t, subs in profile.topics.items()}}
    if isinstance(request, PatchProfileRequest):
        return {"changes": [c.to_dict() for c in result]}
    if isinstance(request, TimelineRequest):
        return {"events": [e.to_dict() for e in result]}
    raise TypeError(f"not a graph request: {type(request).__name__}")


#: the response model of each request
RESPONSE_MODELS: dict[type[GraphRequest], type[BaseModel]] = {
    IngestEpisodeRequest: IngestOut, SearchFactsRequest: FactHitsOut,
    EntityRequest: EntityPageOut, ExpandRequest: FactHitsOut, ProfileRequest: ProfileOut,
    PatchProfileRequest: ProfileChangesOut, TimelineRequest: TimelineOut,
}


def _fact(d: dict[str, Any]) -> Fact:
    return Fact(d["id"], d["subject_id"], d["predicate"], d["object_id"], d["value"],
                d["fact"], d["valid_at"], d["invalid_at"], d["recorded_at"], d["expired_at"],
                tuple(d["episodes"]))


def _hit(d: dict[str, Any]) -> FactHit:
    return FactHit(_fact(d["fact"]), d["score"],
                   {k: (int(v[0]), float(v[1])) for k, v in d["signals"].items()},
                   d["distance"], tuple(d["path"]), d["subject"], d["object"])


def _load_entity(d: dict[str, Any]) -> Entity:
    return Entity(d["id"], d["name"], d["type"], tuple(d["aliases"]), d["summary"],
                  d["created_at"], d["updated_at"])


def _load_ingest(d: dict[str, Any]) -> IngestResult:
    e = d["episode"]
    return IngestResult(
        Episode(e["id"], e["content"], e["event_at"], e["recorded_at"],
                tuple(e["source_ids"]), e["source"]),
        tuple(d["entity_ids"]), tuple(d["created_entities"]), tuple(d["added"]),
        tuple(d["confirmed"]), tuple(d["invalidated"]), d["llm_calls"], d["input_tokens"],
        d["output_tokens"], tuple(d["resolutions"]),
        tuple((c[0], c[1], c[2]) for c in d["profile_changes"]), tuple(d["events"]))


def _change(d: dict[str, Any]) -> ProfileChange:
    return ProfileChange(d["id"], d["topic"], d["sub_topic"], d["op"], d["old"], d["new"],
                         d["changed_at"], d["episode_id"])


def _event(d: dict[str, Any]) -> TimelineEvent:
    return TimelineEvent(d["id"], d["happened_at"], d["text"], tuple(d["tags"]),
                         d["episode_id"], d["recorded_at"])


_LOADERS: dict[type[GraphRequest], Callable[[dict[str, Any]], Any]] = {
    IngestEpisodeRequest: _load_ingest,
    SearchFactsRequest: lambda d: [_hit(h) for h in d["hits"]],
    ExpandRequest: lambda d: [_hit(h) for h in d["hits"]],
    EntityRequest: lambda d: EntityPage(
        _load_entity(d["entity"]), tuple(map(_fact, d["current"])),
        tuple(map(_fact, d["timeline"])), {int(k): v for k, v in d["names"].items()}),
    ProfileRequest: lambda d: Profile({t: {s: ProfileSlot(v["value"], v["updated_at"],
                                                          v["episode_id"])
                                           for s, v in subs.items()}
                                       for t, subs in d["topics"].items()}),
    PatchProfileRequest: lambda d: [_change(c) for c in d["changes"]],
    TimelineRequest: lambda d: [_event(e) for e in d["events"]],
}


def load_result(request_type: type[GraphRequest], data: dict[str, Any]) -> Any:
    """Read an answer (:func:`dump_result`'s shape) back into the Python API's values."""
    return _LOADERS[request_type](data)
