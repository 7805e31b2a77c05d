"""Chat message dicts are closed (issue 32, item 5): a key remem does not read is refused,
naming it, on every surface that builds messages from dicts (Python, ``remem.Client``, HTTP,
MCP), where it used to be dropped silently. remem's own ``id``, ``created_at``, ``metadata``
and ``is_error`` (what ``/v1/threads`` answers messages with) are read, not dropped. A
model client reading a provider's answer still ignores the fields providers add."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client as McpClient

from remem.api import Memory
from remem.client import Client
from remem.errors import InvalidInputError, MessageFormatError
from remem.messages import from_openai, from_openai_message
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal
from remem.testing.server import ThreadedServer
from remem.threads import ThreadStore

UNKNOWN = [
    ({"role": "user", "content": "hi", "colour": "red"},
     "messages[0] has the unknown field 'colour': a message takes content, created_at, "),
    ({"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}]},
     "messages[0].content[0] has the unknown field 'cache_control': a text part takes "
     "text, type;"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {
        "url": "https://example.org/a.png", "size": 3}}]},
     "messages[0].content[0].image_url has the unknown field 'size'"),
    ({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "index": 0,
         "function": {"name": "f", "arguments": "{}"}}]},
     "messages[0].tool_calls[0] has the unknown field 'index': a tool call takes "
     "function, id, type;"),
    ({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}",
                                                      "strict": True}}]},
     "messages[0].tool_calls[0].function has the unknown field 'strict'"),
]


@pytest.mark.parametrize(("data", "message"), UNKNOWN)
def test_unknown_fields_are_refused_by_name(data: dict[str, Any], message: str) -> None:
    with pytest.raises(MessageFormatError) as caught:
        from_openai([data])
    assert str(caught.value).startswith(message), str(caught.value)
    assert "refused, not dropped" in str(caught.value)
    # a model client reading a provider's answer drops what it does not read
    assert from_openai([data], extra="ignore")[0].role == data["role"]


def test_remem_fields_are_read_and_checked() -> None:
    message = from_openai_message({"role": "tool", "tool_call_id": "c1", "content": "boom",
                                   "id": "m1", "created_at": 1700000000,
                                   "metadata": {"source": "cli"}, "is_error": True})
    assert (message.id, message.created_at, message.metadata, message.is_error) == (
        "m1", 1700000000.0, {"source": "cli"}, True)
    refusal = from_openai_message({"role": "assistant", "content": None,
                                   "refusal": "I cannot help with that."})
    assert refusal.text == "I cannot help with that."
    for bad, where in (({"created_at": True}, "message.created_at must be a finite number"),
                       ({"created_at": math.nan}, "message.created_at must be a finite"),
                       ({"metadata": [1]}, "message.metadata must be an object"),
                       ({"id": ""}, "message.id must be a non-empty string"),
                       ({"is_error": 1}, "message.is_error must be true or false")):
        with pytest.raises(MessageFormatError, match=f"^{where}"):
            from_openai_message({"role": "tool", "tool_call_id": "c", "content": "x", **bad})


def test_python_surfaces_refuse_unknown_fields(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db") as mem:
        with pytest.raises(InvalidInputError, match="unknown field 'colour'"):
            mem.add([{"role": "user", "content": "I like tea", "colour": "red"}],
                    user_id="u", infer=False)
        assert mem.get_all(user_id="u").memories == ()
    threads = ThreadStore(tmp_path / "t.db")
    try:
        thread = threads.create()
        with pytest.raises(InvalidInputError, match="unknown field 'colour'"):
            threads.append(thread.id, [{"role": "user", "content": "hi", "colour": "red"}])
        assert threads.messages(thread.id) == []
        # metadata given in the dict is kept, as /v1/threads answers it
        threads.append(thread.id, [{"role": "user", "content": "hi",
                                    "metadata": {"lang": "en"}}])
        assert [m.metadata for m in threads.messages(thread.id)] == [{"lang": "en"}]
    finally:
        threads.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, Any]]:
    app = create_app(ServerConfig(db=tmp_path / "server.db", mcp=False))
    key, _ = app.state.remem.keys.create("acme")
    with ThreadedServer(app) as server:
        yield server.url, key, app
    app.state.remem.close()


def test_http_and_the_client_refuse_unknown_fields(served: tuple[str, str, Any]) -> None:
    url, key, app = served
    with TestClient(app) as http:
        headers = {"Authorization": f"Bearer {key}"}
        added = http.post("/v1/memories", headers=headers, json={
            "messages": [{"role": "user", "content": "tea", "colour": "red"}],
            "user_id": "u", "infer": False})
        assert added.status_code == 422, added.text
        assert "unknown field 'colour'" in added.json()["message"]
        thread = http.post("/v1/threads", headers=headers, json={}).json()["thread_id"]
        appended = http.post(f"/v1/threads/{thread}/messages", headers=headers, json={
            "messages": [{"role": "user", "content": "hi", "metadata": {"lang": "en"},
                          "id": "m1", "created_at": 1700000000}]})
        assert appended.status_code == 200, appended.text
        back = http.get(f"/v1/threads/{thread}/messages", headers=headers).json()
        assert [(m["id"], m["created_at"], m["metadata"]) for m in back["messages"]] == [
            ("m1", 1700000000.0, {"lang": "en"})]
        # what the server answers can be sent back as it is
        again = http.post(f"/v1/threads/{thread}/messages", headers=headers,
                          json={"messages": back["messages"]})
        assert again.status_code == 200, again.text
        schema = app.openapi()["components"]["schemas"]
        assert any(
            '"additionalProperties": false' in str(s).replace("False", "false")
            .replace("'", '"') for s in schema.values()
            if "an OpenAI-style chat message" in str(s))
    with Client(url, api_key=key) as client, \
            pytest.raises(InvalidInputError, match="unknown field 'colour'"):
        client.add([{"role": "user", "content": "tea", "colour": "red"}], user_id="u",
                   infer=False)


def test_mcp_refuses_unknown_fields(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "mcp.db", mcp=False))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"))

    async def run() -> Any:
        async with McpClient(server) as client:
            return await client.call_tool("add_memory", {
                "messages": [{"role": "user", "content": "tea", "colour": "red"}],
                "user_id": "u", "infer": False})

    refused = asyncio.run(run())
    app.state.remem.close()
    assert refused.is_error
    assert "unknown field 'colour'" in refused.content[0].text, refused.content[0].text
