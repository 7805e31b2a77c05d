"""Every surface of an episode operation is built from its one row of
:data:`~remem.episodic.operation_table.EPISODE_OPERATIONS`: the ``/v1/episodes`` routes (by the
router builder), ``client.episodes`` (by :meth:`~remem.operations.Operation.call`) and the
episode MCP tools (by the registrar). For every row, the tests check that:

* the table has one row per episode request, and ``/v1/episodes`` serves exactly the rows'
  routes, with the operation ids, summaries and descriptions the rows say;
* its route takes the request (the body, each field's schema) and answers with the row's
  result model (tests/surfaces/rows.py);
* ``client.episodes`` sends each field where the row says and reads the answer with the row's
  result model;
* its ``client.episodes`` method and async twin take the request's parameters with its
  defaults (what differs is :data:`PYTHON_DIFFERENCES`, with its reason);
* the rows that declare a tool are the episode tools ``build_mcp(procedural=True)`` serves.

The same requests embedded and through a server give the same JSON in
``tests/procedural/test_surfaces.py``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client as McpClient
from pydantic_core import PydanticUndefined

from remem.episodic.operation_table import EPISODE_OPERATIONS
from remem.episodic.remote import RemoteEpisodes, episode_call
from remem.episodic.requests import (
    RESULT_MODELS,
    AddEpisodeRequest,
    ExtractEpisodesRequest,
    ListEpisodesRequest,
    SelectExamplesRequest,
    SubmitExtractionRequest,
)
from remem.episodic.schema import Episode
from remem.errors import UsageError
from remem.memory.requests import GetRequest
from remem.operations import Operation, row_of
from remem.requests import Request
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal
from tests.surfaces.rows import (
    check_call_follows_the_row,
    check_route_is_the_request,
    check_routes_are_the_rows,
    parameters,
)

IDS = [row.request.__name__ for row in EPISODE_OPERATIONS]
MESSAGES = [{"role": "user", "content": "3 km in miles?"},
            {"role": "assistant", "content": "1.86"}]

#: requests of each row: defaults, and every field set
SAMPLES: list[Request] = [
    AddEpisodeRequest.of(situation="user wants tea", action="suggested oolong"),
    AddEpisodeRequest.of(situation="s", action="a", thought="t", result="r", thread_id="th",
                         metadata={"n": [1, {"x": None}]}),
    ListEpisodesRequest(), ListEpisodesRequest.of(limit=5, offset=10),
    SelectExamplesRequest.of(query="tea"),
    SelectExamplesRequest.of(query="tea", k=2, budget_tokens=100, mmr=0.5,
                             max_similarity=0.9, min_relevance=0.1),
    ExtractEpisodesRequest.of(messages="3 km in miles?"),
    ExtractEpisodesRequest.of(messages=MESSAGES, thread_id="th"),
    SubmitExtractionRequest.of(messages="3 km in miles?"),
    SubmitExtractionRequest.of(messages=MESSAGES, thread_id="th", idempotency_key="k"),
]

#: request -> (the parameters its Python methods take instead of the request's, why)
PYTHON_DIFFERENCES: dict[type[Request], tuple[dict[str, Any], str]] = {
    AddEpisodeRequest: ({"episode": PydanticUndefined},
                        "add(episode) takes an Episode or a dict of its fields, as "
                        "EpisodeStore.add does; the request's fields are the episode's"),
}


NO_COMMAND = {
    ExtractEpisodesRequest: "remem episodes extract reads the conversation from a JSON file or "
                            "the database's thread (see docs/architecture.md)",
    SubmitExtractionRequest: "queues a job for a server's worker; the CLI extracts at once",
}
"""The rows that name no command, and why."""


@pytest.fixture(scope="module")
def openapi() -> Iterator[dict[str, Any]]:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    yield app.openapi()
    app.state.remem.close()


def test_the_table_covers_every_episode_request() -> None:
    requests = [row.request for row in EPISODE_OPERATIONS]
    assert len(requests) == len(set(requests))  # one row each
    assert set(requests) == {*RESULT_MODELS, SubmitExtractionRequest}
    assert {type(sample) for sample in SAMPLES} == set(requests)
    for row in EPISODE_OPERATIONS:
        assert row.result is RESULT_MODELS.get(row.request, row.result)
        assert row.python == row.request.operation
        # remem episodes (tests/surfaces/test_parity_cli_tables.py checks the commands)
        assert (row.command is None) is (row.request in NO_COMMAND), row.request
        assert row.route.method == "POST" and row.whole_body
        assert row.calls_model is (row.request is ExtractEpisodesRequest)


def test_every_episode_route_is_a_row(openapi: dict[str, Any]) -> None:
    """``/v1/episodes`` serves the rows' routes and nothing else, each named and described
    as its row says (the operation ids clients were generated with stay the same)."""
    served = {(path, method.upper()) for path, item in openapi["paths"].items()
              if path.startswith("/v1/episodes") for method in item}
    check_routes_are_the_rows(openapi, EPISODE_OPERATIONS, served, "episodes")


@pytest.mark.parametrize("row", EPISODE_OPERATIONS, ids=IDS)
def test_http_route_is_the_request(row: Operation, openapi: dict[str, Any]) -> None:
    check_route_is_the_request(row, openapi)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda r: type(r).__name__)
def test_the_clients_call_follows_the_row(sample: Request) -> None:
    row = row_of(EPISODE_OPERATIONS, type(sample))
    call = episode_call(sample)  # type: ignore[arg-type]
    check_call_follows_the_row(row, sample, call)
    assert call.json == sample.model_dump(mode="json")  # the whole request is the body


def test_the_client_sends_only_episode_requests() -> None:
    with pytest.raises(UsageError, match="cannot send a GetRequest"):
        episode_call(GetRequest.of(memory_id="m"))  # type: ignore[arg-type]


def _expected(row: Operation) -> dict[str, Any]:
    """The request's fields with their defaults, or what the row's methods take instead."""
    if row.request in PYTHON_DIFFERENCES:
        return PYTHON_DIFFERENCES[row.request][0]
    return {name: (PydanticUndefined if info.is_required() else info.default)
            for name, info in row.request.model_fields.items()}


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("row", EPISODE_OPERATIONS, ids=IDS)
def test_client_methods_take_the_request(row: Operation, is_async: bool) -> None:
    assert row.python is not None
    method = getattr(RemoteEpisodes, "a" + row.python if is_async else row.python)
    assert inspect.iscoroutinefunction(method) is is_async
    assert parameters(method) == _expected(row)


def test_an_added_episode_carries_the_requests_fields() -> None:
    """What ``add(episode)`` takes instead of the request's parameters holds them all."""
    assert all(why for _, why in PYTHON_DIFFERENCES.values())
    assert set(AddEpisodeRequest.model_fields) <= set(Episode.model_fields)


def test_the_rows_tools_are_the_episode_tools() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"), procedural=True)
    plain = build_mcp(app.state.remem, lambda ctx: Principal("acme"))

    async def listed(mcp: Any) -> dict[str, Any]:
        async with McpClient(mcp) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools, default = asyncio.run(listed(server)), asyncio.run(listed(plain))
    app.state.remem.close()
    rows = [row for row in EPISODE_OPERATIONS if row.tool is not None]
    assert {row.tool.name for row in rows if row.tool} == {"select_examples", "add_episode"}
    for row in rows:
        assert row.tool is not None and row.tool.on_request
        assert row.tool.name not in default  # served only when asked for
        tool = tools[row.tool.name]
        assert tool.description == row.tool.description
        assert set(tool.input_schema.get("properties", {})) == set(row.request.model_fields)
        assert set(tool.input_schema.get("required", [])) == {
            name for name, info in row.request.model_fields.items() if info.is_required()}
