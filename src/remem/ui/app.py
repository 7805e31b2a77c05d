"""The inspector as an ASGI app, mounted by the server at ``/ui``."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from remem.server.state import ServerState
from remem.ui import routes_auth, routes_memories, routes_threads
from remem.ui.web import Inspector

__all__ = ["UI_PATH", "build_ui"]

#: where the server mounts the inspector
UI_PATH = "/ui"
_STATIC = Path(__file__).parent / "static"


def build_ui(state: ServerState, prefix: str = UI_PATH) -> FastAPI:
    """The inspector over ``state`` (mount it at ``prefix``): HTML pages, no OpenAPI."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.inspector = Inspector(state, prefix)
    app.state.inspector.install_handlers(app)
    app.include_router(routes_auth.router)
    app.include_router(routes_memories.router)
    app.include_router(routes_threads.router)
    app.mount("/static", StaticFiles(directory=_STATIC), name="static")
    return app
