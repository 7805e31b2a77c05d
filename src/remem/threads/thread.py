"""A handle on one thread: the thread methods with the thread id filled in (on an embedded
:class:`ThreadStore` or on a server's threads, :class:`~remem.threads.remote.RemoteThreads`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from remem.messages.inputs import MessagesInput
from remem.messages.types import Message
from remem.store.types import NOT_PROVIDED, NotProvided
from remem.threads._aio import in_thread
from remem.threads.types import Checkpoint, ThreadInfo
from remem.tokens import TokenCounter

if TYPE_CHECKING:
    from remem.llm.base import ChatModel
    from remem.threads.api import TTL, ThreadAPI
    from remem.threads.summary import SummaryPolicy

__all__ = ["Thread"]


class Thread:
    """One thread of a :class:`~remem.threads.store.ThreadStore` (or of any
    :class:`~remem.threads.api.ThreadAPI`, such as a server's ``client.threads``).

    Holds only the store and the id: every call reads or writes the database, so several
    handles (or processes) on one thread always see its latest state.

    >>> from remem.threads import ThreadStore
    >>> from remem.messages import Message
    >>> with ThreadStore() as threads:
    ...     chat = threads.create(metadata={"user_id": "u1"})
    ...     _ = chat.append([Message.user("hi"), Message.assistant("hello")])
    ...     [m.text for m in chat.messages()]
    ['hi', 'hello']
    """

    __slots__ = ("id", "store")

    def __init__(self, store: ThreadAPI, thread_id: str) -> None:
        self.store = store
        self.id = thread_id

    def __repr__(self) -> str:
        return f"Thread({self.id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Thread) and other.store is self.store and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def info(self) -> ThreadInfo:
        """The thread's record (metadata, head checkpoint, timestamps)."""
        return self.store.get(self.id)

    def append(self, messages: MessagesInput, *,
               expected_head: str | None = None,
               metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """See :meth:`ThreadStore.append`."""
        return self.store.append(self.id, messages, expected_head=expected_head,
                                 metadata=metadata)

    def messages(self, *, checkpoint_id: str | None = None, start: int = 0,
                 stop: int | None = None, last: int | None = None) -> list[Message]:
        """See :meth:`ThreadStore.messages`."""
        return self.store.messages(self.id, checkpoint_id=checkpoint_id, start=start,
                                   stop=stop, last=last)

    def checkpoint(self, checkpoint_id: str | None = None) -> Checkpoint:
        """See :meth:`ThreadStore.checkpoint`."""
        return self.store.checkpoint(self.id, checkpoint_id)

    def checkpoints(self, *, limit: int = 100, offset: int = 0) -> list[Checkpoint]:
        """See :meth:`ThreadStore.checkpoints`."""
        return self.store.checkpoints(self.id, limit=limit, offset=offset)

    def update_state(self, state: Mapping[str, Any], *, merge: bool = True,
                     expected_head: str | None = None,
                     metadata: Mapping[str, Any] | None = None) -> Checkpoint:
        """See :meth:`ThreadStore.update_state`."""
        return self.store.update_state(self.id, state, merge=merge, expected_head=expected_head,
                                       metadata=metadata)

    def set_metadata(self, metadata: Mapping[str, Any], *, merge: bool = True) -> ThreadInfo:
        """See :meth:`ThreadStore.set_metadata`."""
        return self.store.set_metadata(self.id, metadata, merge=merge)

    def rewind(self, checkpoint_id: str) -> Checkpoint:
        """See :meth:`ThreadStore.rewind`."""
        return self.store.rewind(self.id, checkpoint_id)

    def fork(self, checkpoint_id: str | None = None, *, new_thread_id: str | None = None,
             metadata: Mapping[str, Any] | None = None,
             ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """See :meth:`ThreadStore.fork`."""
        return self.store.fork(self.id, checkpoint_id, new_thread_id=new_thread_id,
                               metadata=metadata, ttl=ttl)

    def copy(self, checkpoint_id: str | None = None, *, new_thread_id: str | None = None,
             metadata: Mapping[str, Any] | None = None,
             ttl: TTL | NotProvided = NOT_PROVIDED) -> Thread:
        """See :meth:`ThreadStore.copy`."""
        return self.store.copy(self.id, checkpoint_id, new_thread_id=new_thread_id,
                               metadata=metadata, ttl=ttl)

    def delete(self) -> bool:
        """See :meth:`ThreadStore.delete`."""
        return self.store.delete(self.id)

    def compact(self, model: ChatModel | None = None, policy: SummaryPolicy | None = None, *,
                force: bool = True) -> Checkpoint:
        """See :meth:`ThreadStore.compact`."""
        return self.store.compact(self.id, model, policy, force=force)

    def context(self, *, max_tokens: int | None = None, max_messages: int | None = None,
                checkpoint_id: str | None = None,
                counter: TokenCounter | None = None) -> list[Message]:
        """See :meth:`ThreadStore.context`."""
        return self.store.context(self.id, max_tokens=max_tokens, max_messages=max_messages,
                                  checkpoint_id=checkpoint_id, counter=counter)

    def prompt_messages(self, *, max_tokens: int | None = None,
                        counter: TokenCounter | None = None) -> list[Message]:
        """The messages to send next: :meth:`context` at the head."""
        return self.context(max_tokens=max_tokens, counter=counter)

    ainfo = in_thread(info)
    aappend = in_thread(append)
    amessages = in_thread(messages)
    acheckpoint = in_thread(checkpoint)
    acheckpoints = in_thread(checkpoints)
    aupdate_state = in_thread(update_state)
    aset_metadata = in_thread(set_metadata)
    arewind = in_thread(rewind)
    afork = in_thread(fork)
    acopy = in_thread(copy)
    adelete = in_thread(delete)
    acompact = in_thread(compact)
    acontext = in_thread(context)
    aprompt_messages = in_thread(prompt_messages)
