"""The episode operations, one row each (:class:`remem.operations.Operation`): the table the
``/v1/episodes`` routes (:mod:`remem.server.routes_procedural`, by the router builder),
``client.episodes`` (:mod:`remem.episodic.remote`), the episode MCP tools and the episodes'
parity tests read.

Every route is a ``POST`` whose body is the request. Each row's answer is its request's result
model (:data:`remem.episodic.requests.RESULT_MODELS`; a queued extraction answers its job,
:class:`remem.background.wire.JobOut`). The route names are the endpoints' from before the
rows, so are the OpenAPI operation ids. ``select_examples`` and ``add_episode`` are MCP tools
served when asked for (``build_mcp(procedural=True)``). The rows declare no CLI command
(``remem episodes`` works on a database file, not on these requests).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from remem.background.wire import JobOut
from remem.episodic.requests import (
    RESULT_MODELS,
    AddEpisodeRequest,
    ExtractEpisodesRequest,
    ListEpisodesRequest,
    SelectExamplesRequest,
    SubmitExtractionRequest,
)
from remem.operations import McpToolRow, Operation, Route
from remem.requests import Request

__all__ = ["EPISODE_OPERATIONS"]

_RESULTS: Mapping[type[Request], type[BaseModel]] = {**RESULT_MODELS,
                                                     SubmitExtractionRequest: JobOut}


def _row(request: type[Request], path: str, name: str, summary: str, description: str, *,
         writes: bool, calls_model: bool = False, tool: str | None = None,
         command: str | None = None) -> Operation:
    return Operation(request, _RESULTS[request], writes=writes,
                     route=Route("POST", "/v1/episodes" + path, name, summary, description),
                     tool=McpToolRow(name, tool, on_request=True) if tool else None,
                     python=request.operation, calls_model=calls_model, command=command)


EPISODE_OPERATIONS: tuple[Operation, ...] = (
    _row(AddEpisodeRequest, "", "add_episode", "Add an episode",
         "Store one episode (situation, thought, action, result).", writes=True,
         command="episodes add",
         tool="Record an experience to learn from: the situation, your reasoning, the action "
              "you took and its result."),
    _row(ListEpisodesRequest, "/list", "list_episodes", "List episodes",
         'The tenant\'s episodes, newest first: ``{"episodes": [...]}``.', writes=False,
         command="episodes ls"),
    _row(SelectExamplesRequest, "/select", "select_examples", "Select few-shot examples",
         "Up to ``k`` relevant, diverse episodes for ``query`` within ``budget_tokens``, "
         "with\ntheir few-shot ``messages``.", writes=False, command="episodes select",
         tool="Past episodes most like a new situation, as few-shot examples (relevant, "
              "diverse, within a token budget)."),
    _row(ExtractEpisodesRequest, "/extract", "extract_episodes",
         "Extract episodes from a conversation",
         "Extract and store the episodes of a finished conversation (one call of the "
         "server's\nmodel): ``{\"episodes\": [...], \"calls\", \"input_tokens\", "
         "\"output_tokens\"}``.", writes=True, calls_model=True),
    _row(SubmitExtractionRequest, "/extract/submit", "submit_extraction",
         "Extract episodes in the background",
         "Queue the extraction as an ``episodes.extract`` job and answer the job at once.",
         writes=True),
)
"""Every episode request's row, in the order the routes were declared."""
