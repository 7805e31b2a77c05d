"""Operations as data: one :class:`Operation` row declares an operation once for every surface.

A family (memories, threads, files...) lists its operations in a table of rows beside its
request values. The surfaces read the table instead of listing the operations again: the
server's router builder (:mod:`remem.server.operation_routes`) makes each row's route, the MCP
registrar (:mod:`remem.server.mcp_registrar`) its tool, and the parity tests check every row on
every surface. A new operation is a row and a handler.

How a request travels over HTTP is derived from the row, in plain data a client can follow
without the server's code: the fields named in the path (``{memory_id}``) go in the path; of
the others (less the row's ``not_sent`` and the local fields that hold Python objects), a
``GET`` or ``DELETE`` sends them as query parameters and a ``POST``, ``PUT`` or ``PATCH`` as
the JSON body, less the route's ``query`` (:attr:`Operation.query_fields`,
:attr:`Operation.body_fields`). A ``POST``, ``PUT`` or ``PATCH`` without path or ``query``
fields has the request itself as its body, so its OpenAPI schema is the request's. The server's
router builder takes each field from where these properties say, and :meth:`Operation.call`,
the one client side of every row (``remem.Client`` and the families' remote sides), puts it
there, so the two cannot drift; the answer is read back with the row's result model
(:meth:`Operation.read`).

This module imports no surface (nor any family): every family's table can use it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from remem.requests import Request
from remem.transport import Call, path_segment

__all__ = ["HttpMethod", "McpToolRow", "Operation", "Route", "command_of", "row_of"]

HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]


@dataclass(frozen=True, slots=True)
class Route:
    """An operation's HTTP route.

    ``path`` is from the server's root; each ``{name}`` in it is the request field of that
    name. ``name`` names the route (FastAPI's operation id is made from it); ``summary`` and
    ``description`` are its OpenAPI documentation. ``not_sent``: request fields the route does
    not take at all, because the server sets them itself (``actor``, on routes without a body
    to carry it). ``part``: the name of the model of what the route takes besides its path
    (its body, or its query), when it is not the route's ``name`` in title case plus ``Body``
    or ``Query`` (the thread routes keep the component names they had before their rows); or
    that model itself, one of the family's whose fields are exactly those (its OpenAPI
    component keeps its name: an approval's body is an ``ApproveRequest``, its id in the
    path). ``optional_body``: the body may be left out (its fields all have defaults).
    ``server_sets``: request fields the route takes but the server sets itself whatever was
    sent (a prompt version's ``author``: the caller's key), so a client leaves them out.
    ``query``: request fields a ``POST``, ``PUT`` or ``PATCH`` sends as query parameters
    rather than in its body (the agent a block edit acts for). ``renamed``: ``(name in the
    path, request field)`` pairs for path parameters not named as their field (a block's
    ``id`` is ``{block_id}`` in its paths). ``status``: the status of a success.
    ``tags``: OpenAPI tags of the route besides its router's (a job route that acts on
    memories is listed under ``memories`` too).
    """

    method: HttpMethod
    path: str
    name: str
    summary: str
    description: str
    not_sent: tuple[str, ...] = ()
    part: str | type[BaseModel] | None = None
    server_sets: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    status: int = 200
    optional_body: bool = False

    @property
    def path_params(self) -> tuple[tuple[str, str], ...]:
        """``(name in the path, request field)`` of each path parameter, in path order."""
        renamed = dict(self.renamed)
        return tuple((name, renamed.get(name, name)) for name in re.findall(r"{(\w+)}", self.path))

    @property
    def path_fields(self) -> tuple[str, ...]:
        """The request fields that travel in the path, in path order."""
        return tuple(field for _, field in self.path_params)


@dataclass(frozen=True, slots=True)
class McpToolRow:
    """An operation's MCP tool: its name and what the model reads about it. ``on_request``:
    served only when the server is asked for it (a tool a prompt injection should not reach
    by default, or one that needs more than the memory)."""

    name: str
    description: str
    on_request: bool = False


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation, declared once.

    ``request``: its request value (the parameters of every surface); ``result``: the model of
    its answer on the wire (HTTP, MCP, ``--json``), which reads the Python result with
    ``of(result)`` and gives it back with ``value()``; ``writes``: whether it changes anything
    (refused for read-only keys); ``route``: its HTTP route; ``tool``: its MCP tool (``None``:
    not served over MCP); ``command``: the ``remem`` command built from its request (``None``:
    none is); ``python``: the method of the Python facades (``Memory``, ``Client``) that
    builds and runs it; ``calls_model``: it may call the server's chat model (its failures
    are declared among the route's answers); ``sparse``: a field left out is not a field at
    its default (a thread's ``ttl`` left out is the server's default, unlike ``null``), so the
    body holds only the fields the request was given (``exclude_unset``, nested values too),
    the route builds the request from only the fields it was sent, and the answer leaves out
    the fields at their defaults (the family's JSON shapes, ``to_dict()``).
    """

    request: type[Request]
    result: type[BaseModel]
    writes: bool
    route: Route
    tool: McpToolRow | None = None
    command: str | None = None
    python: str | None = None
    calls_model: bool = False
    sparse: bool = False

    def __post_init__(self) -> None:
        # checked when the table is built, not when a request first takes the route
        fields = self.request.model_fields
        unknown = [n for n in (*self.route.path_fields, *self.route.not_sent,
                               *self.route.server_sets, *self.route.query) if n not in fields]
        if unknown:
            raise TypeError(f"{self.request.__name__} has no field {', '.join(unknown)} "
                            f"(route {self.route.method} {self.route.path})")
        part = self.route.part
        sent = self.query_fields if self.in_query else self.body_fields
        if isinstance(part, type) and set(part.model_fields) != set(sent):
            raise TypeError(f"{part.__name__} is not what the route of "
                            f"{self.request.__name__} takes besides its path ({sent})")
        if not callable(getattr(self.result, "of", None)):
            raise TypeError(f"{self.result.__name__} has no of(result): a result model reads "
                            "the Python result with it")
        if not callable(getattr(self.result, "value", None)):
            raise TypeError(f"{self.result.__name__} has no value(): a result model gives the "
                            "Python result back with it (what a client returns)")

    def answer(self, result: Any) -> BaseModel:
        """``result``, what running the request returned, as the row's wire model."""
        wire: BaseModel = self.result.of(result)  # type: ignore[attr-defined]  # checked above
        return wire

    def read(self, data: Any) -> Any:
        """The Python result an answer's JSON stands for, read with the row's wire model."""
        return self.result.model_validate(data).value()  # type: ignore[attr-defined]

    def call(self, request: Request) -> Call[Any]:
        """The HTTP call that runs ``request`` on a server: the row's method, its path with
        the path fields filled in (each one quoted segment), :attr:`query_fields` as query
        parameters in name order (those left ``None`` are not sent: the route's default; the
        query string does not change when a request reorders its fields), :attr:`body_fields`
        as the JSON body (none: no body; a :attr:`sparse` row's body holds only the fields the
        request was given), less the route's ``server_sets``; the answer is read with
        :meth:`read`. The fields are the request's JSON (``model_dump(mode="json")``), as the
        route validates them."""
        if type(request) is not self.request:
            raise TypeError(f"the row of {self.request.__name__} cannot send a "
                            f"{type(request).__name__}")
        kept = set(self.route.server_sets)
        data = request.model_dump(mode="json", exclude=kept)
        path = self.route.path.format(**{name: path_segment(str(data[field]))
                                         for name, field in self.route.path_params})
        params = {name: data[name] for name in sorted(self.query_fields)
                  if data.get(name) is not None}
        sent = (request.model_dump(mode="json", exclude_unset=True, exclude=kept)
                if self.sparse else data)
        body = ({name: sent[name] for name in self.body_fields if name in sent}
                if self.body_fields else None)
        return Call(self.route.method, path, self.read, body, params)

    @property
    def path_fields(self) -> tuple[str, ...]:
        """The request fields that travel in the path."""
        return self.route.path_fields

    @property
    def in_query(self) -> bool:
        """Whether the fields outside the path travel as query parameters (else as the body)."""
        return self.route.method in ("GET", "DELETE")

    @property
    def sent_fields(self) -> tuple[str, ...]:
        """The request fields that travel outside the path: all but the path's, the route's
        ``not_sent`` and the local ones (Python objects, never sent)."""
        skip = {*self.path_fields, *self.route.not_sent}
        return tuple(name for name, info in self.request.model_fields.items()
                     if name not in skip and not info.exclude)

    @property
    def query_fields(self) -> tuple[str, ...]:
        """The request fields sent as query parameters (a body route's: its ``query``)."""
        if self.in_query:
            return self.sent_fields
        return tuple(name for name in self.sent_fields if name in self.route.query)

    @property
    def body_fields(self) -> tuple[str, ...]:
        """The request fields sent in the JSON body (none: the route takes no body)."""
        if self.in_query:
            return ()
        return tuple(name for name in self.sent_fields if name not in self.route.query)

    @property
    def whole_body(self) -> bool:
        """Whether the body is the request itself (a ``POST``, ``PUT`` or ``PATCH`` without
        path or query fields, nor a ``part`` model), so the route's body schema is the
        request's."""
        return (self.route.method in ("POST", "PUT", "PATCH") and not self.path_fields
                and not self.route.query and not isinstance(self.route.part, type))


def command_of(table: Sequence[Operation], request: type[Request]) -> str:
    """The ``remem`` command ``table``'s row for ``request`` names (a :class:`TypeError` when
    there is no such row, or it names none)."""
    for row in table:
        if row.request is request and row.command is not None:
            return row.command
    raise TypeError(f"no row of the table names a command for {request.__name__}")


def row_of(table: Sequence[Operation], request: type[Request]) -> Operation:
    """``table``'s row for ``request`` (a :class:`TypeError` when there is none)."""
    for row in table:
        if row.request is request:
            return row
    raise TypeError(f"no row of the table is for {request.__name__}")
