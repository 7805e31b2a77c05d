"""``remem threads``: list, show, fork, rewind, delete and search conversation threads."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.text import Text

from remem.cli.common import (
    CommandFailed,
    FilterType,
    db_option,
    db_param,
    embedder_hint,
    embedder_option,
    embedder_param,
    make_embedder,
)
from remem.cli.options import CliName
from remem.cli.render import (
    FULL_IDS_HELP,
    compact_json,
    emit_json,
    iso_time,
    people_table,
    print_table,
    short_ids,
)
from remem.cli.table import CommandSpec, Family, add_table_commands, json_option, wire_json
from remem.messages.types import Message
from remem.operations import Operation
from remem.requests import Request
from remem.store import IndexConfig, KeywordConfig, is_dsn, open_store
from remem.threads import Checkpoint, Thread, ThreadHit, ThreadIndex, ThreadInfo, ThreadStore
from remem.threads.operation_table import THREAD_OPERATIONS
from remem.threads.requests import (
    CopyRequest,
    ForkRequest,
    RewindRequest,
    SearchThreadsRequest,
    ThreadRequest,
)

__all__ = ["open_threads", "threads_group"]

F = TypeVar("F", bound=Callable[..., Any])

LINE = 80
"""The width plain-text lines are wrapped or cut to (a table takes the terminal's)."""

_DB_HELP = "SQLite database file (the same file as the store) or a postgresql:// DSN."
_EMBEDDER_HELP = ("Embedder of the thread search index (the one the threads were indexed "
                  "with); 'none': keywords only.")


def common_options(command: F) -> F:
    """``--db`` and ``--json`` on every ``remem threads`` command."""
    command = click.option("--json", "json_output", is_flag=True,
                           help="Machine output: print one JSON document on stdout.")(command)
    return db_option(_DB_HELP)(command)


def open_threads(ctx: click.Context, db: str, *, create: bool = False,
                 embedder: str | None = None) -> ThreadStore:
    """The thread store in ``db``, closed when the command ends; a missing file is an error
    unless ``create``. With ``embedder``, its search index too (the commands that change or
    search what the index holds: search, rm, rewind, fork --copy)."""
    if not create and db != ":memory:" and not is_dsn(db) and not Path(db).exists():
        raise CommandFailed(f"no database at {db}; pass --db PATH or set REMEM_DB "
                            "(`remem chat` creates one)")
    index = thread_index(ctx, db, embedder) if embedder is not None else None
    threads = ThreadStore(db, index=index)
    threads.setup()
    ctx.call_on_close(threads.close)
    return threads


def _when(seconds: float) -> str:
    return iso_time(seconds)


def _line(message: Message) -> str:
    text = message.text
    for call in message.tool_calls:
        text += f"{' ' if text else ''}[calls {call.name}({compact_json(call.arguments, 60)})]"
    return f"{message.role}: {text}"


@click.group(name="threads")
def threads_group() -> None:
    """Conversation threads (short-term memory): list, show, fork, rewind, delete, search.

    Threads are written by `remem chat` or by the Python API (remem.threads.ThreadStore)
    into the same database file as the store.
    """


@threads_group.command(name="ls")
@click.option("--filter", "filter_", type=FilterType(), metavar="JSON",
              help='Keep threads whose metadata matches, e.g. \'{"user_id": "u1"}\'.')
@click.option("--user", metavar="ID", help='Shorthand for --filter \'{"user_id": ID}\'.')
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=20, show_default=True,
              metavar="N", help="Show at most N threads (1-1000).")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True,
              metavar="N", help="Skip the first N threads.")
@click.option("--full-ids", is_flag=True, help=FULL_IDS_HELP)
@common_options
@click.pass_context
def ls(ctx: click.Context, filter_: dict[str, Any] | None, user: str | None, limit: int,
       offset: int, full_ids: bool, db: str, json_output: bool) -> None:
    """List threads, most recently changed first."""
    where = dict(filter_ or {})
    if user is not None:
        where["user_id"] = user
    found = open_threads(ctx, db).list_threads(where or None, limit=limit, offset=offset)
    if json_output:
        emit_json([info.to_dict() for info in found])
        return
    if not found:
        click.echo("no threads")
        return
    if full_ids and max(len(info.thread_id) for info in found) > LINE - 41:
        for info in found:  # ids too long for a table row: one block per thread
            click.echo(info.thread_id)
            click.echo(textwrap.fill(
                f"{info.length} messages, updated {iso_time(info.updated_at, minutes=True)}, "
                f"metadata {compact_json(dict(info.metadata))}", LINE, initial_indent="  ",
                subsequent_indent="  ", break_on_hyphens=False))
        return
    table = people_table()
    for name in ("thread", "messages", "updated"):  # ids are never wrapped
        table.add_column(name, no_wrap=True, justify="right" if name == "messages" else "left")
    # the metadata gets the room left (less beside whole ids, which are never cut)
    table.add_column("metadata", ratio=1, min_width=10 if full_ids else 24, overflow="fold")
    ids = short_ids([info.thread_id for info in found], full=full_ids)
    for info, shown in zip(found, ids, strict=True):
        table.add_row(Text(shown), str(info.length), iso_time(info.updated_at, minutes=True),
                      Text(compact_json(dict(info.metadata))))
    print_table(table)


def _show_info(info: ThreadInfo) -> None:
    rows = [("thread", info.thread_id), ("messages", str(info.length)),
            ("head", info.head.id), ("created", _when(info.created_at)),
            ("updated", _when(info.updated_at)),
            ("expires", _when(info.expires_at) if info.expires_at else "never"),
            ("metadata", json.dumps(dict(info.metadata), ensure_ascii=False))]
    if info.source:
        rows.append(("from", info.source))
    if info.head.summary:
        rows.append(("summary", f"covers messages 0-{info.head.summary_through - 1}"))
    for label, text in rows:
        click.echo(textwrap.fill(text, LINE, initial_indent=f"{label + ':':<10}",
                                 subsequent_indent=" " * 10, break_on_hyphens=False))


def _checkpoint_row(checkpoint: Checkpoint) -> str:
    source = checkpoint.metadata.get("source", "")
    return (f"{checkpoint.id}  {_when(checkpoint.created_at)}  {source:<8} "
            f"messages={checkpoint.position}  parent={checkpoint.parent_id or '-'}")


def _all_checkpoints(threads: Any, thread_id: str) -> list[Any]:
    """Every checkpoint of a thread, newest first, read a page (at most 1,000) at a time."""
    out: list[Any] = []
    while page := threads.checkpoints(thread_id, limit=1000, offset=len(out)):
        out += page
        if len(page) < 1000:
            break
    return out


@threads_group.command()
@click.argument("thread_id", metavar="THREAD")
@click.option("--checkpoint", metavar="ID", help="Show the thread as it was at checkpoint ID.")
@click.option("--last", type=click.IntRange(min=0), default=20, show_default=True, metavar="N",
              help="Show the last N messages (0: all).")
@click.option("--checkpoints", "list_checkpoints", is_flag=True,
              help="List the checkpoints (newest first) instead of the messages.")
@common_options
@click.pass_context
def show(ctx: click.Context, thread_id: str, checkpoint: str | None, last: int,
         list_checkpoints: bool, db: str, json_output: bool) -> None:
    """Show a thread's record and its messages (or its checkpoints)."""
    threads = open_threads(ctx, db)
    info = threads.get(thread_id)
    if list_checkpoints:
        checkpoints = _all_checkpoints(threads, thread_id) if last == 0 else (
            threads.checkpoints(thread_id, limit=min(last, 1000)))
        if json_output:
            emit_json({"thread": info.to_dict(),
                       "checkpoints": [cp.to_dict() for cp in checkpoints]})
            return
        _show_info(info)
        click.echo("checkpoints:")
        for cp in checkpoints:
            click.echo("  " + _checkpoint_row(cp))
        return
    at = threads.checkpoint(thread_id, checkpoint)
    messages = threads.messages(thread_id, checkpoint_id=at.id, last=last or None)
    if json_output:
        emit_json({"thread": info.to_dict(), "checkpoint": at.to_dict(),
                   "messages": [m.to_dict() for m in messages]})
        return
    _show_info(info)
    if checkpoint is not None:
        click.echo(f"at:       {at.id} ({at.position} messages)")
    shown = len(messages)
    click.echo(f"messages (last {shown} of {at.position}):" if shown < at.position
               else "messages:")
    for message in messages:
        click.echo(textwrap.fill(_line(message), LINE, initial_indent="  ",
                                 subsequent_indent="    ", break_on_hyphens=False))


@threads_group.command()
@click.argument("thread_ids", metavar="THREAD...", nargs=-1, required=True)
@embedder_option(_EMBEDDER_HELP)
@common_options
@click.pass_context
def rm(ctx: click.Context, thread_ids: tuple[str, ...], embedder: str, db: str,
       json_output: bool) -> None:
    """Delete threads (forks made from them keep their messages); their messages leave
    thread search."""
    threads = open_threads(ctx, db, embedder=embedder)
    deleted = {thread_id: threads.delete(thread_id) for thread_id in thread_ids}
    if json_output:
        emit_json({"deleted": [t for t, done in deleted.items() if done],
                   "missing": [t for t, done in deleted.items() if not done]})
        return
    for thread_id, done in deleted.items():
        click.echo(f"deleted {thread_id}" if done else f"no thread {thread_id}")


def _session_params() -> list[click.Parameter]:
    """``--embedder``, ``--db`` and ``--json`` on the threads commands built from rows."""
    return [embedder_param(_EMBEDDER_HELP), db_param(_DB_HELP), json_option()]


def _run(row: Operation, request: ThreadRequest[Any], session: Mapping[str, Any]) -> Any:
    """Run ``request`` on the threads of ``--db``, with their search index unless it leaves
    the index as it is (a fork shares its messages); ``fork --copy`` runs the copy row."""
    if isinstance(request, ForkRequest) and session.get("copy"):
        request = CopyRequest(**request.model_dump(exclude_unset=True))
    threads = open_threads(click.get_current_context(), session["db"],
                           embedder=None if type(request) is ForkRequest
                           else session["embedder"])
    return threads.run(request)


def _show_thread(request: ForkRequest, made: Thread) -> None:
    copied = click.get_current_context().params["copy"]
    click.echo(f"{'copied' if copied else 'forked'} {request.thread_id} into {made.id} "
               f"({made.info().length} messages)")


def _show_head(request: RewindRequest, head: Checkpoint) -> None:
    click.echo(f"rewound {request.thread_id} to {request.checkpoint_id}: {head.position} "
               f"messages (new head {head.id})")


def _show_hits(request: SearchThreadsRequest, hits: list[ThreadHit]) -> None:
    if not hits:
        click.echo("no matching threads")
        return
    for hit in hits:
        click.echo(f"{hit.thread_id}  score={hit.score:.3f}  user={hit.owner}")
        for match in hit.matches:
            text = " ".join(match.text.split())
            head = f"  [{match.position}] {match.role}: "
            room = max(LINE - len(head), 20)
            click.echo(head + (text if len(text) <= room else text[:room - 1] + "…"))


_COMMANDS: Mapping[type[Request], CommandSpec] = {
    RewindRequest: CommandSpec(
        "Move THREAD back to CHECKPOINT (a new head; later checkpoints stay readable). The "
        "messages it takes back leave thread search.", _show_head,
        arguments={"thread_id": "THREAD", "checkpoint_id": "CHECKPOINT"}),
    ForkRequest: CommandSpec(
        "Start a new thread from THREAD (at its head or an earlier checkpoint).",
        _show_thread, arguments={"thread_id": "THREAD"},
        names={"checkpoint_id": CliName(option=("--checkpoint",), metavar="ID", help=(
                   "Fork at checkpoint ID (default: the head).")),
               "new_thread_id": CliName(option=("--id",), metavar="ID", help=(
                   "The new thread's id (default: a new one).")),
               "ttl": CliName(metavar="SECONDS", help=(
                   "Seconds until it expires (default: the source thread's TTL)."))},
        params=[click.Option(["--copy"], is_flag=True, help=(
            "Copy the messages instead of sharing them with the source."))]),
    SearchThreadsRequest: CommandSpec(
        "Find past threads by keywords (and meaning, with --embedder).", _show_hits,
        arguments={"query": "QUERY"},
        names={"owner": CliName(option=("--user",), metavar="ID",
                                help="Only this user's threads."),
               "limit": CliName(metavar="N")},
        omitted={"exclude": "the thread an agent is in: the command runs in none"}),
}
def _json(row: Operation, result: Any) -> Any:
    """The row's wire model; a new thread's is its record (as the routes answer)."""
    return wire_json(row, result.info() if isinstance(result, Thread) else result)


add_table_commands(threads_group, THREAD_OPERATIONS, _COMMANDS,
                   Family(_session_params, _run, json=_json))


def thread_index(ctx: click.Context, db: str, embedder: str) -> ThreadIndex:
    """The thread search index in the store of ``db`` (created if needed)."""
    index = (None if embedder == "none"
             else IndexConfig(make_embedder(embedder), fields=("text",)))
    with embedder_hint(db):
        store = open_store(db, index=index, keyword=KeywordConfig(fields=("text",)),
                           strict=True)
    ctx.call_on_close(store.close)
    return ThreadIndex(store)
