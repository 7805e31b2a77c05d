"""The FastAPI application: :func:`create_app` wires state, routes, errors and metrics.

Routes (all JSON; see ``/docs`` on a running server):

* ``/v1/store/...``: items, search and namespaces of the raw store;
* ``/v1/memories/...`` and ``/v1/events/{id}/undo``: the ``Memory`` facade;
* ``/v1/threads/...``: conversations, their messages and checkpoints;
* ``/healthz`` (the process answers), ``/readyz`` (the database answers), ``/metrics``
  (Prometheus text);
* ``/mcp``: the MCP server over streamable HTTP (see :mod:`remem.server.mcp`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from remem import __version__
from remem.server import routes_memory, routes_store, routes_threads
from remem.server.errors import BodyLimitMiddleware, error_response, install_error_handlers
from remem.server.keys import KEYS_NAMESPACE
from remem.server.metrics import Metrics, MetricsMiddleware
from remem.server.state import ServerConfig, ServerState
from remem.store.base import BaseStore

__all__ = ["create_app"]


def create_app(config: ServerConfig | None = None, *, store: BaseStore | None = None) -> FastAPI:
    """The remem HTTP application.

    ``config``: the server settings (default: ``ServerConfig()``, ``memory.db`` with auth).
    ``store``: serve this already-open store instead of opening ``config.db`` (the caller
    keeps owning it). The store is opened when the app is built; close it with
    ``app.state.remem.close()`` once the app stops serving (``remem serve`` does). In-process
    harnesses may run the lifespan several times, so it does not close the store.
    """
    config = config or ServerConfig()
    state = ServerState.open(config, store)
    metrics = Metrics()
    mcp_app: Any = None
    if config.mcp:
        from remem.server.mcp import MCP_PATH, build_mcp_http

        mcp_app = build_mcp_http(state)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if mcp_app is not None:  # the MCP session manager runs for the server's lifetime
            async with mcp_app.router.lifespan_context(mcp_app):
                yield
        else:
            yield

    app = FastAPI(
        title="remem", version=__version__, lifespan=lifespan,
        description="Memory for LLM agents as a service: memories, the raw store, health and "
                    "metrics. Every request is confined to the tenant of its API key.",
    )
    app.state.remem = state
    app.state.metrics = metrics
    install_error_handlers(app)
    app.include_router(routes_store.router)
    app.include_router(routes_memory.router)
    app.include_router(routes_threads.router)

    @app.get("/healthz", tags=["ops"], summary="Liveness")
    def healthz() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], summary="Readiness",
             responses={503: {"description": "the database does not answer"}})
    def readyz(request: Request) -> Any:
        """The database answers a read."""
        try:
            state.store.list_namespaces(prefix=KEYS_NAMESPACE, limit=1)
        except Exception as exc:  # any failure means "not ready", with the reason
            return error_response(503, "not_ready", f"the store does not answer: {exc}")
        return JSONResponse({"status": "ready", **state.describe()})

    @app.get("/metrics", tags=["ops"], summary="Prometheus metrics",
             response_class=PlainTextResponse)
    def metrics_text() -> PlainTextResponse:
        """Request counts and latencies in the Prometheus text format."""
        return PlainTextResponse(metrics.render(),
                                 media_type="text/plain; version=0.0.4; charset=utf-8")

    if mcp_app is not None:
        app.router.routes.append(Route(MCP_PATH, mcp_app, include_in_schema=False))

    app.add_middleware(BodyLimitMiddleware, limit=config.max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
