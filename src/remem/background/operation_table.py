"""The background operations, one row each (:class:`remem.operations.Operation`): the table
the job routes (:mod:`remem.server.routes_jobs`, by the router builder), ``remem.Client``'s
``submit``, ``flush``, ``cancel``, ``job`` and ``jobs``, the ``submit_memories`` MCP tool and
the family's parity tests read.

Each row answers with its model of :mod:`remem.background.wire`. Route names are the endpoints'
from before the rows, so are the OpenAPI operation ids; the memory-facing routes (submit,
flush, cancel, budgets) are tagged ``memories`` too. ``flush`` and ``cancel`` take the same
request (:class:`~remem.background.requests.ThreadJobsRequest`, one body schema), so they are
named here (:data:`FLUSH`, :data:`CANCEL`) rather than found by request type. The job rows
name their ``remem jobs`` command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from remem.background import wire
from remem.background.requests import (
    BudgetScope,
    CancelJobRequest,
    GetJobRequest,
    JobStatsRequest,
    ListBudgetsRequest,
    ListJobsRequest,
    RetryJobRequest,
    SetBudgetRequest,
    SubmitRequest,
    ThreadJobsRequest,
)
from remem.operations import HttpMethod, McpToolRow, Operation, Route
from remem.requests import Request

if TYPE_CHECKING:
    from remem.background.queue import JobQueue

__all__ = ["CANCEL", "FLUSH", "JOB_OPERATIONS", "ON_QUEUE", "SUBMIT", "SUBMIT_TOOL_DESCRIPTION",
           "run_on_queue"]

SUBMIT_TOOL_DESCRIPTION = (
    "Remember a conversation turn in the background: facts are extracted once the thread "
    "has been quiet for delay seconds (a later call for the same thread extends the pending "
    "job). Answers at once with the job id.")


def _row(request: type[Request], result: type[BaseModel], method: HttpMethod, path: str,
         name: str, summary: str, description: str, *, writes: bool, python: str | None = None,
         memories: bool = False, calls_model: bool = False,
         tool: McpToolRow | None = None, command: str | None = None) -> Operation:
    return Operation(request, result, writes=writes, command=command,
                     route=Route(method, "/v1" + path, name, summary, description,
                                 tags=("memories",) if memories else ()),
                     tool=tool, python=python, calls_model=calls_model)


SUBMIT = _row(SubmitRequest, wire.SubmitOut, "POST", "/memories/submit", "submit_memories",
              "Submit messages for background extraction",
              "Queue extraction of ``messages`` after ``delay`` seconds of quiet on the thread; "
              "a\nlater submission to the same thread and scope replaces the pending job and "
              "carries its\nmessages. Answers at once with the job id.", writes=True,
              python="submit", memories=True,
              tool=McpToolRow("submit_memories", SUBMIT_TOOL_DESCRIPTION))
FLUSH = _row(ThreadJobsRequest, wire.FlushOut, "POST", "/memories/flush", "flush_memories",
             "Run a thread's pending extraction now",
             "Run the thread's pending extraction now and answer with the jobs and their "
             "results.", writes=True, python="flush", memories=True, calls_model=True)
CANCEL = _row(ThreadJobsRequest, wire.CancelOut, "POST", "/memories/cancel", "cancel_memories",
              "Drop a thread's pending extraction",
              "Drop the thread's pending extraction (a running one finishes).", writes=True,
              python="cancel", memories=True)

JOB_OPERATIONS: tuple[Operation, ...] = (
    SUBMIT, FLUSH, CANCEL,
    _row(ListJobsRequest, wire.JobsOut, "GET", "/jobs", "list_jobs", "List jobs",
         "The tenant's jobs, newest first.", writes=False, python="jobs", command="jobs ls"),
    _row(JobStatsRequest, wire.StatsOut, "GET", "/jobs/stats", "job_stats",
         "Queue depth, lag, failures",
         "How many of the tenant's jobs have each status, how late the oldest due one is.",
         writes=False, python="job_stats", command="jobs stats"),
    _row(GetJobRequest, wire.JobOut, "GET", "/jobs/{job_id}", "get_job", "Get a job",
         "One of the tenant's jobs: payload, attempts, lease, result or last error.",
         writes=False, python="job", command="jobs show"),
    _row(RetryJobRequest, wire.JobOut, "POST", "/jobs/{job_id}/retry", "retry_job",
         "Retry a job", "Queue a failed, dead or cancelled job again (attempts reset).",
         writes=True, python="retry_job", command="jobs retry"),
    _row(CancelJobRequest, wire.JobOut, "POST", "/jobs/{job_id}/cancel", "cancel_job",
         "Cancel a job", "Drop a queued (or failed, dead) job.", writes=True,
         python="cancel_job", command="jobs cancel"),
    _row(SetBudgetRequest, wire.BudgetOut, "PUT", "/budgets", "set_budget",
         "Set a namespace's budget",
         "Store a budget for a namespace; every later write to it is checked, and a namespace"
         "\nover its budget gets a ``forget`` job (checked at once too).", writes=True,
         python="set_budget", memories=True),
    _row(ListBudgetsRequest, wire.BudgetsOut, "GET", "/budgets", "list_budgets",
         "List budgets", "The tenant's stored budgets, by namespace.", writes=False,
         python="budgets", memories=True),
    _row(BudgetScope, wire.BudgetDeletedOut, "DELETE", "/budgets", "delete_budget",
         "Drop a budget",
         "Drop the budget of ``user_id`` / ``agent_id`` (or ``namespace``, one label per\n"
         "repeated parameter); nothing is evicted when a budget goes.", writes=True,
         python="delete_budget", memories=True),
)
"""Every background request's row, in the order the routes were declared."""

#: what each job request runs on a queue (``tenant``: only that tenant's jobs; ``None``: every
#: tenant's, the operator's view in ``remem jobs``); the server and the CLI both run these
ON_QUEUE: Mapping[type[Request], Callable[[JobQueue, Any, str | None], Any]] = {
    ListJobsRequest: lambda queue, r, tenant: queue.list_jobs(
        status=r.status, kind=r.kind, thread_id=r.thread_id, tenant=tenant, limit=r.limit),
    JobStatsRequest: lambda queue, r, tenant: queue.stats(tenant=tenant),
    GetJobRequest: lambda queue, r, tenant: queue.get(r.job_id, tenant=tenant),
    RetryJobRequest: lambda queue, r, tenant: queue.retry(r.job_id, tenant=tenant),
    CancelJobRequest: lambda queue, r, tenant: queue.cancel(r.job_id, tenant=tenant),
}


def run_on_queue(queue: JobQueue, request: Request, *, tenant: str | None = None) -> Any:
    """Run a job request of :data:`ON_QUEUE` on ``queue``, as ``tenant`` sees the queue."""
    return ON_QUEUE[type(request)](queue, request, tenant)
