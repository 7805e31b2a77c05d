"""``remem ui``: the inspector on a local file, one user, no key, on 127.0.0.1 only; and
``remem serve --no-ui``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from remem.api import Memory
from remem.cli import cli
from remem.embed import FakeEmbedder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.slow
def test_remem_ui_serves_a_local_file_without_a_key(tmp_path: Path) -> None:
    db = tmp_path / "local.db"
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        memory.add("the kettle is in the left cupboard", user_id="me", infer=False)
    port = _free_port()
    log = (tmp_path / "ui.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "remem", "ui", "--db", str(db), "--embedder", "fake",
         "--port", str(port)], stdout=subprocess.DEVNULL, stderr=log,
        env={**os.environ, "REMEM_LLM_PROVIDER": ""})
    try:
        url = f"http://127.0.0.1:{port}/ui/memories"
        page = None
        for _ in range(200):  # the child imports and binds; wait for it (bounded)
            if process.poll() is not None:
                break
            try:
                page = httpx.get(url, params={"q": "kettle"}, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        assert page is not None, (tmp_path / "ui.log").read_text()
        assert page.status_code == 200
        # the whole file: memories written by Memory.open, not under a server tenant
        assert "the kettle is in the left cupboard" in page.text
        assert 'id="logout"' not in page.text and 'data-signal="keyword"' in page.text
        # a page asking for another host name is refused (DNS rebinding)
        rebound = httpx.get(url, headers={"Host": "evil.example"}, timeout=5)
        assert rebound.status_code == 421
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


def test_serve_no_ui_has_no_inspector(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from remem.cli.serve import _build_app

    settings = {"db": str(tmp_path / "s.db"), "auth": True, "max_body_bytes": 1 << 20,
                "embedder": "fake", "mcp": False, "host": "127.0.0.1", "store_threads": 2}
    app = _build_app({**settings, "ui": False})  # (with ui: every other test of the inspector)
    try:
        client = TestClient(app, base_url="http://127.0.0.1")
        assert client.get("/ui/memories", follow_redirects=False).status_code == 404
    finally:
        app.state.remem.close()
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert "--ui / --no-ui" in result.output


def test_the_local_inspector_adds_no_items_to_the_database(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from remem.ui.app import build_local_app

    db = tmp_path / "mine.db"
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        memory.add("tea", user_id="me", infer=False)
        before = memory.store.list_namespaces(limit=1000)
    app, close = build_local_app(db, FakeEmbedder())
    try:
        browser = TestClient(app, base_url="http://127.0.0.1")
        assert browser.get("/", follow_redirects=True).status_code == 200
        page = browser.get("/ui/memories", params={"q": "tea"})
        assert page.status_code == 200 and ">tea</a>" in page.text
        assert browser.get("/ui/dashboard").status_code == 200
    finally:
        close()
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        assert memory.store.list_namespaces(limit=1000) == before
