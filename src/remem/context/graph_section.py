"""A context section of temporal knowledge: the facts of the scope's graph
(:meth:`remem.api.Memory.graph`) that the query finds and that hold now, with their dates."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from remem.context.types import ContextItem, ContextScope
from remem.graph import Fact

__all__ = ["GraphFactsSection", "fact_line"]


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def fact_line(fact: Fact) -> str:
    """A fact as one line, with the date it has held since (when the graph knows it)."""
    return f"- {fact.fact}" + (f" (since {_date(fact.valid_at)})" if fact.valid_at else "")


@dataclass(frozen=True, slots=True)
class GraphFactsSection:
    """Up to ``limit`` facts of the scope's graph for the query, best first, true at the time
    ``clock`` gives; absent without a query or without a user or agent id. ``order`` 35:
    after the relevant memories, before the thread's summary."""

    limit: int = 10
    clock: Callable[[], float] = time.time
    name: str = "graph"
    title: str = "Known facts"
    order: int = 35
    contiguous: bool = False

    def gather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """The facts as lines (see :func:`fact_line`)."""
        if not scope.query or not (scope.user_id or scope.agent_id):
            return []
        graph = scope.memory.graph(user_id=scope.user_id, agent_id=scope.agent_id)
        hits = graph.search(scope.query, limit=self.limit, as_of=self.clock())
        return [ContextItem(f"fact-{hit.fact.id}", fact_line(hit.fact)) for hit in hits]

    async def agather(self, scope: ContextScope) -> Sequence[ContextItem]:
        """Async :meth:`gather` (in a worker thread, as the graph's async methods are)."""
        return await asyncio.to_thread(self.gather, scope)
