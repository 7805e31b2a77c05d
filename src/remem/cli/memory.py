"""Memory commands: ``remem add``, ``search``, ``history``, ``undo``, ``export``, ``import``.

They work on a :class:`remem.api.Memory` over a SQLite file (``--db``), scoped to a user
(``--user``) or a namespace. ``remem add`` extracts memories with the LLM configured by the
``REMEM_LLM_*`` variables, or stores the text as is with ``--no-infer``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from remem.api import Memory
from remem.cli.common import CommandFailed, FilterType, NamespaceType, make_embedder
from remem.cli.render import emit_json, write_atomically
from remem.memory import AddResult, ChangeResult, HistoryEvent, MemoryRecord
from remem.store import is_dsn
from remem.store.types import Namespace, from_timestamp

__all__ = ["MEMORY_COMMANDS"]

F = TypeVar("F", bound=Callable[..., Any])

EMBEDDERS = ("local", "fake", "openai", "none")
_TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M:%S"]


@dataclass
class Scope:
    """Where a command reads and writes: the database and whose memories."""

    db: str
    user: str | None
    agent: str | None
    namespace: Namespace | None
    embedder: str

    def open(self, *, create: bool = False) -> Memory:
        """Open the memory (closed when the command ends)."""
        if (not create and self.db != ":memory:" and not is_dsn(self.db)
                and not Path(self.db).exists()):
            raise CommandFailed(f"no database at {self.db}; pass --db PATH or set REMEM_DB "
                                "(`remem add` or `remem import` create one)")
        embedder = False if self.embedder == "none" else make_embedder(self.embedder)
        memory = Memory.open(self.db, embedder=embedder)
        click.get_current_context().call_on_close(memory.close)
        return memory

    def require(self, *, thread: str | None = None) -> None:
        """Fail with the CLI's own option names when no scope is given."""
        if self.user is None and self.agent is None and self.namespace is None and not thread:
            raise click.UsageError("no scope given: pass --user ID, --agent ID or --namespace NS "
                                   "so remem knows whose memories these are")

    def kwargs(self) -> dict[str, Any]:
        """The scope as ``Memory`` keyword arguments."""
        return {"user_id": self.user, "agent_id": self.agent, "namespace": self.namespace}


def scope_options(*, scoped: bool = True) -> Callable[[F], F]:
    """``--db``, ``--embedder``, ``--json`` and (when ``scoped``) ``--user`` / ``--agent`` /
    ``--namespace``, collected into a :class:`Scope` passed as ``scope``."""
    options = [
        click.option("--db", metavar="PATH", envvar="REMEM_DB", default="remem.db",
                     show_default=True, show_envvar=True,
                     help="SQLite database file, ':memory:', or a postgresql:// DSN."),
        click.option("--embedder", type=click.Choice(EMBEDDERS), default="local",
                     show_default=True,
                     help="Embedder for search by meaning: 'local' (offline model), 'fake' "
                          "(deterministic, for trying things out), 'openai' (REMEM_EMBED_*) "
                          "or 'none' (keywords only). Use the same one for every command on "
                          "a database."),
        click.option("--json", "json_output", is_flag=True,
                     help="Machine output: one JSON document on stdout."),
    ]
    if scoped:
        options += [
            click.option("--user", metavar="ID", help="Whose memories (a user id)."),
            click.option("--agent", metavar="ID", help="An agent id (with or without --user)."),
            click.option("--namespace", type=NamespaceType(), metavar="NS",
                         help="A namespace instead of --user/--agent (dotted or JSON)."),
        ]

    def decorate(command: F) -> F:
        def wrapper(*args: Any, db: str, embedder: str, json_output: bool,
                    user: str | None = None, agent: str | None = None,
                    namespace: Namespace | None = None, **kwargs: Any) -> Any:
            scope = Scope(db, user, agent, namespace, embedder)
            return command(*args, scope=scope, json_output=json_output, **kwargs)

        wrapper.__name__ = command.__name__
        wrapper.__doc__ = command.__doc__
        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


def _usage(result: AddResult | ChangeResult) -> str:
    usage = result.usage
    return (f"{usage.calls} LLM call(s), {usage.input_tokens} input + "
            f"{usage.output_tokens} output tokens")


def _time(ts: float | None) -> str:
    return from_timestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts is not None else "-"


def _print_changes(result: AddResult | ChangeResult) -> None:
    for change in result.changes:
        click.echo(f"{change.op:10} {change.memory.id}  {change.memory.text}")
    for skip in result.skipped:
        click.echo(f"{'skipped':10} {skip.reason}" +
                   (f" (already {skip.existing_id})" if skip.existing_id else ""))
    if not result.changes and not result.skipped:
        click.echo("no change")


@click.command()
@click.argument("text", required=False)
@click.option("--infer/--no-infer", default=True, show_default=True,
              help="Extract memories with the configured LLM (REMEM_LLM_*), or store the "
                   "text as is.")
@click.option("--kind", default="fact", show_default=True,
              help="Kind of a memory stored with --no-infer.")
@click.option("--thread", metavar="ID", help="The conversation the text comes from.")
@scope_options()
def add(scope: Scope, json_output: bool, text: str | None, infer: bool, kind: str,
        thread: str | None) -> None:
    """Remember TEXT (or stdin, with TEXT omitted or '-')."""
    if text is None or text == "-":
        text = sys.stdin.read()
    if not text.strip():
        raise click.BadParameter("nothing to remember: TEXT is empty", param_hint="'TEXT'")
    scope.require(thread=thread)
    memory = scope.open(create=True)
    result = memory.add(text, **scope.kwargs(), thread_id=thread, infer=infer, kind=kind)
    if json_output:
        emit_json(result.to_dict())
        return
    _print_changes(result)
    click.echo(_usage(result) + ("" if infer else " (stored as given: --no-infer)"))


@click.command()
@click.argument("query", required=False)
@click.option("--filter", "filter_", type=FilterType(), metavar="JSON",
              help='Keep memories whose record matches, e.g. \'{"kind": "preference"}\'.')
@click.option("--as-of", type=click.DateTime(_TIME_FORMATS), metavar="TIME",
              help="What was valid at TIME (ISO 8601, UTC unless it has an offset).")
@click.option("--all", "include_invalid", is_flag=True,
              help="Include superseded and deleted memories.")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True,
              metavar="N", help="Return at most N memories.")
@scope_options()
def search(scope: Scope, json_output: bool, query: str | None, filter_: dict[str, Any] | None,
           as_of: Any, include_invalid: bool, limit: int) -> None:
    """Search memories, best first for QUERY (newest first without one)."""
    memory = scope.open()
    if as_of is not None and as_of.tzinfo is None:
        from datetime import UTC

        as_of = as_of.replace(tzinfo=UTC)
    kwargs = scope.kwargs()
    if not any(kwargs.values()):
        kwargs = {}
    result = memory.search(query, **kwargs, filters=filter_, limit=limit, as_of=as_of,
                           include_invalid=include_invalid)
    if json_output:
        emit_json(result.to_dict())
        return
    if not result.hits:
        click.echo("no memories found")
        return
    table = Table(show_edge=False, pad_edge=False)
    for name in ("id", "memory", "kind", "valid since", "status", "score"):
        table.add_column(name, overflow="fold")
    for hit in result:
        record = hit.memory
        table.add_row(record.id, record.text, record.kind, _time(record.valid_at),
                      record.status, "" if hit.score is None else f"{hit.score:.3f}")
    Console(highlight=False).print(table)


def _event_line(event: HistoryEvent) -> str:
    after = event.record_after()
    before = event.record_before()
    shown: MemoryRecord | None = after or before
    text = shown.text if shown else ""
    return (f"{_time(event.at)}  {event.op:10} {event.id}  by {event.actor}: {text}"
            + (f"  ({event.reason})" if event.reason else ""))


@click.command()
@click.argument("memory_id")
@scope_options(scoped=False)
def history(scope: Scope, json_output: bool, memory_id: str) -> None:
    """Show every change of the memory MEMORY_ID, oldest first."""
    events = scope.open().history(memory_id)
    if json_output:
        emit_json([event.to_dict() for event in events])
        return
    for event in events:
        click.echo(_event_line(event))


@click.command()
@click.argument("event_id")
@scope_options(scoped=False)
def undo(scope: Scope, json_output: bool, event_id: str) -> None:
    """Revert the change recorded by EVENT_ID (see `remem history`)."""
    result = scope.open().undo(event_id, actor="cli")
    if json_output:
        emit_json(result.to_dict())
        return
    _print_changes(result)


@click.command(name="export")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@scope_options()
def export_command(scope: Scope, json_output: bool, path: Path) -> None:
    """Write memories and their history as JSONL to PATH ('-' for stdout)."""
    memory = scope.open()
    prefix: Namespace = ()
    if any(scope.kwargs().values()):
        prefix = memory.namespace_of(scope.user, scope.agent, None, scope.namespace)
    if str(path) == "-":
        count = memory.export(sys.stdout, namespace=prefix)
        if not json_output:
            return
    else:
        count = write_atomically(path, lambda out: memory.export(out, namespace=prefix))
    if json_output:
        emit_json({"exported": count, "path": str(path)})
    else:
        click.echo(f"exported {count} lines to {path}")


@click.command(name="import")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@scope_options(scoped=False)
def import_command(scope: Scope, json_output: bool, path: Path) -> None:
    """Read memories and history from JSONL written by `remem export` ('-' for stdin)."""
    memory = scope.open(create=True)
    if str(path) == "-":
        count = memory.import_(sys.stdin)
    else:
        if not path.exists():
            raise CommandFailed(f"no file at {path}")
        count = memory.import_(path)
    if json_output:
        emit_json({"imported": count, "path": str(path)})
    else:
        click.echo(f"imported {count} lines from {path}")


MEMORY_COMMANDS = (add, search, history, undo, export_command, import_command)
"""The top-level memory commands, registered by :mod:`remem.cli`."""
