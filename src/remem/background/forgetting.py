"""Bounded growth: a per-namespace budget, enforced by invalidating the least worth keeping.

A ``forget`` job holds a namespace to a budget (``max_memories`` current memories and/or
``max_tokens`` tokens of their text). When the namespace is over it, the job first runs a
consolidation (merging repeats frees room without losing anything), then invalidates the
memories with the lowest :func:`retention_score` until the namespace fits. Memories whose
metadata says ``"pinned": true`` are never touched. Every eviction is an ``invalidate`` event
in history (actor ``forgetting``, the score in the reason), so ``mem.undo(event_id)`` brings
a memory back; nothing is deleted. TTL stays the hard limit: an expired memory is gone
whatever its score.

The score (pure, in [0, 1] for importance in [0, 1]) weighs three things:

* importance: ``metadata["importance"]`` (0-1, set at extraction or by the agent; 0.5
  when unset), weight ``importance_weight``;
* recency: ``0.5 ** (age / half_life)``, the age counted from the memory's last change or
  its last read, whichever is later;
* use: ``min(1, log1p(uses) / log1p(100))``, ``uses`` the times searches and gets returned
  the memory (counted by remem, :mod:`remem.background.access`) plus ``metadata["uses"]``
  (what an agent recorded itself).

``policy="lru"`` ranks by the last read (or change) alone: least recently used first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from remem.background.consolidation import consolidate_flow
from remem.background.jobs import Job
from remem.background.queue import JobQueue
from remem.errors import ConfigError, InvalidInputError
from remem.memory.facade import MemoryFacade
from remem.memory.flow import Flow, StoreBatch, run_sync
from remem.memory.locking import LockSettings
from remem.memory.observers import observer_for
from remem.memory.operations import delete_flow
from remem.memory.reconcile import ChangeContext
from remem.memory.records import MemoryRecord, current_filter, memory_records
from remem.store.types import Item, Namespace, SearchOp
from remem.tokens import DEFAULT_COUNTER

__all__ = ["FORGET", "Budget", "ForgetReport", "forget_flow", "forgetting_handler",
           "retention_score"]

#: the job kind of a budget enforcement run
FORGET = "forget"
#: how a run picks what to evict (:attr:`Budget.policy`)
POLICIES = ("retention", "lru")
#: ``memory_id -> (uses, last_accessed)``: what remem counted of each memory's reads
Reads = Mapping[str, tuple[int, float]]


@dataclass(frozen=True, slots=True)
class Budget:
    """How much a namespace may hold, and how the score weighs what to keep."""

    max_memories: int | None = None
    max_tokens: int | None = None
    half_life: float = 30 * 86400.0
    importance_weight: float = 0.5
    recency_weight: float = 0.3
    use_weight: float = 0.2
    consolidate_first: bool = True
    #: ``"retention"``: lowest retention score first; ``"lru"``: least recently used first
    policy: str = "retention"

    def __post_init__(self) -> None:
        if self.max_memories is None and self.max_tokens is None:
            raise InvalidInputError("a budget needs max_memories or max_tokens (or both)")
        for name in ("max_memories", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise InvalidInputError(f"{name} must be an integer >= 0, got {value!r}")
        if not self.half_life > 0:
            raise InvalidInputError(f"half_life must be > 0 seconds, got {self.half_life!r}")
        if self.policy not in POLICIES:
            raise InvalidInputError(f"policy must be one of {', '.join(POLICIES)}; got "
                                    f"{self.policy!r}")

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Budget:
        """A budget from a job payload."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (a job payload)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _number(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return float(value)


def last_used(record: MemoryRecord, reads: Reads | None = None) -> float:
    """When the memory was last changed or read (epoch seconds)."""
    read = (reads or {}).get(record.id)
    return max(record.updated_at or 0.0, record.created_at or 0.0,
               read[1] if read is not None else 0.0)


def retention_score(record: MemoryRecord, now: float, budget: Budget,
                    reads: Reads | None = None) -> float:
    """How much ``record`` is worth keeping (higher: keep); see the module docstring.
    ``reads``: the read counts remem keeps (:meth:`JobQueue.access`)."""
    importance = min(1.0, max(0.0, _number(record.metadata.get("importance"), 0.5)))
    recency = 0.5 ** (max(0.0, now - last_used(record, reads)) / budget.half_life)
    read = (reads or {}).get(record.id)
    uses = (max(0.0, _number(record.metadata.get("uses"), 0.0))
            + (read[0] if read is not None else 0))
    use = min(1.0, math.log1p(uses) / math.log1p(100))
    return float(budget.importance_weight * importance + budget.recency_weight * recency
                 + budget.use_weight * use)


def pinned(record: MemoryRecord) -> bool:
    """Whether the memory must never be evicted."""
    return record.metadata.get("pinned") is True


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What a run did: memories and tokens before and after, evictions, merges."""

    namespace: Namespace
    before: int
    after: int
    tokens_before: int
    tokens_after: int
    evicted: tuple[str, ...]
    merged: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"namespace": list(self.namespace), "before": self.before, "after": self.after,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "evicted": list(self.evicted), "merged": self.merged}


def _current(namespace: Namespace) -> Flow[list[MemoryRecord]]:
    records: list[MemoryRecord] = []
    offset = 0
    while True:
        [page] = yield StoreBatch([SearchOp(namespace, filter=current_filter(), limit=1000,
                                            offset=offset)])
        assert isinstance(page, list)
        # a record that does not parse is left alone (reported; remem doctor repairs it)
        records += memory_records(i for i in page if isinstance(i, Item))
        if len(page) < 1000:
            return [r for r in records if tuple(r.namespace) == tuple(namespace)]
        offset += 1000


def _tokens(record: MemoryRecord) -> int:
    return DEFAULT_COUNTER.count(record.text)


def _over(count: int, tokens: int, budget: Budget) -> bool:
    return ((budget.max_memories is not None and count > budget.max_memories)
            or (budget.max_tokens is not None and tokens > budget.max_tokens))


def forget_flow(namespace: Namespace, budget: Budget, *, now: float, lock: LockSettings,
                vectors: bool = False, change_key: str = "forget",
                reads: Callable[[list[str]], Reads] | None = None) -> Flow[ForgetReport]:
    """Hold ``namespace`` to ``budget`` (see the module docstring) as a flow. ``reads``:
    looks up the read counts of memory ids (none: only ``metadata["uses"]`` counts)."""
    records = yield from _current(namespace)
    before, tokens_before = len(records), sum(map(_tokens, records))
    merged = 0
    if _over(before, tokens_before, budget) and budget.consolidate_first:
        report = yield from consolidate_flow(namespace, now=now, lock=lock, vectors=vectors,
                                             change_key=f"{change_key}:merge")
        merged = report.merged
        if merged:
            records = yield from _current(namespace)
    count, tokens = len(records), sum(map(_tokens, records))
    counted = (reads([r.id for r in records]) if reads is not None and _over(count, tokens, budget)
               else {})

    def rank(record: MemoryRecord) -> tuple[float, float, str]:
        value = (last_used(record, counted) if budget.policy == "lru"
                 else retention_score(record, now, budget, counted))
        return (value, record.created_at, record.id)

    ranked = sorted((r for r in records if not pinned(r)), key=rank)
    evicted: list[str] = []
    for record in ranked:
        if not _over(count, tokens, budget):
            break
        score = retention_score(record, now, budget, counted)
        why = (f"least recently used (last {last_used(record, counted):.0f})"
               if budget.policy == "lru" else f"retention score {score:.3f}")
        ctx = ChangeContext(now=now, actor="forgetting",
                            reason=f"over the namespace's budget; {why}",
                            change_id=f"{change_key}:{record.id}")
        yield from delete_flow(record.id, ctx, lock)
        evicted.append(record.id)
        count -= 1
        tokens -= _tokens(record)
    return ForgetReport(namespace, before, count, tokens_before, tokens, tuple(evicted), merged)


def forgetting_handler(memory_for: Callable[[str], MemoryFacade], queue: JobQueue | None = None
                       ) -> Callable[[Job], Mapping[str, Any]]:
    """The handler of :data:`FORGET` jobs (payload: ``namespace`` and the budget's fields);
    ``queue``: the worker's (read counts are beside its jobs; default: the queue beside each
    memory's store, opened per run)."""
    from remem.llm.config import require_model

    def run(job: Job) -> Mapping[str, Any]:
        memory = memory_for(job.tenant)
        budget = Budget.of(job.payload)
        model = None
        if budget.consolidate_first:
            try:
                model = memory.llm or require_model()
            except ConfigError:  # no model anywhere: evict without merging first
                budget = replace(budget, consolidate_first=False)
        counts = queue if queue is not None else JobQueue.beside(memory.store)
        try:
            flow = forget_flow(tuple(job.payload["namespace"]), budget, now=memory.clock(),
                               lock=memory.lock, vectors=memory.store.index is not None,
                               change_key=job.id, reads=_reads_of(memory, counts))
            return run_sync(flow, memory.store, model).to_dict()
        finally:
            if counts is not queue:
                counts.close()

    return run


def _reads_of(memory: MemoryFacade, queue: JobQueue) -> Callable[[list[str]], Reads]:
    def look_up(memory_ids: list[str]) -> Reads:
        observer = observer_for(memory.store)
        if observer is not None:  # reads still queued in this process count too
            observer.flush()
        return queue.access(memory_ids)

    return look_up
