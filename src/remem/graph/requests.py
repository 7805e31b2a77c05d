"""The graph's operations as values: what HTTP, MCP and ``remem.Client`` send.

Each request names its scope (``user_id`` / ``agent_id``, as :meth:`remem.api.Memory.graph`
takes them) and the arguments of one :class:`~remem.graph.Graph` method, the one its
``operation`` names: :meth:`GraphRequest.run_on` runs it on the graph of that scope. Its row
of :data:`~remem.graph.operation_table.GRAPH_OPERATIONS` says how it travels, and its answer
model (:mod:`remem.graph.wire`) how the answer does, so ``client.graph(user_id=...)``
answers as ``mem.graph(user_id=...)`` does.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import Field, model_validator

from remem.graph.profile import Profile, ProfileChange, TimelineEvent, XPatch
from remem.graph.types import EntityPage, FactHit, IngestResult
from remem.requests import Limit, Messages, Request, ScopeId, Timestamp

__all__ = ["EntityRequest", "ExpandRequest", "GraphRequest", "IngestEpisodeRequest",
           "PatchProfileRequest", "ProfileRequest", "SearchFactsRequest", "TimelineRequest"]

R = TypeVar("R")
Text = Annotated[str, Field(min_length=1, max_length=200_000)]
EntityRef = Annotated[int, Field(ge=1, le=2**62)] | Annotated[str, Field(min_length=1,
                                                                         max_length=200)]
Hops = Annotated[int, Field(ge=1, le=5)]


class GraphRequest(Request, Generic[R]):
    """A graph operation on the graph of a scope; ``R`` is what running it returns."""

    operation: ClassVar[str] = ""
    user_id: ScopeId | None = Field(None, description="whose graph (a user id)")
    agent_id: ScopeId | None = Field(None, description="an agent id (with or without user_id)")

    def graph_arguments(self) -> dict[str, Any]:
        """The arguments of the :class:`~remem.graph.Graph` method it runs: its fields less
        the scope."""
        return {name: value for name, value in self.arguments().items()
                if name not in ("user_id", "agent_id")}

    def run_on(self, graph: Any) -> R:
        """Run it on ``graph`` (the :class:`~remem.graph.Graph` of its scope)."""
        result: R = getattr(graph, self.operation)(**self.graph_arguments())
        return result


class IngestEpisodeRequest(GraphRequest[IngestResult]):
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

    def graph_arguments(self) -> dict[str, Any]:
        """``Graph.ingest``'s arguments: the text or the messages are the episode."""
        return {"episode": self.text if self.text is not None else self.messages,
                "event_at": self.event_at, "source_ids": self.source_ids}


class SearchFactsRequest(GraphRequest[list[FactHit]]):
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


class EntityRequest(GraphRequest[EntityPage]):
    """An entity's page: its current facts and its fact timeline."""

    operation: ClassVar[str] = "entity"
    entity: EntityRef = Field(description="the entity's id or name (or alias)")
    as_of: Timestamp | None = Field(None, description="current at this time (default now)")


class ExpandRequest(GraphRequest[list[FactHit]]):
    """Every fact within ``hops`` of an entity, nearest first."""

    operation: ClassVar[str] = "expand"
    entity: EntityRef = Field(description="the entity's id or name (or alias)")
    hops: Hops = Field(2, description="how far to walk")
    as_of: Timestamp | None = Field(None, description="only facts true then")
    known_at: Timestamp | None = Field(None, description="as the graph knew them then")


class ProfileRequest(GraphRequest[Profile]):
    """The user's profile (topics and sub-topics)."""

    operation: ClassVar[str] = "profile"
    user_id: ScopeId = Field(description="whose profile")
    as_of: Timestamp | None = Field(None, description="the profile as it stood then")


class PatchProfileRequest(GraphRequest[list[ProfileChange]]):
    """Change the profile by hand with JSON Patch operations on /topic/sub_topic."""

    operation: ClassVar[str] = "patch_profile"
    user_id: ScopeId = Field(description="whose profile")
    patch: list[XPatch] = Field(min_length=1, max_length=100,
                                description="add / replace / remove operations")


class TimelineRequest(GraphRequest[list[TimelineEvent]]):
    """Dated events of the user's timeline, ``since <= happened_at < until``."""

    operation: ClassVar[str] = "timeline"
    user_id: ScopeId = Field(description="whose timeline")
    since: Timestamp | None = Field(None, description="from this time (inclusive)")
    until: Timestamp | None = Field(None, description="to this time (exclusive)")
    tags: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=20, description="only events with one of these tags")
