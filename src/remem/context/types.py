"""The values of context assembly: what a section offers, what the packer kept, and why.

A :class:`ContextSection` offers :class:`ContextItem` values, best first. The packer
(:mod:`remem.context.packing`) keeps whole items within the budget and returns a
:class:`ContextResult`, which renders to a string or to chat messages (remem's own, OpenAI's
or Anthropic's shape) and reports the tokens of each section and every item left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from remem.memory.facade import MemoryFacade
from remem.memory.results import SearchResult
from remem.messages import to_anthropic, to_openai
from remem.messages.types import Message

if TYPE_CHECKING:
    from remem.graph import Graph
    from remem.threads.api import ThreadAPI
    from remem.tokens import TokenCounter

__all__ = [
    "ContextItem",
    "ContextMemory",
    "ContextResult",
    "ContextScope",
    "ContextSection",
    "DroppedItem",
    "SectionReport",
]

DropReason = Literal["over_budget", "after_dropped"]
"""Why an item was left out: it did not fit (``over_budget``), or an item before it in a
section that must stay contiguous (the recent messages) did not, and a gap would mislead."""


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One indivisible piece of context: kept whole or left out whole.

    ``key`` identifies it in reports (a memory id, a message id). ``text`` is how it reads in
    the rendered string. ``messages`` (recent conversation only): the chat messages it stands
    for when rendered as messages (a tool call travels with its results, so they are one
    item). ``order``: where it goes when rendered (items are offered best first, but a
    conversation reads oldest first).
    """

    key: str
    text: str
    messages: tuple[Message, ...] = ()
    order: float = 0.0


class ContextMemory(MemoryFacade, Protocol):
    """What the sections read from a memory (:class:`remem.api.Memory` is one): its store,
    its search and its graph. Context assembly sits below the facade, so it types the
    memory with this Protocol, never with :mod:`remem.api`."""

    def search(self, query: str | None = None, *, user_id: str | None = None,
               agent_id: str | None = None, thread_id: str | None = None,
               namespace: Sequence[str] | None = None, limit: int = 10) -> SearchResult:
        """Current memories in the scope, best first for ``query``."""
        ...

    async def asearch(self, query: str | None = None, *, user_id: str | None = None,
                      agent_id: str | None = None, thread_id: str | None = None,
                      namespace: Sequence[str] | None = None,
                      limit: int = 10) -> SearchResult:
        """Async :meth:`search`."""
        ...

    def graph(self, *, user_id: str | None = None, agent_id: str | None = None) -> Graph:
        """The temporal knowledge graph of a scope."""
        ...


@dataclass(frozen=True, slots=True)
class ContextScope:
    """What a section gathers for: the query, whose memory, which thread, and the tools to
    read them (``memory``: the facade; ``threads``: a thread store, when one is given)."""

    memory: ContextMemory
    query: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    namespace: tuple[str, ...] | None = None
    threads: ThreadAPI | None = None
    counter: TokenCounter | None = None


@runtime_checkable
class ContextSection(Protocol):
    """A source of context. Core memory blocks, memory files, graph facts... each register
    one; the built-in ones are in :mod:`remem.context.sections`.

    ``name`` is how callers select it (``sections=["profile", "memories"]``); ``title`` heads
    it in the rendered string; ``order`` places it there (lower first: profile 10, memories
    30, summary 40, recent messages 50); ``contiguous``: when an item is left out, every item
    after it is too (no gaps). A section with nothing to offer returns no items.
    """

    @property
    def name(self) -> str:
        """The section's name (unique within one assembly)."""
        ...

    @property
    def title(self) -> str:
        """The heading above its items in the rendered string."""
        ...

    @property
    def order(self) -> int:
        """Where it is rendered (lower first)."""
        ...

    @property
    def contiguous(self) -> bool:
        """Whether a left-out item also leaves out every item after it."""
        ...

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Its items for ``scope``, best first."""
        ...

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Async :meth:`gather`."""
        ...


@dataclass(frozen=True, slots=True)
class DroppedItem:
    """An item left out: its section, key, tokens (alone) and why."""

    section: str
    key: str
    tokens: int
    reason: DropReason

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"section": self.section, "key": self.key, "tokens": self.tokens,
                "reason": self.reason}


@dataclass(frozen=True, slots=True)
class SectionReport:
    """What one section offered and what was kept: ``tokens`` of its rendered block (heading
    included) as counted alone, ``kept`` and ``dropped`` item counts."""

    name: str
    tokens: int
    kept: int
    dropped: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"name": self.name, "tokens": self.tokens, "kept": self.kept,
                "dropped": self.dropped}


@dataclass(frozen=True, slots=True)
class PackedSection:
    """A kept section, ready to render."""

    name: str
    title: str
    items: tuple[ContextItem, ...]
    conversation: bool  # its items carry messages


@dataclass(frozen=True, slots=True)
class ContextResult:
    """The assembled context.

    ``tokens``: what it costs, counted by the counter on the larger of its two renderings
    (:meth:`to_string` and :meth:`to_messages`), so either fits ``budget`` (``None``:
    unlimited). ``sections``: a report per section, in priority order; ``dropped``: every
    item left out, lowest priority last.
    """

    blocks: tuple[PackedSection, ...]
    tokens: int
    budget: int | None
    counter: str
    sections: tuple[SectionReport, ...] = ()
    dropped: tuple[DroppedItem, ...] = field(default=())

    @property
    def text(self) -> str:
        """:meth:`to_string`."""
        return self.to_string()

    def section_tokens(self) -> dict[str, int]:
        """Tokens per section, by name."""
        return {report.name: report.tokens for report in self.sections}

    def to_string(self) -> str:
        """Every kept section under its heading, in render order; the recent conversation as
        ``role: text`` lines. Empty when nothing was kept."""
        return render_text(self.blocks)

    def to_messages(self, shape: Literal["remem", "openai", "anthropic"] = "remem"
                    ) -> Any:
        """The context as chat messages: one system message holding the sections that are
        not conversation, then the recent messages.

        ``shape``: ``"remem"`` (a list of :class:`~remem.messages.Message`), ``"openai"``
        (chat-completions dicts) or ``"anthropic"`` (a ``(system, messages)`` pair, the
        Messages API's separate system prompt).
        """
        messages = render_messages(self.blocks)
        if shape == "remem":
            return messages
        if shape == "openai":
            return to_openai(messages)
        if shape == "anthropic":
            return to_anthropic(messages)
        from remem.errors import InvalidInputError

        raise InvalidInputError(f"to_messages shape must be 'remem', 'openai' or 'anthropic', "
                                f"got {shape!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the text, the messages (OpenAI shape) and the report."""
        return {"text": self.to_string(), "messages": self.to_messages("openai"),
                "tokens": self.tokens, "budget": self.budget, "counter": self.counter,
                "sections": [report.to_dict() for report in self.sections],
                "dropped": [item.to_dict() for item in self.dropped]}


def _ordered(items: Sequence[ContextItem]) -> list[ContextItem]:
    return sorted(items, key=lambda item: item.order)


def _transcript_line(message: Message) -> str:
    text = message.text
    for call in message.tool_calls:
        text += f" [calls {call.name}]"
    return f"{message.role}: {text}"


def item_text(item: ContextItem) -> str:
    """How an item reads in the string rendering."""
    if item.messages and not item.text:
        return "\n".join(_transcript_line(message) for message in item.messages)
    return item.text


def block_text(title: str, items: Sequence[ContextItem]) -> str:
    """One section's block: its heading, then its items in render order."""
    return "\n".join([f"## {title}", *(item_text(item) for item in _ordered(items))])


def render_text(blocks: Sequence[PackedSection]) -> str:
    """The string rendering of kept blocks."""
    return "\n\n".join(block_text(block.title, block.items) for block in blocks if block.items)


def render_messages(blocks: Sequence[PackedSection]) -> list[Message]:
    """The message rendering of kept blocks (text sections in one system message first)."""
    system = render_text([block for block in blocks if not block.conversation])
    out = [Message.system(system)] if system else []
    for block in blocks:
        if block.conversation:
            for item in _ordered(block.items):
                out.extend(item.messages)
    return out
