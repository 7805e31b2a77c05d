"""Defect 3 of issue 16: store failures answered with the database file's path. A real
failure: the SQLite file is overwritten under a running server ("file is not a database",
whose message names the file). Every route family, /readyz and an MCP tool answer with an
error id the log also has, and no path (the conftest checks every error body)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp.client import Client

from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import LOCAL_TENANT, Principal

PROBES: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/v1/store/items", {"params": {"namespace": "a", "key": "k"}}),
    ("PUT", "/v1/store/items", {"json": {"namespace": ["a"], "key": "k2", "value": {}}}),
    ("POST", "/v1/store/search", {"json": {"query": "x"}}),
    ("GET", "/v1/store/namespaces", {}),
    ("POST", "/v1/memories", {"json": {"messages": "tea", "user_id": "u", "infer": False}}),
    ("POST", "/v1/memories/search", {"json": {"query": "tea", "user_id": "u"}}),
    ("POST", "/v1/memories/list", {"json": {"user_id": "u"}}),
    ("POST", "/v1/threads/list", {"json": {}}),
]


def _corrupt(directory: Path) -> None:
    for name in os.listdir(directory):
        with open(directory / name, "r+b") as f:
            f.write(b"\x13" * 4096)


def test_store_failures_name_no_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = os.fspath(tmp_path / "secret-place.db")
    app = create_app(ServerConfig(db=db, mcp=False, auth=False))
    state = app.state.remem
    mcp = build_mcp(state, lambda ctx: Principal(LOCAL_TENANT))
    with TestClient(app) as http, caplog.at_level(logging.WARNING, logger="remem.server"):
        assert http.put("/v1/store/items", json={"namespace": ["a"], "key": "k",
                                                 "value": {}}).status_code == 200
        assert http.post("/v1/threads", json={"thread_id": "t"}).status_code < 300
        _corrupt(tmp_path)
        for method, path, kwargs in PROBES:
            r = http.request(method, path, **kwargs)
            assert r.status_code == 503, (path, r.text)  # was: the message named the file
            body = r.json()
            assert body["error"] == "store_unavailable" and "secret-place" not in r.text
            incident = re.search(r"error id ([0-9a-f]{12})", body["message"])
            assert incident, body
            assert any(incident.group(1) in rec.getMessage() and "secret-place" in
                       rec.getMessage() for rec in caplog.records)
        ready = http.get("/readyz")
        assert ready.status_code == 503 and "secret-place" not in ready.text

        async def call() -> Any:
            async with Client(mcp) as client:
                return await client.call_tool("search_memories", {"query": "tea",
                                                                  "user_id": "u"})
        tool = asyncio.run(call())
    assert tool.is_error and "error id" in tool.content[0].text
    assert "secret-place" not in tool.content[0].text and "/" not in tool.content[0].text
    with contextlib.suppress(Exception):  # closing a store whose file was overwritten
        state.close()
