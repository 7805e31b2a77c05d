"""Procedural and episodic memory over HTTP (``/v1/prompts``, ``/v1/episodes``), through
``remem.Client`` (sync and async) and the MCP tools: a real server on loopback over a real
SQLite file, the scripted model as the server's LLM."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client as McpClient

from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    UnsupportedError,
    UsageError,
)
from remem.llm import ChatRequest, ScriptedModel
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal
from remem.testing.server import ThreadedServer

NEW_TEXT = "Answer {question} in one sentence."


def answer(request: ChatRequest) -> dict[str, Any]:
    """The server's model: rewrites keep the variables; extraction finds one episode."""
    if request.operation == "episodes.extract":
        return {"episodes": [{"situation": "user asked to convert 3 km to miles",
                              "thought": "1 km is 0.621 miles", "action": "answered 1.86 miles",
                              "result": "user confirmed"}]}
    if request.operation == "optimize.reflect":
        return {"analysis": "answers run long", "should_update": True}
    if request.operation == "optimize.critique":
        return {"critique": "too long", "recommendations": ["be brief"], "should_update": True}
    return {"reasoning": "the feedback asks for brevity", "prompt": NEW_TEXT}


def model() -> ScriptedModel:
    return ScriptedModel(default=answer)


TRAJECTORIES = [{"messages": [{"role": "user", "content": "What is 2+2?"},
                              {"role": "assistant", "content": "Well, let me explain..."}],
                 "feedback": {"score": 0.2, "comment": "too long"}, "id": "t1"}]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, list[str], Any]]:
    app = create_app(ServerConfig(db=tmp_path / "server.db", embedder=FakeEmbedder(),
                                  llm=model(), mcp=False))
    keys = [app.state.remem.keys.create(f"tenant{n}")[0] for n in range(2)]
    with ThreadedServer(app) as server:
        yield server.url, keys, app
    app.state.remem.close()


def test_prompt_lifecycle_through_the_client(served: tuple[str, list[str], Any]) -> None:
    url, (key, other_key), app = served
    key_id = app.state.remem.keys.verify(key).key_id
    with Client(url, api_key=key) as client, Client(url, api_key=other_key) as other:
        made = client.prompts.create("qa", "Answer {question}.")
        assert (made.version, made.variables, made.author) == (1, ("question",), f"key:{key_id}")
        second = client.prompts.update("qa", "Answer {question} politely.", reason="tone")
        assert second.version == 2 and second.reason == "tone"
        assert client.prompts.get("qa").text == "Answer {question} politely."
        assert client.prompts.get("qa", 1).text == "Answer {question}."
        assert [v.version for v in client.prompts.history("qa")] == [1, 2]
        diff = client.prompts.diff("qa")
        assert "-Answer {question}." in diff and "+Answer {question} politely." in diff
        back = client.prompts.rollback("qa", 1)
        assert (back.version, back.text, back.rolled_back_to) == (3, "Answer {question}.", 1)
        assert [p.name for p in client.prompts.list()] == ["qa"]
        assert other.prompts.list() == []  # another tenant's prompts do not exist for it
        with pytest.raises(NotFoundError, match="qa"):
            other.prompts.get("qa")

        candidate = client.prompts.optimize("qa", TRAJECTORIES, strategy="prompt_memory")
        assert candidate.changed and candidate.text == NEW_TEXT
        assert candidate.base_version == 3 and candidate.committed_version is None
        assert candidate.calls == 1 and candidate.input_tokens > 0
        assert "+" + NEW_TEXT in candidate.diff
        assert client.prompts.get("qa").version == 3  # nothing stored without commit
        committed = client.prompts.update("qa", candidate.text, reason=candidate.reasoning,
                                          expected_version=candidate.base_version)
        assert committed.version == 4
        with pytest.raises(ConflictError, match="version 4, not 3"):  # a stale candidate
            client.prompts.update("qa", candidate.text, expected_version=3)
        at_once = client.prompts.optimize("qa", TRAJECTORIES, commit=True)
        assert at_once.calls == 2  # metaprompt: reflect, then rewrite
        assert at_once.changed is False and at_once.committed_version is None

        async def twins() -> None:
            made = await client.prompts.acreate("greet", "Hello {name}.")
            assert (await client.prompts.aget("greet")).text == made.text
            updated = await client.prompts.aupdate("greet", "Hi {name}.")
            assert [v.version for v in await client.prompts.ahistory("greet")] == [1, 2]
            assert "+Hi {name}." in await client.prompts.adiff("greet", 1, 2)
            assert (await client.prompts.arollback("greet", 1)).version == updated.version + 1
            assert {p.name for p in await client.prompts.alist()} == {"greet", "qa"}
            result = await client.prompts.aoptimize("qa", TRAJECTORIES,
                                                   strategy="prompt_memory", commit=False)
            assert result.skipped is None and result.calls == 1
            await client.aclose()

        asyncio.run(twins())

    # the optimizer's calls are the calling tenant's usage (GET /v1/usage), nobody else's
    mine = httpx.get(f"{url}/v1/usage", headers={"Authorization": f"Bearer {key}"}).json()
    assert mine["total"]["calls"] == 1 + 2 + 1  # prompt_memory, metaprompt, async
    assert all(op.startswith("optimize.") for op in mine["by_operation"])
    theirs = httpx.get(f"{url}/v1/usage",
                       headers={"Authorization": f"Bearer {other_key}"}).json()
    assert theirs["total"]["calls"] == 0


def test_episodes_through_the_client(served: tuple[str, list[str], Any]) -> None:
    url, (key, other_key), _ = served
    with Client(url, api_key=key) as client, Client(url, api_key=other_key) as other:
        added = client.episodes.add({"situation": "user wants tea recommendations",
                                     "action": "suggested oolong", "result": "liked it",
                                     "metadata": {"topic": "tea"}})
        assert added.id.startswith("ep") and added.metadata == {"topic": "tea"}
        client.episodes.add({"situation": "user asked for a train timetable",
                             "action": "looked it up"})
        extracted = client.episodes.extract("convert 3 km to miles please", thread_id="th1")
        assert [e.thread_id for e in extracted.episodes] == ["th1"]
        assert extracted.usage.calls == 1
        assert len(client.episodes.list()) == 3 and other.episodes.list() == []
        picked = client.episodes.select_examples("recommend some tea", k=1)
        assert [e.situation for e in picked.examples] == ["user wants tea recommendations"]
        assert picked.tokens > 0 and len(picked.messages()) == 2
        assert other.episodes.select_examples("recommend some tea").examples == ()
        tight = client.episodes.select_examples("recommend some tea", k=3, budget_tokens=5)
        assert tight.examples == () and tight.over_budget >= 1

        async def twins() -> None:
            await client.episodes.aadd({"situation": "async situation", "action": "async"})
            assert len(await client.episodes.alist(limit=2)) == 2
            found = await client.episodes.aselect_examples("async situation", k=1)
            assert [e.action for e in found.examples] == ["async"]
            more = await client.episodes.aextract([{"role": "user", "content": "3 km?"}])
            assert len(more.episodes) == 1
            await client.aclose()

        asyncio.run(twins())


def test_bad_requests_are_4xx_naming_the_field(served: tuple[str, list[str], Any]) -> None:
    url, (key, _), _ = served
    headers = {"Authorization": f"Bearer {key}"}
    with Client(url, api_key=key) as client:
        client.prompts.create("qa", "Answer {question}.")
        with pytest.raises(InvalidInputError, match="question"):  # a dropped variable
            client.prompts.update("qa", "Answer.")
        with pytest.raises(ConflictError, match="already exists"):
            client.prompts.create("qa", "Answer {question}.")
        with pytest.raises(NotFoundError, match="no version 9"):
            client.prompts.get("qa", 9)
        with pytest.raises(InvalidInputError, match="name"):
            client.prompts.get("bad name!")
        with pytest.raises(InvalidInputError, match="action"):
            client.episodes.add({"situation": "s"})
    cases = [
        ("POST", "/v1/prompts", {"name": "x", "text": ""}, 422, "text"),
        ("POST", "/v1/prompts", {"name": "x", "text": "t", "colour": 1}, 422, "colour"),
        ("POST", "/v1/prompts/qa", {"text": "Answer {question}.", "expected_version": 0},
         422, "expected_version"),
        ("POST", "/v1/prompts/qa/rollback", {"version": "1"}, 422, "version"),
        ("POST", "/v1/prompts/qa/optimize", {"trajectories": []}, 422, "trajectories"),
        ("POST", "/v1/prompts/qa/optimize", {"trajectories": TRAJECTORIES,
                                             "strategy": "magic"}, 422, "strategy"),
        ("POST", "/v1/prompts/nope/optimize", {"trajectories": TRAJECTORIES}, 404, "nope"),
        ("POST", "/v1/episodes/select", {"query": "x", "k": 0}, 422, "k"),
        ("POST", "/v1/episodes/extract", {"messages": []}, 422, "messages"),
        ("POST", "/v1/episodes/list", {"limit": 5000}, 422, "limit"),
        ("POST", "/v1/prompts/qa/optimize/submit", {"trajectories": TRAJECTORIES,
                                                    "commit": True}, 422, "commit"),
        ("POST", "/v1/episodes/extract/submit", {"messages": "x", "idempotency_key": ""},
         422, "idempotency_key"),
    ]
    for method, path, body, status, field in cases:
        got = httpx.request(method, url + path, json=body, headers=headers)
        assert got.status_code == status, (path, body, got.text)
        assert field in got.text, (path, got.text)
    got = httpx.get(url + "/v1/prompts/qa", params={"version": 0}, headers=headers)
    assert got.status_code == 422 and "version" in got.text


def test_optimize_and_extract_need_the_server_model(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "plain.db", mcp=False))
    key = app.state.remem.keys.create("acme")[0]
    with ThreadedServer(app) as server, Client(server.url, api_key=key) as client:
        client.prompts.create("qa", "Answer {question}.")
        with pytest.raises(UnsupportedError, match="REMEM_LLM_"):
            client.prompts.optimize("qa", TRAJECTORIES)
        with pytest.raises(UnsupportedError, match="REMEM_LLM_"):
            client.episodes.extract("hello")
        with pytest.raises(UnsupportedError, match="REMEM_LLM_"):
            client.prompts.submit_optimization("qa", TRAJECTORIES)
        with pytest.raises(UnsupportedError, match="REMEM_LLM_"):
            client.episodes.submit_extraction("hello")
        # what needs no model still works
        assert client.episodes.add({"situation": "s", "action": "a"}).situation == "s"
        got = httpx.post(server.url + "/v1/prompts/qa/optimize", json={
            "trajectories": TRAJECTORIES}, headers={"Authorization": f"Bearer {key}"})
        assert got.status_code == 400 and got.json()["error"] == "unsupported"
    app.state.remem.close()


def test_read_only_keys_read_but_cannot_write(served: tuple[str, list[str], Any]) -> None:
    url, (key, _), app = served
    reader = app.state.remem.keys.create("tenant0", read_only=True)[0]
    with Client(url, api_key=key) as client, Client(url, api_key=reader) as ro:
        client.prompts.create("qa", "Answer {question}.")
        assert ro.prompts.get("qa").version == 1
        assert ro.episodes.list() == []
        for write in (lambda: ro.prompts.update("qa", "Answer {question}!"),
                      lambda: ro.prompts.create("other", "x"),
                      lambda: ro.prompts.rollback("qa", 1),
                      lambda: ro.prompts.optimize("qa", TRAJECTORIES),
                      lambda: ro.episodes.add({"situation": "s", "action": "a"}),
                      lambda: ro.episodes.extract("hello")):
            with pytest.raises(UsageError):
                write()
        assert client.prompts.get("qa").version == 1


def _payload(result: Any) -> Any:
    import json

    assert not result.is_error, result
    return json.loads(result.content[0].text)


def test_mcp_tools(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "mcp.db", embedder=FakeEmbedder(), mcp=False))
    state = app.state.remem
    acme, reader = Principal("acme"), Principal("acme", read_only=True)
    writer = build_mcp(state, lambda ctx: acme, procedural=True)
    read_only = build_mcp(state, lambda ctx: reader, procedural=True)
    other = build_mcp(state, lambda ctx: Principal("beta"), procedural=True)
    plain = build_mcp(state, lambda ctx: acme)

    from remem.procedural import PromptRegistry

    PromptRegistry(state.store_for(acme)).create("qa", "Answer {question}.")

    async def run() -> dict[str, Any]:
        async with McpClient(writer) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            got = _payload(await client.call_tool("get_prompt", {"name": "qa"}))
            listed = _payload(await client.call_tool("list_prompts", {}))
            added = _payload(await client.call_tool("add_episode", {
                "situation": "user wants tea", "action": "suggested oolong"}))
            picked = _payload(await client.call_tool("select_examples",
                                                     {"query": "tea please", "k": 2}))
            bad = await client.call_tool("select_examples", {"query": "tea", "kk": 2})
            missing = await client.call_tool("get_prompt", {"name": "nope"})
        async with McpClient(read_only) as client:
            refused = await client.call_tool("add_episode", {"situation": "s", "action": "a"})
            readable = _payload(await client.call_tool("get_prompt", {"name": "qa"}))
        async with McpClient(other) as client:
            hidden = await client.call_tool("get_prompt", {"name": "qa"})
            none = _payload(await client.call_tool("select_examples", {"query": "tea"}))
        async with McpClient(plain) as client:
            plain_tools = {t.name for t in (await client.list_tools()).tools}
        return {"tools": tools, "got": got, "listed": listed, "added": added,
                "picked": picked, "bad": bad, "missing": missing, "refused": refused,
                "readable": readable, "hidden": hidden, "none": none, "plain": plain_tools}

    seen = asyncio.run(run())
    assert {"get_prompt", "list_prompts", "select_examples", "add_episode"} <= set(seen["tools"])
    assert "get_prompt" not in seen["plain"]  # served only when asked for
    assert set(seen["tools"]["select_examples"].input_schema["properties"]) == {
        "query", "k", "budget_tokens", "mmr", "max_similarity", "min_relevance"}
    assert seen["got"]["text"] == "Answer {question}." and seen["got"]["version"] == 1
    assert [p["name"] for p in seen["listed"]["prompts"]] == ["qa"]
    assert seen["picked"]["examples"][0]["id"] == seen["added"]["id"]
    assert seen["picked"]["messages"][0]["role"] == "user"
    assert seen["bad"].is_error and "kk" in seen["bad"].content[0].text
    assert seen["missing"].is_error and "NotFoundError" in seen["missing"].content[0].text
    assert seen["refused"].is_error and "read-only" in seen["refused"].content[0].text
    assert seen["readable"]["version"] == 1
    assert seen["hidden"].is_error and "NotFoundError" in seen["hidden"].content[0].text
    assert seen["none"]["examples"] == []
    state.close()
