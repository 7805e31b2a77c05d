"""The router builder: FastAPI routes made from a family's operation table
(:class:`remem.operations.Operation` rows), so no route is written by hand.

Each row becomes one route at its method and path, documented with its summary and
description, answering with its result model (and the model's failures when it calls the
server's model). What the route takes follows the row (see :mod:`remem.operations`):

* a ``POST``, ``PUT`` or ``PATCH`` without path fields (nor a ``query``) takes the request
  itself as its body, so the body's schema is the request's and FastAPI validates it;
* path fields are path parameters with the field's type, limits and description (named as
  the path names them), and so is a body route's ``query`` of query parameters;
* the other fields are the query parameters (``GET``, ``DELETE``) or the body (a ``POST``,
  ``PUT`` or ``PATCH`` with path fields) of a model derived from the request
  (:func:`part_model`); the route builds the request from those and the path, as
  ``Request.of`` validates it.

The caller's key is checked before anything else (``Writer`` for a row that writes,
``Reader`` otherwise). The family's handler runs the request for the caller and returns the
result, which the route answers with the row's result model (a ``sparse`` row: its fields
at their defaults left out, and its request built from only the fields it was sent); a
handler that returns a response answers with it (another status: a file operation parked
for approval is a 202). A table whose routes all take something that is not the request's
(which file tree, who acts) names it as ``context``, a FastAPI dependency whose value the
handler gets after the request.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Response
from fastapi import Request as HttpRequest
from pydantic import BaseModel, ConfigDict, create_model

from remem.operations import Operation
from remem.requests import Request
from remem.server.auth import Reader, Writer
from remem.server.errors import MODEL_RESPONSES
from remem.server.state import Principal

__all__ = ["ContextHandler", "Handler", "add_operation_routes", "part_model"]

Handler = Callable[[HttpRequest, Principal, Any], Awaitable[Any]]
"""Runs a validated request for the caller (the HTTP request gives the server's state) and
returns its result (the Python value the row's result model reads with ``of``), or a
response to answer with."""
ContextHandler = Callable[[HttpRequest, Principal, Any, Any], Awaitable[Any]]
"""A :data:`Handler` that also takes the value of the table's ``context``."""


def add_operation_routes(router: APIRouter, table: Sequence[Operation],
                         handler: Handler | ContextHandler, *, context: Any = None) -> None:
    """Add a route to ``router`` for each row of ``table``, each run by ``handler``;
    ``context``: the annotation of a dependency every route also takes (``Annotated[T,
    Depends(...)]``), whose value is the handler's last argument.

    Literal paths are added before templated ones (``/v1/memories/list`` before
    ``/v1/memories/{memory_id}``), so no templated path can shadow a literal one."""
    for operation in sorted(table, key=lambda row: bool(row.path_fields)):
        _add_route(router, operation, handler, context)


@functools.cache
def part_model(operation: Operation) -> type[BaseModel] | None:
    """The model of what ``operation``'s route takes besides its path: the request's
    :attr:`~remem.operations.Operation.sent_fields` with their types, limits, defaults and
    descriptions, named after the route (``update_memory`` -> ``UpdateMemoryBody``; or the
    route's ``part`` and the suffix). A query
    model converts text (query values arrive as text); a body is as strict as the request.
    ``None`` when nothing travels outside the path; the route's ``part`` when it is a
    model."""
    if isinstance(operation.route.part, type):
        return operation.route.part
    fields: dict[str, Any] = {name: (operation.request.model_fields[name].annotation,
                                     operation.request.model_fields[name])
                              for name in (operation.query_fields if operation.in_query
                                           else operation.body_fields)}
    if not fields:
        return None
    suffix = "Query" if operation.in_query else "Body"
    name = (operation.route.part or
            "".join(word.title() for word in operation.route.name.split("_"))) + suffix
    config = ConfigDict(**{**operation.request.model_config, "strict": not operation.in_query})
    model: type[BaseModel] = create_model(name, __config__=config,
                                          __doc__=operation.request.__doc__,
                                          __module__=__name__, **fields)
    return model


def _parameter(request: type[Request], name: str, where: Any = Path) -> Any:
    """The annotation of path (or query) parameter ``name``: the field's type and limits,
    described as the field is."""
    info = request.model_fields[name]
    return Annotated[(info.annotation, *info.metadata, where(description=info.description))]


def _add_route(router: APIRouter, operation: Operation, handler: Handler | ContextHandler,
               context: Any) -> None:
    route = operation.route
    kind = operation.request
    part = None if operation.whole_body else part_model(operation)

    async def endpoint(who: Principal, http: HttpRequest, **values: Any) -> Any:
        extra = (values.pop("context"),) if context is not None else ()
        if operation.whole_body:
            body = values["body"]
            request = kind.of() if body is None else body  # an optional body left out
        else:
            for name, field in route.renamed:
                values[field] = values.pop(name)
            given = values.pop("query" if operation.in_query else "body", None)
            fields = ({} if given is None else
                      {name: getattr(given, name) for name in given.model_fields_set}
                      if operation.sparse else dict(given))
            request = kind.of(**fields, **values)
        result = await handler(http, who, request, *extra)
        return result if isinstance(result, Response) else operation.answer(result)

    # the signature FastAPI reads: path parameters, the body or query, the key's check
    keyword = inspect.Parameter.KEYWORD_ONLY  # a query parameter may have a default
    params = [inspect.Parameter(name, keyword, annotation=_parameter(kind, field))
              for name, field in route.path_params]
    params += [inspect.Parameter(name, keyword, annotation=_parameter(kind, name, Query),
                                 default=inspect.Parameter.empty if info.is_required()
                                 else info.default)
               for name, info in kind.model_fields.items()
               if name in route.query and name in operation.query_fields]
    sent = kind if operation.whole_body else part
    if part is not None and operation.in_query:
        params.append(inspect.Parameter("query", keyword, annotation=Annotated[part, Query()]))
    elif sent is not None and route.optional_body:
        params.append(inspect.Parameter("body", keyword, default=None,
                                        annotation=Annotated[sent | None, Body()]))
    elif sent is not None:
        params.append(inspect.Parameter("body", keyword, annotation=sent))
    if context is not None:
        params.append(inspect.Parameter("context", keyword, annotation=context))
    params += [inspect.Parameter("who", keyword, annotation=Writer if operation.writes
                                 else Reader),
               inspect.Parameter("http", keyword, annotation=HttpRequest)]
    endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        params, return_annotation=operation.result)
    endpoint.__name__ = route.name
    router.add_api_route(route.path, endpoint, methods=[route.method],
                         response_model=operation.result, summary=route.summary,
                         description=route.description, name=route.name,
                         tags=list(route.tags) or None,
                         responses=MODEL_RESPONSES if operation.calls_model else None,
                         response_model_exclude_defaults=operation.sparse,
                         status_code=route.status)
