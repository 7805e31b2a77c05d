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

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import click

from remem.cli.common import NamespaceType, db_param
from remem.cli.options import CliName, TextType
from remem.cli.render import emit_json, print_fields, print_rows
from remem.cli.table import CommandSpec, Family, add_table_commands, json_option
from remem.errors import InvalidInputError
from remem.files import StoreFileBackend
from remem.files.operation_table import FILE_OPERATIONS
from remem.files.requests import (
    AnyFileRequest,
    EditFileRequest,
    FileHistoryRequest,
    GlobRequest,
    GrepRequest,
    LsRequest,
    ReadFileRequest,
    UndoFileRequest,
    WriteFileRequest,
    run_file_request,
)
from remem.operations import Operation
from remem.requests import Request
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


def _session_params() -> list[click.Parameter]:
    """``--tree``, ``--namespace``, ``--tenant``, ``--db`` and ``--json``."""
    return [
        click.Option(["--tree"], default=DEFAULT_TREE, show_default=True,
                     help="The file tree: store namespace files.TREE, as remem ui, /v1/files "
                          "and the approvals name it."),
        click.Option(["--namespace", "-n"], type=NamespaceType(), default=None,
                     help="The store namespace holding the files, dot-separated (instead of "
                          "--tree)."),
        click.Option(["--tenant"], metavar="NAME", default=None,
                     help="Work on this tenant's files of `remem serve` (default: the "
                          "database's own)."),
        db_param("The store (SQLite path or postgresql:// DSN)."),
        json_option("Machine output: the JSON document /v1/files and the MCP tools answer "
                    "(times in seconds since the epoch)."),
    ]


def _where(session: Mapping[str, Any]) -> Namespace:
    """The store namespace ``--tree``, ``--namespace`` and ``--tenant`` name."""
    return (*_tenant_prefix(session["tenant"]),
            *(session["namespace"] or (FILES, session["tree"])))


def _run(row: Operation, request: AnyFileRequest, session: Mapping[str, Any]) -> Any:
    with open_files(session["db"], _where(session)) as files:
        return run_file_request(files, request, actor="cli")


def _show(request: AnyFileRequest, value: Any) -> None:
    if isinstance(request, FileHistoryRequest):
        value = [event.to_value() for event in value]
    _emit(value, False)


@click.group(name="files")
def files_group() -> None:
    """Read and write the files agents see (memory files, skills, notes)."""


_PATH = {"path": "PATH"}
_ETAG = CliName(help="Change the file only if it still has this etag ('absent': only if it "
                     "does not exist).")
_UNDER = CliName(option=("--path",), help="Directory to search under.")

_COMMANDS: Mapping[type[Request], CommandSpec] = {
    LsRequest: CommandSpec("List directory PATH.", _show, arguments=_PATH,
                           names={"path": CliName(required=False, default="/")}),
    ReadFileRequest: CommandSpec(
        "Print file PATH.", lambda request, read: click.echo(read.content, nl=False),
        arguments=_PATH),
    WriteFileRequest: CommandSpec(
        "Write CONTENT (or standard input) to file PATH.", _show,
        arguments={"path": "PATH", "content": "CONTENT"}, names={
            "content": CliName(required=False, default="-", type=TextType()),
            "etag": _ETAG}),
    EditFileRequest: CommandSpec(
        "Replace the exact text OLD with NEW in file PATH.", _show,
        arguments={"path": "PATH", "old_string": "OLD", "new_string": "NEW"},
        names={"replace_all": CliName(option=("--all",)), "etag": _ETAG}),
    GlobRequest: CommandSpec("List files matching PATTERN (e.g. '**/*.md').", _show,
                             arguments={"pattern": "PATTERN"}, names={"path": _UNDER}),
    GrepRequest: CommandSpec("List the lines holding TEXT (literally).", _show,
                             arguments={"pattern": "TEXT"}, names={"path": _UNDER}),
    FileHistoryRequest: CommandSpec("Show every change of file PATH, oldest first.", _show,
                                    arguments=_PATH),
    UndoFileRequest: CommandSpec("Revert the latest change of file PATH.", _show,
                                 arguments=_PATH, names={"path": CliName(required=True)}),
}
add_table_commands(files_group, FILE_OPERATIONS, _COMMANDS, Family(_session_params, _run))


# no row: /v1/files has no delete (agents' tools do not delete either)
@files_group.command("rm")
@click.argument("path")
@click.option("--etag", default=None, help="Delete only if the file still has this etag.")
def rm_command(path: str, etag: str | None, **session: Any) -> None:
    """Delete file PATH (undo brings it back)."""
    with open_files(session["db"], _where(session)) as files:
        files.delete(path, etag=etag, actor="cli")
    if session["json_output"]:
        emit_json({"status": "deleted", "path": path})
    else:
        click.echo(f"deleted {path} (`remem files undo {path}` brings it back)")


rm_command.params += _session_params()
