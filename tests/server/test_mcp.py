"""The MCP server through the official MCP client: stdio (``remem mcp`` as a child process)
and streamable HTTP (``/mcp`` of a real server on loopback), tools scoped by key or tenant."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.testing.server import ThreadedServer

TOOLS = {"add_memory", "search_memories", "get_memory", "list_memories", "update_memory",
         "delete_memory", "memory_history", "undo_memory_change", "list_namespaces"}


def _payload(result: Any) -> Any:
    assert not result.is_error, result
    return json.loads(result.content[0].text)


def _texts(found: dict[str, Any]) -> list[str]:
    return [hit["memory"]["text"] for hit in found["hits"]]


async def _script(client: Client) -> dict[str, Any]:
    """Add, search, read, update, list, delete, undo through the tools; what each returned."""
    names = {tool.name for tool in (await client.list_tools()).tools}
    added = _payload(await client.call_tool(
        "add_memory", {"messages": "Alice drinks green tea", "user_id": "alice"}))
    memory_id = added["changes"][0]["memory"]["id"]
    found = _payload(await client.call_tool("search_memories",
                                            {"query": "green tea", "user_id": "alice"}))
    got = _payload(await client.call_tool("get_memory", {"memory_id": memory_id}))
    updated = _payload(await client.call_tool(
        "update_memory", {"memory_id": memory_id, "content": "Alice drinks oolong tea",
                          "reason": "she switched"}))
    namespaces = _payload(await client.call_tool("list_namespaces", {"prefix": ["memories"]}))
    listed = _payload(await client.call_tool("list_memories", {"user_id": "alice"}))
    deleted = _payload(await client.call_tool("delete_memory", {"memory_id": memory_id}))
    after = _payload(await client.call_tool("search_memories",
                                             {"query": "tea", "user_id": "alice"}))
    history = _payload(await client.call_tool("memory_history", {"memory_id": memory_id}))
    undone = _payload(await client.call_tool("undo_memory_change",
                                             {"event_id": history["events"][-1]["id"]}))
    restored = _payload(await client.call_tool("search_memories",
                                                {"query": "tea", "user_id": "alice"}))
    missing = await client.call_tool("update_memory", {"memory_id": "mem_nope", "content": "x"})
    bad = await client.call_tool("search_memories", {"query": "tea", "limit": 0})
    return {"tools": names, "found": _texts(found),
            "found_id": found["hits"][0]["memory"]["id"] == memory_id,
            "got": got["text"], "updated": updated["changes"][0]["memory"]["text"],
            "namespaces": namespaces["namespaces"],
            "listed": [m["text"] for m in listed["memories"]],
            "deleted": deleted["changes"][0]["op"], "after": after["hits"],
            "history": [(e["op"], e["actor"], e["reason"]) for e in history["events"]],
            "undone": undone["changes"][0]["op"], "restored": _texts(restored),
            "missing": (missing.is_error, missing.content[0].text),
            "bad": (bad.is_error, bad.content[0].text)}


def _check(observed: dict[str, Any]) -> None:
    assert observed["tools"] == TOOLS
    assert observed["found"] == ["Alice drinks green tea"] and observed["found_id"]
    assert observed["got"] == "Alice drinks green tea"
    assert observed["updated"] == "Alice drinks oolong tea"
    assert observed["namespaces"] == [["memories", "user", "alice"]]
    assert observed["listed"] == ["Alice drinks oolong tea"]
    assert observed["deleted"] == "invalidate" and observed["after"] == []
    assert observed["history"] == [("add", "mcp", "stored as given"),
                                   ("update", "mcp", "she switched"), ("invalidate", "mcp", "")]
    assert observed["undone"] == "restore"
    assert observed["restored"] == ["Alice drinks oolong tea"]
    is_error, text = observed["missing"]
    assert is_error and "NotFoundError" in text and "mem_nope" in text
    is_error, text = observed["bad"]
    assert is_error and "InvalidInputError" in text and "limit:" in text


@pytest.mark.slow
def test_stdio_transport(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "remem", "mcp", "--db", str(db), "--embedder", "fake", "--tenant", "acme"])

    async def run() -> dict[str, Any]:
        async with Client(params) as client:
            return await asyncio.wait_for(_script(client), 60)

    _check(asyncio.run(run()))
    # the tools wrote under the tenant's prefix of the database
    from remem.store import open_store

    with open_store(db) as store:
        assert store.list_namespaces(prefix=("tenants", "acme", "memories"), max_depth=3) == [
            ("tenants", "acme", "memories")]
        assert store.list_namespaces(prefix=("memories",)) == []


@contextlib.asynccontextmanager
async def _http_client(url: str, token: str, tenant: str | None = None
                       ) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    if tenant is not None:
        headers["X-Remem-Tenant"] = tenant
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            Client(streamable_http_client(url + "/mcp", http_client=http)) as client:
        yield client


def test_streamable_http_transport_scoped_by_key() -> None:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder()))
    keys = app.state.remem.keys
    alpha, beta = keys.create("alpha")[0], keys.create("beta")[0]
    reader = keys.create("alpha", read_only=True)[0]

    async def run(url: str) -> tuple[dict[str, Any], Any, Any, Any]:
        async with _http_client(url, alpha) as client:
            observed = await _script(client)
            _payload(await client.call_tool("add_memory", {"messages": "alpha secret",
                                                           "user_id": "alice"}))
        async with _http_client(url, beta) as client:
            other = _payload(await client.call_tool("search_memories",
                                                    {"query": "alpha secret",
                                                     "user_id": "alice"}))
            spaces = _payload(await client.call_tool("list_namespaces", {}))
        async with _http_client(url, reader) as client:
            refused = await client.call_tool("add_memory", {"messages": "x",
                                                            "user_id": "alice"})
            readable = _payload(await client.call_tool("search_memories",
                                                       {"query": "alpha secret",
                                                        "user_id": "alice"}))
        return observed, (other, spaces), refused, readable

    with ThreadedServer(app) as server:
        observed, (other, spaces), refused, readable = asyncio.run(run(server.url))
        unauthenticated = httpx.post(server.url + "/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                                "method": "tools/list"})
    app.state.remem.close()
    _check(observed)
    assert other["hits"] == [] and spaces == {"namespaces": []}
    assert refused.is_error and "read-only" in refused.content[0].text
    assert _texts(readable)[0] == "alpha secret"
    assert unauthenticated.status_code == 401
    assert unauthenticated.json()["error"] == "unauthorized"


def test_an_admin_key_names_the_tenant_over_http_as_in_the_api() -> None:
    """``X-Remem-Tenant`` over MCP follows the HTTP API's rule: an admin key acts for the
    tenant it names; any other key sending it, or a bad name, is refused before any tool."""
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder()))
    keys = app.state.remem.keys
    alpha, beta = keys.create("alpha")[0], keys.create("beta")[0]
    admin = keys.create("ops", admin=True)[0]

    async def run(url: str) -> tuple[Any, Any, Any]:
        async with _http_client(url, alpha) as client:
            _payload(await client.call_tool("add_memory", {"messages": "alpha secret",
                                                           "user_id": "alice"}))
        async with _http_client(url, admin, tenant="alpha") as client:
            as_alpha = _payload(await client.call_tool(
                "search_memories", {"query": "alpha secret", "user_id": "alice"}))
            _payload(await client.call_tool("add_memory", {"messages": "ops note for alpha",
                                                           "user_id": "alice"}))
        async with _http_client(url, admin) as client:
            own = _payload(await client.call_tool(
                "search_memories", {"query": "alpha secret", "user_id": "alice"}))
        async with _http_client(url, alpha) as client:
            listed = _payload(await client.call_tool("list_memories", {"user_id": "alice"}))
        return as_alpha, own, listed

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with ThreadedServer(app) as server:
        as_alpha, own, listed = asyncio.run(run(server.url))
        refused = httpx.post(server.url + "/mcp", json=call, headers={
            "Authorization": f"Bearer {beta}", "X-Remem-Tenant": "alpha"})
        bad = httpx.post(server.url + "/mcp", json=call, headers={
            "Authorization": f"Bearer {admin}", "X-Remem-Tenant": "../alpha"})
    app.state.remem.close()
    assert _texts(as_alpha) == ["alpha secret"] and own["hits"] == []
    assert sorted(m["text"] for m in listed["memories"]) == ["alpha secret",
                                                             "ops note for alpha"]
    assert refused.status_code == 403 and refused.json()["error"] == "permission_denied"
    assert "only an admin key" in refused.json()["message"]
    assert bad.status_code == 422 and "X-Remem-Tenant" in bad.json()["message"]


def test_forget_memories_is_opt_in_and_undoable() -> None:
    from remem.server.mcp import FORGET_TOOL, MCP_TOOLS, build_mcp
    from remem.server.state import Principal

    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    state = app.state.remem
    for text in ("Has a cat", "Lives in Porto"):
        state.memory_for(Principal("acme")).add(text, user_id="alice", infer=False)
    plain = build_mcp(state, lambda ctx: Principal("acme"))
    opted = build_mcp(state, lambda ctx: Principal("acme"), tools=(*MCP_TOOLS, FORGET_TOOL))
    reader = build_mcp(state, lambda ctx: Principal("acme", read_only=True),
                       tools=(*MCP_TOOLS, FORGET_TOOL))

    async def run() -> tuple[set[str], Any, Any, Any, Any]:
        async with Client(plain) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
        async with Client(reader) as client:
            refused = await client.call_tool("forget_memories", {"user_id": "alice"})
        async with Client(opted) as client:
            forgot = _payload(await client.call_tool("forget_memories",
                                                     {"user_id": "alice", "reason": "asked"}))
            left = _payload(await client.call_tool("list_memories", {"user_id": "alice"}))
            await client.call_tool("undo_memory_change",
                                   {"event_id": forgot["changes"][0]["event_id"]})
            back = _payload(await client.call_tool("list_memories", {"user_id": "alice"}))
        return names, refused, forgot, left, back

    names, refused, forgot, left, back = asyncio.run(run())
    state.close()
    assert "forget_memories" not in names
    assert refused.is_error and "read-only" in refused.content[0].text
    assert [c["op"] for c in forgot["changes"]] == ["invalidate", "invalidate"]
    assert left["memories"] == []
    assert sorted(m["text"] for m in back["memories"]) == ["Has a cat", "Lives in Porto"]
