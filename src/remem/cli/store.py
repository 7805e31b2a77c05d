"""``remem store``: put, get, search and maintain items of a long-term store file.

The commands reach the store through a :class:`~remem.store.guarded.GuardedStore` of the whole
store, as its operator: every item may be read (``namespaces --all`` lists remem's own
bookkeeping too), but ``put``, ``delete`` and ``import`` refuse a namespace under a family's
root (memories, files, approvals, blocks, ``_remem``..., also inside a server's
``tenants.T``), naming the family's command instead; ``import --restore`` writes a
whole-store export back as it is (:mod:`remem.store.reserved`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TypeVar

import click
from rich.console import Console
from rich.progress import (
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from remem.cli.common import DB_DEFAULT_HELP as DB_DEFAULT_HELP
from remem.cli.common import (
    CommandFailed,
    FilterType,
    JsonObjectType,
    NamespaceType,
    db_option,
    embedder_hint,
    embedder_option,
    format_namespace,
    make_embedder,
)
from remem.cli.render import emit_json, print_item, results_table, write_atomically
from remem.errors import ReservedNamespaceError
from remem.settings import EMBEDDERS
from remem.store import (
    NOT_PROVIDED,
    BaseStore,
    DeleteOp,
    GetOp,
    IndexConfig,
    Namespace,
    export_jsonl,
    import_jsonl,
    is_dsn,
    open_store,
)
from remem.store.guarded import GuardedStore
from remem.store.reserved import is_bookkeeping
from remem.store.types import SearchMode

__all__ = ["EMBEDDERS", "StoreSettings", "store_group"]

SEARCH_MODES = ("auto", "hybrid", "keyword", "vector")

MEMORY_DB = ":memory:"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class StoreSettings:
    """The options shared by every ``remem store`` command, and the store they open."""

    db: str
    json: bool = False
    embedder: str = "local"
    _store: BaseStore | None = field(default=None, repr=False)

    def open(self, *, create: bool = False) -> BaseStore:
        """The store (opened once per command, closed when the command ends) as the
        operator's raw view: reads anything, refuses writes under a family's root.

        Without ``create``, a missing database file is an error rather than a new empty file,
        so a mistyped ``--db`` does not look like an empty store.
        """
        return GuardedStore(self.open_unguarded(create=create), admin=True, whole_store=True)

    def open_unguarded(self, *, create: bool = False) -> BaseStore:
        """The store itself, for ``import --restore`` only (see :meth:`open`)."""
        if self._store is not None:
            return self._store
        if (not create and self.db != MEMORY_DB and not is_dsn(self.db)
                and not Path(self.db).exists()):
            raise CommandFailed(
                f"no database at {self.db}; pass --db PATH or set REMEM_DB "
                "(`remem store put` or `remem store import` create one)"
            )
        index = (None if self.embedder == "none"
                 else IndexConfig(embedder=make_embedder(self.embedder)))
        with embedder_hint(self.db):
            store = open_store(self.db, index=index, strict=True)
        click.get_current_context().call_on_close(store.close)
        self._store = store
        return store

    @property
    def has_index(self) -> bool:
        """Whether an embedder was chosen (needed by vector and hybrid search)."""
        return self.embedder != "none"


pass_settings = click.make_pass_decorator(StoreSettings)

_DB_HELP = ("SQLite database file, ':memory:' for a throwaway one, or a postgresql:// DSN "
            "(see remem pg).")
_JSON_HELP = "Machine output: print one JSON document on stdout."
_EMBEDDER_HELP = (
    "Embedder for search by meaning: 'local' (multilingual-e5-small, offline), 'openai' "
    "(an OpenAI-compatible API configured by REMEM_EMBED_MODEL, REMEM_EMBED_BASE_URL, "
    "REMEM_EMBED_API_KEY), 'fake' (deterministic, for trying things out) or 'none' "
    "(keyword search only)."
)


def _override(attribute: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    """A callback that lets a subcommand option override the store group's option."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None or value is False:
            return
        settings = ctx.find_object(StoreSettings)
        if settings is not None:
            setattr(settings, attribute, value)

    return callback


def store_options(*, embedder: bool = False) -> Callable[[F], F]:
    """Accept the store group's options after the subcommand name too.

    ``remem store --json get ...`` and ``remem store get ... --json`` mean the same thing; a
    value given after the subcommand wins. ``--embedder`` is offered only where it matters.
    """
    options = [
        click.option("--db", metavar="PATH", default=None, expose_value=False,
                     callback=_override("db"),
                     help=f"{_DB_HELP} {DB_DEFAULT_HELP}"),
        click.option("--json", "json_output", is_flag=True, default=False, expose_value=False,
                     callback=_override("json"), help=_JSON_HELP),
    ]
    if embedder:
        options.append(
            click.option("--embedder", type=click.Choice(EMBEDDERS), default=None,
                         expose_value=False, callback=_override("embedder"),
                         help=_EMBEDDER_HELP)
        )

    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


@click.group(name="store")
@db_option(_DB_HELP)
@click.option("--json", "json_output", is_flag=True, help=_JSON_HELP)
@embedder_option(_EMBEDDER_HELP)
@click.pass_context
def store_group(ctx: click.Context, db: str, json_output: bool, embedder: str) -> None:
    """Read and write the long-term store: JSON items under namespaces.

    NAMESPACE is dotted (users.u1.memories) or, when a label contains a dot, a JSON array
    ('["users", "alice@example.com"]'). Options may come before or after the command name.
    """
    ctx.obj = StoreSettings(db=db, json=json_output, embedder=embedder)


_TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M:%S"]


def _aware(when: datetime | None) -> datetime | None:
    """A time from the command line; naive times are taken as UTC."""
    if when is None or when.tzinfo is not None:
        return when
    return when.replace(tzinfo=UTC)


def _where(namespace: Namespace, key: str) -> str:
    return f"{key!r} in {format_namespace(namespace)}"


# -- put / get / delete -------------------------------------------------------------------------


@store_group.command()
@click.argument("namespace", type=NamespaceType())
@click.argument("key")
@click.argument("value", type=JsonObjectType(stdin_dash=True))
@click.option("--ttl", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Expire the item SECONDS after it is written (reads push the expiry back).")
@click.option("--event-at", type=click.DateTime(_TIME_FORMATS), metavar="TIME",
              help="When what the item records happened (ISO 8601; UTC unless it has an "
                   "offset).")
@click.option("--no-index", is_flag=True,
              help="Index neither keywords nor vectors: --query searches will not find it.")
@store_options(embedder=True)
@pass_settings
def put(settings: StoreSettings, namespace: Namespace, key: str, value: dict[str, Any],
        ttl: float | None, event_at: datetime | None, no_index: bool) -> None:
    """Insert or replace the item KEY in NAMESPACE.

    VALUE is a JSON object, or - to read it from stdin.
    """
    settings.open(create=True).put(
        namespace, key, value,
        ttl=NOT_PROVIDED if ttl is None else ttl,
        index=False if no_index else None,
        event_at=_aware(event_at),
    )
    if settings.json:
        emit_json({"stored": True, "namespace": list(namespace), "key": key, "ttl": ttl})
    else:
        click.echo(f"stored {_where(namespace, key)}")


@store_group.command()
@click.argument("namespace", type=NamespaceType())
@click.argument("key")
@store_options()
@pass_settings
def get(settings: StoreSettings, namespace: Namespace, key: str) -> None:
    """Show the item KEY in NAMESPACE (exit code 1 if there is none)."""
    item = settings.open().get(namespace, key)
    if item is None:
        raise CommandFailed(f"no item {_where(namespace, key)}")
    if settings.json:
        emit_json(item.to_dict())
        return
    print_item(item)


@store_group.command()
@click.argument("namespace", type=NamespaceType())
@click.argument("key")
@store_options()
@pass_settings
def delete(settings: StoreSettings, namespace: Namespace, key: str) -> None:
    """Delete the item KEY in NAMESPACE (deleting a missing item is not an error)."""
    found, _ = settings.open().batch(
        [GetOp(namespace, key, refresh_ttl=False), DeleteOp(namespace, key)]
    )
    existed = found is not None
    if settings.json:
        emit_json({"deleted": existed, "namespace": list(namespace), "key": key})
    elif existed:
        click.echo(f"deleted {_where(namespace, key)}")
    else:
        click.echo(f"nothing to delete: no item {_where(namespace, key)}")


# -- search / namespaces ------------------------------------------------------------------------


@store_group.command()
@click.argument("prefix", required=False, default="",
                type=NamespaceType(what="namespace_prefix", allow_empty=True))
@click.option("--filter", "filter_", type=FilterType(), metavar="JSON",
              help='Keep items whose value matches, e.g. \'{"kind": "note", "stars": '
                   '{"$gte": 3}}\'.')
@click.option("--query", "-q", metavar="TEXT",
              help="Rank by relevance to TEXT (keywords; meaning too with --embedder).")
@click.option("--mode", type=click.Choice(SEARCH_MODES), default="auto", show_default=True,
              help="Signals for --query: auto is hybrid with --embedder, else keyword.")
@click.option("--after", type=click.DateTime(_TIME_FORMATS), metavar="TIME",
              help="Only items whose event time is at or after TIME (ISO 8601).")
@click.option("--before", type=click.DateTime(_TIME_FORMATS), metavar="TIME",
              help="Only items whose event time is before TIME (ISO 8601).")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True,
              help="Return at most N items.", metavar="N")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True,
              help="Skip the first N items.", metavar="N")
@store_options(embedder=True)
@pass_settings
def search(settings: StoreSettings, prefix: Namespace, filter_: dict[str, Any] | None,
           query: str | None, mode: SearchMode, after: datetime | None,
           before: datetime | None, limit: int, offset: int) -> None:
    """Search items under the namespace PREFIX (default: everything).

    Without --query, newest first; with it, most relevant first.
    """
    if query is not None and mode in ("vector", "hybrid") and not settings.has_index:
        raise click.UsageError(
            f"--mode {mode} searches by meaning: pass --embedder local (or openai, fake)"
        )
    items = settings.open().search(prefix, query=query, filter=filter_, limit=limit,
                                   offset=offset, mode=mode, event_after=_aware(after),
                                   event_before=_aware(before))
    if settings.json:
        emit_json([item.to_dict() for item in items])
        return
    if not items:
        click.echo("no items found")
        return
    console = Console(highlight=False)
    table = results_table(items, scored=query is not None, width=console.width)
    if len(items) == limit:
        table.caption = f"first {limit} items; use --offset {offset + limit} for more"
    console.print(table)


@store_group.command()
@click.option("--prefix", type=NamespaceType(what="prefix", allow_wildcard=True),
              metavar="NS", help="Only namespaces starting with NS ('*' matches any label).")
@click.option("--suffix", type=NamespaceType(what="suffix", allow_wildcard=True),
              metavar="NS", help="Only namespaces ending with NS ('*' matches any label).")
@click.option("--max-depth", type=click.IntRange(min=1), metavar="N",
              help="Cut namespaces to their first N labels (duplicates merged).")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True,
              metavar="N", help="Return at most N namespaces.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True,
              metavar="N", help="Skip the first N namespaces.")
@click.option("--all", "show_all", is_flag=True,
              help="Also list remem's own bookkeeping namespaces (_remem and _remem_server, "
                   "e.g. memory history and API keys).")
@store_options()
@pass_settings
def namespaces(settings: StoreSettings, prefix: Namespace | None, suffix: Namespace | None,
               max_depth: int | None, limit: int, offset: int, show_all: bool) -> None:
    """List the namespaces that hold items, sorted, one per line (remem's own bookkeeping
    namespaces only with --all)."""
    store = settings.open()
    if show_all:
        found = store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=max_depth,
                                      limit=limit, offset=offset)
    else:
        found = _user_namespaces(store, prefix, suffix, max_depth, limit, offset)
    if settings.json:
        emit_json([list(ns) for ns in found])
        return
    if not found:
        click.echo("no namespaces found", err=True)
    for ns in found:
        click.echo(format_namespace(ns))


def _is_internal(namespace: Namespace) -> bool:
    """remem's bookkeeping (memory history, id aliases, gates, API keys): the bookkeeping
    roots of :mod:`remem.store.reserved`, also inside a server's tenants."""
    return is_bookkeeping(namespace, whole_store=True)


def _user_namespaces(store: BaseStore, prefix: Namespace | None, suffix: Namespace | None,
                     max_depth: int | None, limit: int, offset: int) -> list[Namespace]:
    """``limit`` namespaces after ``offset``, counting only the non-internal ones (pages
    through the store's listing, which counts them all)."""
    wanted, start, page = offset + limit, 0, max(limit + offset, 100)
    found: list[Namespace] = []
    while len(found) < wanted:
        batch = store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=max_depth,
                                      limit=page, offset=start)
        found.extend(ns for ns in batch if not _is_internal(ns))
        if len(batch) < page:
            break
        start += page
    return found[offset:wanted]


# -- maintenance --------------------------------------------------------------------------------


@store_group.command()
@store_options()
@pass_settings
def sweep(settings: StoreSettings) -> None:
    """Delete expired items now and print how many were deleted."""
    count = settings.open().sweep()
    if settings.json:
        emit_json({"deleted": count})
    else:
        click.echo(f"deleted {count} expired item{'' if count == 1 else 's'}")


@store_group.command()
@click.argument("prefix", required=False, default="",
                type=NamespaceType(what="namespace_prefix", allow_empty=True))
@click.option("-o", "--output", metavar="FILE", default="-",
              type=click.Path(dir_okay=False, allow_dash=True),
              help="Write to FILE (replaced atomically) instead of stdout.")
@store_options()
@pass_settings
def export(settings: StoreSettings, prefix: Namespace, output: str) -> None:
    """Write the items under PREFIX (default: all) as JSON Lines, one item per line.

    Timestamps and TTLs are kept; vectors are not (an import re-embeds).
    """
    store_ = settings.open()
    if output == "-":
        count = export_jsonl(store_, sys.stdout, prefix)
        if not settings.json:
            click.echo(f"exported {_items(count)}", err=True)
        return
    count = write_atomically(Path(output), lambda out: export_jsonl(store_, out, prefix))
    if settings.json:
        emit_json({"exported": count, "file": output})
    else:
        click.echo(f"exported {_items(count)} to {output}")


def _items(count: int) -> str:
    return f"{count} item{'' if count == 1 else 's'}"


@store_group.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--restore", is_flag=True,
              help="Write every line as it is, family namespaces included (memories, files, "
                   "_remem...): restoring a whole-store export. Without it such a line stops "
                   "the import.")
@store_options(embedder=True)
@pass_settings
def import_(settings: StoreSettings, file: IO[str], restore: bool) -> None:
    """Put every item of a JSON Lines export (FILE, or - for stdin) into the store.

    Timestamps and TTLs are kept; existing items with the same namespace and key are replaced.
    Items are written in atomic batches of 500: a bad line stops the import, and the batches
    before it stay written. With --embedder, imported items are embedded. A line under a
    family's namespace (memories, files, _remem...) stops it too, unless --restore.
    """
    store = (settings.open_unguarded(create=True) if restore
             else settings.open(create=True))
    try:
        count = _with_progress(settings, "importing",
                               lambda progress: import_jsonl(store, file, progress=progress))
    except ReservedNamespaceError as refused:
        raise CommandFailed(f"{refused}; the batches before it stay written. To restore a "
                            "whole-store export as it is, pass --restore") from None
    if settings.json:
        emit_json({"imported": count})
    else:
        click.echo(f"imported {_items(count)}")



@store_group.command()
@click.argument("prefix", required=False, default="",
                type=NamespaceType(what="namespace_prefix", allow_empty=True))
@store_options(embedder=True)
@pass_settings
def reindex(settings: StoreSettings, prefix: Namespace) -> None:
    """Rebuild keyword terms and vectors of the items under PREFIX (default: all).

    Run it after using an embedder on a database first written without one: items keep their
    values, timestamps, TTLs and event times; texts embedded before are not embedded again.
    """
    store = settings.open()
    count = _with_progress(settings, "reindexing",
                           lambda progress: store.reindex(prefix, progress=progress))
    if settings.json:
        emit_json({"reindexed": count})
    else:
        click.echo(f"reindexed {_items(count)}")


def _with_progress(settings: StoreSettings, label: str,
                   work: Callable[[Callable[[int], None] | None], int]) -> int:
    """Run ``work`` with a progress callback drawing a bar on stderr, when it is a terminal
    and the output is not ``--json``."""
    console = Console(stderr=True)
    if settings.json or not console.is_terminal:
        return work(None)
    with Progress(SpinnerColumn(), TextColumn(label), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task(label, total=None)
        return work(lambda done: bar.update(task, completed=done))
