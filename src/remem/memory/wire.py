"""The JSON shape of every memory result, declared once (pydantic models), gathered here.

Each model turns a Python result into JSON (:func:`dump`; what ``to_dict()`` of a record or
of a search, page or change result returns), is the HTTP route's ``response_model`` (so
OpenAPI documents it and schemathesis checks answers against it), and turns JSON back into the
Python result (:func:`load`, what ``remem.Client`` returns). :data:`RESULT_MODELS` names the
model of each request type.

A value whose ``to_dict()`` is its shape declares the shape beside itself (a record's in
:mod:`remem.memory.records`, the search, page and change shapes in
:mod:`remem.memory.results`, on the base in :mod:`remem.memory.shapes`), so no value reaches
up to this module; the rest are declared here. Every shape is importable from here.

Times are ISO 8601 strings (UTC); ``usage`` counts LLM calls and tokens. Readers ignore
fields they do not know, so a newer server's answers still read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from pydantic import Field

from remem.memory.history import HistoryEvent, HistoryOp
from remem.memory.reconcile import Change, Skip
from remem.memory.records import MemoryOut, MemoryRecord, SourceOut
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
    ChangeOut,
    ChangeResult,
    ChangeResultOut,
    ExportOut,
    ExportResult,
    HitOut,
    ImportOut,
    ImportResult,
    MemoryHit,
    MemoryPage,
    MemoryPageOut,
    ModelUsageOut,
    SearchResult,
    SearchResultOut,
    SignalOut,
    SkipOut,
)
from remem.memory.shapes import IsoTime, MemoryWire, json_of
from remem.memory.store_manager import AddResult
from remem.store.types import from_timestamp

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
    "MemoryWire",
    "ModelUsageOut",
    "SearchResultOut",
    "SignalOut",
    "SkipOut",
    "SourceOut",
    "Wire",
    "dump",
    "load",
]

#: the old name of :class:`MemoryWire` (issue 34: one name per concept), kept so user code
#: keeps working
Wire = MemoryWire

R = TypeVar("R")


class AddResultOut(MemoryWire[AddResult]):
    """What an add changed and skipped, in which namespace, and what it cost."""

    namespace: list[str]
    changes: list[ChangeOut] = Field(default_factory=list)
    skipped: list[SkipOut] = Field(default_factory=list)
    usage: ModelUsageOut = Field(default_factory=ModelUsageOut)
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
                   usage=ModelUsageOut.of(result.usage), write_attempts=result.write_attempts,
                   rejected=list(result.rejected), inferred=result.inferred)

    def value(self) -> AddResult:
        """The add result."""
        return AddResult(tuple(self.namespace), tuple(c.value() for c in self.changes),
                         tuple(s.value() for s in self.skipped), self.usage.value(),
                         self.write_attempts, tuple(self.rejected), self.inferred)


class HistoryEventOut(MemoryWire[HistoryEvent]):
    """One change to one memory (``before`` / ``after``: the stored record values)."""

    id: str
    memory_id: str
    namespace: list[str]
    op: HistoryOp
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


class HistoryOut(MemoryWire[list[HistoryEvent]]):
    """Every change of a memory, oldest first."""

    events: list[HistoryEventOut] = Field(default_factory=list)

    @classmethod
    def of(cls, result: list[HistoryEvent]) -> HistoryOut:
        """The model of ``result``."""
        return cls(events=[HistoryEventOut.of(e) for e in result])

    def value(self) -> list[HistoryEvent]:
        """The events."""
        return [e.value() for e in self.events]


#: the result model of each memory request
RESULT_MODELS: Mapping[type[MemoryRequest[Any]], type[MemoryWire[Any]]] = {
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

_BY_TYPE: Mapping[type, type[MemoryWire[Any]]] = {
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
    return json_of(model.of(result))


def load(request: type[MemoryRequest[R]], data: Any) -> R:
    """The Python result of a ``request`` from its JSON (as a server answers it)."""
    model = RESULT_MODELS[request]
    return cast(R, model.model_validate(data).value())
