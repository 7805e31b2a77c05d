"""``client.graph(user_id=...)``: the graph of a scope of a ``remem serve`` tenant, over
``/v1/graph``.

:class:`RemoteGraph` has :class:`~remem.graph.Graph`'s ``ingest``, ``search``, ``entity``,
``expand``, ``profile``, ``patch_profile`` and ``timeline`` (and async twins), with the same
arguments less what cannot travel (a model: the server's ingests; search's fusion knobs) and
the same result values. Each method builds a request of :mod:`remem.graph.requests`;
:func:`graph_call` turns it into one HTTP call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, Literal

from remem.graph.profile import Profile, ProfileChange, TimelineEvent, XPatch, parse_patches
from remem.graph.requests import (
    EntityRequest,
    ExpandRequest,
    GraphRequest,
    IngestEpisodeRequest,
    PatchProfileRequest,
    ProfileRequest,
    SearchFactsRequest,
    TimelineRequest,
    load_result,
)
from remem.graph.types import EntityPage, FactHit, IngestResult
from remem.messages.types import Message
from remem.transport import Call, Sender

__all__ = ["RemoteGraph", "graph_call"]

When = datetime | float | int | None

_PATHS: Mapping[type[GraphRequest], tuple[str, str]] = {
    IngestEpisodeRequest: ("POST", "/v1/graph/episodes"),
    SearchFactsRequest: ("POST", "/v1/graph/search"),
    EntityRequest: ("POST", "/v1/graph/entity"),
    ExpandRequest: ("POST", "/v1/graph/expand"),
    ProfileRequest: ("POST", "/v1/graph/profile"),
    PatchProfileRequest: ("PATCH", "/v1/graph/profile"),
    TimelineRequest: ("POST", "/v1/graph/timeline"),
}


def graph_call(request: GraphRequest) -> Call[Any]:
    """The HTTP call that runs ``request`` on a server: its JSON is the body."""
    method, path = _PATHS[type(request)]
    return Call(method, path, partial(load_result, type(request)),
                 request.model_dump(mode="json"))


def _time(value: When) -> float | None:
    from remem.graph.types import timestamp

    return timestamp(value, "time")


class RemoteGraph:
    """The graph of one scope on the server ``client`` talks to."""

    def __init__(self, client: Sender, *, user_id: str | None = None,
                 agent_id: str | None = None) -> None:
        self.client = client
        self.user_id = user_id
        self.agent_id = agent_id

    def _scope(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "agent_id": self.agent_id}

    def _user(self) -> dict[str, Any]:
        return {"user_id": self.user_id or "", "agent_id": self.agent_id}

    # -- request values ---------------------------------------------------------------------

    def _ingest(self, episode: str | Sequence[Message], event_at: When,
                source_ids: Sequence[str]) -> IngestEpisodeRequest:
        source: dict[str, Any] = {"text": episode}
        if not isinstance(episode, str):
            messages = tuple(episode)
            source = {"messages": messages}
            if event_at is None and messages:
                # OpenAI-style messages carry no times: send the latest as the event time,
                # which is what Graph.ingest would take from them
                event_at = max(m.created_at for m in messages if isinstance(m, Message))
        return IngestEpisodeRequest.of(**self._scope(), **source, event_at=_time(event_at),
                                       source_ids=list(source_ids))

    def _search(self, query: str, limit: int, as_of: When, known_at: When,
                focal: int | str | None, hops: int,
                rerank: Literal["fusion", "distance", "mmr"]) -> SearchFactsRequest:
        return SearchFactsRequest.of(**self._scope(), query=query, limit=limit,
                                     as_of=_time(as_of), known_at=_time(known_at),
                                     focal=focal, hops=hops, rerank=rerank)

    def _patch(self, patch: Sequence[Mapping[str, Any] | XPatch]) -> PatchProfileRequest:
        return PatchProfileRequest.of(**self._user(), patch=parse_patches(patch))

    # -- sync ---------------------------------------------------------------------------------

    def ingest(self, episode: str | Sequence[Message], *, event_at: When = None,
               source_ids: Sequence[str] = ()) -> IngestResult:
        """:meth:`remem.graph.Graph.ingest` with the server's model."""
        result: IngestResult = self.client._send(graph_call(
            self._ingest(episode, event_at, source_ids)))
        return result

    def search(self, query: str, *, limit: int = 10, as_of: When = None,
               known_at: When = None, focal: int | str | None = None, hops: int = 2,
               rerank: Literal["fusion", "distance", "mmr"] = "fusion") -> list[FactHit]:
        """:meth:`remem.graph.Graph.search`."""
        hits: list[FactHit] = self.client._send(graph_call(
            self._search(query, limit, as_of, known_at, focal, hops, rerank)))
        return hits

    def entity(self, entity: int | str, *, as_of: When = None) -> EntityPage:
        """:meth:`remem.graph.Graph.entity`."""
        page: EntityPage = self.client._send(graph_call(EntityRequest.of(
            **self._scope(), entity=entity, as_of=_time(as_of))))
        return page

    def expand(self, entity: int | str, *, hops: int = 2, as_of: When = None,
               known_at: When = None) -> list[FactHit]:
        """:meth:`remem.graph.Graph.expand`."""
        hits: list[FactHit] = self.client._send(graph_call(ExpandRequest.of(
            **self._scope(), entity=entity, hops=hops, as_of=_time(as_of),
            known_at=_time(known_at))))
        return hits

    def profile(self, *, as_of: When = None) -> Profile:
        """:meth:`remem.graph.Graph.profile` (the graph of a ``user_id``)."""
        profile: Profile = self.client._send(graph_call(ProfileRequest.of(
            **self._user(), as_of=_time(as_of))))
        return profile

    def patch_profile(self, patch: Sequence[Mapping[str, Any] | XPatch]
                      ) -> list[ProfileChange]:
        """:meth:`remem.graph.Graph.patch_profile`."""
        changes: list[ProfileChange] = self.client._send(graph_call(self._patch(patch)))
        return changes

    def timeline(self, *, since: When = None, until: When = None,
                 tags: Sequence[str] = ()) -> list[TimelineEvent]:
        """:meth:`remem.graph.Graph.timeline`."""
        events: list[TimelineEvent] = self.client._send(graph_call(TimelineRequest.of(
            **self._user(), since=_time(since), until=_time(until), tags=list(tags))))
        return events

    # -- async --------------------------------------------------------------------------------

    async def aingest(self, episode: str | Sequence[Message], *, event_at: When = None,
                      source_ids: Sequence[str] = ()) -> IngestResult:
        """Async :meth:`ingest`."""
        result: IngestResult = await self.client._asend(graph_call(
            self._ingest(episode, event_at, source_ids)))
        return result

    async def asearch(self, query: str, *, limit: int = 10, as_of: When = None,
                      known_at: When = None, focal: int | str | None = None, hops: int = 2,
                      rerank: Literal["fusion", "distance", "mmr"] = "fusion"
                      ) -> list[FactHit]:
        """Async :meth:`search`."""
        hits: list[FactHit] = await self.client._asend(graph_call(
            self._search(query, limit, as_of, known_at, focal, hops, rerank)))
        return hits

    async def aentity(self, entity: int | str, *, as_of: When = None) -> EntityPage:
        """Async :meth:`entity`."""
        page: EntityPage = await self.client._asend(graph_call(EntityRequest.of(
            **self._scope(), entity=entity, as_of=_time(as_of))))
        return page

    async def aprofile(self, *, as_of: When = None) -> Profile:
        """Async :meth:`profile`."""
        profile: Profile = await self.client._asend(graph_call(ProfileRequest.of(
            **self._user(), as_of=_time(as_of))))
        return profile

    async def atimeline(self, *, since: When = None, until: When = None,
                        tags: Sequence[str] = ()) -> list[TimelineEvent]:
        """Async :meth:`timeline`."""
        events: list[TimelineEvent] = await self.client._asend(graph_call(TimelineRequest.of(
            **self._user(), since=_time(since), until=_time(until), tags=list(tags))))
        return events
