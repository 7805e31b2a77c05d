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
* recency: ``0.5 ** (age / half_life)``, the age counted from the memory's last change;
* use: ``min(1, log1p(uses) / log1p(100))``, ``uses`` from ``metadata["uses"]`` (remem does
  not count reads by itself yet: an agent may record them there).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remem.background.consolidation import consolidate_flow
from remem.background.jobs import Job
from remem.errors import InvalidInputError
from remem.memory.flow import Flow, StoreBatch, run_sync
from remem.memory.locking import LockSettings
from remem.memory.operations import delete_flow
from remem.memory.reconcile import ChangeContext
from remem.memory.records import MemoryRecord, current_filter
from remem.store.types import Item, Namespace, SearchOp
from remem.tokens import DEFAULT_COUNTER

if TYPE_CHECKING:
    from remem.api import Memory

__all__ = ["FORGET", "Budget", "ForgetReport", "forget_flow", "forgetting_handler",
           "retention_score"]

#: the job kind of a budget enforcement run
FORGET = "forget"


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


def retention_score(record: MemoryRecord, now: float, budget: Budget) -> float:
    """How much ``record`` is worth keeping (higher: keep); see the module docstring."""
    importance = min(1.0, max(0.0, _number(record.metadata.get("importance"), 0.5)))
    changed = max(record.updated_at or 0.0, record.created_at or 0.0)
    recency = 0.5 ** (max(0.0, now - changed) / budget.half_life)
    uses = max(0.0, _number(record.metadata.get("uses"), 0.0))
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
        records += [MemoryRecord.from_item(i) for i in page if isinstance(i, Item)]
        if len(page) < 1000:
            return [r for r in records if tuple(r.namespace) == tuple(namespace)]
        offset += 1000


def _tokens(record: MemoryRecord) -> int:
    return DEFAULT_COUNTER.count(record.text)


def _over(count: int, tokens: int, budget: Budget) -> bool:
    return ((budget.max_memories is not None and count > budget.max_memories)
            or (budget.max_tokens is not None and tokens > budget.max_tokens))


def forget_flow(namespace: Namespace, budget: Budget, *, now: float, lock: LockSettings,
                vectors: bool = False, change_key: str = "forget") -> Flow[ForgetReport]:
    """Hold ``namespace`` to ``budget`` (see the module docstring) as a flow."""
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
    ranked = sorted((r for r in records if not pinned(r)),
                    key=lambda r: (retention_score(r, now, budget), r.created_at, r.id))
    evicted: list[str] = []
    for record in ranked:
        if not _over(count, tokens, budget):
            break
        score = retention_score(record, now, budget)
        ctx = ChangeContext(now=now, actor="forgetting",
                            reason=f"over the namespace's budget; retention score {score:.3f}",
                            change_id=f"{change_key}:{record.id}")
        yield from delete_flow(record.id, ctx, lock)
        evicted.append(record.id)
        count -= 1
        tokens -= _tokens(record)
    return ForgetReport(namespace, before, count, tokens_before, tokens, tuple(evicted), merged)


def forgetting_handler(memory_for: Callable[[str], Memory]
                       ) -> Callable[[Job], Mapping[str, Any]]:
    """The handler of :data:`FORGET` jobs (payload: ``namespace`` and the budget's fields)."""
    from remem.llm.config import require_model

    def run(job: Job) -> Mapping[str, Any]:
        memory = memory_for(job.tenant)
        budget = Budget.of(job.payload)
        flow = forget_flow(tuple(job.payload["namespace"]), budget, now=memory.clock(),
                           lock=memory.lock, vectors=memory.store.index is not None,
                           change_key=job.id)
        model = (memory.llm or require_model()) if budget.consolidate_first else None
        return run_sync(flow, memory.store, model).to_dict()

    return run
