"""Convert messages to and from OpenAI chat-completions dicts.

>>> from remem.messages import Message, to_openai, from_openai
>>> to_openai([Message.system("Be brief."), Message.user("hi")])
[{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]
>>> from_openai([{"role": "user", "content": "hi"}])[0].text
'hi'

What OpenAI's format cannot hold is dropped on the way out: ``is_error`` on tool results (the
error is in the text), ids, timestamps and metadata. On the way in, ``developer`` messages are
system messages, a single text part is a plain string, tool call arguments (a JSON string)
become dicts, a ``refusal`` becomes text, and remem's own ``id``, ``created_at``,
``metadata`` and ``is_error`` (as ``/v1/threads`` answers messages) are kept. A dict that does
not fit raises :class:`~remem.errors.MessageFormatError` naming the field, and so does a key
the converter does not read (``extra="forbid"``, the default: a dropped field is one the
caller believes was kept); remem's model clients read providers' answers with
``extra="ignore"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from remem.errors import MessageFormatError
from remem.messages.convert_common import (
    Extra,
    build,
    field,
    image_url_part,
    optional_str,
    parse_arguments,
    refuse_unknown,
    remem_fields,
    require_dict,
    require_list,
    require_str,
)
from remem.messages.types import ImagePart, Message, TextPart, ToolCall

__all__ = [
    "from_openai",
    "from_openai_message",
    "openai_content",
    "openai_tool_call",
    "to_openai",
    "to_openai_message",
]

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "tool": "tool", "function": "tool"}
#: the keys of a message dict that :func:`from_openai_message` reads: OpenAI's, then remem's
_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id",
                           "function_call", "refusal", "id", "created_at", "metadata",
                           "is_error"})
_TEXT_KEYS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}


def openai_content(parts: Sequence[TextPart | ImagePart]) -> str | list[dict[str, Any]]:
    """Content as OpenAI wants it: a plain string for zero or one text part, else parts."""
    if not parts:
        return ""
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    return [{"type": "text", "text": p.text} if isinstance(p, TextPart)
            else {"type": "image_url", "image_url": {"url": p.url}} for p in parts]


def openai_tool_call(call: ToolCall) -> dict[str, Any]:
    """One tool call as OpenAI writes it (arguments as a JSON string)."""
    return {"id": call.id, "type": "function",
            "function": {"name": call.name,
                         "arguments": json.dumps(call.arguments, ensure_ascii=False)}}


def to_openai_message(message: Message) -> dict[str, Any]:
    """One message as an OpenAI chat-completions dict."""
    out: dict[str, Any] = {"role": message.role}
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        out["content"] = openai_content(message.content)
        return out
    if message.role == "assistant" and message.tool_calls:
        out["content"] = openai_content(message.content) or None
        out["tool_calls"] = [openai_tool_call(call) for call in message.tool_calls]
    else:
        out["content"] = openai_content(message.content)
    if message.name:
        out["name"] = message.name
    return out


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as OpenAI chat-completions dicts (the ``messages`` request field)."""
    return [to_openai_message(message) for message in messages]


def _parts(value: Any, where: str, extra: Extra) -> list[TextPart | ImagePart]:
    if value is None:
        return []
    if isinstance(value, str):
        return [TextPart(text=value)] if value else []
    parts: list[TextPart | ImagePart] = []
    for index, raw in enumerate(require_list(value, where)):
        at = field(where, index)
        part = require_dict(raw, at)
        kind = part.get("type")
        if isinstance(kind, str) and kind in _TEXT_KEYS:
            key = _TEXT_KEYS[kind]
            refuse_unknown(part, {"type", key}, at, f"a {kind} part", extra)
            parts.append(TextPart(text=require_str(part.get(key), field(at, key))))
        elif kind == "image_url":
            parts.append(image_url_part(part, at, extra))
        else:
            raise MessageFormatError(
                f"{field(at, 'type')} is {kind!r}; remem reads 'text' and 'image_url' parts")
    return parts


def _tool_calls(value: Any, where: str, extra: Extra) -> list[ToolCall]:
    calls = []
    for index, raw in enumerate(require_list(value, where)):
        at = field(where, index)
        call = require_dict(raw, at)
        refuse_unknown(call, {"id", "type", "function"}, at, "a tool call", extra)
        function = require_dict(call.get("function"), field(at, "function"))
        refuse_unknown(function, {"name", "arguments"}, field(at, "function"), "a function",
                       extra)
        calls.append(ToolCall(
            id=require_str(call.get("id"), field(at, "id"), allow_empty=False),
            name=require_str(function.get("name"), field(at, "function.name"),
                             allow_empty=False),
            arguments=parse_arguments(function.get("arguments", ""),
                                      field(at, "function.arguments"))))
    return calls


def from_openai_message(data: Mapping[str, Any], where: str = "message", *,
                        extra: Extra = "forbid") -> Message:
    """One OpenAI chat-completions dict as a :class:`Message`; ``extra``: what a key it does
    not read gets (``"forbid"``: a :class:`~remem.errors.MessageFormatError` naming it)."""
    data = require_dict(data, where)
    refuse_unknown(data, _MESSAGE_KEYS, where, "a message", extra)
    raw_role = data.get("role")
    role = _ROLES.get(raw_role) if isinstance(raw_role, str) else None
    if role is None:
        raise MessageFormatError(
            f"{field(where, 'role')} is {raw_role!r}; expected one of "
            f"{', '.join(sorted(_ROLES))}")
    content = _parts(data.get("content"), field(where, "content"), extra)
    refusal = optional_str(data.get("refusal"), field(where, "refusal"))
    if refusal:  # a model's refusal is what it said
        content.append(TextPart(text=refusal))
    name = optional_str(data.get("name"), field(where, "name"))
    own = remem_fields(data, where)
    if role == "tool":
        if raw_role == "function":  # the legacy function-result message: its name is its id
            call_id = require_str(data.get("name"), field(where, "name"), allow_empty=False)
        else:
            call_id = require_str(data.get("tool_call_id"), field(where, "tool_call_id"),
                                  allow_empty=False)
        return build(where, role="tool", content=content, tool_call_id=call_id, **own)
    tool_calls: list[ToolCall] = []
    if role == "assistant":
        if data.get("tool_calls"):
            tool_calls = _tool_calls(data["tool_calls"], field(where, "tool_calls"), extra)
        elif data.get("function_call"):  # legacy single function call
            at = field(where, "function_call")
            function = require_dict(data["function_call"], at)
            refuse_unknown(function, {"name", "arguments"}, at, "a function call", extra)
            fname = require_str(function.get("name"), field(at, "name"), allow_empty=False)
            tool_calls = [ToolCall(id=fname, name=fname, arguments=parse_arguments(
                function.get("arguments", ""), field(at, "arguments")))]
    return build(where, role=role, content=content, tool_calls=tuple(tool_calls), name=name,
                 **own)


def from_openai(messages: Sequence[Mapping[str, Any]], *,
                extra: Extra = "forbid") -> list[Message]:
    """OpenAI chat-completions dicts as :class:`Message` values (``extra``: see
    :func:`from_openai_message`)."""
    if isinstance(messages, Mapping | str):
        raise MessageFormatError(
            "from_openai takes a list of message dicts; wrap a single dict as [message] or "
            "use from_openai_message")
    return [from_openai_message(data, f"messages[{index}]", extra=extra)
            for index, data in enumerate(messages)]
