"""``remem usage``: chat model calls, tokens and memory changes per UTC day, read from the
usage rows beside the job queue (:mod:`remem.usage`)."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from remem.cli.common import db_option
from remem.cli.jobs import DB_HELP, open_queue
from remem.cli.render import emit_json
from remem.usage import MAX_DAYS, UsageRecorder, day_window

__all__ = ["usage_command"]


@click.command(name="usage")
@db_option(DB_HELP)
@click.option("--schema", default="remem", show_default=True,
              help="PostgreSQL schema (the store's).")
@click.option("--tenant", default=None,
              help="Only this server tenant (default: every tenant; '' for a store of its "
                   "own).")
@click.option("--since", default=None, help="First UTC day, YYYY-MM-DD (default: --days "
                                            "before --until).")
@click.option("--until", default=None, help="Last UTC day, YYYY-MM-DD (default: today).")
@click.option("--days", type=click.IntRange(1, MAX_DAYS), default=30, show_default=True,
              help="Days shown when --since is not given.")
@click.option("--json", "json_output", is_flag=True,
              help="Machine output: print one JSON document on stdout (GET /v1/usage's).")
@click.pass_context
def usage_command(ctx: click.Context, db: str, schema: str, tenant: str | None,
                  since: str | None, until: str | None, days: int,
                  json_output: bool) -> None:
    """Chat model calls, tokens and memory changes per UTC day.

    Calls are recorded by `remem serve` and `remem worker` for each tenant, per operation
    and model; memory changes (written, changed, removed) as they are written. Days without
    any are listed with zeros.
    """
    window = day_window(since, until, days=days)
    recorder = UsageRecorder(open_queue(ctx, db, schema=schema))
    report = recorder.report(window, tenant=tenant)
    activity = recorder.activity(window, tenant=tenant)
    if json_output:
        body: dict[str, Any] = report.to_dict()
        body["memories"] = {k: v for k, v in activity.to_dict().items()
                            if k not in ("since", "until")}
        emit_json(body)
        return
    table = Table("day", "calls", "input tokens", "output tokens", "written", "changed",
                  "removed", box=None, header_style="bold")
    for day, changes in zip(report.by_day(), activity.days, strict=True):
        table.add_row(day.day, str(day.calls), str(day.input_tokens),
                      str(day.output_tokens), str(changes.written), str(changes.changed),
                      str(changes.removed))
    console = Console(soft_wrap=True)
    console.print(table)
    total = report.total()
    click.echo(f"total: {total.calls} calls, {total.input_tokens} input and "
               f"{total.output_tokens} output tokens, {activity.events} memory changes")
    for kind, totals in (("operation", report.by_operation()), ("model", report.by_model())):
        for name, usage in totals.items():
            click.echo(f"{kind} {name}: {usage.calls} calls, {usage.input_tokens} input and "
                       f"{usage.output_tokens} output tokens")
