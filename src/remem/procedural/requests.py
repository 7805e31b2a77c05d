"""The prompt operations as request values (see :mod:`remem.requests`), their results, and
their one runner.

Each operation of a :class:`~remem.procedural.PromptRegistry` (and the optimizer's
``optimize``) is one frozen request. :func:`prompt_flow` runs any of them on a registry (and a
model, for :class:`OptimizePromptRequest`) as one flow, driven by :func:`run_prompt_request`
or :func:`arun_prompt_request`; the ``/v1/prompts`` routes, ``remem.Client.prompts`` and the
MCP tools are built from the same values (the rows of
:mod:`remem.procedural.operation_table`), and :data:`RESULT_MODELS` are the JSON every surface
answers with (:func:`prompt_json`).

Results: a :class:`~remem.procedural.PromptVersion` (get, create, update, rollback), a list of
them (list: the latest of each; history: every version), a diff (``str``), or an
:class:`OptimizeResult` (optimize: the candidate text, its diff, the reasoning, the calls and
tokens it cost, and the stored version when ``commit`` was asked).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, Field, StringConstraints

from remem.background.jobs import NewJob
from remem.errors import UsageError
from remem.llm.base import ChatModel
from remem.memory.flow import Flow, run_async, run_sync
from remem.procedural.optimizer import PromptOptimizer
from remem.procedural.prompts import PromptRegistry, PromptVersion
from remem.procedural.strategies import Strategy
from remem.procedural.wire import (
    DiffOut,
    OptimizeResult,
    PromptsOut,
    PromptVersionOut,
    VersionsOut,
)
from remem.requests import JsonObject, Messages, Request

__all__ = [
    "RESULT_MODELS",
    "CreatePromptRequest",
    "GetPromptRequest",
    "ListPromptsRequest",
    "OptimizePromptRequest",
    "OptimizeResult",
    "PromptDiffRequest",
    "PromptHistoryRequest",
    "PromptRequest",
    "RollbackPromptRequest",
    "SubmitOptimizationRequest",
    "TrajectoryIn",
    "UpdatePromptRequest",
    "arun_prompt_request",
    "prompt_flow",
    "prompt_json",
    "run_prompt_request",
]

R = TypeVar("R")

PromptName = Annotated[str, StringConstraints(min_length=1, max_length=128,
                                              pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")]
"""A prompt name: 1-128 letters, digits, ``_ . : -``, starting with a letter or digit."""
PromptText = Annotated[str, StringConstraints(min_length=1, max_length=100_000)]
VariableName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                                max_length=128)]
Reason = Annotated[str, StringConstraints(max_length=2000)]
Author = Annotated[str, StringConstraints(min_length=1, max_length=256)]
VersionNumber = Annotated[int, Field(ge=1, le=2**31)]


class PromptRequest(Request, Generic[R]):
    """Base of the prompt requests; ``R`` is what running one returns."""

    def run_on(self, registry: PromptRegistry, model: ChatModel | None = None) -> R:
        """Run this request on ``registry`` (``model``: what optimize calls): what
        :meth:`PromptRegistry.run <remem.procedural.PromptRegistry.run>` calls, so the
        registry needs no import of the requests built on it."""
        return run_prompt_request(self, registry, model)

    async def arun_on(self, registry: PromptRegistry, model: ChatModel | None = None) -> R:
        """Async :meth:`run_on`."""
        return await arun_prompt_request(self, registry, model)


class ListPromptsRequest(PromptRequest[list[PromptVersion]]):
    """The latest version of every prompt, by name."""

    operation: ClassVar[str] = "list"


class GetPromptRequest(PromptRequest[PromptVersion]):
    """The latest version of prompt ``name``, or its version ``version``."""

    operation: ClassVar[str] = "get"

    name: PromptName = Field(description="the prompt's name")
    version: VersionNumber | None = Field(None, description="a version (default: the latest)")


class PromptHistoryRequest(PromptRequest[list[PromptVersion]]):
    """Every version of prompt ``name``, oldest first."""

    operation: ClassVar[str] = "history"

    name: PromptName = Field(description="the prompt's name")


class PromptDiffRequest(PromptRequest[str]):
    """A unified diff between two versions of prompt ``name``."""

    operation: ClassVar[str] = "diff"

    name: PromptName = Field(description="the prompt's name")
    old: VersionNumber | None = Field(None, description="from this version (default: the "
                                                        "one before new)")
    new: VersionNumber | None = Field(None, description="to this version (default: the "
                                                        "latest)")


class CreatePromptRequest(PromptRequest[PromptVersion]):
    """Create prompt ``name`` (version 1); a name that exists is a conflict."""

    operation: ClassVar[str] = "create"

    name: PromptName = Field(description="the prompt's name")
    text: PromptText = Field(description="the prompt's text; {variable} marks a template "
                                         "variable, {{ and }} literal braces")
    variables: list[VariableName] | None = Field(
        None, max_length=100, description="the template variables the text must use "
                                          "(default: those it uses)")
    author: Author = Field("user", description="who wrote it (a server records the "
                                               "caller's key instead)")
    reason: Reason = Field("created", description="why")


class UpdatePromptRequest(PromptRequest[PromptVersion]):
    """Write a new version of prompt ``name``; the text must keep its template variables
    (unless ``variables`` declares another set). ``expected_version``: refuse (conflict)
    unless the prompt is still at that version (commit an optimization's candidate with
    its ``base_version``)."""

    operation: ClassVar[str] = "update"

    name: PromptName = Field(description="the prompt's name")
    text: PromptText = Field(description="the new text")
    author: Author = Field("user", description="who wrote it (a server records the "
                                               "caller's key instead)")
    reason: Reason = Field("", description="why it changed")
    expected_version: VersionNumber | None = Field(
        None, description="fail unless the prompt is still at this version")
    variables: list[VariableName] | None = Field(
        None, max_length=100, description="declare a different set of template variables "
                                          "on purpose (default: keep the current ones)")


class RollbackPromptRequest(PromptRequest[PromptVersion]):
    """Make version ``version``'s text current again, as a new version."""

    operation: ClassVar[str] = "rollback"

    name: PromptName = Field(description="the prompt's name")
    version: VersionNumber = Field(description="the version to restore")
    author: Author = Field("user", description="who rolled back (a server records the "
                                               "caller's key instead)")
    reason: Reason | None = Field(None, description="why (default: 'rollback to version N')")


class TrajectoryIn(Request):
    """A conversation with optional feedback (a score, a comment, or a JSON object)."""

    messages: Messages = Field(description="text, or chat messages (OpenAI-style)")
    feedback: float | Annotated[str, StringConstraints(max_length=10_000)] | JsonObject | None \
        = Field(None, description="a score, a comment, or {'score': ..., 'comment': ...}")
    id: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = Field(
        None, description="an id to cite it by (a thread id, say)")


class OptimizePromptRequest(PromptRequest[OptimizeResult]):
    """Rewrite prompt ``name`` from ``trajectories`` with the optimizer's model; nothing is
    stored unless ``commit`` (or commit the candidate later: update with
    ``expected_version`` = its ``base_version``)."""

    operation: ClassVar[str] = "optimize"

    name: PromptName = Field(description="the prompt's name")
    trajectories: list[TrajectoryIn] = Field(min_length=1, max_length=200, description=(
        "conversations with feedback"))
    strategy: Strategy | None = Field(
        None, description="metaprompt, gradient or prompt_memory (default: the optimizer's)")
    commit: bool = Field(False, description="store the new text as a new version at once")


class SubmitOptimizationRequest(Request):
    """Queue the optimization of prompt ``name`` as a ``prompts.optimize`` job of the
    background queue: a worker runs it and commits the new version (its ``change_id`` is the
    job id). ``idempotency_key``: a repeated submission with the same key is the same job."""

    operation: ClassVar[str] = "submit_optimization"

    name: PromptName = Field(description="the prompt's name")
    trajectories: list[TrajectoryIn] = Field(min_length=1, max_length=200, description=(
        "conversations with feedback"))
    strategy: Strategy | None = Field(
        None, description="metaprompt, gradient or prompt_memory (default: the optimizer's)")
    idempotency_key: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None \
        = Field(None, description="the same key answers the job it first made")

    def job(self, *, tenant: str = "") -> NewJob:
        """The job to queue (``tenant``: whose store it runs on)."""
        from remem.procedural.jobs import optimize_job

        return optimize_job(self.name, _trajectories(self), strategy=self.strategy,
                            idempotency_key=self.idempotency_key, tenant=tenant)


def _trajectories(request: OptimizePromptRequest | SubmitOptimizationRequest,
                  ) -> list[dict[str, Any]]:
    return [{"messages": list(t.messages), "feedback": t.feedback, "id": t.id}
            for t in request.trajectories]


def prompt_flow(request: PromptRequest[R], registry: PromptRegistry,
                optimizer: PromptOptimizer | None = None) -> Flow[R]:
    """The flow running ``request`` on ``registry`` (``optimizer``: for
    :class:`OptimizePromptRequest`; its registry is ``registry``)."""
    return _flow(request, registry, optimizer)


def _flow(request: PromptRequest[Any], registry: PromptRegistry,
          optimizer: PromptOptimizer | None) -> Flow[Any]:
    if isinstance(request, ListPromptsRequest):
        return (yield from registry._list_flow())
    if isinstance(request, GetPromptRequest):
        return (yield from registry.get_flow(request.name, request.version))
    if isinstance(request, PromptHistoryRequest):
        return (yield from registry.history_flow(request.name))
    if isinstance(request, PromptDiffRequest):
        return (yield from registry._diff_flow(request.name, request.old, request.new))
    if isinstance(request, CreatePromptRequest):
        change = registry._create_change(request.name, request.text, request.variables,
                                         request.author, request.reason)
        return (yield from registry._write_flow(request.name, change))
    if isinstance(request, UpdatePromptRequest):
        return (yield from registry.update_flow(
            request.name, request.text, author=request.author, reason=request.reason,
            expected_version=request.expected_version, variables=request.variables))
    if isinstance(request, RollbackPromptRequest):
        return (yield from registry._rollback_flow(request.name, request.version,
                                                   request.author, request.reason))
    if isinstance(request, OptimizePromptRequest):
        if optimizer is None:
            raise UsageError("optimizing a prompt needs a chat model: pass model=... (a server "
                             "needs REMEM_LLM_* set)")
        result = yield from optimizer.optimize_flow(
            request.name, _trajectories(request), strategy=request.strategy,
            auto_commit=request.commit)
        return OptimizeResult.of(result)
    raise UsageError(f"{type(request).__name__} is not a prompt request; pass one of "
                     "remem.procedural.requests")


def _optimizer(registry: PromptRegistry, model: ChatModel | None,
               request: PromptRequest[Any]) -> PromptOptimizer | None:
    if model is None or not isinstance(request, OptimizePromptRequest):
        return None
    return PromptOptimizer(model, registry=registry)


def run_prompt_request(request: PromptRequest[R], registry: PromptRegistry,
                       model: ChatModel | None = None) -> R:
    """Run ``request`` on ``registry`` (``model``: the chat model optimize uses)."""
    optimizer = _optimizer(registry, model, request)
    return run_sync(prompt_flow(request, registry, optimizer), registry.store, model)


async def arun_prompt_request(request: PromptRequest[R], registry: PromptRegistry,
                              model: ChatModel | None = None) -> R:
    """Async :func:`run_prompt_request`."""
    optimizer = _optimizer(registry, model, request)
    return await run_async(prompt_flow(request, registry, optimizer), registry.store, model)


RESULT_MODELS: Mapping[type[Request], type[BaseModel]] = {
    ListPromptsRequest: PromptsOut, GetPromptRequest: PromptVersionOut,
    PromptHistoryRequest: VersionsOut, PromptDiffRequest: DiffOut,
    CreatePromptRequest: PromptVersionOut, UpdatePromptRequest: PromptVersionOut,
    RollbackPromptRequest: PromptVersionOut, OptimizePromptRequest: OptimizeResult}
"""Each prompt request's result model (:mod:`remem.procedural.wire`): its JSON on every
surface, and its row's result in :mod:`remem.procedural.operation_table`."""


def prompt_json(request: PromptRequest[Any], result: Any) -> dict[str, Any]:
    """The JSON answer of ``request``'s ``result`` (the HTTP API's and the MCP tools')."""
    data: dict[str, Any] = RESULT_MODELS[type(request)].of(  # type: ignore[attr-defined]
        result).model_dump(mode="json")
    return data
