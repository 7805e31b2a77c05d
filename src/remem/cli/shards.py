"""``remem shards``: the routing table of a sharded server (tenants over several PostgreSQL
databases): list routes, place a tenant, move one online (docs/shards.md).

Every command takes the same ``--db`` (the control database), ``--shard NAME=DSN`` and
``--embedder`` as ``remem serve``: a move copies items into a shard store opened as the
server opens it, so their vectors are made by the same model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import click

from remem.cli.common import CommandFailed, db_option, embedder_option, make_embedder
from remem.cli.render import emit_json
from remem.cli.serve import checked_shards, shard_options

if TYPE_CHECKING:
    from remem.embed.base import Embedder
    from remem.shards import Shard, ShardRouter

__all__ = ["open_router", "shards_group"]


def open_router(db: str, shards: tuple[Shard, ...], placement: str,
                embedder: Embedder | bool, *, schema: str = "remem") -> ShardRouter:
    """The router of ``--shard`` over the control database ``db``, each shard's store opened
    as ``remem serve`` opens its store (memories' ``text`` indexed)."""
    from remem.errors import RememError
    from remem.server.state import ServerConfig, open_server_store
    from remem.shards import Placement, RouteTable, ShardRouter
    from remem.store import is_dsn

    if not shards:
        raise CommandFailed("no shards given: pass --shard NAME=DSN (repeatable) or set "
                            "REMEM_SHARDS")
    if not is_dsn(db):
        raise CommandFailed("--shard needs a PostgreSQL control database: --db must be a "
                            "postgresql:// DSN")
    vectors = None if embedder is True or embedder is False else embedder
    try:
        routes = RouteTable(db, shards, schema=schema, placement=Placement(placement))
    except RememError as exc:
        raise CommandFailed(str(exc)) from None
    return ShardRouter(routes, lambda shard: open_server_store(
        ServerConfig(db=shard.dsn, embedder=vectors)))


@click.group(name="shards")
@db_option("The control database (a postgresql:// DSN): keys, jobs and the routing table.",
           metavar="DSN")
@embedder_option("Embedder of the shards' stores (the one their vectors were made with).")
@shard_options
@click.pass_context
def shards_group(ctx: click.Context, db: str, embedder: str, shards: tuple[str, ...],
                 placement: str) -> None:
    """Route tenants over several PostgreSQL databases: list, place and move them."""
    given = checked_shards(shards)

    def router() -> ShardRouter:  # opened by the subcommand that runs (not for --help)
        vectors = False if embedder == "none" else make_embedder(embedder)
        found = open_router(db, given, placement, vectors)
        ctx.call_on_close(found.close)
        return found
    ctx.obj = router


def _router() -> ShardRouter:
    return cast("Callable[[], ShardRouter]", click.get_current_context().obj)()


def _fail(exc: Exception) -> CommandFailed:
    return CommandFailed(str(exc))


@shards_group.command("ls")
@click.option("--json", "json_output", is_flag=True, help="Print the routes as JSON.")
def ls_command(json_output: bool) -> None:
    """List the shards (tenants on each) and every tenant's route."""
    router = _router()
    counts = router.routes.counts()
    routes = router.routes.routes()
    if json_output:
        emit_json({"shards": [{"name": name, "tenants": count}
                              for name, count in counts.items()],
                   "routes": [_route_json(route) for route in routes]})
        return
    for name, count in counts.items():
        click.echo(f"shard {name}: {count} tenant(s)")
    for route in routes:
        extra = "".join(f" ({label} {value})" for label, value in (
            ("moving to", route.moving_to), ("old copy on", route.moved_from)) if value)
        click.echo(f"{route.tenant}\t{route.shard}{extra}")


def _route_json(route: Any) -> dict[str, Any]:
    return {"tenant": route.tenant, "shard": route.shard, "moving_to": route.moving_to,
            "moved_from": route.moved_from, "version": route.version}


@shards_group.command("place")
@click.argument("tenant")
@click.option("--on", "shard", default=None, metavar="NAME",
              help="The shard (default: the placement policy's choice).")
def place_command(tenant: str, shard: str | None) -> None:
    """Place TENANT (before its first request); a placed tenant keeps its shard."""
    from remem.errors import RememError
    from remem.server.keys import check_tenant

    router = _router()
    try:
        check_tenant(tenant)
        route = router.routes.place(tenant, shard)
    except RememError as exc:
        raise _fail(exc) from None
    click.echo(f"{route.tenant}\t{route.shard}")


@shards_group.command("move")
@click.argument("tenant")
@click.option("--to", "target", required=True, metavar="NAME", help="The shard to move to.")
@click.option("--settle", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Seconds between the flip and deleting the old copy (default: twice the "
                   "route cache, 2 s; at least every server's route cache).")
@click.option("--json", "json_output", is_flag=True, help="Print the report as JSON.")
def move_command(tenant: str, target: str, settle: float | None, json_output: bool) -> None:
    """Move TENANT's data to shard --to while it is in use (no write lost). Safe to run
    again after an interruption: it resumes or finishes the move."""
    from remem.errors import RememError
    from remem.shards.move import move_tenant

    def say(text: str) -> None:
        if not json_output:
            click.echo(text, err=True)

    try:
        report = move_tenant(_router(), tenant, target, settle=settle, progress=say)
    except RememError as exc:
        raise _fail(exc) from None
    if json_output:
        emit_json(report.to_dict())
        return
    click.echo(f"{tenant}: {report.source} -> {report.target}, {report.copied} copied, "
               f"{report.caught_up} caught up in {report.locked_seconds:.3f} s under the "
               f"route lock, {report.deleted} deleted from {report.source}"
               + (f" ({report.note})" if report.note else ""))


@shards_group.command("abandon")
@click.argument("tenant")
def abandon_command(tenant: str) -> None:
    """Give up an interrupted move of TENANT whose route had not flipped: delete the partial
    copy on its target."""
    from remem.errors import RememError
    from remem.shards.move import abandon_move

    try:
        deleted = abandon_move(_router(), tenant)
    except RememError as exc:
        raise _fail(exc) from None
    click.echo(f"{tenant}: {deleted} items of an unfinished copy deleted")
