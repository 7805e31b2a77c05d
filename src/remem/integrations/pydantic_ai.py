"""remem inside Pydantic AI: memory tools and message history kept in a remem thread.

* :func:`pydantic_ai_tools` / :func:`pydantic_ai_toolset`: any remem toolset
  (``MemoryTools``, ``FileTools``, ``BlockTools``, ``ArchivalTools``, ``ConversationTools``)
  as Pydantic AI ``Tool`` objects (or one ``FunctionToolset``) with the toolset's own JSON
  schemas; a call runs the remem tool and answers with its text (errors worded for the
  model, as remem's tools do).
* :class:`RememMessageHistory`: a conversation's ``ModelMessage`` list kept in a remem thread
  (checkpointed, forkable, searchable): ``load()`` gives what to pass as
  ``message_history=``, ``save(result.all_messages())`` appends what the run added. Every
  message round-trips exactly (its ``ModelMessagesTypeAdapter`` form is kept beside
  remem's).

Needs ``pydantic-ai-slim`` (``pip install 'remem[pydantic-ai]'``).

>>> from remem import FakeEmbedder, Memory
>>> from remem.tools import MemoryTools
>>> memory = Memory.open(":memory:", embedder=FakeEmbedder())
>>> [tool.name for tool in pydantic_ai_tools(MemoryTools(memory, user_id="alice"))]
['manage_memory', 'search_memory']
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic_ai import Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.toolsets import FunctionToolset

from remem.errors import InvalidInputError
from remem.messages.types import Message, ToolCall
from remem.threads.api import ThreadAPI
from remem.tools.export import Toolset

from ._threads import shared_prefix, stored_messages, write_messages

__all__ = ["RememMessageHistory", "message_of", "model_message_of", "pydantic_ai_tools",
           "pydantic_ai_toolset"]

#: where a remem message keeps the Pydantic AI message it was made from
_PYDANTIC_AI = "pydantic_ai"


def pydantic_ai_tools(toolset: Toolset) -> list[Tool[Any]]:
    """``toolset``'s tools as Pydantic AI tools (the remem schemas sent unchanged)."""
    tools: list[Tool[Any]] = []
    for spec in toolset.specs():
        async def run(_name: str = spec.name, **arguments: Any) -> str:
            answer = await toolset.aexecute(ToolCall(id="call", name=_name,
                                                     arguments=arguments))
            return answer.text

        tools.append(Tool.from_schema(run, name=spec.name, description=spec.description,
                                      json_schema=dict(spec.parameters)))
    return tools


def pydantic_ai_toolset(toolset: Toolset) -> FunctionToolset[Any]:
    """``toolset``'s tools as one Pydantic AI ``FunctionToolset`` (``toolsets=[...]``)."""
    return FunctionToolset(pydantic_ai_tools(toolset))


def _prompt_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return " ".join(item for item in part.content if isinstance(item, str))


def _request(message: ModelRequest, meta: dict[str, Any]) -> Message:
    prompts = [_prompt_text(p) for p in message.parts if isinstance(p, UserPromptPart)]
    if prompts:
        return Message.user("\n".join(prompts), metadata=meta)
    returns = [p for p in message.parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
    if returns:
        text = "\n".join(p.model_response_str() if isinstance(p, ToolReturnPart)
                         else p.model_response() for p in returns)
        return Message.tool(returns[0].tool_call_id or "call", text, metadata=meta)
    system = [p.content for p in message.parts if isinstance(p, SystemPromptPart)]
    if system:
        return Message.system("\n".join(system), metadata=meta)
    # other parts (retry feedback...): their text, as the user's turn
    texts = [said for p in message.parts if isinstance(said := getattr(p, "content", None), str)]
    return Message.user("\n".join(texts), metadata=meta)


def message_of(message: ModelMessage) -> Message:
    """A Pydantic AI message as a remem message (its exact form in ``metadata``): a request
    is the user's text (or the tool results it returns, or its system prompt), a response
    the assistant's text and tool calls."""
    kept = ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    meta = {_PYDANTIC_AI: kept}
    if isinstance(message, ModelRequest):
        return _request(message, meta)
    text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
    calls = tuple(ToolCall(id=p.tool_call_id or f"call_{n}", name=p.tool_name,
                           arguments=p.args_as_dict())
                  for n, p in enumerate(message.parts) if isinstance(p, ToolCallPart))
    return Message.assistant(text, tool_calls=calls, metadata=meta)


def model_message_of(message: Message) -> ModelMessage:
    """The Pydantic AI message a remem message stands for (one that other code appended to
    the thread: a request or response with its text, stamped with the message's time)."""
    kept = message.metadata.get(_PYDANTIC_AI)
    if isinstance(kept, Mapping):
        return ModelMessagesTypeAdapter.validate_python([dict(kept)])[0]
    when = datetime.fromtimestamp(message.created_at, UTC)
    if message.role == "assistant":
        return ModelResponse(parts=[TextPart(message.text)], timestamp=when)
    if message.role == "system":
        return ModelRequest(parts=[SystemPromptPart(message.text, timestamp=when)])
    if message.role == "tool":
        return ModelRequest(parts=[ToolReturnPart(
            tool_name=message.name or "tool", content=message.text,
            tool_call_id=message.tool_call_id or "call", timestamp=when)])
    return ModelRequest(parts=[UserPromptPart(message.text, timestamp=when)])


def _form(message: Message) -> str:
    """What two remem messages are compared by: their Pydantic AI form."""
    return json.dumps(message.metadata.get(_PYDANTIC_AI), sort_keys=True)


class RememMessageHistory:
    """The Pydantic AI messages of conversation ``conversation_id``, kept in the remem thread
    of that id in ``threads`` (a :class:`~remem.threads.ThreadStore` or a server's
    ``client.threads``); ``metadata`` is set on the thread when it is created (e.g.
    ``{"user_id": "u1"}``). The async methods run the sync ones in a worker thread."""

    def __init__(self, threads: ThreadAPI, conversation_id: str, *,
                 metadata: Mapping[str, Any] | None = None) -> None:
        if not isinstance(threads, ThreadAPI):
            raise InvalidInputError(f"RememMessageHistory needs remem threads (a "
                                    f"ThreadStore), got {type(threads).__name__}")
        self.threads = threads
        self.conversation_id = conversation_id
        self.metadata = dict(metadata or {})

    def load(self) -> list[ModelMessage]:
        """The conversation's messages, oldest first (none before the first save)."""
        return [model_message_of(m) for m in stored_messages(self.threads,
                                                             self.conversation_id)]

    def save(self, messages: Sequence[ModelMessage]) -> None:
        """Make the conversation hold ``messages`` (usually ``result.all_messages()``): the
        ones after what is stored are appended as one checkpoint; a history rewritten from
        message ``n`` on rewinds the thread to ``n`` first (the old messages stay in its
        earlier checkpoints)."""
        stored = stored_messages(self.threads, self.conversation_id)
        wanted = [message_of(m) for m in messages]
        write_messages(self.threads, self.conversation_id, stored, wanted,
                       shared_prefix(stored, wanted, _form), metadata=self.metadata)

    def clear(self) -> None:
        """Delete the conversation's thread."""
        self.threads.delete(self.conversation_id)

    async def aload(self) -> list[ModelMessage]:
        """Async :meth:`load`."""
        return await asyncio.to_thread(self.load)

    async def asave(self, messages: Sequence[ModelMessage]) -> None:
        """Async :meth:`save`."""
        await asyncio.to_thread(self.save, list(messages))

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await asyncio.to_thread(self.clear)
