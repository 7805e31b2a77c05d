"""Every surface of a prompt operation is built from its one row of
:data:`~remem.procedural.operation_table.PROMPT_OPERATIONS`: the ``/v1/prompts`` routes (by the
router builder), ``client.prompts`` (by :meth:`~remem.operations.Operation.call`) and the
prompt MCP tools (by the registrar). For every row, the tests check that:

* the table has one row per prompt request, and ``/v1/prompts`` serves exactly the rows'
  routes, with the operation ids, summaries and descriptions the rows say;
* its route takes the request (path, query parameters or body, each field's schema) and
  answers with the row's result model (tests/surfaces/rows.py);
* ``client.prompts`` sends each field where the row says, never the ``author`` the server
  sets, and reads the answer with the row's result model;
* its ``client.prompts`` method and async twin take the request's parameters with its
  defaults, less what the server sets;
* the rows that declare a tool are the prompt tools ``build_mcp(procedural=True)`` serves.

The same requests embedded and through a server give the same JSON in ``test_surfaces.py``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client as McpClient
from pydantic_core import PydanticUndefined

from remem.errors import UsageError
from remem.memory.requests import GetRequest
from remem.operations import Operation, row_of
from remem.procedural.operation_table import PROMPT_OPERATIONS
from remem.procedural.remote import RemotePrompts, prompt_call
from remem.procedural.requests import (
    RESULT_MODELS,
    CreatePromptRequest,
    GetPromptRequest,
    ListPromptsRequest,
    OptimizePromptRequest,
    PromptDiffRequest,
    PromptHistoryRequest,
    RollbackPromptRequest,
    SubmitOptimizationRequest,
    UpdatePromptRequest,
)
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

IDS = [row.request.__name__ for row in PROMPT_OPERATIONS]
NAME = "qa:v1.2_x"  # the colon is quoted in the path
TRAJECTORIES = [{"messages": "2+2?", "feedback": {"score": 0.2, "comment": "too long"},
                 "id": "t1"}]

#: requests of each row: defaults, and every field set (``author`` too: never sent)
SAMPLES: list[Request] = [
    ListPromptsRequest(),
    CreatePromptRequest.of(name="qa", text="Answer {q}."),
    CreatePromptRequest.of(name="qa", text="Answer {q}.", variables=["q"], author="me",
                           reason="r"),
    GetPromptRequest.of(name=NAME), GetPromptRequest.of(name=NAME, version=2),
    UpdatePromptRequest.of(name=NAME, text="t"),
    UpdatePromptRequest.of(name=NAME, text="t", author="me", reason="r", expected_version=3,
                           variables=[]),
    PromptHistoryRequest.of(name=NAME),
    PromptDiffRequest.of(name=NAME), PromptDiffRequest.of(name=NAME, old=1, new=2),
    RollbackPromptRequest.of(name=NAME, version=1, author="me", reason="r"),
    OptimizePromptRequest.of(name=NAME, trajectories=TRAJECTORIES),
    OptimizePromptRequest.of(name=NAME, trajectories=TRAJECTORIES, strategy="gradient",
                             commit=True),
    SubmitOptimizationRequest.of(name=NAME, trajectories=TRAJECTORIES,
                                 strategy="prompt_memory", idempotency_key="k"),
]


@pytest.fixture(scope="module")
def openapi() -> Iterator[dict[str, Any]]:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    yield app.openapi()
    app.state.remem.close()


def test_the_table_covers_every_prompt_request() -> None:
    requests = [row.request for row in PROMPT_OPERATIONS]
    assert len(requests) == len(set(requests))  # one row each
    assert set(requests) == {*RESULT_MODELS, SubmitOptimizationRequest}
    assert {type(sample) for sample in SAMPLES} == set(requests)
    for row in PROMPT_OPERATIONS:
        assert row.result is RESULT_MODELS.get(row.request, row.result)
        assert row.python == row.request.operation
        assert row.route.server_sets == (("author",) if "author" in row.request.model_fields
                                         else ())
        assert row.calls_model is (row.request is OptimizePromptRequest)


def test_every_prompt_route_is_a_row(openapi: dict[str, Any]) -> None:
    """``/v1/prompts`` serves the rows' routes and nothing else, each named and described
    as its row says (the operation ids clients were generated with stay the same)."""
    served = {(path, method.upper()) for path, item in openapi["paths"].items()
              if path.startswith("/v1/prompts") for method in item}
    check_routes_are_the_rows(openapi, PROMPT_OPERATIONS, served, "prompts")


@pytest.mark.parametrize("row", PROMPT_OPERATIONS, ids=IDS)
def test_http_route_is_the_request(row: Operation, openapi: dict[str, Any]) -> None:
    check_route_is_the_request(row, openapi)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda r: type(r).__name__)
def test_the_clients_call_follows_the_row(sample: Request) -> None:
    row = row_of(PROMPT_OPERATIONS, type(sample))
    call = prompt_call(sample)  # type: ignore[arg-type]
    check_call_follows_the_row(row, sample, call)
    assert "author" not in (call.json or {})  # the server records the caller's key


def test_the_client_sends_only_prompt_requests() -> None:
    with pytest.raises(UsageError, match="cannot send a GetRequest"):
        prompt_call(GetRequest.of(memory_id="m"))  # type: ignore[arg-type]


def _expected(row: Operation) -> dict[str, Any]:
    """The request's fields with their defaults, less what the server sets."""
    return {name: (PydanticUndefined if info.is_required() else info.default)
            for name, info in row.request.model_fields.items()
            if name not in row.route.server_sets}


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("row", PROMPT_OPERATIONS, ids=IDS)
def test_client_methods_take_the_request(row: Operation, is_async: bool) -> None:
    assert row.python is not None
    method = getattr(RemotePrompts, "a" + row.python if is_async else row.python)
    assert inspect.iscoroutinefunction(method) is is_async
    assert parameters(method) == _expected(row)


def test_the_rows_tools_are_the_prompt_tools() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"), procedural=True)

    async def listed() -> dict[str, Any]:
        async with McpClient(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = asyncio.run(listed())
    app.state.remem.close()
    rows = [row for row in PROMPT_OPERATIONS if row.tool is not None]
    assert {row.tool.name for row in rows if row.tool} == {"get_prompt", "list_prompts"}
    for row in rows:
        assert row.tool is not None and row.tool.on_request and not row.writes
        tool = tools[row.tool.name]
        assert tool.description == row.tool.description
        assert set(tool.input_schema.get("properties", {})) == set(row.request.model_fields)
