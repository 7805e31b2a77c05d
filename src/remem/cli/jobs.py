"""``remem jobs``: look at and steer the background job queue (ls, show, stats, retry, cancel).

The queue lives in the memory database (``--db``: the SQLite file or the PostgreSQL DSN);
``remem worker`` (:mod:`remem.cli.worker`) runs its jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import click
from rich.console import Console
from rich.table import Table

from remem.background import STATUSES, Job, JobQueue, JobStatus
from remem.cli.common import CommandFailed, db_option
from remem.cli.render import compact_json, emit_json
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


def _options(command: F) -> F:
    command = click.option("--json", "json_output", is_flag=True,
                           help="Machine output: print one JSON document on stdout.")(command)
    command = click.option("--schema", default="remem", show_default=True,
                           help="PostgreSQL schema (the store's).")(command)
    return db_option(DB_HELP)(command)


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


@jobs_group.command(name="ls")
@_options
@click.option("--status", type=click.Choice(STATUSES), default=None, help="Only this status.")
@click.option("--kind", default=None, help="Only this job kind (extract, noop...).")
@click.option("--thread", "thread_id", default=None, help="Only jobs of this thread.")
@click.option("--tenant", default=None, help="Only this server tenant's jobs.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.pass_context
def ls_command(ctx: click.Context, db: str, schema: str, json_output: bool,
               status: str | None, kind: str | None, thread_id: str | None,
               tenant: str | None, limit: int) -> None:
    """List jobs, newest first."""
    queue = open_queue(ctx, db, schema=schema)
    jobs = queue.list_jobs(status=cast(JobStatus | None, status), kind=kind,
                           thread_id=thread_id, tenant=tenant, limit=limit)
    if json_output:
        emit_json({"jobs": [job.to_dict() for job in jobs]})
        return
    table = Table("id", "kind", "status", "attempts", "thread", "run after", "error",
                  box=None, header_style="bold")
    for job in jobs:
        table.add_row(job.id, job.kind, job.status, f"{job.attempts}/{job.max_attempts}",
                      job.thread_id or "", _when(job.run_after), (job.error or "")[:60])
    Console(soft_wrap=True).print(table)


@jobs_group.command(name="show")
@_options
@click.argument("job_id")
@click.pass_context
def show_command(ctx: click.Context, db: str, schema: str, json_output: bool,
                 job_id: str) -> None:
    """Show one job: payload, attempts, lease, result or last error."""
    _show(open_queue(ctx, db, schema=schema).get(job_id), json_output)


@jobs_group.command(name="stats")
@_options
@click.option("--tenant", default=None, help="Only this server tenant's jobs.")
@click.pass_context
def stats_command(ctx: click.Context, db: str, schema: str, json_output: bool,
                  tenant: str | None) -> None:
    """Queue depth by status, lag of the oldest due job, failures."""
    stats = open_queue(ctx, db, schema=schema).stats(tenant=tenant)
    if json_output:
        emit_json(stats.to_dict())
        return
    data = stats.to_dict()
    click.echo(" ".join(f"{status}={count}" for status, count in data["counts"].items()))
    click.echo(f"depth={data['depth']} lag={data['lag']:.1f}s failures={data['failures']}")


@jobs_group.command(name="retry")
@_options
@click.argument("job_id")
@click.pass_context
def retry_command(ctx: click.Context, db: str, schema: str, json_output: bool,
                  job_id: str) -> None:
    """Queue a failed, dead or cancelled job again (attempts reset)."""
    _show(open_queue(ctx, db, schema=schema).retry(job_id), json_output)


@jobs_group.command(name="cancel")
@_options
@click.argument("job_id")
@click.pass_context
def cancel_command(ctx: click.Context, db: str, schema: str, json_output: bool,
                   job_id: str) -> None:
    """Drop a queued (or failed, dead) job."""
    _show(open_queue(ctx, db, schema=schema).cancel(job_id), json_output)
