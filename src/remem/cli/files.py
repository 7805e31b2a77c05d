"""``remem files``: the file tree an agent sees, kept in a store (``StoreFileBackend``).

Every command opens the store at ``--db`` and works under ``--namespace`` (default
``files``), runs one file request (:mod:`remem.files.requests`) or a history operation, and
prints JSON (``read`` prints the content itself unless ``--json``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from remem.cli.common import NamespaceType, db_option
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
from remem.store import Namespace, open_store

__all__ = ["files_group", "open_files"]


@contextmanager
def open_files(db: str, namespace: Namespace) -> Iterator[StoreFileBackend]:
    """The store at ``db`` as files under ``namespace``, closed afterwards."""
    store = open_store(db)
    try:
        yield StoreFileBackend(store, namespace)
    finally:
        store.close()


def _emit(value: Any) -> None:
    if isinstance(value, list):
        data: Any = [v.to_dict() for v in value]
    elif value is None:
        data = None
    else:
        data = value.to_dict()
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--namespace", "-n", type=NamespaceType(), default="files",
                      show_default=True, help="The store namespace holding the files, "
                                              "dot-separated.")(fn)
    return db_option("The store (SQLite path or postgresql:// DSN).")(fn)


def _run(db: str, namespace: Namespace, request: FileRequest) -> Any:
    with open_files(db, namespace) as files:
        return run_file_request(files, request, actor="cli")


@click.group(name="files")
def files_group() -> None:
    """Read and write the files agents see (memory files, skills, notes)."""


@files_group.command("ls")
@click.argument("path", default="/")
@_common
def ls_command(path: str, db: str, namespace: Namespace) -> None:
    """List directory PATH."""
    _emit(_run(db, namespace, LsRequest.of(path=path)))


@files_group.command("read")
@click.argument("path")
@click.option("--offset", type=int, default=0, help="First line (from 0).")
@click.option("--limit", type=int, default=None, help="Lines to read (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@_common
def read_command(path: str, offset: int, limit: int | None, as_json: bool, db: str,
                 namespace: Namespace) -> None:
    """Print file PATH."""
    read = _run(db, namespace, ReadFileRequest.of(path=path, offset=offset, limit=limit))
    if as_json:
        _emit(read)
    else:
        click.echo(read.content, nl=False)


@files_group.command("write")
@click.argument("path")
@click.argument("content", required=False)
@click.option("--etag", default=None, help="Write only if the file still has this etag "
                                           "('absent': only if it does not exist).")
@_common
def write_command(path: str, content: str | None, etag: str | None, db: str,
                  namespace: Namespace) -> None:
    """Write CONTENT (or standard input) to file PATH."""
    text = sys.stdin.read() if content is None or content == "-" else content
    _emit(_run(db, namespace, WriteFileRequest.of(path=path, content=text, etag=etag)))


@files_group.command("edit")
@click.argument("path")
@click.argument("old")
@click.argument("new")
@click.option("--all", "replace_all", is_flag=True, help="Replace every occurrence.")
@click.option("--etag", default=None, help="Edit only if the file still has this etag.")
@_common
def edit_command(path: str, old: str, new: str, replace_all: bool, etag: str | None, db: str,
                 namespace: Namespace) -> None:
    """Replace the exact text OLD with NEW in file PATH."""
    _emit(_run(db, namespace, EditFileRequest.of(path=path, old_string=old, new_string=new,
                                                 replace_all=replace_all, etag=etag)))


@files_group.command("glob")
@click.argument("pattern")
@click.option("--path", default="/", show_default=True, help="Directory to search under.")
@_common
def glob_command(pattern: str, path: str, db: str, namespace: Namespace) -> None:
    """List files matching PATTERN (e.g. '**/*.md')."""
    _emit(_run(db, namespace, GlobRequest.of(pattern=pattern, path=path)))


@files_group.command("grep")
@click.argument("text")
@click.option("--path", default="/", show_default=True, help="Directory to search under.")
@click.option("--glob", "glob_", default=None, help="Only files matching this glob.")
@_common
def grep_command(text: str, path: str, glob_: str | None, db: str,
                 namespace: Namespace) -> None:
    """List the lines holding TEXT (literally)."""
    _emit(_run(db, namespace, GrepRequest.of(pattern=text, path=path, glob=glob_)))


@files_group.command("rm")
@click.argument("path")
@click.option("--etag", default=None, help="Delete only if the file still has this etag.")
@_common
def rm_command(path: str, etag: str | None, db: str, namespace: Namespace) -> None:
    """Delete file PATH (undo brings it back)."""
    with open_files(db, namespace) as files:
        files.delete(path, etag=etag, actor="cli")
    click.echo(json.dumps({"status": "deleted", "path": path}))


@files_group.command("history")
@click.argument("path")
@_common
def history_command(path: str, db: str, namespace: Namespace) -> None:
    """Show every change of file PATH, oldest first."""
    with open_files(db, namespace) as files:
        click.echo(json.dumps([e.to_value() for e in files.history(path)],
                              ensure_ascii=False, indent=2))


@files_group.command("undo")
@click.argument("path")
@_common
def undo_command(path: str, db: str, namespace: Namespace) -> None:
    """Revert the latest change of file PATH."""
    with open_files(db, namespace) as files:
        _emit(files.undo(path, actor="cli"))
