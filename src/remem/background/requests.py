"""The background operations as request values (see :mod:`remem.requests`), and their results.

``Memory.submit(...)`` builds a :class:`SubmitRequest`; so do ``remem.Client.submit``, the
``POST /v1/memories/submit`` route (the request is the body) and the MCP tool
``submit_memories``. ``flush`` and ``cancel`` take a :class:`ThreadJobsRequest`. The job and
budget routes take the rest (:data:`~remem.background.operation_table.JOB_OPERATIONS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from remem.background.jobs import STATUSES, Job, JobStatus
from remem.requests import JsonObject, Limit, Messages, NamespacePath, Request, ScopeId

__all__ = ["BudgetScope", "CancelJobRequest", "CancelResult", "FlushResult", "GetJobRequest",
           "JobStatsRequest", "ListBudgetsRequest", "ListJobsRequest", "RetryJobRequest",
           "SetBudgetRequest", "SubmitRequest", "SubmitResult", "ThreadJobsRequest"]

#: the longest debounce delay: a day
MAX_DELAY = 86400.0


class _ThreadScope(Request):
    thread_id: ScopeId = Field(description="the conversation whose messages are pending")
    user_id: ScopeId | None = Field(None, description="whose memories (a user id)")
    agent_id: ScopeId | None = Field(None, description="an agent id (with or without user_id)")
    namespace: NamespacePath | None = Field(
        None, description="a namespace instead of user_id/agent_id")


class BudgetScope(Request):
    """The namespace a budget holds: ``user_id`` / ``agent_id``, or ``namespace``."""

    operation: ClassVar[str] = "budget"

    user_id: ScopeId | None = Field(None, description="whose memories (a user id)")
    agent_id: ScopeId | None = Field(None, description="an agent id (with or without user_id)")
    namespace: NamespacePath | None = Field(
        None, description="a namespace instead of user_id/agent_id")


class SetBudgetRequest(BudgetScope):
    """Store a budget for a namespace: at most ``max_memories`` current memories and/or
    ``max_tokens`` tokens of their text. Every later write to it is checked; a namespace
    over its budget gets a ``forget`` job (consolidation first, then the least worth keeping
    are invalidated; pinned memories never)."""

    operation: ClassVar[str] = "set_budget"

    max_memories: int | None = Field(None, ge=0, le=10_000_000,
                                     description="most current memories the namespace keeps")
    max_tokens: int | None = Field(None, ge=0, le=10_000_000_000,
                                   description="most tokens of their text")
    policy: Literal["retention", "lru"] = Field(
        "retention", description="what goes first: the lowest retention score (importance, "
                                 "recency, use) or the least recently used")
    half_life: float = Field(30 * 86400.0, gt=0, le=100 * 365 * 86400.0,
                             description="seconds over which recency halves")
    consolidate_first: bool = Field(True, description="merge repeats (one LLM call per "
                                                      "cluster) before evicting anything")


class SubmitRequest(_ThreadScope):
    """Remember what ``messages`` say, in the background, once the thread has been quiet
    for ``delay`` seconds (a later submission to the same thread and scope replaces the
    pending job and carries its messages)."""

    operation: ClassVar[str] = "submit"

    messages: Messages = Field(description="text, or chat messages (OpenAI-style)")
    delay: float = Field(30.0, ge=0.0, le=MAX_DELAY,
                         description="seconds of quiet on the thread before extraction runs")
    metadata: JsonObject | None = Field(None, description="JSON kept with each new memory")


class ThreadJobsRequest(_ThreadScope):
    """The pending extraction of a thread (``flush`` runs it now, ``cancel`` drops it).
    Without a scope: every pending extraction of the thread."""

    operation: ClassVar[str] = "flush"

    @property
    def has_scope(self) -> bool:
        """Whether a scope narrows the thread's pending jobs to one."""
        return any(v is not None for v in (self.user_id, self.agent_id, self.namespace))


class ListJobsRequest(Request):
    """The tenant's jobs, newest first."""

    operation: ClassVar[str] = "jobs"

    status: JobStatus | None = Field(None, description=f"one of {', '.join(STATUSES)}")
    kind: str | None = Field(None, max_length=64)
    thread_id: str | None = Field(None, max_length=256)
    limit: Limit = 100


class JobStatsRequest(Request):
    """How many of the tenant's jobs have each status, how late the oldest due one is."""

    operation: ClassVar[str] = "job_stats"


class _JobId(Request):
    job_id: str = Field(min_length=1, max_length=64, description="a job id")


class GetJobRequest(_JobId):
    """One of the tenant's jobs: payload, attempts, lease, result or last error."""

    operation: ClassVar[str] = "job"


class RetryJobRequest(_JobId):
    """Queue a failed, dead or cancelled job again (attempts reset)."""

    operation: ClassVar[str] = "retry_job"


class CancelJobRequest(_JobId):
    """Drop a queued (or failed, dead) job."""

    operation: ClassVar[str] = "cancel_job"


class ListBudgetsRequest(Request):
    """The tenant's stored budgets, by namespace."""

    operation: ClassVar[str] = "budgets"


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """The job that will run a submission: ``replaced`` when it was already pending (its
    messages now include this submission's), ``messages``: how many it holds."""

    job_id: str
    status: str
    run_after: float
    messages: int
    replaced: bool

    @classmethod
    def of(cls, job: Job, replaced: bool) -> SubmitResult:
        """The result for ``job`` just submitted."""
        return cls(job.id, job.status, job.run_after, len(job.payload.get("messages", [])),
                   replaced)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``run_after``: ISO 8601)."""
        from remem.store.types import from_timestamp

        return {"job_id": self.job_id, "status": self.status,
                "run_after": from_timestamp(self.run_after).isoformat(),
                "messages": self.messages, "replaced": self.replaced}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SubmitResult:
        """Read what :meth:`to_dict` wrote."""
        from datetime import datetime

        return cls(data["job_id"], data["status"],
                   datetime.fromisoformat(data["run_after"]).timestamp(),
                   int(data["messages"]), bool(data["replaced"]))


@dataclass(frozen=True, slots=True)
class FlushResult:
    """The jobs a flush made due, as they stand after it ran them (``done`` with their
    result, or still ``queued`` / ``running`` when a worker elsewhere has them)."""

    jobs: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"jobs": list(self.jobs)}

    @classmethod
    def of(cls, jobs: Sequence[Job]) -> FlushResult:
        """The result for these jobs."""
        return cls(tuple(job.to_dict() for job in jobs))


@dataclass(frozen=True, slots=True)
class CancelResult:
    """The ids of the pending jobs a cancel dropped (empty: nothing was pending)."""

    cancelled: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"cancelled": list(self.cancelled)}
