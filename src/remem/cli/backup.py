"""``remem backup``: a consistent copy of a SQLite database, safe while servers write to it.

SQLite files are copied with SQLite's online backup API (:func:`remem._sqlite.backup_file`):
one snapshot holding every write acknowledged before the copy began, written to a temporary
file and renamed into place. A PostgreSQL database is not copied here: the command says how
to run ``pg_dump`` and exits 1, rather than running it with the DSN's password on a command
line (docs/backup.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from remem._sqlite import Backup, backup_file
from remem.cli.common import CommandFailed, db_option
from remem.cli.render import emit_json
from remem.store import is_dsn

__all__ = ["PG_DUMP_HINT", "backup_command"]

PG_DUMP_HINT = (
    "remem backup copies SQLite files; back up a PostgreSQL database with its own tools: "
    "pg_dump --format=custom --schema=remem --file DEST \"$DSN\" (every table remem keeps "
    "is in that schema, or the one you passed as --schema), restored with pg_restore "
    "--dbname \"$DSN\" DEST; see docs/backup.md")


@click.command("backup")
@db_option("The SQLite database to copy (a postgresql:// DSN prints how to use pg_dump).",
           metavar="PATH|DSN")
@click.argument("dest", type=click.Path(dir_okay=True, path_type=Path))
@click.option("--force", is_flag=True, help="Replace DEST if it exists.")
@click.option("--json", "json_output", is_flag=True, help="Print the result as JSON.")
def backup_command(db: str, dest: Path, force: bool, json_output: bool) -> None:
    """Copy the database to DEST (a file, or a directory to put it in) while it stays in use.

    The copy holds every write acknowledged before it began, is checked by SQLite's
    quick_check, and is one self-contained file (no -wal beside it).
    """
    if is_dsn(db):
        raise CommandFailed(PG_DUMP_HINT)
    if db == ":memory:":
        raise click.BadParameter("':memory:' is gone when its process ends: there is nothing "
                                 "to copy; pass a database file", param_hint="'--db'")
    from remem.errors import StoreError

    target = dest / Path(db).name if dest.is_dir() else dest
    if os.path.realpath(target) == os.path.realpath(db):
        raise click.BadParameter(f"DEST {target} is the database itself; choose another file",
                                 param_hint="'DEST'")
    if target.exists() and not force:
        raise CommandFailed(f"{target} exists; pass --force to replace it, or choose another "
                            "file")
    try:  # with --force the old copy goes only once the new one is whole
        made = _replace(db, target) if target.exists() else backup_file(db, str(target))
    except StoreError as exc:
        raise CommandFailed(str(exc)) from None
    if json_output:
        emit_json({"source": db, "path": made.path, "pages": made.pages, "bytes": made.bytes})
    else:
        click.echo(f"backed up {db} to {made.path}: {made.bytes:,} bytes, {made.pages:,} pages, "
                   "quick_check ok")


def _replace(db: str, target: Path) -> Backup:
    """The backup into a fresh name beside ``target``, then moved over it."""
    fresh = target.with_name(f".{target.name}.new")
    fresh.unlink(missing_ok=True)
    made = backup_file(db, str(fresh))
    os.replace(fresh, target)
    return Backup(str(target), made.pages, made.bytes)
