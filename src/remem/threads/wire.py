"""The JSON shape of every thread result, declared once (pydantic models).

Each model turns a Python result into JSON (:func:`dump`; ``Checkpoint.to_dict()``,
``ThreadInfo.to_dict()`` and ``ThreadHit.to_dict()`` are this: those three shapes are declared
beside their values, in :mod:`remem.threads.types` and :mod:`remem.threads.search`, on the
base in :mod:`remem.threads.shapes`, and gathered here with the rest), is the HTTP route's
``response_model`` (so OpenAPI documents it and schemathesis checks answers against it), and
turns JSON back into the Python result (:func:`load`, what
:class:`~remem.threads.remote.RemoteThreads` returns). :data:`RESULT_MODELS` names the model
of each request type.

Times are epoch seconds. A message is an OpenAI-style chat message (what ``to_openai`` makes,
so it can be sent to a model as is) plus remem's ``id`` and ``created_at`` (and ``metadata``
and ``is_error`` when set), so reading it back gives the stored :class:`Message` again.
Readers ignore fields they do not know, so a newer server's answers still read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self, TypeVar, cast

from pydantic import Field

from remem.messages.convert_openai import from_openai_message, to_openai_message
from remem.messages.types import Message
from remem.threads.requests import (
    AppendRequest,
    CheckpointRequest,
    CheckpointsRequest,
    CompactRequest,
    CopyRequest,
    CreateThreadRequest,
    DeleteThreadRequest,
    ForkRequest,
    GetThreadRequest,
    ListThreadsRequest,
    MessagesRequest,
    RewindRequest,
    SearchThreadsRequest,
    SetMetadataRequest,
    ThreadContextRequest,
    ThreadRequest,
    UpdateStateRequest,
)
from remem.threads.search import MessageMatchOut, ThreadHit, ThreadHitOut
from remem.threads.shapes import Wire, json_of
from remem.threads.types import Checkpoint, CheckpointOut, ThreadInfo, ThreadInfoOut
from remem.wire_models import Envelope

__all__ = [
    "RESULT_MODELS",
    "CheckpointListOut",
    "CheckpointOut",
    "DeletedOut",
    "MessageMatchOut",
    "MessageOut",
    "MessagesOut",
    "ThreadHitOut",
    "ThreadHitsOut",
    "ThreadInfoOut",
    "ThreadListOut",
    "Wire",
    "dump",
    "load",
]

R = TypeVar("R")


class MessageOut(Wire[Message]):
    """A message: OpenAI-style (``role``, ``content``, ``tool_calls``, ``tool_call_id``,
    ``name``) plus remem's ``id``, ``created_at``, ``metadata`` and ``is_error``."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    id: str
    created_at: float
    metadata: dict[str, Any] = Field(default_factory=dict)
    is_error: bool = False

    @classmethod
    def of(cls, result: Message) -> Self:
        """The model of ``result``."""
        return cls.model_construct(**to_openai_message(result), id=result.id,
                                   created_at=result.created_at,
                                   metadata=dict(result.metadata), is_error=result.is_error)

    def value(self) -> Message:
        """The message, with its id and time."""
        chat = self.model_dump(include={"role", "content", "tool_calls", "tool_call_id",
                                        "name"}, exclude_none=True)
        return from_openai_message(chat).model_copy(update={
            "id": self.id, "created_at": self.created_at, "metadata": self.metadata,
            "is_error": self.is_error})


class MessagesOut(Envelope[list[Message]]):
    """Messages, oldest first."""

    messages: list[MessageOut]


class ThreadListOut(Envelope[list[ThreadInfo]]):
    """Thread records, most recently changed first."""

    threads: list[ThreadInfoOut]


class CheckpointListOut(Envelope[list[Checkpoint]]):
    """Checkpoints, newest first."""

    checkpoints: list[CheckpointOut]


class DeletedOut(Envelope[bool]):
    """Whether the thread existed (and now does not)."""

    deleted: bool


class ThreadHitsOut(Envelope[list[ThreadHit]]):
    """Threads matching a search, best first."""

    hits: list[ThreadHitOut]


#: the result model of each thread request (a new thread's JSON is its record)
RESULT_MODELS: Mapping[type[ThreadRequest[Any]], type[Wire[Any]]] = {
    CreateThreadRequest: ThreadInfoOut,
    GetThreadRequest: ThreadInfoOut,
    ListThreadsRequest: ThreadListOut,
    DeleteThreadRequest: DeletedOut,
    SetMetadataRequest: ThreadInfoOut,
    AppendRequest: CheckpointOut,
    MessagesRequest: MessagesOut,
    CheckpointsRequest: CheckpointListOut,
    CheckpointRequest: CheckpointOut,
    UpdateStateRequest: CheckpointOut,
    RewindRequest: CheckpointOut,
    ForkRequest: ThreadInfoOut,
    CopyRequest: ThreadInfoOut,
    SearchThreadsRequest: ThreadHitsOut,
    CompactRequest: CheckpointOut,
    ThreadContextRequest: MessagesOut,
}


def dump(request: type[ThreadRequest[Any]], result: Any) -> dict[str, Any]:
    """The result of a ``request`` as JSON-ready data, in its declared shape. A new thread
    (a :class:`~remem.threads.thread.Thread` handle) is dumped as its record: pass
    ``thread.info()``."""
    return json_of(RESULT_MODELS[request].of(result))


def load(request: type[ThreadRequest[R]], data: Any) -> R:
    """The Python result of a ``request`` from its JSON (as a server answers it); a new
    thread's record is a :class:`ThreadInfo` (the caller makes the handle)."""
    return cast(R, RESULT_MODELS[request].model_validate(data).value())

