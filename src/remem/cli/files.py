"""``remem files``: the file tree an agent sees, kept in a store (``StoreFileBackend``).

Every command opens the store at ``--db`` and works on file tree ``--tree`` (default
``default``: the store namespace ``("files", "default")``, the tree ``remem ui``,
``/v1/files``, the MCP file tools and the approvals use), or under ``--namespace`` if given;
``--tenant NAME`` works on that tenant's tree of ``remem serve``. It runs one file request
(:mod:`remem.files.requests`) or a history operation, and prints JSON (``read`` prints the
content itself unless ``--json``).

Before trees, ``remem files`` kept its files under ``("files",)``: the first command on the
default tree moves them (records and history, never over a file the tree already has) and
says so on stderr (:func:`move_legacy_files`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import click

from remem.cli.common import NamespaceType, db_option
from remem.cli.render import emit_json, print_fields, print_rows
from remem.errors import InvalidInputError
from remem.files import StoreFileBackend
from remem.files.requests import (
    EditFileRequest,
    FileRequest,
    GlobRequest,
    GrepRequest,
    LsRequest,
    ReadFileRequest,
    WriteFileRequest,
    run_file_request,
)
from remem.store import BaseStore, Namespace, open_store
from remem.store.reserved import FILES
from remem.store.types import DeleteOp, Item, Op, PutOp

__all__ = ["DEFAULT_TREE", "LEGACY_NAMESPACE", "files_group", "move_legacy_files", "open_files",
           "tree_namespace"]

#: the file tree every surface uses when none is named
DEFAULT_TREE: Final = "default"
#: where ``remem files`` kept its files before trees
LEGACY_NAMESPACE: Final[Namespace] = (FILES,)


def tree_namespace(tree: str = DEFAULT_TREE, *, tenant: str | None = None) -> Namespace:
    """The store namespace of file tree ``tree`` (``("files", tree)``), inside ``tenant``'s
    prefix of ``remem serve`` if given."""
    return (*_tenant_prefix(tenant), FILES, tree)


def _tenant_prefix(tenant: str | None) -> Namespace:
    if tenant is None:
        return ()
    from remem.server.keys import tenant_prefix

    try:
        return tenant_prefix(tenant)
    except InvalidInputError as exc:
        raise click.BadParameter(str(exc), param_hint="'--tenant'") from None


def _moved(item: Item, target: Namespace) -> PutOp:
    """``item`` put at ``target`` with its timestamps (and expiry) kept."""
    expires = item.expires_at.timestamp() if item.expires_at is not None else None
    return PutOp(target, item.key, item.value, ttl=None, index=False,
                 created_at=item.created_at.timestamp(),
                 updated_at=item.updated_at.timestamp(), expires_at=expires)


def move_legacy_files(store: BaseStore, tree: str = DEFAULT_TREE) -> int:
    """Move the files ``remem files`` kept under :data:`LEGACY_NAMESPACE` into file tree
    ``tree``, each file's record and its history in one batch; a file the tree already has
    (and its history) stays where it was. Returns how many files moved."""
    target = tree_namespace(tree)
    moved = 0
    for part in ("files", "history"):  # ("files", "lock", ...) holds only held locks
        groups: dict[Namespace, list[Item]] = {}
        for item in store.iter_items((*LEGACY_NAMESPACE, part)):
            groups.setdefault(item.namespace, []).append(item)
        for namespace, items in groups.items():
            there = (*target, *namespace[len(LEGACY_NAMESPACE):])
            if part == "history" and store.list_namespaces(prefix=there, limit=1):
                continue  # the tree has this path's history already
            ops: list[Op] = []
            for item in items:
                if part == "files" and store.get(there, item.key, refresh_ttl=False):
                    continue  # the tree has this path already
                ops += [_moved(item, there), DeleteOp(item.namespace, item.key)]
                moved += part == "files"
            if ops:
                store.batch(ops)
    return moved


@contextmanager
def open_files(db: str, namespace: Namespace) -> Iterator[StoreFileBackend]:
    """The store at ``db`` as files under ``namespace``, closed afterwards. On the default
    tree, files left at :data:`LEGACY_NAMESPACE` are moved there first."""
    store = open_store(db)
    try:
        if namespace == tree_namespace() and store.list_namespaces(
                prefix=(*LEGACY_NAMESPACE, "files"), limit=1):
            count = move_legacy_files(store)
            if count:
                click.echo(f"note: moved {count} file(s) from the store namespace 'files' "
                           "(where remem files kept them before file trees) to tree "
                           f"'{DEFAULT_TREE}' ('files.{DEFAULT_TREE}'), where remem ui, "
                           "/v1/files and the approvals see them", err=True)
        yield StoreFileBackend(store, namespace)
    finally:
        store.close()


def _emit(value: Any, json_output: bool) -> None:
    """A file result as JSON (what /v1/files and the MCP tools answer), or for people: a
    list as a table (the path or text gets the room, times in ISO-8601), one result as
    ``key: value`` lines."""
    if isinstance(value, list):
        data: Any = [v if isinstance(v, dict) else v.to_dict() for v in value]
    elif value is None or isinstance(value, dict):
        data = value
    else:
        data = value.to_dict()
    if json_output:
        emit_json(data)
    elif isinstance(data, dict):
        print_fields(data)
    elif not data:
        click.echo("nothing found")
    elif "line" in data[0]:  # grep
        print_rows(data, ["path", "line", "text"], text="text")
    elif "op" in data[0]:  # history
        print_rows([{**e, "after": _first_line(e.get("after"))} for e in data],
                   ["version", "op", "at", "actor", "after"], text="after",
                   headers={"after": "content after"})
    else:  # ls, glob
        print_rows([{**i, "path": i["path"] + ("/" if i["is_dir"] else ""),
                     "size": "" if i["is_dir"] else i["size"]} for i in data],
                   ["path", "size", "modified_at"], text="path",
                   headers={"modified_at": "modified"})


def _first_line(text: str | None) -> str | None:
    if text is None:
        return None
    lines = text.splitlines() or [""]
    return lines[0] + (f" (+{len(lines) - 1} lines)" if len(lines) > 1 else "")


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--tree``, ``--namespace``, ``--tenant`` and ``--db``; the command gets the store
    namespace they name as ``namespace``."""
    @functools.wraps(fn)
    def run(tree: str, namespace: Namespace | None, tenant: str | None,
            **kwargs: Any) -> Any:
        where = (*_tenant_prefix(tenant), *(namespace or (FILES, tree)))
        return fn(namespace=where, **kwargs)

    decorated: Callable[..., Any] = run
    for option in (
            click.option("--json", "json_output", is_flag=True,
                         help="Machine output: the JSON document /v1/files and the MCP "
                              "tools answer (times in seconds since the epoch)."),
            db_option("The store (SQLite path or postgresql:// DSN)."),
            click.option("--tenant", metavar="NAME", default=None,
                         help="Work on this tenant's files of `remem serve` (default: the "
                              "database's own)."),
            click.option("--namespace", "-n", type=NamespaceType(), default=None,
                         help="The store namespace holding the files, dot-separated "
                              "(instead of --tree)."),
            click.option("--tree", default=DEFAULT_TREE, show_default=True,
                         help="The file tree: store namespace files.TREE, as remem ui, "
                              "/v1/files and the approvals name it.")):
        decorated = option(decorated)
    return decorated


def _run(db: str, namespace: Namespace, request: FileRequest) -> Any:
    with open_files(db, namespace) as files:
        return run_file_request(files, request, actor="cli")


@click.group(name="files")
def files_group() -> None:
    """Read and write the files agents see (memory files, skills, notes)."""


@files_group.command("ls")
@click.argument("path", default="/")
@_common
def ls_command(path: str, db: str, namespace: Namespace, json_output: bool) -> None:
    """List directory PATH."""
    _emit(_run(db, namespace, LsRequest.of(path=path)), json_output)


@files_group.command("read")
@click.argument("path")
@click.option("--offset", type=int, default=0, help="First line (from 0).")
@click.option("--limit", type=int, default=None, help="Lines to read (default: all).")
@_common
def read_command(path: str, offset: int, limit: int | None, json_output: bool, db: str,
                 namespace: Namespace) -> None:
    """Print file PATH."""
    read = _run(db, namespace, ReadFileRequest.of(path=path, offset=offset, limit=limit))
    if json_output:
        _emit(read, json_output)
    else:
        click.echo(read.content, nl=False)


@files_group.command("write")
@click.argument("path")
@click.argument("content", required=False)
@click.option("--etag", default=None, help="Write only if the file still has this etag "
                                           "('absent': only if it does not exist).")
@_common
def write_command(path: str, content: str | None, etag: str | None, db: str,
                  namespace: Namespace, json_output: bool) -> None:
    """Write CONTENT (or standard input) to file PATH."""
    text = sys.stdin.read() if content is None or content == "-" else content
    _emit(_run(db, namespace, WriteFileRequest.of(path=path, content=text, etag=etag)),
          json_output)


@files_group.command("edit")
@click.argument("path")
@click.argument("old")
@click.argument("new")
@click.option("--all", "replace_all", is_flag=True, help="Replace every occurrence.")
@click.option("--etag", default=None, help="Edit only if the file still has this etag.")
@_common
def edit_command(path: str, old: str, new: str, replace_all: bool, etag: str | None, db: str,
                 namespace: Namespace, json_output: bool) -> None:
    """Replace the exact text OLD with NEW in file PATH."""
    _emit(_run(db, namespace, EditFileRequest.of(path=path, old_string=old, new_string=new,
                                                 replace_all=replace_all, etag=etag)),
          json_output)


@files_group.command("glob")
@click.argument("pattern")
@click.option("--path", default="/", show_default=True, help="Directory to search under.")
@_common
def glob_command(pattern: str, path: str, db: str, namespace: Namespace,
                 json_output: bool) -> None:
    """List files matching PATTERN (e.g. '**/*.md')."""
    _emit(_run(db, namespace, GlobRequest.of(pattern=pattern, path=path)), json_output)


@files_group.command("grep")
@click.argument("text")
@click.option("--path", default="/", show_default=True, help="Directory to search under.")
@click.option("--glob", "glob_", default=None, help="Only files matching this glob.")
@_common
def grep_command(text: str, path: str, glob_: str | None, db: str,
                 namespace: Namespace, json_output: bool) -> None:
    """List the lines holding TEXT (literally)."""
    _emit(_run(db, namespace, GrepRequest.of(pattern=text, path=path, glob=glob_)),
          json_output)


@files_group.command("rm")
@click.argument("path")
@click.option("--etag", default=None, help="Delete only if the file still has this etag.")
@_common
def rm_command(path: str, etag: str | None, db: str, namespace: Namespace,
               json_output: bool) -> None:
    """Delete file PATH (undo brings it back)."""
    with open_files(db, namespace) as files:
        files.delete(path, etag=etag, actor="cli")
    if json_output:
        emit_json({"status": "deleted", "path": path})
    else:
        click.echo(f"deleted {path} (`remem files undo {path}` brings it back)")


@files_group.command("history")
@click.argument("path")
@_common
def history_command(path: str, db: str, namespace: Namespace, json_output: bool) -> None:
    """Show every change of file PATH, oldest first."""
    with open_files(db, namespace) as files:
        _emit([e.to_value() for e in files.history(path)], json_output)


@files_group.command("undo")
@click.argument("path")
@_common
def undo_command(path: str, db: str, namespace: Namespace, json_output: bool) -> None:
    """Revert the latest change of file PATH."""
    with open_files(db, namespace) as files:
        _emit(files.undo(path, actor="cli"), json_output)
