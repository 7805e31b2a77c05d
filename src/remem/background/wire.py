"""The JSON of every answer of the jobs family: the model each row of
:data:`~remem.background.operation_table.JOB_OPERATIONS` answers with (the route's
``response_model``, the MCP tool's answer), made from the Python result with ``of`` and giving
it back with ``value`` (what ``remem.Client`` returns). :class:`JobOut` is also the answer of
the rows of other families whose result is a queued job
(``POST /v1/prompts/{name}/optimize/submit``).

A job is answered as its JSON (:class:`JobJson`: ``Job.to_dict()``, times in ISO 8601), a dict
typed key by key, as ``client.job(id)["status"]`` has always read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field

from remem.background.budgets import StoredBudget
from remem.background.forgetting import Budget
from remem.background.jobs import Job, JobStatus, QueueStats
from remem.background.requests import CancelResult, FlushResult, SubmitResult
from remem.wire_models import Dumped, Envelope, Wire

__all__ = ["BudgetDeletedOut", "BudgetOut", "BudgetsOut", "CancelOut", "FlushOut", "JobJson",
           "JobOut", "JobsOut", "StatsOut", "SubmitOut"]


class JobJson(TypedDict):
    """One job's JSON (``Job.to_dict()``; times in ISO 8601)."""

    id: str
    kind: str
    status: JobStatus
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    idempotency_key: str | None
    debounce_key: str | None
    thread_id: str | None
    claimed_by: str | None
    lease_until: str | None
    heartbeat_at: str | None
    run_after: str | None
    result: dict[str, Any] | None
    error: str | None
    created_at: str | None
    updated_at: str | None
    finished_at: str | None


class JobOut(Wire[JobJson]):
    """One job (times in ISO 8601)."""

    id: str
    kind: str
    status: JobStatus
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    idempotency_key: str | None
    debounce_key: str | None
    thread_id: str | None
    claimed_by: str | None
    lease_until: str | None
    heartbeat_at: str | None
    run_after: str | None
    result: dict[str, Any] | None
    error: str | None
    created_at: str | None
    updated_at: str | None
    finished_at: str | None

    @classmethod
    def of(cls, result: Job | Mapping[str, Any]) -> Self:
        """The model of a job, or of its JSON (what a submission answers in Python too)."""
        return cls.model_validate(result.to_dict() if isinstance(result, Job) else result)

    def value(self) -> JobJson:
        """The job's JSON."""
        return cast(JobJson, self.model_dump(mode="json"))


class JobsOut(Envelope[list[JobJson]]):
    """Jobs, newest first."""

    jobs: list[JobOut]


class FlushOut(BaseModel):
    """Jobs, newest first."""

    # JobsOut's name and schema: pydantic gives both one OpenAPI component (``JobsOut``)
    __qualname__ = "JobsOut"
    model_config = ConfigDict(title="JobsOut")

    jobs: list[JobOut]

    @classmethod
    def of(cls, result: FlushResult) -> FlushOut:
        """The model of ``result``."""
        return cls(jobs=[JobOut.of(job) for job in result.jobs])

    def value(self) -> FlushResult:
        """The flush's result."""
        return FlushResult(tuple(job.model_dump(mode="json") for job in self.jobs))


class SubmitOut(Dumped[SubmitResult]):
    """The job that will run a submission."""

    job_id: str
    status: str
    run_after: str = Field(description="when it runs unless replaced (ISO 8601)")
    messages: int = Field(description="messages the job holds")
    replaced: bool = Field(description="the submission extended a pending job")

    def value(self) -> SubmitResult:
        """The submission's result."""
        return SubmitResult.from_dict(self.model_dump())


class CancelOut(BaseModel):
    """Ids of the pending jobs dropped."""

    cancelled: list[str]

    @classmethod
    def of(cls, result: CancelResult) -> CancelOut:
        """The model of ``result``."""
        return cls(cancelled=list(result.cancelled))

    def value(self) -> CancelResult:
        """The cancel's result."""
        return CancelResult(tuple(self.cancelled))


class StatsOut(Dumped[QueueStats]):
    """Queue depth by status, lag of the oldest due job (seconds), failures."""

    counts: dict[str, int]
    depth: int
    lag: float
    failures: int


class BudgetOut(Dumped[StoredBudget]):
    """A namespace's stored budget."""

    namespace: list[str]
    max_memories: int | None
    max_tokens: int | None
    policy: str
    half_life: float
    importance_weight: float
    recency_weight: float
    use_weight: float
    consolidate_first: bool
    updated_at: float = Field(description="when it was set (epoch seconds)")

    def value(self) -> StoredBudget:
        """The stored budget (the tenant is the caller's)."""
        return StoredBudget(tuple(self.namespace), Budget.of(self.model_dump()),
                            updated_at=self.updated_at)


class BudgetsOut(Envelope[list[StoredBudget]]):
    """The tenant's stored budgets, by namespace."""

    budgets: list[BudgetOut]


class BudgetDeletedOut(Envelope[bool]):
    """Whether the namespace had a budget."""

    deleted: bool
