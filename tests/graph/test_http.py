"""The graph over HTTP (``/v1/graph``), through ``remem.Client`` (sync and async) and the MCP
tools: a real server on loopback over a real SQLite file, the scripted model as the server's
LLM. Answers equal what the Python API gives on the same data; tenants never see each
other's graph."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client as McpClient

from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError, NotFoundError, UnsupportedError
from remem.llm import ChatRequest, ScriptedModel
from remem.messages import Message
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal
from remem.testing.server import ThreadedServer
from tests.graph.scripts import E, F, answer


def ts(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def extract(request: ChatRequest) -> dict[str, Any]:
    """The server's model: answers by what the episode says."""
    episode = request.messages[-1].text.split("Episode:", 1)[1]
    if "Globex" in episode:
        graph = answer([E("Ada", existing="Ada"), E("Globex", "organization")],
                       [F("Ada", "works_at", "Globex", "Ada works at Globex",
                          valid_at="2024-05-01", contradicts=["Ada works at Acme"])])(request)
        return {**graph, "profile": [{"op": "replace", "path": "/work/company",
                                      "value": "Globex"}],
                "events": [{"text": "Ada joined Globex", "date": "2024-05-01",
                            "tags": ["work"]}]}
    graph = answer([E("Ada"), E("Acme", "organization"), E("Berlin", "place")],
                   [F("Ada", "works_at", "Acme", "Ada works at Acme", valid_at="2020-01-01"),
                    F("Acme", "located_in", "Berlin", "Acme is based in Berlin")])(request)
    return {**graph, "profile": [{"op": "add", "path": "/work/company", "value": "Acme"}],
            "events": [{"text": "Ada joined Acme", "date": "2020-01-01", "tags": ["work"]}]}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, list[str], Any]]:
    app = create_app(ServerConfig(db=tmp_path / "server.db", embedder=FakeEmbedder(),
                                  llm=ScriptedModel(default=extract), mcp=False))
    keys = [app.state.remem.keys.create(f"tenant{n}")[0] for n in range(2)]
    with ThreadedServer(app) as server:
        yield server.url, keys, app
    app.state.remem.close()


def test_client_graph_answers_as_the_python_api(served: tuple[str, list[str], Any]) -> None:
    url, (key, other_key), app = served
    with Client(url, api_key=key) as client, Client(url, api_key=other_key) as other:
        graph = client.graph(user_id="ada")
        first = graph.ingest("Ada joined Acme in January 2020; Acme is in Berlin.",
                             event_at=ts("2020-02-01"))
        assert first.llm_calls == 1 and len(first.added) == 2
        assert first.profile_changes == (("add", "/work/company", "Acme"),)
        second = graph.ingest([Message.user("Ada moved to Globex in May 2024.",
                                            created_at=ts("2024-05-08"))])
        assert second.llm_calls == 1 and len(second.invalidated) == 1
        assert second.episode.event_at == ts("2024-05-08")

        then = graph.search("Where is Ada's employer based?", as_of=ts("2021-01-01"))
        paths = {h.fact.fact: h.path for h in then}
        assert set(paths) == {"Ada works at Acme", "Acme is based in Berlin"}
        assert paths["Acme is based in Berlin"] == ("Ada", "Acme", "located_in", "Berlin")
        # as known when the first episode was recorded (the server's clock is today's)
        known = graph.search("Ada works", as_of=ts("2025-01-01"),
                             known_at=first.episode.recorded_at)
        assert [h.fact.fact for h in known if h.fact.predicate == "works_at"] == [
            "Ada works at Acme"]
        page = graph.entity("Ada")
        assert [f.fact for f in page.current] == ["Ada works at Globex"]
        assert [f.fact for f in page.timeline] == ["Ada works at Acme", "Ada works at Globex"]
        assert [h.distance for h in graph.expand("Ada", hops=2)] == [1, 1, 2]
        assert client.profile("ada").to_dict() == {"work": {"company": "Globex"}}
        assert [e.text for e in client.timeline("ada", since=ts("2024-01-01"))] == [
            "Ada joined Globex"]
        changes = graph.patch_profile([{"op": "add", "path": "/basic_info/name",
                                        "value": "Ada"}])
        assert [(c.op, c.new, c.episode_id) for c in changes] == [("add", "Ada", None)]
        assert graph.profile(as_of=ts("2020-01-01")).to_dict() == {}

        # the same answers as the Python API on the tenant's memory
        tenant = app.state.remem.keys.verify(key)
        local = app.state.remem.memory_for(Principal(tenant.tenant)).graph(user_id="ada")
        assert graph.search("Ada", as_of=ts("2021-01-01")) == local.search(
            "Ada", as_of=ts("2021-01-01"))
        assert graph.entity("Acme") == local.entity("Acme")
        assert graph.profile() == local.profile()
        assert graph.timeline() == local.timeline()

        async def run() -> tuple[Any, ...]:
            async with Client(url, api_key=key) as aclient:
                remote = aclient.graph(user_id="ada")
                return (await remote.asearch("Ada", as_of=ts("2021-01-01")),
                        await remote.aentity("Acme"), await remote.aprofile(),
                        await remote.atimeline(tags=["work"]),
                        [h.distance for h in await remote.aexpand("Ada", hops=2)])

        assert asyncio.run(run()) == (local.search("Ada", as_of=ts("2021-01-01")),
                                      local.entity("Acme"), local.profile(),
                                      local.timeline(tags=["work"]), [1, 1, 2])

        async def patch() -> list[Any]:
            async with Client(url, api_key=key) as aclient:
                return await aclient.graph(user_id="ada").apatch_profile(
                    [{"op": "add", "path": "/basic_info/city", "value": "Berlin"}])

        assert [(c.op, c.new) for c in asyncio.run(patch())] == [("add", "Berlin")]
        assert local.profile().to_dict()["basic_info"] == {"name": "Ada", "city": "Berlin"}

        # another tenant (same user id) sees nothing, and an id from elsewhere is not found
        assert other.graph(user_id="ada").search("Ada works") == []
        assert other.profile("ada").to_dict() == {} and other.timeline("ada") == []
        with pytest.raises(NotFoundError):
            other.graph(user_id="ada").entity(page.entity.id)
        # another user of the same tenant neither
        assert client.graph(user_id="bob").search("Ada works") == []


def test_bad_input_is_a_4xx_naming_the_field(served: tuple[str, list[str], Any]) -> None:
    url, (key, _), _ = served
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers) as http:
        for path, body, field in (
                ("/v1/graph/search", {"user_id": "u", "query": "x", "hops": 9}, "hops"),
                ("/v1/graph/search", {"user_id": "u", "query": "x", "as_of": "soon"},
                 "as_of"),
                ("/v1/graph/episodes", {"user_id": "u"}, "give exactly one of text"),
                ("/v1/graph/episodes", {"user_id": "u", "text": "a", "messages": "b"},
                 "give exactly one of text"),
                ("/v1/graph/profile", {}, "user_id"),
                ("/v1/graph/timeline", {"user_id": "u", "since": 2e12}, "since")):
            response = http.post(path, json=body)
            assert response.status_code == 422, (path, body, response.text)
            assert field in response.text
        bad_patch = http.patch("/v1/graph/profile", json={
            "user_id": "u", "patch": [{"op": "add", "path": "/zodiac/sign", "value": "Leo"}]})
        assert bad_patch.status_code == 422 and "not in the schema" in bad_patch.text
        missing = http.post("/v1/graph/entity", json={"user_id": "u", "entity": "Nobody"})
        assert missing.status_code == 404 and "Nobody" in missing.text
        reversed_range = http.post("/v1/graph/timeline",
                                   json={"user_id": "u", "since": 2e9, "until": 1e9})
        assert reversed_range.status_code == 422 and "until" in reversed_range.text
    with Client(url, api_key=key) as client, pytest.raises(InvalidInputError, match="hops"):
        client.graph(user_id="u").search("x", hops=7)


def test_ingest_without_a_server_model_is_400(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "plain.db", embedder=FakeEmbedder(),
                                  mcp=False, auth=False))
    with ThreadedServer(app) as server, Client(server.url) as client:
        with pytest.raises(UnsupportedError, match="needs an LLM"):
            client.graph(user_id="u").ingest("Ada joined Acme.")
        assert client.graph(user_id="u").search("Ada") == []
    app.state.remem.close()


def test_openapi_documents_the_graph_routes(served: tuple[str, list[str], Any]) -> None:
    _, _, app = served
    schema = app.openapi()
    paths = {p: sorted(ops) for p, ops in schema["paths"].items() if p.startswith("/v1/graph")}
    assert paths == {"/v1/graph/entity": ["post"], "/v1/graph/episodes": ["post"],
                     "/v1/graph/expand": ["post"], "/v1/graph/profile": ["patch", "post"],
                     "/v1/graph/search": ["post"], "/v1/graph/timeline": ["post"]}
    search = schema["paths"]["/v1/graph/search"]["post"]
    body = search["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/SearchFactsRequest")
    props = schema["components"]["schemas"]["SearchFactsRequest"]["properties"]
    assert {"query", "as_of", "known_at", "focal", "hops", "user_id"} <= set(props)
    answer_ref = search["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert answer_ref.endswith("/FactHitsOut")


def _payload(result: Any) -> Any:
    assert not result.is_error, result
    return json.loads(result.content[0].text)


def test_mcp_graph_tools(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "mcp.db", embedder=FakeEmbedder(),
                                  llm=ScriptedModel(default=extract), mcp=False))
    state = app.state.remem
    acme, reader = Principal("acme"), Principal("acme", read_only=True)
    writer = build_mcp(state, lambda ctx: acme, graph=True)
    read_only = build_mcp(state, lambda ctx: reader, graph=True)
    other = build_mcp(state, lambda ctx: Principal("beta"), graph=True)
    plain = build_mcp(state, lambda ctx: acme)

    async def run() -> dict[str, Any]:
        async with McpClient(writer) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            ingested = _payload(await client.call_tool("ingest_episode", {
                "user_id": "ada", "text": "Ada joined Acme in 2020; Acme is in Berlin.",
                "event_at": ts("2020-02-01")}))
            found = _payload(await client.call_tool("search_facts", {
                "user_id": "ada", "query": "Where does Ada work?", "as_of": ts("2021-01-01")}))
            page = _payload(await client.call_tool("get_entity", {"user_id": "ada",
                                                                  "entity": "Acme"}))
            profile = _payload(await client.call_tool("get_profile", {"user_id": "ada"}))
            timeline = _payload(await client.call_tool("get_timeline", {"user_id": "ada"}))
            bad = await client.call_tool("search_facts", {"user_id": "ada", "query": "x",
                                                          "hopz": 2})
        async with McpClient(read_only) as client:
            refused = await client.call_tool("ingest_episode", {"user_id": "ada",
                                                                "text": "Ada left."})
        async with McpClient(other) as client:
            hidden = _payload(await client.call_tool("search_facts", {
                "user_id": "ada", "query": "Ada works"}))
            missing = await client.call_tool("get_entity", {"user_id": "ada", "entity": "Acme"})
        async with McpClient(plain) as client:
            plain_tools = {t.name for t in (await client.list_tools()).tools}
        return {"tools": tools, "ingested": ingested, "found": found, "page": page,
                "profile": profile, "timeline": timeline, "bad": bad, "refused": refused,
                "hidden": hidden, "missing": missing, "plain": plain_tools}

    seen = asyncio.run(run())
    assert {"search_facts", "get_entity", "get_profile", "get_timeline",
            "ingest_episode"} <= set(seen["tools"])
    assert "search_facts" not in seen["plain"]  # served only when asked for
    assert {"query", "as_of", "known_at", "user_id"} <= set(
        seen["tools"]["search_facts"].input_schema["properties"])
    assert seen["ingested"]["llm_calls"] == 1
    assert [h["fact"]["fact"] for h in seen["found"]["hits"]][:1] == ["Ada works at Acme"]
    assert seen["found"]["hits"][0]["fact"]["valid_at"] == ts("2020-01-01")
    assert [f["fact"] for f in seen["page"]["current"]] == ["Ada works at Acme",
                                                            "Acme is based in Berlin"]
    assert seen["profile"]["topics"]["work"]["company"]["value"] == "Acme"
    assert [e["text"] for e in seen["timeline"]["events"]] == ["Ada joined Acme"]
    assert seen["bad"].is_error and "hopz" in seen["bad"].content[0].text
    assert seen["refused"].is_error and "read-only" in seen["refused"].content[0].text
    assert seen["hidden"]["hits"] == []
    assert seen["missing"].is_error and "NotFoundError" in seen["missing"].content[0].text
    state.close()
