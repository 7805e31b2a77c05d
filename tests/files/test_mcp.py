"""The file tools over MCP (``build_mcp(files=True)``), through the official client in
memory: same names and schemas as the agent tools, the caller's tenant, typed errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp import Client

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal


def test_file_tools_over_mcp() -> None:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    state = app.state.remem
    acme = Principal(tenant="acme", read_only=False, key_id="k1")
    reader = Principal(tenant="acme", read_only=True, key_id="k2")

    async def script(who: Principal) -> dict[str, Any]:
        server = build_mcp(state, lambda ctx: who, files=True)
        out: dict[str, Any] = {}
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            out["tools"] = sorted(tools)
            out["edit_schema"] = tools["edit_file"].input_schema
            out["write"] = await client.call_tool("write_file", {"path": "/n/a.md",
                                                                 "content": "hello world"})
            out["read"] = await client.call_tool("read_file", {"path": "/n/a.md"})
            out["bad"] = await client.call_tool("read_file", {"path": "/../x"})
            out["extra"] = await client.call_tool("ls", {"path": "/", "deep": True})
        return out

    try:
        seen = asyncio.run(script(acme))
        assert {"ls", "read_file", "write_file", "edit_file", "glob", "grep"} <= set(
            seen["tools"])
        assert seen["edit_schema"]["required"] == ["path", "old_string", "new_string"]
        assert not seen["write"].is_error
        read = json.loads(seen["read"].content[0].text)["result"]
        assert read["content"] == "hello world"
        assert seen["bad"].is_error and "'..' segment" in seen["bad"].content[0].text
        assert seen["extra"].is_error and "deep" in seen["extra"].content[0].text
        # the tenant's files, under its tree
        assert state.store_for(acme).get(("files", "default", "files", "/n"), "a.md")
        refused = asyncio.run(script(reader))["write"]
        assert refused.is_error and "read-only" in refused.content[0].text
    finally:
        state.close()
