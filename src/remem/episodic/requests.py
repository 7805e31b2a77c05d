"""The episode operations as request values (see :mod:`remem.requests`), and their one runner.

:class:`AddEpisodeRequest`, :class:`ListEpisodesRequest`, :class:`SelectExamplesRequest` and
:class:`ExtractEpisodesRequest` are what the ``/v1/episodes`` routes take as their body, what
``remem.Client.episodes`` sends and what the MCP tools read their parameters from;
:func:`run_episode_request` runs any of them on an
:class:`~remem.episodic.EpisodeStore` (and a model, for extraction), and :func:`episode_json`
(:data:`RESULT_MODELS`, the rows' answers in :mod:`remem.episodic.operation_table`) is the
JSON every surface answers with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, Field, StringConstraints

from remem.background.jobs import NewJob
from remem.episodic.episodes import EpisodeStore, Extracted
from remem.episodic.examples import Selection
from remem.episodic.schema import Episode
from remem.episodic.wire import EpisodeOut, EpisodesOut, ExtractedOut, SelectionOut
from remem.errors import UsageError
from remem.llm.base import ChatModel
from remem.requests import JsonObject, Limit, Messages, Offset, Request

__all__ = [
    "RESULT_MODELS",
    "AddEpisodeRequest",
    "EpisodeRequest",
    "ExtractEpisodesRequest",
    "ListEpisodesRequest",
    "SelectExamplesRequest",
    "SubmitExtractionRequest",
    "arun_episode_request",
    "episode_json",
    "run_episode_request",
]

R = TypeVar("R")

EpisodeText = Annotated[str, StringConstraints(max_length=20_000)]
Required = Annotated[str, StringConstraints(min_length=1, max_length=20_000)]
Ident = Annotated[str, StringConstraints(min_length=1, max_length=256,
                                         pattern=r"^[^\x00-\x1f\x7f]+$")]


class EpisodeRequest(Request, Generic[R]):
    """Base of the episode requests; ``R`` is what running one returns."""

    def run_on(self, episodes: EpisodeStore, model: ChatModel | None = None) -> R:
        """Run this request on ``episodes`` (``model``: what extraction calls): what
        :meth:`EpisodeStore.run <remem.episodic.EpisodeStore.run>` calls, so the store
        needs no import of the requests built on it."""
        return run_episode_request(self, episodes, model)

    async def arun_on(self, episodes: EpisodeStore, model: ChatModel | None = None) -> R:
        """Async :meth:`run_on`."""
        return await arun_episode_request(self, episodes, model)


class AddEpisodeRequest(EpisodeRequest[Episode]):
    """Store one episode: the situation the agent faced, its thought, its action and the
    result."""

    operation: ClassVar[str] = "add"

    situation: Required = Field(description="the task or situation, self-contained")
    action: Required = Field(description="what the agent did")
    thought: EpisodeText = Field("", description="the reasoning behind the action")
    result: EpisodeText = Field("", description="what came of it: outcome and feedback")
    thread_id: Ident | None = Field(None, description="the conversation it came from")
    metadata: JsonObject | None = Field(None, description="JSON kept with the episode")


class ListEpisodesRequest(EpisodeRequest[list[Episode]]):
    """Episodes, newest first, a page at a time."""

    operation: ClassVar[str] = "list"

    limit: Limit = Field(100, description="episodes per page")
    offset: Offset = Field(0, description="episodes to skip")


class SelectExamplesRequest(EpisodeRequest[Selection]):
    """Up to ``k`` relevant, diverse past episodes for ``query`` whose few-shot messages fit
    ``budget_tokens`` together."""

    operation: ClassVar[str] = "select_examples"

    query: Annotated[str, StringConstraints(min_length=1, max_length=10_000)] = Field(
        description="the new situation")
    k: int = Field(3, ge=1, le=50, description="examples wanted")
    budget_tokens: int | None = Field(None, ge=1, le=1_000_000,
                                      description="the most tokens the examples may take")
    mmr: float = Field(0.7, ge=0.0, le=1.0,
                       description="relevance against novelty (1: relevance only)")
    max_similarity: float = Field(0.8, ge=0.0, le=1.0,
                                  description="episodes more alike than this are duplicates")
    min_relevance: float = Field(0.2, ge=0.0, le=1.0,
                                 description="never show an episode scoring under this "
                                             "fraction of the best")


class ExtractEpisodesRequest(EpisodeRequest[Extracted]):
    """Extract and store the episodes of a finished conversation, with one LLM call."""

    operation: ClassVar[str] = "extract"

    messages: Messages = Field(description="text, or chat messages (OpenAI-style)")
    thread_id: Ident | None = Field(None, description="the conversation's id, cited by "
                                                      "each episode")


class SubmitExtractionRequest(Request):
    """Queue the extraction of a finished conversation's episodes as an ``episodes.extract``
    job of the background queue (its episodes are stored as ``<job id>-0``, ``-1``...)."""

    operation: ClassVar[str] = "submit_extraction"

    messages: Messages = Field(description="text, or chat messages (OpenAI-style)")
    thread_id: Ident | None = Field(None, description="the conversation's id, cited by "
                                                      "each episode")
    idempotency_key: Ident | None = Field(None, description="the same key answers the job "
                                                            "it first made")

    def job(self, *, tenant: str = "") -> NewJob:
        """The job to queue (``tenant``: whose store it runs on)."""
        from remem.episodic.jobs import extract_job

        return extract_job(self.messages, thread_id=self.thread_id,
                           idempotency_key=self.idempotency_key, tenant=tenant)


def run_episode_request(request: EpisodeRequest[R], episodes: EpisodeStore,
                        model: ChatModel | None = None) -> R:
    """Run ``request`` on ``episodes`` (``model``: what extraction calls)."""
    found: Any
    if isinstance(request, AddEpisodeRequest):
        fields = request.model_dump(exclude={"metadata"})
        found = episodes.add({**fields, "metadata": dict(request.metadata or {})})
    elif isinstance(request, ListEpisodesRequest):
        found = episodes.list(limit=request.limit, offset=request.offset)
    elif isinstance(request, SelectExamplesRequest):
        found = episodes.select_examples(
            request.query, request.k, request.budget_tokens, mmr=request.mmr,
            max_similarity=request.max_similarity, min_relevance=request.min_relevance)
    elif isinstance(request, ExtractEpisodesRequest):
        if model is None:
            raise UsageError("extracting episodes needs a chat model: pass model=... (a "
                             "server needs REMEM_LLM_* set)")
        found = episodes.extract(model, request.messages, thread_id=request.thread_id)
    else:
        raise UsageError(f"{type(request).__name__} is not an episode request; pass one of "
                         "remem.episodic.requests")
    return found  # type: ignore[no-any-return]


async def arun_episode_request(request: EpisodeRequest[R], episodes: EpisodeStore,
                               model: ChatModel | None = None) -> R:
    """Async :func:`run_episode_request` (the store's blocking calls in a worker thread)."""
    return await asyncio.to_thread(run_episode_request, request, episodes, model)


RESULT_MODELS: Mapping[type[Request], type[BaseModel]] = {
    AddEpisodeRequest: EpisodeOut, ListEpisodesRequest: EpisodesOut,
    SelectExamplesRequest: SelectionOut, ExtractEpisodesRequest: ExtractedOut}
"""Each episode request's result model (:mod:`remem.episodic.wire`): its JSON on every
surface, and its row's result in :mod:`remem.episodic.operation_table`."""


def episode_json(request: EpisodeRequest[Any], result: Any) -> dict[str, Any]:
    """The JSON answer of ``request``'s ``result`` (the HTTP API's and the MCP tools')."""
    model = RESULT_MODELS.get(type(request))
    if model is None:
        raise UsageError(f"no JSON shape for {type(request).__name__}")
    data: dict[str, Any] = model.of(result).model_dump(mode="json")  # type: ignore[attr-defined]
    return data
