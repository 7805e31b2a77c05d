"""Defect 4 of issue 16: ``/readyz`` answered 503 after 95 s when PostgreSQL was down, and
named the database host and port. It now answers within ``ready_timeout`` with neither
(the conftest checks every error body for hosts and ports)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx

from remem.server import ServerConfig, create_app
from remem.testing.server import ThreadedServer


def test_readyz_with_postgres_down(local_postgres_factory: Callable[[], Any]) -> None:
    pg = local_postgres_factory()
    app = create_app(ServerConfig(db=pg.dsn(), mcp=False, auth=False, ready_timeout=1.0))
    with ThreadedServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        ready = http.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
        pg.stop(mode="immediate")
        down = http.get("/readyz")
        assert down.status_code == 503, down.text
        assert down.json()["error"] == "not_ready"
        message = down.json()["message"]
        assert "within 1 s" in message or "failed" in message, message
        again = http.get("/readyz")  # a hung check is not waited for twice
        assert again.status_code == 503, again.text
    # at most one readiness check ever waits on the database at a time
    assert sum(t.name == "remem-readyz" for t in threading.enumerate()) <= 1
    threading.Thread(target=app.state.remem.close, daemon=True).start()
