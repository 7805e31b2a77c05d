"""Checks every family's operation table shares (memories and context in
``test_parity.py``, the raw store in ``test_parity_store.py``, threads in
``tests/threads/test_surface_parity.py``, prompts in
``tests/procedural/test_surface_parity.py``, episodes in
``tests/episodic/test_surface_parity.py``): a row's HTTP route is its
request, the Client's call follows the row, a Python method's parameters are the request's."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

from pydantic_core import PydanticUndefined

from remem.operations import Operation
from remem.requests import Request
from remem.transport import Call

__all__ = ["check_call_follows_the_row", "check_route_is_the_request",
           "check_routes_are_the_rows", "parameters", "plain", "request_schema"]


def parameters(function: Callable[..., Any]) -> dict[str, Any]:
    """Name -> default (``PydanticUndefined`` when required) of a method's parameters."""
    found = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name == "self":
            continue
        empty = parameter.default is inspect.Parameter.empty
        found[name] = PydanticUndefined if empty else parameter.default
    return found


def plain(schema: Any) -> Any:
    """A JSON schema as compared here: FastAPI leaves out ``"default": null``."""
    if isinstance(schema, dict):
        return {k: plain(v) for k, v in schema.items()
                if not (k == "default" and v is None) and k != "title"}
    if isinstance(schema, list):
        return [plain(v) for v in schema]
    return schema


def request_schema(row: Operation, without: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON schema of ``row``'s request, less the fields ``without``."""
    schema = row.request.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)  # nested models are components of their own in OpenAPI
    for name in without:
        schema["properties"].pop(name, None)
        if name in schema.get("required", []):
            schema["required"].remove(name)
    if not schema.get("required"):
        schema.pop("required", None)
    schema.pop("description", None)
    found: dict[str, Any] = plain(schema)
    return found


def check_route_is_the_request(row: Operation, openapi: dict[str, Any],
                               context: tuple[str, ...] = ()) -> None:
    """The route of ``row`` in ``openapi`` takes the request: its path fields in the path, the
    others as query parameters or the body (the request itself, or a model of the rest; left
    out if the route says it may be), each with the field's schema; and answers with the
    row's result model. ``context``: the query parameters the table's context adds."""
    route = openapi["paths"][row.route.path][row.route.method.lower()]
    params = {p["name"]: p for p in route.get("parameters", []) if p["name"] not in context}
    assert {n for n, p in params.items() if p["in"] == "path"} == {
        name for name, _ in row.route.path_params}
    want = request_schema(row, without=(*row.path_fields, *row.route.not_sent,
                                        *row.route.query))
    if row.route.query:  # a body route's query parameters, each with the field's schema
        fields = request_schema(row)["properties"]
        assert {n: plain(p["schema"]) for n, p in params.items() if p["in"] == "query"} == {
            n: fields[n] for n in row.route.query}
    body = route.get("requestBody")
    if row.in_query:  # every other field is a query parameter, with the field's schema
        assert body is None
        query = {n: plain(p["schema"]) for n, p in params.items() if p["in"] == "query"}
        assert query == want["properties"]
        assert list(query) == list(row.query_fields)
    elif want["properties"]:
        schema = body["content"]["application/json"]["schema"]
        if row.route.optional_body:  # the model, or null
            assert not body.get("required") and schema["anyOf"][1] == {"type": "null"}
            schema = schema["anyOf"][0]
        ref = schema["$ref"].rsplit("/", 1)[1]
        got = dict(openapi["components"]["schemas"][ref])
        got.pop("description", None)
        assert plain(got) == want
        assert list(got["properties"]) == list(row.body_fields)
        assert (ref == row.request.__name__) is row.whole_body  # else a model of the rest
    else:
        assert body is None and not row.body_fields
    # every answer is a declared model, so schema checks cover responses too (its component
    # is named after its qualified name: the jobs' FlushOut documents itself as JobsOut)
    answer = route["responses"][str(row.route.status)]["content"]["application/json"]["schema"]
    assert answer["$ref"].rsplit("/", 1)[1].split("__")[-1] == row.result.__qualname__
    assert ("502" in route["responses"]) is row.calls_model  # the model's failures


def check_routes_are_the_rows(openapi: dict[str, Any], table: Sequence[Operation],
                              served: set[tuple[str, str]], tag: str) -> None:
    """``served`` (the family's ``(path, METHOD)`` pairs in ``openapi``) is exactly the rows'
    routes, each named, described and tagged as its row says: the operation id is FastAPI's
    (the route's name and path, non-word characters as ``_``, then the method), so the ids
    clients were generated with stay the same."""
    assert served == {(row.route.path, row.route.method) for row in table}
    for row in table:
        route = openapi["paths"][row.route.path][row.route.method.lower()]
        name = re.sub(r"\W", "_", row.route.name + row.route.path)
        assert route["operationId"] == f"{name}_{row.route.method.lower()}"
        assert (route["summary"], route["description"]) == (row.route.summary,
                                                            row.route.description)
        assert route["tags"] == [tag, *row.route.tags]


def check_call_follows_the_row(row: Operation, request: Request, call: Call[Any]) -> None:
    """``call``, what a client built for ``request``, is the row's plain data: the method,
    the path with its fields filled in, the query fields (those set), the body fields (a
    sparse row's: those the request was given), none the server sets, and the answer read by
    the row's result model."""
    server = set(row.route.server_sets)
    data = request.model_dump(mode="json", exclude=server)
    given = (request.model_dump(mode="json", exclude_unset=True, exclude=server) if row.sparse
             else data)
    sent = [name for name in row.body_fields if name in given]
    assert call.method == row.route.method
    assert call.path == row.route.path.format(**{
        name: quote(getattr(request, field), safe="") for name, field in row.route.path_params})
    assert dict(call.params) == {name: data[name] for name in row.query_fields
                                 if data.get(name) is not None}
    assert list(call.json or {}) == sent
    assert (call.json is None) is (not row.body_fields)
    assert call.json is None or dict(call.json) == {name: given[name] for name in sent}
    assert call.parse == row.read
