"""``client.episodes``: the episodes of a ``remem serve`` tenant, over ``/v1/episodes``.

:class:`RemoteEpisodes` has :class:`~remem.episodic.EpisodeStore`'s ``add``, ``list``,
``select_examples`` and ``extract`` (and async twins), with the same arguments less what
cannot travel (the model: the server's extracts; a token counter or a filter), plus
``submit_extraction``. Each method builds a request value of :mod:`remem.episodic.requests`;
:func:`episode_call`, a pure function, turns it into one HTTP call (its row of
:data:`~remem.episodic.operation_table.EPISODE_OPERATIONS` builds it, ``Operation.call``, and
reads the answer), and the client's sync or async shell sends it.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, TypeVar

from remem.episodic.episodes import Extracted
from remem.episodic.examples import Selection
from remem.episodic.operation_table import EPISODE_OPERATIONS
from remem.episodic.requests import (
    AddEpisodeRequest,
    EpisodeRequest,
    ExtractEpisodesRequest,
    ListEpisodesRequest,
    SelectExamplesRequest,
    SubmitExtractionRequest,
)
from remem.episodic.schema import Episode
from remem.errors import UsageError
from remem.messages.inputs import MessagesInput
from remem.operations import Operation
from remem.requests import Request
from remem.transport import Call, Sender

__all__ = ["RemoteEpisodes", "episode_call"]

R = TypeVar("R")

_ROWS: Mapping[type[Request], Operation] = {row.request: row for row in EPISODE_OPERATIONS}


def episode_call(request: EpisodeRequest[R] | SubmitExtractionRequest) -> Call[R]:
    """The HTTP call that runs ``request`` on a server: its row's (a POST of its JSON), the
    answer read with the row's result model."""
    row = _ROWS.get(type(request))
    if row is None:
        raise UsageError(f"Client cannot send a {type(request).__name__}; pass one of the "
                         "requests in remem.episodic.requests")
    call: Call[Any] = row.call(request)
    return call


def _add_request(episode: Episode | Mapping[str, Any]) -> AddEpisodeRequest:
    parsed = Episode.of(episode)  # the same checks as EpisodeStore.add
    return AddEpisodeRequest.of(
        situation=parsed.situation, action=parsed.action, thought=parsed.thought,
        result=parsed.result, thread_id=parsed.thread_id, metadata=dict(parsed.metadata))


class RemoteEpisodes:
    """The tenant's episodes on the server ``client`` talks to (``client.episodes``). The
    server gives each added episode its own id and time."""

    def __init__(self, client: Sender) -> None:
        self.client = client

    def run(self, request: EpisodeRequest[R]) -> R:
        """Run one episode request on the server."""
        return self.client._send(episode_call(request))

    async def arun(self, request: EpisodeRequest[R]) -> R:
        """Async :meth:`run`."""
        return await self.client._asend(episode_call(request))

    def add(self, episode: Episode | Mapping[str, Any]) -> Episode:
        """Store one episode (an :class:`Episode` or a dict of its fields)."""
        return self.run(_add_request(episode))

    def list(self, *, limit: int = 100, offset: int = 0) -> builtins.list[Episode]:
        """Episodes, newest first."""
        return self.run(ListEpisodesRequest.of(limit=limit, offset=offset))

    def select_examples(self, query: str, k: int = 3, budget_tokens: int | None = None, *,
                        mmr: float = 0.7, max_similarity: float = 0.8,
                        min_relevance: float = 0.2) -> Selection:
        """Up to ``k`` relevant, diverse episodes for ``query`` within ``budget_tokens``
        (tokens counted by the server's offline estimate)."""
        return self.run(SelectExamplesRequest.of(
            query=query, k=k, budget_tokens=budget_tokens, mmr=mmr,
            max_similarity=max_similarity, min_relevance=min_relevance))

    def extract(self, messages: MessagesInput, *, thread_id: str | None = None) -> Extracted:
        """Extract and store the episodes of a finished conversation with the server's
        model."""
        return self.run(ExtractEpisodesRequest.of(messages=messages, thread_id=thread_id))

    def submit_extraction(self, messages: MessagesInput, *, thread_id: str | None = None,
                          idempotency_key: str | None = None) -> dict[str, Any]:
        """Queue the extraction as a background job; answers the job's JSON at once."""
        return self.client._send(episode_call(SubmitExtractionRequest.of(
            messages=messages, thread_id=thread_id, idempotency_key=idempotency_key)))

    async def asubmit_extraction(self, messages: MessagesInput, *,
                                 thread_id: str | None = None,
                                 idempotency_key: str | None = None) -> dict[str, Any]:
        """Async :meth:`submit_extraction`."""
        return await self.client._asend(episode_call(SubmitExtractionRequest.of(
            messages=messages, thread_id=thread_id, idempotency_key=idempotency_key)))

    async def aadd(self, episode: Episode | Mapping[str, Any]) -> Episode:
        """Async :meth:`add`."""
        return await self.arun(_add_request(episode))

    async def alist(self, *, limit: int = 100, offset: int = 0) -> builtins.list[Episode]:
        """Async :meth:`list`."""
        return await self.arun(ListEpisodesRequest.of(limit=limit, offset=offset))

    async def aselect_examples(self, query: str, k: int = 3,
                               budget_tokens: int | None = None, *, mmr: float = 0.7,
                               max_similarity: float = 0.8,
                               min_relevance: float = 0.2) -> Selection:
        """Async :meth:`select_examples`."""
        return await self.arun(SelectExamplesRequest.of(
            query=query, k=k, budget_tokens=budget_tokens, mmr=mmr,
            max_similarity=max_similarity, min_relevance=min_relevance))

    async def aextract(self, messages: MessagesInput, *,
                       thread_id: str | None = None) -> Extracted:
        """Async :meth:`extract`."""
        return await self.arun(ExtractEpisodesRequest.of(messages=messages,
                                                         thread_id=thread_id))

