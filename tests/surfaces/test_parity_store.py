"""Every surface of a raw store operation is built from its one row of
:data:`~remem.raw_store.operation_table.STORE_OPERATIONS`: the ``/v1/store`` routes (by the
router builder) and ``client.store`` (by :meth:`~remem.operations.Operation.call`). For every
row, the tests check that:

* the table has one row per request of :mod:`remem.raw_store.requests`, and ``/v1/store``
  serves exactly the rows' routes (none written by hand);
* its route takes the request (query parameters or body, each field's schema) and answers
  with the row's result model (:func:`test_http_route_is_the_request`);
* ``client.store`` has its method and the async twin, taking exactly the request's
  parameters with the same defaults (:func:`test_client_methods_take_the_request`), and
  sends each field where the row says (:func:`test_client_sends_what_the_row_says`).

The same values through the Client, a server and a store opened on the file are checked in
``tests/client/test_client_store.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_core import PydanticUndefined

import remem.raw_store.requests as store_requests
from remem.client import Client
from remem.errors import UsageError
from remem.memory.requests import GetRequest
from remem.operations import Operation
from remem.raw_store.operation_table import STORE_OPERATIONS
from remem.raw_store.remote import RemoteStore, call_of
from remem.raw_store.requests import (
    DeleteItemRequest,
    GetItemRequest,
    ListNamespacesRequest,
    PutItemBody,
    StoreCountBody,
    StoreRequest,
    StoreSearchBody,
)
from remem.server import ServerConfig, create_app
from tests.surfaces.rows import (
    check_call_follows_the_row,
    check_route_is_the_request,
    check_routes_are_the_rows,
    parameters,
)

IDS = [row.request.__name__ for row in STORE_OPERATIONS]

#: a request of each row, every field set that may be (ids that need quoting)
SAMPLES: dict[type[StoreRequest[Any]], StoreRequest[Any]] = {
    PutItemBody: PutItemBody(namespace=["notes", "a/b c"], key="k?1", value={"text": "tea"},
                             ttl=60.0, index=["text"], event_at=1_700_000_000.0),
    GetItemRequest: GetItemRequest(namespace=["notes", "a/b c"], key="k?1"),
    DeleteItemRequest: DeleteItemRequest(namespace=["notes"], key="k&2"),
    StoreSearchBody: StoreSearchBody(namespace_prefix=["notes"], query="tea",
                                     filter={"text": {"$eq": "tea"}}, limit=5, offset=1,
                                     mode="keyword", event_after=1.0, event_before=2.0),
    StoreCountBody: StoreCountBody(namespace_prefix=["notes"], filter={"n": 1},
                                   event_after=1.0),
    ListNamespacesRequest: ListNamespacesRequest(prefix=["notes"], suffix=["*"], max_depth=2,
                                                 limit=10, offset=1),
}


@pytest.fixture(scope="module")
def openapi() -> Iterator[dict[str, Any]]:
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    yield app.openapi()
    app.state.remem.close()


def test_the_table_covers_every_store_request() -> None:
    declared = {value for name in store_requests.__all__
                if isinstance(value := getattr(store_requests, name), type)
                and issubclass(value, StoreRequest) and value is not StoreRequest}
    assert [row.request for row in STORE_OPERATIONS] == list(dict.fromkeys(
        row.request for row in STORE_OPERATIONS))  # one row per request
    assert {row.request for row in STORE_OPERATIONS} == declared == set(SAMPLES)
    assert all(row.python is not None and row.tool is None and row.command is None
               for row in STORE_OPERATIONS)


def test_every_store_route_is_a_row(openapi: dict[str, Any]) -> None:
    """``/v1/store`` serves the rows' routes and nothing else, each named and summarised as
    its row says (the operation ids clients were generated with stay the same)."""
    served = {(path, method.upper()) for path, item in openapi["paths"].items()
              if path.startswith("/v1/store") for method in item}
    check_routes_are_the_rows(openapi, STORE_OPERATIONS, served, "store")


@pytest.mark.parametrize("row", STORE_OPERATIONS, ids=IDS)
def test_http_route_is_the_request(row: Operation, openapi: dict[str, Any]) -> None:
    check_route_is_the_request(row, openapi)


@pytest.mark.parametrize("row", STORE_OPERATIONS, ids=IDS)
def test_client_sends_what_the_row_says(row: Operation) -> None:
    request = SAMPLES[row.request]
    check_call_follows_the_row(row, request, call_of(request))


def _expected(row: Operation) -> dict[str, Any]:
    """The request's fields with their defaults (a list's default is an empty tuple in
    Python: namespaces are tuples)."""
    found = {}
    for name, info in row.request.model_fields.items():
        default = (PydanticUndefined if info.is_required()
                   else info.get_default(call_default_factory=True))
        found[name] = () if default == [] else default
    return found


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("row", STORE_OPERATIONS, ids=IDS)
def test_client_methods_take_the_request(row: Operation, is_async: bool) -> None:
    assert row.python is not None
    method = getattr(RemoteStore, "a" + row.python if is_async else row.python)
    assert inspect.iscoroutinefunction(method) is is_async
    assert parameters(method) == _expected(row)
    for name in ("run", "arun"):
        assert list(parameters(getattr(RemoteStore, name))) == ["request"]


def test_client_store_is_one_remote_store_per_client() -> None:
    with Client("http://127.0.0.1:9") as client:
        assert isinstance(client.store, RemoteStore) and client.store is client.store
        assert client.store.client is client


def test_client_store_sends_only_store_requests() -> None:
    with pytest.raises(UsageError, match="cannot send a GetRequest"):
        call_of(GetRequest(memory_id="m"))  # type: ignore[arg-type]
