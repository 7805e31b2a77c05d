"""Defect 1 of issue 16: a write is acknowledged exactly when it committed, and a result
that cannot be encoded is a 500 with an error id, never a client error; keep-alive
survives it.

The unencodable data is real: a database written before the nesting limit existed holds a
memory whose metadata is nested 300 levels (written here into the SQLite file, as an
older remem left it). Every request runs on one keep-alive connection to a real uvicorn."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from remem.server import ServerConfig, create_app
from remem.testing.server import ThreadedServer


def _nest(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for _ in range(depth):
        value = {"a": value}
    return value


def _nested_json(depth: int) -> str:
    """``_nest(depth)`` as JSON text, written without recursion: encoding 950 levels with
    ``json.dumps`` needs as many stack frames, more than a test runner deep in its own
    stack (a pytest-xdist worker) has left below the recursion limit."""
    return '{"a":' * depth + '{"leaf":true}' + "}" * depth


def _poison(db: str, memory_id: str, depth: int = 300) -> None:
    """Give memory ``memory_id``'s stored value metadata nested ``depth`` levels."""
    with sqlite3.connect(db) as con:
        where = "key = ? AND json_extract(value, '$.type') = 'memory'"
        (raw,) = con.execute(f"SELECT value FROM items WHERE {where}", (memory_id,)).fetchone()
        value = json.loads(raw)
        value["metadata"] = _nest(depth)
        con.execute(f"UPDATE items SET value = ? WHERE {where}", (json.dumps(value), memory_id))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, Any, str]]:
    db = os.fspath(tmp_path / "old.db")
    first = create_app(ServerConfig(db=db, mcp=False, auth=False))
    with ThreadedServer(first) as server, httpx.Client(base_url=server.url) as http:
        added = http.post("/v1/memories", json={"messages": "likes tea", "user_id": "u",
                                                "infer": False})
        assert added.status_code == 200, added.text
        memory_id = added.json()["changes"][0]["memory"]["id"]
    first.state.remem.close()
    _poison(db, memory_id)
    app = create_app(ServerConfig(db=db, mcp=False, auth=False))
    with ThreadedServer(app) as server, httpx.Client(base_url=server.url) as http:
        yield http, app, memory_id
    app.state.remem.close()


def _ports(http: httpx.Client) -> set[int]:
    """The local ports of the client's open connections (one while keep-alive holds)."""
    pool = http._transport._pool  # type: ignore[attr-defined]
    return {conn._connection._network_stream.get_extra_info("socket").getsockname()[1]
            for conn in pool.connections if conn._connection is not None}


def test_update_of_unencodable_memory_answer_and_store_agree(
        served: tuple[httpx.Client, Any, str], caplog: pytest.LogCaptureFixture) -> None:
    """Was: 422 "Maximum serialization depth exceeded" although version 2 was saved, and the
    connection dropped. Now a 500 saying the update was saved (error id in the log) when it
    was, or a 4xx when nothing was written."""
    http, app, memory_id = served
    assert http.get("/healthz").status_code == 200
    before = _ports(http)
    with caplog.at_level(logging.ERROR, logger="remem.server"):
        r = http.patch(f"/v1/memories/{memory_id}", json={"content": "likes green tea"})
    memory = app.state.remem.memory_for(_local()).get(memory_id)
    if r.status_code == 500:
        body = r.json()
        assert body["error"] == "response_encoding", r.text
        assert "completed" in body["message"] and "saved" in body["message"]
        incident = body["message"].split()[2].rstrip(":")
        assert any(incident in rec.getMessage() for rec in caplog.records)
        assert (memory.content, memory.version) == ("likes green tea", 2)
    else:
        assert 400 <= r.status_code < 500, r.text
        assert (memory.content, memory.version) == ("likes tea", 1)
    # the connection was kept (uvicorn used to drop it after such an answer)
    assert http.get("/healthz").status_code == 200
    assert _ports(http) == before


def test_delete_of_unencodable_memory_answer_and_store_agree(
        served: tuple[httpx.Client, Any, str]) -> None:
    http, app, memory_id = served
    r = http.delete(f"/v1/memories/{memory_id}")
    current = app.state.remem.memory_for(_local()).get(memory_id).status == "current"
    if r.status_code == 200:
        assert not current
    elif r.status_code == 500:
        assert r.json()["error"] == "response_encoding" and not current, r.text
    else:
        assert 400 <= r.status_code < 500 and current, r.text
    assert http.get("/healthz").status_code == 200


def test_read_of_unencodable_data_is_500_not_a_client_error(
        served: tuple[httpx.Client, Any, str]) -> None:
    http, _, memory_id = served
    r = http.get(f"/v1/memories/{memory_id}")
    assert r.status_code == 500 and r.json()["error"] == "response_encoding", r.text
    r = http.post("/v1/memories/search", json={"query": "tea", "user_id": "u"})
    assert r.status_code == 500, r.text  # was 400 "nested too deeply" / 422
    assert http.get("/healthz").status_code == 200


def _local() -> Any:
    from remem.server.state import LOCAL_TENANT, Principal
    return Principal(LOCAL_TENANT)


@pytest.mark.parametrize("depth", [10, 59, 61, 64, 65, 300, 950])
def test_answer_and_store_agree_on_deep_metadata(depth: int, tmp_path: Path) -> None:
    """Whatever the status, a 2xx means stored and readable back, a 4xx means not stored."""
    app = create_app(ServerConfig(db=os.fspath(tmp_path / "d.db"), mcp=False, auth=False))
    with ThreadedServer(app) as server, httpx.Client(base_url=server.url) as http:
        body = json.dumps({"messages": f"deep {depth}", "user_id": "u", "infer": False,
                           "metadata": None})
        body = body.replace('"metadata": null', '"metadata": ' + _nested_json(depth))
        r = http.post("/v1/memories", content=body, headers={"content-type": "application/json"})
        listed = http.post("/v1/memories/list", json={"user_id": "u"})
        assert listed.status_code == 200, listed.text
        stored = listed.json()["memories"]
        if r.status_code == 200:
            assert [m["id"] for m in stored] == [r.json()["changes"][0]["memory"]["id"]]
        else:
            assert 400 <= r.status_code < 500 and stored == [], r.text
        assert http.get("/healthz").status_code == 200
    app.state.remem.close()


def test_each_phase_answers_for_itself() -> None:
    """A route's own failure, a library refusing a value, and a result the encoder refuses:
    each answered by what it is, on one keep-alive connection."""
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    done: list[str] = []

    @app.get("/probe/boom")
    def boom() -> None:
        raise RuntimeError("internals")

    @app.get("/probe/refused")
    def refused() -> None:
        raise ValueError("a library refuses this value")

    @app.get("/probe/unencodable", response_model=dict[str, Any])
    def unencodable() -> dict[str, Any]:
        done.append("work")
        return {"deep": _nest(400)}

    with ThreadedServer(app) as server, httpx.Client(base_url=server.url) as http:
        assert http.get("/healthz").status_code == 200
        before = _ports(http)
        r = http.get("/probe/boom")
        assert r.status_code == 500 and r.json()["error"] == "internal", r.text
        assert "internals" not in r.text
        r = http.get("/probe/refused")
        assert r.status_code == 422 and r.json()["error"] == "invalid_input", r.text
        r = http.get("/probe/unencodable")
        assert r.status_code == 500 and r.json()["error"] == "response_encoding", r.text
        assert done == ["work"]
        assert http.get("/healthz").status_code == 200
        assert _ports(http) == before
    app.state.remem.close()
