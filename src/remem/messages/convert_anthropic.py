"""Convert messages to and from Anthropic's Messages API format.

Anthropic keeps the system prompt apart from the messages and writes content as blocks
(``text``, ``image``, ``tool_use``, ``tool_result``); tool results travel inside a user message.
:func:`to_anthropic` returns ``(system, messages)``: every system message's text joined, and the
other messages with consecutive tool results merged into one user message (as the API requires
for parallel tool calls). :func:`from_anthropic` reverses it: each ``tool_result`` block becomes a
``tool`` message, text and images around them stay user messages, in block order.

>>> from remem.messages import Message, to_anthropic
>>> to_anthropic([Message.system("Be brief."), Message.user("hi")])
('Be brief.', [{'role': 'user', 'content': 'hi'}])

Dropped on the way out: message names, ids, timestamps and metadata, and the position of
system messages after the first. ``thinking`` blocks are skipped on the way in.
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
    parse_arguments,
    require_dict,
    require_list,
    require_str,
    split_data_url,
)
from remem.messages.types import ImagePart, Message, TextPart, ToolCall

__all__ = ["anthropic_blocks", "from_anthropic", "to_anthropic"]

_SKIPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def _image_block(part: ImagePart) -> dict[str, Any]:
    parsed = split_data_url(part.url)
    if parsed is None:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    media_type = part.media_type or parsed[0] or "image/png"
    return {"type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": parsed[1]}}


def anthropic_blocks(parts: Sequence[TextPart | ImagePart]) -> list[dict[str, Any]]:
    """Content parts as Anthropic content blocks."""
    return [{"type": "text", "text": p.text} if isinstance(p, TextPart) else _image_block(p)
            for p in parts]


def _content(parts: Sequence[TextPart | ImagePart]) -> str | list[dict[str, Any]]:
    if not parts:
        return ""
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    return anthropic_blocks(parts)


def _tool_result(message: Message) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id,
                             "content": _content(message.content)}
    if message.is_error:
        block["is_error"] = True
    return block


def to_anthropic(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, messages)`` for Anthropic's Messages API (``system`` is ``None`` if unset)."""
    system = [m.text for m in messages if m.role == "system" and m.text]
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            block = _tool_result(message)
            previous = out[-1] if out else None
            if (previous is not None and previous["role"] == "user"
                    and isinstance(previous["content"], list) and previous["content"]
                    and all(b["type"] == "tool_result" for b in previous["content"])):
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif message.role == "assistant":
            blocks = anthropic_blocks(message.content)
            blocks += [{"type": "tool_use", "id": call.id, "name": call.name,
                        "input": call.arguments} for call in message.tool_calls]
            if len(blocks) == 1 and blocks[0]["type"] == "text":
                out.append({"role": "assistant", "content": blocks[0]["text"]})
            else:
                out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": _content(message.content)})
    return ("\n\n".join(system) if system else None), out


def _read_block_parts(block: Mapping[str, Any], kind: Any, at: str
                      ) -> list[TextPart | ImagePart]:
    if kind == "text":
        return [TextPart(text=require_str(block.get("text"), field(at, "text")))]
    if kind == "image":
        source = require_dict(block.get("source"), field(at, "source"))
        source_type = source.get("type")
        if source_type == "base64":
            media = require_str(source.get("media_type"), field(at, "source.media_type"),
                                allow_empty=False)
            data = require_str(source.get("data"), field(at, "source.data"))
            return [image_part(data_url(media, data), media, at)]
        if source_type == "url":
            url = require_str(source.get("url"), field(at, "source.url"), allow_empty=False)
            return [image_part(url, None, at)]
        raise MessageFormatError(
            f"{field(at, 'source.type')} is {source_type!r}; expected 'base64' or 'url'")
    if kind in _SKIPPED_BLOCKS:
        return []
    raise MessageFormatError(
        f"{field(at, 'type')} is {kind!r}; remem reads text, image, tool_use and tool_result "
        "blocks")


def _parts(content: Any, where: str) -> list[TextPart | ImagePart]:
    if isinstance(content, str):
        return [TextPart(text=content)] if content else []
    parts: list[TextPart | ImagePart] = []
    for index, raw in enumerate(require_list(content, where)):
        at = field(where, index)
        block = require_dict(raw, at)
        parts += _read_block_parts(block, block.get("type"), at)
    return parts


def _user_messages(content: Any, where: str) -> list[Message]:
    if isinstance(content, str) or content is None:
        return [build(where, role="user", content=content or "")]
    out: list[Message] = []
    pending: list[TextPart | ImagePart] = []
    for index, raw in enumerate(require_list(content, field(where, "content"))):
        at = field(where, f"content[{index}]")
        block = require_dict(raw, at)
        if block.get("type") != "tool_result":
            pending += _read_block_parts(block, block.get("type"), at)
            continue
        if pending:
            out.append(build(where, role="user", content=tuple(pending)))
            pending = []
        is_error = block.get("is_error", False)
        if not isinstance(is_error, bool):
            raise MessageFormatError(f"{field(at, 'is_error')} must be true or false")
        out.append(build(
            at, role="tool",
            tool_call_id=require_str(block.get("tool_use_id"), field(at, "tool_use_id"),
                                     allow_empty=False),
            content=tuple(_parts(block.get("content", ""), field(at, "content"))),
            is_error=is_error))
    if pending or not out:
        out.append(build(where, role="user", content=tuple(pending)))
    return out


def _assistant_message(content: Any, where: str) -> Message:
    if isinstance(content, str) or content is None:
        return build(where, role="assistant", content=content or "")
    parts: list[TextPart | ImagePart] = []
    calls: list[ToolCall] = []
    for index, raw in enumerate(require_list(content, field(where, "content"))):
        at = field(where, f"content[{index}]")
        block = require_dict(raw, at)
        if block.get("type") in ("tool_use", "server_tool_use"):
            calls.append(ToolCall(
                id=require_str(block.get("id"), field(at, "id"), allow_empty=False),
                name=require_str(block.get("name"), field(at, "name"), allow_empty=False),
                arguments=parse_arguments(block.get("input", {}), field(at, "input"))))
        else:
            parts += _read_block_parts(block, block.get("type"), at)
    return build(where, role="assistant", content=tuple(parts), tool_calls=tuple(calls))


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    blocks = require_list(system, "system")
    texts = []
    for index, raw in enumerate(blocks):
        block = require_dict(raw, f"system[{index}]")
        if block.get("type") != "text":
            raise MessageFormatError(f"system[{index}].type must be 'text', got "
                                     f"{block.get('type')!r}")
        texts.append(require_str(block.get("text"), f"system[{index}].text"))
    return "\n\n".join(texts)


def from_anthropic(messages: Sequence[Mapping[str, Any]], system: Any = None) -> list[Message]:
    """Anthropic Messages API ``messages`` (and its ``system``, a string or text blocks) as
    :class:`Message` values; the system prompt, when given, comes first."""
    if isinstance(messages, Mapping | str):
        raise MessageFormatError("from_anthropic takes a list of message dicts; wrap a single "
                                 "dict as [message]")
    out: list[Message] = []
    if system:
        out.append(Message.system(_system_text(system)))
    for index, raw in enumerate(messages):
        where = f"messages[{index}]"
        data = require_dict(raw, where)
        role = data.get("role")
        if role == "user":
            out += _user_messages(data.get("content"), where)
        elif role == "assistant":
            out.append(_assistant_message(data.get("content"), where))
        else:
            raise MessageFormatError(
                f"{where}.role is {role!r}; Anthropic messages are 'user' or 'assistant' (the "
                "system prompt goes in system=)")
    return out
