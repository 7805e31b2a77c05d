"""remem inside LangChain: tools, a chat message history and a retriever.

* :func:`langchain_tools`: any remem toolset (``MemoryTools``, ``FileTools``, ``BlockTools``,
  ``ArchivalTools``, ``ConversationTools``) as LangChain ``StructuredTool`` objects, with the
  toolset's own JSON schemas (``bind_tools`` sends them to the model unchanged);
* :class:`RememChatMessageHistory`: LangChain's ``BaseChatMessageHistory`` over a remem
  thread, so ``RunnableWithMessageHistory`` and friends keep conversations in a
  :class:`~remem.threads.ThreadStore` (checkpointed, forkable, searchable); every message
  round-trips exactly (its LangChain form is kept beside remem's);
* :class:`RememRetriever`: LangChain's ``BaseRetriever`` over :meth:`Memory.search
  <remem.api.Memory.search>`: one ``Document`` per memory, best first.

Needs ``langchain-core`` (``pip install 'remem[langchain]'``).

>>> from remem import FakeEmbedder, Memory
>>> memory = Memory.open(":memory:", embedder=FakeEmbedder())
>>> _ = memory.add("Alice drinks green tea", user_id="alice", infer=False)
>>> retriever = RememRetriever(memory=memory, user_id="alice", k=1)
>>> [doc.page_content for doc in retriever.invoke("tea")]
['Alice drinks green tea']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ConfigDict, Field

from remem.api import Memory
from remem.errors import InvalidInputError, MessageFormatError, NotFoundError
from remem.memory.results import MemoryHit
from remem.messages import Message, ToolCall, from_langchain
from remem.threads.api import ThreadAPI
from remem.tools.export import Toolset

__all__ = ["RememChatMessageHistory", "RememRetriever", "langchain_tools"]

#: where a remem message keeps the LangChain message it was made from
_LANGCHAIN = "langchain"


def langchain_tools(toolset: Toolset) -> list[BaseTool]:
    """``toolset``'s tools as LangChain tools; a call runs the remem tool (sync or async)
    and answers with its text (errors worded for the model, as remem's tools do)."""
    tools: list[BaseTool] = []
    for spec in toolset.specs():
        def run(_name: str = spec.name, **arguments: Any) -> str:
            return toolset.execute(ToolCall(id="call", name=_name, arguments=arguments)).text

        async def arun(_name: str = spec.name, **arguments: Any) -> str:
            answer = await toolset.aexecute(ToolCall(id="call", name=_name,
                                                     arguments=arguments))
            return answer.text

        tools.append(StructuredTool(name=spec.name, description=spec.description,
                                    args_schema=dict(spec.parameters), func=run,
                                    coroutine=arun))
    return tools


def _remem_message(message: BaseMessage) -> Message:
    """``message`` as a remem message that carries its exact LangChain form."""
    kept = message_to_dict(message)
    try:
        converted = from_langchain([kept])[0]
    except MessageFormatError:  # a kind remem does not model (e.g. a function message)
        converted = Message(role="assistant")
    return converted.model_copy(update={"metadata": {**converted.metadata, _LANGCHAIN: kept}})


def _langchain_message(message: Message) -> BaseMessage:
    kept = message.metadata.get(_LANGCHAIN)
    if isinstance(kept, Mapping):
        return messages_from_dict([dict(kept)])[0]
    from remem.messages import to_langchain  # written by remem itself, without the copy

    return messages_from_dict([{"type": each.pop("type"), "data": each}
                               for each in to_langchain([message])])[0]


class RememChatMessageHistory(BaseChatMessageHistory):
    """The messages of the remem thread ``session_id`` (created on the first add) in
    ``threads`` (a :class:`~remem.threads.ThreadStore` or a server's ``client.threads``);
    ``metadata`` is set on the thread when it is created (e.g. ``{"user_id": "u1"}``).
    ``clear()`` deletes the thread."""

    def __init__(self, session_id: str, threads: ThreadAPI, *,
                 metadata: Mapping[str, Any] | None = None) -> None:
        if not isinstance(threads, ThreadAPI):
            raise InvalidInputError(f"RememChatMessageHistory needs remem threads (a "
                                    f"ThreadStore), got {type(threads).__name__}")
        self.session_id = session_id
        self.threads = threads
        self.metadata = dict(metadata or {})

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The thread's messages, oldest first (none for a thread not yet created)."""
        try:
            found = self.threads.messages(self.session_id)
        except NotFoundError:
            return []
        return [_langchain_message(message) for message in found]

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        try:
            found = await self.threads.amessages(self.session_id)
        except NotFoundError:
            return []
        return [_langchain_message(message) for message in found]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` (one checkpoint)."""
        if not messages:
            return
        if not self.threads.exists(self.session_id):
            self.threads.create(self.session_id, metadata=self.metadata or None)
        self.threads.append(self.session_id, [_remem_message(m) for m in messages])

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages`."""
        if not messages:
            return
        if not await self.threads.aexists(self.session_id):
            await self.threads.acreate(self.session_id, metadata=self.metadata or None)
        await self.threads.aappend(self.session_id, [_remem_message(m) for m in messages])

    def clear(self) -> None:
        """Delete the thread (its history goes with it)."""
        self.threads.delete(self.session_id)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await self.threads.adelete(self.session_id)


def _document(hit: MemoryHit) -> Document:
    record = hit.memory
    return Document(page_content=record.text, id=record.id, metadata={
        "id": record.id, "score": hit.score, "kind": record.kind,
        "namespace": list(record.namespace), "valid_at": record.valid_at,
        "metadata": dict(record.metadata)})


class RememRetriever(BaseRetriever):
    """The memories of a scope (``user_id`` / ``agent_id`` / ``thread_id`` or a
    ``namespace``) that best match a query, ``k`` of them, as ``Document``s; ``k`` may also be
    given per call (``retriever.invoke(query, k=3)``), and ``search_kwargs`` passes any other
    :meth:`Memory.search <remem.api.Memory.search>` option (``filters``, ``mode``, ...)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    namespace: tuple[str, ...] | None = None
    k: int = Field(default=4, ge=1, le=1000)
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    def _arguments(self, query: str, k: int | None) -> dict[str, Any]:
        return {"query": query, "user_id": self.user_id, "agent_id": self.agent_id,
                "thread_id": self.thread_id, "namespace": self.namespace,
                **self.search_kwargs, "limit": k if k is not None else self.k}

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        found = self.memory.search(**self._arguments(query, k))
        return [_document(hit) for hit in found]

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None) -> list[Document]:
        found = await self.memory.asearch(**self._arguments(query, k))
        return [_document(hit) for hit in found]
