"""Episodes: what an agent met, thought, did and saw, kept to be shown again as examples.

An :class:`Episode` is stored as one item of a :class:`~remem.store.BaseStore` under a
namespace prefix, with its situation indexed (keywords, and vectors when the store has an
embedder), so :meth:`EpisodeStore.select_examples` can find the past situations most like a
new one. Episodes are written by the agent (:meth:`EpisodeStore.add`) or extracted from a
finished thread by one structured LLM call (:meth:`EpisodeStore.extract`).

Every method is a flow (:mod:`remem.memory.flow`) driven by a blocking or an async shell.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from remem.episodic.examples import Selection, fit_examples
from remem.episodic.schema import Episode, EpisodeDraft
from remem.errors import InvalidInputError, NotFoundError
from remem.llm.base import ChatModel, Usage
from remem.llm.structured import Structured
from remem.memory.flow import Flow, StoreBatch, StructuredCall, run_async, run_sync
from remem.messages.types import Message
from remem.retrieval.ranking import Ranking
from remem.store.bad_records import check_record, parse_items, parse_or_raise
from remem.store.base import BaseStore
from remem.store.reserved import EPISODES
from remem.store.types import DeleteOp, Item, PutOp, SearchOp, validate_namespace
from remem.tokens import DEFAULT_COUNTER, TokenCounter

if TYPE_CHECKING:
    from remem.episodic.requests import EpisodeRequest

__all__ = ["EpisodeStore", "Extracted", "episode_of"]

R = TypeVar("R")

class _Drafts(BaseModel):
    model_config = ConfigDict(extra="ignore")
    episodes: list[EpisodeDraft] = Field(default_factory=list, description=(
        "The distinct episodes of the conversation worth learning from; empty if none."))


class Extracted(BaseModel):
    """What :meth:`EpisodeStore.extract` stored and what the call cost."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    episodes: tuple[Episode, ...]
    usage: Usage


_EXTRACT = (
    "You turn an agent's finished conversation into episodes for its experience memory: each "
    "episode is a situation the agent faced, its reasoning, the action it took and the result. "
    "Keep only episodes worth learning from (a task solved, a mistake corrected, a preference "
    "learned); write each one so it makes sense on its own. Answer with an empty list if "
    "nothing is worth keeping.")


class EpisodeStore:
    """Episodes under ``prefix`` in ``store``; ``index_fields`` are embedded and keyword
    indexed (default: the situation, which new situations are compared with)."""

    def __init__(self, store: BaseStore, *, prefix: Sequence[str] = (EPISODES,),
                 index_fields: Sequence[str] = ("situation",)) -> None:
        if not isinstance(store, BaseStore):
            raise InvalidInputError(
                f"store must be a remem BaseStore, got {type(store).__name__}; open one with "
                "remem.store.open_store(...)")
        self.store = store
        self.prefix = validate_namespace(tuple(prefix), what="prefix")
        self.index_fields = tuple(index_fields)

    # -- flows ----------------------------------------------------------------------------------

    def _put(self, episode: Episode) -> PutOp:
        value = episode.model_dump(mode="json")
        # what is written must read back (remem.store.bad_records)
        check_record(Episode.model_validate, value, family="episodes", namespace=self.prefix,
                     key=episode.id)
        return PutOp(self.prefix, episode.id, value, index=list(self.index_fields),
                     event_at=episode.created_at)

    def _add_flow(self, episodes: Sequence[Any]) -> Flow[list[Episode]]:
        if isinstance(episodes, Mapping | BaseModel):
            raise InvalidInputError("add_many takes a list of episodes")
        parsed = [Episode.of(e, where=f"episodes[{i}]") for i, e in enumerate(episodes)]
        if parsed:
            yield StoreBatch([self._put(e) for e in parsed])
        return parsed

    def extract_flow(self, messages: Sequence[Message], *, thread_id: str | None = None,
                     instructions: str | None = None,
                     id_prefix: str | None = None) -> Flow[Extracted]:
        """:meth:`extract` as a flow (:mod:`remem.memory.flow`); ``id_prefix`` names the
        episodes ``<id_prefix>-0``, ``-1``... (a background job's id, so a re-run finds
        them)."""
        return self._extract_flow(tuple(messages), thread_id, instructions, id_prefix)

    def _extract_flow(self, messages: Sequence[Message], thread_id: str | None,
                      instructions: str | None,
                      id_prefix: str | None = None) -> Flow[Extracted]:
        if not messages:
            raise InvalidInputError("messages is empty; pass the thread's messages")
        conversation = "\n".join(f"{m.role}: {m.text.strip()}" for m in messages
                                 if m.text.strip())
        answer: Structured[_Drafts] = yield StructuredCall(
            (Message.user(f"<conversation>\n{conversation}\n</conversation>"),), _Drafts,
            instructions or _EXTRACT, "episodes.extract", 1)
        episodes = [Episode.model_validate({
            **draft.model_dump(), "thread_id": thread_id,
            **({"id": f"{id_prefix}-{n}"} if id_prefix else {})})
            for n, draft in enumerate(answer.value.episodes)]
        if episodes:
            yield StoreBatch([self._put(e) for e in episodes])
        return Extracted(episodes=tuple(episodes), usage=answer.usage)

    def _search_flow(self, query: str, limit: int, mmr: float | None,
                     filter: Mapping[str, Any] | None) -> Flow[list[tuple[Episode, float]]]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(f"query must be non-empty text, got {query!r}")
        ranking = Ranking(mmr=mmr if self.store.index is not None else None,
                          candidates=max(100, limit))
        [found] = yield StoreBatch([SearchOp(self.prefix, filter, query, limit,
                                             ranking=ranking)])
        # an episode that does not parse is left out (and reported), never fatal
        return parse_items(found, lambda item: (episode_of(item), item.score or 0.0),
                           family="episodes")

    # -- blocking API ---------------------------------------------------------------------------

    def add(self, episode: Episode | Mapping[str, Any]) -> Episode:
        """Store one episode (an :class:`Episode` or a dict of its fields)."""
        return run_sync(self._add_flow([Episode.of(episode)]), self.store)[0]

    def add_many(self, episodes: Sequence[Episode | Mapping[str, Any]]
                 ) -> builtins.list[Episode]:
        """Store several episodes in one batch."""
        return run_sync(self._add_flow(episodes), self.store)

    def get(self, episode_id: str) -> Episode:
        """The episode ``episode_id``; :class:`~remem.errors.NotFoundError` if absent."""
        item = self.store.get(self.prefix, episode_id)
        if item is None:
            raise NotFoundError(f"no episode {episode_id!r} under {'.'.join(self.prefix)}")
        return parse_or_raise(episode_of, item, family="episodes", namespace=item.namespace,
                              key=item.key, what=f"episode {episode_id!r}")

    def delete(self, episode_id: str) -> None:
        """Delete an episode (a missing one is not an error)."""
        self.store.batch([DeleteOp(self.prefix, episode_id)])

    def list(self, *, limit: int = 100, offset: int = 0) -> list[Episode]:
        """Episodes, newest first."""
        found = self.store.search(self.prefix, limit=limit, offset=offset)
        return parse_items((item for item in found if item.namespace == self.prefix), episode_of,
                           family="episodes")

    def search(self, query: str, *, limit: int = 10, mmr: float | None = None,
               filter: Mapping[str, Any] | None = None) -> builtins.list[Episode]:
        """Episodes whose situation is most like ``query`` (the store's hybrid search; ``mmr``
        diversifies when the store has an embedder)."""
        return [e for e, _ in run_sync(self._search_flow(query, limit, mmr, filter),
                                       self.store)]

    def extract(self, model: ChatModel, messages: Sequence[Message], *,
                thread_id: str | None = None, instructions: str | None = None) -> Extracted:
        """Extract the episodes of a finished conversation with one structured call (plus one
        retry if its answer is invalid) and store them, citing ``thread_id``."""
        return run_sync(self._extract_flow(tuple(messages), thread_id, instructions),
                        self.store, model)

    def select_examples(self, query: str, k: int = 3, budget_tokens: int | None = None, *,
                        mmr: float = 0.7, max_similarity: float = 0.8,
                        min_relevance: float = 0.2,
                        filter: Mapping[str, Any] | None = None,
                        counter: TokenCounter = DEFAULT_COUNTER) -> Selection:
        """Up to ``k`` relevant and diverse episodes for ``query`` whose few-shot messages fit
        ``budget_tokens`` together.

        The store's hybrid search ranks the episodes, re-ordered by MMR (``mmr``: the weight
        of relevance against novelty; used when the store has an embedder); episodes scoring
        under ``min_relevance`` times the best score are never shown (MMR would otherwise
        prefer an unrelated episode to a relevant one that resembles a chosen one); then
        :func:`~remem.episodic.fit_examples` drops near-duplicates and keeps the budget.
        """
        ranked = run_sync(self._search_flow(query, _depth(k, budget_tokens), mmr, filter),
                          self.store)
        return fit_examples(_relevant(ranked, min_relevance), _check_k(k),
                            _check_budget(budget_tokens), max_similarity=max_similarity,
                            counter=counter)

    def run(self, request: EpisodeRequest[R], model: ChatModel | None = None) -> R:
        """Run one request of :mod:`remem.episodic.requests` (the value the HTTP routes,
        ``remem.Client.episodes`` and the MCP tools are built from); ``model``: what
        extraction calls."""
        return request.run_on(self, model)

    # -- async API ------------------------------------------------------------------------------

    async def arun(self, request: EpisodeRequest[R], model: ChatModel | None = None) -> R:
        """Async :meth:`run`."""
        return await request.arun_on(self, model)

    async def aadd(self, episode: Episode | Mapping[str, Any]) -> Episode:
        """Async :meth:`add`."""
        return (await run_async(self._add_flow([Episode.of(episode)]), self.store))[0]

    async def aextract(self, model: ChatModel, messages: Sequence[Message], *,
                       thread_id: str | None = None,
                       instructions: str | None = None) -> Extracted:
        """Async :meth:`extract`."""
        return await run_async(self._extract_flow(tuple(messages), thread_id, instructions),
                               self.store, model)

    async def aselect_examples(self, query: str, k: int = 3, budget_tokens: int | None = None,
                               *, mmr: float = 0.7, max_similarity: float = 0.8,
                               min_relevance: float = 0.2,
                               filter: Mapping[str, Any] | None = None,
                               counter: TokenCounter = DEFAULT_COUNTER) -> Selection:
        """Async :meth:`select_examples`."""
        ranked = await run_async(
            self._search_flow(query, _depth(k, budget_tokens), mmr, filter), self.store)
        return fit_examples(_relevant(ranked, min_relevance), _check_k(k),
                            _check_budget(budget_tokens), max_similarity=max_similarity,
                            counter=counter)


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50:
        raise InvalidInputError(f"k must be an int from 1 to 50, got {k!r}")
    return k


def _check_budget(budget: Any) -> int | None:
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or budget < 1):
        raise InvalidInputError(f"budget_tokens must be an int >= 1 or None, got {budget!r}")
    return budget


def _depth(k: int, budget: int | None) -> int:
    # room to skip near-duplicates and examples too long for the budget
    _check_k(k)
    _check_budget(budget)
    return min(100, k * 5)


def _relevant(ranked: list[tuple[Episode, float]], floor: float) -> list[Episode]:
    if not 0.0 <= floor <= 1.0:
        raise InvalidInputError(f"min_relevance must be within [0, 1], got {floor!r}")
    top = max((score for _, score in ranked), default=0.0)
    return [episode for episode, score in ranked if score >= floor * top]


def episode_of(item: Item) -> Episode:
    """The episode an item holds (pydantic's ValidationError, a ValueError, if it does not
    parse); its id must be the item's key."""
    episode = Episode.model_validate(item.value)
    if episode.id != item.key:
        raise ValueError(f"id is {episode.id!r} but the episode is kept under {item.key!r}")
    return episode

