"""remem threads as an OpenAI Agents SDK session (``pip install openai-agents`` beside remem;
the SDK's ``Session`` is a structural protocol, and this module imports the SDK only to build
its ``SessionSettings``).

:class:`RememSession` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``, ``session_settings``) over a remem thread, so
an agent's conversation is a remem thread: searchable, forkable, summarised like any other.
Every SDK item becomes one remem message carrying the item's JSON text in its metadata
(``json.dumps(item)``, as the SDK's ``SQLiteSession`` stores it), so ``get_items`` returns
what was added, unchanged, whatever its kind: messages, tool calls and their outputs,
reasoning, item references, hosted tool calls, empty content. The message's
text is what people and remem's search read: the item's own text, or a short label such as
``[function_call get_weather]`` when it has none. Messages that other code appended to the
thread come back as ``{"role": ..., "content": text}`` items.

``limit`` and ``session_settings`` mean what they mean for ``SQLiteSession``: ``None`` is
``session_settings.limit`` (``None``: every item), a positive ``n`` the latest ``n`` items,
``0`` none, a negative number every item.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from remem.errors import (
    ConflictError,
    InvalidInputError,
    MessageFormatError,
    NotFoundError,
    UsageError,
)
from remem.messages.types import Message, ToolCall
from remem.requests import MAX_MESSAGES, MAX_TEXT
from remem.threads.api import ThreadAPI
from remem.threads.types import Checkpoint

__all__ = ["RememSession", "SessionItemError", "item_of", "message_of"]

_ITEM = "openai_agents_item"  # the metadata key holding the SDK item's JSON text
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
#: the most messages one read of a thread returns by count (MessagesRequest.last)
_MAX_LAST = 100_000
_SURROGATE = re.compile("[\ud800-\udfff]")


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(str(part["text"]) for part in content
                         if isinstance(part, Mapping) and isinstance(part.get("text"), str))
    return ""


def _own_text(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind in (None, "message"):
        return _parts_text(item.get("content"))
    if kind == "function_call_output":
        return _parts_text(item.get("output"))
    if kind == "reasoning":
        return _parts_text(item.get("summary"))
    return ""


def _label(item: Mapping[str, Any]) -> str:
    """What an item without text shows in the thread: ``[kind name]``."""
    kind = item.get("type")
    if kind in (None, "message"):
        return f"[empty {item.get('role') or 'message'} message]"
    name = item.get("name")
    detail = f" {name}" if isinstance(name, str) and name else ""
    return f"[{str(kind or 'item')[:100]}{detail[:100]}]"


def _text(item: Mapping[str, Any]) -> str:
    text = _own_text(item)
    if not text.strip():
        return _label(item)
    # the item keeps everything; the text is what search reads, within remem's rules
    return _SURROGATE.sub("\ufffd", text[:MAX_TEXT])


class SessionItemError(MessageFormatError, TypeError):
    """A session item that is not a JSON object. Also a ``TypeError``, which the SDK's
    ``SQLiteSession`` raises for it (``json.dumps``)."""


def _json(item: Any) -> str:
    if not isinstance(item, Mapping):
        raise SessionItemError(f"a session item must be a dict (an SDK input item), got "
                               f"{type(item).__name__}")
    try:  # what SQLiteSession stores; ASCII, so lone surrogates survive remem's storage
        return json.dumps(item)
    except (TypeError, ValueError) as error:
        raise SessionItemError(f"a session item must be JSON, as the SDK's sessions store "
                               f"it: {error}; convert the item with model_dump()") from error


def message_of(item: Mapping[str, Any]) -> Message:
    """An SDK input item as a remem message (the item's JSON text in ``metadata``)."""
    text_json = _json(item)
    data = json.loads(text_json)
    meta = {_ITEM: text_json}
    text = _text(data)
    kind, role = data.get("type"), data.get("role")
    if role in _ROLES and kind in (None, "message"):
        if _ROLES[role] == "user":
            return Message.user(text, metadata=meta)
        if _ROLES[role] == "system":
            return Message.system(text, metadata=meta)
        return Message.assistant(text, metadata=meta)
    if kind == "function_call":
        try:
            arguments = json.loads(data.get("arguments") or "{}")
        except (TypeError, json.JSONDecodeError):
            arguments = {}
        call = ToolCall(id=str(data.get("call_id") or data.get("id") or "call"),
                        name=str(data.get("name") or "tool"),
                        arguments=arguments if isinstance(arguments, dict) else {})
        return Message.assistant(text, tool_calls=(call,), metadata=meta)
    if kind == "function_call_output":
        return Message.tool(str(data.get("call_id") or "call"), text, metadata=meta)
    # reasoning, item references, hosted tool calls...: kept as is, shown by their label
    return Message.assistant(text, metadata=meta)


def item_of(message: Message) -> dict[str, Any]:
    """The SDK item a remem message stands for."""
    item = message.metadata.get(_ITEM)
    if isinstance(item, str):
        loaded = json.loads(item)
        if isinstance(loaded, dict):
            return loaded
    if isinstance(item, dict):  # written by an earlier remem
        return item
    role = "developer" if message.role == "system" else message.role
    if role == "tool":
        return {"type": "function_call_output", "call_id": message.tool_call_id,
                "output": message.text}
    return {"role": role, "content": message.text}


def _session_settings(value: Any) -> Any:
    """``session_settings`` as the SDK's ``SessionSettings`` (its default when ``None``), so
    the SDK's Runner can resolve it; kept as given where the SDK is not installed."""
    try:
        from agents.memory.session_settings import SessionSettings, coerce_session_settings
    except ImportError:
        return value
    return SessionSettings() if value is None else coerce_session_settings(value)


class RememSession:
    """An OpenAI Agents SDK session over the remem thread ``session_id`` (created on the
    first ``add_items``). ``threads``: a :class:`~remem.threads.ThreadStore` (SQLite or
    PostgreSQL) or a server's ``client.threads``. ``metadata`` is set on the thread when it
    is created (e.g. ``{"user_id": "u1"}``, to list a user's sessions).
    ``session_settings``: the SDK's ``SessionSettings`` (or a dict of them); its ``limit`` is
    how many items ``get_items()`` returns by default. :meth:`open` opens a thread store by
    location, as ``SQLiteSession(session_id, db_path)`` does."""

    def __init__(self, session_id: str, threads: ThreadAPI, *,
                 metadata: Mapping[str, Any] | None = None, session_settings: Any = None,
                 owns_threads: bool = False) -> None:
        if not isinstance(threads, ThreadAPI):
            raise InvalidInputError(f"RememSession needs remem threads (a ThreadStore), got "
                                    f"{type(threads).__name__}")
        self.session_id = session_id
        self.threads = threads
        self.metadata = dict(metadata or {})
        self.session_settings: Any = _session_settings(session_settings)
        self._owns_threads = owns_threads
        self._closed = False

    @classmethod
    def open(cls, session_id: str, location: str = ":memory:", *,
             metadata: Mapping[str, Any] | None = None,
             session_settings: Any = None) -> RememSession:
        """A session over a :class:`~remem.threads.ThreadStore` opened at ``location`` (a
        SQLite path, ``":memory:"`` or a ``postgresql://`` DSN), closed by :meth:`close`."""
        from remem.threads import ThreadStore

        return cls(session_id, ThreadStore(location), metadata=metadata,
                   session_settings=session_settings, owns_threads=True)

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError(f"RememSession {self.session_id!r} is closed; open a new one")

    def _limit(self, limit: int | None) -> int | None:
        if limit is None:
            settings = self.session_settings
            limit = settings.get("limit") if isinstance(settings, Mapping) else \
                getattr(settings, "limit", None)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidInputError(f"limit must be an integer or None, got {limit!r}")
        return limit

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The session's items, oldest first: the latest ``limit`` (``None``:
        ``session_settings.limit``, else all; ``0``: none; negative: all)."""
        self._check_open()
        limit = self._limit(limit)
        if limit == 0:
            return []
        last = limit if limit is not None and 0 < limit <= _MAX_LAST else None
        try:
            messages = await self.threads.amessages(self.session_id, last=last)
        except NotFoundError:
            return []
        if limit is not None and limit > _MAX_LAST:
            messages = messages[-limit:]
        return [item_of(message) for message in messages]

    async def add_items(self, items: list[Any]) -> None:
        """Append items (one remem checkpoint per 500 items)."""
        self._check_open()
        if not items:
            return
        messages = [message_of(item) for item in items]
        for start in range(0, len(messages), MAX_MESSAGES):
            chunk = messages[start:start + MAX_MESSAGES]
            try:
                await self.threads.aappend(self.session_id, chunk)
            except NotFoundError:
                # another session object may have created it meanwhile
                with contextlib.suppress(ConflictError):
                    await self.threads.acreate(self.session_id,
                                               metadata=self.metadata or None)
                await self.threads.aappend(self.session_id, chunk)

    async def _base(self, keep: int) -> Checkpoint | None:
        """The newest checkpoint on the thread's line with at most ``keep`` messages (its
        messages are the first of the current ones), or ``None``."""
        try:
            base = await self.threads.acheckpoint(self.session_id)
            while base.position > keep:
                if base.parent_id is None:
                    return None
                base = await self.threads.acheckpoint(self.session_id, base.parent_id)
        except NotFoundError:  # a fork's source checkpoint belongs to another thread
            return None
        return base if base.thread_id == self.session_id else None

    async def pop_item(self) -> dict[str, Any] | None:
        """Remove and return the newest item: the thread rewinds to before it (earlier
        checkpoints stay readable, as for any remem rewind)."""
        self._check_open()
        try:
            messages = await self.threads.amessages(self.session_id)
        except NotFoundError:
            return None
        if not messages:
            return None
        keep = len(messages) - 1
        base = await self._base(keep)
        if base is None:  # no checkpoint of this thread that short: start it anew
            await self.threads.adelete(self.session_id)
            if keep:
                await self.threads.acreate(self.session_id, metadata=self.metadata or None,
                                           messages=list(messages[:keep]))
            return item_of(messages[-1])
        head = await self.threads.arewind(self.session_id, base.id)
        if keep > base.position:
            await self.threads.aappend(self.session_id, list(messages[base.position:keep]),
                                       expected_head=head.id)
        return item_of(messages[-1])

    async def clear_session(self) -> None:
        """Delete the session's thread (and its checkpoints)."""
        self._check_open()
        await self.threads.adelete(self.session_id)

    def close(self) -> None:
        """Close the session (later calls raise :class:`~remem.errors.UsageError`) and the
        thread store if :meth:`open` opened it."""
        self._closed = True
        close = getattr(self.threads, "close", None)
        if self._owns_threads and callable(close):
            close()
