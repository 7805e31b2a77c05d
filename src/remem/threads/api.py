"""The thread API as methods, written once over :meth:`ThreadAPI.run` / :meth:`ThreadAPI.arun`.

Every method builds its request (:mod:`remem.threads.requests`) and runs it: an embedded
:class:`~remem.threads.store.ThreadStore` runs requests against its database, a
:class:`~remem.threads.remote.RemoteThreads` sends them to a server. Both inherit these
methods, so they take the same parameters with the same defaults by construction, and a
:class:`~remem.threads.thread.Thread` handle works on either.

Each async twin (``a`` prefix) takes the same arguments and returns the same result.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from remem.errors import NotFoundError
from remem.messages.inputs import MessagesInput
from remem.store.types import NOT_PROVIDED, NotProvided, SearchMode
from remem.threads.requests import (
    AppendRequest,
    CheckpointRequest,
    CheckpointsRequest,
    CompactRequest,
    CopyRequest,
    CreateThreadRequest,
    DeleteThreadRequest,
    ForkRequest,
    GetThreadRequest,
    ListThreadsRequest,
    MessagesRequest,
    RewindRequest,
    SearchThreadsRequest,
    SetMetadataRequest,
    ThreadContextRequest,
    ThreadRequest,
    UpdateStateRequest,
)
from remem.threads.types import Checkpoint, ThreadInfo

if TYPE_CHECKING:
    from remem.llm.base import ChatModel
    from remem.messages.types import Message
    from remem.threads.search import ThreadHit
    from remem.threads.summary import SummaryPolicy
    from remem.threads.thread import Thread
    from remem.tokens import TokenCounter

__all__ = ["TTL", "ThreadAPI"]

R = TypeVar("R")

TTL = float | timedelta | None
"""A time to live: seconds, a timedelta, or ``None`` (never expires)."""


def _ttl(ttl: TTL | NotProvided) -> dict[str, Any]:
    # left out, not None: None means "never expires"
    return {} if ttl is NOT_PROVIDED else {"ttl": ttl}


class ThreadAPI(abc.ABC):
    """Threads: create, append, read, list, fork, copy, rewind, search, summarise, delete.

    Subclasses implement :meth:`run` and :meth:`arun`; every other method is one request.
    Bad arguments raise :class:`~remem.errors.InvalidInputError` naming the field and rule.
    """

    @abc.abstractmethod
    def run(self, request: ThreadRequest[R]) -> R:
        """Run one thread request and return its result (what every method does)."""

    @abc.abstractmethod
    async def arun(self, request: ThreadRequest[R]) -> R:
        """Async :meth:`run`."""

    # -- threads ------------------------------------------------------------------------------

    def create(self, thread_id: str | None = None, *, metadata: Mapping[str, Any] | None = None,
               messages: MessagesInput | None = None,
               ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """Create a thread (a new id unless ``thread_id`` is given) and return its handle.

        ``metadata``: JSON object to list and search threads by (e.g. ``{"user_id": "u1"}``).
        ``messages``: its first messages. ``ttl``: seconds (or ``None``) instead of the
        store's default. Raises :class:`~remem.errors.ConflictError` if the id is taken.
        """
        return self.run(CreateThreadRequest.of(thread_id=thread_id, metadata=metadata,
                                               messages=messages, **_ttl(ttl)))

    async def acreate(self, thread_id: str | None = None, *,
                      metadata: Mapping[str, Any] | None = None,
                      messages: MessagesInput | None = None,
                      ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """Async :meth:`create`."""
        return await self.arun(CreateThreadRequest.of(thread_id=thread_id, metadata=metadata,
                                                      messages=messages, **_ttl(ttl)))

    def get(self, thread_id: str) -> ThreadInfo:
        """The thread's record; raises :class:`~remem.errors.NotFoundError` if it does not
        exist or expired."""
        return self.run(GetThreadRequest.of(thread_id=thread_id))

    async def aget(self, thread_id: str) -> ThreadInfo:
        """Async :meth:`get`."""
        return await self.arun(GetThreadRequest.of(thread_id=thread_id))

    def thread(self, thread_id: str) -> Thread:
        """A handle on an existing thread (raises :class:`~remem.errors.NotFoundError`)."""
        from remem.threads.thread import Thread

        self.get(thread_id)
        return Thread(self, thread_id)

    async def athread(self, thread_id: str) -> Thread:
        """Async :meth:`thread`."""
        from remem.threads.thread import Thread

        await self.aget(thread_id)
        return Thread(self, thread_id)

    def exists(self, thread_id: str) -> bool:
        """Whether the thread exists (and has not expired)."""
        try:
            self.get(thread_id)
        except NotFoundError:
            return False
        return True

    async def aexists(self, thread_id: str) -> bool:
        """Async :meth:`exists`."""
        try:
            await self.aget(thread_id)
        except NotFoundError:
            return False
        return True

    def list_threads(self, filter: Mapping[str, Any] | None = None, *, limit: int = 20,
                     offset: int = 0) -> list[ThreadInfo]:
        """Live threads whose metadata matches ``filter`` (the store's filter language, e.g.
        ``{"user_id": "u1"}`` or ``{"topic": {"$in": ["a", "b"]}}``), most recently changed
        first."""
        return self.run(ListThreadsRequest.of(filter=filter, limit=limit, offset=offset))

    async def alist_threads(self, filter: Mapping[str, Any] | None = None, *, limit: int = 20,
                            offset: int = 0) -> list[ThreadInfo]:
        """Async :meth:`list_threads`."""
        return await self.arun(ListThreadsRequest.of(filter=filter, limit=limit,
                                                     offset=offset))

    def delete(self, thread_id: str) -> bool:
        """Delete a thread and its checkpoints; return whether it existed. Forks made from it
        keep their messages."""
        return self.run(DeleteThreadRequest.of(thread_id=thread_id))

    async def adelete(self, thread_id: str) -> bool:
        """Async :meth:`delete`."""
        return await self.arun(DeleteThreadRequest.of(thread_id=thread_id))

    def set_metadata(self, thread_id: str, metadata: Mapping[str, Any], *,
                     merge: bool = True) -> ThreadInfo:
        """Update the thread's metadata (merged into the old one unless ``merge=False``)."""
        return self.run(SetMetadataRequest.of(thread_id=thread_id, metadata=metadata,
                                              merge=merge))

    async def aset_metadata(self, thread_id: str, metadata: Mapping[str, Any], *,
                            merge: bool = True) -> ThreadInfo:
        """Async :meth:`set_metadata`."""
        return await self.arun(SetMetadataRequest.of(thread_id=thread_id, metadata=metadata,
                                                     merge=merge))

    # -- messages and checkpoints -------------------------------------------------------------

    def append(self, thread_id: str, messages: MessagesInput, *,
               expected_head: str | None = None,
               metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """Append messages as one new checkpoint and return the thread's head afterwards.

        ``messages``: ``Message`` values, OpenAI-style dicts or text (a user message), alone
        or in a list. ``expected_head``: the checkpoint id you last read; if the thread moved
        on meanwhile the append raises :class:`~remem.errors.ConflictError` instead of
        interleaving. ``metadata`` is recorded on the checkpoint. With auto-compaction
        configured, the returned head may be the compaction checkpoint that followed.
        """
        return self.run(AppendRequest.of(thread_id=thread_id, messages=messages,
                                         expected_head=expected_head, metadata=metadata))

    async def aappend(self, thread_id: str, messages: MessagesInput, *,
                      expected_head: str | None = None,
                      metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """Async :meth:`append`."""
        return await self.arun(AppendRequest.of(thread_id=thread_id, messages=messages,
                                                expected_head=expected_head,
                                                metadata=metadata))

    def messages(self, thread_id: str, *, checkpoint_id: str | None = None, start: int = 0,
                 stop: int | None = None, last: int | None = None) -> list[Message]:
        """The thread's messages at its head (or at ``checkpoint_id``): positions
        ``start .. stop - 1`` (Python slice rules for negatives), or the ``last`` n."""
        return self.run(MessagesRequest.of(thread_id=thread_id, checkpoint_id=checkpoint_id,
                                           start=start, stop=stop, last=last))

    async def amessages(self, thread_id: str, *, checkpoint_id: str | None = None,
                        start: int = 0, stop: int | None = None,
                        last: int | None = None) -> list[Message]:
        """Async :meth:`messages`."""
        return await self.arun(MessagesRequest.of(thread_id=thread_id,
                                                  checkpoint_id=checkpoint_id, start=start,
                                                  stop=stop, last=last))

    def checkpoint(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint:
        """A checkpoint of the thread (its head when ``checkpoint_id`` is ``None``)."""
        return self.run(CheckpointRequest.of(thread_id=thread_id, checkpoint_id=checkpoint_id))

    async def acheckpoint(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint:
        """Async :meth:`checkpoint`."""
        return await self.arun(CheckpointRequest.of(thread_id=thread_id,
                                                    checkpoint_id=checkpoint_id))

    def checkpoints(self, thread_id: str, *, limit: int = 100,
                    offset: int = 0) -> list[Checkpoint]:
        """The thread's checkpoints, newest first (a fork's start from its source thread's
        checkpoint, which is its first checkpoint's parent)."""
        return self.run(CheckpointsRequest.of(thread_id=thread_id, limit=limit, offset=offset))

    async def acheckpoints(self, thread_id: str, *, limit: int = 100,
                           offset: int = 0) -> list[Checkpoint]:
        """Async :meth:`checkpoints`."""
        return await self.arun(CheckpointsRequest.of(thread_id=thread_id, limit=limit,
                                                     offset=offset))

    def update_state(self, thread_id: str, state: Mapping[str, Any], *, merge: bool = True,
                     expected_head: str | None = None,
                     metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """Save a new head checkpoint with the same messages and a new state (merged into the
        head's unless ``merge=False``). ``expected_head`` as in :meth:`append`."""
        return self.run(UpdateStateRequest.of(thread_id=thread_id, state=state, merge=merge,
                                              expected_head=expected_head, metadata=metadata))

    async def aupdate_state(self, thread_id: str, state: Mapping[str, Any], *,
                            merge: bool = True, expected_head: str | None = None,
                            metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """Async :meth:`update_state`."""
        return await self.arun(UpdateStateRequest.of(
            thread_id=thread_id, state=state, merge=merge, expected_head=expected_head,
            metadata=metadata))

    def rewind(self, thread_id: str, checkpoint_id: str) -> Checkpoint:
        """Time travel in place: the head becomes a new checkpoint with the messages and state
        of ``checkpoint_id`` (its parent). Later checkpoints stay listed and readable; the next
        append branches off from here."""
        return self.run(RewindRequest.of(thread_id=thread_id, checkpoint_id=checkpoint_id))

    async def arewind(self, thread_id: str, checkpoint_id: str) -> Checkpoint:
        """Async :meth:`rewind`."""
        return await self.arun(RewindRequest.of(thread_id=thread_id,
                                                checkpoint_id=checkpoint_id))

    def fork(self, thread_id: str, checkpoint_id: str | None = None, *,
             new_thread_id: str | None = None, metadata: Mapping[str, Any] | None = None,
             ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """A new thread that starts at ``checkpoint_id`` (default: the head) of ``thread_id``,
        sharing its history without copying it. ``metadata`` is merged into the source's;
        ``ttl`` is the source's unless given."""
        return self.run(ForkRequest.of(thread_id=thread_id, checkpoint_id=checkpoint_id,
                                       new_thread_id=new_thread_id, metadata=metadata,
                                       **_ttl(ttl)))

    async def afork(self, thread_id: str, checkpoint_id: str | None = None, *,
                    new_thread_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                    ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """Async :meth:`fork`."""
        return await self.arun(ForkRequest.of(thread_id=thread_id, checkpoint_id=checkpoint_id,
                                              new_thread_id=new_thread_id, metadata=metadata,
                                              **_ttl(ttl)))

    def copy(self, thread_id: str, checkpoint_id: str | None = None, *,
             new_thread_id: str | None = None, metadata: Mapping[str, Any] | None = None,
             ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """Like :meth:`fork`, but the new thread gets its own copy of the messages (it stays
        whole whatever happens to the source; costs time and space per message)."""
        return self.run(CopyRequest.of(thread_id=thread_id, checkpoint_id=checkpoint_id,
                                       new_thread_id=new_thread_id, metadata=metadata,
                                       **_ttl(ttl)))

    async def acopy(self, thread_id: str, checkpoint_id: str | None = None, *,
                    new_thread_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                    ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """Async :meth:`copy`."""
        return await self.arun(CopyRequest.of(thread_id=thread_id, checkpoint_id=checkpoint_id,
                                              new_thread_id=new_thread_id, metadata=metadata,
                                              **_ttl(ttl)))

    # -- search, summaries, prompts -----------------------------------------------------------

    def search(self, query: str, *, owner: str | None = None, limit: int = 5,
               per_thread: int = 3, exclude: Sequence[str] = (),
               mode: SearchMode = "auto") -> list[ThreadHit]:
        """Past threads matching ``query`` by keywords and meaning (see
        :meth:`ThreadIndex.search <remem.threads.search.ThreadIndex.search>`); threads
        deleted or expired since are left out. Needs an index (``ThreadStore(index=...)``)."""
        return self.run(SearchThreadsRequest.of(query=query, owner=owner, limit=limit,
                                                per_thread=per_thread, exclude=exclude,
                                                mode=mode))

    async def asearch(self, query: str, *, owner: str | None = None, limit: int = 5,
                      per_thread: int = 3, exclude: Sequence[str] = (),
                      mode: SearchMode = "auto") -> list[ThreadHit]:
        """Async :meth:`search`."""
        return await self.arun(SearchThreadsRequest.of(query=query, owner=owner, limit=limit,
                                                       per_thread=per_thread, exclude=exclude,
                                                       mode=mode))

    def compact(self, thread_id: str, model: ChatModel | None = None,
                policy: SummaryPolicy | None = None, *, force: bool = True) -> Checkpoint:
        """Fold the older messages into the running summary (stored in the checkpoint state
        with what it covers and what it cost) and return the head. ``model``/``policy``
        default to the store's ``summarizer``/``policy``; ``force=False`` compacts only past
        ``policy.trigger_tokens``."""
        return self.run(CompactRequest.of(thread_id=thread_id, model=model, policy=policy,
                                          force=force))

    async def acompact(self, thread_id: str, model: ChatModel | None = None,
                       policy: SummaryPolicy | None = None, *,
                       force: bool = True) -> Checkpoint:
        """Async :meth:`compact`."""
        return await self.arun(CompactRequest.of(thread_id=thread_id, model=model,
                                                 policy=policy, force=force))

    def context(self, thread_id: str, *, max_tokens: int | None = None,
                max_messages: int | None = None, checkpoint_id: str | None = None,
                counter: TokenCounter | None = None) -> list[Message]:
        """The messages to send to a model: system prompt, running summary, then the messages
        it does not cover, trimmed to ``max_tokens`` / ``max_messages`` (counted with
        ``counter``, an offline estimate by default) without breaking tool calls."""
        return self.run(ThreadContextRequest.of(thread_id=thread_id, max_tokens=max_tokens,
                                          max_messages=max_messages,
                                          checkpoint_id=checkpoint_id, counter=counter))

    async def acontext(self, thread_id: str, *, max_tokens: int | None = None,
                       max_messages: int | None = None, checkpoint_id: str | None = None,
                       counter: TokenCounter | None = None) -> list[Message]:
        """Async :meth:`context`."""
        return await self.arun(ThreadContextRequest.of(thread_id=thread_id, max_tokens=max_tokens,
                                                 max_messages=max_messages,
                                                 checkpoint_id=checkpoint_id,
                                                 counter=counter))
