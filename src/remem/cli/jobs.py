"""``remem jobs``: look at and steer the background job queue (ls, show, stats, retry, cancel).

The queue lives in the memory database (``--db``: the SQLite file or the PostgreSQL DSN);
``remem worker`` (:mod:`remem.cli.worker`) runs its jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from remem.background import Job, JobQueue, QueueStats
from remem.background.operation_table import JOB_OPERATIONS, run_on_queue
from remem.background.requests import (
    CancelJobRequest,
    GetJobRequest,
    JobStatsRequest,
    ListJobsRequest,
    RetryJobRequest,
)
from remem.cli.common import (
    CommandFailed,
    db_param,
    format_namespace,
    parse_namespace,
)
from remem.cli.options import CliName
from remem.cli.render import compact_json, emit_json
from remem.cli.table import CommandSpec, Family, add_table_commands, json_option, with_params
from remem.operations import Operation
from remem.requests import Request
from remem.store import is_dsn

__all__ = ["jobs_group", "open_queue"]

F = TypeVar("F", bound=Callable[..., Any])

DB_HELP = "SQLite database file (the memory database) or a postgresql:// DSN."


def open_queue(ctx: click.Context, db: str, *, schema: str = "remem") -> JobQueue:
    """The job queue in ``db``, closed when the command ends (a missing file is an error)."""
    if db == ":memory:":
        raise CommandFailed("--db :memory: holds no jobs between commands; pass the database "
                            "file or postgresql:// DSN the memory uses")
    if not is_dsn(db) and not Path(db).exists():
        raise CommandFailed(f"no database at {db}; pass --db PATH or set REMEM_DB")
    queue = JobQueue.open(db, schema=schema)
    queue.setup()
    ctx.call_on_close(queue.close)
    return queue


def _when(seconds: float | None) -> str:
    return "" if seconds is None else datetime.fromtimestamp(seconds, UTC).strftime(
        "%Y-%m-%d %H:%M:%S")


def _show(job: Job, json_output: bool) -> None:
    if json_output:
        emit_json(job.to_dict())
        return
    for name, value in job.to_dict().items():
        shown = compact_json(value, 200) if isinstance(value, dict | list) else value
        click.echo(f"{name}: {'' if shown is None else shown}")


@click.group(name="jobs")
def jobs_group() -> None:
    """Background jobs (debounced extraction): list, show, stats, retry, cancel.

    Jobs are queued by Memory.submit, `POST /v1/memories/submit` or the MCP tool
    submit_memories, and run by `remem worker` (or `remem serve --workers-in-process`).
    """


def _session_params() -> list[click.Parameter]:
    """``--db``, ``--schema`` and ``--json`` on every jobs command."""
    return [db_param(DB_HELP),
            click.Option(["--schema"], default="remem", show_default=True,
                         help="PostgreSQL schema (the store's)."),
            json_option()]


_TENANT = click.Option(["--tenant"], default=None, help="Only this server tenant's jobs.")

def _run(row: Operation, request: Any, session: Mapping[str, Any]) -> Any:
    queue = open_queue(click.get_current_context(), session["db"], schema=session["schema"])
    # get, retry and cancel act on any tenant's job: the operator's view of the queue
    return run_on_queue(queue, request, tenant=session.get("tenant"))


def _show_jobs(request: ListJobsRequest, jobs: list[Job]) -> None:
    table = Table("id", "kind", "status", "attempts", "thread", "run after", "error",
                  box=None, header_style="bold")
    for job in jobs:
        table.add_row(job.id, job.kind, job.status, f"{job.attempts}/{job.max_attempts}",
                      job.thread_id or "", _when(job.run_after), (job.error or "")[:60])
    Console(soft_wrap=True).print(table)


def _show_stats(request: JobStatsRequest, stats: QueueStats) -> None:
    data = stats.to_dict()
    click.echo(" ".join(f"{status}={count}" for status, count in data["counts"].items()))
    click.echo(f"depth={data['depth']} lag={data['lag']:.1f}s failures={data['failures']}")


def _show_job(request: Any, job: Job) -> None:
    _show(job, False)


_JOB_ID = {"job_id": "JOB_ID"}

_COMMANDS: Mapping[type[Request], CommandSpec] = {
    ListJobsRequest: CommandSpec(
        "List jobs, newest first.", _show_jobs, params=[_TENANT],
        names={"status": CliName(help="Only this status."),
               "kind": CliName(help="Only this job kind (extract, noop...)."),
               "thread_id": CliName(option=("--thread",), metavar="ID",
                                    help="Only jobs of this thread."),
               "limit": CliName(metavar="N", default=50, help="Show at most N jobs.")}),
    JobStatsRequest: CommandSpec(
        "Queue depth by status, lag of the oldest due job, failures.", _show_stats,
        params=[_TENANT]),
    GetJobRequest: CommandSpec(
        "Show one job: payload, attempts, lease, result or last error.", _show_job,
        arguments=_JOB_ID),
    RetryJobRequest: CommandSpec(
        "Queue a failed, dead or cancelled job again (attempts reset).", _show_job,
        arguments=_JOB_ID),
    CancelJobRequest: CommandSpec(
        "Drop a queued (or failed, dead) job.", _show_job, arguments=_JOB_ID),
}
add_table_commands(jobs_group, JOB_OPERATIONS, _COMMANDS, Family(_session_params, _run))


@jobs_group.group(name="budget")
def budget_group() -> None:
    """Stored per-namespace budgets: set, ls, rm.

    A write that takes a namespace over its budget queues a `forget` job (consolidation
    first, then the least worth keeping invalidated, pinned memories never); workers run it.
    """


def _budget_scope(user_id: str | None, agent_id: str | None,
                  namespace: str | None) -> tuple[str, ...]:
    from remem.background.requests import BudgetScope
    from remem.memory.namespaces import resolve_scope

    scope = BudgetScope.of(user_id=user_id, agent_id=agent_id,
                           namespace=parse_namespace(namespace) if namespace else None)
    return resolve_scope(None, user_id=scope.user_id, agent_id=scope.agent_id,
                         namespace=scope.namespace)


def _scope_options(command: F) -> F:
    command = click.option("--namespace", default=None,
                           help="A namespace (dotted, or a JSON array) instead of "
                                "--user/--agent.")(command)
    command = click.option("--agent", "agent_id", default=None, help="An agent id.")(command)
    return click.option("--user", "user_id", default=None, help="A user id.")(command)


def _budget_row(data: dict[str, Any]) -> str:
    limits = ", ".join(f"{name}={data[name]}" for name in ("max_memories", "max_tokens")
                       if data[name] is not None)
    return (f"{format_namespace(data['namespace'])}: {limits} policy={data['policy']}"
            f"{'' if data['consolidate_first'] else ' no-consolidate'}")


@budget_group.command(name="set")
@with_params(_session_params)
@_scope_options
@click.option("--max-memories", type=click.IntRange(0), default=None,
              help="Most current memories the namespace keeps.")
@click.option("--max-tokens", type=click.IntRange(0), default=None,
              help="Most tokens of their text.")
@click.option("--policy", type=click.Choice(["retention", "lru"]), default="retention",
              show_default=True, help="What goes first: the lowest retention score, or the "
                                      "least recently used.")
@click.option("--consolidate/--no-consolidate", default=True, show_default=True,
              help="Merge repeats (LLM) before evicting.")
@click.option("--tenant", default="", help="A server tenant's namespace.")
@click.pass_context
def budget_set_command(ctx: click.Context, db: str, schema: str, json_output: bool,
                       user_id: str | None, agent_id: str | None, namespace: str | None,
                       max_memories: int | None, max_tokens: int | None, policy: str,
                       consolidate: bool, tenant: str) -> None:
    """Store a namespace's budget and queue a run that holds it to it now."""
    from remem.background.budgets import Budgets, forget_submission
    from remem.background.forgetting import Budget

    scope = _budget_scope(user_id, agent_id, namespace)
    budget = Budget(max_memories=max_memories, max_tokens=max_tokens, policy=policy,
                    consolidate_first=consolidate)
    queue = open_queue(ctx, db, schema=schema)
    stored = Budgets(queue, tenant=tenant).set(scope, budget)
    # the namespace may be over already: a run now (a no-op when it is not)
    job = queue.submit(forget_submission(scope, budget, tenant=tenant))
    if json_output:
        emit_json({"budget": stored.to_dict(), "job_id": job.id})
        return
    click.echo(f"{_budget_row(stored.to_dict())}; run queued: {job.id}")


@budget_group.command(name="ls")
@with_params(_session_params)
@click.option("--tenant", default="", help="A server tenant's budgets.")
@click.pass_context
def budget_ls_command(ctx: click.Context, db: str, schema: str, json_output: bool,
                      tenant: str) -> None:
    """List the stored budgets."""
    from remem.background.budgets import Budgets

    found = Budgets(open_queue(ctx, db, schema=schema), tenant=tenant).all()
    if json_output:
        emit_json({"budgets": [b.to_dict() for b in found]})
        return
    for stored in found:
        click.echo(_budget_row(stored.to_dict()))


@budget_group.command(name="rm")
@with_params(_session_params)
@_scope_options
@click.option("--tenant", default="", help="A server tenant's namespace.")
@click.pass_context
def budget_rm_command(ctx: click.Context, db: str, schema: str, json_output: bool,
                      user_id: str | None, agent_id: str | None, namespace: str | None,
                      tenant: str) -> None:
    """Drop a namespace's budget (nothing is evicted)."""
    from remem.background.budgets import Budgets

    scope = _budget_scope(user_id, agent_id, namespace)
    deleted = Budgets(open_queue(ctx, db, schema=schema), tenant=tenant).delete(scope)
    if json_output:
        emit_json({"deleted": deleted})
        return
    if not deleted:
        raise CommandFailed(f"{format_namespace(scope)} has no budget; list them with "
                            "`remem jobs budget ls`")
    click.echo(f"dropped the budget of {format_namespace(scope)}")
