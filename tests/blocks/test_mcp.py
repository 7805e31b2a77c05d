"""The block and archival agent tools over MCP (``build_mcp(blocks_agent=...,
archival_user=...)``, ``remem mcp --blocks/--archival``): the same schemas as the agent tools,
edits land in the caller's tenant (where ``/v1/blocks`` reads them), refusals come back as
tool errors the model can act on, and read-only keys cannot write."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from remem.blocks import Blocks
from remem.embed import FakeEmbedder
from remem.files import StoreFileBackend
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal, ServerState
from remem.tools.archival import ARCHIVAL_TOOLS, CONVERSATION_TOOLS
from remem.tools.blocks import BLOCK_TOOLS
from remem.tools.schema import request_schema

ACME = Principal("acme")


@pytest.fixture
def state() -> Any:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    state: ServerState = app.state.remem
    blocks = Blocks(StoreFileBackend(state.store_for(ACME), ("blocks",)))
    blocks.create("b-human", label="human", value="Name: Ada", limit=40)
    blocks.create("b-rules", label="rules", value="Be kind.", read_only=True)
    blocks.attach("a1", "b-human")
    blocks.attach("a1", "b-rules")
    yield state
    state.close()


def _blocks(state: ServerState, who: Principal = ACME) -> Blocks:
    return Blocks(StoreFileBackend(state.store_for(who), ("blocks",)))


def _call(server: Any, *calls: tuple[str, dict[str, Any]]) -> list[tuple[bool, str]]:
    async def run() -> list[tuple[bool, str]]:
        async with Client(server) as client:
            out = []
            for name, arguments in calls:
                reply = await client.call_tool(name, arguments)
                out.append((reply.is_error, reply.content[0].text))
            return out

    return asyncio.run(run())


def _listed(server: Any) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return asyncio.run(run())


def _plain(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if k not in ("title",)}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


def test_tools_are_opt_in_and_their_schemas_are_the_agent_tools(state: ServerState) -> None:
    plain = _listed(build_mcp(state, lambda ctx: ACME))
    assert not set(plain) & {*BLOCK_TOOLS, *ARCHIVAL_TOOLS}
    listed = _listed(build_mcp(state, lambda ctx: ACME, blocks_agent="a1",
                               archival_user="alice"))
    for name, (model, _) in {**BLOCK_TOOLS, **ARCHIVAL_TOOLS}.items():
        want = request_schema(model)
        got = listed[name].input_schema
        assert _plain(got["properties"]) == _plain(want["properties"]), name
        assert sorted(got.get("required", [])) == sorted(want.get("required", [])), name
        assert listed[name].description


def test_block_edits_land_in_the_tenant_and_refusals_are_tool_errors(
        state: ServerState) -> None:
    server = build_mcp(state, lambda ctx: ACME, blocks_agent="a1")
    answers = _call(
        server,
        ("core_memory_append", {"label": "human", "content": "Likes tea"}),
        ("core_memory_replace", {"label": "human", "old_content": "tea",
                                 "new_content": "green tea"}),
        ("core_memory_append", {"label": "human", "content": "x" * 60}),  # past the limit
        ("core_memory_append", {"label": "rules", "content": "Be rude."}),  # read-only
        ("memory_rethink", {"label": "nope", "new_memory": "y"}),  # no such block
        ("core_memory_append", {"label": "human"}),  # missing argument
        ("core_memory_append", {"label": "human", "content": "a", "agent_id": "a2"}),
    )
    assert answers[0] == (False, answers[0][1]) and json.loads(answers[0][1]) == {
        "status": "updated", "label": "human", "chars": "19/40"}
    assert not answers[1][0] and json.loads(answers[1][1])["chars"] == "25/40"
    assert all(error for error, _ in answers[2:]), answers
    assert "40" in answers[2][1] and "memory_rethink" in answers[2][1]
    assert "read-only" in answers[3][1]
    assert "nope" in answers[4][1]
    assert "content" in answers[5][1]
    assert "agent_id" in answers[6][1]  # an unknown argument is named, not dropped
    assert _blocks(state).by_label("a1", "human").value == "Name: Ada\nLikes green tea"
    assert _blocks(state).by_label("a1", "rules").value == "Be kind."
    # history keeps each edit, by the MCP caller
    assert [e.actor for e in _blocks(state).history("b-human")][-2:] == ["mcp:acme"] * 2


def test_another_tenant_and_read_only_keys_cannot_edit(state: ServerState) -> None:
    other = build_mcp(state, lambda ctx: Principal("other"), blocks_agent="a1")
    [(error, text)] = _call(other, ("core_memory_append", {"label": "human",
                                                           "content": "hi"}))
    assert error and "Ada" not in text
    reader = build_mcp(state, lambda ctx: Principal("acme", read_only=True),
                       blocks_agent="a1", archival_user="alice")
    answers = _call(reader, ("memory_rethink", {"label": "human", "new_memory": "wiped"}),
                    ("archival_memory_insert", {"content": "a passage"}),
                    ("archival_memory_search", {"query": "passage"}))
    assert answers[0][0] and "read-only" in answers[0][1]
    assert answers[1][0] and "read-only" in answers[1][1]
    assert not answers[2][0]  # searching is reading
    assert _blocks(state).by_label("a1", "human").value == "Name: Ada"


def test_archival_insert_and_search_stay_in_the_tenant(state: ServerState) -> None:
    server = build_mcp(state, lambda ctx: ACME, archival_user="alice")
    answers = _call(server,
                    ("archival_memory_insert", {"content": "The Lisbon trip was in May 2024."}),
                    ("archival_memory_insert", {"content": "Alice's cat is called Miso."}),
                    ("archival_memory_search", {"query": "cat name"}),
                    ("archival_memory_insert", {"content": ""}))
    assert [error for error, _ in answers] == [False, False, False, True]
    saved = json.loads(answers[0][1])
    assert saved["status"] == "saved" and len(saved["ids"]) == 1
    found = json.loads(answers[2][1])
    assert {hit["content"] for hit in found["results"]} == {
        "The Lisbon trip was in May 2024.", "Alice's cat is called Miso."}
    assert found["more"] == 0
    stored = state.memory_for(ACME).get_all(user_id="alice").memories
    assert sorted(m.text for m in stored) == sorted(h["content"] for h in found["results"])
    other = build_mcp(state, lambda ctx: Principal("other"), archival_user="alice")
    [(error, text)] = _call(other, ("archival_memory_search", {"query": "cat"}))
    assert not error and json.loads(text)["results"] == []


def test_conversation_search_reads_only_that_users_threads_in_the_tenant(
        state: ServerState) -> None:
    threads = state.threads_for(ACME)
    threads.create("t-alice", metadata={"user_id": "alice"},
                   messages=["I booked the Lisbon flight", "Remind me about Lisbon"])
    threads.create("t-bob", metadata={"user_id": "bob"}, messages=["Lisbon is Bob's secret"])
    server = build_mcp(state, lambda ctx: ACME, conversation_user="alice")
    listed = _listed(server)
    want = request_schema(CONVERSATION_TOOLS["conversation_search"][0])
    assert _plain(listed["conversation_search"].input_schema["properties"]) == _plain(
        want["properties"])
    answers = _call(server, ("conversation_search", {"query": "lisbon"}),
                    ("conversation_search", {"query": "lisbon", "start_date": "not a date"}))
    found = json.loads(answers[0][1])
    assert not answers[0][0]
    assert sorted(m["text"] for m in found["messages"]) == [
        "I booked the Lisbon flight", "Remind me about Lisbon"]
    assert {m["thread_id"] for m in found["messages"]} == {"t-alice"}
    assert answers[1][0] and "start_date" in answers[1][1]
    other = build_mcp(state, lambda ctx: Principal("other"), conversation_user="alice")
    [(error, text)] = _call(other, ("conversation_search", {"query": "lisbon"}))
    assert not error and json.loads(text)["messages"] == []


@pytest.mark.slow
def test_remem_mcp_serves_the_tools_it_is_asked_for(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    policy = tmp_path / "policy.json"  # agent writer may write /memories, others ask
    policy.write_text(json.dumps({"rules": [
        {"effect": "allow", "paths": "/memories/**", "operations": ["write"],
         "agent": "writer"},
        {"effect": "ask", "paths": "/memories/**", "operations": ["write"]},
        {"effect": "ask", "paths": "/shared/**", "operations": ["write"]},
        {"effect": "deny", "paths": "/secrets/**"}]}))
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "remem", "mcp", "--db", str(db), "--embedder", "fake", "--tenant", "acme",
        "--files", "--context", "--blocks", "a1", "--archival", "alice",
        "--conversations", "alice", "--procedural", "--graph",
        "--file-policy", str(policy), "--files-agent", "writer"])

    async def run() -> tuple[set[str], Any, list[Any]]:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            reply = await client.call_tool("archival_memory_insert", {"content": "kept"})
            files = [await client.call_tool("write_file", {"path": path, "content": "x"})
                     for path in ("/memories/m.md", "/shared/s.md", "/secrets/k.txt")]
            return names, reply, files

    names, reply, files = asyncio.run(asyncio.wait_for(run(), 60))
    written, asked, denied = files
    assert json.loads(written.content[0].text)["result"]["path"] == "/memories/m.md"
    assert json.loads(asked.content[0].text)["result"]["status"] == "needs_approval"
    assert denied.is_error and "denied" in denied.content[0].text
    assert 'rule 3 {"effect": "deny", "paths": "/secrets/**"}' in denied.content[0].text
    assert {*BLOCK_TOOLS, *ARCHIVAL_TOOLS, *CONVERSATION_TOOLS, "get_context", "ls",
            "read_file", "write_file", "edit_file", "glob", "grep", "add_memory",
            "get_prompt", "select_examples", "search_facts", "get_entity", "get_profile",
            "get_timeline"} <= names
    assert not reply.is_error and json.loads(reply.content[0].text)["status"] == "saved"


def test_serve_settings_switch_the_tools_on_at_slash_mcp(tmp_path: Path) -> None:
    """``remem serve --mcp-blocks a1 --mcp-context`` (its settings, as the worker processes
    get them) serves those tools at /mcp, for the key's tenant."""
    import contextlib

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from remem.cli.serve import _build_app, _mcp_tools
    from remem.testing.server import ThreadedServer

    settings = {"db": str(tmp_path / "srv.db"), "auth": True, "max_body_bytes": 1 << 20,
                "embedder": "fake", "mcp": True, "host": "127.0.0.1", "store_threads": 2,
                "mcp_tools": _mcp_tools(False, True, "a1", None, procedural=True)}
    app = _build_app(settings)
    state: ServerState = app.state.remem
    token = state.keys.create("acme")[0]
    _blocks(state).create("b-human", label="human", value="Name: Ada", limit=100)
    _blocks(state).attach("a1", "b-human")

    async def run(url: str) -> tuple[set[str], Any]:
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                   timeout=60))  # httpx's 5 s is short on a loaded CI box
            client = await stack.enter_async_context(
                Client(streamable_http_client(url + "/mcp", http_client=http)))
            names = {t.name for t in (await client.list_tools()).tools}
            reply = await client.call_tool("core_memory_append",
                                           {"label": "human", "content": "Likes tea"})
            return names, reply

    with ThreadedServer(app) as server:
        names, reply = asyncio.run(run(server.url))
    try:
        assert {*BLOCK_TOOLS, "get_context", "get_prompt", "list_prompts"} <= names
        assert not set(ARCHIVAL_TOOLS) & names and "write_file" not in names
        assert not reply.is_error, reply
        assert _blocks(state).by_label("a1", "human").value == "Name: Ada\nLikes tea"
    finally:
        state.close()
