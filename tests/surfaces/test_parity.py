"""Every surface of a memory operation is built from its one request declaration.

:data:`OPERATIONS` lists each request type of :mod:`remem.memory.requests` with the names it
has on each surface. The tests check, for every row, that:

* ``Memory``'s method, its async twin, ``Client``'s method and its async twin take exactly
  the request's parameters, with the same defaults (:func:`test_python_signatures`);
* the HTTP route's body (or path and query parameters) is the request's JSON schema
  (:func:`test_http_route_is_the_request`);
* running the row's examples on an embedded ``Memory`` (``run`` and ``arun``) and on a
  ``Client`` against a real server (``run`` and ``arun``) gives the same JSON, ids and
  times aside (:func:`test_same_json_everywhere`).

Surface-specific differences are columns of the table, each with its reason. To cover a new
surface (CLI options, MCP tools, agent tools), add a column and a test that reads it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_core import PydanticUndefined

from remem.api import Memory
from remem.client import Client
from remem.embed import FakeEmbedder
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
from remem.server import ServerConfig, create_app
from remem.testing.server import ThreadedServer
from tests.memory_support import make_store, rule_model

#: Client methods do not take ``actor``: the server records the caller's key instead
CLIENT_DROPS = ("actor",)


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


@dataclass(frozen=True)
class Operation:
    """One memory operation and how each surface names it.

    ``method``: the facade method (``Memory``'s and ``Client``'s; the async twin is
    ``async_method``). ``http``: the route (method, path). ``path``: request fields taken
    from the URL path; ``query``: the route takes the rest as query parameters (no body);
    ``http_drops``: fields a route without a body does not take (``actor``: the server
    records the caller's key). ``python_extra`` / ``python_drops``: parameters the Python
    methods add or leave out, and ``why``. ``examples``: requests run in the same-JSON
    test, in table order.
    """

    request: type[MemoryRequest[Any]]
    method: str
    http: tuple[str, str]
    path: tuple[str, ...] = ()
    query: bool = False
    http_drops: tuple[str, ...] = ()
    python_extra: tuple[str, ...] = ()
    python_drops: tuple[str, ...] = ()
    why: str = ""
    examples: tuple[Example, ...] = ()

    @property
    def async_method(self) -> str:
        return "a" + self.method.rstrip("_")


OPERATIONS: tuple[Operation, ...] = (
    Operation(AddRequest, "add", ("POST", "/v1/memories"), examples=(
        lambda s: AddRequest(messages="Alice drinks green tea", user_id="alice", infer=False,
                             metadata={"topic": "drinks"}),
        lambda s: AddRequest(messages="I live in Berlin", user_id="alice"),
        lambda s: AddRequest(messages=[{"role": "user", "content": "I moved to Rome"}],
                             user_id="alice", thread_id="t1"),
        lambda s: AddRequest(messages="Bob likes jazz", user_id="bob", agent_id="dj",
                             infer=False, kind="preference"),
    )),
    Operation(SearchRequest, "search", ("POST", "/v1/memories/search"), examples=(
        lambda s: SearchRequest(query="green tea", user_id="alice"),
        lambda s: SearchRequest(query="zzz", user_id="bob", min_score=0.6),
        lambda s: SearchRequest(user_id="alice", limit=1, offset=1),
        lambda s: SearchRequest(query="Rome", user_id="alice", recency_half_life=3600.0,
                                mmr=0.5, mode="hybrid", filters={"kind": "fact"}),
        lambda s: SearchRequest(query="tea", user_id="alice", include_invalid=True,
                                limit=300),
    )),
    Operation(GetRequest, "get", ("GET", "/v1/memories/{memory_id}"), path=("memory_id",),
              examples=(lambda s: GetRequest(memory_id=s.memory_id),)),
    Operation(GetAllRequest, "get_all", ("POST", "/v1/memories/list"), examples=(
        lambda s: GetAllRequest(user_id="alice", limit=2),
        lambda s: GetAllRequest(user_id="alice", include_invalid=True, offset=1),
    )),
    Operation(UpdateRequest, "update", ("PATCH", "/v1/memories/{memory_id}"),
              path=("memory_id",), examples=(
        lambda s: UpdateRequest(memory_id=s.memory_id, content="Alice drinks jasmine tea",
                                reason="more precise", version=1),
        lambda s: UpdateRequest(memory_id=s.memory_id, metadata={"checked": True}),
    )),
    Operation(HistoryRequest, "history", ("GET", "/v1/memories/{memory_id}/history"),
              path=("memory_id",),
              examples=(lambda s: HistoryRequest(memory_id=s.memory_id),)),
    Operation(UndoRequest, "undo", ("POST", "/v1/events/{event_id}/undo"),
              path=("event_id",), http_drops=("actor",),
              examples=(lambda s: UndoRequest(event_id=s.event_id),)),
    Operation(DeleteRequest, "delete", ("DELETE", "/v1/memories/{memory_id}"),
              path=("memory_id",), query=True, http_drops=("actor",), examples=(
        lambda s: DeleteRequest(memory_id=s.memory_id, reason="wrong"),
    )),
    Operation(ExportRequest, "export", ("POST", "/v1/memories/export"),
              python_extra=("target",),
              why="export(target) streams the lines into a file; run() returns them",
              examples=(lambda s: ExportRequest(user_id="alice"),)),
    Operation(ImportRequest, "import_", ("POST", "/v1/memories/import"),
              python_extra=("source",), python_drops=("lines",),
              why="import_(source) streams a file of any size; run() takes lines",
              examples=(lambda s: ImportRequest(lines=s.lines),)),
    Operation(DeleteAllRequest, "delete_all", ("POST", "/v1/memories/delete"), examples=(
        lambda s: DeleteAllRequest(user_id="alice", reason="forget me"),
        lambda s: GetAllRequest(user_id="alice", include_invalid=True),
    )),
)


def test_the_table_covers_every_memory_request() -> None:
    import remem.memory.requests as module

    declared = {getattr(module, name) for name in module.__all__
                if isinstance(getattr(module, name), type)
                and issubclass(getattr(module, name), MemoryRequest)
                and getattr(module, name) is not MemoryRequest}
    assert {op.request for op in OPERATIONS} == declared
    assert set(RESULT_MODELS) == declared  # and each has its JSON shape


# -- Python signatures ---------------------------------------------------------------------------


def _parameters(function: Callable[..., Any]) -> dict[str, Any]:
    """Name -> default (``PydanticUndefined`` when required) of a method's parameters."""
    found = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name == "self":
            continue
        empty = parameter.default is inspect.Parameter.empty
        found[name] = PydanticUndefined if empty else parameter.default
    return found


def _expected(op: Operation, drops: tuple[str, ...]) -> dict[str, Any]:
    expected = {name: info.get_default(call_default_factory=True)
                if not info.is_required() else PydanticUndefined
                for name, info in op.request.model_fields.items()
                if name not in (*op.python_drops, *drops)}
    for name in op.python_extra:
        expected[name] = PydanticUndefined
    return expected


SURFACES: dict[str, tuple[type, bool, tuple[str, ...]]] = {
    "Memory": (Memory, False, ()),
    "Memory async": (Memory, True, ()),
    "Client": (Client, False, CLIENT_DROPS),
    "Client async": (Client, True, CLIENT_DROPS),
}


@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize("op", OPERATIONS, ids=[op.method for op in OPERATIONS])
def test_python_signatures(op: Operation, surface: str) -> None:
    cls, is_async, drops = SURFACES[surface]
    method = getattr(cls, op.async_method if is_async else op.method)
    assert inspect.iscoroutinefunction(method) is is_async
    assert _parameters(method) == _expected(op, drops)


@pytest.mark.parametrize("cls", [Memory, Client])
def test_run_takes_any_request_value(cls: type) -> None:
    for name in ("run", "arun"):
        assert list(_parameters(getattr(cls, name))) == ["request"]


# -- HTTP --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    schema: dict[str, Any] = app.openapi()
    app.state.remem.close()
    return schema


def _plain(schema: Any) -> Any:
    """A JSON schema as compared here: FastAPI leaves out ``"default": null``."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items()
                if not (k == "default" and v is None) and k != "title"}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


def _request_schema(op: Operation, without: tuple[str, ...] = ()) -> dict[str, Any]:
    schema = op.request.model_json_schema(ref_template="#/components/schemas/{model}")
    for name in without:
        schema["properties"].pop(name, None)
        if name in schema.get("required", []):
            schema["required"].remove(name)
    if not schema.get("required"):
        schema.pop("required", None)
    schema.pop("description", None)
    plain: dict[str, Any] = _plain(schema)
    return plain


@pytest.mark.parametrize("op", OPERATIONS, ids=[op.method for op in OPERATIONS])
def test_http_route_is_the_request(op: Operation, openapi: dict[str, Any]) -> None:
    verb, path = op.http
    route = openapi["paths"][path][verb.lower()]
    params = {p["name"]: p for p in route.get("parameters", [])}
    assert {n for n, p in params.items() if p["in"] == "path"} == set(op.path)
    want = _request_schema(op, without=(*op.path, *op.http_drops))
    body = route.get("requestBody")
    if op.query:  # every other field is a query parameter, with the field's schema
        assert body is None
        query = {n: _plain(p["schema"]) for n, p in params.items() if p["in"] == "query"}
        assert query == want["properties"]
    elif want["properties"]:
        ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        got = dict(openapi["components"]["schemas"][ref])
        got.pop("description", None)
        assert _plain(got) == want
    else:
        assert body is None
    # every answer is a declared model, so schema checks cover responses too
    answer = route["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer["$ref"].rsplit("/", 1)[1] == RESULT_MODELS[op.request].__name__


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
    for op in OPERATIONS:
        for example in op.examples:
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
