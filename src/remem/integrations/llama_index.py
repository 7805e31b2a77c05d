"""remem inside LlamaIndex: a memory block and a chat store.

* :class:`RememMemoryBlock`: a long-term block of LlamaIndex's ``Memory``
  (``Memory.from_defaults(memory_blocks=[RememMemoryBlock(memory=..., user_id=...)])``).
  ``aget`` searches a :class:`remem.Memory` with the last user message and answers the best
  memories, one per line; ``aput`` (the messages LlamaIndex flushes out of its short-term
  memory) adds them: each user message as is by default (``infer=False``), or extracted into
  facts by remem's chat model with ``infer=True``.
* :class:`RememDBChatStore`: the store LlamaIndex's ``Memory`` keeps its short-term history
  in (``AsyncDBChatStore``: ``Memory.from_defaults(chat_store=RememDBChatStore(threads))``),
  so a conversation and what was flushed from it live in remem threads, each message with
  its status (active or archived).
* :class:`RememChatStore`: LlamaIndex's ``BaseChatStore`` over remem threads, so
  ``ChatMemoryBuffer.from_defaults(chat_store=..., chat_store_key=...)`` and chat engines
  keep conversations in a :class:`~remem.threads.ThreadStore` (checkpointed, forkable,
  searchable).

Both keep one thread per key, and every ``ChatMessage`` round-trips exactly (its LlamaIndex
form is kept beside remem's). Deleting, inserting or archiving a message rewinds the thread
to before it and appends the rest, so the earlier checkpoints still hold the old history.

Needs ``llama-index-core`` (``pip install 'remem[llama-index]'``).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock
from llama_index.core.memory import BaseMemoryBlock
from llama_index.core.storage.chat_store import BaseChatStore
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus
from pydantic import Field, PrivateAttr, model_validator

from remem.api import Memory
from remem.errors import InvalidInputError
from remem.messages.types import Message, ToolCall
from remem.store.types import Namespace
from remem.threads.api import ThreadAPI

from ._threads import shared_prefix, stored_messages, write_messages

__all__ = ["RememChatStore", "RememDBChatStore", "RememMemoryBlock", "chat_message_of",
           "message_of"]

#: where a remem message keeps the LlamaIndex message it was made from
_LLAMA_INDEX = "llama_index"
#: where a message of RememDBChatStore keeps its status (active or archived)
_STATUS = "llama_index_status"
#: the thread metadata key that marks the threads of a chat store (its name as the value)
STORE_KEY = "llama_index_chat_store"
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "chatbot": "assistant", "model": "assistant", "tool": "tool", "function": "tool"}


def _text(message: ChatMessage) -> str:
    return "".join(block.text for block in message.blocks if isinstance(block, TextBlock))


def message_of(message: ChatMessage) -> Message:
    """A LlamaIndex ``ChatMessage`` as a remem message (its exact form in ``metadata``)."""
    kept = message.model_dump(mode="json")
    meta = {_LLAMA_INDEX: kept}
    role = _ROLES.get(str(kept.get("role")), "assistant")
    text = _text(message)
    if role == "tool":
        call_id = message.additional_kwargs.get("tool_call_id")
        return Message.tool(str(call_id or "call"), text, metadata=meta)
    calls = tuple(ToolCall(id=block.tool_call_id or f"call_{n}", name=block.tool_name,
                           arguments=block.tool_kwargs if isinstance(block.tool_kwargs, dict)
                           else {"input": block.tool_kwargs})
                  for n, block in enumerate(message.blocks)
                  if isinstance(block, ToolCallBlock) and block.tool_name)
    if calls and role == "assistant":
        return Message.assistant(text, tool_calls=calls, metadata=meta)
    return Message(role=role, content=text, metadata=meta)  # type: ignore[arg-type]


def chat_message_of(message: Message) -> ChatMessage:
    """The LlamaIndex message a remem message stands for (one that other code appended to
    the thread: its role and text)."""
    kept = message.metadata.get(_LLAMA_INDEX)
    if isinstance(kept, Mapping):
        return ChatMessage.model_validate(dict(kept))
    extra = {"tool_call_id": message.tool_call_id} if message.tool_call_id else {}
    return ChatMessage(role=message.role, content=message.text, additional_kwargs=extra)


def _form(message: Message) -> str:
    """What two remem messages are compared by: their LlamaIndex form and status."""
    return json.dumps([message.metadata.get(_LLAMA_INDEX), message.metadata.get(_STATUS)],
                      sort_keys=True)


def _keys(threads: ThreadAPI, name: str, *, empty: bool = True) -> list[str]:
    """The ids of the threads a chat store named ``name`` made, most recently changed first
    (without those that hold no message unless ``empty``)."""
    keys: list[str] = []
    seen = 0
    page = 100
    while True:
        found = threads.list_threads({STORE_KEY: name}, limit=page, offset=seen)
        seen += len(found)
        keys.extend(info.thread_id for info in found if empty or info.length)
        if len(found) < page:
            return keys


def _write(threads: ThreadAPI, key: str, stored: Sequence[Message],
           wanted: Sequence[Message], metadata: Mapping[str, Any], name: str) -> None:
    write_messages(threads, key, stored, wanted, shared_prefix(stored, wanted, _form),
                   metadata={**metadata, STORE_KEY: name})


class RememChatStore(BaseChatStore):
    """LlamaIndex's ``BaseChatStore`` over ``threads`` (a :class:`~remem.threads.ThreadStore`
    or a server's ``client.threads``): each key is a thread id (created on first write, with
    ``metadata`` and a mark naming this store, ``name``, so :meth:`get_keys` lists its own
    threads only). A key is 1-256 printable characters without ``/``. LlamaIndex's async
    methods run these in a worker thread."""

    name: str = Field(default="default", description="the store's name among the threads")
    metadata: dict[str, Any] = Field(default_factory=dict,
                                     description="set on each thread when it is created")
    _threads: ThreadAPI = PrivateAttr()

    def __init__(self, threads: ThreadAPI, **data: Any) -> None:
        if not isinstance(threads, ThreadAPI):
            raise InvalidInputError(f"RememChatStore needs remem threads (a ThreadStore), got "
                                    f"{type(threads).__name__}")
        super().__init__(**data)
        self._threads = threads

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's name for this component."""
        return "RememChatStore"

    @property
    def threads(self) -> ThreadAPI:
        """The remem threads the conversations are kept in."""
        return self._threads

    def _write(self, key: str, stored: Sequence[Message], wanted: Sequence[Message]) -> None:
        _write(self._threads, key, stored, wanted, self.metadata, self.name)

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Make ``key``'s conversation hold exactly ``messages``."""
        self._write(key, stored_messages(self._threads, key),
                    [message_of(m) for m in messages])

    def get_messages(self, key: str) -> list[ChatMessage]:
        """``key``'s messages, oldest first (none for a key never written)."""
        return [chat_message_of(m) for m in stored_messages(self._threads, key)]

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append ``message`` (or insert it at position ``idx``)."""
        stored = stored_messages(self._threads, key)
        wanted = list(stored)
        if idx is None:
            wanted.append(message_of(message))
        else:
            wanted.insert(idx, message_of(message))
        self._write(key, stored, wanted)

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete ``key``'s thread; its messages (``None`` for an unknown key)."""
        if not self._threads.exists(key):
            return None
        messages = self.get_messages(key)
        self._threads.delete(key)
        return messages

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove the message at position ``idx`` and return it (``None`` past the end or
        for an unknown key)."""
        stored = stored_messages(self._threads, key)
        if idx >= len(stored) or -idx > len(stored):
            return None
        wanted = list(stored)
        removed = wanted.pop(idx)
        self._write(key, stored, wanted)
        return chat_message_of(removed)

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Remove the newest message and return it (``None`` when there is none)."""
        return self.delete_message(key, -1)

    def get_keys(self) -> list[str]:
        """The keys of this store's conversations, most recently changed first."""
        return _keys(self._threads, self.name)


def _with_status(message: ChatMessage, status: MessageStatus) -> Message:
    made = message_of(message)
    return made.model_copy(update={"metadata": {**made.metadata, _STATUS: status.value}})


def _status_of(message: Message) -> str:
    return str(message.metadata.get(_STATUS, MessageStatus.ACTIVE.value))


class RememDBChatStore(AsyncDBChatStore):
    """The chat store LlamaIndex's ``Memory`` keeps its short-term history in
    (``AsyncDBChatStore``, ``Memory.from_defaults(chat_store=...)``), over ``threads``: one
    thread per key, each message with its status (active, or archived once ``Memory`` has
    flushed it to its memory blocks) beside its exact LlamaIndex form. Archiving, deleting or
    replacing messages rewinds the thread and appends the rest, so its earlier checkpoints
    keep every version. ``delete_message(key, idx)`` takes the message's position in the
    conversation (all statuses), where LlamaIndex's SQL store takes its row id. The calls run
    in a worker thread."""

    name: str = Field(default="default", description="the store's name among the threads")
    metadata: dict[str, Any] = Field(default_factory=dict,
                                     description="set on each thread when it is created")
    _threads: ThreadAPI = PrivateAttr()

    def __init__(self, threads: ThreadAPI, **data: Any) -> None:
        if not isinstance(threads, ThreadAPI):
            raise InvalidInputError(f"RememDBChatStore needs remem threads (a ThreadStore), "
                                    f"got {type(threads).__name__}")
        super().__init__(**data)
        self._threads = threads

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's name for this component."""
        return "RememDBChatStore"

    @property
    def threads(self) -> ThreadAPI:
        """The remem threads the conversations are kept in."""
        return self._threads

    def _read(self, key: str) -> list[Message]:
        return stored_messages(self._threads, key)

    def _replace(self, key: str, stored: list[Message], wanted: list[Message]) -> None:
        _write(self._threads, key, stored, wanted, self.metadata, self.name)

    def _get(self, key: str, status: MessageStatus | None, limit: int | None,
             offset: int | None) -> list[ChatMessage]:
        found = [m for m in self._read(key) if status is None or _status_of(m) == status.value]
        start = offset or 0
        return [chat_message_of(m) for m in
                found[start:None if limit is None else start + limit]]

    async def get_messages(self, key: str,
                           status: MessageStatus | None = MessageStatus.ACTIVE,
                           limit: int | None = None,
                           offset: int | None = None) -> list[ChatMessage]:
        """``key``'s messages with ``status`` (``None``: all), oldest first, from ``offset``,
        at most ``limit``."""
        return await asyncio.to_thread(self._get, key, status, limit, offset)

    async def count_messages(self, key: str,
                             status: MessageStatus | None = MessageStatus.ACTIVE) -> int:
        """How many messages ``key`` has with ``status`` (``None``: all)."""
        return len(await self.get_messages(key, status))

    def _add(self, key: str, messages: list[ChatMessage], status: MessageStatus) -> None:
        stored = self._read(key)
        self._replace(key, stored, [*stored, *(_with_status(m, status) for m in messages)])

    async def add_message(self, key: str, message: ChatMessage,
                          status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Append ``message`` with ``status``."""
        await asyncio.to_thread(self._add, key, [message], status)

    async def add_messages(self, key: str, messages: list[ChatMessage],
                           status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Append ``messages`` with ``status`` (one checkpoint)."""
        await asyncio.to_thread(self._add, key, list(messages), status)

    def _set(self, key: str, messages: list[ChatMessage], status: MessageStatus) -> None:
        self._replace(key, self._read(key), [_with_status(m, status) for m in messages])

    async def set_messages(self, key: str, messages: list[ChatMessage],
                           status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Make ``key`` hold exactly ``messages``, all with ``status``."""
        await asyncio.to_thread(self._set, key, list(messages), status)

    def _delete_at(self, key: str, idx: int) -> ChatMessage | None:
        stored = self._read(key)
        if not 0 <= idx < len(stored):
            return None
        wanted = list(stored)
        removed = wanted.pop(idx)
        self._replace(key, stored, wanted)
        return chat_message_of(removed)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove the message at position ``idx`` and return it (``None`` if there is none)."""
        return await asyncio.to_thread(self._delete_at, key, idx)

    def _delete_all(self, key: str, status: MessageStatus | None) -> None:
        if status is None:
            self._threads.delete(key)
            return
        stored = self._read(key)
        self._replace(key, stored, [m for m in stored if _status_of(m) != status.value])

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete ``key``'s messages with ``status`` (``None``: the whole thread)."""
        await asyncio.to_thread(self._delete_all, key, status)

    def _oldest(self, key: str, n: int, archive: bool) -> list[ChatMessage]:
        stored = self._read(key)
        chosen = [i for i, m in enumerate(stored)
                  if _status_of(m) == MessageStatus.ACTIVE.value][:max(n, 0)]
        if not chosen:
            return []
        wanted = list(stored)
        for i in reversed(chosen):
            if archive:
                wanted[i] = stored[i].model_copy(update={"metadata": {
                    **stored[i].metadata, _STATUS: MessageStatus.ARCHIVED.value}})
            else:
                del wanted[i]
        self._replace(key, stored, wanted)
        return [chat_message_of(stored[i]) for i in chosen]

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Remove the ``n`` oldest active messages and return them."""
        return await asyncio.to_thread(self._oldest, key, n, False)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Mark the ``n`` oldest active messages archived and return them."""
        return await asyncio.to_thread(self._oldest, key, n, True)

    async def get_keys(self) -> list[str]:
        """The keys of this store's conversations that hold messages, most recently changed
        first."""
        return await asyncio.to_thread(functools.partial(_keys, self._threads, self.name,
                                                         empty=False))


def _last_user_text(messages: Sequence[ChatMessage] | None) -> str:
    for message in reversed(messages or ()):
        if str(message.role.value) == "user":
            return _text(message)
    return ""


class RememMemoryBlock(BaseMemoryBlock[str]):
    """A long-term memory block of LlamaIndex's ``Memory`` over ``memory`` (a
    :class:`remem.Memory`), in one scope: ``user_id`` / ``agent_id`` / ``thread_id`` or
    ``namespace`` (one is required). ``limit`` memories answer each ``aget`` (``min_score``,
    0-1, drops those whose relevance is below it); ``infer`` says how ``aput`` stores (see
    the module docstring)."""

    name: str = Field(default="remem", description="the block's name in the memory template")
    memory: Memory
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    namespace: list[str] | None = None
    limit: int = Field(default=5, ge=1, le=1000)
    min_score: float | None = Field(default=None, ge=0, le=1)
    infer: bool | None = False

    @model_validator(mode="after")
    def _has_scope(self) -> RememMemoryBlock:
        self.scope()  # a missing or bad scope fails here, not at the first call
        return self

    def scope(self) -> Namespace:
        """The namespace the block reads and writes."""
        return self.memory.namespace_of(self.user_id, self.agent_id, self.thread_id,
                                        self.namespace)

    async def _aget(self, messages: list[ChatMessage] | None = None,
                    **block_kwargs: Any) -> str:
        """The memories that best match the last user message, one ``- text`` line each,
        best first (the newest when there is no user text)."""
        text = _last_user_text(messages)
        found = await self.memory.asearch(text if text.strip() else None,
                                          namespace=self.scope(), limit=self.limit,
                                          min_score=self.min_score)
        return "\n".join(f"- {hit.memory.text}" for hit in found)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Remember ``messages`` (user messages as is, or extracted with ``infer=True``)."""
        converted = [message_of(m) for m in messages]
        kept = [m.model_copy(update={"metadata": {}}) for m in converted
                if m.role in ("user", "assistant") and m.text.strip()]
        if any(m.role == "user" for m in kept):
            await self.memory.aadd(kept, namespace=self.scope(), infer=self.infer)
