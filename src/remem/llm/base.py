"""The chat model seam: every chat model (HTTP clients, the scripted test double) implements
:class:`ChatModel`, taking a :class:`ChatRequest` and returning a :class:`ChatResponse`.

Requests and responses are plain values, so a model's behaviour is easy to record, replay and
compare across providers (the chat model conformance suite does exactly that).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from remem.errors import InvalidInputError
from remem.messages.types import Message

__all__ = [
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FinishReason",
    "ResponseFormat",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "UsageLedger",
    "WrappedChatModel",
]

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]
#: ``"auto"`` (the model decides), ``"none"``, ``"required"`` (some tool), or one tool's name
ToolChoice = str


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: a name, what it does, and its arguments as JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}})

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c in "_-" for c in self.name):
            raise InvalidInputError(
                f"ToolSpec.name must be letters, digits, '_' or '-', got {self.name!r}")


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """Ask for an answer that is JSON matching ``schema`` (a JSON schema object).

    OpenAI-compatible clients send it as a ``json_schema`` response format; Anthropic's client
    forces a tool call with this schema. Either way the response's text is the JSON.
    """

    name: str
    schema: Mapping[str, Any]
    strict: bool = False


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One call to a chat model.

    ``operation`` labels the call for usage accounting (``"extract"``, ``"summarize"``...).
    ``max_tokens`` caps the answer; ``None`` leaves the provider's default (Anthropic's client
    fills in its own, since that API requires one).
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    response_format: ResponseFormat | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    operation: str = "chat"

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "stop", tuple(self.stop))
        if not self.messages:
            raise InvalidInputError("ChatRequest.messages is empty; pass at least one message")
        for position, message in enumerate(self.messages):
            if not isinstance(message, Message):
                raise InvalidInputError(
                    f"ChatRequest.messages[{position}] is a {type(message).__name__}; build "
                    "remem.messages.Message values (or convert with remem.messages.from_openai)"
                )
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InvalidInputError(f"ChatRequest.max_tokens must be >= 1, got {self.max_tokens}")


@dataclass(frozen=True, slots=True)
class Usage:
    """What calls cost: number of calls, input and output tokens."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.calls + other.calls, self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens)

    @staticmethod
    def total(usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages``."""
        out = Usage()
        for usage in usages:
            out = out + usage
        return out


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """A model's answer: the assistant message (text and/or tool calls) and what it cost."""

    message: Message
    usage: Usage
    model: str
    finish_reason: FinishReason = "stop"
    #: the provider's response body, for debugging (``None`` for the scripted model)
    raw: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        """The answer's text."""
        return self.message.text


class UsageLedger:
    """Running usage totals per operation label, safe to share between threads.

    Every chat model keeps one (``model.usage``); callers read :meth:`snapshot` or
    :meth:`by_operation` to see what their work cost.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_operation: dict[str, Usage] = {}

    def record(self, operation: str, usage: Usage) -> None:
        """Add ``usage`` to ``operation``'s total."""
        with self._lock:
            self._by_operation[operation] = self._by_operation.get(operation, Usage()) + usage

    def by_operation(self) -> dict[str, Usage]:
        """A copy of the totals per operation."""
        with self._lock:
            return dict(self._by_operation)

    def snapshot(self) -> Usage:
        """The total over every operation."""
        return Usage.total(self.by_operation().values())

    def reset(self) -> None:
        """Forget every total."""
        with self._lock:
            self._by_operation.clear()


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: sync and async completion over :class:`ChatRequest` values.

    ``model`` names the provider's model; ``context_window`` is its window in tokens when
    known (summaries and trimming size their work by it); ``usage`` accumulates what calls
    cost, per :attr:`ChatRequest.operation`.
    """

    @property
    def model(self) -> str:
        """The model's name, e.g. ``"gpt-4.1-mini"``."""
        ...

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens, or ``None`` when unknown."""
        ...

    @property
    def usage(self) -> UsageLedger:
        """Usage totals of every call made through this model object."""
        ...

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request``."""
        ...

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        """Async :meth:`complete`."""
        ...


class WrappedChatModel:
    """A chat model that answers through ``inner``: its name, window and usage ledger are the
    inner model's. Subclasses wrap :meth:`complete` / :meth:`acomplete` to add something
    around each call (recording usage, timing)."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner

    @property
    def model(self) -> str:
        """The inner model's name."""
        return self.inner.model

    @property
    def context_window(self) -> int | None:
        """The inner model's context window."""
        return self.inner.context_window

    @property
    def usage(self) -> UsageLedger:
        """The inner model's ledger (it counts every call, whatever the wrapper adds)."""
        return self.inner.usage

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer through the inner model."""
        return self.inner.complete(request)

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        """Async :meth:`complete`."""
        return await self.inner.acomplete(request)


def as_messages(messages: Sequence[Message] | str) -> tuple[Message, ...]:
    """A user string becomes one user message; a sequence of messages is kept."""
    if isinstance(messages, str):
        return (Message.user(messages),)
    return tuple(messages)
