"""DNS rebinding protection: which ``Host`` and ``Origin`` a loopback or keyless server
answers.

A web page on ``evil.example`` can have its name re-resolved to ``127.0.0.1`` and then send
requests to a server on this machine, with ``Host: evil.example`` (and its own ``Origin``).
A server reachable that way without a key (``--no-auth``), or bound to loopback where
"only this machine can reach it" is the protection, refuses such requests on every route:
``Host`` must name a loopback address (:func:`is_loopback`) or the address the server is
bound to, and an ``Origin``, when sent, must name one of those over http(s).

:func:`is_loopback` is the one definition of loopback for the server, the MCP transport
(:mod:`remem.server.mcp`) and ``remem serve --no-auth``.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

from remem.server.asgi import ASGIApp, Receive, Scope, Send

__all__ = ["GUARD_RESPONSES", "HostGuard", "document_guard", "host_name", "is_loopback",
           "rebinding_refusal"]

#: the answers :class:`HostGuard` gives, as OpenAPI responses of every operation it guards
GUARD_RESPONSES: dict[str, dict[str, Any]] = {
    "421": {"description": "misdirected: the Host header names neither a loopback address nor "
                           "the address the server is bound to (DNS rebinding protection of a "
                           "loopback or keyless server)"},
    "403": {"description": "an Origin header names another site (DNS rebinding protection of "
                           "a loopback or keyless server)"},
}
_VERBS = frozenset({"get", "put", "post", "delete", "patch", "options", "head", "trace"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, IPv6 with or without brackets) only reaches this
    machine: ``localhost``, 127.0.0.0/8, ``::1`` (and IPv4-mapped 127.x)."""
    host = host.strip().rstrip(".").lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def host_name(host: str) -> str:
    """The name in a ``Host`` header value (without the port; IPv6 without brackets)."""
    host = host.strip()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _allowed(name: str, bound: str | None) -> bool:
    return bool(name) and (is_loopback(name) or (bound is not None and
                                                 name.lower() == bound.lower()))


def rebinding_refusal(scope: Scope) -> tuple[int, str] | None:
    """``(status, message)`` if ``scope``'s ``Host`` or ``Origin`` does not name this server,
    else ``None``. "This server" is a loopback name or the address it is bound to (the ASGI
    ``server`` entry, set by the server from its socket)."""
    server = scope.get("server")
    bound = str(server[0]) if server else None
    hosts: list[str] = []
    origins: list[str] = []
    for name, value in scope.get("headers", ()):
        if name == b"host":
            hosts.append(value.decode("latin-1"))
        elif name == b"origin":
            origins.append(value.decode("latin-1"))
    if len(hosts) != 1 or not _allowed(host_name(hosts[0]), bound):
        return 421, ("this server answers only requests whose Host header names it by a "
                     "loopback address or name; a request for another host name is refused "
                     "(DNS rebinding protection)")
    if origins:
        parts = urlsplit(origins[0]) if len(origins) == 1 else None
        if (parts is None or parts.scheme not in ("http", "https")
                or not _allowed(parts.hostname or "", bound)):
            return 403, ("requests from web pages of other origins are refused on a "
                         "loopback or keyless server (DNS rebinding protection)")
    return None


def document_guard(app: Any) -> None:
    """Add :data:`GUARD_RESPONSES` to every operation of ``app``'s OpenAPI schema (a FastAPI
    app whose routes :class:`HostGuard` guards), with the error body every route answers."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        return _guarded(build())  # FastAPI builds the schema once and caches it

    app.openapi = openapi


def _guarded(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (FastAPI's cached one) with :data:`GUARD_RESPONSES` on every operation."""
    body = ({"content": {"application/json": {"schema": {
        "$ref": "#/components/schemas/ErrorBody"}}}}
            if "ErrorBody" in schema.get("components", {}).get("schemas", {}) else {})
    for path_item in schema.get("paths", {}).values():
        for verb, operation in path_item.items():
            if verb not in _VERBS:
                continue
            responses = operation.setdefault("responses", {})
            for status, answer in GUARD_RESPONSES.items():
                if status not in responses:
                    responses[status] = {**answer, **body}
                elif answer["description"] not in responses[status]["description"]:
                    responses[status]["description"] += f"; or {answer['description']}"
    return schema


class HostGuard:
    """ASGI middleware answering :func:`rebinding_refusal`'s refusals (every HTTP route)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a foreign Host or Origin, else pass the request on."""
        refusal = rebinding_refusal(scope) if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, message = refusal
        body = json.dumps({"error": "misdirected" if status == 421 else "forbidden",
                           "message": message, "field": "headers", "details": []}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
