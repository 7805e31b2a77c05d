"""The MCP server: memory tools for agents, over stdio (``remem mcp``) or streamable HTTP
(``/mcp`` on ``remem serve``), built with the official ``mcp`` package.

Tools: ``add_memory``, ``search_memories``, ``update_memory``, ``delete_memory`` and
``list_namespaces``. Each call runs as one principal: over HTTP the API key of the request
(``Authorization: Bearer``), over stdio the tenant the process was started for. Failures
come back to the model as tool errors with remem's message (which names the field and fix).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from remem.errors import InvalidInputError, RememError, UnsupportedError
from remem.memory.records import RESERVED_LABEL
from remem.server.auth import authenticate
from remem.server.metrics import Receive, Scope, Send
from remem.server.state import Principal, ServerState

__all__ = ["MCP_PATH", "McpAuthGate", "build_mcp", "build_mcp_http"]

MCP_PATH = "/mcp"

Resolver = Callable[[Context | None], Principal]

INSTRUCTIONS = (
    "Long-term memory. Save durable facts about the user with add_memory (scope them with "
    "user_id), look them up with search_memories before answering, correct or remove them "
    "with update_memory / delete_memory using the ids that search returns."
)


def _scope(namespace: list[str] | None) -> tuple[str, ...] | None:
    return tuple(namespace) if namespace else None


def build_mcp(state: ServerState, resolve: Resolver) -> MCPServer:
    """An :class:`MCPServer` whose tools act for the principal ``resolve`` returns."""
    server: MCPServer = MCPServer(name="remem", instructions=INSTRUCTIONS)

    async def run(ctx: Context | None, write: bool, fn: Callable[[Principal], Any], *,
                  waits_on_llm: bool = False) -> Any:
        who = resolve(ctx)
        if write and who.read_only:
            raise ToolError("this API key is read-only; memories cannot be changed with it")
        try:
            return await state.run(lambda: fn(who), waits_on_llm=waits_on_llm)
        except RememError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from None

    @server.tool()
    async def add_memory(text: str, user_id: str | None = None, agent_id: str | None = None,
                         namespace: list[str] | None = None, infer: bool | None = None,
                         metadata: dict[str, Any] | None = None,
                         ctx: Context | None = None) -> dict[str, Any]:
        """Remember something. ``text``: what to remember (a fact, or a conversation turn when
        ``infer`` is true). Scope it with ``user_id`` and/or ``agent_id`` (or a ``namespace``).
        ``infer``: extract facts with the server's LLM; default: when the server has one."""
        use_llm = state.config.llm is not None if infer is None else infer

        def call(who: Principal) -> dict[str, Any]:
            if use_llm and state.config.llm is None:
                raise UnsupportedError("this server has no LLM; call again with infer=false")
            result = state.memory_for(who).add(
                text, user_id=user_id, agent_id=agent_id, namespace=_scope(namespace),
                infer=use_llm, metadata=metadata, actor="mcp")
            data: dict[str, Any] = result.to_dict()
            return data
        return await run(ctx, True, call, waits_on_llm=use_llm)  # type: ignore[no-any-return]

    @server.tool()
    async def search_memories(query: str, user_id: str | None = None,
                              agent_id: str | None = None, namespace: list[str] | None = None,
                              limit: int = 10, ctx: Context | None = None) -> dict[str, Any]:
        """Find memories relevant to ``query`` in a scope, best first; each hit has the
        memory's ``id`` (for update/delete), its ``text`` and a score."""
        def call(who: Principal) -> dict[str, Any]:
            result = state.memory_for(who).search(
                query, user_id=user_id, agent_id=agent_id, namespace=_scope(namespace),
                limit=limit)
            return {"memories": [{"id": h.memory.id, "text": h.memory.text,
                                  "kind": h.memory.kind, "namespace": list(h.memory.namespace),
                                  "score": h.score} for h in result.hits]}
        return await run(ctx, False, call)  # type: ignore[no-any-return]

    @server.tool()
    async def update_memory(memory_id: str, text: str, reason: str = "",
                            ctx: Context | None = None) -> dict[str, Any]:
        """Replace the content of memory ``memory_id`` with ``text`` (history keeps the old)."""
        def call(who: Principal) -> dict[str, Any]:
            data: dict[str, Any] = state.memory_for(who).update(
                memory_id, text, actor="mcp", reason=reason).to_dict()
            return data
        return await run(ctx, True, call)  # type: ignore[no-any-return]

    @server.tool()
    async def delete_memory(memory_id: str, hard: bool = False,
                            ctx: Context | None = None) -> dict[str, Any]:
        """Forget memory ``memory_id`` (kept in history unless ``hard`` is true)."""
        def call(who: Principal) -> dict[str, Any]:
            data: dict[str, Any] = state.memory_for(who).delete(
                memory_id, hard=hard, actor="mcp").to_dict()
            return data
        return await run(ctx, True, call)  # type: ignore[no-any-return]

    @server.tool()
    async def list_namespaces(prefix: list[str] | None = None, limit: int = 100,
                              ctx: Context | None = None) -> dict[str, Any]:
        """Namespaces that hold memories (``*`` in ``prefix`` matches any one label)."""
        def call(who: Principal) -> dict[str, Any]:
            if not 1 <= limit <= 1000:
                raise InvalidInputError(f"limit must be between 1 and 1000, got {limit}")
            # remem's bookkeeping (ids, history, locks) is not the agent's business
            found = state.store_for(who).list_namespaces(
                prefix=tuple(prefix) if prefix else None, limit=limit + 1000)
            shown = [list(ns) for ns in found if ns[0] != RESERVED_LABEL]
            return {"namespaces": shown[:limit]}
        return await run(ctx, False, call)  # type: ignore[no-any-return]

    return server


def _bearer(headers: Any) -> str | None:
    if headers is None:
        return None
    value = headers.get("authorization") or ""
    if value.lower().startswith("bearer "):
        return str(value[7:])
    key = headers.get("x-api-key")
    return str(key) if key else None


def http_resolver(state: ServerState) -> Resolver:
    """Principals from the HTTP headers of each MCP request."""
    def resolve(ctx: Context | None) -> Principal:
        headers = ctx.headers if ctx is not None else None
        try:
            return authenticate(state, _bearer(headers))
        except Exception as exc:  # HTTPException: the gate already answered 401 for these
            raise ToolError(f"unauthorized: {getattr(exc, 'detail', exc)}") from None
    return resolve


class McpAuthGate:
    """ASGI wrapper answering 401 before the MCP transport when the key is missing or bad."""

    def __init__(self, app: Starlette, state: ServerState) -> None:
        self.app = app
        self.state = state
        self.router = app.router  # the lifespan runs the session manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the key (in a worker thread: it may read the store), then pass through."""
        if scope["type"] == "http" and self.state.config.auth:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                       for k, v in scope.get("headers", ())}
            try:
                await self.state.run(lambda: authenticate(self.state, _bearer(headers)))
            except Exception as exc:
                body = json.dumps({"error": "unauthorized", "field": None, "details": [],
                                   "message": str(getattr(exc, "detail", exc))}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def build_mcp_http(state: ServerState) -> McpAuthGate:
    """The streamable HTTP app for ``/mcp`` (stateless, JSON answers), behind the key gate."""
    server = build_mcp(state, http_resolver(state))
    loopback = state.config.host in ("127.0.0.1", "localhost", "::1")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True,
                                     json_response=True, transport_security=security,
                                     max_request_body_size=state.config.max_body_bytes)
    return McpAuthGate(app, state)


async def serve_stdio(state: ServerState, principal: Principal) -> None:
    """Run the MCP server on stdin/stdout for one principal (``remem mcp``)."""
    server = build_mcp(state, lambda ctx: principal)
    await server.run_stdio_async()


