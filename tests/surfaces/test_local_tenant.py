"""One local tenant: on one SQLite file, what ``remem add`` writes is what ``Memory.open``,
``remem mcp`` (stdio), ``remem serve --no-auth`` and ``remem ui`` show, all without flags:
the database's own data, no namespace prefix. ``--tenant NAME`` selects a server tenant
everywhere; keyed tenants never see the database's own data (nor each other's); data an
earlier ``--no-auth`` server kept under the tenant ``local`` is announced, not lost."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient
from mcp import Client as McpClient
from mcp import StdioServerParameters

from remem.api import Memory
from remem.cli import cli
from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.server.state import LEGACY_LOCAL_TENANT, legacy_local_notice
from remem.store import open_store
from remem.ui.app import build_local_app

TEXTS = ["Alice drinks green tea", "Alice lives in Lyon", "Alice plays the cello"]
#: no chat model: a plain `remem add` stores the text as given
ENV = {**os.environ, "REMEM_LLM_MODEL": "", "REMEM_LLM_PROVIDER": ""}


def _cli(*args: str) -> Result:
    result = CliRunner(env={"REMEM_LLM_MODEL": "", "REMEM_LLM_PROVIDER": ""}).invoke(
        cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def _mcp_list(db: Path, *flags: str) -> list[str]:
    """The texts `remem mcp --db DB [flags]` lists for user alice, over stdio."""
    params = StdioServerParameters(command=sys.executable, env=ENV, args=[
        "-m", "remem", "mcp", "--db", str(db), "--embedder", "fake", *flags])

    async def run() -> list[str]:
        async with McpClient(params) as client:
            result = await client.call_tool("list_memories", {"user_id": "alice"})
            assert not result.is_error, result
            listed = json.loads(result.content[0].text)
            return sorted(m["text"] for m in listed["memories"])

    return asyncio.run(asyncio.wait_for(run(), 60))


def _mcp_stderr(db: Path) -> str:
    """What `remem mcp --db DB` says on stderr when it starts (its stdin at once closed)."""
    done = subprocess.run([sys.executable, "-m", "remem", "mcp", "--db", str(db),
                           "--embedder", "fake"], input="", capture_output=True, text=True,
                          env=ENV, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stderr


def _http_list(db: Path, **config: Any) -> list[str]:
    app = create_app(ServerConfig(db=str(db), mcp=False, embedder=FakeEmbedder(), **config))
    try:
        with TestClient(app, base_url="http://127.0.0.1") as http:
            page = http.post("/v1/memories/list", json={"user_id": "alice"})
            assert page.status_code == 200, page.text
            return sorted(m["text"] for m in page.json()["memories"])
    finally:
        app.state.remem.close()


def _ui_page(db: Path, tenant: str = "") -> str:
    app, close = build_local_app(db, FakeEmbedder(), tenant=tenant)
    try:
        page = TestClient(app, base_url="http://127.0.0.1").get("/ui/memories")
        assert page.status_code == 200
        return page.text
    finally:
        close()


@pytest.mark.slow
def test_every_local_interface_shows_what_the_cli_added(tmp_path: Path) -> None:
    db = tmp_path / "one.db"
    for text in TEXTS:
        _cli("add", text, "--user", "alice", "--db", str(db), "--embedder", "fake")
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        assert sorted(m.text for m in memory.get_all(user_id="alice").memories) == TEXTS
    assert _mcp_list(db) == TEXTS
    assert _http_list(db, auth=False) == TEXTS
    page = _ui_page(db)
    assert all(text in page for text in TEXTS)
    # the header names what the page shows: the database's own data, no tenant
    assert re.search(r'id="tenant"[^>]*data-tenant=""', page)
    assert "the database's own data" in page
    # and the CLI lists it as it always did
    listed = json.loads(_cli("list", "--user", "alice", "--db", str(db), "--embedder", "fake",
                             "--json").stdout)
    assert sorted(m["text"] for m in listed["memories"]) == TEXTS


@pytest.mark.slow
def test_tenant_selects_a_server_tenant_everywhere(tmp_path: Path) -> None:
    db = tmp_path / "tenants.db"
    _cli("add", TEXTS[0], "--user", "alice", "--db", str(db), "--embedder", "fake")
    _cli("add", "a note of tenant acme", "--user", "alice", "--tenant", "acme", "--db", str(db),
         "--embedder", "fake")
    assert _mcp_list(db, "--tenant", "acme") == ["a note of tenant acme"]
    assert _mcp_list(db) == [TEXTS[0]]
    page = _ui_page(db, tenant="acme")
    assert "a note of tenant acme" in page and TEXTS[0] not in page
    assert re.search(r'id="tenant"[^>]*data-tenant="acme"', page)


def test_keyed_tenants_never_see_the_databases_own_data(tmp_path: Path) -> None:
    db = tmp_path / "keyed.db"
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        memory.add("the operator's own note", user_id="alice", infer=False)
    app = create_app(ServerConfig(db=str(db), mcp=False, embedder=FakeEmbedder()))
    state = app.state.remem
    acme, _ = state.keys.create("acme")
    admin, _ = state.keys.create("ops", admin=True)
    try:
        with TestClient(app, base_url="http://127.0.0.1") as http:
            for token, tenant in ((acme, None), (admin, None), (admin, "acme")):
                headers = {"Authorization": f"Bearer {token}"}
                if tenant is not None:
                    headers["X-Remem-Tenant"] = tenant
                page = http.post("/v1/memories/list", json={"user_id": "alice"},
                                 headers=headers)
                assert page.status_code == 200 and page.json()["memories"] == [], page.text
                found = http.post("/v1/store/search", json={"namespace_prefix": []},
                                  headers=headers)
                assert "the operator's own note" not in found.text
            # an admin key cannot name the database's own data as a tenant
            for name in ("", " "):
                refused = http.post("/v1/memories/list", json={"user_id": "alice"},
                                    headers={"Authorization": f"Bearer {admin}",
                                             "X-Remem-Tenant": name})
                assert refused.status_code == 422, refused.text
                assert "X-Remem-Tenant" in refused.json()["message"]
    finally:
        state.close()


@pytest.mark.slow
def test_data_of_the_old_local_tenant_is_announced(tmp_path: Path) -> None:
    """Earlier `--no-auth` servers and `remem mcp` kept their data under the tenant
    `local`: the keyless interfaces say so on start, and --tenant local still shows it."""
    db = tmp_path / "legacy.db"
    _cli("add", "from an old mcp", "--user", "alice", "--tenant", LEGACY_LOCAL_TENANT,
         "--db", str(db), "--embedder", "fake")
    with open_store(db) as store:
        notice = legacy_local_notice(store)
    assert notice is not None and "--tenant local" in notice
    assert "--tenant local" in _mcp_stderr(db)
    assert _mcp_list(db) == []
    assert _mcp_list(db, "--tenant", LEGACY_LOCAL_TENANT) == ["from an old mcp"]
    # copying its memories over, as the notice says, makes them the database's own
    exported = _cli("export", "--tenant", "local", "-", "--db", str(db), "--embedder", "fake")
    imported = CliRunner().invoke(cli, ["import", "-", "--db", str(db), "--embedder", "fake"],
                                  input=exported.stdout)
    assert imported.exit_code == 0, imported.output
    assert _http_list(db, auth=False) == ["from an old mcp"]
    with open_store(tmp_path / "fresh.db") as store:
        assert legacy_local_notice(store) is None
