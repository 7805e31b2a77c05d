"""Helpers of the inspector's tests (tests/ui/test_*.py): a server on a real SQLite file,
keys, and logging in through the login form as a browser would."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.llm.base import ChatModel
from remem.server import ServerConfig, create_app
from remem.server.state import Principal, ServerState
from remem.threads.scoped import ScopedThreads

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class Server:
    """An app on a SQLite file, its state, and a way to get logged-in browsers."""

    app: Any
    state: ServerState

    def browser(self, *, https: bool = False) -> TestClient:
        """A fresh client (its own cookie jar) on a loopback address."""
        scheme = "https" if https else "http"
        return TestClient(self.app, base_url=f"{scheme}://127.0.0.1")

    def key(self, tenant: str, *, read_only: bool = False) -> str:
        """A new API key of ``tenant``."""
        return self.state.keys.create(tenant, read_only=read_only)[0]

    def memory(self, tenant: str) -> Memory:
        """The tenant's Memory, as the server's routes see it."""
        return self.state.memory_for(Principal(tenant))

    def threads(self, tenant: str) -> ScopedThreads:
        """The tenant's thread view."""
        return self.state.threads_for(Principal(tenant))

    def logged_in(self, tenant: str, *, read_only: bool = False) -> TestClient:
        """A browser logged in with a new key of ``tenant``."""
        browser = self.browser()
        response = login(browser, self.key(tenant, read_only=read_only))
        assert response.status_code == 303, response.text
        return browser


@contextmanager
def server(*, auth: bool = True, llm: ChatModel | None = None) -> Iterator[Server]:
    """A server on a fresh SQLite file (vectors from the fake embedder; ``llm``: its chat
    model, a scripted one in tests)."""
    with tempfile.TemporaryDirectory(prefix="remem-ui-") as directory:
        app = create_app(ServerConfig(db=os.path.join(directory, "ui.db"), auth=auth,
                                      embedder=FakeEmbedder(), mcp=False, llm=llm,
                                      key_cache_seconds=0))
        try:
            yield Server(app, app.state.remem)
        finally:
            app.state.remem.close()


def csrf_of(html: str) -> str:
    """The CSRF token of the first form of a page."""
    found = _CSRF.search(html)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)


def login(browser: TestClient, key: str, next_path: str = "/ui/memories") -> Any:
    """Open the login page and submit ``key`` as a person would (not following the
    redirect)."""
    page = browser.get("/ui/login")
    assert page.status_code == 200, page.text
    return browser.post("/ui/login", data={"csrf_token": csrf_of(page.text), "api_key": key,
                                           "next": next_path}, follow_redirects=False)
