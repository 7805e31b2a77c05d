"""Stored budgets: how much a namespace may hold, kept in the database and checked on writes.

``mem.background.set_budget(Budget(max_memories=500), user_id="ada")`` stores the budget in
the ``remem_budgets`` table beside the jobs (migration ``j002_access_budgets``). From then
on every write to that namespace is checked after it commits, off the writer's thread
(:mod:`remem.background.access`): a namespace found over its budget gets a ``forget`` job
(:mod:`remem.background.forgetting`), queued durably under the namespace's debounce key, so
a burst of writes queues one run, never one per write, and the write itself never waits for
the eviction. Setting a budget checks the namespace at once too.

What the check costs: one read of the budgets table per batch of writes, and for a namespace
that has a budget, a read of its current memories (stopping as soon as the count is over).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from remem.background.forgetting import FORGET, Budget
from remem.background.jobs import Job, Submission
from remem.background.queue import JobQueue
from remem.errors import InvalidInputError
from remem.memory.records import current_filter
from remem.store.types import Item, Namespace, SearchOp
from remem.tokens import DEFAULT_COUNTER

__all__ = ["BudgetCheck", "Budgets", "StoredBudget", "forget_submission", "namespace_key"]

_PAGE = 1000


def namespace_key(namespace: Sequence[str]) -> str:
    """How a namespace is stored in the budgets table (its JSON list)."""
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def forget_submission(namespace: Namespace, budget: Budget, *, tenant: str = "",
                      delay: float = 0.0) -> Submission:
    """The ``forget`` job of a namespace: one pending per namespace (a debounce key)."""
    key = "forget:" + json.dumps(list(namespace), ensure_ascii=False)
    return Submission(FORGET, key, key[:512], [], {"namespace": list(namespace),
                                                   **budget.to_dict()},
                      delay=delay, tenant=tenant)


@dataclass(frozen=True, slots=True)
class StoredBudget:
    """A namespace's stored budget."""

    namespace: Namespace
    budget: Budget
    tenant: str = ""
    updated_at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"namespace": list(self.namespace), **self.budget.to_dict(),
                "updated_at": self.updated_at}

    @classmethod
    def of_row(cls, row: tuple[str, str, str, float]) -> StoredBudget:
        """A budget as :meth:`JobQueue.budgets` returns it."""
        tenant, namespace, budget, updated_at = row
        return cls(tuple(json.loads(namespace)), Budget.of(json.loads(budget)), tenant,
                   updated_at)


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    """One namespace checked against its budget: what it holds (-1: it could not be read,
    and a run was queued to decide), and the job queued (if it was over)."""

    namespace: Namespace
    memories: int
    tokens: int
    over: bool
    job: Job | None = None


def _check_namespace(namespace: Sequence[str]) -> Namespace:
    if not namespace or not all(isinstance(p, str) and p for p in namespace):
        raise InvalidInputError(f"namespace must be a non-empty list of non-empty strings, "
                                f"got {list(namespace)!r}")
    return tuple(namespace)


def measure(store: Any, namespace: Namespace, budget: Budget) -> tuple[int, int, bool]:
    """Current memories and tokens of exactly ``namespace``, and whether they exceed
    ``budget`` (counting stops once they do, unless tokens are budgeted)."""
    count = tokens = offset = 0
    while True:
        [page] = store.batch([SearchOp(namespace, filter=current_filter(), limit=_PAGE,
                                       offset=offset)])
        for item in page:
            if isinstance(item, Item) and tuple(item.namespace) == namespace:
                count += 1
                if budget.max_tokens is not None:
                    tokens += DEFAULT_COUNTER.count(str(item.value.get("text", "")))
        over = ((budget.max_memories is not None and count > budget.max_memories)
                or (budget.max_tokens is not None and tokens > budget.max_tokens))
        if over or len(page) < _PAGE:
            return count, tokens, over
        offset += _PAGE


class Budgets:
    """The stored budgets of one tenant (``""`` outside a server) in ``queue``'s database."""

    def __init__(self, queue: JobQueue, *, tenant: str = "") -> None:
        self.queue = queue
        self.tenant = tenant

    def set(self, namespace: Sequence[str], budget: Budget) -> StoredBudget:
        """Store (or replace) the budget of ``namespace``."""
        scope = _check_namespace(namespace)
        self.queue.put_budget(self.tenant, namespace_key(scope),
                              json.dumps(budget.to_dict(), separators=(",", ":")))
        found = self.get(scope)
        assert found is not None
        return found

    def get(self, namespace: Sequence[str]) -> StoredBudget | None:
        """The budget of ``namespace`` (``None``: it has none)."""
        rows = self.queue.budgets(tenant=self.tenant, namespaces=[namespace_key(namespace)])
        return StoredBudget.of_row(rows[0]) if rows else None

    def all(self) -> list[StoredBudget]:
        """Every budget of this tenant, by namespace."""
        return [StoredBudget.of_row(row) for row in self.queue.budgets(tenant=self.tenant)]

    def delete(self, namespace: Sequence[str]) -> bool:
        """Drop the budget of ``namespace``; whether it had one."""
        return self.queue.delete_budget(self.tenant, namespace_key(_check_namespace(namespace)))

    def check(self, store: Any, namespaces: Sequence[Namespace]) -> list[BudgetCheck]:
        """Check each of ``namespaces`` that has a budget against it (in ``store``, the
        tenant's view); queue a ``forget`` job for each one over it."""
        keys = sorted({namespace_key(ns) for ns in namespaces})
        checks = []
        for row in self.queue.budgets(tenant=self.tenant, namespaces=keys):
            stored = StoredBudget.of_row(row)
            try:
                count, tokens, over = measure(store, stored.namespace, stored.budget)
            except Exception:
                # the store cannot be read (closed at exit, say): let the run decide, it
                # reads the namespace itself and evicts nothing when it fits
                count, tokens, over = -1, -1, True
            job = (self.queue.submit(forget_submission(stored.namespace, stored.budget,
                                                       tenant=self.tenant))
                   if over else None)
            checks.append(BudgetCheck(stored.namespace, count, tokens, over, job))
        return checks
