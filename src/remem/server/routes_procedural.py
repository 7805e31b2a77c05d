"""``/v1/prompts`` and ``/v1/episodes``: procedural and episodic memory of the caller's tenant.

The prompt routes (:data:`prompts_router`) are the rows of
:data:`remem.procedural.operation_table.PROMPT_OPERATIONS`, made by the router builder
(:mod:`remem.server.operation_routes`); the episode routes (:data:`router`) are written here.
Each takes one request value of :mod:`remem.procedural.requests` or
:mod:`remem.episodic.requests` (a path's prompt name fills the same value as the body) and
runs it on the tenant's :class:`~remem.procedural.PromptRegistry` or
:class:`~remem.episodic.EpisodeStore`, both over the tenant's scoped store (the store views
``ServerState.store_for`` gives), so names, versions and episodes are confined to the tenant
like memories. Answers are the rows' result models (:mod:`remem.procedural.wire`) /
:func:`~remem.episodic.requests.episode_json`. The server records the caller's key as the
author of prompt versions. Optimize and extract need the server's chat model: without one
they answer 400 ``unsupported``.

:func:`add_procedural_tools` adds the MCP tools (the prompt rows' ``get_prompt`` and
``list_prompts``, and ``select_examples`` read; ``add_episode`` writes, refused for read-only
keys).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi import Request as HttpRequest
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, ConfigDict

from remem.background.wire import JobOut
from remem.episodic.episodes import EpisodeStore
from remem.episodic.requests import (
    AddEpisodeRequest,
    EpisodeRequest,
    ExtractEpisodesRequest,
    ListEpisodesRequest,
    SelectExamplesRequest,
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
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, MODEL_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.operation_routes import add_operation_routes
from remem.server.state import Principal, ServerState

__all__ = ["add_procedural_tools", "prompts_router", "router"]

router = APIRouter(prefix="/v1", responses=ERROR_RESPONSES)
prompts_router = APIRouter(tags=["prompts"], responses=ERROR_RESPONSES)


class EpisodeOut(BaseModel):
    """One episode (``created_at``: epoch seconds)."""

    id: str
    situation: str
    thought: str
    action: str
    result: str
    thread_id: str | None
    created_at: float
    metadata: dict[str, Any]


class EpisodesOut(BaseModel):
    """Episodes, newest first."""

    episodes: list[EpisodeOut]


class ChatMessageOut(BaseModel):
    """A few-shot message."""

    model_config = ConfigDict(extra="allow")

    role: str


class SelectionOut(BaseModel):
    """The examples chosen, the tokens their messages take, what was passed over, and the
    examples as few-shot messages."""

    examples: list[EpisodeOut]
    tokens: int
    duplicates: int
    over_budget: int
    messages: list[ChatMessageOut]


class ExtractedOut(BaseModel):
    """The episodes an extraction stored and what its call cost."""

    episodes: list[EpisodeOut]
    calls: int
    input_tokens: int
    output_tokens: int


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


async def _episodes(http: HttpRequest, who: Principal, request: EpisodeRequest[Any],
                    *, waits_on_llm: bool = False) -> dict[str, Any]:
    state = server_state(http)
    result = await state.run(lambda: run_episodes(state, who, request),
                             waits_on_llm=waits_on_llm)
    return episode_json(request, result)


async def _queue(http: HttpRequest, who: Principal, request: Any) -> dict[str, Any]:
    """Queue ``request``'s job in the server's queue, in the caller's tenant."""
    from remem.server.routes_jobs import jobs_queue

    state = server_state(http)
    queue = jobs_queue(http)
    job = await state.run(lambda: queue.enqueue(request.job(tenant=who.tenant)))
    out: dict[str, Any] = job.to_dict()
    return out


async def _run_prompts(http: HttpRequest, who: Principal,
                       request: PromptRequest[Any] | SubmitOptimizationRequest) -> Any:
    """Run ``request`` on the tenant's prompts in a worker thread (a queued optimization
    answers its job). Optimizing needs the server's model: refused (400) without one."""
    state = server_state(http)
    optimizes = isinstance(request, OptimizePromptRequest | SubmitOptimizationRequest)
    if optimizes:
        _needs_llm(state, "optimizing a prompt")
    if isinstance(request, SubmitOptimizationRequest):
        return await _queue(http, who, request)
    return await state.run(lambda: run_prompt(state, who, request), waits_on_llm=optimizes)


add_operation_routes(prompts_router, PROMPT_OPERATIONS, _run_prompts)


# -- episodes -----------------------------------------------------------------------------------


@router.post("/episodes", summary="Add an episode", tags=["episodes"], response_model=EpisodeOut)
async def add_episode(body: AddEpisodeRequest, who: Writer, http: HttpRequest) -> dict[str, Any]:
    """Store one episode (situation, thought, action, result)."""
    return await _episodes(http, who, body)


@router.post("/episodes/list", summary="List episodes", tags=["episodes"],
             response_model=EpisodesOut)
async def list_episodes(body: ListEpisodesRequest, who: Reader,
                        http: HttpRequest) -> dict[str, Any]:
    """The tenant's episodes, newest first: ``{"episodes": [...]}``."""
    return await _episodes(http, who, body)


@router.post("/episodes/select", summary="Select few-shot examples", tags=["episodes"],
             response_model=SelectionOut)
async def select_examples(body: SelectExamplesRequest, who: Reader,
                          http: HttpRequest) -> dict[str, Any]:
    """Up to ``k`` relevant, diverse episodes for ``query`` within ``budget_tokens``, with
    their few-shot ``messages``."""
    return await _episodes(http, who, body)


@router.post("/episodes/extract", summary="Extract episodes from a conversation",
             tags=["episodes"], response_model=ExtractedOut, responses=MODEL_RESPONSES)
async def extract_episodes(body: ExtractEpisodesRequest, who: Writer,
                           http: HttpRequest) -> dict[str, Any]:
    """Extract and store the episodes of a finished conversation (one call of the server's
    model): ``{"episodes": [...], "calls", "input_tokens", "output_tokens"}``."""
    state = server_state(http)
    _needs_llm(state, "extracting episodes")
    return await _episodes(http, who, body, waits_on_llm=True)


@router.post("/episodes/extract/submit", summary="Extract episodes in the background",
             tags=["episodes"], response_model=JobOut)
async def submit_extraction(body: SubmitExtractionRequest, who: Writer,
                            http: HttpRequest) -> dict[str, Any]:
    """Queue the extraction as an ``episodes.extract`` job and answer the job at once."""
    _needs_llm(server_state(http), "extracting episodes")
    return await _queue(http, who, body)


# -- MCP tools ----------------------------------------------------------------------------------

_EPISODE_TOOLS: tuple[tuple[str, type[Request], bool, str], ...] = (
    ("select_examples", SelectExamplesRequest, False,
     "Past episodes most like a new situation, as few-shot examples (relevant, diverse, "
     "within a token budget)."),
    ("add_episode", AddEpisodeRequest, True,
     "Record an experience to learn from: the situation, your reasoning, the action you "
     "took and its result."),
)


def add_procedural_tools(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the prompt tools (the rows' of :data:`PROMPT_OPERATIONS` that declare one) and the
    episode tools to ``server``; ``run`` acts for the caller (it refuses writes for
    read-only keys)."""
    def on_prompts(request: Any, ctx: Context | None) -> Work:
        return lambda who: prompt_json(request, run_prompt(state, who, request))

    def on_episodes(request: Any, ctx: Context | None) -> Work:
        return lambda who: episode_json(request, run_episodes(state, who, request))

    for row in PROMPT_OPERATIONS:
        if row.tool is not None:
            add_request_tool(server, run, McpTool.of(row), on_prompts)
    for name, model, writes, description in _EPISODE_TOOLS:
        add_request_tool(server, run, McpTool(name, model, writes, description), on_episodes)
