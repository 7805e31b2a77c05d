"""How failures become HTTP answers: remem's error tree mapped to status codes, validation
errors naming the field, a request body limit, and a catch-all that never shows a traceback.

Every error answer is an :class:`~remem.server.schemas.ErrorBody`::

    {"error": "invalid_input", "message": "...", "field": "body.namespace.0", "details": [...]}
"""

from __future__ import annotations

import json
import logging
import re
import traceback
import uuid
import weakref
from collections.abc import Sequence
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from remem.errors import (
    ConfigError,
    ConflictError,
    EmbeddingError,
    IndexConfigError,
    InvalidInputError,
    LLMError,
    NotFoundError,
    PermissionDeniedError,
    ReadOnlyError,
    RememError,
    ReservedNamespaceError,
    StoreError,
    UsageError,
)
from remem.server.asgi import ASGIApp, Message, Receive, Scope, Send
from remem.server.quotas import QuotaExceededError
from remem.server.schemas import ErrorBody

__all__ = ["ERROR_RESPONSES", "ERROR_STATUS", "MODEL_RESPONSES", "BodyLimitMiddleware",
           "ErrorBoundary", "classify", "error_response", "install_error_handlers",
           "refuse_repeated_query_parameters", "scrub"]

logger = logging.getLogger("remem.server")

#: the error answers every route may give (documented for clients and schema checks)
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text} for code, text in (
        (400, "bad request (invalid JSON, an unsupported option)"),
        (401, "missing or invalid API key"),
        (403, "read-only key used for a write (`forbidden`), a read-only file or block "
              "(`read_only`), a file rule denies the operation (`permission_denied`), or a "
              "raw store operation names a family's namespace (`reserved_namespace`)"),
        (404, "not found"),
        (409, "conflict (a concurrent change)"),
        (413, "request body too large (`too_large`), or the write would pass one of the "
              "tenant's storage quotas (`quota_exceeded`: nothing was written)"),
        (422, "invalid input; `field` names it"),
        (429, "too many requests for this key; `Retry-After` says when to retry"),
        (503, "the database failed (`store_unavailable`): the body has an error id, the server "
              "log the details; nothing is acknowledged that did not commit"),
    )
}

#: the answer a route that calls the server's chat model may add (``responses=`` of the routes
#: that do: memories with ``infer``, flush, graph episodes, prompt optimization, episode
#: extraction, thread compaction)
MODEL_RESPONSES: dict[int | str, dict[str, Any]] = {
    502: {"model": ErrorBody, "description": (
        "the server's chat model failed (`llm_failed`: unreachable, an HTTP error, or an "
        "answer still invalid after one retry), or its embedder did (`embedding_failed`); "
        "the body has an error id, the server log the details")},
}

#: remem errors -> (status, error kind); the first matching class wins
ERROR_STATUS: Sequence[tuple[type[Exception], int, str]] = (
    (QuotaExceededError, 413, "quota_exceeded"),
    (InvalidInputError, 422, "invalid_input"),
    (NotFoundError, 404, "not_found"),
    (ConflictError, 409, "conflict"),
    (ReadOnlyError, 403, "read_only"),
    (ReservedNamespaceError, 403, "reserved_namespace"),
    (PermissionDeniedError, 403, "permission_denied"),
    (UsageError, 400, "unsupported"),
    (IndexConfigError, 409, "index_config"),
    (ConfigError, 400, "not_configured"),
    (LLMError, 502, "llm_failed"),
    (EmbeddingError, 502, "embedding_failed"),
    (StoreError, 503, "store_unavailable"),
    (RememError, 400, "error"),
)


def error_response(status: int, error: str, message: str, *, field: str | None = None,
                   details: list[dict[str, Any]] | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    """An error answer in the shape every route documents."""
    return JSONResponse({"error": error, "message": message, "field": field,
                         "details": details or []}, status_code=status, headers=headers)


def _loc(loc: Sequence[Any]) -> str:
    return ".".join(str(part) for part in loc)


async def _unauthorized(request: Request) -> JSONResponse | None:
    """A 401 if ``request`` needs a key and has no valid one: FastAPI reads the body before
    the route's key dependency runs, and a caller without a key learns nothing about it."""
    from remem.server.auth import request_principal

    if not request.scope["path"].startswith("/v1/"):
        return None
    try:
        await request_principal(request)
    except StarletteHTTPException as denied:
        if denied.status_code in (400, 401):
            return _http(request, denied)
    return None


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    denied = await _unauthorized(request)
    if denied is not None:
        return denied
    details: list[dict[str, Any]] = []
    for err in exc.errors():
        loc = list(err.get("loc", ()))
        if err.get("type") == "json_invalid":
            return error_response(400, "invalid_json",
                                  f"the request body is not valid JSON: {err.get('msg', '')} "
                                  f"(at position {loc[-1] if loc else '?'})", field="body")
        # drop pydantic's union branch names ("str", "list[...]") from the path
        loc = [p for p in loc if not (isinstance(p, str) and ("[" in p or p in {
            "str", "constrained-str", "int", "float", "bool", "dict[str,any]"}))]
        # a validator's own message already says what is wrong: no "Value error, " before it
        message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        details.append({"field": _loc(loc), "message": message})
    first = details[0] if details else {"field": None, "message": "invalid request"}
    more = f" (and {len(details) - 1} more problems)" if len(details) > 1 else ""
    return error_response(422, "validation_error",
                          f"{first['field']}: {first['message']}{more}",
                          field=first["field"], details=details)


#: what a server-side failure's message may not show: URLs, absolute file paths, host:port
_LEAKS = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+"          # a URL or DSN
                    r"|(?:[A-Za-z]:)?(?:[\\/][^\s'\"\\/:]+){2,}[\\/]?"  # a file path
                    r"|\b[\w.-]+:\d{2,5}\b"                  # host:port
                    r"|\[[0-9a-fA-F:]+\](?::\d+)?")            # [ipv6]:port


def _is_sequence(annotation: Any) -> bool:
    """Whether a query parameter's annotation takes repeated values (``list[str] | None``)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _is_sequence(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return any(_is_sequence(arg) for arg in get_args(annotation))
    return origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set)


def _scalar_query_names(dependant: Any) -> frozenset[str]:
    names: set[str] = set()
    for param in dependant.query_params:
        kind = param.field_info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):  # a query model: its fields
            names |= {field.alias or name for name, field in kind.model_fields.items()
                      if not _is_sequence(field.annotation)}
        elif not _is_sequence(kind):
            names.add(param.alias)
    for sub in dependant.dependencies:
        names |= _scalar_query_names(sub)
    return frozenset(names)


#: each route's single-valued query parameters, by the route's id, with a weak reference
#: to the route: an id is reused once its route is gone (an app built and dropped, as tests
#: do), and a later route must not read the names of the one that held it before
_SCALARS: dict[int, tuple[weakref.ref[Any], frozenset[str]]] = {}


async def refuse_repeated_query_parameters(request: Request) -> None:
    """A route dependency: a query parameter that takes one value, given more than once, is a
    422 naming it (the framework would keep the last one silently)."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None or not request.query_params:
        return
    known = _SCALARS.get(id(route))
    if known is not None and known[0]() is route:
        names = known[1]
    else:  # two threads may compute a route's names at once: the same names, either kept
        names = _scalar_query_names(dependant)
        _SCALARS[id(route)] = (weakref.ref(route), names)
    for name in names:
        if len(request.query_params.getlist(name)) > 1:
            raise RequestValidationError([{
                "loc": ("query", name), "type": "repeated",
                "msg": f"takes one value, got {len(request.query_params.getlist(name))}: "
                       f"pass {name} once"}])


def scrub(message: str) -> str:
    """``message`` without URLs, file paths or host:port pairs (for server-side failures,
    whose messages come from drivers and providers and may name where they failed)."""
    return _LEAKS.sub("<redacted>", message)


def _incident() -> str:
    return uuid.uuid4().hex[:12]


def classify(exc: RememError, where: str) -> tuple[int, str, str]:
    """``(status, error kind, message)`` for a remem error: a client's error keeps its
    message (it names the field, rule and fix); a server-side failure is logged with an
    error id (``where`` says what failed) and its message shows the id, never a file path,
    URL, host or port."""
    for cls, status, kind in ERROR_STATUS:
        if isinstance(exc, cls):
            if status < 500:
                return status, kind, str(exc)
            incident = _incident()
            logger.warning("%s failed (error id %s): %s", where, incident, exc)
            if isinstance(exc, StoreError):  # driver messages name files, hosts and ports
                return status, kind, (f"the store failed (error id {incident}; the server "
                                      "log has the details); retry later")
            return status, kind, f"{scrub(str(exc))} (error id {incident})"
    raise AssertionError("RememError is in ERROR_STATUS")  # pragma: no cover


def _remem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RememError)
    status, kind, message = classify(exc, f"{request.method} {request.url.path}")
    field = f"quota.{exc.quota}" if isinstance(exc, QuotaExceededError) else None
    return error_response(status, kind, message, field=field)


_VERBS = frozenset({"get", "put", "post", "delete", "patch", "options", "head"})


def _allowed_methods(request: Request) -> str | None:
    """The methods the OpenAPI schema documents for the request's path (for ``Allow``).

    Starlette's 405 names only the methods of the first route whose path matched, while a
    path such as ``/v1/memories/{memory_id}`` is served by several routes."""
    table: list[tuple[re.Pattern[str], str]] | None = getattr(request.app.state,
                                                               "allow_table", None)
    if table is None:
        # as OpenAPI matches paths: a literal path before a template that also matches it
        # (``/memories/search`` before ``/memories/{memory_id}``)
        paths = sorted(request.app.openapi()["paths"].items(), key=lambda kv: kv[0].count("{"))
        table = [(compile_path(path)[0],
                  ", ".join(sorted(verb.upper() for verb in operations if verb in _VERBS)))
                 for path, operations in paths]
        request.app.state.allow_table = table
    path = request.scope["path"]
    return next((methods for pattern, methods in table if pattern.match(path)), None)


def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    kind = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
            405: "method_not_allowed", 413: "too_large", 421: "misdirected",
            429: "rate_limited"}.get(exc.status_code, "http_error")
    headers = dict(exc.headers) if exc.headers else {}
    if exc.status_code == 405:
        allowed = _allowed_methods(request)
        if allowed:
            headers["Allow"] = allowed
    return error_response(exc.status_code, kind, str(exc.detail), headers=headers or None)


async def _http_checked(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:  # an unreadable body: the key is checked first
        denied = await _unauthorized(request)
        if denied is not None:
            return denied
    return _http(request, exc)


#: frames that encode a route's result into the response body (FastAPI, Starlette)
_ENCODING_FRAMES = frozenset({"serialize_response", "jsonable_encoder", "render"})
#: frames that read and validate the request before the route runs
_REQUEST_FRAMES = frozenset({"solve_dependencies", "request_body_to_args", "_get_body",
                             "json", "body"})
_RUN_FRAMES = frozenset({"run_endpoint_function"})


def failure_phase(exc: BaseException) -> str:
    """Where ``exc`` was raised: ``"request"`` (reading the request, before the route ran),
    ``"response"`` (encoding the result of a route that completed) or ``"route"``."""
    if isinstance(exc, PydanticSerializationError):  # only results are serialised
        return "response"
    names = [frame.name for frame in traceback.extract_tb(exc.__traceback__)]
    if any(name in _ENCODING_FRAMES for name in names):
        return "response"
    if not any(name in _RUN_FRAMES for name in names) and any(
            name in _REQUEST_FRAMES for name in names):
        return "request"
    return "route"


def unexpected_response(method: str, path: str, exc: BaseException) -> JSONResponse:
    """The answer to an exception no handler knows, by where it was raised.

    Only a failure while reading the request is the client's (400, nothing was done). A
    result that cannot be encoded means the operation completed, a write included: the 500
    says so, with the error id the log records. A ``ValueError`` inside the route is a
    library refusing a value validation let through (422, as before). Anything else is a
    500 with an error id (the route may or may not have completed its work)."""
    phase = failure_phase(exc)
    if phase == "request" and isinstance(exc, RecursionError):
        return error_response(400, "invalid_json", "the request body is nested too deeply",
                              field="body")
    if phase == "route" and isinstance(exc, ValueError):
        return error_response(422, "invalid_input", scrub(str(exc)))
    incident = _incident()
    logger.error("unexpected error %s (%s phase) on %s %s", incident, phase, method, path,
                 exc_info=exc)
    if phase == "response":
        return error_response(500, "response_encoding", (
            f"internal error {incident}: the operation completed (any change it made is saved) "
            "but its result could not be encoded; read the data back, and see the server log"))
    return error_response(500, "internal",
                          f"internal error {incident}; the server log has the details")


class ErrorBoundary:
    """Answer any exception no handler took with :func:`unexpected_response`, without
    re-raising it: Starlette's outermost handler re-raises after answering, which makes
    uvicorn drop the keep-alive connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app; on an exception before the answer started, answer it here."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:  # half an answer is out: only closing the connection can say so
                raise
            response = unexpected_response(scope.get("method", "?"), scope.get("path", "?"),
                                           exc)
            await response(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers on ``app`` (and add :class:`ErrorBoundary`, which must stay the
    innermost middleware: add it before the others)."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(RememError, _remem)
    app.add_exception_handler(StarletteHTTPException, _http_checked)
    app.add_middleware(ErrorBoundary)


def _too_large_message(limit: int) -> str:
    return (f"the request body exceeds the server's limit of {limit} bytes "
            "(remem serve --max-body-bytes)")


class _TooLarge(StarletteHTTPException):
    """Raised from ``receive`` when a streamed body passes the limit (FastAPI re-raises
    HTTP exceptions from body reading, so the handler answers 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large_message(limit))


class BodyLimitMiddleware:
    """Refuse request bodies over ``limit`` bytes with a 413, whether or not they declare a
    Content-Length (chunked bodies are counted as they arrive)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared length, then count the streamed bytes."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.limit + 1
                if declared > self.limit:
                    await self._reject(send)
                    return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(self.limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send: Send) -> None:
        body = json.dumps({
            "error": "too_large", "field": "body", "details": [],
            "message": _too_large_message(self.limit),
        }).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
