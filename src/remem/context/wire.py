"""The JSON shape of a :class:`~remem.context.types.ContextResult` (``POST
/v1/memories/context``), and the result read back from it (``remem.Client.context``).

The answer carries the kept blocks item by item (messages in remem's own form), so the client
rebuilds the same ``ContextResult``: ``to_string()`` and ``to_messages(...)`` give what they
give on the server. ``text`` and ``messages`` (OpenAI shape) are there for callers that only
want to read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from remem.context.types import (
    ContextItem,
    ContextResult,
    DroppedItem,
    PackedSection,
    SectionReport,
)
from remem.messages.types import Message

__all__ = ["ContextOut", "load_context"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContextItemOut(_Out):
    """One kept item: its key, text, messages (remem's form) and render position."""

    key: str
    text: str
    messages: list[dict[str, Any]]
    order: float


class BlockOut(_Out):
    """A kept section, in render order."""

    name: str
    title: str
    conversation: bool
    items: list[ContextItemOut]


class SectionOut(_Out):
    """What one section offered and what was kept."""

    name: str
    tokens: int
    kept: int
    dropped: int


class DroppedOut(_Out):
    """An item left out, and why."""

    section: str
    key: str
    tokens: int
    reason: Literal["over_budget", "after_dropped"]


class ContextOut(_Out):
    """An assembled context: the rendered text and messages, the kept blocks, the tokens per
    section and every item left out."""

    text: str
    messages: list[dict[str, Any]]
    tokens: int
    budget: int | None
    counter: str
    sections: list[SectionOut]
    dropped: list[DroppedOut]
    blocks: list[BlockOut]

    @classmethod
    def of(cls, result: ContextResult) -> ContextOut:
        """The JSON model of ``result``."""
        blocks = [BlockOut(name=block.name, title=block.title, conversation=block.conversation,
                           items=[ContextItemOut(key=item.key, text=item.text, order=item.order,
                                          messages=[m.to_dict() for m in item.messages])
                                  for item in block.items])
                  for block in result.blocks]
        return cls(text=result.to_string(), messages=result.to_messages("openai"),
                   tokens=result.tokens, budget=result.budget, counter=result.counter,
                   sections=[SectionOut(**r.to_dict()) for r in result.sections],
                   dropped=[DroppedOut(**d.to_dict()) for d in result.dropped],
                   blocks=blocks)

    def value(self) -> ContextResult:
        """The :class:`ContextResult` this JSON describes (what ``remem.Client`` returns)."""
        blocks = tuple(
            PackedSection(block.name, block.title,
                  tuple(ContextItem(item.key, item.text,
                                    tuple(Message.from_dict(m) for m in item.messages),
                                    item.order)
                        for item in block.items),
                  block.conversation)
            for block in self.blocks)
        return ContextResult(blocks, self.tokens, self.budget, self.counter,
                             tuple(SectionReport(**s.model_dump()) for s in self.sections),
                             tuple(DroppedItem(**d.model_dump()) for d in self.dropped))


def load_context(data: Any) -> ContextResult:
    """The :class:`ContextResult` a server answered (its JSON)."""
    return ContextOut.model_validate(data).value()
