"""The inspector as an ASGI app: mounted by the server at ``/ui`` (:func:`build_ui`), or
alone over a whole local database for ``remem ui`` (:func:`build_local_app`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from remem.api import Memory
from remem.embed.base import Embedder
from remem.server.metrics import Metrics
from remem.server.netguard import HostGuard
from remem.server.state import LOCAL_TENANT, ServerConfig, ServerState
from remem.ui import (
    routes_approvals,
    routes_auth,
    routes_dashboard,
    routes_files,
    routes_graph,
    routes_jobs,
    routes_memories,
    routes_prompts,
    routes_threads,
)
from remem.ui.web import Inspector, page_routes

__all__ = ["UI_PATH", "build_local_app", "build_ui", "page_routes"]

#: where the server mounts the inspector
UI_PATH = "/ui"
_STATIC = Path(__file__).parent / "static"


def build_ui(state: ServerState, prefix: str = UI_PATH, *,
             local_memory: Memory | None = None, metrics: Metrics | None = None,
             local_tenant: str = LOCAL_TENANT) -> FastAPI:
    """The inspector over ``state`` (mount it at ``prefix``): HTML pages, no OpenAPI.
    Without auth it shows ``local_tenant``'s data (default: the database's own, what
    ``remem add`` and ``Memory.open`` use), through ``local_memory`` if given (``remem ui``:
    the memory it opened). ``metrics``: the server's request metrics, for the dashboard."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.inspector = Inspector(state, prefix, local_memory=local_memory, metrics=metrics,
                                    local_tenant=local_tenant)
    app.state.inspector.install_handlers(app)
    app.include_router(routes_auth.router)
    app.include_router(routes_memories.router)
    app.include_router(routes_threads.router)
    app.include_router(routes_jobs.router)
    app.include_router(routes_files.router)
    app.include_router(routes_prompts.router)
    app.include_router(routes_graph.router)
    app.include_router(routes_approvals.router)
    app.include_router(routes_dashboard.router)
    app.mount("/static", StaticFiles(directory=_STATIC), name="static")
    return app


def build_local_app(db: str | os.PathLike[str], embedder: Embedder | None, *,
                    tenant: str = LOCAL_TENANT) -> tuple[Any, Callable[[], None]]:
    """``remem ui``: the inspector over ``db``'s own data (memories as :meth:`Memory.open`
    writes them, every thread: what ``remem serve --no-auth`` and ``remem mcp`` show too),
    or over ``tenant``'s data of ``remem serve``, for one local user without a key, guarded
    against DNS rebinding like every keyless server. Returns the ASGI app and the function
    that closes the database."""
    memory = Memory.open(db, embedder=embedder if embedder is not None else False)
    try:
        state = ServerState.open(ServerConfig(db=os.fspath(db), auth=False, mcp=False,
                                              embedder=embedder), memory.store)
    except BaseException:
        memory.close()
        raise

    async def home(request: Any) -> RedirectResponse:
        return RedirectResponse(f"{UI_PATH}/", status_code=303)

    app = Starlette(routes=[Route("/", home),
                            Mount(UI_PATH, build_ui(state, UI_PATH, local_memory=memory,
                                                    local_tenant=tenant))])

    def close() -> None:
        state.close()
        memory.close()

    return HostGuard(app), close
