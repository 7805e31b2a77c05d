"""``remem ui``: the web inspector on a local database, for one user, without keys.

It shows the database's own data (memories as ``remem add`` and ``Memory.open`` write them,
every thread), the same as ``remem serve --no-auth`` and ``remem mcp``; ``--tenant NAME``
shows what ``remem serve`` keeps for that tenant instead. It binds to 127.0.0.1 only and
refuses requests naming another host (DNS rebinding).
"""

from __future__ import annotations

import click

from remem.cli.common import (
    db_option,
    embedder_hint,
    embedder_option,
    make_embedder,
    once,
    stop_cleanly_on_sigterm,
)

__all__ = ["ui_command"]

HOST = "127.0.0.1"


@click.command("ui")
@db_option("SQLite file or postgresql:// DSN to inspect.", metavar="PATH|DSN")
@embedder_option("Vectors for the inspector's hybrid search ('none': keyword search only).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--tenant", metavar="NAME", default=None,
              help="Show this tenant's data of `remem serve` (default: the database's own, "
                   "as `remem add` and Memory.open write it).")
@click.option("--open", "open_browser", is_flag=True,
              help="Open the inspector in this machine's web browser.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="warning", show_default=True)
def ui_command(db: str, embedder: str, port: int, tenant: str | None, open_browser: bool,
               log_level: str) -> None:
    """Inspect memories in a web browser: http://127.0.0.1:PORT/ui.

    It shows the database's own data, the same as 'remem add', 'remem mcp' and 'remem
    serve --no-auth' (--tenant NAME: a tenant of 'remem serve' instead). One local user,
    no API key: the server binds to 127.0.0.1 only and answers only requests naming a
    loopback host. To inspect a shared server, use 'remem serve' and log in at /ui with
    an API key.
    """
    from remem.cli.serve import _asked, _refuse_keyword_only, _server_extra

    _server_extra()
    _refuse_keyword_only(db, embedder, asked=_asked(embedder))
    import uvicorn

    from remem.server.keys import check_tenant
    from remem.server.state import LOCAL_TENANT
    from remem.ui.app import build_local_app

    who = LOCAL_TENANT if tenant is None else check_tenant(tenant)
    with embedder_hint(db):
        app, close = build_local_app(db, None if embedder == "none" else make_embedder(embedder),
                                     tenant=who)
    if tenant is None:
        from remem.cli.serve import _warn_legacy_local
        from remem.store import open_store

        with open_store(db) as store:  # only to count: any embedder will do
            _warn_legacy_local(store)
    url = f"http://{HOST}:{port}/ui/"
    shown = f"tenant {tenant}" if tenant else "the database's own data"
    click.echo(f"remem inspector on {url} ({db}, {shown}); Ctrl-C stops it", err=True)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    stop = once(close)
    with stop_cleanly_on_sigterm(stop):  # the database closed (checkpointed) on SIGTERM too
        try:
            uvicorn.run(app, host=HOST, port=port, log_level=log_level, access_log=False)
        finally:
            stop()
