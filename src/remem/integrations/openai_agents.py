"""remem threads as an OpenAI Agents SDK session (no import of the SDK: its ``Session`` is a
structural protocol, so this module works with ``pip install openai-agents`` beside remem).

:class:`RememSession` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``) over a remem thread, so an agent's
conversation is a remem thread: searchable, forkable, summarised like any other. Each SDK
item becomes one remem message (a user, assistant or system message with its text, a tool
call, or a tool result) carrying the exact item in its metadata, so ``get_items`` returns
what was added, unchanged; messages that other code appended to the thread come back as
``{"role": ..., "content": text}`` items.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from remem.errors import InvalidInputError, NotFoundError
from remem.messages.types import Message, ToolCall
from remem.threads.api import ThreadAPI

__all__ = ["RememSession", "item_of", "message_of"]

_ITEM = "openai_agents_item"  # the metadata key holding the SDK item
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(part.get("text", "")) for part in content
                       if isinstance(part, Mapping))
    return ""


def message_of(item: Mapping[str, Any]) -> Message:
    """An SDK input item as a remem message (the item itself in ``metadata``)."""
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"a session item must be a dict, got {type(item).__name__}")
    data = json.loads(json.dumps(item, default=str))  # plain JSON, as the SDK serialises it
    meta = {_ITEM: data}
    kind, role = item.get("type"), item.get("role")
    if role in _ROLES and kind in (None, "message"):
        text = _text(item.get("content"))
        if _ROLES[role] == "user":
            return Message.user(text, metadata=meta)
        if _ROLES[role] == "system":
            return Message.system(text, metadata=meta)
        return Message.assistant(text, metadata=meta)
    if kind == "function_call":
        try:
            arguments = json.loads(item.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = {}
        call = ToolCall(id=str(item.get("call_id") or item.get("id") or "call"),
                        name=str(item.get("name") or "tool"),
                        arguments=arguments if isinstance(arguments, dict) else {})
        return Message(role="assistant", tool_calls=(call,), metadata=meta)
    if kind == "function_call_output":
        output = item.get("output")
        return Message.tool(str(item.get("call_id") or "call"),
                            output if isinstance(output, str) else json.dumps(output),
                            metadata=meta)
    return Message(role="assistant", metadata=meta)  # reasoning, tool searches...: kept as is


def item_of(message: Message) -> dict[str, Any]:
    """The SDK item a remem message stands for."""
    item = message.metadata.get(_ITEM)
    if isinstance(item, dict):
        return item
    role = "developer" if message.role == "system" else message.role
    if role == "tool":
        return {"type": "function_call_output", "call_id": message.tool_call_id,
                "output": message.text}
    return {"role": role, "content": message.text}


class RememSession:
    """An OpenAI Agents SDK session over the remem thread ``session_id`` (created on the
    first ``add_items``). ``threads``: a :class:`~remem.threads.ThreadStore` (SQLite or
    PostgreSQL) or a server's ``client.threads``. ``metadata`` is set on the thread when it
    is created (e.g. ``{"user_id": "u1"}``, to list a user's sessions)."""

    session_settings: Any = None

    def __init__(self, session_id: str, threads: ThreadAPI, *,
                 metadata: Mapping[str, Any] | None = None) -> None:
        if not isinstance(threads, ThreadAPI):
            raise InvalidInputError(f"RememSession needs remem threads (a ThreadStore), got "
                                    f"{type(threads).__name__}")
        self.session_id = session_id
        self.threads = threads
        self.metadata = dict(metadata or {})

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The session's items, oldest first (the latest ``limit`` when given)."""
        try:
            messages = await self.threads.amessages(self.session_id, last=limit)
        except NotFoundError:
            return []
        return [item_of(message) for message in messages]

    async def add_items(self, items: list[Any]) -> None:
        """Append items (one remem checkpoint per call)."""
        if not items:
            return
        messages = [message_of(item) for item in items]
        if not await self.threads.aexists(self.session_id):
            await self.threads.acreate(self.session_id, metadata=self.metadata or None)
        await self.threads.aappend(self.session_id, messages)

    async def pop_item(self) -> dict[str, Any] | None:
        """Remove and return the newest item: the thread rewinds to before it (earlier
        checkpoints stay readable, as for any remem rewind)."""
        try:
            messages = await self.threads.amessages(self.session_id)
        except NotFoundError:
            return None
        if not messages:
            return None
        keep = len(messages) - 1
        checkpoints = await self.threads.acheckpoints(self.session_id, limit=1000)
        base = next((c for c in checkpoints if c.position <= keep
                     and c.thread_id == self.session_id), None)
        if base is None:  # no checkpoint of this thread that short: start it anew
            await self.threads.adelete(self.session_id)
            if keep:
                await self.add_items([item_of(m) for m in messages[:keep]])
            return item_of(messages[-1])
        await self.threads.arewind(self.session_id, base.id)
        if keep > base.position:
            await self.threads.aappend(self.session_id, list(messages[base.position:keep]))
        return item_of(messages[-1])

    async def clear_session(self) -> None:
        """Delete the session's thread (and its checkpoints)."""
        await self.threads.adelete(self.session_id)
