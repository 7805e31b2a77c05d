"""Every surface of a block operation is built from its one row of
:data:`~remem.blocks.operation_table.BLOCK_OPERATIONS`: the ``/v1/blocks`` and
``/v1/agents/{agent_id}/blocks`` routes (by the router builder), ``client.blocks`` (by
:meth:`~remem.operations.Operation.call`) and the application's MCP block tools (by the
registrar). For every row, the tests check that:

* the table has one row per request with its result model, and the server serves exactly
  the rows' block routes (none written by hand);
* its route takes the request (path, query or body, each field's schema) and answers with
  the row's result model (tests/surfaces/rows.py);
* ``client.blocks`` has its method and the async twin, taking the request's parameters with
  the same defaults (the Python names from before the requests kept: ``block_id`` is the
  ``id`` field, as in the paths), as ``Blocks`` does in process, and sends each field where
  the row says;
* the rows with a tool are the MCP block admin tools, taking the request's fields.

The same values over HTTP, through the client and in process are checked in
``test_server.py``, ``test_client.py`` and ``test_mcp_admin.py``.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from mcp import Client as McpClient
from pydantic_core import PydanticUndefined

from remem.blocks import Blocks
from remem.blocks import requests as r
from remem.blocks.operation_table import BLOCK_OPERATIONS
from remem.blocks.remote import RemoteBlocks
from remem.operations import Operation, row_of
from remem.requests import Request
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal
from remem.transport import Call
from tests.surfaces.rows import check_call_follows_the_row, check_route_is_the_request, parameters

# the Python names of the requests' fields where they differ (the methods predate the
# requests; a block's id is `block_id` in Python as in the paths)
RENAMED = {"block_id": "id", "old": "old_content", "new": "new_content",
           "new_value": "new_memory"}
# list_blocks lists every block; an agent's are blocks_of's row
LEFT_OUT = {r.ListBlocksRequest: {"agent_id"}}


def test_one_row_per_request_with_its_result_model() -> None:
    requests = [row.request for row in BLOCK_OPERATIONS]
    assert len(requests) == len(set(requests)) == len(r.RESULT_MODELS)
    for row in BLOCK_OPERATIONS:
        assert row.result is r.RESULT_MODELS[row.request]
        assert row.python is not None and callable(getattr(RemoteBlocks, row.python))


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    schema: dict[str, Any] = app.openapi()
    app.state.remem.close()
    return schema


@pytest.mark.parametrize("row", BLOCK_OPERATIONS, ids=lambda row: row.request.__name__)
def test_http_route_is_the_request(openapi: dict[str, Any], row: Operation) -> None:
    check_route_is_the_request(row, openapi)


def test_every_block_route_is_a_row(openapi: dict[str, Any]) -> None:
    served = {(method.upper(), path) for path, ops in openapi["paths"].items()
              if path.startswith(("/v1/blocks", "/v1/agents/")) for method in ops}
    assert served == {(row.route.method, row.route.path) for row in BLOCK_OPERATIONS}


def _wanted(row: Operation) -> dict[str, Any]:
    return {name: PydanticUndefined if info.is_required() else info.default
            for name, info in row.request.model_fields.items()
            if name not in LEFT_OUT.get(row.request, ())}


def _taken(row: Operation, method: Any) -> dict[str, Any]:
    fields = row.request.model_fields
    return {name if name in fields else RENAMED.get(name, name): default
            for name, default in parameters(method).items()}


@pytest.mark.parametrize("row", BLOCK_OPERATIONS, ids=lambda row: row.request.__name__)
def test_python_methods_take_the_request(row: Operation) -> None:
    assert row.python is not None
    for name in (row.python, f"a{row.python}"):
        assert _taken(row, getattr(RemoteBlocks, name)) == _wanted(row), name
    assert inspect.iscoroutinefunction(getattr(RemoteBlocks, f"a{row.python}"))
    # in process: the same, and what only Python can pass (the actor, a counter, an etag)
    local = _taken(row, getattr(Blocks, row.python))
    assert {k: v for k, v in local.items() if k in _wanted(row)} == _wanted(row)


class _Capture:
    """A client that keeps the calls it is asked to send."""

    def __init__(self) -> None:
        self.calls: list[Call[Any]] = []

    def _send(self, call: Call[Any]) -> Any:
        self.calls.append(call)

    async def _asend(self, call: Call[Any]) -> Any:
        self.calls.append(call)


BID = "b-1"
SAMPLES: list[tuple[str, tuple[Any, ...], dict[str, Any], Request]] = [
    ("create", (BID,), {"label": "human", "read_only": True},
     r.CreateBlockRequest.of(id=BID, label="human", read_only=True)),
    ("get", (BID,), {}, r.GetBlockRequest.of(id=BID)),
    ("list_blocks", (), {}, r.ListBlocksRequest.of()),
    ("update", (BID,), {"value": "v", "etag": "e"},
     r.ChangeBlockRequest.of(id=BID, value="v", etag="e")),
    ("delete", (BID,), {}, r.DeleteBlockRequest.of(id=BID)),
    ("history", (BID,), {}, r.BlockHistoryRequest.of(id=BID)),
    ("attach", ("a", BID), {}, r.AttachBlockRequest.of(agent_id="a", block_id=BID)),
    ("detach", ("a", BID), {}, r.DetachBlockRequest.of(agent_id="a", block_id=BID)),
    ("blocks_of", ("a",), {}, r.AgentBlocksRequest.of(agent_id="a")),
    ("append", ("a", "human", "tea"), {},
     r.AgentAppendRequest.of(agent_id="a", label="human", content="tea")),
    ("replace", ("a", "human", "tea", "milk"), {},
     r.AgentReplaceRequest.of(agent_id="a", label="human", old_content="tea",
                              new_content="milk")),
    ("rethink", ("a", "human", "new"), {},
     r.AgentRethinkRequest.of(agent_id="a", label="human", new_memory="new")),
    ("render", ("a",), {"budget": 50}, r.RenderBlocksRequest.of(agent_id="a", budget=50)),
]


def test_every_row_has_a_sample() -> None:
    assert {type(sample) for *_, sample in SAMPLES} == {row.request for row in BLOCK_OPERATIONS}


@pytest.mark.parametrize(("method", "args", "kwargs", "request_"), SAMPLES,
                         ids=[s[0] for s in SAMPLES])
def test_client_sends_what_the_row_says(method: str, args: tuple[Any, ...],
                                        kwargs: dict[str, Any], request_: Request) -> None:
    row = row_of(BLOCK_OPERATIONS, type(request_))
    client = _Capture()
    blocks = RemoteBlocks(client)
    getattr(blocks, method)(*args, **kwargs)
    asyncio.run(getattr(blocks, f"a{method}")(*args, **kwargs))
    sent, asent = client.calls
    check_call_follows_the_row(row, request_, sent)
    assert sent == asent == row.call(request_)


def test_agent_edits_send_the_agent_in_the_query() -> None:
    call = row_of(BLOCK_OPERATIONS, r.AgentAppendRequest).call(
        r.AgentAppendRequest.of(agent_id="a-1", label="human", content="tea"))
    assert (call.method, call.path) == ("POST", "/v1/blocks/append")
    assert call.params == {"agent_id": "a-1"} and call.json == {"label": "human",
                                                                  "content": "tea"}


def test_the_block_admin_tools_are_the_rows_with_a_tool() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"), block_admin=True)

    async def tools() -> dict[str, Any]:
        async with McpClient(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    try:
        served = asyncio.run(tools())
    finally:
        app.state.remem.close()
    rows = [row for row in BLOCK_OPERATIONS if row.tool is not None]
    assert len(rows) == 7
    for row in rows:
        assert row.tool is not None and row.tool.on_request
        tool = served[row.tool.name]
        assert tool.description == row.tool.description
        assert list(tool.input_schema["properties"]) == list(row.request.model_fields)
