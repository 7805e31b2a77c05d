"""The prompt operations, one row each (:class:`remem.operations.Operation`): the table the
``/v1/prompts`` routes (:mod:`remem.server.routes_procedural`, by the router builder),
``client.prompts`` (:mod:`remem.procedural.remote`), the prompt MCP tools and the prompts'
parity tests read.

Each row's answer is its request's result model (:data:`remem.procedural.requests.
RESULT_MODELS`; a queued optimization answers its job, :class:`remem.background.wire.JobOut`).
The route names are the endpoints' from before the rows, so are the OpenAPI operation ids and
the body models' names (``UpdatePromptBody``). ``author`` is the server's (the caller's key):
the routes take it, the client does not send it (``server_sets``). ``get_prompt`` and
``list_prompts`` are MCP tools served when asked for (``build_mcp(procedural=True)``). The
rows declare no CLI command (``remem prompts`` works on a database file, not on these
requests).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from remem.background.wire import JobOut
from remem.operations import HttpMethod, McpToolRow, Operation, Route
from remem.procedural.requests import (
    RESULT_MODELS,
    CreatePromptRequest,
    GetPromptRequest,
    ListPromptsRequest,
    OptimizePromptRequest,
    PromptDiffRequest,
    PromptHistoryRequest,
    RollbackPromptRequest,
    SubmitOptimizationRequest,
    UpdatePromptRequest,
)
from remem.requests import Request

__all__ = ["PROMPT_OPERATIONS"]

_PREFIX = "/v1/prompts"
_RESULTS: Mapping[type[Request], type[BaseModel]] = {**RESULT_MODELS,
                                                     SubmitOptimizationRequest: JobOut}


def _row(request: type[Request], method: HttpMethod, path: str, name: str, summary: str,
         description: str, *, writes: bool, calls_model: bool = False,
         tool: McpToolRow | None = None, command: str | None = None) -> Operation:
    server_sets = ("author",) if "author" in request.model_fields else ()
    return Operation(request, _RESULTS[request], writes=writes,
                     route=Route(method, _PREFIX + path, name, summary, description,
                                 server_sets=server_sets),
                     tool=tool, python=request.operation, calls_model=calls_model,
                     command=command)


PROMPT_OPERATIONS: tuple[Operation, ...] = (
    _row(ListPromptsRequest, "GET", "", "list_prompts", "List prompts",
         'The latest version of every prompt of the tenant, by name: ``{"prompts": [...]}``.',
         writes=False, command="prompts ls",
         tool=McpToolRow("list_prompts", "The prompts kept, latest version of each.",
                         on_request=True)),
    _row(CreatePromptRequest, "POST", "", "create_prompt", "Create a prompt",
         "Create a prompt (version 1); its template variables are those the text uses unless"
         "\n``variables`` declares them. A name that exists answers 409.", writes=True,
         command="prompts create"),
    _row(GetPromptRequest, "GET", "/{name}", "get_prompt", "Read a prompt",
         "The latest version of the prompt (or ``version``): text, variables, author, reason.",
         writes=False, command="prompts show", tool=McpToolRow(
             "get_prompt", "The current text of a named prompt (or one of its versions), with "
             "its template variables.", on_request=True)),
    _row(UpdatePromptRequest, "POST", "/{name}", "update_prompt",
         "Write a new version of a prompt",
         "A new version; a text that drops or invents a template variable answers 422,\n"
         "``expected_version`` that is no longer current answers 409.", writes=True,
         command="prompts update"),
    _row(PromptHistoryRequest, "GET", "/{name}/history", "prompt_history",
         "Every version of a prompt", 'Every version, oldest first: ``{"versions": [...]}``.',
         writes=False, command="prompts history"),
    _row(PromptDiffRequest, "GET", "/{name}/diff", "prompt_diff",
         "Diff two versions of a prompt",
         "A unified diff from ``old`` (default: the version before ``new``) to ``new``\n"
         '(default: the latest): ``{"diff": "..."}``.', writes=False,
         command="prompts diff"),
    _row(RollbackPromptRequest, "POST", "/{name}/rollback", "rollback_prompt",
         "Roll a prompt back", "Make an old version's text current again, as a new version.",
         writes=True, command="prompts rollback"),
    _row(OptimizePromptRequest, "POST", "/{name}/optimize", "optimize_prompt",
         "Optimize a prompt from feedback",
         "Rewrite the prompt from ``trajectories`` with the server's model: the candidate "
         "text,\nits diff, the reasoning, calls and tokens. Stored only with ``commit`` (or "
         "later, with\nan update whose ``expected_version`` is the answer's "
         "``base_version``).", writes=True, calls_model=True),
    _row(SubmitOptimizationRequest, "POST", "/{name}/optimize/submit", "submit_optimization",
         "Optimize a prompt in the background",
         "Queue the optimization as a ``prompts.optimize`` job (run by ``remem worker`` or\n"
         "``remem serve --workers-in-process``; it commits the new version) and answer the "
         "job at\nonce (``GET /v1/jobs/{id}`` follows it).", writes=True),
)
"""Every prompt request's row, in the order the routes were declared."""
