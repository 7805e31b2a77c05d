"""The MCP registrar (:mod:`remem.server.mcp_registrar`) registers every tool of every family
the same way: the checks here run over all the tools a server can list, so a family's tools
cannot drift from the others (as the graph tools once did: their copy of the recipe lacked
the context annotation, so they listed a ``ctx`` argument and, over HTTP, never saw the
caller's key)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from mcp import Client

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.server.mcp import FORGET_TOOL, MCP_TOOLS, build_mcp
from remem.server.state import Principal, ServerState
from remem.testing.server import ThreadedServer
from tests.memory_support import rule_model

#: every tool switch build_mcp has, on
EVERY_TOOL: dict[str, Any] = {
    "tools": (*MCP_TOOLS, FORGET_TOOL), "procedural": True, "files": True, "context": True,
    "blocks_agent": "a1", "archival_user": "u1", "conversation_user": "u1", "graph": True,
    "block_admin": True}


@pytest.fixture
def state() -> Any:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False,
                                  llm=rule_model()))  # a model: submit and ingest are served
    yield app.state.remem
    app.state.remem.close()


def _listed(state: ServerState) -> list[Any]:
    server = build_mcp(state, lambda ctx: Principal("acme"), **EVERY_TOOL)

    async def listed() -> list[Any]:
        async with Client(server) as client:
            return list((await client.list_tools()).tools)

    return asyncio.run(listed())


def test_no_tool_takes_the_call_context_as_an_argument(state: ServerState) -> None:
    tools = _listed(state)
    assert len(tools) == 40  # every family's tools, list_namespaces included
    for tool in tools:
        assert "ctx" not in tool.input_schema["properties"], tool.name
        assert "$defs" not in tool.input_schema, tool.name


def test_every_tool_refuses_an_argument_it_does_not_declare(state: ServerState) -> None:
    server = build_mcp(state, lambda ctx: Principal("acme"), **EVERY_TOOL)

    async def calls() -> dict[str, Any]:
        async with Client(server) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return {name: await client.call_tool(name, {"user_idd": "alice"})
                    for name in names}

    for name, reply in asyncio.run(calls()).items():
        assert reply.is_error, name
        assert "unknown argument 'user_idd'" in reply.content[0].text, name


def test_graph_tools_act_for_the_callers_key_over_http() -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), auth=True),
                     mcp_tools={"graph": True})
    state: ServerState = app.state.remem
    token = state.keys.create("acme")[0]
    state.memory_for(Principal("acme")).graph(user_id="alice").patch_profile(
        [{"op": "add", "path": "/basic_info/age", "value": 34}])

    async def call(url: str) -> Any:
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                   timeout=60))  # httpx's 5 s is short on a loaded CI box
            client = await stack.enter_async_context(
                Client(streamable_http_client(url + "/mcp", http_client=http)))
            return await client.call_tool("get_profile", {"user_id": "alice"})

    try:
        with ThreadedServer(app) as served:
            reply = asyncio.run(call(served.url))
        assert not reply.is_error, reply.content[0].text
        assert json.loads(reply.content[0].text)["topics"]["basic_info"]["age"]["value"] == "34"
    finally:
        state.close()
