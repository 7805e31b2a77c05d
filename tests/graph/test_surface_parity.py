"""Every graph surface is built from one table (GRAPH_OPERATIONS), checked row by row:

- the table has one row per request of remem.graph.requests, each naming its Graph method;
- the OpenAPI schema of each /v1/graph route is the request (the body), and its answer the
  row's result model (tests/surfaces/rows.py, as for every family's table);
- ``client.graph(...)`` sends each request as its row says, and its methods build them;
- Graph's and RemoteGraph's methods take the request's parameters, with its defaults;
- an MCP tool is served for each row that declares one, only when the server is asked for
  the graph's tools (and the model's tool only when the server has a model), and nothing
  else.

The answers themselves (embedded, HTTP, Client, MCP) are compared in test_http.py.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

import pytest
from mcp import Client as McpClient
from pydantic_core import PydanticUndefined

import remem.graph.requests as module
from remem.embed import FakeEmbedder
from remem.graph import Graph
from remem.graph.operation_table import GRAPH_OPERATIONS
from remem.graph.profile import parse_patches
from remem.graph.remote import RemoteGraph, graph_call
from remem.graph.requests import (
    EntityRequest,
    ExpandRequest,
    GraphRequest,
    IngestEpisodeRequest,
    PatchProfileRequest,
    ProfileRequest,
    SearchFactsRequest,
    TimelineRequest,
)
from remem.llm import ScriptedModel
from remem.operations import Operation, row_of
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal
from remem.transport import Call
from tests.surfaces.rows import check_call_follows_the_row, check_route_is_the_request, parameters

ROWS = {row.request.__name__: row for row in GRAPH_OPERATIONS}


def test_one_row_per_request_each_naming_its_graph_method() -> None:
    declared = {value for value in vars(module).values() if isinstance(value, type)
                and issubclass(value, GraphRequest) and value.operation}
    assert [row.request for row in GRAPH_OPERATIONS] == list(dict.fromkeys(
        row.request for row in GRAPH_OPERATIONS))
    assert {row.request for row in GRAPH_OPERATIONS} == declared
    for row in GRAPH_OPERATIONS:
        assert row.python == row.request.operation
        assert callable(getattr(Graph, row.python)) and callable(getattr(RemoteGraph, row.python))
        assert row.writes is (row.request in (IngestEpisodeRequest, PatchProfileRequest))
        assert row.calls_model is (row.request is IngestEpisodeRequest)


# -- HTTP ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    schema: dict[str, Any] = app.openapi()
    app.state.remem.close()
    return schema


@pytest.mark.parametrize("row", GRAPH_OPERATIONS, ids=list(ROWS))
def test_the_route_is_the_request(openapi: dict[str, Any], row: Operation) -> None:
    check_route_is_the_request(row, openapi)
    route = openapi["paths"][row.route.path][row.route.method.lower()]
    assert route["operationId"].startswith(row.route.name + "_")
    assert (route["summary"], route["description"]) == (row.route.summary,
                                                        row.route.description)


def test_every_graph_route_is_a_row(openapi: dict[str, Any]) -> None:
    served = {(method.upper(), path) for path, ops in openapi["paths"].items()
              if path.startswith("/v1/graph") for method in ops}
    assert served == {(row.route.method, row.route.path) for row in GRAPH_OPERATIONS}


PATCH = [{"op": "add", "path": "/work/company", "value": "Acme"}]
#: RemoteGraph method calls (name, arguments, keyword arguments), each with the request it
#: must send (the scope: user u)
SENT: list[tuple[str, tuple[Any, ...], dict[str, Any], GraphRequest[Any]]] = [
    ("ingest", ("Ada joined Acme.",), {"source_ids": ["s1"]},
     IngestEpisodeRequest.of(user_id="u", text="Ada joined Acme.", source_ids=["s1"])),
    ("search", ("Ada",), {"limit": 3, "as_of": 5, "focal": "Ada", "rerank": "mmr"},
     SearchFactsRequest.of(user_id="u", query="Ada", limit=3, as_of=5.0, focal="Ada",
                           rerank="mmr")),
    ("entity", (7,), {"as_of": 1}, EntityRequest.of(user_id="u", entity=7, as_of=1.0)),
    ("expand", ("Ada",), {"hops": 3, "known_at": 2},
     ExpandRequest.of(user_id="u", entity="Ada", hops=3, known_at=2.0)),
    ("profile", (), {}, ProfileRequest.of(user_id="u")),
    ("patch_profile", (PATCH,), {},
     PatchProfileRequest.of(user_id="u", patch=parse_patches(PATCH))),
    ("timeline", (), {"since": 1, "tags": ("work",)},
     TimelineRequest.of(user_id="u", since=1.0, tags=["work"])),
]


class Recorder:
    """A Client stand-in: records the calls sent (sync and async), answers nothing."""

    url = "http://x"

    def __init__(self) -> None:
        self.sent: list[Call[Any]] = []

    def _send(self, call: Call[Any]) -> Any:
        self.sent.append(call)

    async def _asend(self, call: Call[Any]) -> Any:
        self.sent.append(call)


@pytest.mark.parametrize(("name", "args", "kwargs", "request_value"), SENT,
                         ids=[name for name, *_ in SENT])
def test_the_client_sends_what_the_row_says(name: str, args: tuple[Any, ...],
                                            kwargs: dict[str, Any],
                                            request_value: GraphRequest[Any]) -> None:
    row = row_of(GRAPH_OPERATIONS, type(request_value))
    assert row.python == name
    check_call_follows_the_row(row, request_value, graph_call(request_value))
    recorder = Recorder()
    remote = RemoteGraph(recorder, user_id="u")
    getattr(remote, name)(*args, **kwargs)
    # every method has an async twin (docs/graph.md), and it sends the same call
    asyncio.run(getattr(remote, "a" + name)(*args, **kwargs))
    assert recorder.sent and all(call == graph_call(request_value) for call in recorder.sent)


# -- Python signatures -----------------------------------------------------------------------

#: Graph parameters that cannot travel, with why (RemoteGraph leaves them out)
EMBEDDED_ONLY: dict[str, dict[str, str]] = {
    "ingest": {"source": "the server names the episode's source",
               "model": "the server's model extracts"},
    "search": {name: "fusion tuning stays the server's" for name in (
        "fusion", "mmr_lambda", "candidates", "max_postings")},
}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) \
        else value


def _expected(row: Operation) -> dict[str, Any]:
    """The parameters a Python method of ``row`` takes: the Graph method's arguments the
    request holds (its fields less the scope; an ingest's episode is its text or messages),
    with the request's defaults."""
    fields = row.request.model_fields
    out = {name: _plain(info.get_default(call_default_factory=True))
           if not info.is_required() else PydanticUndefined
           for name, info in fields.items() if name not in ("user_id", "agent_id")}
    if row.request is IngestEpisodeRequest:
        del out["text"], out["messages"]
        out = {"episode": PydanticUndefined, **out}
    return out


@pytest.mark.parametrize("row", GRAPH_OPERATIONS, ids=list(ROWS))
def test_python_methods_take_the_request_parameters(row: Operation) -> None:
    assert row.python is not None
    want = _expected(row)
    remote = {k: _plain(v) for k, v in parameters(getattr(RemoteGraph, row.python)).items()}
    assert remote == want
    if hasattr(RemoteGraph, "a" + row.python):
        assert inspect.iscoroutinefunction(getattr(RemoteGraph, "a" + row.python))
    embedded = {k: _plain(v) for k, v in parameters(getattr(Graph, row.python)).items()}
    extra = EMBEDDED_ONLY.get(row.python, {})
    assert {k: v for k, v in embedded.items() if k not in extra} == want
    assert set(extra) <= set(embedded)


def test_the_sample_requests_hold_the_graph_arguments() -> None:
    # run_on calls the row's Graph method with these: the names the signatures were checked on
    for *_, request in SENT:
        assert set(request.graph_arguments()) == set(_expected(ROWS[type(request).__name__]))


# -- MCP -----------------------------------------------------------------------------------------


def _tools(*, graph: bool, model: bool) -> list[str]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False,
                                  llm=ScriptedModel(default="{}") if model else None))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"), graph=graph)

    async def listed() -> list[str]:
        async with McpClient(server) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    try:
        return asyncio.run(listed())
    finally:
        app.state.remem.close()


def test_each_row_with_a_tool_is_served_when_asked_for() -> None:
    plain, with_model = _tools(graph=False, model=True), _tools(graph=True, model=True)
    without_model = _tools(graph=True, model=False)
    tools = {row.tool.name: row for row in GRAPH_OPERATIONS if row.tool is not None}
    assert len(tools) == 5
    for name, row in tools.items():
        assert row.tool is not None and row.tool.on_request and name not in plain
        assert name in with_model
        assert (name in without_model) is not row.calls_model
    # and nothing else: every tool the graph switch adds is a row's
    assert set(with_model) - set(plain) == set(tools)
