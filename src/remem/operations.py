"""Operations as data: one :class:`Operation` row declares an operation once for every surface.

A family (memories, threads, files...) lists its operations in a table of rows beside its
request values. The surfaces read the table instead of listing the operations again: the
server's router builder (:mod:`remem.server.operation_routes`) makes each row's route, the MCP
registrar (:mod:`remem.server.mcp_registrar`) its tool, and the parity tests check every row on
every surface. A new operation is a row and a handler.

How a request travels over HTTP is derived from the row, in plain data a client can follow
without the server's code: the fields named in the path (``{memory_id}``) go in the path; of
the others (less the row's ``not_sent`` and the local fields that hold Python objects), a
``GET`` or ``DELETE`` sends them as query parameters and a ``POST`` or ``PATCH`` as the JSON
body (:attr:`Operation.query_fields`, :attr:`Operation.body_fields`). A ``POST`` without
path fields has the request itself as its body, so its OpenAPI schema is the request's.

This module imports no surface (nor any family): every family's table can use it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from remem.requests import Request

__all__ = ["HttpMethod", "McpToolRow", "Operation", "Route", "command_of"]

HttpMethod = Literal["GET", "POST", "PATCH", "DELETE"]


@dataclass(frozen=True, slots=True)
class Route:
    """An operation's HTTP route.

    ``path`` is from the server's root; each ``{name}`` in it is the request field of that
    name. ``name`` names the route (FastAPI's operation id is made from it); ``summary`` and
    ``description`` are its OpenAPI documentation. ``not_sent``: request fields the route does
    not take at all, because the server sets them itself (``actor``, on routes without a body
    to carry it).
    """

    method: HttpMethod
    path: str
    name: str
    summary: str
    description: str
    not_sent: tuple[str, ...] = ()

    @property
    def path_fields(self) -> tuple[str, ...]:
        """The request fields that travel in the path, in path order."""
        return tuple(re.findall(r"{(\w+)}", self.path))


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
    its answer on the wire (HTTP, MCP, ``--json``); ``writes``: whether it changes anything
    (refused for read-only keys); ``route``: its HTTP route; ``tool``: its MCP tool (``None``:
    not served over MCP); ``command``: the ``remem`` command built from its request (``None``:
    none is); ``python``: the method of the Python facades (``Memory``, ``Client``) that
    builds and runs it; ``calls_model``: it may call the server's chat model (its failures
    are declared among the route's answers).
    """

    request: type[Request]
    result: type[BaseModel]
    writes: bool
    route: Route
    tool: McpToolRow | None = None
    command: str | None = None
    python: str | None = None
    calls_model: bool = False

    def __post_init__(self) -> None:
        # checked when the table is built, not when a request first takes the route
        fields = self.request.model_fields
        unknown = [n for n in (*self.route.path_fields, *self.route.not_sent) if n not in fields]
        if unknown:
            raise TypeError(f"{self.request.__name__} has no field {', '.join(unknown)} "
                            f"(route {self.route.method} {self.route.path})")
        if not callable(getattr(self.result, "of", None)):
            raise TypeError(f"{self.result.__name__} has no of(result): a result model reads "
                            "the Python result with it")

    def answer(self, result: Any) -> BaseModel:
        """``result``, what running the request returned, as the row's wire model."""
        wire: BaseModel = self.result.of(result)  # type: ignore[attr-defined]  # checked above
        return wire

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
        """The request fields sent as query parameters."""
        return self.sent_fields if self.in_query else ()

    @property
    def body_fields(self) -> tuple[str, ...]:
        """The request fields sent in the JSON body (none: the route takes no body)."""
        return () if self.in_query else self.sent_fields

    @property
    def whole_body(self) -> bool:
        """Whether the body is the request itself (a ``POST`` without path fields), so the
        route's body schema is the request's."""
        return self.route.method == "POST" and not self.path_fields


def command_of(table: Sequence[Operation], request: type[Request]) -> str:
    """The ``remem`` command ``table``'s row for ``request`` names (a :class:`TypeError` when
    there is no such row, or it names none)."""
    for row in table:
        if row.request is request and row.command is not None:
            return row.command
    raise TypeError(f"no row of the table names a command for {request.__name__}")
