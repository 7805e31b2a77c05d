"""Issue 16, the server's edge: DNS rebinding (defect 2), the key before the body (10),
repeated keys (10), unknown MCP tool arguments (10), a revoked key over stdio MCP (8) and
rate limits. Real uvicorn servers on loopback; MCP through the official client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from mcp.client import Client

from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp, stdio_resolver
from remem.server.netguard import host_name, is_loopback
from remem.server.state import Principal
from remem.testing.server import ThreadedServer

ADD = {"messages": "likes tea", "user_id": "u", "infer": False}


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("127.255.255.254", True), ("localhost", True),
    ("LOCALHOST.", True), ("::1", True), ("[::1]", True), ("::ffff:127.0.0.1", True),
    ("0.0.0.0", False), ("10.0.0.1", False), ("evil.example", False), ("127.0.0.1.nip.io", False),
    ("localhost.evil.example", False), ("", False),
])
def test_one_loopback_definition(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_host_name_strips_the_port() -> None:
    assert [host_name(h) for h in ("a.b:80", "[::1]:8000", "127.0.0.1", "[::1]")] == [
        "a.b", "::1", "127.0.0.1", "::1"]


@pytest.mark.parametrize("auth", [False, True])
@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2"])
def test_rebinding_refused_on_every_route(auth: bool, bind: str) -> None:
    """Was: with --no-auth, ``Host: evil.example`` added and searched memories (200); only
    /mcp checked Host, and not for --host 127.0.0.2."""
    app = create_app(ServerConfig(db=":memory:", auth=auth, host=bind))
    token = app.state.remem.keys.create("acme")[0]
    key = {"Authorization": f"Bearer {token}"}
    with ThreadedServer(app) as server, httpx.Client(base_url=server.url, headers=key) as http:
        for method, path, body in [("POST", "/v1/memories", ADD),
                                   ("POST", "/v1/memories/search", {"query": "tea"}),
                                   ("GET", "/healthz", None), ("GET", "/readyz", None),
                                   ("GET", "/metrics", None), ("GET", "/openapi.json", None),
                                   ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1,
                                                     "method": "tools/list"})]:
            bad = {**body, "messages": "rebound"} if body is ADD else body
            foreign = http.request(method, path, json=bad, headers={"Host": "evil.example"})
            assert foreign.status_code == 421, (path, foreign.text)
            assert foreign.json()["error"] == "misdirected"
            origin = http.request(method, path, json=bad,
                                  headers={"Origin": "http://evil.example"})
            assert origin.status_code == 403, (path, origin.text)
            for host in ("localhost", f"127.0.0.2:{server.port}", f"[::1]:{server.port}"):
                ours = http.request(method, path, json=body, headers={
                    "Host": host, "Origin": f"http://{host}",
                    "Accept": "application/json, text/event-stream"})
                assert ours.status_code < 400, (path, host, ours.text)
        listed = http.post("/v1/memories/list", json={"user_id": "u"}).json()["memories"]
        # only the requests addressed to this server added memories
        assert [m["content"] for m in listed] == ["likes tea"]
    app.state.remem.close()


def test_a_keyed_server_on_all_interfaces_answers_any_host() -> None:
    app = create_app(ServerConfig(db=":memory:", host="0.0.0.0"))
    token = app.state.remem.keys.create("acme")[0]
    with ThreadedServer(app) as server:
        r = httpx.post(server.url + "/v1/memories/search", json={"query": "x"}, headers={
            "Host": "memory.example", "Origin": "https://app.example",
            "Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    app.state.remem.close()


@pytest.fixture(scope="module")
def keyed() -> Any:
    app = create_app(ServerConfig(db=":memory:"))
    token = app.state.remem.keys.create("acme")[0]
    with ThreadedServer(app) as server:
        yield server.url, token
    app.state.remem.close()


@pytest.mark.parametrize("body", ["{not json", '{"messages": ', json.dumps({"user_id": 3})])
def test_no_key_is_401_before_a_bad_body(keyed: tuple[str, str], body: str) -> None:
    url, token = keyed
    r = httpx.post(url + "/v1/memories", content=body,
                   headers={"content-type": "application/json"})
    assert r.status_code == 401, r.text  # was 400 invalid_json
    r = httpx.post(url + "/v1/memories", content=body, headers={
        "content-type": "application/json", "Authorization": "Bearer rk_000000000000_" + "x" * 43})
    assert r.status_code == 401, r.text
    r = httpx.post(url + "/v1/memories", content=body, headers={
        "content-type": "application/json", "Authorization": f"Bearer {token}"})
    assert r.status_code in (400, 422), r.text


@pytest.mark.parametrize("path", ["/mcp", "/v1/memories"])
def test_two_authorization_headers_are_a_400(keyed: tuple[str, str], path: str) -> None:
    """Was: /mcp authorised with the last header while the tool used the first."""
    url, token = keyed
    with httpx.Client() as http:
        request = http.build_request("POST", url + path, json={"jsonrpc": "2.0", "id": 1,
                                                               "method": "tools/list"},
                                     headers={"Accept": "application/json, text/event-stream"})
        request.headers = httpx.Headers([*request.headers.multi_items(),
                                         ("Authorization", "Bearer rk_bad"),
                                         ("Authorization", f"Bearer {token}")])
        r = http.send(request)
    assert r.status_code == 400, r.text
    assert "authorization" in r.json()["message"]


def test_unknown_tool_arguments_are_a_readable_tool_error() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"))

    async def run() -> tuple[Any, Any, Any]:
        async with Client(server) as client:
            typo = await client.call_tool("add_memory", {"messages": "x", "userid": "bob",
                                                         "infer": False})
            listed = await client.call_tool("list_namespaces", {"prefx": ["a"]})
            fine = await client.call_tool("add_memory", {"messages": "x", "user_id": "bob",
                                                         "infer": False})
            return typo, listed, fine

    typo, listed, fine = asyncio.run(run())
    app.state.remem.close()
    message = typo.content[0].text
    assert typo.is_error and "unknown argument 'userid'" in message, message
    assert "user_id" in message and "://" not in message  # names the fix, no links
    assert listed.is_error and "unknown argument 'prefx'" in listed.content[0].text
    assert not fine.is_error


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_stdio_mcp_rechecks_a_revoked_key() -> None:
    """Was: ``remem mcp --api-key`` checked the key once at start; a revoked key worked on."""
    app = create_app(ServerConfig(db=":memory:", mcp=False, key_cache_seconds=2.0))
    state = app.state.remem
    token, info = state.keys.create("acme")
    key = state.keys.verify(token)
    assert key is not None
    clock = _Clock()
    server = build_mcp(state, stdio_resolver(state, Principal(key.tenant, key.read_only,
                                                              key.key_id), clock=clock))

    async def call() -> Any:
        async with Client(server) as client:
            return await client.call_tool("list_namespaces", {})

    assert not asyncio.run(call()).is_error
    state.keys.revoke(info.key_id)
    clock.now = 1.0  # within the cache: still trusted
    assert not asyncio.run(call()).is_error
    clock.now = 2.5
    refused = asyncio.run(call())
    assert refused.is_error and "revoked" in refused.content[0].text
    app.state.remem.close()


def test_validation_messages_read_without_pydantic_prefix() -> None:
    from fastapi.testclient import TestClient

    from remem.embed import FakeEmbedder
    from remem.server import ServerConfig, create_app

    app = create_app(ServerConfig(db=":memory:", auth=False, embedder=FakeEmbedder(),
                                  mcp=False))
    with TestClient(app) as client:
        r = client.post("/v1/threads", json={"thread_id": "a/b"})
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == "body.thread_id" and "/" in body["message"]
    assert "Value error" not in body["message"]
    assert all("Value error" not in d["message"] for d in body["details"])
