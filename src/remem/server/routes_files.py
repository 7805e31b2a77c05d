"""``/v1/files``: the file tree agents see, in the caller's tenant, through the server's file
permission policy.

The routes and the MCP file tools are the rows of
:data:`remem.files.operation_table.FILE_OPERATIONS` (the router builder,
:mod:`remem.server.operation_routes`, and the MCP registrar make them): each body is a file
request model (:mod:`remem.files.requests`), the same value the agent tools and the CLI run,
and each answer the row's result model (:mod:`remem.files.wire`). ``tree`` (a query
parameter, default ``default``) picks one of the tenant's file trees: files live under the
store namespace ``("files", tree)`` of the tenant's scoped store. Errors map as everywhere:
a refused path or bad edit is 422, a missing file 404, a stale etag 409.

**Permissions.** Every file route and MCP file tool runs through
:class:`~remem.files.permissions.GuardedFiles` with the server's policy (the scope rules
match is the caller's tenant): the JSON file ``REMEM_FILE_POLICY`` names
(:func:`~remem.files.permissions.load_policy`), or one set with :func:`set_file_policy`;
without either every operation is allowed. ``deny`` is a 403 ``permission_denied``;
``ask`` makes no change and answers 202 with the pending approval, which
``GET /v1/approvals`` lists; it must be approved with another key than the one that asked
(an agent cannot approve itself). Listings, globs and greps leave out what the caller may
not read. A policy file that cannot be read fails every file request (400
``not_configured``) rather than opening the files.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from remem.errors import ConfigError
from remem.files.approvals import Interrupt
from remem.files.operation_table import FILE_OPERATIONS
from remem.files.permissions import POLICY_ENV, Caller, GuardedFiles, Policy, load_policy
from remem.files.requests import AnyFileRequest
from remem.operations import Operation
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.operation_routes import add_operation_routes
from remem.server.schemas import Label
from remem.server.state import Principal, ServerState

__all__ = ["AGENT_HEADER", "FILE_POLICY_ENV", "USER_HEADER", "FileTarget", "add_file_tools",
           "file_policy", "guarded_files", "router", "set_file_policy"]

logger = logging.getLogger("remem.server")

#: the environment variable naming the server's file policy (a JSON file)
FILE_POLICY_ENV = POLICY_ENV

router = APIRouter(tags=["files"], responses={
    **ERROR_RESPONSES,
    202: {"description": "a permission rule says to ask: nothing was changed; the body is the "
                         "pending approval (see /v1/approvals)"},
    403: {"description": "a read-only key used for a write, or the file permissions deny "
                         "the operation (`permission_denied`)"},
})

TreeQuery = Annotated[Label, Query(description="which of the tenant's file trees")]

_ALLOW_ALL = Policy()
#: policies set per server state (by id, checked against a weak reference: the state is an
#: unhashable dataclass), and those read from REMEM_FILE_POLICY files, by path
_set: dict[int, tuple[weakref.ref[ServerState], Policy]] = {}
_from_env: dict[str, Policy] = {}
_lock = threading.Lock()


def set_file_policy(state: ServerState, policy: Policy | None) -> None:
    """Serve ``state``'s file routes and MCP file tools through ``policy`` (``None``: back
    to ``REMEM_FILE_POLICY``, or allow everything). Call it on ``app.state.remem``."""
    with _lock:
        if policy is None:
            _set.pop(id(state), None)
            return
        if id(state) not in _set:
            weakref.finalize(state, _set.pop, id(state), None)
        _set[id(state)] = (weakref.ref(state), policy)


def file_policy(state: ServerState) -> Policy:
    """The policy ``state``'s file surfaces enforce (see the module docstring)."""
    entry = _set.get(id(state))
    if entry is not None and entry[0]() is state:
        return entry[1]
    path = os.environ.get(FILE_POLICY_ENV, "").strip()
    if not path:
        return _ALLOW_ALL
    with _lock:  # read once per process; a bad file fails every request, never opens them
        if path not in _from_env:
            try:
                _from_env[path] = load_policy(path)
            except ConfigError as exc:  # the operator's log names the file, not the client
                logger.error("file requests refused: %s", exc)
                raise ConfigError(f"the server's file policy ({FILE_POLICY_ENV}) cannot be "
                                  "used, so file operations are refused; the server log "
                                  "says why") from None
        return _from_env[path]


def guarded_files(state: ServerState, who: Principal, tree: str, *, actor: str,
                  user: str | None = None, agent: str | None = None) -> GuardedFiles:
    """The caller's file tree ``tree`` behind the server's policy, parking ``ask`` operations
    where ``/v1/approvals`` lists them; rules see the caller as the key's tenant (``org``)
    and the ``user`` and ``agent`` the request names."""
    from remem.server.routes_approvals import approvals_for

    store = state.store_for(who)
    approvals = approvals_for(store, tree)
    return GuardedFiles(approvals.files, file_policy(state), approvals,
                        scope=Caller(org=who.tenant or None, user=user, agent=agent),
                        actor=actor, requester=who.key_id)


@dataclass(frozen=True, slots=True)
class FileTarget:
    """Which of the caller's file trees a route acts on, and for which user and agent the
    permission rules are checked (query parameters of every file route)."""

    tree: str = "default"
    user_id: str | None = None
    agent_id: str | None = None


def _target(tree: TreeQuery = "default",
            user_id: Annotated[Label | None, Query(description=(
                "The user acting, for permission rules that name a user."))] = None,
            agent_id: Annotated[Label | None, Query(description=(
                "The agent acting, for permission rules that name an agent."))] = None,
            ) -> FileTarget:
    return FileTarget(tree, user_id, agent_id)


async def _run_file(http: Request, who: Principal, request: AnyFileRequest,
                    target: FileTarget) -> Any:
    """Run ``request`` on the caller's guarded file tree, in a worker thread: its result, or
    202 with the pending approval (a denial is the 403 ``permission_denied`` of every
    route)."""
    state = server_state(http)
    result = await state.run(lambda: request.on(guarded_files(
        state, who, target.tree, actor=f"api:{who.tenant}", user=target.user_id,
        agent=target.agent_id)))
    if isinstance(result, Interrupt):
        return JSONResponse(result.to_dict(), status_code=202)
    return result


add_operation_routes(router, FILE_OPERATIONS, _run_file,
                     context=Annotated[FileTarget, Depends(_target)])


# -- MCP ------------------------------------------------------------------------------------

#: the HTTP headers an agent host sets on its MCP connection to say who acts (the file
#: permission rules that name a user or an agent match on them)
USER_HEADER = "x-remem-user-id"
AGENT_HEADER = "x-remem-agent-id"


def _header(ctx: Context | None, name: str) -> str | None:
    """Header ``name`` of the MCP request (``None`` over stdio or when absent); a bad value is
    a tool error naming the header."""
    headers = getattr(ctx, "headers", None) if ctx is not None else None
    if not headers:
        return None
    found = [str(v) for k, v in dict(headers).items() if str(k).lower() == name]
    if not found:
        return None
    value = found[0].strip()
    if not 1 <= len(value) <= 256 or not value.isprintable():
        raise ToolError(f"header {name} must be an id of 1 to 256 printable characters, got "
                        f"{value[:40]!r}; fix the agent host's MCP connection settings")
    return value


def add_file_tools(server: MCPServer, state: ServerState, run: Runner, *,
                   tree: str = "default", user: str | None = None,
                   agent: str | None = None) -> None:
    """Add the file tools (``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``,
    ``grep``: the agent tools' names and request models) to MCP ``server``, on the caller's
    file tree ``tree`` behind the server's file policy (:func:`file_policy`: ``deny`` is a
    tool error, ``ask`` answers with the pending approval); ``run`` acts for the caller (it
    refuses writes for read-only keys). Rules see the caller's tenant as ``org``, and as
    ``user`` / ``agent`` the request's :data:`USER_HEADER` / :data:`AGENT_HEADER` over HTTP,
    else ``user`` / ``agent`` (``remem mcp --files-user``, ``--files-agent``)."""
    for row in FILE_OPERATIONS:
        if row.tool is None:
            continue

        def guarded(request: Any, ctx: Context | None, row: Operation = row) -> Work:
            acting_user = _header(ctx, USER_HEADER) or user
            acting_agent = _header(ctx, AGENT_HEADER) or agent

            def work(who: Principal) -> Any:
                result = request.on(guarded_files(state, who, tree, actor=f"mcp:{who.tenant}",
                                                  user=acting_user, agent=acting_agent))
                return {"result": result.to_dict() if isinstance(result, Interrupt)
                        else row.answer(result).model_dump(mode="json")}
            return work

        add_request_tool(server, run, McpTool.of(row), guarded)
