"""What the memory operations return: Python values, and the JSON shape of each (declared
here on :class:`~remem.memory.shapes.MemoryWire`, gathered in :mod:`remem.memory.wire`).

``add`` returns an :class:`~remem.memory.store_manager.AddResult`; ``search`` a
:class:`SearchResult`; ``get`` a :class:`~remem.memory.records.MemoryRecord`; ``get_all`` a
:class:`MemoryPage`; ``update``, ``delete``, ``delete_all`` and ``undo`` a
:class:`ChangeResult`; ``history`` a list of :class:`~remem.memory.history.HistoryEvent`;
``export`` an :class:`ExportResult` and ``import`` an :class:`ImportResult`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from remem.llm.base import Usage
from remem.memory.reconcile import Change, ChangeOp, Plan, Skip
from remem.memory.records import MemoryOut, MemoryRecord
from remem.memory.shapes import Content, MemoryWire, json_of
from remem.store.types import SearchItem, SignalScore

__all__ = [
    "ChangeOut",
    "ChangeResult",
    "ChangeResultOut",
    "ExportOut",
    "ExportResult",
    "HitOut",
    "ImportOut",
    "ImportResult",
    "MemoryHit",
    "MemoryPage",
    "MemoryPageOut",
    "ModelUsageOut",
    "SearchResult",
    "SearchResultOut",
    "SignalOut",
    "SkipOut",
]


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A search result: the memory, its score, its relevance, and how each ranking signal
    scored it (``{"keyword": SignalScore(rank=1, score=2.3), ...}``); ``None`` and empty
    without a query.

    ``score`` orders the hits and means little outside the page. ``relevance`` is how well
    the memory matches the query on a fixed scale from 0 to 1, whatever the page or the
    other hits (what ``min_score`` is compared with), and ``relevance_by_signal`` each
    signal's part of it (keyword: the share of the query's term weight held; vector: the
    cosine clamped to [0, 1]). See ``docs/search.md``, "Scores"."""

    memory: MemoryRecord
    score: float | None = None
    details: Mapping[str, SignalScore] = field(default_factory=dict)
    relevance: float | None = None
    relevance_by_signal: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_item(cls, item: SearchItem) -> MemoryHit:
        """A hit from a store search result."""
        return cls(MemoryRecord.from_item(item), item.score, dict(item.details),
                   item.relevance, dict(item.relevance_by_signal))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the shape declared below)."""
        return json_of(HitOut.of(self))


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Search hits, best first, and what the search cost (never an LLM call today)."""

    hits: tuple[MemoryHit, ...] = ()
    usage: Usage = field(default_factory=Usage)

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[MemoryHit]:
        return iter(self.hits)

    def __getitem__(self, index: int) -> MemoryHit:
        return self.hits[index]

    @property
    def memories(self) -> list[MemoryRecord]:
        """The records of the hits."""
        return [hit.memory for hit in self.hits]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the shape declared below)."""
        return json_of(SearchResultOut.of(self))


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """One page of a scope's memories, newest first. ``next_offset``: pass it as ``offset``
    for the next page (``None``: this is the last one)."""

    memories: tuple[MemoryRecord, ...] = ()
    next_offset: int | None = None

    def __len__(self) -> int:
        return len(self.memories)

    def __iter__(self) -> Iterator[MemoryRecord]:
        return iter(self.memories)

    def __getitem__(self, index: int) -> MemoryRecord:
        return self.memories[index]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the shape declared below)."""
        return json_of(MemoryPageOut.of(self))


@dataclass(frozen=True, slots=True)
class ChangeResult:
    """What an update, delete, delete_all or undo changed, and what it cost."""

    changes: tuple[Change, ...] = ()
    skipped: tuple[Skip, ...] = ()
    usage: Usage = field(default_factory=Usage)

    @classmethod
    def of(cls, plan: Plan) -> ChangeResult:
        """The result of a committed plan."""
        return cls(tuple(plan.changes), tuple(plan.skipped))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the shape declared below)."""
        return json_of(ChangeResultOut.of(self))


@dataclass(frozen=True, slots=True)
class ExportResult:
    """Memories and history as JSONL lines (what :meth:`remem.api.Memory.export` writes)."""

    lines: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """How many lines."""
        return len(self.lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the shape declared below)."""
        return json_of(ExportOut.of(self))


@dataclass(frozen=True, slots=True)
class ImportResult:
    """How many lines an import wrote."""

    count: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the shape declared below)."""
        return json_of(ImportOut.of(self))


# -- their JSON shapes (gathered with the others in remem.memory.wire) -----------------------


class ModelUsageOut(MemoryWire[Usage]):
    """What an operation cost: LLM calls and tokens."""

    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of(cls, result: Usage) -> ModelUsageOut:
        """The model of ``result``."""
        return cls(llm_calls=result.calls, input_tokens=result.input_tokens,
                   output_tokens=result.output_tokens)

    def value(self) -> Usage:
        """The usage."""
        return Usage(self.llm_calls, self.input_tokens, self.output_tokens)


class SignalOut(MemoryWire[SignalScore]):
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


class ChangeOut(MemoryWire[Change]):
    """One applied change: the history event's id and the memory after it (before it, for
    a hard delete; for ``remove``, the record an undo took away)."""

    op: ChangeOp
    event_id: str
    memory: MemoryOut

    @classmethod
    def of(cls, result: Change) -> ChangeOut:
        """The model of ``result``."""
        return cls(op=result.op, event_id=result.event_id, memory=MemoryOut.of(result.memory))

    def value(self) -> Change:
        """The change."""
        return Change(self.op, self.memory.value(), self.event_id)


class SkipOut(MemoryWire[Skip]):
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


class HitOut(MemoryWire[MemoryHit]):
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


class SearchResultOut(MemoryWire[SearchResult]):
    """Search hits, best first."""

    hits: list[HitOut] = Field(default_factory=list)
    usage: ModelUsageOut = Field(default_factory=ModelUsageOut)

    @classmethod
    def of(cls, result: SearchResult) -> SearchResultOut:
        """The model of ``result``."""
        return cls(hits=[HitOut.of(h) for h in result.hits], usage=ModelUsageOut.of(result.usage))

    def value(self) -> SearchResult:
        """The search result."""
        return SearchResult(tuple(h.value() for h in self.hits), self.usage.value())


class MemoryPageOut(MemoryWire[MemoryPage]):
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


class ChangeResultOut(MemoryWire[ChangeResult]):
    """What an update, delete, delete_all or undo changed and skipped."""

    changes: list[ChangeOut] = Field(default_factory=list)
    skipped: list[SkipOut] = Field(default_factory=list)
    usage: ModelUsageOut = Field(default_factory=ModelUsageOut)

    @classmethod
    def of(cls, result: ChangeResult) -> ChangeResultOut:
        """The model of ``result``."""
        return cls(changes=[ChangeOut.of(c) for c in result.changes],
                   skipped=[SkipOut.of(s) for s in result.skipped],
                   usage=ModelUsageOut.of(result.usage))

    def value(self) -> ChangeResult:
        """The change result."""
        return ChangeResult(tuple(c.value() for c in self.changes),
                            tuple(s.value() for s in self.skipped), self.usage.value())


class ExportOut(MemoryWire[ExportResult]):
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


class ImportOut(MemoryWire[ImportResult]):
    """How many lines an import wrote."""

    count: int

    @classmethod
    def of(cls, result: ImportResult) -> ImportOut:
        """The model of ``result``."""
        return cls(count=result.count)

    def value(self) -> ImportResult:
        """The import result."""
        return ImportResult(self.count)
