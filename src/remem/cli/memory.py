"""Memory commands: ``remem add``, ``search``, ``get``, ``list``, ``update``, ``delete``,
``forget``, ``history``, ``undo``, ``export``, ``import``.

Each command but ``import`` is built from its request (:mod:`remem.memory.requests`), named
by its row of the memory table (:mod:`remem.memory.operation_table`): its options are the
request's fields (:mod:`remem.cli.options`), its body validates them into the
request and runs it with :meth:`remem.api.Memory.run`, and ``--json`` prints the result's
JSON, the same document the Python API and the HTTP API give. They work on a
:class:`remem.api.Memory` over a database (``--db``); ``remem add`` extracts memories with the
LLM configured by the ``REMEM_LLM_*`` variables (``--infer`` requires one), or stores the
text as is with ``--no-infer`` or when no model is configured.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from remem.api import Memory
from remem.cli.common import (
    CommandFailed,
    db_param,
    embedder_hint,
    embedder_param,
    format_namespace,
    make_embedder,
)
from remem.cli.options import option_name, request_command
from remem.cli.render import (
    FULL_IDS_HELP,
    emit_json,
    iso_time,
    people_table,
    print_table,
    short_ids,
    write_atomically,
)
from remem.cli.table import CommandSpec, Family, table_commands
from remem.errors import InvalidInputError
from remem.memory import HistoryEvent, MemoryRecord
from remem.memory.operation_table import MEMORY_OPERATIONS
from remem.memory.requests import (
    AddRequest,
    DeleteAllRequest,
    DeleteRequest,
    ExportRequest,
    GetAllRequest,
    GetRequest,
    HistoryRequest,
    MemoryRequest,
    SearchRequest,
    UndoRequest,
    UpdateRequest,
)
from remem.memory.results import ChangeResult
from remem.memory.store_manager import AddResult
from remem.operations import Operation, command_of
from remem.requests import Request
from remem.store import check_embedder, is_dsn
from remem.store.scoped import ScopedStore
from remem.store.types import Namespace

__all__ = ["ID_OPTIONS", "MEMORY_COMMANDS", "SESSION_OPTIONS"]




SESSION_OPTIONS = ("db", "embedder", "tenant", "json_output")
"""The parameters every memory command has beside its request's fields."""

ID_OPTIONS = ("full_ids",)
"""The parameters the memory commands that print ids have beside those (not ``context``)."""


@dataclass(frozen=True, slots=True)
class CliSession:
    """Where a command works: the database, the embedder, whether to print JSON, and the
    tenant whose view to open (``None``: the database's own namespaces)."""

    db: str
    embedder: str
    json_output: bool
    tenant: str | None = None
    full_ids: bool = False

    def open(self, *, create: bool = False) -> Memory:
        """Open the memory (closed when the command ends); a missing file is an error
        unless ``create``."""
        if (not create and self.db != ":memory:" and not is_dsn(self.db)
                and not Path(self.db).exists()):
            raise CommandFailed(f"no database at {self.db}; pass --db PATH or set REMEM_DB "
                                "(`remem add` or `remem import` create one)")
        embedder = False if self.embedder == "none" else make_embedder(self.embedder)
        with embedder_hint(self.db):
            memory = Memory.open(self.db, embedder=embedder)
        click.get_current_context().call_on_close(memory.close)
        check_embedder(memory.store, self.db)  # never search a vector database by keywords
        if self.tenant is None:
            return memory
        return Memory(ScopedStore(memory.store, _tenant_prefix(self.tenant)))


def _tenant_prefix(tenant: str) -> Namespace:
    """Where ``remem serve`` keeps ``tenant``'s memories (the server's own rule)."""
    try:
        from remem.server.keys import tenant_prefix
    except ImportError as exc:
        raise CommandFailed(f"--tenant opens the server's tenants, which needs the server "
                            f"extra ({exc.name} is missing): pip install 'remem[server]'"
                            ) from None
    try:
        return tenant_prefix(tenant)
    except InvalidInputError as exc:
        raise click.BadParameter(str(exc), param_hint="'--tenant'") from None


def _session_params() -> list[click.Parameter]:
    return [
        db_param("SQLite database file, ':memory:', or a postgresql:// DSN."),
        embedder_param("Embedder for search by meaning: 'local' (offline model), 'fake' "
                       "(deterministic, for trying things out), 'openai' (REMEM_EMBED_*) "
                       "or 'none' (keywords only)."),
        click.Option(["--tenant"], metavar="NAME", default=None,
                     help="Work in this tenant's memories, those `remem serve` keeps for its "
                          "API keys (default: the database's own)."),
        click.Option(["--json", "json_output"], is_flag=True,
                     help="Machine output: one JSON document on stdout."),
    ]


def _require_scope(request: AddRequest) -> None:
    """Fail with the CLI's option names (not the fields') when no scope is given (list and
    forget: the request's own rule says it)."""
    if not request.has_scope:
        spelled = ", ".join(option_name(n) + (" NS" if n == "namespace" else " ID")
                            for n in ("user_id", "agent_id", "thread_id", "namespace"))
        raise click.UsageError(f"no scope given: pass {spelled} so remem knows whose "
                               "memories these are")


# -- output for humans -----------------------------------------------------------------------


def _time(ts: float | None) -> str:
    return iso_time(ts)


def _usage(result: AddResult | ChangeResult) -> str:
    usage = result.usage
    return (f"{usage.calls} LLM call(s), {usage.input_tokens} input + "
            f"{usage.output_tokens} output tokens")


def _text_column(table: Table, name: str, *, full_ids: bool = False) -> None:
    """The column that gets the room: it wraps, and is never narrower than ``TEXT_MIN``
    (20 beside whole ids, so that a table with them still fits 80 columns)."""
    table.add_column(name, ratio=1, min_width=20 if full_ids else TEXT_MIN, overflow="fold")


def _print_changes(result: AddResult | ChangeResult, *, full_ids: bool) -> None:
    if result.changes:
        table = people_table()
        table.add_column("change", no_wrap=True)
        table.add_column("id", no_wrap=True)
        _text_column(table, "memory", full_ids=full_ids)
        ids = short_ids([change.memory.id for change in result.changes], full=full_ids)
        for change, shown in zip(result.changes, ids, strict=True):
            table.add_row(change.op, shown, Text(change.memory.text))
        print_table(table)
    for skip in result.skipped:
        click.echo(f"{'skipped':10} {skip.reason}" +
                   (f" (already {skip.existing_id})" if skip.existing_id else ""))
    if not result.changes and not result.skipped:
        click.echo("no change")


LINE = 80
"""The width a ``label: text`` line wraps at (a table takes the terminal's)."""

TEXT_MIN = 30
"""The fewest characters a line of a table's text column holds (at 80 columns: 40+)."""


def _table(records: Sequence[MemoryRecord], scores: Sequence[float | None] | None, *,
           full_ids: bool) -> None:
    """Memories as a table that reads at 80 columns: the memory text gets the room, ids are
    shortened (``--full-ids``), the time is the ISO-8601 minute, and the status column
    shows only when some memory is not current. ``scores``: the hits' relevance (0-1,
    the same whatever the page), shown as a ``match`` column (a word as narrow as the
    figure, so the text keeps its 40 columns at 80)."""
    table = people_table()
    table.add_column("id", no_wrap=True)
    _text_column(table, "memory", full_ids=full_ids)
    table.add_column("kind", no_wrap=True, max_width=12, overflow="ellipsis")
    table.add_column("valid since", no_wrap=True)
    statuses = any(record.status != "current" for record in records)
    if statuses:
        table.add_column("status", no_wrap=True)
    if scores is not None:
        table.add_column("match", no_wrap=True, justify="right")
    ids = short_ids([record.id for record in records], full=full_ids)
    for row, record in enumerate(records):
        cells: list[str | Text] = [ids[row], Text(record.text), record.kind,
                 iso_time(record.valid_at, minutes=True)]
        if statuses:
            cells.append(record.status)
        if scores is not None:
            cells.append("" if scores[row] is None else f"{scores[row]:.3f}")
        table.add_row(*cells)
    print_table(table)


def _history_table(events: Sequence[HistoryEvent], *, full_ids: bool) -> None:
    table = people_table()
    for name in ("at", "change", "event", "by"):
        table.add_column(name, no_wrap=True, max_width=12 if name == "by" else None,
                         overflow="ellipsis")
    _text_column(table, "memory", full_ids=full_ids)
    ids = short_ids([event.id for event in events], full=full_ids)
    for event, shown in zip(events, ids, strict=True):
        record: MemoryRecord | None = event.record_after() or event.record_before()
        text = (record.text if record else "") + (f" ({event.reason})" if event.reason else "")
        table.add_row(iso_time(event.at, minutes=True), event.op, shown, event.actor,
                      Text(text))
    print_table(table)


def _scope_words(request: DeleteAllRequest) -> str:
    if request.namespace is not None:
        return f"namespace {format_namespace(request.namespace)}"
    parts = [f"{word} {value}" for word, value in (("user", request.user_id),
                                                  ("agent", request.agent_id),
                                                  ("thread", request.thread_id)) if value]
    return " and ".join(parts)


# -- the commands ----------------------------------------------------------------------------


def _full_ids() -> bool:
    return bool(click.get_current_context().params.get("full_ids"))


def _session(values: Mapping[str, Any]) -> CliSession:
    return CliSession(values["db"], values["embedder"], values["json_output"],
                      values["tenant"], values.get("full_ids", False))


def _run(row: Operation, request: MemoryRequest[Any], values: Mapping[str, Any]) -> Any:
    """Run ``request`` on the memory of ``--db`` (``remem add`` creates the database)."""
    return _session(values).open(create=isinstance(request, AddRequest)).run(request)


def _params() -> list[click.Parameter]:
    return [*_session_params(), click.Option(["--full-ids"], is_flag=True, help=FULL_IDS_HELP)]


def _show_added(request: AddRequest, result: AddResult) -> None:
    _print_changes(result, full_ids=_full_ids())
    why = ("--no-infer" if request.infer is False else
           "no chat model is configured; set REMEM_LLM_MODEL to extract, see docs/llm.md")
    click.echo(_usage(result) + ("" if result.inferred else f" (stored as given: {why})"))


def _show_hits(request: SearchRequest, result: Any) -> None:
    if not result.hits:
        click.echo("no memories found")
    else:
        _table(result.memories, [hit.relevance for hit in result], full_ids=_full_ids())


def _show_record(request: GetRequest, record: MemoryRecord) -> None:
    rows = [("id", record.id), ("namespace", format_namespace(record.namespace)),
            ("kind", record.kind), ("status", record.status),
            ("version", str(record.version)), ("valid since", _time(record.valid_at)),
            ("valid until", _time(record.invalid_at)), ("memory", record.text)]
    for label, text in rows:
        click.echo(textwrap.fill(text, LINE, initial_indent=f"{label + ':':<13}",
                                 subsequent_indent=" " * 13, break_on_hyphens=False))


def _show_page(request: GetAllRequest, page: Any) -> None:
    if not page.memories:
        click.echo("no memories found")
    else:
        _table(page.memories, None, full_ids=_full_ids())
    if page.next_offset is not None:
        click.echo(f"more: pass --offset {page.next_offset} for the next page")


def _show_changes(request: Any, result: ChangeResult) -> None:
    _print_changes(result, full_ids=_full_ids())


def _show_history(request: HistoryRequest, events: list[HistoryEvent]) -> None:
    if not events:
        click.echo("no history")
    else:
        _history_table(events, full_ids=_full_ids())


def _confirm_forget(request: DeleteAllRequest, extras: Mapping[str, Any]) -> None:
    if not extras["yes"]:
        what = "Remove every memory" if request.hard else "Forget every current memory"
        click.confirm(f"{what} of {_scope_words(request)}?", abort=True, err=True)


_COMMANDS: Mapping[type[Request], CommandSpec] = {
    AddRequest: CommandSpec("Remember TEXT (or stdin, with TEXT omitted or '-').", _show_added,
                            check=lambda request, extras: _require_scope(request)),
    SearchRequest: CommandSpec(
        "Search memories, best first for QUERY (newest first without one).\n\nWithout "
        "--user, --agent, --thread or --namespace it searches every memory.", _show_hits),
    GetRequest: CommandSpec("Show the memory MEMORY_ID.", _show_record),
    GetAllRequest: CommandSpec("List the memories of a scope, newest first, a page at a time.",
                               _show_page),
    UpdateRequest: CommandSpec(
        "Correct the memory MEMORY_ID in place: new CONTENT (text, or a JSON object for a "
        "structured memory; '-' reads stdin), --kind or --metadata. History keeps the old "
        "one.", _show_changes),
    DeleteRequest: CommandSpec(
        "Forget the memory MEMORY_ID (kept in history, and undoable, unless --hard).",
        _show_changes),
    DeleteAllRequest: CommandSpec(
        "Forget every current memory of a scope in one change (`remem undo` with any of its "
        "events brings them all back, unless --hard). Asks first, unless --yes.",
        _show_changes, check=_confirm_forget,
        params=[click.Option(["--yes", "-y"], is_flag=True,
                             help="Do not ask for confirmation.")]),
    HistoryRequest: CommandSpec("Show every change of the memory MEMORY_ID, oldest first.",
                                _show_history),
    UndoRequest: CommandSpec("Revert the change recorded by EVENT_ID (see `remem history`).",
                             _show_changes),
}
_BUILT = table_commands([row for row in MEMORY_OPERATIONS if row.request in _COMMANDS],
                        _COMMANDS, Family(_params, _run))
add, search, get, list_command = (_BUILT[n] for n in ("add", "search", "get", "list"))
update, delete, forget = _BUILT["update"], _BUILT["delete"], _BUILT["forget"]
history, undo = _BUILT["history"], _BUILT["undo"]


_PATH = click.Argument(["path"], type=click.Path(dir_okay=False, allow_dash=True,
                                                 path_type=Path))


def _export(request: ExportRequest, path: Path, **values: Any) -> None:
    """Write memories and their history as JSONL to PATH ('-' for stdout): of a scope, or
    every memory when none is given."""
    session = _session(values)
    memory = session.open()
    scope = request.arguments()
    # streamed: Memory.run(ExportRequest) would hold every line in memory
    if str(path) == "-":
        count = memory.export(sys.stdout, **scope)
        if not session.json_output:
            return
    else:
        count = write_atomically(path, lambda out: memory.export(out, **scope))
    if session.json_output:
        emit_json({"exported": count, "path": str(path)})
    else:
        click.echo(f"exported {count} lines to {path}")


# streamed, so not run by the builder: see docs/architecture.md
export_command = request_command(ExportRequest, name=command_of(MEMORY_OPERATIONS, ExportRequest),
                                 params=[_PATH, *_params()])(_export)


@click.command(name="import")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
def import_command(path: Path, db: str, embedder: str, tenant: str | None,
                   json_output: bool) -> None:
    """Read memories and history from JSONL written by `remem export` ('-' for stdin)."""
    memory = CliSession(db, embedder, json_output, tenant).open(create=True)
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


import_command.params += _session_params()

MEMORY_COMMANDS = (add, search, get, list_command, update, delete, forget, history, undo,
                   export_command, import_command)
"""The top-level memory commands, registered by :mod:`remem.cli`."""
