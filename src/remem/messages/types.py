"""The one message type shared by threads, chat models, tools and memory extraction.

A :class:`Message` has a role, content parts (text, images), the tool calls an assistant made,
and for a ``tool`` message the id of the call it answers. Every message gets an id and a
timestamp when it is built, so threads and extraction can point at the exact message a memory
came from. Messages are immutable pydantic models: they validate on construction and
serialise to JSON for storage (``model_dump(mode="json")`` / ``Message.model_validate``).
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from remem.messages.ids import new_id

__all__ = [
    "ContentPart",
    "ImagePart",
    "Message",
    "Role",
    "TextPart",
    "ToolCall",
    "new_id",
]

Role = Literal["system", "user", "assistant", "tool"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextPart(_Frozen):
    """Plain text content."""

    type: Literal["text"] = "text"
    text: str


class ImagePart(_Frozen):
    """An image, by URL (``https://`` or a ``data:`` URL with base64 content)."""

    type: Literal["image"] = "image"
    url: str
    #: e.g. ``"image/png"``; derived from a data URL when absent
    media_type: str | None = None


def _parts(text: str) -> tuple[TextPart, ...]:
    return (TextPart(text=text),) if text else ()


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class ToolCall(_Frozen):
    """A tool call made by an assistant: the call id, the tool's name and its arguments."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", "name")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("must be a non-empty string")
        return value


class Message(_Frozen):
    """One message of a conversation.

    ``content`` is a list of parts; pass a plain string and it becomes one text part.
    ``tool_calls`` only on assistant messages; ``tool_call_id`` only (and always) on ``tool``
    messages, naming the call the message answers (``is_error`` marks a failed call).
    ``name`` is an optional participant or tool name; ``metadata`` is free JSON for callers.
    """

    role: Role
    content: tuple[ContentPart, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    name: str | None = None
    id: str = Field(default_factory=new_id)
    #: seconds since the epoch
    created_at: float = Field(default_factory=time.time)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content", mode="before")
    @classmethod
    def _content_from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return (TextPart(text=value),) if value else ()
        return value

    @model_validator(mode="after")
    def _check_roles(self) -> Message:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only assistant messages carry tool_calls, not {self.role!r} ones")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs tool_call_id: the id of the call it answers")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ValueError(f"tool_call_id belongs on tool messages, not {self.role!r} ones")
        if self.is_error and self.role != "tool":
            raise ValueError("is_error marks a failed tool call; only tool messages carry it")
        return self

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def system(cls, text: str, **fields: Any) -> Message:
        """A system message."""
        return cls(role="system", content=_parts(text), **fields)

    @classmethod
    def user(cls, text: str, **fields: Any) -> Message:
        """A user message."""
        return cls(role="user", content=_parts(text), **fields)

    @classmethod
    def assistant(cls, text: str = "", *, tool_calls: tuple[ToolCall, ...] | list[ToolCall] = (),
                  **fields: Any) -> Message:
        """An assistant message, optionally with tool calls."""
        return cls(role="assistant", content=_parts(text), tool_calls=tuple(tool_calls), **fields)

    @classmethod
    def tool(cls, tool_call_id: str, result: str | Any, *, is_error: bool = False,
             **fields: Any) -> Message:
        """The result of tool call ``tool_call_id``; a non-string result is sent as JSON."""
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        return cls(role="tool", content=_parts(text), tool_call_id=tool_call_id, is_error=is_error,
                   **fields)

    # -- views --------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The text parts joined by newlines (images left out)."""
        return "\n".join(part.text for part in self.content if isinstance(part, TextPart))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the storage form); :meth:`from_dict` reads it back."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """Read a dict written by :meth:`to_dict`."""
        return cls.model_validate(data)
