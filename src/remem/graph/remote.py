"""``client.graph(user_id=...)``: the graph of a scope of a ``remem serve`` tenant, over
``/v1/graph``.

:class:`RemoteGraph` has :class:`~remem.graph.Graph`'s ``ingest``, ``search``, ``entity``,
``expand``, ``profile``, ``patch_profile`` and ``timeline`` (and async twins), with the same
arguments less what cannot travel (a model: the server's ingests; search's fusion knobs) and
the same result values. Each method builds a request of :mod:`remem.graph.requests`;
:func:`graph_call`, its row of :data:`~remem.graph.operation_table.GRAPH_OPERATIONS`, turns it
into one HTTP call (``Operation.call``) and reads the answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar

from remem.graph.operation_table import GRAPH_OPERATIONS
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
)
from remem.graph.types import EntityPage, FactHit, IngestResult, timestamp
from remem.messages.types import Message
from remem.operations import row_of
from remem.transport import Call, Sender

__all__ = ["RemoteGraph", "graph_call"]

R = TypeVar("R")
When = datetime | float | int | None


def graph_call(request: GraphRequest[R]) -> Call[R]:
    """The HTTP call that runs ``request`` on a server: its row's."""
    call: Call[R] = row_of(GRAPH_OPERATIONS, type(request)).call(request)
    return call


def _time(value: When) -> float | None:
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

    def _entity(self, entity: int | str, as_of: When) -> EntityRequest:
        return EntityRequest.of(**self._scope(), entity=entity, as_of=_time(as_of))

    def _expand(self, entity: int | str, hops: int, as_of: When,
                known_at: When) -> ExpandRequest:
        return ExpandRequest.of(**self._scope(), entity=entity, hops=hops,
                                as_of=_time(as_of), known_at=_time(known_at))

    def _patch_profile(self, patch: Sequence[Mapping[str, Any] | XPatch]
                       ) -> PatchProfileRequest:
        return PatchProfileRequest.of(**self._user(), patch=parse_patches(patch))

    def _profile(self, as_of: When) -> ProfileRequest:
        return ProfileRequest.of(**self._user(), as_of=_time(as_of))

    def _timeline(self, since: When, until: When, tags: Sequence[str]) -> TimelineRequest:
        return TimelineRequest.of(**self._user(), since=_time(since), until=_time(until),
                                  tags=list(tags))

    def _send(self, request: GraphRequest[R]) -> R:
        return self.client._send(graph_call(request))

    async def _asend(self, request: GraphRequest[R]) -> R:
        return await self.client._asend(graph_call(request))

    # -- sync ---------------------------------------------------------------------------------

    def ingest(self, episode: str | Sequence[Message], *, event_at: When = None,
               source_ids: Sequence[str] = ()) -> IngestResult:
        """:meth:`remem.graph.Graph.ingest` with the server's model."""
        return self._send(self._ingest(episode, event_at, source_ids))

    def search(self, query: str, *, limit: int = 10, as_of: When = None,
               known_at: When = None, focal: int | str | None = None, hops: int = 2,
               rerank: Literal["fusion", "distance", "mmr"] = "fusion") -> list[FactHit]:
        """:meth:`remem.graph.Graph.search`."""
        return self._send(self._search(query, limit, as_of, known_at, focal, hops, rerank))

    def entity(self, entity: int | str, *, as_of: When = None) -> EntityPage:
        """:meth:`remem.graph.Graph.entity`."""
        return self._send(self._entity(entity, as_of))

    def expand(self, entity: int | str, *, hops: int = 2, as_of: When = None,
               known_at: When = None) -> list[FactHit]:
        """:meth:`remem.graph.Graph.expand`."""
        return self._send(self._expand(entity, hops, as_of, known_at))

    def profile(self, *, as_of: When = None) -> Profile:
        """:meth:`remem.graph.Graph.profile` (the graph of a ``user_id``)."""
        return self._send(self._profile(as_of))

    def patch_profile(self, patch: Sequence[Mapping[str, Any] | XPatch]
                      ) -> list[ProfileChange]:
        """:meth:`remem.graph.Graph.patch_profile`."""
        return self._send(self._patch_profile(patch))

    def timeline(self, *, since: When = None, until: When = None,
                 tags: Sequence[str] = ()) -> list[TimelineEvent]:
        """:meth:`remem.graph.Graph.timeline`."""
        return self._send(self._timeline(since, until, tags))

    # -- async --------------------------------------------------------------------------------

    async def aingest(self, episode: str | Sequence[Message], *, event_at: When = None,
                      source_ids: Sequence[str] = ()) -> IngestResult:
        """Async :meth:`ingest`."""
        return await self._asend(self._ingest(episode, event_at, source_ids))

    async def asearch(self, query: str, *, limit: int = 10, as_of: When = None,
                      known_at: When = None, focal: int | str | None = None, hops: int = 2,
                      rerank: Literal["fusion", "distance", "mmr"] = "fusion"
                      ) -> list[FactHit]:
        """Async :meth:`search`."""
        return await self._asend(self._search(query, limit, as_of, known_at, focal, hops,
                                              rerank))

    async def aentity(self, entity: int | str, *, as_of: When = None) -> EntityPage:
        """Async :meth:`entity`."""
        return await self._asend(self._entity(entity, as_of))

    async def aexpand(self, entity: int | str, *, hops: int = 2, as_of: When = None,
                      known_at: When = None) -> list[FactHit]:
        """Async :meth:`expand`."""
        return await self._asend(self._expand(entity, hops, as_of, known_at))

    async def aprofile(self, *, as_of: When = None) -> Profile:
        """Async :meth:`profile`."""
        return await self._asend(self._profile(as_of))

    async def apatch_profile(self, patch: Sequence[Mapping[str, Any] | XPatch]
                             ) -> list[ProfileChange]:
        """Async :meth:`patch_profile`."""
        return await self._asend(self._patch_profile(patch))

    async def atimeline(self, *, since: When = None, until: When = None,
                        tags: Sequence[str] = ()) -> list[TimelineEvent]:
        """Async :meth:`timeline`."""
        return await self._asend(self._timeline(since, until, tags))
