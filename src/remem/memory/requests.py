"""The memory operations as request values, declared once (see :mod:`remem.requests`).

``Memory.add(...)`` builds an :class:`AddRequest` and runs it; so do ``remem.Client``, the
``/v1/memories`` routes (the request is the HTTP body), the ``remem`` CLI commands, the MCP
tools and the agent tools. A parameter added here reaches every surface; the parity test
(``tests/surfaces/test_parity.py``) fails until each surface takes it with the same default.

Scopes: ``user_id`` and ``agent_id`` select the namespace ``("memories", "user", <user_id>,
"agent", <agent_id>)`` (each part only when given); ``thread_id`` is recorded as the source of
what was said, and is the scope only when neither of the others is given. ``namespace`` names
a namespace directly.

The message field types (:data:`~remem.requests.Messages`, ``ConversationMessages``,
``MAX_MESSAGES``, ``MAX_TEXT``) and how messages are read (``MessagesInput``,
:func:`~remem.messages.inputs.to_messages`) live below every family that takes a
conversation; they are re-exported here, where they were first documented.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    Field,
    StringConstraints,
    model_validator,
)

from remem.errors import UnsupportedError
from remem.memory.history import HistoryEvent
from remem.memory.records import MemoryRecord
from remem.memory.results import ChangeResult, ExportResult, ImportResult, MemoryPage, SearchResult
from remem.memory.stages import check_stages
from remem.memory.store_manager import AddResult, Split
from remem.messages.inputs import MessagesInput, to_messages
from remem.requests import (
    MAX_MESSAGES,
    MAX_TEXT,
    ConversationMessages,
    JsonObject,
    Limit,
    Messages,
    NamespacePath,
    NamespacePrefix,
    Offset,
    Request,
    ScopeId,
    Timestamp,
)

__all__ = [
    "MAX_MESSAGES",
    "MAX_TEXT",
    "AddRequest",
    "ConversationMessages",
    "DeleteAllRequest",
    "DeleteRequest",
    "ExportRequest",
    "GetAllRequest",
    "GetRequest",
    "HistoryRequest",
    "ImportRequest",
    "MemoryId",
    "MemoryRequest",
    "Messages",
    "MessagesInput",
    "SearchRequest",
    "UndoRequest",
    "UpdateRequest",
    "to_messages",
]

R = TypeVar("R")

#: most lines one import request takes (Memory.import_ streams files of any size)
MAX_IMPORT_LINES = 100_000

Text = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]
StagesSpec = Annotated[str, StringConstraints(max_length=200), AfterValidator(check_stages)]
Kind = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Actor = Annotated[str, StringConstraints(min_length=1, max_length=256)]
Reason = Annotated[str, StringConstraints(max_length=2000)]
Query = Annotated[str, StringConstraints(max_length=10_000)]
def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("is blank (only whitespace); pass the id printed by add or search")
    return value


#: a memory or history event id
MemoryId = Annotated[str, StringConstraints(min_length=1, max_length=256,
                                            pattern=r"^[^\x00-\x1f\x7f]+$"),
                     AfterValidator(_not_blank)]
Version = Annotated[int, Field(ge=1, le=2**53)]
#: an export line holds a record (content up to MAX_TEXT) or an event (before and after)
ExportLine = Annotated[str, StringConstraints(max_length=4 * MAX_TEXT)]
SearchModeField = Literal["auto", "hybrid", "keyword", "vector"]


class MemoryRequest(Request, Generic[R]):
    """Base of the memory requests; ``R`` is what running one returns
    (``Memory.run(SearchRequest(...))`` is a :class:`~remem.memory.results.SearchResult`).

    ``R`` is for the type checker only: no field has it, so at run time ``MemoryRequest[X]``
    and ``_Scoped[X]`` are the classes themselves. pydantic would otherwise build one more
    model per request (``_Scoped[AddResult]``...), half the cost of importing this module."""

    if not TYPE_CHECKING:
        def __class_getitem__(cls, params: Any) -> Any:
            return cls


class _Scoped(MemoryRequest[R]):
    """Whose memories: a user, an agent, a thread, or a namespace."""

    user_id: ScopeId | None = Field(None, description="whose memories (a user id)")
    agent_id: ScopeId | None = Field(None, description="an agent id (with or without user_id)")
    thread_id: ScopeId | None = Field(
        None, description="the conversation it comes from (the scope only when neither "
                          "user_id nor agent_id is given)")
    namespace: NamespacePath | None = Field(
        None, description="a namespace instead of user_id/agent_id")

    @property
    def has_scope(self) -> bool:
        """Whether any scope was given."""
        return any(v is not None for v in (self.user_id, self.agent_id, self.thread_id,
                                           self.namespace))


class AddRequest(_Scoped[AddResult]):
    """Remember what ``messages`` say."""

    operation: ClassVar[str] = "add"

    messages: Messages = Field(description="text, or chat messages (OpenAI-style)")
    infer: bool | None = Field(
        None, description="extract memories with the LLM and reconcile them with what is "
                          "stored (infer=true), or store the text as is (infer=false); left "
                          "unset, extract when a chat model is configured and store as is "
                          "otherwise (the result's inferred says which)")
    metadata: JsonObject | None = Field(None, description="JSON kept with each new memory")
    kind: Kind = Field("fact", description="the kind of a memory stored as is (infer=false)")
    split: Split = Field(
        "user_messages", description="how text stored as is (infer=false) becomes memories: "
                                     "one per user message, one per turn (a user message "
                                     "and its replies), or none (the whole conversation)")
    actor: Actor = Field("user", description="who made the change (recorded in history; "
                                             "servers record the caller's key instead)")

    def with_model(self, has_model: bool) -> AddRequest:
        """This add with ``infer`` decided for a surface that has a chat model or not
        (``has_model``): unset becomes whether there is one. ``infer=True`` without one is
        an :class:`~remem.errors.UnsupportedError` naming the fix."""
        if self.infer is None:
            return self.model_copy(update={"infer": has_model})
        if self.infer and not has_model:
            raise UnsupportedError(
                "infer=true needs a chat model and none is configured here: leave infer out "
                "or set it to false to store the text as is, or configure a model "
                "(REMEM_LLM_MODEL and the other REMEM_LLM_* settings, see docs/llm.md)")
        return self


class SearchRequest(_Scoped[SearchResult]):
    """Current memories of a scope, best first for ``query`` (newest first without)."""

    operation: ClassVar[str] = "search"

    query: Query | None = Field(None, description="what to look for (keywords and meaning)")
    filters: JsonObject | None = Field(
        None, description="the filter language over record fields (kind, metadata.*...)")
    limit: Limit = Field(10, description="most memories returned")
    offset: Offset = Field(0, description="memories to skip (for the next page)")
    as_of: Timestamp | None = Field(
        None, description="what was valid at this time (epoch seconds)")
    include_invalid: bool = Field(False, description="also superseded and deleted memories")
    mode: SearchModeField = Field("auto", description="signals to rank by: auto (all the "
                                                      "store has), hybrid, keyword, vector")
    min_score: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="drop hits whose relevance (0-1: each hit's match with the query, "
                          "whatever the page) is below this")
    recency_half_life: Annotated[float, Field(gt=0, le=1e11)] | None = Field(
        None, description="weigh newer memories up: seconds until the recency factor halves")
    recency_weight: Annotated[float, Field(ge=0, le=1)] = Field(
        0.2, description="how much recency counts, with recency_half_life (0-1)")
    mmr: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="diversify results: MMR lambda (1 = relevance only)")
    stages: StagesSpec | None = Field(
        None, description="conversation ranking stages, for memories with a thread: 'none', "
                          "or names separated by commas, each optionally name:weight, from "
                          "sessions, speakers, timing, questions, mentions, neighbours, "
                          "spread, subjects (subjects:N: the N best memories of the person "
                          "the query names lead); unset: the measured defaults for the "
                          "query's language")


class GetRequest(MemoryRequest[MemoryRecord]):
    """The memory with this id."""

    operation: ClassVar[str] = "get"

    memory_id: MemoryId = Field(description="a memory id")


class GetAllRequest(_Scoped[MemoryPage]):
    """Every memory of a scope, newest first, a page at a time."""

    operation: ClassVar[str] = "get_all"

    filters: JsonObject | None = Field(None, description="the filter language over records")
    limit: Limit = Field(100, description="most memories returned")
    offset: Offset = Field(0, description="memories to skip")
    include_invalid: bool = Field(False, description="also superseded and deleted memories")

    @model_validator(mode="after")
    def _needs_scope(self) -> GetAllRequest:
        if not self.has_scope:
            raise ValueError("get_all needs a scope: pass user_id, agent_id, thread_id or "
                             "namespace")
        return self


class UpdateRequest(MemoryRequest[ChangeResult]):
    """Correct a memory in place (same id, version + 1; history keeps the old content)."""

    operation: ClassVar[str] = "update"

    memory_id: MemoryId = Field(description="a memory id")
    content: Text | JsonObject | None = Field(None, description="the new content")
    kind: Kind | None = Field(None, description="the new kind")
    metadata: JsonObject | None = Field(None, description="the new metadata")
    version: Version | None = Field(
        None, description="the version you read; a conflict error if it changed since")
    actor: Actor = Field("user", description="who made the change")
    reason: Reason = Field("", description="why (recorded in history)")


class DeleteRequest(MemoryRequest[ChangeResult]):
    """Invalidate a memory (kept for history and as_of); ``hard`` removes it."""

    operation: ClassVar[str] = "delete"

    memory_id: MemoryId = Field(description="a memory id")
    hard: bool = Field(False, description="remove the record instead of invalidating it")
    version: Version | None = Field(
        None, description="the version you read; a conflict error if it changed since")
    actor: Actor = Field("user", description="who made the change")
    reason: Reason = Field("", description="why (recorded in history)")


class DeleteAllRequest(_Scoped[ChangeResult]):
    """Forget every current memory of a scope in one call (undoable unless ``hard``)."""

    operation: ClassVar[str] = "delete_all"

    hard: bool = Field(False, description="remove the records instead of invalidating them")
    actor: Actor = Field("user", description="who made the change")
    reason: Reason = Field("", description="why (recorded in history)")

    @model_validator(mode="after")
    def _needs_scope(self) -> DeleteAllRequest:
        if not self.has_scope:
            raise ValueError("delete_all needs a scope: pass user_id, agent_id, thread_id or "
                             "namespace (it never deletes everything)")
        return self


class HistoryRequest(MemoryRequest[list[HistoryEvent]]):
    """Every change of a memory, oldest first."""

    operation: ClassVar[str] = "history"

    memory_id: MemoryId = Field(description="a memory id")


class UndoRequest(MemoryRequest[ChangeResult]):
    """Revert the change a history event recorded."""

    operation: ClassVar[str] = "undo"

    event_id: MemoryId = Field(description="a history event id")
    actor: Actor = Field("user", description="who made the change")


class ExportRequest(_Scoped[ExportResult]):
    """Memories and history of a scope (every scope when none is given) as JSONL lines."""

    operation: ClassVar[str] = "export"

    namespace: NamespacePrefix | None = Field(
        None, description="a namespace prefix instead of user_id/agent_id (empty: everything)")


class ImportRequest(MemoryRequest[ImportResult]):
    """Write lines made by export (ids, versions, timestamps and history kept; importing
    the same lines twice writes the same items again)."""

    operation: ClassVar[str] = "import"

    lines: Annotated[list[ExportLine], Field(max_length=MAX_IMPORT_LINES)] = Field(
        description="JSONL lines from export")
