"""The application's block tools over MCP (``build_mcp(block_admin=True)``), through the
official client in memory: create, attach to two agents (shared), list, change a read-only
block, detach, delete; in the caller's tenant; typed errors; read-only keys refused."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp import Client

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.routes_blocks import blocks_for
from remem.server.state import Principal


def _result(answer: Any) -> Any:
    assert not answer.is_error, answer.content[0].text
    return json.loads(answer.content[0].text)


def test_block_admin_tools_over_mcp() -> None:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    state = app.state.remem
    acme = Principal(tenant="acme", key_id="k1")

    async def script(who: Principal, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        def resolve(ctx: Any) -> Principal:
            # over HTTP the key comes from ctx's headers: a tool that never receives its
            # context cannot act for anyone
            assert ctx is not None, "the tool was called without its request context"
            return who

        server = build_mcp(state, resolve, block_admin=True)
        async with Client(server) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"list_blocks", "get_block", "create_block", "update_block",
                    "delete_block", "attach_block", "detach_block"} <= names
            return [await client.call_tool(name, args) for name, args in calls]

    try:
        out = asyncio.run(script(acme, [
            ("create_block", {"id": "persona-1", "label": "persona", "value": "A guide.",
                              "read_only": True}),
            ("attach_block", {"agent_id": "a1", "block_id": "persona-1"}),
            ("attach_block", {"agent_id": "a2", "block_id": "persona-1"}),
            ("update_block", {"id": "persona-1", "value": "A careful guide."}),
            ("list_blocks", {"agent_id": "a2"}),
            ("get_block", {"id": "persona-1"}),
            ("create_block", {"id": "persona-1", "label": "persona"}),
            ("create_block", {"id": "bad id", "label": "x"}),
            ("get_block", {"id": "nope"}),
            ("detach_block", {"agent_id": "a1", "block_id": "persona-1"}),
            ("create_block", {"id": "x", "label": "x", "colour": "red"}),
        ]))
        made, first, second, changed, listed, got, dup, bad, missing, detached, extra = out
        assert _result(made)["read_only"] is True
        assert _result(first)["blocks"] == _result(second)["blocks"] == ["persona-1"]
        assert _result(changed)["value"] == "A careful guide."  # the application may
        assert [b["value"] for b in _result(listed)["blocks"]] == ["A careful guide."]
        assert _result(got)["etag"] == _result(changed)["etag"]
        assert dup.is_error and "Conflict" in dup.content[0].text
        assert bad.is_error and "id" in bad.content[0].text
        assert missing.is_error and "no block with id 'nope'" in missing.content[0].text
        assert _result(detached)["blocks"] == []
        assert extra.is_error and "colour" in extra.content[0].text
        # the tenant's blocks, where HTTP and the Python API find them
        blocks = blocks_for(state.store_for(acme))
        assert blocks.blocks_of("a2")[0].value == "A careful guide."
        other = asyncio.run(script(Principal(tenant="other"), [("list_blocks", {}),
                                                               ("get_block", {"id": "persona-1"})]))
        assert _result(other[0]) == {"blocks": []} and other[1].is_error
        reader = asyncio.run(script(Principal(tenant="acme", read_only=True),
                                    [("delete_block", {"id": "persona-1"}),
                                     ("list_blocks", {})]))
        assert reader[0].is_error and "read-only" in reader[0].content[0].text
        assert [b["id"] for b in _result(reader[1])["blocks"]] == ["persona-1"]
        gone = asyncio.run(script(acme, [("delete_block", {"id": "persona-1"})]))
        assert _result(gone[0]) == {"deleted": "persona-1"}
    finally:
        state.close()
