"""Debounced extraction: ``Memory.submit`` / ``flush`` / ``cancel`` over the job queue.

A submission is queued under a debounce key (the thread and the namespace it writes to). It
runs once nothing new arrived on that key for ``delay`` seconds: a newer submission while it
is pending replaces it and carries its messages (:class:`~remem.background.jobs.Submission`).
The job runs one extraction (one LLM call) over every message it holds, through the same
flow as ``Memory.add``, with the job id as the add's idempotency key: a job re-run after a
crash applies its changes at most once (:mod:`remem.memory.store_manager`).

:class:`MemoryJobs` is what ``Memory.submit`` & co. call; the server and ``remem worker`` use
it too, with ``tenant`` naming an API key's tenant.

:func:`handlers` builds a worker's handlers from the registry of job kinds
(:mod:`remem.background.kinds`): this module registers the kinds the background owns
(extraction, no-op, consolidation, forgetting); the families register theirs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from remem.background.consolidation import CONSOLIDATE, consolidation_handler
from remem.background.forgetting import FORGET, forgetting_handler
from remem.background.jobs import Job, Submission
from remem.background.kinds import MemoryFor, handlers_for, register_job_kind
from remem.background.queue import JobQueue
from remem.background.requests import (
    BudgetScope,
    CancelResult,
    FlushResult,
    SetBudgetRequest,
    SubmitRequest,
    SubmitResult,
    ThreadJobsRequest,
)
from remem.background.worker import Handler, Worker
from remem.memory.facade import MemoryFacade
from remem.memory.flow import run_sync
from remem.memory.namespaces import resolve_scope
from remem.messages.types import Message
from remem.store.types import Namespace

if TYPE_CHECKING:
    from remem.background.budgets import Budgets, StoredBudget
    from remem.background.forgetting import Budget

__all__ = ["EXTRACT", "NOOP", "MemoryJobs", "debounce_key", "extraction_handler", "handlers",
           "noop_handler"]

#: the job kind of a debounced extraction
EXTRACT = "extract"
#: a job that does nothing (benchmarks, health checks)
NOOP = "noop"


def debounce_key(namespace: Namespace, thread_id: str) -> str:
    """Submissions with the same key replace each other while pending."""
    return json.dumps([thread_id, list(namespace)], ensure_ascii=False, separators=(",", ":"))


def noop_handler(job: Job) -> Mapping[str, Any]:
    """Do nothing; the result echoes the payload's ``n`` (if any)."""
    return {"n": job.payload.get("n")}


def extraction_handler(memory_for: MemoryFor) -> Handler:
    """The handler of :data:`EXTRACT` jobs: one ``add(infer=True)`` over the job's messages,
    keyed by the job id; ``memory_for(tenant)``: the memory the job writes to."""
    from remem.llm.config import require_model

    def run(job: Job) -> Mapping[str, Any]:
        memory = memory_for(job.tenant)
        payload = job.payload
        messages = tuple(Message.model_validate(m) for m in payload.get("messages", []))
        flow = memory.formation.add_flow(
            messages, namespace=tuple(payload["namespace"]), infer=True,
            metadata=payload.get("metadata"), actor=payload.get("actor", "background"),
            thread_id=job.thread_id, idempotency_key=job.id)
        result = run_sync(flow, memory.store, memory.llm or require_model())
        return {**result.to_dict(), "messages": len(messages)}

    return run


register_job_kind(EXTRACT, lambda memory_for, queue: extraction_handler(memory_for))
register_job_kind(NOOP, lambda memory_for, queue: noop_handler)
register_job_kind(CONSOLIDATE, consolidation_handler)
register_job_kind(FORGET, forgetting_handler)


def handlers(memory_for: MemoryFor, queue: JobQueue | None = None) -> dict[str, Handler]:
    """Every job kind a memory worker runs (``remem worker``, ``remem serve
    --workers-in-process``, ``mem.background``): extraction, consolidation (``queue``: where
    a scheduled run queues its next one), forgetting, no-op, and the kinds the families
    registered (prompt optimization, episode extraction: :mod:`remem.background.kinds`)."""
    return handlers_for(memory_for, queue)


def _payload(request: SubmitRequest, namespace: Namespace) -> dict[str, Any]:
    return {"namespace": list(namespace), "metadata": request.metadata}


class MemoryJobs:
    """Background extraction for one :class:`~remem.api.Memory` (``tenant``: whose jobs,
    on a server; ``""`` otherwise). ``queue``: by default the one beside the memory's store.
    """

    def __init__(self, memory: MemoryFacade, queue: JobQueue | None = None, *,
                 tenant: str = "") -> None:
        self.memory = memory
        self.queue = queue if queue is not None else JobQueue.beside(memory.store,
                                                                      clock=memory.clock)
        self.tenant = tenant
        self._worker: Worker | None = None
        from remem.background.access import recorder_of

        recorder = recorder_of(memory.store)
        if recorder is not None:  # reads happen on this memory's clock
            recorder.clock = memory.clock

    def _namespace(self, request: SubmitRequest | ThreadJobsRequest) -> Namespace:
        return resolve_scope(self.memory.template, user_id=request.user_id,
                             agent_id=request.agent_id, thread_id=request.thread_id,
                             namespace=request.namespace)

    def submit(self, request: SubmitRequest) -> SubmitResult:
        """Queue (or extend the pending) extraction of the request's thread."""
        namespace = self._namespace(request)
        key = debounce_key(namespace, request.thread_id)
        stamped = [m.model_dump(mode="json") for m in request.messages]
        job = self.queue.submit(Submission(
            EXTRACT, key, request.thread_id, stamped, _payload(request, namespace),
            delay=request.delay, tenant=self.tenant))
        replaced = job.created_at != job.updated_at
        if self._worker is not None:
            self._worker.wake()
        return SubmitResult.of(job, replaced)

    def _key(self, request: ThreadJobsRequest) -> str | None:
        return (debounce_key(self._namespace(request), request.thread_id)
                if request.has_scope else None)

    def flush(self, request: ThreadJobsRequest) -> FlushResult:
        """Run the thread's pending extraction now, in this thread; a job a worker elsewhere
        took first is returned as it stands."""
        jobs = self.queue.flush(request.thread_id, debounce_key=self._key(request),
                                tenant=self.tenant)
        worker = self.worker()
        finished: list[Job] = []
        for job in jobs:
            claimed = self.queue.claim_one(job.id, worker.name, lease=worker.lease)
            after = worker.run_job(claimed) if claimed is not None else None
            finished.append(after or self.queue.get(job.id))
        return FlushResult.of(finished)

    def cancel(self, request: ThreadJobsRequest) -> CancelResult:
        """Drop the thread's pending extraction (a running one finishes)."""
        jobs = self.queue.cancel_pending(request.thread_id, debounce_key=self._key(request),
                                         tenant=self.tenant)
        return CancelResult(tuple(job.id for job in jobs))

    def worker(self, **options: Any) -> Worker:
        """The worker running this memory's jobs (created on first use)."""
        if self._worker is None:
            # this memory runs its own tenant's jobs only: another tenant's (a server's, in
            # the same database) would need that tenant's view of the store
            self._worker = Worker(self.queue, handlers(lambda _: self.memory, self.queue),
                                  tenant=self.tenant, **options)
        return self._worker

    def consolidate(self, *, user_id: str | None = None, agent_id: str | None = None,
                    namespace: Sequence[str] | None = None, interval: float | None = None,
                    lookback: float | None = None, delay: float = 0.0) -> Job:
        """Queue a consolidation run of a scope in ``delay`` seconds (see
        :mod:`remem.background.consolidation`); with ``interval``, every ``interval``
        seconds after that. ``lookback``: only memories recorded that recently start a
        cluster. At most one run per namespace is pending or running at a time."""
        from remem.background.consolidation import Consolidation

        scope = resolve_scope(self.memory.template, user_id=user_id, agent_id=agent_id,
                              namespace=namespace)
        return Consolidation(self.queue, tenant=self.tenant).schedule(
            scope, interval=interval, lookback=lookback, first_in=delay)

    def enforce_budget(self, budget: Budget, *, user_id: str | None = None,
                       agent_id: str | None = None, namespace: Sequence[str] | None = None,
                       delay: float = 0.0) -> Job:
        """Queue a run holding a scope to ``budget`` (see :mod:`remem.background.forgetting`):
        consolidation first, then the lowest retention scores invalidated (pinned memories
        never). One pending run per namespace."""
        from remem.background.budgets import forget_submission

        scope = resolve_scope(self.memory.template, user_id=user_id, agent_id=agent_id,
                              namespace=namespace)
        return self.queue.submit(forget_submission(scope, budget, tenant=self.tenant,
                                                   delay=delay))

    def summarize_threads(self, *, idle: float = 7 * 86400.0, interval: float | None = None,
                          delay: float = 0.0, limit: int = 1000) -> Job:
        """Queue a run in ``delay`` seconds that gives every thread of this database idle
        for ``idle`` seconds an episode extraction (one LLM call per thread, stored as
        episodic memory; once per thread and head, see
        :mod:`remem.episodic.thread_episodes`); with ``interval``, every ``interval``
        seconds after that."""
        from remem.background.thread_episodes import schedule_thread_summaries

        return schedule_thread_summaries(self.queue, idle=idle, interval=interval,
                                         first_in=delay, limit=limit, tenant=self.tenant)

    # -- stored budgets and read counts ----------------------------------------------------------

    @property
    def budgets(self) -> Budgets:
        """This memory's stored budgets (:mod:`remem.background.budgets`)."""
        from remem.background.budgets import Budgets

        return Budgets(self.queue, tenant=self.tenant)

    def set_budget(self, budget: Budget | None = None, *, user_id: str | None = None,
                   agent_id: str | None = None, namespace: Sequence[str] | None = None,
                   max_memories: int | None = None, max_tokens: int | None = None,
                   policy: str = "retention") -> StoredBudget:
        """Store a budget for a scope (``budget``, or one built from ``max_memories`` /
        ``max_tokens`` / ``policy``), replacing the one it had. Every later write to it is
        checked; a namespace over its budget gets a ``forget`` job (checked now too)."""
        if budget is None:
            return self.apply_budget(SetBudgetRequest.of(
                user_id=user_id, agent_id=agent_id, namespace=namespace,
                max_memories=max_memories, max_tokens=max_tokens, policy=policy))
        scope = self._budget_scope(BudgetScope.of(user_id=user_id, agent_id=agent_id,
                                                  namespace=namespace))
        return self._store_budget(scope, budget)

    def apply_budget(self, request: SetBudgetRequest) -> StoredBudget:
        """:meth:`set_budget` from a request value (HTTP, CLI)."""
        from remem.background.forgetting import Budget

        budget = Budget(max_memories=request.max_memories, max_tokens=request.max_tokens,
                        half_life=request.half_life, policy=request.policy,
                        consolidate_first=request.consolidate_first)
        return self._store_budget(self._budget_scope(request), budget)

    def _budget_scope(self, scope: BudgetScope) -> Namespace:
        return resolve_scope(self.memory.template, user_id=scope.user_id,
                             agent_id=scope.agent_id, namespace=scope.namespace)

    def _store_budget(self, scope: Namespace, budget: Budget) -> StoredBudget:
        stored = self.budgets.set(scope, budget)
        self.budgets.check(self.memory.store, [scope])
        return stored

    def budget(self, scope: BudgetScope) -> StoredBudget | None:
        """The stored budget of a scope (``None``: it has none)."""
        return self.budgets.get(self._budget_scope(scope))

    def delete_budget(self, scope: BudgetScope) -> bool:
        """Drop the stored budget of a scope; whether it had one."""
        return self.budgets.delete(self._budget_scope(scope))

    def settle(self) -> None:
        """Record the reads and check the writes this process has queued, now (they are
        otherwise handled a moment later by the recorder's thread): tests, scripts."""
        from remem.background.access import recorder_of

        recorder = recorder_of(self.memory.store)
        if recorder is not None:
            recorder.flush()

    def usage(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        """``memory_id -> (uses, last_accessed)``: how often searches and gets returned
        each memory, and when last (memories never read are absent)."""
        self.settle()
        return self.queue.access(list(memory_ids))

    def run_due(self) -> list[Job]:
        """Run every due job of this memory now, in this thread."""
        return self.worker().run_due()

    def start(self, *, concurrency: int = 1, poll: float = 1.0) -> Worker:
        """Run jobs in a background thread of this process until :meth:`close`."""
        worker = self.worker(concurrency=concurrency, poll=poll)
        worker.start()
        return worker

    def close(self) -> None:
        """Stop the worker thread (running jobs finish), record the reads still queued,
        and close the queue."""
        from remem.background.access import recorder_of

        if self._worker is not None:
            self._worker.stop()
        recorder = recorder_of(self.memory.store)
        if recorder is not None:
            recorder.close()
        self.queue.close()
