"""The JSON shape of every memory result, declared once (pydantic models).

Each model turns a Python result into JSON (:func:`dump`, what every ``to_dict()`` of
:mod:`remem.memory.results` returns), is the HTTP route's ``response_model`` (so OpenAPI
documents it and schemathesis checks answers against it), and turns JSON back into the
Python result (:func:`load`, what ``remem.Client`` returns). :data:`RESULT_MODELS` names the
model of each request type.

Times are ISO 8601 strings (UTC); ``usage`` counts LLM calls and tokens. Readers ignore
fields they do not know, so a newer server's answers still read.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

from remem.llm.base import Usage
from remem.memory.history import HistoryEvent
from remem.memory.reconcile import Change, Skip
from remem.memory.records import MemoryRecord, Source
from remem.memory.requests import (
    AddRequest,
    DeleteAllRequest,
    DeleteRequest,
    ExportRequest,
    GetAllRequest,
    GetRequest,
    HistoryRequest,
    ImportRequest,
    MemoryRequest,
    SearchRequest,
    UndoRequest,
    UpdateRequest,
)
from remem.memory.results import (
    ChangeResult,
    ExportResult,
    ImportResult,
    MemoryHit,
    MemoryPage,
    SearchResult,
)
from remem.memory.store_manager import AddResult
from remem.store.types import SignalScore, from_timestamp

__all__ = [
    "RESULT_MODELS",
    "AddResultOut",
    "ChangeOut",
    "ChangeResultOut",
    "ExportOut",
    "HistoryEventOut",
    "HistoryOut",
    "HitOut",
    "ImportOut",
    "MemoryOut",
    "MemoryPageOut",
    "SearchResultOut",
    "SignalOut",
    "SkipOut",
    "SourceOut",
    "UsageOut",
    "Wire",
    "dump",
    "load",
]

T = TypeVar("T")
R = TypeVar("R")

IsoTime = Annotated[datetime, PlainSerializer(lambda t: t.isoformat(), return_type=str,
                                              when_used="json")]
"""A time: ISO 8601 in JSON, an aware datetime in Python."""

Content = str | dict[str, Any]
HistoryOpName = Literal["add", "update", "invalidate", "delete", "restore"]
ChangeOpName = Literal["add", "update", "invalidate", "delete", "restore", "remove"]


def _iso(ts: float | None) -> datetime | None:
    return from_timestamp(ts) if ts is not None else None


def _ts(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment is not None else None


class Wire(BaseModel, Generic[T]):
    """A result's JSON shape: :meth:`of` from the Python value, :meth:`value` back."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @classmethod
    def of(cls, result: T) -> Any:
        """The model of ``result``."""
        raise NotImplementedError

    def value(self) -> T:
        """The Python result this JSON describes."""
        raise NotImplementedError


class UsageOut(Wire[Usage]):
    """What an operation cost: LLM calls and tokens."""

    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of(cls, result: Usage) -> UsageOut:
        """The model of ``result``."""
        return cls(llm_calls=result.calls, input_tokens=result.input_tokens,
                   output_tokens=result.output_tokens)

    def value(self) -> Usage:
        """The usage."""
        return Usage(self.llm_calls, self.input_tokens, self.output_tokens)


class SourceOut(Wire[Source]):
    """Where a memory came from."""

    thread_id: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    input_hash: str | None = None
    speaker: str | None = Field(default=None,
                                description="who said it (message name, else role)")
    turn: int | None = Field(default=None,
                             description="its first message's position in the add")
    context: str | None = Field(default=None,
                                description="words keyword search reads with its text (the "
                                            "message before it, the day it was said)")

    @classmethod
    def of(cls, result: Source) -> SourceOut:
        """The model of ``result``."""
        return cls(thread_id=result.thread_id, message_ids=list(result.message_ids),
                   input_hash=result.input_hash, speaker=result.speaker, turn=result.turn,
                   context=result.context)

    def value(self) -> Source:
        """The source."""
        return Source(self.thread_id, tuple(self.message_ids), self.input_hash,
                      self.speaker, self.turn, self.context)


class MemoryOut(Wire[MemoryRecord]):
    """One memory (see :class:`~remem.memory.records.MemoryRecord`)."""

    id: str
    namespace: list[str]
    content: Content
    text: str
    kind: str = "fact"
    schema_: str = Field("Fact", alias="schema")
    status: Literal["current", "invalid"] = "current"
    valid_at: IsoTime | None = None
    valid_until: IsoTime | None = None
    recorded_at: IsoTime | None = None
    invalid_at: IsoTime | None = None
    event_time: IsoTime | None = None
    source: SourceOut = Field(default_factory=SourceOut)
    content_hash: str = ""
    version: int = 1
    metadata: dict[str, Any] = Field(default_factory=dict)
    supersedes: str | None = None
    superseded_by: str | None = None
    created_at: IsoTime | None = None
    updated_at: IsoTime | None = None

    @classmethod
    def of(cls, result: MemoryRecord) -> MemoryOut:
        """The model of ``result``."""
        return cls(
            id=result.id, namespace=list(result.namespace), content=result.content,
            text=result.text, kind=result.kind, schema=result.schema, status=result.status,
            valid_at=_iso(result.valid_at), valid_until=_iso(result.valid_until),
            recorded_at=_iso(result.recorded_at or None), invalid_at=_iso(result.invalid_at),
            event_time=_iso(result.event_time), source=SourceOut.of(result.source),
            content_hash=result.content_hash, version=result.version,
            metadata=result.metadata, supersedes=result.supersedes,
            superseded_by=result.superseded_by, created_at=_iso(result.created_at or None),
            updated_at=_iso(result.updated_at or None),
        )

    def value(self) -> MemoryRecord:
        """The record."""
        return MemoryRecord(
            id=self.id, namespace=tuple(self.namespace), content=self.content,
            kind=self.kind, schema=self.schema_, valid_at=_ts(self.valid_at) or 0.0,
            invalid_at=_ts(self.invalid_at), event_time=_ts(self.event_time),
            source=self.source.value(), content_hash=self.content_hash,
            version=self.version, metadata=dict(self.metadata), supersedes=self.supersedes,
            superseded_by=self.superseded_by, created_at=_ts(self.created_at) or 0.0,
            updated_at=_ts(self.updated_at) or 0.0, valid_until=_ts(self.valid_until),
            recorded_at=_ts(self.recorded_at) or 0.0,
        )


class ChangeOut(Wire[Change]):
    """One applied change: the history event's id and the memory after it (before it, for
    a hard delete; for ``remove``, the record an undo took away)."""

    op: ChangeOpName
    event_id: str
    memory: MemoryOut

    @classmethod
    def of(cls, result: Change) -> ChangeOut:
        """The model of ``result``."""
        return cls(op=result.op, event_id=result.event_id, memory=MemoryOut.of(result.memory))

    def value(self) -> Change:
        """The change."""
        return Change(self.op, self.memory.value(), self.event_id)


class SkipOut(Wire[Skip]):
    """A change that was not needed, and why (``existing_id``: the memory that made it
    unnecessary)."""

    reason: str
    content: Content | None = None
    existing_id: str | None = None

    @classmethod
    def of(cls, result: Skip) -> SkipOut:
        """The model of ``result``."""
        return cls(reason=result.reason, content=result.content,
                   existing_id=result.existing_id)

    def value(self) -> Skip:
        """The skip."""
        return Skip(self.reason, self.content, self.existing_id)


class AddResultOut(Wire[AddResult]):
    """What an add changed and skipped, in which namespace, and what it cost."""

    namespace: list[str]
    changes: list[ChangeOut] = Field(default_factory=list)
    skipped: list[SkipOut] = Field(default_factory=list)
    usage: UsageOut = Field(default_factory=UsageOut)
    write_attempts: int = 0
    rejected: list[str] = Field(default_factory=list)
    inferred: bool = Field(True, description="whether a chat model extracted the memories "
                                             "(false: the text was stored as given)")

    @classmethod
    def of(cls, result: AddResult) -> AddResultOut:
        """The model of ``result``."""
        return cls(namespace=list(result.namespace),
                   changes=[ChangeOut.of(c) for c in result.changes],
                   skipped=[SkipOut.of(s) for s in result.skipped],
                   usage=UsageOut.of(result.usage), write_attempts=result.write_attempts,
                   rejected=list(result.rejected), inferred=result.inferred)

    def value(self) -> AddResult:
        """The add result."""
        return AddResult(tuple(self.namespace), tuple(c.value() for c in self.changes),
                         tuple(s.value() for s in self.skipped), self.usage.value(),
                         self.write_attempts, tuple(self.rejected), self.inferred)


class ChangeResultOut(Wire[ChangeResult]):
    """What an update, delete, delete_all or undo changed and skipped."""

    changes: list[ChangeOut] = Field(default_factory=list)
    skipped: list[SkipOut] = Field(default_factory=list)
    usage: UsageOut = Field(default_factory=UsageOut)

    @classmethod
    def of(cls, result: ChangeResult) -> ChangeResultOut:
        """The model of ``result``."""
        return cls(changes=[ChangeOut.of(c) for c in result.changes],
                   skipped=[SkipOut.of(s) for s in result.skipped],
                   usage=UsageOut.of(result.usage))

    def value(self) -> ChangeResult:
        """The change result."""
        return ChangeResult(tuple(c.value() for c in self.changes),
                            tuple(s.value() for s in self.skipped), self.usage.value())


class SignalOut(Wire[SignalScore]):
    """How one ranking signal scored a hit (``keyword``, ``vector``, ``recency``)."""

    rank: int
    score: float

    @classmethod
    def of(cls, result: SignalScore) -> SignalOut:
        """The model of ``result``."""
        return cls(rank=result.rank, score=result.score)

    def value(self) -> SignalScore:
        """The signal score."""
        return SignalScore(self.rank, self.score)


class HitOut(Wire[MemoryHit]):
    """A search hit: the memory, its score (orders the page), each signal's rank and raw
    score, and its relevance in [0, 1] with each signal's part (all null or empty without a
    query). ``relevance`` and ``relevance_by_signal`` came later: a reply without them reads
    as null and empty."""

    memory: MemoryOut
    score: float | None = None
    details: dict[str, SignalOut] = Field(default_factory=dict)
    relevance: Annotated[float, Field(ge=0, le=1)] | None = None
    relevance_by_signal: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(
        default_factory=dict)

    @classmethod
    def of(cls, result: MemoryHit) -> HitOut:
        """The model of ``result``."""
        return cls(memory=MemoryOut.of(result.memory), score=result.score,
                   details={k: SignalOut.of(v) for k, v in result.details.items()},
                   relevance=result.relevance,
                   relevance_by_signal=dict(result.relevance_by_signal))

    def value(self) -> MemoryHit:
        """The hit."""
        return MemoryHit(self.memory.value(), self.score,
                         {k: v.value() for k, v in self.details.items()}, self.relevance,
                         dict(self.relevance_by_signal))


class SearchResultOut(Wire[SearchResult]):
    """Search hits, best first."""

    hits: list[HitOut] = Field(default_factory=list)
    usage: UsageOut = Field(default_factory=UsageOut)

    @classmethod
    def of(cls, result: SearchResult) -> SearchResultOut:
        """The model of ``result``."""
        return cls(hits=[HitOut.of(h) for h in result.hits], usage=UsageOut.of(result.usage))

    def value(self) -> SearchResult:
        """The search result."""
        return SearchResult(tuple(h.value() for h in self.hits), self.usage.value())


class MemoryPageOut(Wire[MemoryPage]):
    """A page of memories, newest first; ``next_offset`` is null on the last page."""

    memories: list[MemoryOut] = Field(default_factory=list)
    next_offset: int | None = None

    @classmethod
    def of(cls, result: MemoryPage) -> MemoryPageOut:
        """The model of ``result``."""
        return cls(memories=[MemoryOut.of(m) for m in result.memories],
                   next_offset=result.next_offset)

    def value(self) -> MemoryPage:
        """The page."""
        return MemoryPage(tuple(m.value() for m in self.memories), self.next_offset)


class HistoryEventOut(Wire[HistoryEvent]):
    """One change to one memory (``before`` / ``after``: the stored record values)."""

    id: str
    memory_id: str
    namespace: list[str]
    op: HistoryOpName
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    at: IsoTime
    actor: str = "user"
    reason: str = ""
    thread_id: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    change_id: str = ""
    undoes: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, result: HistoryEvent) -> HistoryEventOut:
        """The model of ``result``."""
        return cls(id=result.id, memory_id=result.memory_id,
                   namespace=list(result.namespace), op=result.op, before=result.before,
                   after=result.after, at=from_timestamp(result.at), actor=result.actor,
                   reason=result.reason, thread_id=result.thread_id,
                   message_ids=list(result.message_ids), change_id=result.change_id,
                   undoes=result.undoes, metadata=result.metadata)

    def value(self) -> HistoryEvent:
        """The event."""
        return HistoryEvent(
            id=self.id, memory_id=self.memory_id, namespace=tuple(self.namespace),
            op=self.op, before=self.before, after=self.after, at=self.at.timestamp(),
            actor=self.actor, reason=self.reason, thread_id=self.thread_id,
            message_ids=tuple(self.message_ids), change_id=self.change_id,
            undoes=self.undoes, metadata=dict(self.metadata))


class HistoryOut(Wire[list[HistoryEvent]]):
    """Every change of a memory, oldest first."""

    events: list[HistoryEventOut] = Field(default_factory=list)

    @classmethod
    def of(cls, result: list[HistoryEvent]) -> HistoryOut:
        """The model of ``result``."""
        return cls(events=[HistoryEventOut.of(e) for e in result])

    def value(self) -> list[HistoryEvent]:
        """The events."""
        return [e.value() for e in self.events]


class ExportOut(Wire[ExportResult]):
    """Memories and history as JSONL lines (``count`` of them)."""

    count: int
    lines: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, result: ExportResult) -> ExportOut:
        """The model of ``result``."""
        return cls(count=result.count, lines=list(result.lines))

    def value(self) -> ExportResult:
        """The export."""
        return ExportResult(tuple(self.lines))


class ImportOut(Wire[ImportResult]):
    """How many lines an import wrote."""

    count: int

    @classmethod
    def of(cls, result: ImportResult) -> ImportOut:
        """The model of ``result``."""
        return cls(count=result.count)

    def value(self) -> ImportResult:
        """The import result."""
        return ImportResult(self.count)


#: the result model of each memory request
RESULT_MODELS: Mapping[type[MemoryRequest[Any]], type[Wire[Any]]] = {
    AddRequest: AddResultOut,
    SearchRequest: SearchResultOut,
    GetRequest: MemoryOut,
    GetAllRequest: MemoryPageOut,
    UpdateRequest: ChangeResultOut,
    DeleteRequest: ChangeResultOut,
    DeleteAllRequest: ChangeResultOut,
    HistoryRequest: HistoryOut,
    UndoRequest: ChangeResultOut,
    ExportRequest: ExportOut,
    ImportRequest: ImportOut,
}

_BY_TYPE: Mapping[type, type[Wire[Any]]] = {
    MemoryRecord: MemoryOut, AddResult: AddResultOut, ChangeResult: ChangeResultOut,
    SearchResult: SearchResultOut, MemoryHit: HitOut, MemoryPage: MemoryPageOut,
    HistoryEvent: HistoryEventOut, ExportResult: ExportOut, ImportResult: ImportOut,
    Change: ChangeOut, Skip: SkipOut,
}


def dump(result: Any) -> dict[str, Any]:
    """``result`` (any memory result) as JSON-ready data, in its declared shape."""
    model = _BY_TYPE.get(type(result))
    if model is None:
        raise TypeError(f"no JSON shape declared for {type(result).__name__}")
    data: dict[str, Any] = model.of(result).model_dump(mode="json", by_alias=True)
    return data


def load(request: type[MemoryRequest[R]], data: Any) -> R:
    """The Python result of a ``request`` from its JSON (as a server answers it)."""
    model = RESULT_MODELS[request]
    return cast(R, model.model_validate(data).value())
