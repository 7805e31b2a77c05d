"""Convert messages to and from LangChain-style message dicts (no LangChain import needed).

:func:`to_langchain` writes ``{"type": "human"|"ai"|"system"|"tool", "content": ...,
"tool_calls": [{"name", "args", "id", "type": "tool_call"}], "tool_call_id": ..., "id": ...}``,
the shape of LangChain's message fields, which ``langchain_core.messages`` classes accept as
keyword arguments. :func:`from_langchain` reads that shape, its ``{"role": ...}`` variant
(``user``/``assistant`` or ``human``/``ai``, with OpenAI- or LangChain-style tool calls), and
the serialised ``{"type": ..., "data": {...}}`` form of ``messages_to_dict``.

>>> from remem.messages import Message, to_langchain, from_langchain
>>> to_langchain([Message.user("hi", id="m1")])
[{'type': 'human', 'content': 'hi', 'id': 'm1'}]
>>> from_langchain([{"role": "ai", "content": "hello"}])[0].role
'assistant'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from remem.errors import MessageFormatError
from remem.messages.convert_common import (
    build,
    data_url,
    field,
    image_part,
    image_url_part,
    optional_str,
    parse_arguments,
    require_dict,
    require_list,
    require_str,
)
from remem.messages.convert_openai import openai_content
from remem.messages.types import ImagePart, Message, TextPart, ToolCall

__all__ = ["from_langchain", "from_langchain_message", "to_langchain", "to_langchain_message"]

_TYPES = {"system": "system", "human": "human", "ai": "ai", "tool": "tool"}
_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user",
          "assistant": "assistant", "ai": "assistant", "tool": "tool", "function": "tool"}
_TYPE_TO_ROLE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool",
                 "chat": None, "AIMessageChunk": "assistant", "HumanMessageChunk": "user"}
_ROLE_TO_TYPE = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}


def to_langchain_message(message: Message) -> dict[str, Any]:
    """One message as a LangChain-style dict."""
    out: dict[str, Any] = {"type": _ROLE_TO_TYPE[message.role],
                           "content": openai_content(message.content)}
    if message.tool_calls:
        out["tool_calls"] = [{"name": c.name, "args": c.arguments, "id": c.id,
                              "type": "tool_call"} for c in message.tool_calls]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        out["status"] = "error" if message.is_error else "success"
    if message.name:
        out["name"] = message.name
    out["id"] = message.id
    return out


def to_langchain(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as LangChain-style dicts."""
    return [to_langchain_message(message) for message in messages]


def _parts(value: Any, where: str) -> list[TextPart | ImagePart]:
    if value is None:
        return []
    if isinstance(value, str):
        return [TextPart(text=value)] if value else []
    parts: list[TextPart | ImagePart] = []
    for index, raw in enumerate(require_list(value, where)):
        at = field(where, index)
        if isinstance(raw, str):  # LangChain allows bare strings in a content list
            parts.append(TextPart(text=raw))
            continue
        part = require_dict(raw, at)
        kind = part.get("type")
        if kind == "text":
            parts.append(TextPart(text=require_str(part.get("text"), field(at, "text"))))
        elif kind == "image_url":
            parts.append(image_url_part(part, at))
        elif kind == "image":  # LangChain's standard block: url, or base64 data + mime_type
            if isinstance(part.get("url"), str):
                parts.append(image_part(part["url"], part.get("mime_type"), at))
            else:
                mime = require_str(part.get("mime_type"), field(at, "mime_type"),
                                   allow_empty=False)
                data = require_str(part.get("data", part.get("base64")), field(at, "data"))
                parts.append(image_part(data_url(mime, data), mime, at))
        else:
            raise MessageFormatError(
                f"{field(at, 'type')} is {kind!r}; remem reads 'text', 'image_url' and 'image' "
                "content blocks")
    return parts


def _tool_calls(value: Any, where: str) -> list[ToolCall]:
    calls = []
    for index, raw in enumerate(require_list(value, where)):
        at = field(where, index)
        call = require_dict(raw, at)
        if "function" in call:  # OpenAI style, as in role-keyed dicts
            function = require_dict(call["function"], field(at, "function"))
            name = function.get("name")
            args = parse_arguments(function.get("arguments", ""), field(at, "function.arguments"))
        else:
            name = call.get("name")
            args = parse_arguments(call.get("args", {}), field(at, "args"))
        calls.append(ToolCall(
            id=require_str(call.get("id"), field(at, "id"), allow_empty=False),
            name=require_str(name, field(at, "name"), allow_empty=False), arguments=args))
    return calls


def from_langchain_message(data: Mapping[str, Any], where: str = "message") -> Message:
    """One LangChain-style dict (``type``- or ``role``-keyed) as a :class:`Message`."""
    data = require_dict(data, where)
    if "data" in data and isinstance(data.get("data"), Mapping) and "content" not in data:
        # messages_to_dict form: {"type": "human", "data": {"content": ..., ...}}
        return from_langchain_message({**data["data"], "type": data.get("type")}, where)
    role: str | None
    if "type" in data and data.get("type") != "chat":
        kind = data.get("type")
        role = _TYPE_TO_ROLE.get(kind) if isinstance(kind, str) else None
        if role is None:
            raise MessageFormatError(
                f"{field(where, 'type')} is {kind!r}; expected one of {', '.join(_TYPES)} "
                "(or a 'role' key)")
    else:
        raw_role = data.get("role")
        role = _ROLES.get(raw_role) if isinstance(raw_role, str) else None
        if role is None:
            raise MessageFormatError(
                f"{field(where, 'role')} is {raw_role!r}; expected one of "
                f"{', '.join(sorted(_ROLES))} (or a 'type' key)")
    fields: dict[str, Any] = {
        "role": role,
        "content": tuple(_parts(data.get("content"), field(where, "content"))),
        "name": optional_str(data.get("name"), field(where, "name")),
    }
    if isinstance(data.get("id"), str) and data["id"]:
        fields["id"] = data["id"]
    if role == "assistant" and data.get("tool_calls"):
        fields["tool_calls"] = tuple(_tool_calls(data["tool_calls"], field(where, "tool_calls")))
    if role == "tool":
        fields["tool_call_id"] = require_str(data.get("tool_call_id"),
                                             field(where, "tool_call_id"), allow_empty=False)
        status = data.get("status", "success")
        if status not in ("success", "error"):
            raise MessageFormatError(f"{field(where, 'status')} must be 'success' or 'error', "
                                     f"got {status!r}")
        fields["is_error"] = status == "error"
    return build(where, **fields)


def from_langchain(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """LangChain-style dicts as :class:`Message` values."""
    if isinstance(messages, Mapping | str):
        raise MessageFormatError("from_langchain takes a list of message dicts; wrap a single "
                                 "dict as [message] or use from_langchain_message")
    return [from_langchain_message(data, f"messages[{index}]")
            for index, data in enumerate(messages)]
