"""``/v1/prompts`` and ``/v1/episodes``: procedural and episodic memory of the caller's tenant.

Each route takes one request value of :mod:`remem.procedural.requests` or
:mod:`remem.episodic.requests` (a path's prompt name fills the same value as the body) and
runs it on the tenant's :class:`~remem.procedural.PromptRegistry` or
:class:`~remem.episodic.EpisodeStore`, both over the tenant's scoped store (the store views
``ServerState.store_for`` gives), so names, versions and episodes are confined to the tenant
like memories. Answers are :func:`~remem.procedural.requests.prompt_json` /
:func:`~remem.episodic.requests.episode_json`. The server records the caller's key as the
author of prompt versions. Optimize and extract need the server's chat model: without one
they answer 400 ``unsupported``.

:func:`add_procedural_tools` adds the MCP tools (``get_prompt``, ``list_prompts``,
``select_examples`` read; ``add_episode`` writes, refused for read-only keys).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi import Request as HttpRequest
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, ConfigDict, create_model

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
from remem.procedural.prompts import PromptRegistry
from remem.procedural.requests import (
    CreatePromptRequest,
    GetPromptRequest,
    ListPromptsRequest,
    OptimizePromptRequest,
    OptimizeResult,
    PromptDiffRequest,
    PromptHistoryRequest,
    PromptName,
    PromptRequest,
    RollbackPromptRequest,
    SubmitOptimizationRequest,
    UpdatePromptRequest,
    VersionNumber,
    prompt_json,
    run_prompt_request,
)
from remem.requests import Request
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, MODEL_RESPONSES
from remem.server.mcp_registrar import McpTool, Runner, Work, add_request_tool
from remem.server.routes_jobs import JobOut
from remem.server.state import Principal, ServerState

__all__ = ["add_procedural_tools", "router"]

router = APIRouter(prefix="/v1", responses=ERROR_RESPONSES)

NamePath = Annotated[PromptName, Path(description="a prompt name")]


class PromptVersionOut(BaseModel):
    """One version of a prompt (``created_at``: epoch seconds)."""

    name: str
    version: int
    text: str
    variables: list[str]
    author: str
    reason: str
    created_at: float
    kind: str
    trajectories: list[dict[str, Any]]
    rolled_back_to: int | None
    change_id: str | None


class PromptsOut(BaseModel):
    """The latest version of every prompt, by name."""

    prompts: list[PromptVersionOut]


class VersionsOut(BaseModel):
    """Every version of a prompt, oldest first."""

    versions: list[PromptVersionOut]


class DiffOut(BaseModel):
    """A unified diff (empty when the texts are equal)."""

    diff: str


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


def _body(request: type[Request], name: str) -> type[BaseModel]:
    """``request``'s fields less ``name`` (it comes from the path), as a body model."""
    fields: dict[str, Any] = {n: (f.annotation, f) for n, f in request.model_fields.items()
                              if n != "name"}
    model: type[BaseModel] = create_model(
        name, __config__=ConfigDict(extra="forbid", strict=True), __doc__=request.__doc__,
        **fields)
    return model


UpdateBody = _body(UpdatePromptRequest, "UpdatePromptBody")
RollbackBody = _body(RollbackPromptRequest, "RollbackPromptBody")
OptimizeBody = _body(OptimizePromptRequest, "OptimizePromptBody")
SubmitOptimizationBody = _body(SubmitOptimizationRequest, "SubmitOptimizationBody")


def _with_name(kind: type[Any], body: BaseModel, name: str) -> Any:
    given = {field: getattr(body, field) for field in body.model_fields_set}
    return kind.of(**given, name=name)


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


async def _prompt(http: HttpRequest, who: Principal, request: PromptRequest[Any],
                  *, waits_on_llm: bool = False) -> dict[str, Any]:
    state = server_state(http)
    result = await state.run(lambda: run_prompt(state, who, request), waits_on_llm=waits_on_llm)
    return prompt_json(request, result)


async def _episodes(http: HttpRequest, who: Principal, request: EpisodeRequest[Any],
                    *, waits_on_llm: bool = False) -> dict[str, Any]:
    state = server_state(http)
    result = await state.run(lambda: run_episodes(state, who, request),
                             waits_on_llm=waits_on_llm)
    return episode_json(request, result)


# -- prompts ------------------------------------------------------------------------------------


@router.get("/prompts", summary="List prompts", tags=["prompts"], response_model=PromptsOut)
async def list_prompts(who: Reader, http: HttpRequest) -> dict[str, Any]:
    """The latest version of every prompt of the tenant, by name: ``{"prompts": [...]}``."""
    return await _prompt(http, who, ListPromptsRequest())


@router.post("/prompts", summary="Create a prompt", tags=["prompts"],
             response_model=PromptVersionOut)
async def create_prompt(body: CreatePromptRequest, who: Writer,
                        http: HttpRequest) -> dict[str, Any]:
    """Create a prompt (version 1); its template variables are those the text uses unless
    ``variables`` declares them. A name that exists answers 409."""
    return await _prompt(http, who, body)


@router.get("/prompts/{name}", summary="Read a prompt", tags=["prompts"],
            response_model=PromptVersionOut)
async def get_prompt(name: NamePath, who: Reader, http: HttpRequest,
                     version: Annotated[VersionNumber | None, Query(
                         description="a version (default: the latest)")] = None,
                     ) -> dict[str, Any]:
    """The latest version of the prompt (or ``version``): text, variables, author, reason."""
    return await _prompt(http, who, GetPromptRequest.of(name=name, version=version))


@router.post("/prompts/{name}", summary="Write a new version of a prompt", tags=["prompts"],
             response_model=PromptVersionOut)
async def update_prompt(name: NamePath, body: UpdateBody,  # type: ignore[valid-type]
                        who: Writer, http: HttpRequest) -> dict[str, Any]:
    """A new version; a text that drops or invents a template variable answers 422,
    ``expected_version`` that is no longer current answers 409."""
    return await _prompt(http, who, _with_name(UpdatePromptRequest, body, name))


@router.get("/prompts/{name}/history", summary="Every version of a prompt", tags=["prompts"],
            response_model=VersionsOut)
async def prompt_history(name: NamePath, who: Reader, http: HttpRequest) -> dict[str, Any]:
    """Every version, oldest first: ``{"versions": [...]}``."""
    return await _prompt(http, who, PromptHistoryRequest.of(name=name))


@router.get("/prompts/{name}/diff", summary="Diff two versions of a prompt", tags=["prompts"],
            response_model=DiffOut)
async def prompt_diff(name: NamePath, who: Reader, http: HttpRequest,
                      old: Annotated[VersionNumber | None, Query()] = None,
                      new: Annotated[VersionNumber | None, Query()] = None) -> dict[str, Any]:
    """A unified diff from ``old`` (default: the version before ``new``) to ``new``
    (default: the latest): ``{"diff": "..."}``."""
    return await _prompt(http, who, PromptDiffRequest.of(name=name, old=old, new=new))


@router.post("/prompts/{name}/rollback", summary="Roll a prompt back", tags=["prompts"],
             response_model=PromptVersionOut)
async def rollback_prompt(name: NamePath, body: RollbackBody,  # type: ignore[valid-type]
                          who: Writer, http: HttpRequest) -> dict[str, Any]:
    """Make an old version's text current again, as a new version."""
    return await _prompt(http, who, _with_name(RollbackPromptRequest, body, name))


@router.post("/prompts/{name}/optimize", summary="Optimize a prompt from feedback",
             tags=["prompts"], response_model=OptimizeResult, responses=MODEL_RESPONSES)
async def optimize_prompt(name: NamePath, body: OptimizeBody,  # type: ignore[valid-type]
                          who: Writer, http: HttpRequest) -> dict[str, Any]:
    """Rewrite the prompt from ``trajectories`` with the server's model: the candidate text,
    its diff, the reasoning, calls and tokens. Stored only with ``commit`` (or later, with
    an update whose ``expected_version`` is the answer's ``base_version``)."""
    state = server_state(http)
    _needs_llm(state, "optimizing a prompt")
    return await _prompt(http, who, _with_name(OptimizePromptRequest, body, name),
                         waits_on_llm=True)


async def _queue(http: HttpRequest, who: Principal, request: Any) -> dict[str, Any]:
    """Queue ``request``'s job in the server's queue, in the caller's tenant."""
    from remem.server.routes_jobs import jobs_queue

    state = server_state(http)
    queue = jobs_queue(http)
    job = await state.run(lambda: queue.enqueue(request.job(tenant=who.tenant)))
    out: dict[str, Any] = job.to_dict()
    return out


@router.post("/prompts/{name}/optimize/submit", summary="Optimize a prompt in the background",
             tags=["prompts"], response_model=JobOut)
async def submit_optimization(name: NamePath,
                              body: SubmitOptimizationBody,  # type: ignore[valid-type]
                              who: Writer, http: HttpRequest) -> dict[str, Any]:
    """Queue the optimization as a ``prompts.optimize`` job (run by ``remem worker`` or
    ``remem serve --workers-in-process``; it commits the new version) and answer the job at
    once (``GET /v1/jobs/{id}`` follows it)."""
    _needs_llm(server_state(http), "optimizing a prompt")
    return await _queue(http, who, _with_name(SubmitOptimizationRequest, body, name))


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

_TOOLS: tuple[tuple[str, type[Request], bool, str], ...] = (
    ("get_prompt", GetPromptRequest, False,
     "The current text of a named prompt (or one of its versions), with its template "
     "variables."),
    ("list_prompts", ListPromptsRequest, False, "The prompts kept, latest version of each."),
    ("select_examples", SelectExamplesRequest, False,
     "Past episodes most like a new situation, as few-shot examples (relevant, diverse, "
     "within a token budget)."),
    ("add_episode", AddEpisodeRequest, True,
     "Record an experience to learn from: the situation, your reasoning, the action you "
     "took and its result."),
)


def add_procedural_tools(server: MCPServer, state: ServerState, run: Runner) -> None:
    """Add the prompt and episode MCP tools to ``server``; ``run`` acts for the caller (it
    refuses writes for read-only keys)."""
    def on_prompts_or_episodes(request: Any, ctx: Context | None) -> Work:
        def work(who: Principal) -> dict[str, Any]:
            if isinstance(request, PromptRequest):
                return prompt_json(request, run_prompt(state, who, request))
            return episode_json(request, run_episodes(state, who, request))
        return work

    for name, model, writes, description in _TOOLS:
        add_request_tool(server, run, McpTool(name, model, writes, description),
                         on_prompts_or_episodes)
