"""``add`` has one default on every surface: ``infer`` left unset extracts when a chat model is
configured and stores the text as given otherwise, and the result's ``inferred`` says which;
``infer=true`` without a model fails naming the fix (a 400 over HTTP, a tool error over MCP)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client as McpClient

from remem.api import Memory
from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import ConfigError, UnsupportedError
from remem.llm.config import ENV_VARS
from remem.memory.requests import AddRequest
from remem.server import ServerConfig, create_app
from remem.server.mcp import MCP_TOOLS, build_mcp
from remem.server.state import LOCAL_TENANT, Principal, ServerState
from remem.store import open_store
from remem.testing.server import ThreadedServer
from tests.memory_support import rule_model


@pytest.fixture(autouse=True)
def _no_model_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*ENV_VARS, "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _texts(result: Any) -> list[str]:
    return [change.memory.text for change in result.changes]


def test_the_request_default_is_unset_and_decided_by_the_model() -> None:
    request = AddRequest.of(messages="I live in Lyon", user_id="u")
    assert request.infer is None
    assert request.with_model(True).infer is True
    assert request.with_model(False).infer is False
    assert AddRequest.of(messages="x", user_id="u", infer=False).with_model(True).infer is False
    with pytest.raises(UnsupportedError, match="leave infer out"):
        AddRequest.of(messages="x", user_id="u", infer=True).with_model(False)


def test_python_extracts_with_a_model_and_stores_as_given_without() -> None:
    with Memory(open_store(":memory:"), llm=rule_model(), owns_store=True) as memory:
        extracted = memory.add("I live in Lyon", user_id="u")
        assert extracted.inferred is True and _texts(extracted) == ["Lives in Lyon"]
        assert extracted.usage.calls == 1
        given = memory.add("I live in Paris", user_id="v", infer=False)
        assert given.inferred is False and _texts(given) == ["I live in Paris"]
    with Memory.open(":memory:", embedder=FakeEmbedder()) as memory:
        stored = memory.add("I live in Lyon", user_id="u")
        assert stored.inferred is False and _texts(stored) == ["I live in Lyon"]
        assert stored.usage.calls == 0
        with pytest.raises(ConfigError, match="REMEM_LLM_MODEL"):
            memory.add("I live in Rome", user_id="u", infer=True)


def test_a_model_configured_in_the_environment_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset infer reads REMEM_LLM_* as infer=true always did; a setting that cannot be read
    fails naming it rather than silently storing as given."""
    monkeypatch.setenv("REMEM_LLM_MODEL", "some-model")
    monkeypatch.setenv("REMEM_LLM_TIMEOUT", "soon")
    with Memory.open(":memory:", embedder=FakeEmbedder()) as memory:
        with pytest.raises(ConfigError, match="REMEM_LLM_TIMEOUT"):
            memory.add("I live in Lyon", user_id="u")
        assert memory.infers(AddRequest.of(messages="x", user_id="u", infer=False)) is False


@pytest.fixture
def servers() -> Iterator[dict[str, Any]]:
    apps = {name: create_app(ServerConfig(db=":memory:", auth=False, mcp=False,
                                          embedder=FakeEmbedder(), llm=llm))
            for name, llm in (("with", rule_model()), ("without", None))}
    yield apps
    for app in apps.values():
        app.state.remem.close()


def test_http_and_the_client_follow_the_servers_model(servers: dict[str, Any]) -> None:
    with TestClient(servers["with"], base_url="http://127.0.0.1") as http:
        answer = http.post("/v1/memories", json={"messages": "I live in Lyon", "user_id": "u"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["inferred"] is True
        assert answer.json()["changes"][0]["memory"]["text"] == "Lives in Lyon"
    with ThreadedServer(servers["without"]) as running, Client(running.url) as client:
        added = client.add("I live in Lyon", user_id="u")
        assert added.inferred is False and _texts(added) == ["I live in Lyon"]
        with pytest.raises(UnsupportedError, match="infer=true needs a chat model"):
            client.add("I live in Rome", user_id="u", infer=True)


def _call_add(state: ServerState, arguments: dict[str, Any]) -> tuple[bool, Any]:
    server = build_mcp(state, lambda ctx: Principal(LOCAL_TENANT), tools=MCP_TOOLS)

    async def call() -> tuple[bool, Any]:
        async with McpClient(server) as client:
            result = await client.call_tool("add_memory", arguments)
            text = result.content[0].text
            return result.is_error, text if result.is_error else json.loads(text)

    return asyncio.run(call())


def test_mcp_follows_the_servers_model(servers: dict[str, Any]) -> None:
    failed, added = _call_add(servers["with"].state.remem,
                              {"messages": "I live in Lyon", "user_id": "u"})
    assert not failed and added["inferred"] is True
    assert added["changes"][0]["memory"]["text"] == "Lives in Lyon"
    without = servers["without"].state.remem
    failed, added = _call_add(without, {"messages": "I live in Lyon", "user_id": "u"})
    assert not failed and added["inferred"] is False
    assert added["changes"][0]["memory"]["text"] == "I live in Lyon"
    failed, message = _call_add(without, {"messages": "x", "user_id": "u", "infer": True})
    assert failed and "UnsupportedError" in message and "leave infer out" in message
