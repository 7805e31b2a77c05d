"""The thread operations as request values, declared once (see :mod:`remem.requests`).

``ThreadStore.append(...)`` builds an :class:`AppendRequest` and runs it
(:meth:`ThreadStore.run <remem.threads.api.ThreadAPI.run>`); so do
:class:`~remem.threads.remote.RemoteThreads` (``client.threads``, which sends it to
``/v1/threads``) and the server's routes (the request, less the thread id of the path, is the
HTTP body or query). A parameter added here reaches every surface; the parity test
(``tests/threads/test_surface_parity.py``) fails until each takes it with the same default.

Two kinds of field are not JSON: a **local** field (``CompactRequest.model``,
``ThreadContextRequest.counter``) holds a Python object that only an embedded store can use; it is
left out of the JSON form and the OpenAPI schema, and a remote client refuses it. ``ttl`` of
:class:`CreateThreadRequest`, :class:`ForkRequest` and :class:`CopyRequest` means something
when left out (the store's default, or the source thread's TTL) that ``None`` (never expire)
does not; "left out" is ``"ttl" not in request.model_fields_set``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)
from pydantic.json_schema import SkipJsonSchema

from remem.errors import InvalidInputError
from remem.llm.base import ChatModel
from remem.messages.types import Message
from remem.requests import ConversationMessages, JsonObject, Limit, Offset, Request, ScopeId
from remem.store.types import MAX_TTL
from remem.threads.search import ThreadHit
from remem.threads.summary import SummaryPolicy
from remem.threads.thread import Thread
from remem.threads.types import Checkpoint, ThreadInfo
from remem.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = [
    "ALL",
    "OMITTABLE",
    "AppendRequest",
    "CheckpointId",
    "CheckpointRequest",
    "CheckpointsRequest",
    "CompactRequest",
    "ContextRequest",
    "CopyRequest",
    "CreateThreadRequest",
    "DeleteThreadRequest",
    "ForkRequest",
    "GetThreadRequest",
    "ListThreadsRequest",
    "MessagesRequest",
    "NewThreadId",
    "RewindRequest",
    "SearchThreadsRequest",
    "SetMetadataRequest",
    "ThreadContextRequest",
    "ThreadId",
    "ThreadRequest",
    "UpdateStateRequest",
    "custom_counter",
    "local_fields",
    "ttl_or_default",
]

R = TypeVar("R")

#: fields whose absence means "the default", which ``None`` does not (see the module docstring)
OMITTABLE = frozenset({"ttl"})

ThreadId = ScopeId
"""A thread id: 1-256 printable characters."""


def _routable(value: str) -> str:
    if "/" in value:
        raise ValueError("must not contain '/': the id is a segment of the thread's URL "
                         "(/v1/threads/<id>), where no route could reach it; use another "
                         "separator such as ':' or '-'")
    if value in (".", ".."):
        raise ValueError(f"{value!r} is not allowed: URLs resolve it as a relative path")
    return value


NewThreadId = Annotated[ThreadId, AfterValidator(_routable), WithJsonSchema({
    "type": "string", "minLength": 1, "maxLength": 256, "pattern": r"^[^\x00-\x1f\x7f/]+$",
    "not": {"enum": [".", ".."]}})]
"""The id of a thread being created: a thread id without ``/`` and not ``.`` or ``..``, so
every route can reach it (ids made before this rule still work from Python)."""

CheckpointId = ScopeId
"""A checkpoint id: 1-256 printable characters."""


def _seconds(value: Any) -> Any:
    """A timedelta becomes seconds; anything else is left to the float rules."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number of seconds")
    return value


# constraints before the validator, or pydantic writes them into the JSON schema as "gt"/"le"
Seconds = Annotated[float, Field(gt=0, le=MAX_TTL), BeforeValidator(_seconds)]
"""A time to live: seconds (or a ``timedelta`` from Python), more than 0, at most 10^10."""

Position = Annotated[int, Field(ge=-10**9, le=10**9)]
"""A message position; negative counts from the end, as in a Python slice."""


def _none_if_empty(value: Any) -> Any:
    return None if isinstance(value, list | tuple) and not value else value


def _maybe_empty(schema: dict[str, Any]) -> dict[str, Any]:
    """The messages schema, also taking an empty list (a thread may start without any)."""
    branches = [dict(branch, minItems=0) if branch.get("type") == "array" else branch
                for branch in schema["anyOf"]]
    return {"anyOf": [*branches, {"type": "null"}]}


FirstMessages = Annotated[
    ConversationMessages | None, BeforeValidator(_none_if_empty),
    WithJsonSchema(_maybe_empty(TypeAdapter(ConversationMessages).json_schema())),
]
"""A new thread's first messages: as
:data:`~remem.memory.requests.ConversationMessages`, or none."""


def _local(kind: type, what: str) -> Any:
    def check(value: Any) -> Any:
        if value is not None and not isinstance(value, kind):
            raise ValueError(f"must be a remem {kind.__name__} ({what}), got "
                             f"{type(value).__name__}")
        return value
    return PlainValidator(check)


LocalModel = SkipJsonSchema[Annotated[ChatModel | None, _local(ChatModel, "a chat model")]]
LocalCounter = SkipJsonSchema[Annotated[TokenCounter | None,
                                        _local(TokenCounter, "a token counter")]]


class PolicyFields(BaseModel):
    """A :class:`~remem.threads.summary.SummaryPolicy` as JSON (its token counter is the
    default estimate; a custom one is a Python object and cannot be sent)."""

    model_config = ConfigDict(extra="forbid", strict=True, title="SummaryPolicy")

    trigger_tokens: Annotated[int, Field(ge=1, le=10_000_000)] = Field(
        8000, description="compact when the uncovered history passes this many tokens")
    keep_tokens: Annotated[int, Field(ge=0, le=10_000_000)] = Field(
        2000, description="recent messages kept verbatim, in tokens")
    max_summary_tokens: Annotated[int, Field(ge=1, le=100_000)] = Field(
        600, description="the answer cap of every summarisation call")
    instructions: Annotated[str, StringConstraints(max_length=10_000)] | None = Field(
        None, description="extra guidance for the summariser")
    context_window: Annotated[int, Field(ge=1, le=10_000_000)] | None = Field(
        None, description="the window to plan chunks for when the model reports none")


def _policy(value: Any) -> SummaryPolicy | None:
    if value is None or isinstance(value, SummaryPolicy):
        return value
    try:
        fields = PolicyFields.model_validate(value)
    except ValidationError as exc:
        raise ValueError("; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'policy'}: {e['msg']}"
            for e in exc.errors(include_url=False))) from None
    try:
        return SummaryPolicy(**fields.model_dump())
    except InvalidInputError as exc:  # the rules across fields (trigger above keep)
        raise ValueError(str(exc)) from None


def _policy_json(policy: SummaryPolicy | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    return {name: getattr(policy, name) for name in PolicyFields.model_fields}


Policy = Annotated[
    SummaryPolicy | None, PlainValidator(_policy),
    PlainSerializer(_policy_json, when_used="json"),
    WithJsonSchema({"anyOf": [PolicyFields.model_json_schema(), {"type": "null"}]}),
]
"""A summary policy: a ``SummaryPolicy`` from Python, its fields as a JSON object."""


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


ThreadIds = Annotated[tuple[ThreadId, ...], BeforeValidator(_as_tuple), Field(max_length=100)]
Query = Annotated[str, StringConstraints(min_length=1, max_length=10_000, pattern=r"\S")]
SearchModeField = Literal["auto", "hybrid", "keyword", "vector"]


class ThreadRequest(Request, Generic[R]):
    """Base of the thread requests; ``R`` is what running one returns
    (``ThreadStore.run(AppendRequest(...))`` is the new head :class:`Checkpoint`)."""


def local_fields(request: type[ThreadRequest[Any]]) -> frozenset[str]:
    """The fields of ``request`` that hold Python objects (never sent over HTTP)."""
    return frozenset(name for name, info in request.model_fields.items() if info.exclude)


def ttl_or_default(request: CreateThreadRequest | ForkRequest | CopyRequest) -> Any:
    """The request's ``ttl``, or :data:`~remem.store.types.NOT_PROVIDED` when left out."""
    from remem.store.types import NOT_PROVIDED

    return request.ttl if "ttl" in request.model_fields_set else NOT_PROVIDED


class _OnThread(ThreadRequest[R]):
    thread_id: ThreadId = Field(description="the thread")


# -- threads ------------------------------------------------------------------------------------


class CreateThreadRequest(ThreadRequest[Thread]):
    """Create a thread (its id generated when left out) with metadata and first messages."""

    operation: ClassVar[str] = "create"

    thread_id: NewThreadId | None = Field(
        None, description="the new thread's id (generated when left out; 409 if taken; "
                          "no '/')")
    metadata: JsonObject | None = Field(
        None, description="JSON to list and search threads by (e.g. {\"user_id\": \"u1\"})")
    messages: FirstMessages = Field(None, description="its first messages")
    ttl: Seconds | None = Field(None, description="seconds until it expires (renewed by every "
                                                  "change); null: never; left out: the "
                                                  "store's default")


class GetThreadRequest(_OnThread[ThreadInfo]):
    """A thread's record: metadata, head checkpoint, times."""

    operation: ClassVar[str] = "get"


class ListThreadsRequest(ThreadRequest[list[ThreadInfo]]):
    """Live threads whose metadata matches ``filter``, most recently changed first."""

    operation: ClassVar[str] = "list_threads"

    filter: JsonObject | None = Field(
        None, description="the filter language over metadata (e.g. {\"user_id\": \"u1\"})")
    limit: Limit = Field(20, description="most threads returned")
    offset: Offset = Field(0, description="threads to skip (for the next page)")


class DeleteThreadRequest(_OnThread[bool]):
    """Delete a thread and its checkpoints (forks made from it keep their messages)."""

    operation: ClassVar[str] = "delete"


class SetMetadataRequest(_OnThread[ThreadInfo]):
    """Change a thread's metadata."""

    operation: ClassVar[str] = "set_metadata"

    metadata: JsonObject = Field(description="the new metadata")
    merge: bool = Field(True, description="merge into the old metadata (false: replace it)")


# -- messages and checkpoints -------------------------------------------------------------------


class AppendRequest(_OnThread[Checkpoint]):
    """Append messages as one new checkpoint; the thread's head afterwards."""

    operation: ClassVar[str] = "append"

    messages: ConversationMessages = Field(
        description="text, or chat messages (OpenAI-style); a message needs no text (a turn "
                    "of tool calls only is kept as it is)")
    expected_head: CheckpointId | None = Field(
        None, description="the head you last read; a conflict error if the thread moved on")
    metadata: JsonObject | None = Field(None, description="recorded on the checkpoint")


class MessagesRequest(_OnThread[list[Message]]):
    """The messages at the head (or at a checkpoint): a slice, or the last n."""

    operation: ClassVar[str] = "messages"

    checkpoint_id: CheckpointId | None = Field(
        None, description="read the thread as it was at this checkpoint")
    start: Position = Field(0, description="first position (negative: from the end)")
    stop: Position | None = Field(None, description="position to stop before (null: the end)")
    last: Annotated[int, Field(ge=0, le=100_000)] | None = Field(
        None, description="only the last n messages (instead of start/stop)")


class CheckpointsRequest(_OnThread[list[Checkpoint]]):
    """The thread's checkpoints, newest first."""

    operation: ClassVar[str] = "checkpoints"

    limit: Limit = Field(100, description="most checkpoints returned")
    offset: Offset = Field(0, description="checkpoints to skip")


class CheckpointRequest(_OnThread[Checkpoint]):
    """One checkpoint of the thread (its head by default)."""

    operation: ClassVar[str] = "checkpoint"

    checkpoint_id: CheckpointId | None = Field(None, description="a checkpoint id (null: "
                                                                 "the head)")


class UpdateStateRequest(_OnThread[Checkpoint]):
    """A new head checkpoint with the same messages and a new state."""

    operation: ClassVar[str] = "update_state"

    state: JsonObject = Field(description="the new state (small JSON)")
    merge: bool = Field(True, description="merge into the head's state (false: replace it)")
    expected_head: CheckpointId | None = Field(
        None, description="the head you last read; a conflict error if the thread moved on")
    metadata: JsonObject | None = Field(None, description="recorded on the checkpoint")


class RewindRequest(_OnThread[Checkpoint]):
    """Time travel in place: a new head with the messages and state of a checkpoint."""

    operation: ClassVar[str] = "rewind"

    checkpoint_id: CheckpointId = Field(description="the checkpoint to go back to")


class _Derive(_OnThread[Thread]):
    checkpoint_id: CheckpointId | None = Field(
        None, description="where the new thread starts (null: the head)")
    new_thread_id: NewThreadId | None = Field(
        None, description="the new thread's id (generated when left out; no '/')")
    metadata: JsonObject | None = Field(None, description="merged into the source's metadata")
    ttl: Seconds | None = Field(None, description="seconds until it expires; null: never; "
                                                  "left out: the source thread's TTL")


class ForkRequest(_Derive):
    """A new thread from a checkpoint, sharing the history up to it (nothing is copied)."""

    operation: ClassVar[str] = "fork"


class CopyRequest(_Derive):
    """Like fork, but the new thread gets its own copy of the messages."""

    operation: ClassVar[str] = "copy"


# -- search, summaries, prompts -----------------------------------------------------------------


class SearchThreadsRequest(ThreadRequest[list[ThreadHit]]):
    """Past threads matching ``query`` by keywords and meaning, best first."""

    operation: ClassVar[str] = "search"

    query: Query = Field(description="what to look for")
    owner: ScopeId | None = Field(
        None, description="only this owner's threads (metadata user_id; null: every owner's)")
    limit: Annotated[int, Field(ge=1, le=100)] = Field(5, description="most threads returned")
    per_thread: Annotated[int, Field(ge=1, le=50)] = Field(
        3, description="most matching messages per thread")
    exclude: ThreadIds = Field((), description="thread ids to leave out (the current one)")
    mode: SearchModeField = Field("auto", description="signals to rank by: auto, hybrid, "
                                                      "keyword, vector")


class CompactRequest(_OnThread[Checkpoint]):
    """Fold the older messages into the running summary; the head afterwards."""

    operation: ClassVar[str] = "compact"

    model: LocalModel = Field(None, exclude=True, description=(
        "the chat model that summarises (local only; default: the store's summarizer, on a "
        "server its LLM)"))
    policy: Policy = Field(None, description="sizes of the summary and of what is kept "
                                             "(default: the store's, else SummaryPolicy())")
    force: bool = Field(True, description="compact now (false: only past "
                                          "policy.trigger_tokens)")


class ThreadContextRequest(_OnThread[list[Message]]):
    """The messages to send to a model: system prompt, running summary, then the messages
    the summary does not cover, trimmed to the budgets without breaking tool calls."""

    operation: ClassVar[str] = "context"

    max_tokens: Annotated[int, Field(ge=0, le=10_000_000)] | None = Field(
        None, description="token budget (null: no limit)")
    max_messages: Annotated[int, Field(ge=0, le=100_000)] | None = Field(
        None, description="message budget (null: no limit)")
    checkpoint_id: CheckpointId | None = Field(
        None, description="the prompt as it was at this checkpoint (null: the head)")
    counter: LocalCounter = Field(None, exclude=True, description=(
        "the token counter (local only; default: the offline estimate)"))


#: the old name (issue 34: one name per concept), kept so user code keeps working
ContextRequest = ThreadContextRequest


def custom_counter(policy: SummaryPolicy | None) -> bool:
    """Whether ``policy`` counts tokens with something else than the default estimate."""
    return policy is not None and policy.counter is not DEFAULT_COUNTER


ALL: Sequence[type[ThreadRequest[Any]]] = (
    CreateThreadRequest, GetThreadRequest, ListThreadsRequest, DeleteThreadRequest,
    SetMetadataRequest, AppendRequest, MessagesRequest, CheckpointsRequest, CheckpointRequest,
    UpdateStateRequest, RewindRequest, ForkRequest, CopyRequest, SearchThreadsRequest,
    CompactRequest, ThreadContextRequest)
"""Every thread request type."""
