"""The MCP server: memory tools for agents, over stdio (``remem mcp``) or streamable HTTP
(``/mcp`` on ``remem serve``), built with the official ``mcp`` package.

The memory tools are the memory table's (:mod:`remem.memory.operation_table`), one per entry
of :data:`MCP_TOOLS`, registered by :mod:`remem.server.mcp_registrar` like every other tool:
a tool's parameters are its request's fields (their JSON schema, defaults and descriptions)
minus :data:`SERVER_FIXED`; a call validates them into the request, runs it with
:meth:`remem.api.Memory.run` and answers the result's JSON, the same document as the HTTP
API. ``forget_memories`` (every memory of a scope) is only served when
asked for (:data:`FORGET_TOOL`). ``list_namespaces`` is the one tool of its own.

Each call runs as one principal: over HTTP the API key of the request (``Authorization:
Bearer``; an admin key may name another tenant in ``X-Remem-Tenant``, as in the HTTP API),
over stdio the tenant the process was started for. Failures come back to the model
as tool errors with remem's message (which names the field and fix).
"""

from __future__ import annotations

import inspect
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from remem.context.assemble import ContextRequest, assemble
from remem.context.operation_table import CONTEXT_OPERATIONS
from remem.context.wire import ContextOut
from remem.errors import InvalidInputError, RememError
from remem.memory.operation_table import MEMORY_OPERATIONS
from remem.memory.requests import AddRequest, DeleteAllRequest, MemoryRequest
from remem.memory.wire import RESULT_MODELS
from remem.requests import Request
from remem.server.auth import (
    acting_principal,
    admit,
    client_address,
    tenant_header_of,
    token_of,
    verified_key,
)
from remem.server.errors import classify
from remem.server.mcp_front import INSTRUCTIONS, SERVER_NAME, server_version
from remem.server.mcp_registrar import (
    SERVER_FIXED,
    McpTool,
    Runner,
    Work,
    add_request_tool,
    forbid_unknown_arguments,
)
from remem.server.metrics import Receive, Scope, Send
from remem.server.netguard import is_loopback, rebinding_refusal
from remem.server.routes_blocks import add_block_admin_tools
from remem.server.routes_files import add_file_tools
from remem.server.routes_graph import add_graph_tools
from remem.server.routes_jobs import add_submit_tool
from remem.server.routes_procedural import add_procedural_tools
from remem.server.state import Principal, ServerState
from remem.store.reserved import BLOCKS, is_bookkeeping

__all__ = ["CONTEXT_TOOL", "FORGET_TOOL", "MCP_PATH", "MCP_TOOLS", "SERVER_FIXED",
           "AgentTools", "McpAuthGate", "McpTool", "add_agent_tools", "add_archival_tools",
           "add_block_tools", "add_conversation_tools", "build_mcp", "build_mcp_http",
           "tool_defaults"]

MCP_PATH = "/mcp"

logger = logging.getLogger("remem.server")

#: who a call acts for (a coroutine when finding out reads the store)
Resolver = Callable[[Context | None], Principal | Awaitable[Principal]]


MCP_TOOLS: tuple[McpTool, ...] = tuple(
    McpTool.of(row) for row in MEMORY_OPERATIONS if row.tool and not row.tool.on_request)
"""The memory tools every server has, in the order tools/list shows them (the memory
table's)."""

FORGET_TOOL = McpTool.of(next(row for row in MEMORY_OPERATIONS
                              if row.request is DeleteAllRequest))
"""Served only when asked for (``remem mcp --allow-forget``, ``build_mcp(tools=...)``): one
call wipes a user's memories, too much for a tool a prompt injection could reach."""

CONTEXT_TOOL = McpTool.of(CONTEXT_OPERATIONS[0])
"""Served when asked for (``context=True``): context assembly (:mod:`remem.context`) on the
caller's memory and threads; it answers ``POST /v1/memories/context``'s document."""


def tool_defaults(state: ServerState) -> dict[str, Any]:
    """Defaults this server gives differently from the requests: none. ``infer`` left unset
    extracts with the server's LLM if it has one and stores as is otherwise, as on every
    surface (:meth:`AddRequest.with_model <remem.memory.requests.AddRequest.with_model>`)."""
    return {}


def result_json(request: MemoryRequest[Any], result: Any) -> dict[str, Any]:
    """The tool's answer: the result's JSON in its declared shape (:mod:`remem.memory.wire`),
    the HTTP API's answer."""
    for kind in type(request).__mro__:  # a subclass of a request answers like it
        if kind in RESULT_MODELS:
            data: dict[str, Any] = RESULT_MODELS[kind].of(result).model_dump(
                mode="json", by_alias=True)
            return data
    raise TypeError(f"no JSON shape declared for the result of {type(request).__name__}")


def _encoded(request: MemoryRequest[Any], result: Any) -> dict[str, Any]:
    """:func:`result_json`, or a tool error saying the call completed but its result could
    not be encoded (never a failure the model would retry as if nothing happened)."""
    try:
        return result_json(request, result)
    except (ValueError, RecursionError) as exc:
        incident = uuid.uuid4().hex[:12]
        logger.error("MCP result of %s not encodable (error id %s)", type(request).__name__,
                     incident, exc_info=exc)
        raise ToolError(f"internal error {incident}: the call completed (any change it made "
                        "is saved) but its result could not be encoded; read the data back "
                        "before retrying") from None


def build_mcp(state: ServerState, resolve: Resolver, *,
              tools: Sequence[McpTool] = MCP_TOOLS, procedural: bool = False,
              files: bool = False, context: bool = False, blocks_agent: str | None = None,
              archival_user: str | None = None,
              conversation_user: str | None = None, graph: bool = False,
              block_admin: bool = False, files_user: str | None = None,
              files_agent: str | None = None) -> MCPServer:
    """An :class:`MCPServer` whose ``tools`` (and ``list_namespaces``) act for the principal
    ``resolve`` returns; pass ``(*MCP_TOOLS, FORGET_TOOL)`` to serve ``forget_memories``;
    ``procedural``: also the prompt and episode tools
    (:func:`remem.server.routes_procedural.add_procedural_tools`); ``files``: also the file
    tools on the caller's default file tree (:func:`remem.server.routes_files.add_file_tools`);
    ``context``: also :data:`CONTEXT_TOOL`; ``blocks_agent``: also the block tools
    (``core_memory_append``, ``core_memory_replace``, ``memory_rethink``) on that agent's
    blocks in the caller's tenant; ``archival_user``: also ``archival_memory_insert`` and
    ``archival_memory_search`` on that user's memories in the caller's tenant;
    ``conversation_user``: also ``conversation_search`` over the caller's threads whose
    metadata ``user_id`` is that user; ``graph``: also the temporal graph tools
    (``search_facts``, ``get_entity``, ``get_profile``, ``get_timeline``, and with a model
    ``ingest_episode``; :func:`remem.server.routes_graph.add_graph_tools`); ``block_admin``:
    also the application's block tools (create, list, get, update, delete, attach, detach:
    :func:`remem.server.routes_blocks.add_block_admin_tools`), not meant for an agent;
    ``files_user`` / ``files_agent``: who the file tools act for when the request's headers
    do not say (:func:`remem.server.routes_files.add_file_tools`)."""
    server: MCPServer = MCPServer(name=SERVER_NAME, instructions=INSTRUCTIONS,
                                  version=server_version())

    async def run(ctx: Context | None, write: bool, fn: Callable[[Principal], Any], *,
                  waits_on_llm: bool = False) -> Any:
        resolved = resolve(ctx)
        who = await resolved if inspect.isawaitable(resolved) else resolved
        if write and who.read_only:
            raise ToolError("this API key is read-only; memories cannot be changed with it")
        try:
            return await state.run(lambda: fn(who), waits_on_llm=waits_on_llm)
        except RememError as exc:  # a server-side failure shows an error id, no paths
            raise ToolError(f"{type(exc).__name__}: {classify(exc, 'MCP tool')[2]}") from None

    def run_memory(request: MemoryRequest[Any], ctx: Context | None) -> Work:
        def work(who: Principal) -> Any:
            ran = request.with_model(_has_model(state)) if isinstance(request, AddRequest) \
                else request
            return _encoded(request, state.memory_for(who).run(ran))
        return work

    def extracts(request: MemoryRequest[Any]) -> bool:
        return isinstance(request, AddRequest) and request.infer is not False \
            and _has_model(state)

    for tool in tools:
        add_request_tool(server, run, tool, run_memory, defaults=tool_defaults(state),
                         waits_on_llm=extracts)
    if context:
        _add_context_tool(server, state, run)
    if blocks_agent is not None:
        add_block_tools(server, state, run, blocks_agent)
    if block_admin:
        add_block_admin_tools(server, state, run)
    if archival_user is not None:
        add_archival_tools(server, state, run, archival_user)
    if conversation_user is not None:
        add_conversation_tools(server, state, run, conversation_user)
    if state.config.llm is not None:  # background extraction needs the server's model
        add_submit_tool(server, state, run)
    if procedural:
        add_procedural_tools(server, state, run)
    if graph:
        add_graph_tools(server, state, run)
    if files:
        add_file_tools(server, state, run, user=files_user, agent=files_agent)

    @server.tool()
    async def list_namespaces(prefix: list[str] | None = None, limit: int = 100,
                              ctx: Context | None = None) -> dict[str, Any]:
        """Namespaces that hold memories (``*`` in ``prefix`` matches any one label)."""
        def call(who: Principal) -> dict[str, Any]:
            if not 1 <= limit <= 1000:
                raise InvalidInputError(f"limit must be between 1 and 1000, got {limit}")
            # the raw store as a client sees it (no files or approvals unless an admin key);
            # remem's bookkeeping (ids, history, locks) is not the agent's business
            raw = state.raw_store_for(who)
            found = raw.list_namespaces(prefix=tuple(prefix) if prefix else None,
                                        limit=limit + 1000)
            shown = [list(ns) for ns in found
                     if not is_bookkeeping(ns, whole_store=raw.whole_store)]
            return {"namespaces": shown[:limit]}
        return await run(ctx, False, call)  # type: ignore[no-any-return]

    forbid_unknown_arguments(server, "list_namespaces")
    return server


def _has_model(state: ServerState) -> bool:
    return state.config.llm is not None


def _add_context_tool(server: MCPServer, state: ServerState, run: Runner) -> None:
    """:data:`CONTEXT_TOOL` on ``server``: assembled on the caller's memory and threads."""
    def assemble_context(request: ContextRequest, ctx: Context | None) -> Work:
        def work(who: Principal) -> dict[str, Any]:
            result = assemble(state.memory_for(who), request, state.threads_for(who))
            return ContextOut.of(result).model_dump(mode="json")
        return work

    add_request_tool(server, run, CONTEXT_TOOL, assemble_context)


class AgentTools(Protocol):
    """Agent tools answering a validated request (:class:`remem.tools.blocks.BlockTools`,
    :class:`remem.tools.archival.ArchivalTools`)."""

    def answer(self, name: str, request: Any) -> dict[str, Any]:
        """The JSON answer of tool ``name`` to ``request``, within the tools' budget."""
        ...


def add_agent_tools(server: MCPServer, run: Runner,
                    specs: Mapping[str, tuple[type[Request], str]], writes: frozenset[str],
                    make: Callable[[Principal], AgentTools]) -> None:
    """Serve the agent tools ``specs`` (name -> request model, description) on ``server``:
    each call validates its arguments into the request and answers what ``make(who)``'s tools
    answer (within their token budget); a refused call is a tool error naming the fix."""
    for name, (model, description) in specs.items():
        def answer(request: Any, ctx: Context | None, name: str = name) -> Work:
            return lambda who: make(who).answer(name, request)

        add_request_tool(server, run, McpTool(name, model, name in writes, description),
                         answer)


def add_block_tools(server: MCPServer, state: ServerState, run: Runner, agent_id: str) -> None:
    """The block tools on ``agent_id``'s blocks in the caller's tenant (where ``/v1/blocks``
    keeps them)."""
    from remem.blocks import Blocks
    from remem.files import StoreFileBackend
    from remem.tools.blocks import BLOCK_TOOLS, BlockTools

    def make(who: Principal) -> AgentTools:
        blocks = Blocks(StoreFileBackend(state.store_for(who), (BLOCKS,)))
        return BlockTools(blocks, agent_id, actor=f"mcp:{who.tenant}")

    add_agent_tools(server, run, BLOCK_TOOLS, frozenset(BLOCK_TOOLS), make)


def add_archival_tools(server: MCPServer, state: ServerState, run: Runner, user_id: str) -> None:
    """``archival_memory_insert`` / ``archival_memory_search`` on ``user_id``'s memories in
    the caller's tenant."""
    from remem.tools.archival import ARCHIVAL_TOOLS, ArchivalTools

    def make(who: Principal) -> AgentTools:
        return ArchivalTools(state.memory_for(who), user_id=user_id, actor="mcp")

    add_agent_tools(server, run, ARCHIVAL_TOOLS, frozenset({"archival_memory_insert"}), make)


def add_conversation_tools(server: MCPServer, state: ServerState, run: Runner,
                           user_id: str) -> None:
    """``conversation_search`` over the caller's threads whose metadata ``user_id`` is
    ``user_id`` (text and date range, newest first, within the tool's budget)."""
    from remem.tools.archival import CONVERSATION_TOOLS, ConversationTools

    def make(who: Principal) -> AgentTools:
        return ConversationTools(state.threads_for(who), thread_filter={"user_id": user_id})

    add_agent_tools(server, run, CONVERSATION_TOOLS, frozenset(), make)


def _raw_headers(headers: Any) -> list[tuple[bytes, bytes]]:
    raw = getattr(headers, "raw", None)
    if raw is None:  # a plain mapping: one value per name
        raw = [(str(k).encode("latin-1"), str(v).encode("latin-1")) for k, v in
               dict(headers).items()]
    return list(raw)


def http_principal(state: ServerState, headers: Sequence[tuple[bytes, bytes]],
                   address: str | None = None) -> Principal:
    """Who an MCP request over HTTP acts as: its key's own tenant, or the tenant an admin key
    names in ``X-Remem-Tenant``, by the same rule as every ``/v1`` route
    (:func:`~remem.server.auth.acting_principal`). Raises HTTP 401/400 (429 for a client
    ``address`` with too many failed authentications, which a failure here counts), or
    :class:`~remem.errors.PermissionDeniedError` / :class:`~remem.errors.InvalidInputError`
    for the header."""
    key = verified_key(state, token_of(headers), address)
    return acting_principal(key, tenant_header_of(headers))


def http_resolver(state: ServerState) -> Resolver:
    """Principals from the HTTP headers of each MCP request (the gate already refused
    missing, invalid and repeated keys and a tenant header the key may not send, and
    counted the request against the key's rate)."""
    def resolve(ctx: Context | None) -> Principal:
        headers = _raw_headers(ctx.headers) if ctx is not None and ctx.headers else []
        try:
            return http_principal(state, headers)
        except Exception as exc:  # the gate already answered these
            raise ToolError(f"unauthorized: {getattr(exc, 'detail', exc)}") from None
    return resolve


def _json_answer(status: int, error: str, message: str,
                 headers: Sequence[tuple[bytes, bytes]] = ()) -> tuple[dict[str, Any], bytes]:
    body = json.dumps({"error": error, "field": None, "details": [],
                       "message": message}).encode()
    start = {"type": "http.response.start", "status": status,
             "headers": [(b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode()), *headers]}
    return start, body


class McpAuthGate:
    """ASGI wrapper answering 401 before the MCP transport when the key is missing or bad."""

    def __init__(self, app: Starlette, state: ServerState) -> None:
        self.app = app
        self.state = state
        self.router = app.router  # the lifespan runs the session manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check Host and Origin (on loopback or without auth), the key (in a worker thread:
        it may read the store) and the key's rate, then pass through."""
        if scope["type"] == "http":
            answer = await self._refusal(scope)
            if answer is not None:
                start, body = answer
                await send(start)
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    async def _refusal(self, scope: Scope) -> tuple[dict[str, Any], bytes] | None:
        config = self.state.config
        if not config.auth or is_loopback(config.host):
            refused = rebinding_refusal(scope)
            if refused is not None:
                return _json_answer(refused[0], "misdirected" if refused[0] == 421
                                    else "forbidden", refused[1])
        headers = scope.get("headers", ())
        try:
            address = client_address(scope)
            who = await self.state.run(lambda: http_principal(self.state, headers, address))
            admit(self.state, who)
        except RememError as exc:  # the tenant header: the same answer as the /v1 routes
            return _json_answer(*classify(exc, "MCP request"))
        except Exception as exc:
            status = int(getattr(exc, "status_code", 401))
            extra: list[tuple[bytes, bytes]] = [
                (k.lower().encode("latin-1"), v.encode("latin-1"))
                for k, v in (getattr(exc, "headers", None) or {}).items()]
            kind = {400: "bad_request", 429: "rate_limited"}.get(status, "unauthorized")
            return _json_answer(status, kind, str(getattr(exc, "detail", exc)), extra)
        return None


def build_mcp_http(state: ServerState, *, files: bool = False, context: bool = False,
                   blocks_agent: str | None = None, archival_user: str | None = None,
                   conversation_user: str | None = None,
                   procedural: bool = False, graph: bool = False,
                   block_admin: bool = False) -> McpAuthGate:
    """The streamable HTTP app for ``/mcp`` (stateless, JSON answers), behind the gate that
    checks Host and Origin (:mod:`remem.server.netguard`, the server's one definition of
    loopback), the key and its rate; the flags switch on tools as :func:`build_mcp`."""
    server = build_mcp(state, http_resolver(state), files=files, context=context,
                       blocks_agent=blocks_agent, archival_user=archival_user,
                       conversation_user=conversation_user, procedural=procedural,
                       graph=graph, block_admin=block_admin)
    # the gate checks Host and Origin; the transport's own check knows only literal names
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True,
                                     json_response=True, transport_security=security,
                                     max_request_body_size=state.config.max_body_bytes)
    return McpAuthGate(app, state)


def stdio_resolver(state: ServerState, principal: Principal, *,
                   clock: Callable[[], float] = time.monotonic) -> Resolver:
    """``principal`` for every call; if it came from a key, the key is looked up again
    when the last look-up is older than ``key_cache_seconds``, so a revoked key stops
    working within that time (a tool error names the fix)."""
    if principal.key_id is None:
        return lambda ctx: principal
    key_id = principal.key_id
    checked = [clock()]

    async def resolve(ctx: Context | None) -> Principal:
        now = clock()
        if now - checked[0] >= state.config.key_cache_seconds:
            key = await state.run(lambda: state.keys.lookup(key_id))
            if key is None or not key.active:
                raise ToolError(f"unauthorized: API key {key_id} was revoked; start the "
                                "server with an active key ('remem keys create')")
            checked[0] = now
        return principal
    return resolve


async def serve_stdio(state: ServerState, principal: Principal, *,
                      forget: bool = False, procedural: bool = False, files: bool = False,
                      context: bool = False, blocks_agent: str | None = None,
                      archival_user: str | None = None,
                      conversation_user: str | None = None, graph: bool = False,
                      files_user: str | None = None, files_agent: str | None = None) -> None:
    """Run the MCP server on stdin/stdout for one principal (``remem mcp``); ``forget``
    serves :data:`FORGET_TOOL` too, ``procedural`` the prompt and episode tools, the other
    flags as :func:`build_mcp`. A key's principal is re-checked (:func:`stdio_resolver`)."""
    tools = (*MCP_TOOLS, FORGET_TOOL) if forget else MCP_TOOLS
    server = build_mcp(state, stdio_resolver(state, principal), tools=tools,
                       procedural=procedural, files=files, context=context,
                       blocks_agent=blocks_agent, archival_user=archival_user,
                       conversation_user=conversation_user, graph=graph,
                       files_user=files_user, files_agent=files_agent)
    await server.run_stdio_async()


