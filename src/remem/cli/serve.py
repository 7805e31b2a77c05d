"""``remem serve``, ``remem keys`` and ``remem mcp``: remem as a service.

These commands need the ``server`` extra (FastAPI, uvicorn, mcp), imported only when they run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from remem.cli.common import (
    EMBEDDER_ASKED,
    CommandFailed,
    db_option,
    embedder_hint,
    embedder_option,
    make_embedder,
    once,
    stop_cleanly_on_sigterm,
)

if TYPE_CHECKING:  # the rest is imported where used: `remem mcp` answers initialize first
    from remem.embed.base import Embedder

__all__ = ["MCP_SWITCHES", "SERVICE_COMMANDS", "McpSwitch", "app_from_env", "checked_shards",
           "file_policy_option", "keys_group", "mcp_command", "mcp_switches", "serve_command",
           "shard_options"]

FC = TypeVar("FC", bound=Callable[..., Any])

_DB_HELP = "SQLite file or postgresql:// DSN the server keeps memories and keys in."

#: :data:`remem.files.permissions.POLICY_ENV`, spelled here so that defining the commands
#: imports no file module (a test keeps the two equal)
POLICY_ENV = "REMEM_FILE_POLICY"


def checked_shards(texts: Any) -> tuple[Any, ...]:
    """The ``--shard NAME=DSN`` values as shards, a bad one a usage error naming it."""
    from remem.errors import InvalidInputError
    from remem.shards import parse_shards

    try:
        return parse_shards(tuple(texts))
    except InvalidInputError as exc:
        raise click.BadParameter(str(exc), param_hint="'--shard'") from None


def shard_options(fn: FC) -> FC:
    """Add ``--shard NAME=DSN`` (repeatable; ``$REMEM_SHARDS``, space-separated) and
    ``--placement``."""
    fn = click.option(
        "--placement", default="fewest", show_default=True, metavar="fewest|NAME",
        envvar="REMEM_PLACEMENT",
        help="Where new tenants go with --shard: the shard with the fewest tenants, or one "
             "named shard.")(fn)
    return click.option(
        "--shard", "shards", multiple=True, metavar="NAME=DSN", envvar="REMEM_SHARDS",
        help="Spread tenants' data over these PostgreSQL databases (repeatable; "
             "$REMEM_SHARDS, space-separated); --db is then the control database holding "
             "keys, jobs, usage and the routing table (docs/shards.md).")(fn)


def _server_extra() -> None:
    from importlib.util import find_spec  # found, not imported: importing takes seconds

    for name in ("fastapi", "mcp", "uvicorn"):
        if find_spec(name) is None:
            raise CommandFailed(f"this command needs the server extra ({name} is missing): "
                                "pip install 'remem[server]'")


def _embedder(name: str) -> Embedder | None:
    return None if name == "none" else make_embedder(name)


def _asked(embedder: str) -> str:
    """The embedder asked for: ``embedder``, or ``local`` when the shared ``--embedder``
    option fell back from it to ``none`` (:data:`remem.cli.common.EMBEDDER_ASKED`)."""
    ctx = click.get_current_context(silent=True)
    return str(ctx.meta.get(EMBEDDER_ASKED, embedder)) if ctx is not None else embedder


def _refuse_keyword_only(db: str, embedder: str, *, asked: str | None = None) -> None:
    """``--embedder none`` on a database with vectors is refused before serving it (its
    searches would quietly use keywords only); ``asked`` is the embedder asked for when it
    fell back to ``none``."""
    from remem.store import is_dsn

    if embedder == "none" and (db == ":memory:" or is_dsn(db) or Path(db).exists()):
        from remem.errors import IndexConfigError
        from remem.store import open_store

        try:
            open_store(db, strict=True).close()
        except IndexConfigError as exc:
            if asked is None or asked == embedder:
                raise
            raise CommandFailed(f"{exc}. --embedder {asked} is not available here, so this "
                                "database cannot be searched as it was indexed") from None


@dataclass(frozen=True, slots=True)
class McpSwitch:
    """One opt-in group of MCP tools: ``remem mcp --{name}`` and ``remem serve --mcp-{name}``
    (declared once here for both); ``keyword``: :func:`remem.server.mcp.build_mcp`'s keyword;
    ``metavar``: the value it takes (``None``: a flag)."""

    name: str
    keyword: str
    metavar: str | None
    serves: str

    def option(self, prefix: str, where: str) -> Callable[[FC], FC]:
        """The click option, ``--{prefix}{name}``; ``where``: where the tools are served."""
        text = f"Also serve {self.serves.format(at=where)}"
        if self.metavar is None:
            return click.option(f"--{prefix}{self.name}", self.keyword, is_flag=True,
                                help=text)
        return click.option(f"--{prefix}{self.name}", self.keyword, metavar=self.metavar,
                            default=None, help=text)


MCP_SWITCHES: tuple[McpSwitch, ...] = (
    McpSwitch("files", "files", None,
              "the file tools (ls, read_file, write_file, edit_file, glob, grep){at}, on the "
              "tenant's default file tree, within the file permissions."),
    McpSwitch("context", "context", None,
              "get_context (context within a token budget){at}."),
    McpSwitch("blocks", "blocks_agent", "AGENT",
              "the block tools (core_memory_append, core_memory_replace, memory_rethink){at}, "
              "on agent AGENT's blocks in the tenant."),
    McpSwitch("archival", "archival_user", "USER",
              "archival_memory_insert / archival_memory_search{at}, on user USER's memories "
              "in the tenant."),
    McpSwitch("conversations", "conversation_user", "USER",
              "conversation_search{at}, over the tenant's threads of user USER (metadata "
              "user_id)."),
    McpSwitch("procedural", "procedural", None,
              "the prompt and episode tools (get_prompt, list_prompts, select_examples, "
              "add_episode){at}."),
    McpSwitch("graph", "graph", None,
              "the temporal graph tools (search_facts, get_entity, get_profile, get_timeline; "
              "ingest_episode with a chat model){at}."),
)
"""The MCP tool switches of ``remem mcp`` and ``remem serve``, in help order."""


def mcp_switches(prefix: str, where: str) -> Callable[[FC], FC]:
    """Every :data:`MCP_SWITCHES` option, spelt ``--{prefix}{name}``."""
    def decorate(fn: FC) -> FC:
        for switch in reversed(MCP_SWITCHES):  # click shows options in decoration order
            fn = switch.option(prefix, where)(fn)
        return fn
    return decorate


def _checked_policy(ctx: click.Context, param: click.Parameter,
                    value: str | None) -> str | None:
    """A policy file that cannot be used is refused before serving: the message names the
    file, the rule, the field and the fix."""
    if value is None:
        return None
    from remem.errors import ConfigError
    from remem.files.permissions import load_policy

    try:
        load_policy(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return os.path.abspath(value)


file_policy_option = click.option(
    "--file-policy", envvar=POLICY_ENV, default=None, metavar="FILE",
    type=click.Path(exists=True, dir_okay=False), callback=_checked_policy,
    help="JSON file of file permission rules (allow, deny, ask) that every file route and "
         f"MCP file tool obeys; checked at start. Default: ${POLICY_ENV}, else allow "
         "everything.")


@click.command("serve")
@db_option(_DB_HELP, metavar="PATH|DSN")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--no-auth", is_flag=True,
              help="Serve without API keys (loopback only), every request on the "
                   "database's own data: what `remem add`, `remem ui` and Memory.open use.")
@click.option("--max-body-bytes", type=click.IntRange(min=1024), default=1 << 20,
              show_default=True, help="Larger request bodies are refused with 413.")
@embedder_option("Vectors for hybrid search ('none': keyword search only).")
@click.option("--no-mcp", is_flag=True, help="Do not serve MCP at /mcp.")
@click.option("--ui/--no-ui", default=True, show_default=True,
              help="Serve the web inspector at /ui (log in with an API key).")
@click.option("--graceful-timeout", type=click.IntRange(min=0), default=30,
              show_default=True, metavar="SECONDS",
              help="On SIGTERM/SIGINT, wait this long for in-flight requests.")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Server processes sharing the port and the database.")
@click.option("--store-threads", type=click.IntRange(1, 256), default=2, show_default=True,
              help="Requests per worker running store work at once (more only contend for "
                   "the GIL); adds that wait on an LLM do not count.")
@click.option("--rate-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="PER_SECOND",
              help="Requests per second each API key may make (default: unlimited); more "
                   "get 429 with Retry-After.")
@click.option("--rate-burst", type=click.FloatRange(min=1), default=None, metavar="N",
              help="Requests a key may send at once above its rate (default: one second's "
                   "worth).")
@click.option("--ready-timeout", type=click.FloatRange(min=0, min_open=True), default=5.0,
              show_default=True, metavar="SECONDS",
              help="How long /readyz waits for the database before answering 503.")
@click.option("--quota-items", type=click.IntRange(min=1), default=None, metavar="N",
              help="Items (memories, store items, thread search entries, graph rows) each "
                   "tenant may keep (default: unlimited); writes past it get 413 "
                   "quota_exceeded.")
@click.option("--quota-bytes", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="Bytes of stored values (compact JSON) each tenant may keep (default: "
                   "unlimited); writes past it get 413 quota_exceeded.")
@click.option("--metrics-token", envvar="REMEM_METRICS_TOKEN", default=None, metavar="TOKEN",
              help="Serve per-tenant metrics at /metrics/tenants to this bearer token "
                   "(at least 16 characters; default: not served). /metrics names no tenant.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="info", show_default=True)
@click.option("--workers-in-process", type=click.IntRange(0, 256), default=0,
              show_default=True, metavar="N",
              help="Also run background jobs (POST /v1/memories/submit) in each server "
                   "process, N at once (0: leave them to `remem worker`).")
@shard_options
@mcp_switches("mcp-", " at /mcp")
@file_policy_option
def serve_command(db: str, host: str, port: int, no_auth: bool, max_body_bytes: int,
                  embedder: str, no_mcp: bool, ui: bool, graceful_timeout: int, workers: int,
                  store_threads: int, rate_limit: float | None, rate_burst: float | None,
                  ready_timeout: float, quota_items: int | None, quota_bytes: int | None,
                  metrics_token: str | None, log_level: str,
                  workers_in_process: int = 0, file_policy: str | None = None,
                  shards: tuple[str, ...] = (), placement: str = "fewest",
                  **mcp_tools: Any) -> None:
    """Serve the HTTP API (docs at /docs, OpenAPI at /openapi.json) and MCP at /mcp.

    Every request needs an API key ('remem keys create --tenant T') and sees only its
    tenant's data (an admin key, 'keys create --admin', may name another in the
    X-Remem-Tenant header). --no-auth is for local use and refuses any non-loopback
    --host. An LLM for infer=true adds comes from the REMEM_LLM_* variables.
    """
    _server_extra()
    from remem.server.netguard import is_loopback  # the server's own loopback rule

    if no_auth and not is_loopback(host):
        raise click.BadParameter(
            f"--no-auth serves everyone as one tenant, so it binds to loopback only; got "
            f"--host {host} (use 127.0.0.1, or create keys and drop --no-auth)",
            param_hint="'--no-auth'")
    asked = _asked(embedder)
    _refuse_keyword_only(db, embedder, asked=asked)
    import uvicorn

    if file_policy is not None:  # the server and its worker processes read it from there
        os.environ[POLICY_ENV] = file_policy

    settings = {"db": db, "auth": not no_auth, "max_body_bytes": max_body_bytes,
                "embedder": embedder, "mcp": not no_mcp, "host": host,
                "store_threads": store_threads, "rate_limit": rate_limit,
                "rate_burst": rate_burst, "ready_timeout": ready_timeout,
                "quota_items": quota_items, "quota_bytes": quota_bytes,
                "metrics_token": metrics_token, "workers_in_process": workers_in_process,
                "ui": ui, "shards": list(shards), "placement": placement,
                "mcp_tools": _mcp_tools(**mcp_tools)}
    click.echo(f"remem serving {db} on http://{host}:{port} with {workers} worker(s) "
               f"(auth: {_NO_AUTH_WHO if no_auth else 'API keys'}; "
               f"MCP: {'off' if no_mcp else '/mcp'})", err=True)
    from remem.server.metrics import MULTIPROC_VAR, prepare_multiprocess_dir

    if workers > 1 or os.environ.get(MULTIPROC_VAR):
        # the workers' counters go to files in one directory, which /metrics adds up
        prepare_multiprocess_dir()
    if workers > 1:  # each worker process builds its app from the settings in the environment
        os.environ[_SETTINGS_VAR] = json.dumps(settings)
        uvicorn.run("remem.cli.serve:app_from_env", factory=True, host=host, port=port,
                    workers=workers, log_level=log_level,
                    timeout_graceful_shutdown=graceful_timeout, access_log=False,
                    timeout_keep_alive=KEEP_ALIVE)
        return
    with embedder_hint(db):
        app = _build_app(settings)
    if no_auth:
        _warn_legacy_local(app.state.remem.store)
    close = once(app.state.remem.close)
    # uvicorn drains requests on SIGTERM, then raises it again: close (checkpoint) first
    with stop_cleanly_on_sigterm(close):
        try:
            uvicorn.run(app, host=host, port=port, log_level=log_level,
                        timeout_graceful_shutdown=graceful_timeout, access_log=False,
                        timeout_keep_alive=KEEP_ALIVE)
        finally:
            close()


_SETTINGS_VAR = "REMEM_SERVE_SETTINGS"
#: how the start-up line names whose data a keyless server shows
_NO_AUTH_WHO = "off, the database's own data"


def _warn_legacy_local(store: Any) -> None:
    """Say on stderr when the database still holds the tenant ``local`` of earlier
    versions, which keyless interfaces no longer show by default."""
    from remem.server.state import legacy_local_notice

    notice = legacy_local_notice(store)
    if notice is not None:
        click.echo(f"note: {notice}", err=True)
#: seconds an idle keep-alive connection stays open; longer than uvicorn's 5 s so clients
#: with pooled connections rarely send on one the server is closing
KEEP_ALIVE = 30


def _build_app(settings: dict[str, Any]) -> Any:
    from remem.llm.config import model_from_env
    from remem.server import ServerConfig, create_app

    config = ServerConfig(db=settings["db"], auth=settings["auth"],
                          max_body_bytes=settings["max_body_bytes"],
                          embedder=_embedder(settings["embedder"]), llm=model_from_env(),
                          mcp=settings["mcp"], host=settings["host"],
                          store_threads=settings["store_threads"],
                          rate_limit=settings.get("rate_limit"),
                          rate_burst=settings.get("rate_burst"),
                          ready_timeout=settings.get("ready_timeout", 5.0),
                          quota_items=settings.get("quota_items"),
                          quota_bytes=settings.get("quota_bytes"),
                          metrics_token=settings.get("metrics_token"),
                          shards=checked_shards(settings.get("shards", ())),
                          placement=settings.get("placement", "fewest"))
    app = create_app(config, mcp_tools=settings.get("mcp_tools"), ui=settings.get("ui", True))
    if settings.get("workers_in_process"):
        from remem.server.routes_jobs import install_in_process_worker

        install_in_process_worker(app, int(settings["workers_in_process"]))
    return app


def app_from_env() -> Any:
    """The app of one ``remem serve --workers N`` worker (settings from the environment)."""
    return _build_app(json.loads(os.environ[_SETTINGS_VAR]))


@click.group("keys")
@db_option(_DB_HELP, metavar="PATH|DSN")
@click.pass_context
def keys_group(ctx: click.Context, db: str) -> None:
    """Create, list and revoke the server's API keys (stored hashed in --db)."""
    _server_extra()  # the key store is the server's: name the extra, not a bare import error
    ctx.obj = db


def _set_db(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:  # given after the subcommand: overrides the group's --db
        ctx.obj = value


# `remem keys create --db X` reads as naturally as `remem keys --db X create`; accept both
_db_here = click.option("--db", metavar="PATH|DSN", default=None, expose_value=False,
                        callback=_set_db, is_eager=True,
                        help="The database (same as `remem keys --db`).")


def _key_store(ctx: click.Context) -> object:
    from remem.server.keys import KeyStore
    from remem.store import open_store

    db = str(ctx.obj)
    store = open_store(db)  # keys are never searched by meaning: any embedder will do
    ctx.call_on_close(store.close)
    return KeyStore(store)


def _when(ts: float | None) -> str:
    return "-" if ts is None else datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


@keys_group.command("create")
@_db_here
@click.option("--tenant", required=True,
              help="The tenant every request of this key acts for (an admin key's home).")
@click.option("--read-only", is_flag=True, help="The key may read and search, not write.")
@click.option("--admin", is_flag=True,
              help="An admin key: may act for any tenant (a tenant picker in the "
                   "inspector, the X-Remem-Tenant header in the API).")
@click.option("--name", default="", help="A note to tell keys apart.")
@click.option("--json", "json_output", is_flag=True, help="Print JSON.")
@click.pass_context
def keys_create(ctx: click.Context, tenant: str, read_only: bool, admin: bool, name: str,
                json_output: bool) -> None:
    """Create a key and print it once (only its hash is stored)."""
    from remem.server.keys import KeyStore

    keys = _key_store(ctx)
    assert isinstance(keys, KeyStore)
    token, info = keys.create(tenant, read_only=read_only, name=name, admin=admin)
    if json_output:
        click.echo(json.dumps({"api_key": token, **info.to_dict()}))
    else:
        click.echo(token)
        kind = "admin key" if admin else "key"
        click.echo(f"{kind} id {info.key_id} for tenant {info.tenant}"
                   f"{' (read-only)' if read_only else ''}"
                   f"{', may act for any tenant' if admin else ''}; it is not shown again",
                   err=True)


@keys_group.command("list")
@_db_here
@click.option("--tenant", default=None, help="Only this tenant's keys.")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked keys.")
@click.option("--json", "json_output", is_flag=True, help="Print JSON lines.")
@click.pass_context
def keys_list(ctx: click.Context, tenant: str | None, include_revoked: bool,
              json_output: bool) -> None:
    """List keys with their tenants and roles (never the secrets).

    Columns: id, tenant, role (admin: any tenant; tenant: its own), flags, created, name."""
    from remem.server.keys import KeyStore

    keys = _key_store(ctx)
    assert isinstance(keys, KeyStore)
    for info in keys.list(tenant=tenant, include_revoked=include_revoked):
        if json_output:
            click.echo(json.dumps(info.to_dict()))
        else:
            flags = ",".join(f for f, on in (("read-only", info.read_only),
                                             ("revoked", not info.active)) if on) or "-"
            click.echo(f"{info.key_id}  {info.tenant}  {info.role}  {flags}  "
                       f"{_when(info.created_at)}  {info.name}")


@keys_group.command("revoke")
@_db_here
@click.argument("key_id")
@click.pass_context
def keys_revoke(ctx: click.Context, key_id: str) -> None:
    """Revoke a key by its id (servers stop accepting it within a second)."""
    from remem.server.keys import KeyStore

    keys = _key_store(ctx)
    assert isinstance(keys, KeyStore)
    info = keys.revoke(key_id)
    click.echo(f"revoked {info.key_id} (tenant {info.tenant})", err=True)


def _mcp_tools(files: bool = False, context: bool = False, blocks_agent: str | None = None,
               archival_user: str | None = None, conversation_user: str | None = None,
               procedural: bool = False, graph: bool = False) -> dict[str, Any]:
    """The opt-in MCP tools (:data:`MCP_SWITCHES`) as :func:`remem.server.mcp.build_mcp`
    keywords (JSON: the settings travel to worker processes in the environment)."""
    return {"files": files, "context": context, "blocks_agent": blocks_agent,
            "archival_user": archival_user, "conversation_user": conversation_user,
            "procedural": procedural, "graph": graph}


@click.command("mcp")
@db_option(_DB_HELP, metavar="PATH|DSN")
@click.option("--tenant", default=None,
              help="Act for this tenant of `remem serve` (default: none, the database's own "
                   "data, as `remem add`, `remem ui` and serve --no-auth).")
@click.option("--api-key", envvar="REMEM_API_KEY", default=None,
              help="Act for this key's tenant (and honour --read-only keys).")
@embedder_option("Vectors for hybrid search ('none': keyword search only).")
@click.option("--allow-forget", is_flag=True,
              help="Also serve forget_memories, which forgets every memory of a scope in one "
                   "call (off by default: too much for a tool a prompt could misuse).")
@mcp_switches("", "")
@file_policy_option
@click.option("--files-user", metavar="USER", default=None,
              help="The user the file tools act for: permission rules naming a user match "
                   "it.")
@click.option("--files-agent", metavar="AGENT", default=None,
              help="The agent the file tools act for: permission rules naming an agent "
                   "match it.")
def mcp_command(db: str, tenant: str | None, api_key: str | None, embedder: str,
                allow_forget: bool, file_policy: str | None = None,
                files_user: str | None = None, files_agent: str | None = None,
                **mcp_tools: Any) -> None:
    """Serve the memory tools over MCP on stdin/stdout (for agent hosts that launch it)."""
    _server_extra()
    if tenant is not None and api_key is not None:
        raise click.UsageError("pass --tenant or --api-key, not both")
    # initialize is answered now; the SDK, the store and the model load behind it
    front = _start_front()
    try:
        _serve_mcp(db, tenant, api_key, embedder, allow_forget, file_policy, files_user,
                   files_agent, mcp_tools)
    finally:
        if front is not None:
            front.finish()


def _start_front() -> Any:
    """The :class:`~remem.server.mcp_front.StdioFront` of ``remem mcp``, started (``None``
    on Windows, or when stdin and stdout are not the process's fds 0 and 1, as under a test
    runner: the SDK then serves the wire itself)."""
    if sys.platform == "win32":  # pragma: no cover
        return None
    try:
        if sys.stdin.fileno() != 0 or sys.stdout.fileno() != 1:
            return None
    except (AttributeError, OSError, ValueError):  # in-memory streams
        return None
    from remem.server.mcp_front import StdioFront

    front = StdioFront()
    front.start()
    return front


def _serve_mcp(db: str, tenant: str | None, api_key: str | None, embedder: str,
               allow_forget: bool, file_policy: str | None, files_user: str | None,
               files_agent: str | None, mcp_tools: dict[str, Any]) -> None:
    """The body of ``remem mcp``: open the state and serve until stdin ends."""
    from functools import partial

    import anyio

    from remem.llm.config import model_from_env
    from remem.server.keys import check_tenant
    from remem.server.mcp import serve_stdio
    from remem.server.state import LOCAL_TENANT, Principal, ServerConfig, ServerState

    asked = _asked(embedder)
    _refuse_keyword_only(db, embedder, asked=asked)
    with embedder_hint(db):
        state = ServerState.open(ServerConfig(db=db, embedder=_embedder(embedder),
                                              llm=model_from_env(), mcp=False))
    try:
        if file_policy is not None:  # the file tools obey it, as remem serve's do
            from remem.files.permissions import load_policy
            from remem.server.routes_files import set_file_policy

            set_file_policy(state, load_policy(file_policy))
        if api_key is not None:
            key = state.keys.verify(api_key)
            if key is None:
                raise CommandFailed("--api-key is not a valid, unrevoked key of this database")
            principal = Principal(key.tenant, key.read_only, key.key_id)
        else:
            principal = Principal(LOCAL_TENANT if tenant is None else check_tenant(tenant))
            if tenant is None:
                _warn_legacy_local(state.store)
        # SIGTERM (a host stopping it) leaves the writes in the database file, not its WAL
        with stop_cleanly_on_sigterm(state.checkpoint):
            anyio.run(partial(serve_stdio, state, principal, forget=allow_forget,
                              files_user=files_user, files_agent=files_agent,
                              **_mcp_tools(**mcp_tools)))
    finally:
        state.close()


#: the commands this module adds to ``remem``
SERVICE_COMMANDS = (serve_command, keys_group, mcp_command)
