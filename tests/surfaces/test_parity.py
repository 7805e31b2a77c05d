"""Every surface of a memory operation is built from its one row in the operation tables.

The rows are the src tables (:data:`~remem.memory.operation_table.MEMORY_OPERATIONS` and
context's :data:`~remem.context.operation_table.CONTEXT_OPERATIONS`): a new row is checked on
every surface with no edit here. The tests check, for every row, that:

* it is on every surface it declares: a route, an MCP tool (unless the row has none), the
  Python methods (:func:`test_every_row_is_on_every_surface`);
* ``Memory``'s method, its async twin, ``Client``'s method and its async twin take exactly
  the request's parameters, with the same defaults (:func:`test_python_signatures`);
* the HTTP route's body (or path and query parameters) is the request's JSON schema
  (:func:`test_http_route_is_the_request`), and ``remem.Client`` sends each field where the
  row says (:func:`test_client_sends_what_the_row_says`);
* running the examples on an embedded ``Memory`` (``run`` and ``arun``) and on a ``Client``
  against a real server (``run`` and ``arun``) gives the same JSON, ids and times aside
  (:func:`test_same_json_everywhere`).

What differs on a surface is data here, keyed by the row's request, each with its reason:
:data:`PYTHON_DIFFERENCES` and :data:`EXAMPLES` (a script, in the order it runs).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from mcp import Client as McpClient
from pydantic_core import PydanticUndefined

from remem.api import Memory
from remem.client import Client, call_of, context_call
from remem.context.assemble import ContextRequest
from remem.context.operation_table import CONTEXT_OPERATIONS
from remem.embed import FakeEmbedder
from remem.errors import UsageError
from remem.memory.operation_table import MEMORY_OPERATIONS
from remem.memory.requests import (
    AddRequest,
    DeleteAllRequest,
    DeleteRequest,
    ExportRequest,
    GetAllRequest,
    GetRequest,
    HistoryRequest,
    ImportRequest,
    MemoryRequest,
    SearchRequest,
    UndoRequest,
    UpdateRequest,
)
from remem.memory.wire import RESULT_MODELS
from remem.operations import Operation
from remem.server import ServerConfig, create_app
from remem.server.mcp import CONTEXT_TOOL, FORGET_TOOL, MCP_TOOLS, build_mcp
from remem.server.state import Principal
from remem.testing.server import ThreadedServer
from remem.threads.requests import ListThreadsRequest
from tests.memory_support import make_store, rule_model
from tests.surfaces.rows import (
    check_call_follows_the_row,
    check_route_is_the_request,
    parameters,
)

#: every row the memory surfaces serve
TABLE: tuple[Operation, ...] = (*MEMORY_OPERATIONS, *CONTEXT_OPERATIONS)

#: no method takes ``actor``: it belongs to whoever runs the request (``Memory(actor=...)``;
#: a server records the caller's key)
PYTHON_DROPS = ("actor",)


def _ids(rows: tuple[Operation, ...]) -> list[str]:
    return [row.request.__name__ for row in rows]


def row_of(request: type[MemoryRequest[Any]]) -> Operation:
    return next(row for row in TABLE if row.request is request)


@dataclass(frozen=True)
class PythonDifference:
    """Parameters the Python methods add (``extra``: name -> default, ``REQUIRED`` for
    none; ``embedded_extra``: only ``Memory``'s) or leave out (``drops``), and why."""

    extra: Mapping[str, Any] = field(default_factory=dict)
    embedded_extra: Mapping[str, Any] = field(default_factory=dict)
    drops: tuple[str, ...] = ()
    why: str = ""


REQUIRED = PydanticUndefined


PYTHON_DIFFERENCES: dict[type[MemoryRequest[Any]], PythonDifference] = {
    ExportRequest: PythonDifference(
        extra={"target": REQUIRED},
        why="export(target) streams the lines into a file; run() returns them"),
    ImportRequest: PythonDifference(
        extra={"source": REQUIRED}, drops=("lines",),
        why="import_(source) streams a file of any size; run() takes lines"),
    ContextRequest: PythonDifference(
        embedded_extra={"threads": None},
        why="Memory.context reads the thread store it is given; a server reads the tenant's"),
}


@dataclass
class State:
    """What earlier examples produced (ids and lines the later ones refer to)."""

    memory_id: str = ""
    event_id: str = ""
    lines: list[str] = field(default_factory=list)

    def saw(self, result: Any) -> None:
        added = getattr(result, "added", None)
        if added and not self.memory_id:
            self.memory_id = added[0].id
        if isinstance(result, list) and result:  # a history
            self.event_id = result[-1].id
        lines = getattr(result, "lines", None)
        if lines is not None:
            self.lines = list(lines)


Example = Callable[[State], MemoryRequest[Any]]

EXAMPLES: dict[type[MemoryRequest[Any]], tuple[Example, ...]] = {
    AddRequest: (
        lambda s: AddRequest(messages="Alice drinks green tea", user_id="alice", infer=False,
                             metadata={"topic": "drinks"}),
        lambda s: AddRequest(messages="I live in Berlin", user_id="alice"),
        lambda s: AddRequest(messages=[{"role": "user", "content": "I moved to Rome"}],
                             user_id="alice", thread_id="t1"),
        lambda s: AddRequest(messages="Bob likes jazz", user_id="bob", agent_id="dj",
                             infer=False, kind="preference"),
    ),
    SearchRequest: (
        lambda s: SearchRequest(query="green tea", user_id="alice"),
        lambda s: SearchRequest(query="zzz", user_id="bob", min_score=0.6),
        lambda s: SearchRequest(user_id="alice", limit=1, offset=1),
        lambda s: SearchRequest(query="Rome", user_id="alice", recency_half_life=3600.0,
                                mmr=0.5, mode="hybrid", filters={"kind": "fact"}),
        lambda s: SearchRequest(query="tea", user_id="alice", include_invalid=True,
                                limit=300),
    ),
    GetRequest: (lambda s: GetRequest(memory_id=s.memory_id),),
    GetAllRequest: (
        lambda s: GetAllRequest(user_id="alice", limit=2),
        lambda s: GetAllRequest(user_id="alice", include_invalid=True, offset=1),
    ),
    UpdateRequest: (
        lambda s: UpdateRequest(memory_id=s.memory_id, content="Alice drinks jasmine tea",
                                reason="more precise", version=1),
        lambda s: UpdateRequest(memory_id=s.memory_id, metadata={"checked": True}),
    ),
    HistoryRequest: (lambda s: HistoryRequest(memory_id=s.memory_id),),
    UndoRequest: (lambda s: UndoRequest(event_id=s.event_id),),
    DeleteRequest: (lambda s: DeleteRequest(memory_id=s.memory_id, reason="wrong"),),
    ExportRequest: (lambda s: ExportRequest(user_id="alice"),),
    ImportRequest: (lambda s: ImportRequest(lines=s.lines),),
    DeleteAllRequest: (
        lambda s: DeleteAllRequest(user_id="alice", reason="forget me"),
        lambda s: GetAllRequest(user_id="alice", include_invalid=True),
    ),
}
"""Requests the same-JSON test runs on every surface, in this order (a script: later steps
use the ids earlier ones made). Every memory row has some; context has none here because
``Client.run`` does not send a ``ContextRequest`` (``Client.context`` does, checked by
``tests/context/test_http.py``)."""


def test_the_table_covers_every_memory_request() -> None:
    import remem.memory.requests as module

    declared = {getattr(module, name) for name in module.__all__
                if isinstance(getattr(module, name), type)
                and issubclass(getattr(module, name), MemoryRequest)
                and getattr(module, name) is not MemoryRequest}
    assert {row.request for row in MEMORY_OPERATIONS} == declared
    assert set(RESULT_MODELS) == declared  # and each has its JSON shape
    assert len({row.request for row in TABLE}) == len(TABLE)  # one row per request
    assert set(EXAMPLES) == declared
    assert all(difference.why for difference in PYTHON_DIFFERENCES.values())
    for row in MEMORY_OPERATIONS:  # the row's wire model is the one Client reads
        assert row.result is RESULT_MODELS[row.request], row.request.__name__


# -- every surface -----------------------------------------------------------------------------


def _served_tools(**flags: Any) -> set[str]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    server = build_mcp(app.state.remem, lambda ctx: Principal("acme"), **flags)

    async def listed() -> set[str]:
        async with McpClient(server) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    try:
        return asyncio.run(listed())
    finally:
        app.state.remem.close()


def test_every_row_is_on_every_surface(openapi: dict[str, Any]) -> None:
    """A row is served everywhere it says: no surface can forget it."""
    default = _served_tools()
    everything = _served_tools(tools=(*MCP_TOOLS, FORGET_TOOL), context=True)
    for row in TABLE:
        name = row.request.__name__
        route = openapi["paths"][row.route.path][row.route.method.lower()]
        assert route["operationId"].startswith(row.route.name + "_"), name
        assert route["summary"] == row.route.summary, name
        if row.tool is not None:
            assert row.tool.name in everything, name
            assert (row.tool.name in default) is not row.tool.on_request, name
        assert row.python is not None, name
        async_name = "a" + row.python.rstrip("_")
        for cls in (Memory, Client):
            assert callable(getattr(cls, row.python)), (cls.__name__, name)
            assert inspect.iscoroutinefunction(getattr(cls, async_name)), (cls.__name__, name)
    # and nothing else: every memory tool a server can list is a row's
    listed = {tool.name for tool in (*MCP_TOOLS, FORGET_TOOL, CONTEXT_TOOL)}
    assert listed == {row.tool.name for row in TABLE if row.tool}


# -- Python signatures ---------------------------------------------------------------------------


def _expected(row: Operation, *, remote: bool) -> dict[str, Any]:
    """The parameters a Python method of ``row`` takes: the request's fields, less those the
    row's :data:`PYTHON_DIFFERENCES` drops and ``actor`` (and, on ``Client``, the local
    fields: Python objects cannot be sent), plus its extras."""
    difference = PYTHON_DIFFERENCES.get(row.request, PythonDifference())
    drops = {*difference.drops, *PYTHON_DROPS}
    if remote:
        drops |= {n for n, i in row.request.model_fields.items() if i.exclude}
    expected = {name: info.get_default(call_default_factory=True)
                if not info.is_required() else PydanticUndefined
                for name, info in row.request.model_fields.items() if name not in drops}
    return {**expected, **difference.extra, **({} if remote else difference.embedded_extra)}


SURFACES: dict[str, tuple[type, bool, bool]] = {
    "Memory": (Memory, False, False),
    "Memory async": (Memory, True, False),
    "Client": (Client, False, True),
    "Client async": (Client, True, True),
}


@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize("row", TABLE, ids=_ids(TABLE))
def test_python_signatures(row: Operation, surface: str) -> None:
    cls, is_async, remote = SURFACES[surface]
    assert row.python is not None
    method = getattr(cls, "a" + row.python.rstrip("_") if is_async else row.python)
    assert inspect.iscoroutinefunction(method) is is_async
    assert parameters(method) == _expected(row, remote=remote)


@pytest.mark.parametrize("cls", [Memory, Client])
def test_run_takes_any_request_value(cls: type) -> None:
    for name in ("run", "arun"):
        assert list(parameters(getattr(cls, name))) == ["request"]


# -- HTTP --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    schema: dict[str, Any] = app.openapi()
    app.state.remem.close()
    return schema


@pytest.mark.parametrize("row", TABLE, ids=_ids(TABLE))
def test_http_route_is_the_request(row: Operation, openapi: dict[str, Any]) -> None:
    check_route_is_the_request(row, openapi)


def _sample(request: type[MemoryRequest[Any]]) -> MemoryRequest[Any]:
    """A request of each row's type, every path field set (a value that needs quoting)."""
    state = State(memory_id="mem 1/a", event_id="evt 2/b", lines=["{}"])
    if request is ContextRequest:
        return ContextRequest(query="tea", user_id="alice", budget_tokens=100)
    return EXAMPLES[request][0](state)


@pytest.mark.parametrize("row", TABLE, ids=_ids(TABLE))
def test_client_sends_what_the_row_says(row: Operation) -> None:
    """``remem.Client`` builds each call from the row's plain data: the method, the path
    with its fields filled in, the query fields (those set), the body fields, and reads the
    answer with the row's result model."""
    request = _sample(row.request)
    call = context_call(request) if isinstance(request, ContextRequest) else call_of(request)
    check_call_follows_the_row(row, request, call)


def test_the_client_sends_only_memory_requests() -> None:
    """A request without a row in the memory table is refused before anything is sent."""
    with pytest.raises(UsageError, match="cannot send a ListThreadsRequest"):
        call_of(ListThreadsRequest())  # type: ignore[arg-type]


# -- the same JSON on every surface ------------------------------------------------------------

_ID = re.compile(r"\b(mem|evt|msg)_[0-9a-f]{26}\b")
_TIME_KEYS = {"valid_at", "invalid_at", "valid_until", "recorded_at", "event_time",
              "created_at", "updated_at", "at"}


def _normal(data: Any, key: str = "") -> Any:
    """JSON with what must differ between two runs made equal: ids, times, the actor (the
    server records the caller's key), float noise from recency ages."""
    if isinstance(data, dict):
        return {k: _normal(v, k) for k, v in data.items()}
    if isinstance(data, list):
        return [_normal(v) for v in data]
    if key in _TIME_KEYS and data is not None:
        return "<time>"
    if key in ("actor",):
        return "<actor>"
    if key == "change_id":
        return "<id>"
    if isinstance(data, float):
        return round(data, 3)
    if isinstance(data, str):
        if key == "lines" or data.startswith("{"):
            return _normal(json.loads(data))
        return _ID.sub(lambda m: f"{m.group(1)}_<id>", data)
    return data


def _dump(request: MemoryRequest[Any], result: Any) -> Any:
    data = RESULT_MODELS[type(request)].of(result).model_dump(mode="json", by_alias=True)
    if isinstance(request, ExportRequest):  # line order follows ids, which differ
        data["lines"] = sorted(json.dumps(_normal(json.loads(line)), sort_keys=True)
                               for line in data["lines"])
    return _normal(data)


def _script(run: Callable[[MemoryRequest[Any]], Any]) -> list[Any]:
    state = State()
    seen = []
    for examples in EXAMPLES.values():
        for example in examples:
            request = example(state)
            result = run(request)
            state.saw(result)
            seen.append((type(request).__name__, _dump(request, result)))
    return seen


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[str]]]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), llm=rule_model(),
                                  mcp=False))
    # one tenant per run: each starts from an empty memory
    keys = [app.state.remem.keys.create(f"tenant{n}")[0] for n in range(2)]
    with ThreadedServer(app) as served:
        yield served.url, keys
    app.state.remem.close()


def test_same_json_everywhere(server: tuple[str, list[str]]) -> None:
    url, keys = server
    expected = _script(Memory(make_store("sqlite"), llm=rule_model()).run)
    runs: dict[str, list[Any]] = {}
    with asyncio.Runner() as runner:
        memory = Memory(make_store("sqlite"), llm=rule_model())
        runs["Memory.arun"] = _script(lambda r: runner.run(memory.arun(r)))
    with Client(url, keys[0]) as client:
        runs["Client.run"] = _script(client.run)
    with asyncio.Runner() as runner, Client(url, keys[1]) as client:
        runs["Client.arun"] = _script(lambda r: runner.run(client.arun(r)))
        runner.run(client.aclose())
    names = [name for name, _ in expected]
    assert names.count("AddRequest") == 4 and names[-1] == "GetAllRequest"
    for surface, seen in runs.items():
        for step, ((name, want), (_, got)) in enumerate(zip(expected, seen, strict=True)):
            assert got == want, f"{surface}, step {step}: {name}"


def test_the_examples_exercise_the_options() -> None:
    """The same-JSON test is worth what its examples do: check that they did something."""
    steps = [data for _, data in _script(Memory(make_store("sqlite"), llm=rule_model()).run)]
    assert steps[4]["hits"][0]["memory"]["text"] == "Alice drinks green tea"
    assert steps[5]["hits"] == []  # min_score dropped the unrelated hit
    assert len(steps[6]["hits"]) == 1  # limit 1, offset 1
    assert set(steps[7]["hits"][0]["details"]) == {"keyword", "vector", "recency"}
    assert [c["memory"]["text"] for c in steps[-2]["changes"]] == ["Lives in Rome"]
    assert {m["status"] for m in steps[-1]["memories"]} == {"invalid"}
