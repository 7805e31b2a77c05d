"""``/v1/prompts`` and ``/v1/episodes``: procedural and episodic memory of the caller's tenant.

The prompt routes (:data:`prompts_router`) and the episode routes (:data:`router`) are the rows
of :data:`remem.procedural.operation_table.PROMPT_OPERATIONS` and
:data:`remem.episodic.operation_table.EPISODE_OPERATIONS`, made by the router builder
(:mod:`remem.server.operation_routes`). Each takes one request value of
:mod:`remem.procedural.requests` or :mod:`remem.episodic.requests` (a path's prompt name fills
the same value as the body) and runs it on the tenant's :class:`~remem.procedural.PromptRegistry`
or :class:`~remem.episodic.EpisodeStore`, both over the tenant's scoped store (the store views
``ServerState.store_for`` gives), so names, versions and episodes are confined to the tenant
like memories. Answers are the rows' result models (:mod:`remem.procedural.wire`,
:mod:`remem.episodic.wire`). The server records the caller's key as the author of prompt
versions. Optimize and extract need the server's chat model: without one they answer 400
``unsupported``; a submitted optimization or extraction answers its queued job.

:func:`add_procedural_tools` adds the MCP tools of the rows that declare one (``get_prompt``,
``list_prompts`` and ``select_examples`` read; ``add_episode`` writes, refused for read-only
keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter
from fastapi import Request as HttpRequest
from mcp.server.mcpserver import Context, MCPServer

from remem.episodic.episodes import EpisodeStore
from remem.episodic.operation_table import EPISODE_OPERATIONS
from remem.episodic.requests import (
    EpisodeRequest,
    ExtractEpisodesRequest,
    SubmitExtractionRequest,
    episode_json,
    run_episode_request,
)
from remem.errors import UnsupportedError
from remem.procedural.operation_table import PROMPT_OPERATIONS
from remem.procedural.prompts import PromptRegistry
from remem.procedural.requests import (
    OptimizePromptRequest,
    PromptRequest,
    SubmitOptimizationRequest,
    prompt_json,
    run_prompt_request,
)
from remem.requests import Request
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.operation_routes import add_operation_routes
from remem.server.state import Principal, ServerState

__all__ = ["add_procedural_tools", "prompts_router", "router"]

router = APIRouter(tags=["episodes"], responses=ERROR_RESPONSES)
prompts_router = APIRouter(tags=["prompts"], responses=ERROR_RESPONSES)


def _author(who: Principal) -> str:
    return f"key:{who.key_id}" if who.key_id else "user"


def _needs_llm(state: ServerState, what: str) -> None:
    if state.config.llm is None:
        raise UnsupportedError(
            f"{what} needs an LLM and this server has none configured: start the server with "
            "REMEM_LLM_* set, or run it locally with remem.procedural / remem.episodic")


def run_prompt(state: ServerState, who: Principal, request: PromptRequest[Any]) -> Any:
    """Run ``request`` on ``who``'s tenant's prompts (blocking; the author is the caller)."""
    if "author" in type(request).model_fields:
        request = request.model_copy(update={"author": _author(who)})
    registry = PromptRegistry(state.store_for(who))
    return run_prompt_request(request, registry, state.llm_for(who))


def run_episodes(state: ServerState, who: Principal, request: EpisodeRequest[Any]) -> Any:
    """Run ``request`` on ``who``'s tenant's episodes (blocking)."""
    return run_episode_request(request, EpisodeStore(state.store_for(who)),
                               state.llm_for(who))


async def _queue(http: HttpRequest, who: Principal, request: Any) -> dict[str, Any]:
    """Queue ``request``'s job in the server's queue, in the caller's tenant."""
    from remem.server.routes_jobs import jobs_queue

    state = server_state(http)
    queue = jobs_queue(http)
    job = await state.run(lambda: queue.enqueue(request.job(tenant=who.tenant)))
    out: dict[str, Any] = job.to_dict()
    return out


#: the requests that need the server's model (to run, or for the worker that will), and what
#: the refusal says they do
_NEEDS_MODEL: Mapping[type[Request], str] = {
    OptimizePromptRequest: "optimizing a prompt", SubmitOptimizationRequest: "optimizing a prompt",
    ExtractEpisodesRequest: "extracting episodes", SubmitExtractionRequest: "extracting episodes"}


async def _run(http: HttpRequest, who: Principal, request: Any) -> Any:
    """Run a prompt or episode ``request`` for the caller in a worker thread (a submission
    answers its queued job). Optimizing and extracting need the server's model: refused
    (400) without one."""
    state = server_state(http)
    what = _NEEDS_MODEL.get(type(request))
    if what is not None:
        _needs_llm(state, what)
    if isinstance(request, SubmitOptimizationRequest | SubmitExtractionRequest):
        return await _queue(http, who, request)
    run = run_prompt if isinstance(request, PromptRequest) else run_episodes
    return await state.run(lambda: run(state, who, request), waits_on_llm=what is not None)


add_operation_routes(prompts_router, PROMPT_OPERATIONS, _run)
add_operation_routes(router, EPISODE_OPERATIONS, _run)


def add_procedural_tools(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the prompt and episode tools (the rows of :data:`PROMPT_OPERATIONS` and
    :data:`EPISODE_OPERATIONS` that declare one) to ``server``; ``run`` acts for the caller
    (it refuses writes for read-only keys)."""
    def on_prompts(request: Any, ctx: Context | None) -> Work:
        return lambda who: prompt_json(request, run_prompt(state, who, request))

    def on_episodes(request: Any, ctx: Context | None) -> Work:
        return lambda who: episode_json(request, run_episodes(state, who, request))

    for table, handler in ((PROMPT_OPERATIONS, on_prompts), (EPISODE_OPERATIONS, on_episodes)):
        for row in table:
            if row.tool is not None:
                add_request_tool(server, run, McpTool.of(row), handler)
