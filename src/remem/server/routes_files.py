"""``/v1/files``: the file tree agents see, in the caller's tenant, through the server's file
permission policy.

Each file route's body is a file request model (:mod:`remem.files.requests`), so it is the
OpenAPI schema and the same value the agent tools and the CLI run. ``tree`` (a query
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
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from remem.errors import ConfigError, PermissionDeniedError
from remem.files.approvals import Interrupt
from remem.files.permissions import GuardedFiles, Policy, load_policy
from remem.files.requests import (
    EditFileRequest,
    FileRequest,
    GlobRequest,
    GrepRequest,
    LsRequest,
    ReadFileRequest,
    WriteFileRequest,
)
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, error_response
from remem.server.schemas import Label
from remem.server.state import Principal, ServerState

__all__ = ["FILE_POLICY_ENV", "add_file_tools", "file_policy", "guarded_files", "router",
           "set_file_policy"]

logger = logging.getLogger("remem.server")

#: the environment variable naming the server's file policy (a JSON file)
FILE_POLICY_ENV = "REMEM_FILE_POLICY"

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


def guarded_files(state: ServerState, who: Principal, tree: str, *,
                  actor: str) -> GuardedFiles:
    """The caller's file tree ``tree`` behind the server's policy, parking ``ask`` operations
    where ``/v1/approvals`` lists them."""
    from remem.server.routes_approvals import approvals_for

    store = state.store_for(who)
    approvals = approvals_for(store, tree)
    return GuardedFiles(approvals.files, file_policy(state), approvals, scope=who.tenant,
                        actor=actor, requester=who.key_id)


def _dump(value: Any) -> Any:
    if isinstance(value, Interrupt):
        return value.to_dict()
    if isinstance(value, list):
        return [v.to_dict() if hasattr(v, "to_dict") else v.to_value() for v in value]
    return value.to_dict()


def _answer(result: Any) -> Any:
    if isinstance(result, Interrupt):
        return JSONResponse(result.to_dict(), status_code=202)
    return _dump(result)


def _denied(exc: PermissionDeniedError) -> JSONResponse:
    return error_response(403, "permission_denied", str(exc))


async def _guarded(request: Request, who: Principal, tree: str, work: Any) -> Any:
    state = server_state(request)
    try:
        guard = await state.run(lambda: guarded_files(state, who, tree,
                                                      actor=f"api:{who.tenant}"))
        return _answer(await state.run(lambda: work(guard)))
    except PermissionDeniedError as exc:
        return _denied(exc)


async def _run(request: Request, who: Principal, tree: str, body: FileRequest) -> Any:
    return await _guarded(request, who, tree, lambda guard: guard.run(body))


@router.post("/v1/files/ls", summary="List a directory")
async def ls(body: LsRequest, who: Reader, request: Request, tree: TreeQuery = "default") -> Any:
    """The files and subdirectories directly in ``path``."""
    return await _run(request, who, tree, body)


@router.post("/v1/files/read", summary="Read lines of a file")
async def read(body: ReadFileRequest, who: Reader, request: Request,
               tree: TreeQuery = "default") -> Any:
    """Lines ``offset`` .. ``offset + limit`` of the file, with its etag."""
    return await _run(request, who, tree, body)


@router.post("/v1/files/write", summary="Create or replace a file")
async def write(body: WriteFileRequest, who: Writer, request: Request,
                tree: TreeQuery = "default") -> Any:
    """Write the file (409 if ``etag`` is stale)."""
    return await _run(request, who, tree, body)


@router.post("/v1/files/edit", summary="Replace exact text in a file")
async def edit(body: EditFileRequest, who: Writer, request: Request,
               tree: TreeQuery = "default") -> Any:
    """Replace ``old_string`` with ``new_string`` (422 if absent or not unique)."""
    return await _run(request, who, tree, body)


@router.post("/v1/files/glob", summary="Find files by pattern")
async def glob(body: GlobRequest, who: Reader, request: Request,
               tree: TreeQuery = "default") -> Any:
    """Files whose path matches ``pattern``."""
    return await _run(request, who, tree, body)


@router.post("/v1/files/grep", summary="Find lines holding a text")
async def grep(body: GrepRequest, who: Reader, request: Request,
               tree: TreeQuery = "default") -> Any:
    """Lines holding ``pattern`` literally."""
    return await _run(request, who, tree, body)


@router.get("/v1/files/history", summary="A file's history")
async def history(path: Annotated[str, Query(max_length=1024)], who: Reader,
                  request: Request, tree: TreeQuery = "default") -> Any:
    """Every change of ``path``, oldest first."""
    return await _guarded(request, who, tree, lambda guard: guard.history(path))


@router.post("/v1/files/undo", summary="Revert a file's latest change")
async def undo(body: LsRequest, who: Writer, request: Request,
               tree: TreeQuery = "default") -> Any:
    """Revert the latest change of the file at ``path``; the file as it is now (null:
    absent)."""
    return await _guarded(request, who, tree, lambda guard: guard.undo(body.path))


# -- MCP ------------------------------------------------------------------------------------

def _mcp_file_tool(tool: Any, state: Any, run: Any, tree: str) -> Any:
    from mcp.server.mcpserver.exceptions import ToolError

    from remem.errors import InvalidInputError

    async def call(ctx: Any = None, **arguments: Any) -> Any:
        try:
            request: Any = tool.model.of(**arguments)
        except InvalidInputError as exc:
            raise ToolError(f"InvalidInputError: {exc}") from None

        def work(who: Principal) -> Any:
            guard = guarded_files(state, who, tree, actor=f"mcp:{who.tenant}")
            return {"result": _dump(guard.run(request))}

        return await run(ctx, tool.writes, work)

    call.__name__ = tool.name
    return call


def add_file_tools(server: Any, state: Any, run: Any, *, tree: str = "default") -> None:
    """Add the file tools (``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``,
    ``grep``: the agent tools' names and request models) to MCP ``server``, on the caller's
    file tree ``tree`` behind the server's file policy (:func:`file_policy`: ``deny`` is a
    tool error, ``ask`` answers with the pending approval); ``run(ctx, write, fn)`` acts for
    the caller (it refuses writes for read-only keys)."""
    from remem.server.mcp import McpTool, _forbid_unknown_arguments, _signature
    from remem.tools.files import FILE_TOOLS

    writes = {"write_file", "edit_file"}
    for name, (model, description) in FILE_TOOLS.items():
        tool = McpTool(name, model, name in writes, description)  # type: ignore[arg-type]
        call = _mcp_file_tool(tool, state, run, tree)
        call.__signature__ = _signature(tool, {})
        server.add_tool(call, name=tool.name, description=tool.description)
        _forbid_unknown_arguments(server, tool.name)
