"""How each thread request travels over HTTP: one table shared by the server's routes
(``remem.server.routes_threads``) and the client (:mod:`remem.threads.remote`).

A request's path parameters (``{thread_id}``) come from its fields; the rest of its JSON
fields are the body (or, for a ``GET``, the query string): :func:`part_model` derives that
model from the request itself, so the OpenAPI schema is the request's schema less the path,
and nothing is declared twice. Local fields (Python objects) never travel.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, create_model

from remem.threads.requests import (
    AppendRequest,
    CheckpointRequest,
    CheckpointsRequest,
    CompactRequest,
    ContextRequest,
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
    ThreadRequest,
    UpdateStateRequest,
    local_fields,
)

__all__ = ["PREFIX", "ROUTES", "HttpCall", "HttpRoute", "http_call", "part_model"]

PREFIX = "/v1/threads"


@dataclass(frozen=True, slots=True)
class HttpRoute:
    """A request's method and path (``{name}`` marks a path parameter, relative to
    ``/v1/threads``) and the route's summary in the OpenAPI schema."""

    method: str
    path: str
    summary: str

    @property
    def path_params(self) -> tuple[str, ...]:
        """The fields that travel in the path."""
        return tuple(re.findall(r"{(\w+)}", self.path))

    @property
    def in_query(self) -> bool:
        """Whether the other fields travel in the query string (a ``GET``) or the body."""
        return self.method == "GET"

    @property
    def full_path(self) -> str:
        """The path from the server's root."""
        return PREFIX + self.path


ROUTES: Mapping[type[ThreadRequest[Any]], HttpRoute] = {
    CreateThreadRequest: HttpRoute("POST", "", "Create a thread"),
    ListThreadsRequest: HttpRoute("POST", "/list", "List threads"),
    SearchThreadsRequest: HttpRoute("POST", "/search", "Search threads"),
    GetThreadRequest: HttpRoute("GET", "/{thread_id}", "Read a thread"),
    SetMetadataRequest: HttpRoute("PATCH", "/{thread_id}", "Change a thread's metadata"),
    DeleteThreadRequest: HttpRoute("DELETE", "/{thread_id}", "Delete a thread"),
    AppendRequest: HttpRoute("POST", "/{thread_id}/messages", "Append messages"),
    MessagesRequest: HttpRoute("GET", "/{thread_id}/messages", "Read messages"),
    CheckpointsRequest: HttpRoute("GET", "/{thread_id}/checkpoints", "List checkpoints"),
    CheckpointRequest: HttpRoute("GET", "/{thread_id}/checkpoint", "Read a checkpoint"),
    UpdateStateRequest: HttpRoute("POST", "/{thread_id}/state", "Save a new state"),
    RewindRequest: HttpRoute("POST", "/{thread_id}/rewind", "Rewind a thread"),
    ForkRequest: HttpRoute("POST", "/{thread_id}/fork", "Fork a thread"),
    CopyRequest: HttpRoute("POST", "/{thread_id}/copy", "Copy a thread"),
    CompactRequest: HttpRoute("POST", "/{thread_id}/compact", "Compact a thread"),
    ContextRequest: HttpRoute("GET", "/{thread_id}/context", "The prompt of a thread"),
}
"""Every thread request's route."""


@functools.cache
def part_model(request: type[ThreadRequest[Any]]) -> type[BaseModel] | None:
    """The body (or query) model of ``request``: its fields less the path parameters and the
    local fields, same types, defaults and descriptions (``None`` when nothing is left).

    Query values arrive as strings, so a query model converts ``"5"`` to 5 (lax); a body is
    strict, like the request.
    """
    route = ROUTES[request]
    skip = set(route.path_params) | local_fields(request)
    fields: dict[str, Any] = {name: (info.annotation, info)
                              for name, info in request.model_fields.items() if name not in skip}
    if not fields:
        return None
    suffix = "Query" if route.in_query else "Body"
    model: type[BaseModel] = create_model(
        request.__name__.removesuffix("Request") + suffix,
        __config__=ConfigDict(frozen=True, extra="forbid", strict=not route.in_query),
        __doc__=request.__doc__, __module__=__name__, **fields)
    return model


@dataclass(frozen=True, slots=True)
class HttpCall:
    """One request as HTTP: method, path (from the server's root), JSON body, query."""

    method: str
    path: str
    json: dict[str, Any] | None
    params: dict[str, Any]


def http_call(request: ThreadRequest[Any]) -> HttpCall:
    """``request`` as an HTTP call. Fields left out of the request stay out of the body (a
    ``ttl`` left out is the default, unlike ``null``); a query leaves out ``null`` values."""
    route = ROUTES[type(request)]
    path = route.full_path.format(**{name: quote(getattr(request, name), safe="")
                                     for name in route.path_params})
    skip = set(route.path_params) | local_fields(type(request))
    if route.in_query:
        return HttpCall(route.method, path, None, request.model_dump(
            mode="json", exclude=skip, exclude_none=True))
    body = request.model_dump(mode="json", exclude=skip, exclude_unset=True)
    return HttpCall(route.method, path, body if part_model(type(request)) else None, {})
