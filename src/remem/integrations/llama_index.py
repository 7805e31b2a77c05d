"""remem inside LlamaIndex: a memory block and a chat store.

* :class:`RememMemoryBlock`: a long-term block of LlamaIndex's ``Memory``
  (``Memory.from_defaults(memory_blocks=[RememMemoryBlock(memory=..., user_id=...)])``).
  ``aget`` searches a :class:`remem.Memory` with the last user message and answers the best
  memories, one per line; ``aput`` (the messages LlamaIndex flushes out of its short-term
  memory) adds them: each user message as is by default (``infer=False``), or extracted into
  facts by remem's chat model with ``infer=True``.
* :class:`RememChatStore`: LlamaIndex's ``BaseChatStore`` over remem threads, one thread per
  key, so ``ChatMemoryBuffer.from_defaults(chat_store=..., chat_store_key=...)`` and chat
  engines keep conversations in a :class:`~remem.threads.ThreadStore` (checkpointed,
  forkable, searchable). Every ``ChatMessage`` round-trips exactly (its LlamaIndex form is
  kept beside remem's). Deleting or inserting a message rewinds the thread to before it and
  appends the rest, so the earlier checkpoints still hold the old history.

Needs ``llama-index-core`` (``pip install 'remem[llama-index]'``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock
from llama_index.core.memory import BaseMemoryBlock
from llama_index.core.storage.chat_store import BaseChatStore
from pydantic import Field, PrivateAttr, model_validator

from remem.api import Memory
from remem.errors import InvalidInputError
from remem.messages.types import Message, ToolCall
from remem.store.types import Namespace
from remem.threads.api import ThreadAPI

from ._threads import shared_prefix, stored_messages, write_messages

__all__ = ["RememChatStore", "RememMemoryBlock", "chat_message_of", "message_of"]

#: where a remem message keeps the LlamaIndex message it was made from
_LLAMA_INDEX = "llama_index"
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
    """What two remem messages are compared by: their LlamaIndex form."""
    return json.dumps(message.metadata.get(_LLAMA_INDEX), sort_keys=True)


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
        write_messages(self._threads, key, stored, wanted, shared_prefix(stored, wanted, _form),
                       metadata={**self.metadata, STORE_KEY: self.name})

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
        keys: list[str] = []
        page = 100
        while True:
            found = self._threads.list_threads({STORE_KEY: self.name}, limit=page,
                                               offset=len(keys))
            keys.extend(info.thread_id for info in found)
            if len(found) < page:
                return keys


def _last_user_text(messages: Sequence[ChatMessage] | None) -> str:
    for message in reversed(messages or ()):
        if str(message.role.value) == "user":
            return _text(message)
    return ""


class RememMemoryBlock(BaseMemoryBlock[str]):
    """A long-term memory block of LlamaIndex's ``Memory`` over ``memory`` (a
    :class:`remem.Memory`), in one scope: ``user_id`` / ``agent_id`` / ``thread_id`` or
    ``namespace`` (one is required). ``limit`` memories answer each ``aget`` (``min_score``
    drops weaker ones); ``infer`` says how ``aput`` stores (see the module docstring)."""

    name: str = Field(default="remem", description="the block's name in the memory template")
    memory: Memory
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    namespace: list[str] | None = None
    limit: int = Field(default=5, ge=1, le=1000)
    min_score: float | None = None
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
