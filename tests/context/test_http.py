"""Context assembly over HTTP: POST /v1/memories/context and remem.Client.context give what
the embedded Memory.context gives on the same data, over the tenant's threads; bad input is a
4xx naming the field."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from remem import FakeEmbedder
from remem.api import Memory
from remem.client import Client
from remem.context import ContextRequest
from remem.errors import InvalidInputError, UsageError
from remem.server import ServerConfig, create_app
from remem.testing.server import ThreadedServer
from remem.threads import ThreadStore
from remem.tokens import EstimateCounter

MEMORIES = ("Alice drinks green tea every morning", "Alice moved to Berlin in 2024",
            "Alice is allergic to peanuts")
CHAT: list[Any] = ["I am planning a trip", {"role": "assistant", "content": "Where to?"},
                   "Somewhere warm, what should I drink?"]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    app = create_app(ServerConfig(db=str(tmp_path / "server.db"), embedder=FakeEmbedder(),
                                  mcp=False, auth=False))
    with ThreadedServer(app) as served, Client(served.url) as remote:
        for text in MEMORIES:
            remote.add(text, user_id="alice", infer=False)
        remote.threads.create("trip", messages=CHAT)
        yield remote


def _embedded() -> tuple[Memory, ThreadStore]:
    mem = Memory.open(":memory:", embedder=FakeEmbedder())
    for text in MEMORIES:
        mem.add(text, user_id="alice", infer=False)
    threads = ThreadStore(":memory:")
    threads.create("trip", messages=CHAT)
    return mem, threads


def _shape(result: Any) -> dict[str, Any]:
    data = result.to_dict()
    data.pop("dropped")
    return {"text": data["text"], "messages": data["messages"], "tokens": data["tokens"],
            "sections": data["sections"], "dropped": [(d.section, d.reason)
                                                      for d in result.dropped]}


@pytest.mark.parametrize("budget", [None, 60, 0])
def test_client_gives_what_memory_gives(client: Client, budget: int | None) -> None:
    mem, threads = _embedded()
    want = mem.context("tea", user_id="alice", thread_id="trip", threads=threads,
                       budget_tokens=budget)
    got = client.context("tea", user_id="alice", thread_id="trip", budget_tokens=budget)
    assert _shape(got) == _shape(want)
    assert got.to_messages("anthropic") == want.to_messages("anthropic")
    async def remotely() -> Any:
        async with Client(client.url) as remote:  # its connections closed in this loop
            return await remote.acontext("tea", user_id="alice", thread_id="trip",
                                         budget_tokens=budget)

    later = asyncio.run(remotely())
    assert later.to_dict() == got.to_dict()
    mem.close()
    threads.close()


def test_bad_input_is_a_4xx_naming_the_field(client: Client) -> None:
    with pytest.raises(InvalidInputError, match="budget_tokens"):
        client.context(user_id="alice", budget_tokens=-5)
    with pytest.raises(InvalidInputError, match="no context section named 'blocks'"):
        client.context(user_id="alice", sections=["blocks"])
    # Client.context takes no counter; a request value built by hand may carry one
    from remem.client import context_call

    with pytest.raises(UsageError, match="cannot be sent"):
        context_call(ContextRequest(user_id="a", token_counter=EstimateCounter()))


def test_same_parameters_on_every_surface() -> None:
    fields = set(ContextRequest.model_fields)
    local = {"token_counter"}  # Python objects: never sent over HTTP
    memory = set(inspect.signature(Memory.context).parameters) - {"self", "threads"}
    client = set(inspect.signature(Client.context).parameters) - {"self"}
    assert memory == fields and client == fields - local
    assert set(inspect.signature(Client.acontext).parameters) - {"self"} == client
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    schema = app.openapi()["paths"]["/v1/memories/context"]["post"]
    body = schema["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/ContextRequest")
    properties = app.openapi()["components"]["schemas"]["ContextRequest"]["properties"]
    assert set(properties) == fields - local


def test_a_tenant_sees_only_its_own_context(tmp_path: Path) -> None:
    """A key of tenant B gets nothing of tenant A's memories, profile or thread, whatever
    the scope names; A gets them (the same route, the tenant from the key alone)."""
    from fastapi.testclient import TestClient

    app = create_app(ServerConfig(db=str(tmp_path / "iso.db"), embedder=FakeEmbedder(),
                                  mcp=False, key_cache_seconds=0))
    with TestClient(app) as http:
        keys = app.state.remem.keys
        a = {"Authorization": f"Bearer {keys.create('alpha')[0]}"}
        b = {"Authorization": f"Bearer {keys.create('beta')[0]}"}
        assert http.post("/v1/memories", headers=a, json={
            "messages": "alpha likes oolong tea", "user_id": "u1",
            "infer": False}).status_code == 200
        assert http.post("/v1/threads", headers=a, json={
            "thread_id": "t1", "messages": [{"role": "user", "content": "alpha secret"}],
        }).status_code == 200
        body = {"query": "oolong", "user_id": "u1", "thread_id": "t1"}
        mine = http.post("/v1/memories/context", headers=a, json=body).json()
        assert "alpha likes oolong tea" in mine["text"] and "alpha secret" in mine["text"]
        for attempt in ({"query": "oolong", "user_id": "u1"},
                        {"query": "oolong", "namespace": ["memories", "user", "u1"]},
                        {"query": "oolong", "namespace": ["tenants", "alpha", "memories"]}):
            answer = http.post("/v1/memories/context", headers=b, json=attempt)
            assert answer.status_code == 200, answer.text
            assert answer.json()["text"] == "" and answer.json()["tokens"] == 0, attempt
        # A's thread is, for B, a thread that exists nowhere: the same 404, the same message
        for thread in ("t1", "t0"):
            answer = http.post("/v1/memories/context", headers=b, json={**body,
                                                                       "thread_id": thread})
            assert answer.status_code == 404
            assert answer.json()["message"].replace(thread, "T") == \
                http.post("/v1/memories/context", headers=b, json={
                    **body, "thread_id": "t0"}).json()["message"].replace("t0", "T")
    app.state.remem.close()
