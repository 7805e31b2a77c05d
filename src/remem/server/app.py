"""The FastAPI application: :func:`create_app` wires state, routes, errors and metrics.

Routes (all JSON; see ``/docs`` on a running server):

* ``/v1/store/...``: items, search and namespaces of the raw store;
* ``/v1/memories/...`` and ``/v1/events/{id}/undo``: the ``Memory`` facade;
* ``/v1/threads/...``: conversations, their messages and checkpoints;
* ``/v1/prompts/...`` and ``/v1/episodes/...``: versioned prompts and episodes;
* ``/`` (a page pointing to ``/ui`` and ``/docs``), ``/healthz`` (the process answers, and
  its version), ``/readyz`` (the database answers), ``/metrics`` (Prometheus text);
* ``/mcp``: the MCP server over streamable HTTP (see :mod:`remem.server.mcp`);
* ``/ui``: the web inspector (HTML pages, see :mod:`remem.ui`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio.to_thread
from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from fastapi_offline import FastAPIOffline
from starlette.routing import Route

from remem import __version__
from remem.server import (
    routes_approvals,
    routes_blocks,
    routes_files,
    routes_graph,
    routes_jobs,
    routes_memory,
    routes_procedural,
    routes_store,
    routes_threads,
    routes_usage,
)
from remem.server.errors import (
    BodyLimitMiddleware,
    error_response,
    install_error_handlers,
    refuse_repeated_query_parameters,
)
from remem.server.keys import KEYS_NAMESPACE
from remem.server.metrics import (
    CONTENT_TYPE,
    Metrics,
    MetricsMiddleware,
    install_tenant_metrics,
)
from remem.server.netguard import HostGuard, document_guard, is_loopback
from remem.server.state import ServerConfig, ServerState
from remem.store.base import BaseStore

__all__ = ["DOCS_ASSETS", "create_app"]

#: where the Swagger UI and ReDoc files of ``/docs`` and ``/redoc`` are served
DOCS_ASSETS = "/docs-assets"

logger = logging.getLogger("remem.server")


def create_app(config: ServerConfig | None = None, *, store: BaseStore | None = None,
               mcp_tools: Mapping[str, Any] | None = None, ui: bool = True) -> FastAPI:
    """The remem HTTP application.

    ``config``: the server settings (default: ``ServerConfig()``, ``memory.db`` with auth).
    ``store``: serve this already-open store instead of opening ``config.db`` (the caller
    keeps owning it). ``mcp_tools``: the tools ``/mcp`` serves beside the memory tools, as
    keyword arguments of :func:`remem.server.mcp.build_mcp_http` (``files``, ``context``,
    ``blocks_agent``, ``archival_user``). ``ui``: serve the web inspector at ``/ui``
    (:mod:`remem.ui`). The store is opened when the app is built; close it with
    ``app.state.remem.close()`` once the app stops serving (``remem serve`` does). In-process
    harnesses may run the lifespan several times, so it does not close the store.
    """
    config = config or ServerConfig()
    state = ServerState.open(config, store)
    metrics = Metrics()
    mcp_app: Any = None
    if config.mcp:
        from remem.server.mcp import MCP_PATH, build_mcp_http

        mcp_app = build_mcp_http(state, **(mcp_tools or {}))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            if mcp_app is not None:  # the MCP session manager runs for the server's lifetime
                async with mcp_app.router.lifespan_context(mcp_app):
                    yield
            else:
                yield
        finally:  # stopped serving: leave the data in the database file, not in its WAL
            await anyio.to_thread.run_sync(state.checkpoint)

    # the docs pages load Swagger UI and ReDoc from this package's files, never a CDN
    app: FastAPI = FastAPIOffline(
        title="remem", version=__version__, lifespan=lifespan,
        static_url=DOCS_ASSETS, favicon_url=f"{DOCS_ASSETS}/favicon.png",
        description="Memory for LLM agents as a service: memories, the raw store, health and "
                    "metrics. Every request is confined to the tenant of its API key.",
        dependencies=[Depends(refuse_repeated_query_parameters)],
    )
    app.state.remem = state
    app.state.metrics = metrics
    install_error_handlers(app)
    app.include_router(routes_store.router)
    app.include_router(routes_memory.router)
    app.include_router(routes_threads.router)
    app.include_router(routes_jobs.router)
    app.include_router(routes_procedural.prompts_router)
    app.include_router(routes_procedural.router)
    app.include_router(routes_files.router)
    app.include_router(routes_approvals.router)
    app.include_router(routes_blocks.router)
    app.include_router(routes_graph.router)
    app.include_router(routes_usage.router)

    @app.get("/", include_in_schema=False, response_class=HTMLResponse)
    def root() -> HTMLResponse:
        """A page pointing to the inspector and the API docs (was a bare 404)."""
        return HTMLResponse(_root_page(ui=ui, mcp=mcp_app is not None))

    @app.get("/healthz", tags=["ops"], summary="Liveness")
    def healthz() -> dict[str, str]:
        """The process answers, with the remem version it runs."""
        return {"status": "ok", "version": __version__}

    probe = _ReadinessProbe(state)

    @app.get("/readyz", tags=["ops"], summary="Readiness",
             responses={503: {"description": "the database does not answer"}})
    async def readyz(request: Request) -> Any:
        """The database answers a read within ``ready_timeout`` seconds."""
        failure = await probe.check(config.ready_timeout)
        if failure is not None:  # the reason is logged: it names hosts, ports and files
            return error_response(503, "not_ready", f"the store does not answer: {failure}")
        return JSONResponse({"status": "ready", **state.describe()})

    @app.get("/metrics", tags=["ops"], summary="Prometheus metrics",
             response_class=PlainTextResponse)
    def metrics_text() -> PlainTextResponse:
        """Request counts and latencies in the Prometheus text format (no tenant names;
        with several workers, the sum of all of them)."""
        return PlainTextResponse(metrics.render(), media_type=CONTENT_TYPE)

    if config.metrics_token is not None:
        install_tenant_metrics(app, metrics, config.metrics_token)

    if mcp_app is not None:
        app.router.routes.append(Route(MCP_PATH, mcp_app, include_in_schema=False))
    if ui:  # the web inspector: HTML pages over the same tenants and keys
        from remem.ui import UI_PATH, build_ui

        app.mount(UI_PATH, build_ui(state, UI_PATH, metrics=metrics))

    app.add_middleware(BodyLimitMiddleware, limit=config.max_body_bytes)
    if not config.auth or is_loopback(config.host):
        app.add_middleware(HostGuard)
        document_guard(app)  # its 421 and 403 answers appear in the OpenAPI schema
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    _built_one_at_a_time(app)
    return app


#: FastAPI builds a route's parameters (pydantic type adapters) on the first request that
#: reaches it, and the OpenAPI schema on its first read (a 405's ``Allow`` header reads it);
#: neither is thread-safe across the apps of one process (a test suite's, an embedder's):
#: two apps building at once answered 500 (``__pydantic_core_schema__``, a ``KeyError`` in
#: the field mapping). Both are built under this lock: the routes when the app is made,
#: the schema on its first read (tests/project/test_state_races.py races them)
_BUILD = threading.Lock()


def _built_one_at_a_time(app: FastAPI) -> None:
    with _BUILD:
        _build_routes(app.router.routes)
    build = app.openapi

    def openapi() -> dict[str, Any]:
        with _BUILD:
            return build()

    app.openapi = openapi  # type: ignore[method-assign]


def _build_routes(routes: Sequence[Any]) -> None:
    """Make FastAPI build each included router's routes now. ``effective_candidates`` is
    how FastAPI 0.165 builds them lazily; where it is missing (another version) nothing is
    built early and the first requests build them as before."""
    for route in routes:
        candidates = getattr(route, "effective_candidates", None)
        if callable(candidates):
            _build_routes(candidates())


def _root_page(*, ui: bool, mcp: bool) -> str:
    """The HTML of ``GET /``: what this server serves and where."""
    links = [("/ui", "the web inspector: memories, threads, graph")] if ui else []
    links += [("/docs", "the HTTP API: interactive docs (OpenAPI at /openapi.json)"),
              ("/healthz", "liveness and version")]
    if mcp:
        links.append(("/mcp", "MCP over streamable HTTP, for agent hosts"))
    items = "".join(f'<li><a href="{href}">{href}</a>: {what}</li>' for href, what in links)
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>remem</title></head>"
            f"<body><h1>remem {__version__}</h1><p>Memory for LLM agents.</p><ul>{items}</ul>"
            "</body></html>")


class _ReadinessProbe:
    """Reads the store in a thread of its own and waits for it at most a timeout. A store
    that hangs (a database host that drops packets) keeps that one thread; later probes
    answer at once that it is still waiting, so hung probes never pile up."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._running: threading.Thread | None = None
        self._lock = threading.Lock()

    async def check(self, timeout: float) -> str | None:
        """``None`` if the store answered within ``timeout`` seconds, else why not."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str | None] = loop.create_future()

        def settle(result: str | None) -> None:
            if not done.done():
                done.set_result(result)

        def read() -> None:
            try:
                self.state.store.list_namespaces(prefix=KEYS_NAMESPACE, limit=1)
                result = None
            except Exception as exc:
                logger.warning("readiness check failed: %s", exc)
                result = f"it failed ({type(exc).__name__}; the server log has the details)"
            finally:
                with self._lock:
                    self._running = None
            with contextlib.suppress(RuntimeError):  # the loop may be gone by now
                loop.call_soon_threadsafe(settle, result)

        with self._lock:
            if self._running is not None:
                return "an earlier check is still waiting for it"
            self._running = threading.Thread(target=read, name="remem-readyz", daemon=True)
            self._running.start()
        try:
            return await asyncio.wait_for(asyncio.shield(done), timeout)
        except TimeoutError:
            return f"no answer within {timeout:g} s"
