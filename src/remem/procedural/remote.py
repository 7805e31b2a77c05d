"""``client.prompts``: the versioned prompts of a ``remem serve`` tenant, over ``/v1/prompts``.

:class:`RemotePrompts` has :class:`~remem.procedural.PromptRegistry`'s methods (``list``,
``get``, ``history``, ``diff``, ``create``, ``update``, ``rollback`` and their async twins)
plus ``optimize`` (the server's model rewrites the prompt, see
:class:`~remem.procedural.requests.OptimizePromptRequest`), with the same arguments less
``author`` (the server records the caller's key). Each method builds the request value of
:mod:`remem.procedural.requests`; :func:`prompt_call`, a pure function, turns it into one
HTTP call (its row of :data:`~remem.procedural.operation_table.PROMPT_OPERATIONS` builds it,
``Operation.call``, and reads the answer), and the client's sync or async shell sends it.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from remem.errors import UsageError
from remem.operations import Operation
from remem.procedural.operation_table import PROMPT_OPERATIONS
from remem.procedural.prompts import PromptVersion
from remem.procedural.requests import (
    CreatePromptRequest,
    GetPromptRequest,
    ListPromptsRequest,
    OptimizePromptRequest,
    OptimizeResult,
    PromptDiffRequest,
    PromptHistoryRequest,
    PromptRequest,
    RollbackPromptRequest,
    SubmitOptimizationRequest,
    UpdatePromptRequest,
)
from remem.procedural.strategies import Strategy
from remem.procedural.trajectories import as_trajectories
from remem.requests import Request
from remem.transport import Call, Sender

__all__ = ["RemotePrompts", "prompt_call"]

R = TypeVar("R")

_ROWS: Mapping[type[Request], Operation] = {row.request: row for row in PROMPT_OPERATIONS}


def _trajectories(values: Sequence[Any]) -> list[dict[str, Any]]:
    """Any trajectory shape Python takes, as the JSON the server reads."""
    return [t.to_dict() for t in as_trajectories(values)]


def prompt_call(request: PromptRequest[R] | SubmitOptimizationRequest) -> Call[R]:
    """The HTTP call that runs ``request`` on a server: its row's (the name in the path, the
    rest in the body or the query string, less the ``author`` the server sets), the answer
    read with the row's result model."""
    row = _ROWS.get(type(request))
    if row is None:
        raise UsageError(f"Client cannot send a {type(request).__name__}; pass one of the "
                         "requests in remem.procedural.requests")
    call: Call[Any] = row.call(request)
    return call


class RemotePrompts:
    """The tenant's prompts on the server ``client`` talks to (``client.prompts``)."""

    def __init__(self, client: Sender) -> None:
        self.client = client

    def run(self, request: PromptRequest[R]) -> R:
        """Run one prompt request on the server."""
        return self.client._send(prompt_call(request))

    async def arun(self, request: PromptRequest[R]) -> R:
        """Async :meth:`run`."""
        return await self.client._asend(prompt_call(request))

    # -- blocking API (PromptRegistry's, less ``author``) ---------------------------------------

    def list(self) -> builtins.list[PromptVersion]:
        """The latest version of every prompt, by name."""
        return self.run(ListPromptsRequest())

    def get(self, name: str, version: int | None = None) -> PromptVersion:
        """The latest version of ``name``, or version ``version``."""
        return self.run(GetPromptRequest.of(name=name, version=version))

    def history(self, name: str) -> builtins.list[PromptVersion]:
        """Every version of ``name``, oldest first."""
        return self.run(PromptHistoryRequest.of(name=name))

    def diff(self, name: str, old: int | None = None, new: int | None = None) -> str:
        """Unified diff from version ``old`` to ``new`` (defaults as the registry's)."""
        return self.run(PromptDiffRequest.of(name=name, old=old, new=new))

    def create(self, name: str, text: str, *, variables: Sequence[str] | None = None,
               reason: str = "created") -> PromptVersion:
        """Create prompt ``name`` (version 1)."""
        return self.run(CreatePromptRequest.of(
            name=name, text=text, variables=_names(variables), reason=reason))

    def update(self, name: str, text: str, *, reason: str = "",
               expected_version: int | None = None,
               variables: Sequence[str] | None = None) -> PromptVersion:
        """Write a new version of ``name`` (``expected_version``: refuse unless still
        current)."""
        return self.run(UpdatePromptRequest.of(
            name=name, text=text, reason=reason, expected_version=expected_version,
            variables=_names(variables)))

    def rollback(self, name: str, version: int, *, reason: str | None = None) -> PromptVersion:
        """Make version ``version``'s text current again, as a new version."""
        return self.run(RollbackPromptRequest.of(name=name, version=version, reason=reason))

    def optimize(self, name: str, trajectories: Sequence[Any], *,
                 strategy: Strategy | None = None, commit: bool = False) -> OptimizeResult:
        """Optimize ``name`` from ``trajectories`` with the server's model; stored only with
        ``commit`` (or commit the candidate with :meth:`update` and ``expected_version``)."""
        return self.run(OptimizePromptRequest.of(
            name=name, trajectories=_trajectories(trajectories), strategy=strategy,
            commit=commit))

    def submit_optimization(self, name: str, trajectories: Sequence[Any], *,
                            strategy: Strategy | None = None,
                            idempotency_key: str | None = None) -> dict[str, Any]:
        """Queue the optimization as a background job (committed by the worker that runs
        it); answers the job's JSON at once (follow it with ``client.job(id)``)."""
        return self.client._send(prompt_call(SubmitOptimizationRequest.of(
            name=name, trajectories=_trajectories(trajectories), strategy=strategy,
            idempotency_key=idempotency_key)))

    # -- async API ------------------------------------------------------------------------------

    async def asubmit_optimization(self, name: str, trajectories: Sequence[Any], *,
                                   strategy: Strategy | None = None,
                                   idempotency_key: str | None = None) -> dict[str, Any]:
        """Async :meth:`submit_optimization`."""
        return await self.client._asend(prompt_call(SubmitOptimizationRequest.of(
            name=name, trajectories=_trajectories(trajectories), strategy=strategy,
            idempotency_key=idempotency_key)))

    async def alist(self) -> builtins.list[PromptVersion]:
        """Async :meth:`list`."""
        return await self.arun(ListPromptsRequest())

    async def aget(self, name: str, version: int | None = None) -> PromptVersion:
        """Async :meth:`get`."""
        return await self.arun(GetPromptRequest.of(name=name, version=version))

    async def ahistory(self, name: str) -> builtins.list[PromptVersion]:
        """Async :meth:`history`."""
        return await self.arun(PromptHistoryRequest.of(name=name))

    async def adiff(self, name: str, old: int | None = None, new: int | None = None) -> str:
        """Async :meth:`diff`."""
        return await self.arun(PromptDiffRequest.of(name=name, old=old, new=new))

    async def acreate(self, name: str, text: str, *, variables: Sequence[str] | None = None,
                      reason: str = "created") -> PromptVersion:
        """Async :meth:`create`."""
        return await self.arun(CreatePromptRequest.of(
            name=name, text=text, variables=_names(variables), reason=reason))

    async def aupdate(self, name: str, text: str, *, reason: str = "",
                      expected_version: int | None = None,
                      variables: Sequence[str] | None = None) -> PromptVersion:
        """Async :meth:`update`."""
        return await self.arun(UpdatePromptRequest.of(
            name=name, text=text, reason=reason, expected_version=expected_version,
            variables=_names(variables)))

    async def arollback(self, name: str, version: int, *,
                        reason: str | None = None) -> PromptVersion:
        """Async :meth:`rollback`."""
        return await self.arun(RollbackPromptRequest.of(name=name, version=version,
                                                        reason=reason))

    async def aoptimize(self, name: str, trajectories: Sequence[Any], *,
                        strategy: Strategy | None = None,
                        commit: bool = False) -> OptimizeResult:
        """Async :meth:`optimize`."""
        return await self.arun(OptimizePromptRequest.of(
            name=name, trajectories=_trajectories(trajectories), strategy=strategy,
            commit=commit))


def _names(variables: Sequence[str] | None) -> builtins.list[str] | None:
    if variables is None or isinstance(variables, str):
        return variables  # type: ignore[return-value]  # a string: the request says why not
    return builtins.list(variables)
