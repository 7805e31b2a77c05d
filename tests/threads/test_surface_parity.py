"""Every thread surface is built from the request declarations (remem.threads.requests):

- ThreadStore, ScopedThreads and RemoteThreads (sync and async) and the Thread handle take
  each request's parameters, with its defaults;
- the OpenAPI schema of each /v1/threads route is the request's (body or query, less the
  path), and its answer is the result's declared model: each row of THREAD_OPERATIONS,
  checked as every family's table is (tests/surfaces/rows.py), and the Client's calls
  follow the rows;
- the same operations give the same JSON embedded, over raw HTTP and through
  ``client.threads`` (sync and async), ids and times aside; and the same errors;
- on a server, one tenant cannot reach another's threads through the new routes either.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import ConflictError, NotFoundError, RememError, UsageError
from remem.llm import ChatRequest, ScriptedModel
from remem.operations import Operation, row_of
from remem.server import ServerConfig, create_app
from remem.store import IndexConfig, KeywordConfig, open_store
from remem.store.types import NOT_PROVIDED
from remem.testing.server import ThreadedServer
from remem.threads import SummaryPolicy, Thread, ThreadIndex, ThreadStore
from remem.threads.api import ThreadAPI
from remem.threads.operation_table import THREAD_OPERATIONS
from remem.threads.remote import RemoteThreads, call_of
from remem.threads.requests import (
    ALL,
    OMITTABLE,
    AppendRequest,
    CheckpointRequest,
    CheckpointsRequest,
    CompactRequest,
    CopyRequest,
    CreateThreadRequest,
    DeleteThreadRequest,
    ForkRequest,
    GetThreadRequest,
    ListThreadsRequest,
    MessagesRequest,
    RewindRequest,
    SearchThreadsRequest,
    SetMetadataRequest,
    ThreadContextRequest,
    ThreadRequest,
    UpdateStateRequest,
    local_fields,
)
from remem.threads.scoped import ScopedThreads
from remem.threads.wire import RESULT_MODELS, dump
from remem.tokens import EstimateCounter
from tests.surfaces.rows import check_call_follows_the_row, check_route_is_the_request


def summarise(request: ChatRequest) -> str:
    return f"summary of {request.messages[1].text.count(chr(10)) + 1} lines"


def _model() -> ScriptedModel:
    return ScriptedModel(default=summarise)


# -- parameters and defaults ------------------------------------------------------------------


def _wanted(request: type[ThreadRequest[Any]]) -> dict[str, Any]:
    """What a method running ``request`` must take: each field with its default (a field
    whose absence means something takes NOT_PROVIDED; a required one has none)."""
    out: dict[str, Any] = {}
    for name, info in request.model_fields.items():
        if name in OMITTABLE:
            out[name] = NOT_PROVIDED
        else:
            out[name] = inspect.Parameter.empty if info.is_required() else info.default
    return out


def _taken(method: Callable[..., Any], skip: int = 1) -> dict[str, Any]:
    params = list(inspect.signature(method).parameters.values())[skip:]
    return {p.name: p.default for p in params}


@pytest.mark.parametrize("request_type", ALL, ids=lambda r: r.__name__)
@pytest.mark.parametrize("surface", [ThreadStore, ScopedThreads, RemoteThreads])
def test_every_surface_takes_the_request_parameters(surface: type[ThreadAPI],
                                                    request_type: type[ThreadRequest[Any]]
                                                    ) -> None:
    wanted = _wanted(request_type)
    for name in (request_type.operation, "a" + request_type.operation):
        method = getattr(surface, name)
        assert _taken(method) == wanted, f"{surface.__name__}.{name}"
        assert list(_taken(method)) == list(request_type.parameters())  # same order too
    assert inspect.iscoroutinefunction(getattr(surface, "a" + request_type.operation))


@pytest.mark.parametrize("request_type", [r for r in ALL if "thread_id" in r.model_fields
                                          and hasattr(Thread, r.operation)],
                         ids=lambda r: r.__name__)
def test_the_thread_handle_takes_them_less_the_thread_id(
        request_type: type[ThreadRequest[Any]]) -> None:
    wanted = {k: v for k, v in _wanted(request_type).items() if k != "thread_id"}
    assert _taken(getattr(Thread, request_type.operation)) == wanted


def test_every_request_has_a_method_a_route_and_a_result_model() -> None:
    requests = [row.request for row in THREAD_OPERATIONS]
    assert len(requests) == len(set(requests))  # one row each
    assert set(requests) == set(RESULT_MODELS) == set(ALL)
    for row in THREAD_OPERATIONS:
        assert row.result is RESULT_MODELS[row.request]
        assert row.python == row.request.operation and row.sparse
    assert len({r.operation for r in ALL}) == len(ALL)
    for request_type in ALL:
        assert callable(getattr(ThreadAPI, request_type.operation))
        for name in local_fields(request_type):  # local fields never travel
            assert name not in request_type.model_json_schema()["properties"]


# -- the OpenAPI schema -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    schema: dict[str, Any] = app.openapi()
    app.state.remem.close()
    return schema


@pytest.mark.parametrize("row", THREAD_OPERATIONS, ids=lambda r: r.request.__name__)
def test_openapi_is_the_request_less_the_path(openapi: dict[str, Any], row: Operation) -> None:
    check_route_is_the_request(row, openapi)


def test_every_threads_route_is_declared(openapi: dict[str, Any]) -> None:
    served = {(method.upper(), path) for path, ops in openapi["paths"].items()
              if path.startswith("/v1/threads") for method in ops}
    assert served == {(r.route.method, r.route.path) for r in THREAD_OPERATIONS}


TID = "t 1/é"  # quoted as one path segment
CALLS: list[ThreadRequest[Any]] = [
    CreateThreadRequest.of(), CreateThreadRequest.of(ttl=None), CreateThreadRequest.of(ttl=5.0),
    ListThreadsRequest.of(filter={"a": 1}, limit=3),
    SearchThreadsRequest.of(query="x", owner="u", exclude=["a"]),
    GetThreadRequest.of(thread_id=TID), DeleteThreadRequest.of(thread_id=TID),
    SetMetadataRequest.of(thread_id=TID, metadata={"a": None}),
    AppendRequest.of(thread_id=TID, messages=[{"role": "user", "content": "hi"}]),
    MessagesRequest.of(thread_id=TID), MessagesRequest.of(thread_id=TID, start=1, last=2),
    CheckpointsRequest.of(thread_id=TID, offset=1), CheckpointRequest.of(thread_id=TID),
    UpdateStateRequest.of(thread_id=TID, state={"s": 1}, merge=False),
    RewindRequest.of(thread_id=TID, checkpoint_id="c"),
    ForkRequest.of(thread_id=TID, ttl=None), CopyRequest.of(thread_id=TID, new_thread_id="n"),
    CompactRequest.of(thread_id=TID), CompactRequest.of(thread_id=TID, force=True,
                                                        policy=SummaryPolicy(keep_tokens=50)),
    ThreadContextRequest.of(thread_id=TID, max_tokens=10, checkpoint_id="c"),
]


@pytest.mark.parametrize("sample", CALLS, ids=lambda r: type(r).__name__)
def test_the_clients_call_follows_the_row(sample: ThreadRequest[Any]) -> None:
    row = row_of(THREAD_OPERATIONS, type(sample))
    call = call_of(sample, RemoteThreads(Client("http://x")))
    if isinstance(sample, CreateThreadRequest | ForkRequest | CopyRequest):
        assert call.parse != row.read  # the record becomes a Thread handle
        call = replace(call, parse=row.read)
    check_call_follows_the_row(row, sample, call)


def test_a_field_left_out_stays_out_of_the_body() -> None:
    # a ttl left out is the server's default; a ttl of None keeps the thread forever
    assert call_of(CreateThreadRequest.of(), RemoteThreads(Client("http://x"))).json == {}
    assert call_of(CreateThreadRequest.of(ttl=None),
                   RemoteThreads(Client("http://x"))).json == {"ttl": None}


# -- the same JSON embedded and served ----------------------------------------------------------

Run = Callable[[ThreadRequest[Any]], Any]
TOOL_CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function",
     "function": {"name": "weather", "arguments": "{\"city\": \"Lisbon\"}"}}]}


def scenario(run: Run) -> list[tuple[str, Any]]:
    """Every thread operation once or more; what each answered (JSON)."""
    seen: list[tuple[str, Any]] = []

    def step(request: ThreadRequest[Any]) -> Any:
        answer = run(request)
        seen.append((request.operation, answer))
        return answer

    step(CreateThreadRequest.of(thread_id="trip", metadata={"user_id": "ada"},
                                messages=[{"role": "system", "content": "You plan trips."}]))
    first = step(AppendRequest.of(thread_id="trip", messages=[
        {"role": "user", "content": "I want to visit Lisbon in April."},
        {"role": "assistant", "content": "Lisbon in April is mild and sunny."}]))
    step(AppendRequest.of(thread_id="trip", messages="Find me a hotel in Alfama.",
                          expected_head=first["id"], metadata={"turn": 2}))
    step(AppendRequest.of(thread_id="trip", messages=[
        TOOL_CALL, {"role": "tool", "tool_call_id": "call_1", "content": "21 C, sunny"},
        {"role": "assistant", "content": "Memmo Alfama has a terrace over the river."}]))
    step(MessagesRequest.of(thread_id="trip"))
    step(MessagesRequest.of(thread_id="trip", last=2))
    step(MessagesRequest.of(thread_id="trip", checkpoint_id=first["id"], start=1, stop=-1))
    step(CheckpointsRequest.of(thread_id="trip", limit=3, offset=1))
    step(CheckpointRequest.of(thread_id="trip"))
    step(CheckpointRequest.of(thread_id="trip", checkpoint_id=first["id"]))
    step(UpdateStateRequest.of(thread_id="trip", state={"mood": "happy"},
                               metadata={"by": "test"}))
    step(UpdateStateRequest.of(thread_id="trip", state={"plan": "hotel"}, merge=False))
    step(SetMetadataRequest.of(thread_id="trip", metadata={"topic": "travel"}))
    step(ForkRequest.of(thread_id="trip", checkpoint_id=first["id"], new_thread_id="porto",
                        metadata={"topic": "porto"}, ttl=3600))
    step(AppendRequest.of(thread_id="porto", messages="What about Porto and its wine cellars?"))
    step(CopyRequest.of(thread_id="trip", new_thread_id="trip-copy"))
    step(RewindRequest.of(thread_id="trip", checkpoint_id=first["id"]))
    step(GetThreadRequest.of(thread_id="trip"))
    step(ListThreadsRequest.of(filter={"user_id": "ada"}))
    step(ListThreadsRequest.of(filter={"topic": {"$in": ["porto", "travel"]}}, limit=1,
                               offset=1))
    step(SearchThreadsRequest.of(query="Porto wine cellars", owner="ada"))
    step(SearchThreadsRequest.of(query="Alfama hotel", exclude=["trip-copy"], per_thread=1,
                                 mode="keyword"))
    step(ThreadContextRequest.of(thread_id="trip-copy", max_messages=3))
    step(ThreadContextRequest.of(thread_id="trip", max_tokens=40, checkpoint_id=first["id"]))
    step(CompactRequest.of(thread_id="trip-copy",
                           policy={"trigger_tokens": 40, "keep_tokens": 10}))
    step(CompactRequest.of(thread_id="trip-copy", force=False))
    step(ThreadContextRequest.of(thread_id="trip-copy"))
    step(DeleteThreadRequest.of(thread_id="trip-copy"))
    step(DeleteThreadRequest.of(thread_id="trip-copy"))
    step(CreateThreadRequest.of(metadata={"user_id": "bob"}, ttl=None))
    return seen


_GENERATED = re.compile(r"^(ckpt|msg|thread)_[0-9a-f]{26}$")
_TIMES = {"created_at", "updated_at", "expires_at"}


def normalized(seen: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Generated ids numbered in order of appearance, times left out (they differ)."""
    names: dict[str, str] = {}

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if key in _TIMES and isinstance(value, float):
            return "<time>"
        if isinstance(value, str) and _GENERATED.match(value):
            return names.setdefault(value, f"{value.split('_')[0]}#{len(names)}")
        return value

    return [(op, walk(answer)) for op, answer in seen]


def embedded() -> ThreadStore:
    """Threads set up as a server sets up a tenant's: same index, same kind of model."""
    store = open_store(":memory:", index=IndexConfig(FakeEmbedder(), fields=("text",)),
                       keyword=KeywordConfig(fields=("text",)))
    return ThreadStore(summarizer=_model(), index=ThreadIndex(store))


def local_run(threads: ThreadStore) -> Run:
    def run(request: ThreadRequest[Any]) -> Any:
        result = threads.run(request)
        return dump(type(request), result.info() if isinstance(result, Thread) else result)
    return run


def client_run(threads: RemoteThreads) -> Run:
    def run(request: ThreadRequest[Any]) -> Any:
        result = threads.run(request)
        return dump(type(request), result.info() if isinstance(result, Thread) else result)
    return run


def http_run(url: str, token: str) -> Run:
    def run(request: ThreadRequest[Any]) -> Any:
        call = row_of(THREAD_OPERATIONS, type(request)).call(request)
        answer = httpx.request(call.method, url + call.path, json=call.json,
                               params=call.params, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        return answer.json()
    return run


class LoopThread:
    """One event loop in a background thread, so a sync scenario can drive async methods."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def wait(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@dataclass
class Served:
    url: str
    keys: Any


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), llm=_model(),
                                  mcp=False))
    with ThreadedServer(app) as server:
        yield Served(server.url, app.state.remem.keys)
    app.state.remem.close()


@pytest.fixture(scope="module")
def expected() -> list[tuple[str, Any]]:
    with embedded() as threads:
        return normalized(scenario(local_run(threads)))


def test_the_scenario_covers_every_operation(expected: list[tuple[str, Any]]) -> None:
    assert {op for op, _ in expected} == {r.operation for r in ALL}
    messages = next(answer for op, answer in expected if op == "messages")["messages"]
    assert messages[4]["tool_calls"][0]["function"]["name"] == "weather"  # a tool call survives
    assert messages[5] == {"role": "tool", "tool_call_id": "call_1", "content": "21 C, sunny",
                           "id": "msg#10", "created_at": "<time>"}
    compacted = next(a for op, a in expected if op == "compact")
    assert compacted["state"]["summary"].startswith("summary of")


def test_async_embedded_gives_the_same_json(expected: list[tuple[str, Any]]) -> None:
    loop = LoopThread()
    try:
        with embedded() as threads:
            def run(request: ThreadRequest[Any]) -> Any:
                result = loop.wait(threads.arun(request))
                return dump(type(request), result.info() if isinstance(result, Thread)
                            else result)
            assert normalized(scenario(run)) == expected
    finally:
        loop.close()


def test_raw_http_gives_the_same_json(served: Served, expected: list[tuple[str, Any]]) -> None:
    token = served.keys.create("raw")[0]
    assert normalized(scenario(http_run(served.url, token))) == expected


def test_client_threads_give_the_same_results(served: Served,
                                              expected: list[tuple[str, Any]]) -> None:
    with Client(served.url, api_key=served.keys.create("client")[0]) as client:
        threads = client.threads
        assert isinstance(threads, RemoteThreads)
        assert normalized(scenario(client_run(threads))) == expected


def test_async_client_threads_give_the_same_results(served: Served,
                                                    expected: list[tuple[str, Any]]) -> None:
    loop = LoopThread()
    client = Client(served.url, api_key=served.keys.create("aclient")[0])
    try:
        threads = RemoteThreads(client)

        def run(request: ThreadRequest[Any]) -> Any:
            result = loop.wait(threads.arun(request))
            if isinstance(result, Thread):
                result = loop.wait(threads.aget(result.id))
            return dump(type(request), result)

        assert normalized(scenario(run)) == expected
    finally:
        loop.wait(client.aclose())
        loop.close()


def test_messages_read_back_are_the_stored_ones(served: Served) -> None:
    with Client(served.url, api_key=served.keys.create("values")[0]) as client, \
            ThreadStore() as local:
        for threads in (local, client.threads):
            chat = threads.create("t", messages="hi")
            chat.append([TOOL_CALL, {"role": "tool", "tool_call_id": "call_1",
                                     "content": "sunny", "name": "weather"}])
        remote = client.threads.messages("t")
        assert [m.model_dump(exclude={"id", "created_at"}) for m in remote] == \
            [m.model_dump(exclude={"id", "created_at"}) for m in local.messages("t")]
        # ids and times are the server's stored ones, not made up while reading
        assert client.threads.messages("t") == remote


# -- the same errors -----------------------------------------------------------------------------


def _failures(threads: ThreadAPI) -> list[tuple[type[RememError], str]]:
    threads.create("e1", messages="hello")
    head = threads.checkpoint("e1").id
    threads.append("e1", "again")
    tries: list[Callable[[], Any]] = [
        lambda: threads.get("missing"),
        lambda: threads.create("e1"),
        lambda: threads.append("e1", "late", expected_head=head),
        lambda: threads.messages("e1", checkpoint_id="ckpt_nope"),
        lambda: threads.rewind("missing", head),
        lambda: threads.fork("e1", "ckpt_nope"),
    ]
    out: list[tuple[type[RememError], str]] = []
    for attempt in tries:
        with pytest.raises(RememError) as error:
            attempt()
        kind = NotFoundError if isinstance(error.value, NotFoundError) else type(error.value)
        message = re.sub(r" \(HTTP \d+\)$", "", str(error.value))
        out.append((kind, re.sub(r"ckpt_[0-9a-f]{26}", "CKPT", message)))
    return out


def test_errors_are_the_same_embedded_and_served(served: Served) -> None:
    with ThreadStore() as local:
        want = _failures(local)
    assert [kind for kind, _ in want] == [NotFoundError, ConflictError, ConflictError,
                                          NotFoundError, NotFoundError, NotFoundError]
    with Client(served.url, api_key=served.keys.create("errors")[0]) as client:
        assert _failures(client.threads) == want


def test_what_cannot_travel_is_refused_before_sending() -> None:
    threads = RemoteThreads(Client("http://127.0.0.1:9"))  # nothing listens: nothing is sent
    with pytest.raises(UsageError, match=r"compact\(model=...\) cannot be sent"):
        threads.compact("t", _model())
    with pytest.raises(UsageError, match=r"context\(counter=...\) cannot be sent"):
        threads.context("t", counter=EstimateCounter())
    with pytest.raises(UsageError, match="custom token counter"):
        threads.compact("t", policy=SummaryPolicy(counter=EstimateCounter()))
    with pytest.raises(UsageError, match="custom token counter"):
        asyncio.run(threads.acompact("t", policy=SummaryPolicy(counter=EstimateCounter())))


# -- tenancy through the new routes ----------------------------------------------------------------


def test_new_routes_keep_tenants_apart() -> None:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), llm=_model(),
                                  mcp=False, key_cache_seconds=0))
    with TestClient(app) as http:
        keys = app.state.remem.keys
        a = {"Authorization": f"Bearer {keys.create('alpha')[0]}"}
        b = {"Authorization": f"Bearer {keys.create('beta')[0]}"}
        r = http.post("/v1/threads", headers=a, json={
            "thread_id": "t1", "metadata": {"user_id": "u1"},
            "messages": [{"role": "user", "content": "alpha secret about Lisbon"}]})
        assert r.status_code == 200, r.text
        cp = r.json()["head"]["id"]

        def a_state() -> Any:
            return [http.get(p, headers=a).json() for p in (
                "/v1/threads/t1", "/v1/threads/t1/messages", "/v1/threads/t1/checkpoints")]

        before = a_state()
        for body in ({"query": "alpha secret Lisbon"},
                     {"query": "alpha secret Lisbon", "owner": "u1"}):
            r = http.post("/v1/threads/search", headers=b, json=body)
            assert r.status_code == 200 and r.json() == {"hits": []}, r.text
        assert http.post("/v1/threads/search", headers=a, json={"query": "Lisbon"}).json()[
            "hits"][0]["thread_id"] == "t1"
        tries = [("GET", "/v1/threads/{id}/context", {}),
                 ("GET", "/v1/threads/{id}/checkpoint", {}),
                 ("PATCH", "/v1/threads/{id}", {"json": {"metadata": {"x": 1}}}),
                 ("POST", "/v1/threads/{id}/state", {"json": {"state": {"x": 1}}}),
                 ("POST", "/v1/threads/{id}/copy", {"json": {"new_thread_id": "mine"}}),
                 ("POST", "/v1/threads/{id}/compact", {"json": {}})]
        for method, path, kwargs in tries:
            got = http.request(method, path.format(id="t1"), headers=b, **kwargs)
            missing = http.request(method, path.format(id="t0"), headers=b, **kwargs)
            assert got.status_code == missing.status_code == 404, (path, got.text)
            assert got.json()["message"].replace("'t1'", "ID") == \
                missing.json()["message"].replace("'t0'", "ID")
        # B's own t1 at A's checkpoint: not a checkpoint of B's thread, nothing of A's shown
        assert http.post("/v1/threads", headers=b, json={"thread_id": "t1"}).status_code == 200
        for path in ("/v1/threads/t1/checkpoint", "/v1/threads/t1/context"):
            r = http.get(path, headers=b, params={"checkpoint_id": cp})
            assert r.status_code == 404 and "alpha" not in r.text and "secret" not in r.text
        r = http.post("/v1/threads/t1/copy", headers=b, json={"checkpoint_id": cp})
        assert r.status_code == 404 and "alpha" not in r.text
        assert a_state() == before
    app.state.remem.close()


def test_compaction_needs_the_servers_llm() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    with TestClient(app) as http:
        assert http.post("/v1/threads", json={"thread_id": "t", "messages": "hi"}
                         ).status_code == 200
        r = http.post("/v1/threads/t/compact", json={})
        assert r.status_code == 400 and r.json()["error"] == "unsupported"
        assert "REMEM_LLM_" in r.json()["message"]
    app.state.remem.close()


def test_search_without_the_thread_index_is_a_clear_400() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False, thread_search=False))
    with TestClient(app) as http:
        http.post("/v1/threads", json={"thread_id": "t", "messages": "hello Lisbon"})
        r = http.post("/v1/threads/search", json={"query": "Lisbon"})
        assert r.status_code == 400 and "needs an index" in r.json()["message"]
    app.state.remem.close()


READS = {GetThreadRequest, ListThreadsRequest, SearchThreadsRequest, MessagesRequest,
         CheckpointsRequest, CheckpointRequest, ThreadContextRequest}


def test_every_route_needs_a_key_and_writes_need_a_writing_key() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False, key_cache_seconds=0))
    with TestClient(app) as http:
        read_only = {"X-API-Key": app.state.remem.keys.create("ro", read_only=True)[0]}
        for row in THREAD_OPERATIONS:
            request_type, route = row.request, row.route
            path = route.path.format(thread_id="t")
            body = {"query": "x"} if request_type is SearchThreadsRequest else {}
            kwargs: dict[str, Any] = {} if not row.body_fields else {"json": body}
            r = http.request(route.method, path, **kwargs)
            assert r.status_code == 401, (route, r.text)
            r = http.request(route.method, path, headers=read_only, **kwargs)
            if request_type in READS:
                assert r.status_code != 403, (route, r.text)
            else:
                assert r.status_code == 403 and "read-only" in r.json()["message"], route
    app.state.remem.close()
