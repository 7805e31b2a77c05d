"""What a caller may pass as messages, and how it is read: text, a :class:`Message`, an
OpenAI-style dict, or a list of them (:data:`MessagesInput`, read by :func:`to_messages`).

Every family that takes a conversation (memories, threads, episodes, prompts, the graph)
reads it here, so a string or a dict means the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from remem.errors import MessageFormatError
from remem.messages.convert_openai import from_openai
from remem.messages.types import Message

__all__ = ["MessagesInput", "to_messages"]

MessagesInput = (str | Message | Mapping[str, Any]
                 | Sequence[str | Message | Mapping[str, Any]])
"""What ``add`` accepts: text, a message, an OpenAI-style dict, or a list of them."""


def to_messages(messages: MessagesInput) -> tuple[Message, ...]:
    """``messages`` as :class:`Message` values (strings, alone or in a list, are user
    messages; dicts are read as OpenAI-style chat messages)."""
    if isinstance(messages, str):
        return (Message.user(messages),)
    if isinstance(messages, Message):
        return (messages,)
    if isinstance(messages, Mapping):
        return tuple(from_openai([dict(messages)]))
    if not isinstance(messages, Sequence):
        raise MessageFormatError(
            f"messages is a {type(messages).__name__}; pass text, a remem Message, an "
            "OpenAI-style dict, or a list of them")
    out: list[Message] = []
    dicts: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        if isinstance(message, Message | str):
            if dicts:
                out += from_openai(dicts)
                dicts = []
            out.append(Message.user(message) if isinstance(message, str) else message)
        elif isinstance(message, Mapping):
            dicts.append(dict(message))
        else:
            raise MessageFormatError(
                f"messages[{position}] is a {type(message).__name__}; pass strings, "
                "remem.messages.Message values or OpenAI-style dicts"
            )
    if dicts:
        out += from_openai(dicts)
    return tuple(out)
