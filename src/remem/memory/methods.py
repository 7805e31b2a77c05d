"""The memory methods, written once: :class:`MemoryAPI`, the base of the embedded
:class:`remem.api.Memory` and of :class:`remem.Client` (the same methods over HTTP).

Each method only builds its request (:mod:`remem.memory.requests`) and hands it to
:meth:`MemoryAPI.run` or :meth:`MemoryAPI.arun`, which each subclass implements: ``Memory`` runs
the request's flow on its store, ``Client`` sends it to a server. The signatures are spelled out
(not generated) for IDE help and type checking; ``tests/surfaces/test_parity.py`` keeps them
equal to the requests' fields and defaults.

``actor`` (who a change is recorded as in history) is not a method parameter: it belongs to
whoever runs the request. ``Memory(store, actor=...)`` records its writes as that actor (default
``"user"``); a server records the caller's key, whatever a client sends. One request with its own
actor: ``run(AddRequest.of(..., actor="agent"))``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from remem.memory.history import HistoryEvent
from remem.memory.records import MemoryRecord
from remem.memory.requests import (
    AddRequest,
    DeleteAllRequest,
    DeleteRequest,
    GetAllRequest,
    GetRequest,
    HistoryRequest,
    MemoryRequest,
    MessagesInput,
    SearchRequest,
    UndoRequest,
    UpdateRequest,
)
from remem.memory.results import ChangeResult, MemoryPage, SearchResult
from remem.memory.store_manager import AddResult, Split
from remem.store.types import SearchMode

__all__ = ["MemoryAPI", "method_args"]

R = TypeVar("R")
Q = TypeVar("Q", bound=MemoryRequest[Any])


def method_args(values: dict[str, Any]) -> dict[str, Any]:
    """A method's arguments (its ``locals()`` on entry) as request fields: every parameter
    reaches the request, so a method cannot forget one the parity test says it takes."""
    return {name: value for name, value in values.items() if name != "self"}


class MemoryAPI(abc.ABC):
    """Add, search, get, list, update, delete, history and undo, sync and async.

    Subclasses implement :meth:`run` and :meth:`arun`; every other method here is one request.
    Bad arguments raise :class:`~remem.errors.InvalidInputError` naming the field and rule.
    """

    def request_defaults(self) -> Mapping[str, Any]:
        """Fields every request this object builds carries, where the request has them
        (``Memory``: its ``actor``; ``Client``: none, the server records the caller's key)."""
        return {}

    @abc.abstractmethod
    def run(self, request: MemoryRequest[R]) -> R:
        """Run one memory request and return its result: ``run(SearchRequest.of(query="tea",
        user_id="alice"))`` is ``search("tea", user_id="alice")``."""

    @abc.abstractmethod
    async def arun(self, request: MemoryRequest[R]) -> R:
        """Async :meth:`run`."""

    def _request(self, kind: type[Q], values: dict[str, Any]) -> Q:
        fields = method_args(values)
        for name, value in self.request_defaults().items():
            if name in kind.model_fields:
                fields.setdefault(name, value)
        return kind.of(**fields)

    # -- sync ---------------------------------------------------------------------------------

    def add(self, messages: MessagesInput, *, user_id: str | None = None,
            agent_id: str | None = None, thread_id: str | None = None,
            namespace: Sequence[str] | None = None, infer: bool | None = None,
            metadata: Mapping[str, Any] | None = None, kind: str = "fact",
            split: Split = "user_messages") -> AddResult:
        """Remember what ``messages`` say.

        ``infer=True`` extracts memories with one LLM call and reconciles them with what is
        stored (none for an exact duplicate); ``infer=False`` stores the text as is (kind
        ``kind``), embedded and searchable at once: one memory per user message, per turn
        (``split="turns"``) or of the whole conversation (``split="none"``). Left unset, it
        extracts when a chat model is configured and stores as is otherwise (on a server:
        when the server has one). The result lists the changes, what was skipped, whether a
        model extracted them (``inferred``), and the LLM calls and tokens it cost.
        """
        return self.run(self._request(AddRequest, locals()))

    def search(self, query: str | None = None, *, user_id: str | None = None,
               agent_id: str | None = None, thread_id: str | None = None,
               namespace: Sequence[str] | None = None,
               filters: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
               as_of: datetime | float | None = None, include_invalid: bool = False,
               mode: SearchMode = "auto", min_score: float | None = None,
               recency_half_life: float | None = None, recency_weight: float = 0.2,
               mmr: float | None = None, stages: str | None = None) -> SearchResult:
        """Current memories in the scope, best first for ``query`` (newest first without).

        ``filters``: the store's filter language over record fields (``kind``,
        ``metadata.*``...). ``limit`` / ``offset``: the page. ``as_of``: an aware datetime
        or epoch seconds; returns what was valid then. ``include_invalid``: also superseded
        and deleted memories. With a query: ``min_score`` (0-1) drops the hits whose
        relevance is below it (``MemoryHit.relevance``: each hit's match with the query,
        whatever the page; ``docs/search.md``, "Scores");
        ``recency_half_life`` (seconds) weighs newer memories up by ``recency_weight``;
        ``mmr`` (0-1) diversifies the page (needs vectors). ``stages``: the conversation
        ranking stages for memories with a thread (:mod:`remem.memory.stages`; ``None``:
        the measured defaults, ``"none"``: plain hybrid).
        """
        return self.run(self._request(SearchRequest, locals()))

    def get(self, memory_id: str) -> MemoryRecord:
        """The memory with this id (:class:`~remem.errors.NotFoundError` if none)."""
        return self.run(self._request(GetRequest, locals()))

    def get_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                thread_id: str | None = None, namespace: Sequence[str] | None = None,
                filters: Mapping[str, Any] | None = None, limit: int = 100, offset: int = 0,
                include_invalid: bool = False) -> MemoryPage:
        """The memories of a scope (required), newest first, a page at a time; pass the
        page's ``next_offset`` as ``offset`` for the next one."""
        return self.run(self._request(GetAllRequest, locals()))

    def update(self, memory_id: str, content: str | dict[str, Any] | None = None, *,
               kind: str | None = None, metadata: Mapping[str, Any] | None = None,
               version: int | None = None, reason: str = "") -> ChangeResult:
        """Correct a memory in place (same id, version + 1; history keeps the old content).
        ``version``: fail with :class:`~remem.errors.ConflictError` if it changed since."""
        return self.run(self._request(UpdateRequest, locals()))

    def delete(self, memory_id: str, *, hard: bool = False, version: int | None = None,
               reason: str = "") -> ChangeResult:
        """Invalidate a memory (kept for history and ``as_of``); ``hard=True`` removes it."""
        return self.run(self._request(DeleteRequest, locals()))

    def delete_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                   thread_id: str | None = None, namespace: Sequence[str] | None = None,
                   hard: bool = False, reason: str = "") -> ChangeResult:
        """Forget a scope (required) in one call: invalidate every current memory under it
        (``hard=True``: remove every memory, history keeps each last state). Undoing any
        event of the result undoes the whole call."""
        return self.run(self._request(DeleteAllRequest, locals()))

    def history(self, memory_id: str) -> list[HistoryEvent]:
        """Every change of a memory, oldest first."""
        return self.run(self._request(HistoryRequest, locals()))

    def undo(self, event_id: str) -> ChangeResult:
        """Revert the change an event recorded (both halves of a supersession; every
        memory of a delete_all)."""
        return self.run(self._request(UndoRequest, locals()))

    # -- async --------------------------------------------------------------------------------

    async def aadd(self, messages: MessagesInput, *, user_id: str | None = None,
                   agent_id: str | None = None, thread_id: str | None = None,
                   namespace: Sequence[str] | None = None, infer: bool | None = None,
                   metadata: Mapping[str, Any] | None = None, kind: str = "fact",
                   split: Split = "user_messages") -> AddResult:
        """Async :meth:`add`."""
        return await self.arun(self._request(AddRequest, locals()))

    async def asearch(self, query: str | None = None, *, user_id: str | None = None,
                      agent_id: str | None = None, thread_id: str | None = None,
                      namespace: Sequence[str] | None = None,
                      filters: Mapping[str, Any] | None = None, limit: int = 10,
                      offset: int = 0, as_of: datetime | float | None = None,
                      include_invalid: bool = False, mode: SearchMode = "auto",
                      min_score: float | None = None, recency_half_life: float | None = None,
                      recency_weight: float = 0.2, mmr: float | None = None,
                      stages: str | None = None) -> SearchResult:
        """Async :meth:`search`."""
        return await self.arun(self._request(SearchRequest, locals()))

    async def aget(self, memory_id: str) -> MemoryRecord:
        """Async :meth:`get`."""
        return await self.arun(self._request(GetRequest, locals()))

    async def aget_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                       thread_id: str | None = None, namespace: Sequence[str] | None = None,
                       filters: Mapping[str, Any] | None = None, limit: int = 100,
                       offset: int = 0, include_invalid: bool = False) -> MemoryPage:
        """Async :meth:`get_all`."""
        return await self.arun(self._request(GetAllRequest, locals()))

    async def aupdate(self, memory_id: str, content: str | dict[str, Any] | None = None, *,
                      kind: str | None = None, metadata: Mapping[str, Any] | None = None,
                      version: int | None = None, reason: str = "") -> ChangeResult:
        """Async :meth:`update`."""
        return await self.arun(self._request(UpdateRequest, locals()))

    async def adelete(self, memory_id: str, *, hard: bool = False, version: int | None = None,
                      reason: str = "") -> ChangeResult:
        """Async :meth:`delete`."""
        return await self.arun(self._request(DeleteRequest, locals()))

    async def adelete_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                          thread_id: str | None = None,
                          namespace: Sequence[str] | None = None, hard: bool = False,
                          reason: str = "") -> ChangeResult:
        """Async :meth:`delete_all`."""
        return await self.arun(self._request(DeleteAllRequest, locals()))

    async def ahistory(self, memory_id: str) -> list[HistoryEvent]:
        """Async :meth:`history`."""
        return await self.arun(self._request(HistoryRequest, locals()))

    async def aundo(self, event_id: str) -> ChangeResult:
        """Async :meth:`undo`."""
        return await self.arun(self._request(UndoRequest, locals()))
