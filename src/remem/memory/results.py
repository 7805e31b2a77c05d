"""What the memory operations return (Python values; their JSON shapes are in
:mod:`remem.memory.wire`).

``add`` returns an :class:`~remem.memory.store_manager.AddResult`; ``search`` a
:class:`SearchResult`; ``get`` a :class:`~remem.memory.records.MemoryRecord`; ``get_all`` a
:class:`MemoryPage`; ``update``, ``delete``, ``delete_all`` and ``undo`` a
:class:`ChangeResult`; ``history`` a list of :class:`~remem.memory.history.HistoryEvent`;
``export`` an :class:`ExportResult` and ``import`` an :class:`ImportResult`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from remem.llm.base import Usage
from remem.memory.reconcile import Change, Plan, Skip
from remem.memory.records import MemoryRecord
from remem.store.types import SearchItem, SignalScore

__all__ = ["ChangeResult", "ExportResult", "ImportResult", "MemoryHit", "MemoryPage",
           "SearchResult"]


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
        """JSON-ready dict (the shape :mod:`remem.memory.wire` declares)."""
        from remem.memory.wire import dump

        return dump(self)


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
        """JSON-ready dict (the shape :mod:`remem.memory.wire` declares)."""
        from remem.memory.wire import dump

        return dump(self)


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
        """JSON-ready dict (the shape :mod:`remem.memory.wire` declares)."""
        from remem.memory.wire import dump

        return dump(self)


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
        """JSON-ready dict (the shape :mod:`remem.memory.wire` declares)."""
        from remem.memory.wire import dump

        return dump(self)


@dataclass(frozen=True, slots=True)
class ExportResult:
    """Memories and history as JSONL lines (what :meth:`remem.api.Memory.export` writes)."""

    lines: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """How many lines."""
        return len(self.lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the shape :mod:`remem.memory.wire` declares)."""
        from remem.memory.wire import dump

        return dump(self)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """How many lines an import wrote."""

    count: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the shape :mod:`remem.memory.wire` declares)."""
        from remem.memory.wire import dump

        return dump(self)
