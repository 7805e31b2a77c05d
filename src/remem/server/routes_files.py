"""``/v1/files`` and ``/v1/blocks``: the file tree agents see and their core memory blocks, in
the caller's tenant.

Each file route's body is a file request model (:mod:`remem.files.requests`), so it is the
OpenAPI schema and the same value the agent tools and the CLI run. ``tree`` (a query
parameter, default ``default``) picks one of the tenant's file trees: files live under the
store namespace ``("files", tree)`` of the tenant's scoped store. Errors map as everywhere:
a refused path or bad edit is 422, a missing file 404, a stale etag 409.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from remem.blocks import Blocks
from remem.blocks.requests import AppendRequest, ReplaceRequest, RethinkRequest
from remem.files import StoreFileBackend
from remem.files.requests import (
    EditFileRequest,
    FileRequest,
    GlobRequest,
    GrepRequest,
    LsRequest,
    ReadFileRequest,
    WriteFileRequest,
    run_file_request,
)
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.schemas import Label
from remem.server.state import Principal

__all__ = ["router"]

router = APIRouter(tags=["files"], responses=ERROR_RESPONSES)

TreeQuery = Annotated[Label, Query(description="which of the tenant's file trees")]


def _files(request: Request, who: Principal, tree: str) -> StoreFileBackend:
    return StoreFileBackend(server_state(request).store_for(who), ("files", tree))


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [v.to_dict() for v in value]
    return value.to_dict()


async def _run(request: Request, who: Principal, tree: str, body: FileRequest) -> Any:
    files = _files(request, who, tree)
    actor = f"api:{who.tenant}"
    result = await server_state(request).run(
        lambda: run_file_request(files, body, actor=actor))
    return _dump(result)


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
    files = _files(request, who, tree)
    events = await server_state(request).run(lambda: files.history(path))
    return [e.to_value() for e in events]


@router.post("/v1/files/undo", summary="Revert a file's latest change")
async def undo(body: LsRequest, who: Writer, request: Request,
               tree: TreeQuery = "default") -> Any:
    """Revert the latest change of the file at ``path``; the file as it is now (null:
    absent)."""
    files = _files(request, who, tree)
    info = await server_state(request).run(lambda: files.undo(body.path,
                                                              actor=f"api:{who.tenant}"))
    return info.to_dict() if info is not None else None


# -- blocks ---------------------------------------------------------------------------------

AgentQuery = Annotated[Label, Query(description="the agent whose blocks are edited")]


def _blocks(request: Request, who: Principal) -> Blocks:
    return Blocks(StoreFileBackend(server_state(request).store_for(who), ("blocks",)))


@router.get("/v1/blocks/render", summary="An agent's blocks as its system prompt shows them",
            tags=["blocks"])
async def render_blocks(agent_id: AgentQuery, who: Reader, request: Request) -> Any:
    """The rendered blocks, their token count and what did not fit."""
    blocks = _blocks(request, who)
    rendered = await server_state(request).run(lambda: blocks.render(agent_id))
    return rendered.to_dict()


@router.post("/v1/blocks/append", summary="core_memory_append", tags=["blocks"])
async def append(body: AppendRequest, agent_id: AgentQuery, who: Writer,
                 request: Request) -> Any:
    """Append a line to the agent's block ``label`` (422 past its limit or read-only)."""
    blocks = _blocks(request, who)
    block = await server_state(request).run(
        lambda: blocks.append(agent_id, body.label, body.content, actor=f"api:{who.tenant}"))
    return block.to_dict()


@router.post("/v1/blocks/replace", summary="core_memory_replace", tags=["blocks"])
async def replace(body: ReplaceRequest, agent_id: AgentQuery, who: Writer,
                  request: Request) -> Any:
    """Replace exact text in the agent's block ``label``."""
    blocks = _blocks(request, who)
    block = await server_state(request).run(
        lambda: blocks.replace(agent_id, body.label, body.old_content, body.new_content,
                               actor=f"api:{who.tenant}"))
    return block.to_dict()


@router.post("/v1/blocks/rethink", summary="memory_rethink", tags=["blocks"])
async def rethink(body: RethinkRequest, agent_id: AgentQuery, who: Writer,
                  request: Request) -> Any:
    """Rewrite the agent's block ``label``."""
    blocks = _blocks(request, who)
    block = await server_state(request).run(
        lambda: blocks.rethink(agent_id, body.label, body.new_memory,
                               actor=f"api:{who.tenant}"))
    return block.to_dict()


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
            files = StoreFileBackend(state.store_for(who), ("files", tree))
            return {"result": _dump(run_file_request(files, request,
                                                     actor=f"mcp:{who.tenant}"))}

        return await run(ctx, tool.writes, work)

    call.__name__ = tool.name
    return call


def add_file_tools(server: Any, state: Any, run: Any, *, tree: str = "default") -> None:
    """Add the file tools (``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``,
    ``grep``: the agent tools' names and request models) to MCP ``server``, on the caller's
    file tree ``tree``; ``run(ctx, write, fn)`` acts for the caller (it refuses writes for
    read-only keys)."""
    from remem.server.mcp import McpTool, _forbid_unknown_arguments, _signature
    from remem.tools.files import FILE_TOOLS

    writes = {"write_file", "edit_file"}
    for name, (model, description) in FILE_TOOLS.items():
        tool = McpTool(name, model, name in writes, description)  # type: ignore[arg-type]
        call = _mcp_file_tool(tool, state, run, tree)
        call.__signature__ = _signature(tool, {})
        server.add_tool(call, name=tool.name, description=tool.description)
        _forbid_unknown_arguments(server, tool.name)
