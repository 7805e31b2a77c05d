"""Values returned by thread storage: :class:`ThreadInfo` and :class:`Checkpoint`, and their
JSON shapes (:class:`ThreadInfoOut`, :class:`CheckpointOut`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from remem.errors import InvalidInputError
from remem.llm.base import Usage
from remem.threads.shapes import Wire, json_of

__all__ = ["Checkpoint", "CheckpointOut", "ThreadInfo", "ThreadInfoOut", "summary_state",
           "summary_usage"]

#: checkpoint state keys written by compaction
SUMMARY = "summary"
SUMMARY_THROUGH = "summary_through"
SUMMARY_USAGE = "summary_usage"
#: how many leading messages are system messages (kept by trimming and compaction)
SYSTEM_MESSAGES = "system_messages"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One saved point of a thread.

    ``position`` is the number of messages the thread had at this point; reading the thread
    at this checkpoint returns exactly those messages. ``parent_id`` is the checkpoint it was
    made from (for a fork: the source thread's checkpoint). ``state`` is small JSON (the
    running summary and what it covers); ``metadata`` says what made it (``source``:
    ``create``, ``append``, ``compact``, ``update``, ``rewind``, ``fork`` or ``copy``).
    """

    id: str
    thread_id: str
    parent_id: str | None
    position: int
    state: Mapping[str, Any]
    metadata: Mapping[str, Any]
    #: seconds since the epoch
    created_at: float
    #: storage detail: the branch holding this checkpoint's newest messages
    branch: int = field(default=0, repr=False, compare=False)
    #: storage detail: the row holding ``state`` (shared by checkpoints that did not change it)
    state_id: int = field(default=0, repr=False, compare=False)

    @property
    def summary(self) -> str | None:
        """The running summary at this checkpoint (``None``: nothing summarised yet)."""
        value = self.state.get(SUMMARY)
        return value if isinstance(value, str) and value else None

    @property
    def summary_through(self) -> int:
        """Messages before this position are covered by :attr:`summary`."""
        value = self.state.get(SUMMARY_THROUGH, 0)
        return int(value) if isinstance(value, int) else 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (CLI ``--json`` output, HTTP answers), as
        :class:`CheckpointOut` declares it."""
        return json_of(CheckpointOut.of(self))


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """A thread's record: its id, metadata, head checkpoint and timestamps.

    ``length`` is the number of messages at the head. ``source`` is the checkpoint a fork or
    copy started from. ``expires_at`` is set when the thread has a TTL (``ttl`` seconds,
    renewed by every change).
    """

    thread_id: str
    metadata: Mapping[str, Any]
    head: Checkpoint
    created_at: float
    updated_at: float
    source: str | None = None
    ttl: float | None = None
    expires_at: float | None = None
    #: storage detail: the owner and length of the head's branch when this was read
    head_branch: tuple[str | None, int] = field(default=(None, 0), repr=False, compare=False)

    @property
    def length(self) -> int:
        """Messages at the head checkpoint."""
        return self.head.position

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (CLI ``--json`` output, HTTP answers), as
        :class:`ThreadInfoOut` declares it (``head`` is the head checkpoint)."""
        return json_of(ThreadInfoOut.of(self))


# -- their JSON shapes (gathered with the others in remem.threads.wire) -----------------------


class CheckpointOut(Wire[Checkpoint]):
    """One saved point of a thread: ``position`` messages, a small JSON ``state`` (the
    running summary), ``metadata`` saying what made it (``source``)."""

    id: str
    thread_id: str
    parent_id: str | None
    position: int
    state: dict[str, Any]
    metadata: dict[str, Any]
    created_at: float

    @classmethod
    def of(cls, result: Checkpoint) -> Self:
        """The model of ``result``."""
        return cls.model_construct(
            id=result.id, thread_id=result.thread_id, parent_id=result.parent_id,
            position=result.position, state=dict(result.state),
            metadata=dict(result.metadata), created_at=result.created_at)

    def value(self) -> Checkpoint:
        """The checkpoint."""
        return Checkpoint(self.id, self.thread_id, self.parent_id, self.position, self.state,
                          self.metadata, self.created_at)


class ThreadInfoOut(Wire[ThreadInfo]):
    """A thread's record: its metadata, ``length`` (messages at the head), head checkpoint,
    times, the checkpoint a fork or copy started from (``source``) and its TTL."""

    thread_id: str
    metadata: dict[str, Any]
    length: int
    head: CheckpointOut
    source: str | None
    created_at: float
    updated_at: float
    ttl: float | None
    expires_at: float | None

    @classmethod
    def of(cls, result: ThreadInfo) -> Self:
        """The model of ``result``."""
        return cls.model_construct(
            thread_id=result.thread_id, metadata=dict(result.metadata), length=result.length,
            head=CheckpointOut.of(result.head), source=result.source,
            created_at=result.created_at, updated_at=result.updated_at, ttl=result.ttl,
            expires_at=result.expires_at)

    def value(self) -> ThreadInfo:
        """The thread record."""
        return ThreadInfo(self.thread_id, self.metadata, self.head.value(), self.created_at,
                          self.updated_at, self.source, self.ttl, self.expires_at)


def summary_state(summary: str, through: int, usage: Usage,
                  previous: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint state after a compaction: ``previous`` with the new summary, what it
    covers, and the summarisation cost so far (``usage`` added to the previous total)."""
    total = summary_usage(previous) + usage
    return {**previous, SUMMARY: summary, SUMMARY_THROUGH: through,
            SUMMARY_USAGE: {"calls": total.calls, "input_tokens": total.input_tokens,
                            "output_tokens": total.output_tokens}}


def summary_usage(state: Mapping[str, Any]) -> Usage:
    """What summarising this thread has cost so far, from a checkpoint state."""
    raw = state.get(SUMMARY_USAGE)
    if not isinstance(raw, Mapping):
        return Usage()
    try:
        return Usage(int(raw.get("calls", 0)), int(raw.get("input_tokens", 0)),
                     int(raw.get("output_tokens", 0)))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"checkpoint state {SUMMARY_USAGE!r} is malformed: {raw!r}") \
            from exc
