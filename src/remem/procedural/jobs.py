"""Prompt optimization as a job of the background queue (:mod:`remem.background`).

:func:`optimize_job` builds the job (the prompt's name, the trajectories as JSON, the
strategy); :func:`optimization_handler` is what a :class:`~remem.background.worker.Worker`
runs for it: the optimization, committed with the job id as the version's ``change_id``.
A job re-run after a crash finds the version it already wrote and returns it without calling
the model again. A prompt changed by someone else between the optimization's read and its
commit fails the attempt with :class:`~remem.errors.ConflictError`; the queue retries it
after a backoff, on the new version. Importing this module registers the kind with every
memory worker (:func:`~remem.background.kinds.register_job_kind`; the facade,
:mod:`remem.api`, imports it).

>>> from remem.background import JobQueue
>>> from remem.background.worker import Worker
>>> from remem.llm import ScriptedModel
>>> from remem.store import InMemoryStore
>>> from remem.procedural import PromptOptimizer, PromptRegistry
>>> prompts = PromptRegistry(InMemoryStore())
>>> _ = prompts.create("p", "Answer {q}.")
>>> model = ScriptedModel([{"reasoning": "r", "prompt": "Answer {q} briefly."}])
>>> optimizer = PromptOptimizer(model, registry=prompts, strategy="prompt_memory")
>>> queue = JobQueue.in_memory()
>>> _ = queue.enqueue(optimize_job("p", [("q: hi", "too long")]))
>>> [job.result["committed_version"] for job in Worker(queue, {
...     OPTIMIZE: optimization_handler(optimizer)}).run_due()]
[2]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from remem.background.jobs import Job, NewJob
from remem.background.kinds import MemoryFor, register_job_kind
from remem.background.worker import Handler
from remem.errors import InvalidInputError
from remem.memory.flow import Flow, run_sync
from remem.procedural.optimizer import Optimization, PromptOptimizer
from remem.procedural.prompts import PromptRegistry
from remem.procedural.strategies import STRATEGIES, Strategy
from remem.procedural.trajectories import as_trajectories

__all__ = ["OPTIMIZE", "memory_optimization_handler", "optimization_handler", "optimize_job"]

#: the job kind
OPTIMIZE = "prompts.optimize"


def optimize_job(name: str, trajectories: Sequence[Any], *, strategy: Strategy | None = None,
                 idempotency_key: str | None = None, tenant: str = "",
                 max_attempts: int = 3) -> NewJob:
    """A job optimizing prompt ``name`` from ``trajectories`` (any shape
    :meth:`~remem.procedural.Trajectory.of` reads) with ``strategy`` (default: the
    handler's optimizer's)."""
    if strategy is not None and strategy not in STRATEGIES:
        raise InvalidInputError(
            f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    payload: dict[str, Any] = {
        "name": name, "trajectories": [t.to_dict() for t in as_trajectories(trajectories)]}
    if strategy is not None:
        payload["strategy"] = strategy
    return NewJob(OPTIMIZE, payload, idempotency_key=idempotency_key, tenant=tenant,
                  max_attempts=max_attempts)


def optimization_handler(optimizer: PromptOptimizer) -> Handler:
    """The handler of :data:`OPTIMIZE` jobs for ``optimizer`` (which needs a registry)."""
    registry = optimizer._need_registry()

    def run(job: Job) -> Mapping[str, Any]:
        payload = job.payload
        name = payload.get("name")
        if not isinstance(name, str):
            raise InvalidInputError(f"job {job.id}: payload.name must be a prompt name")
        result = run_sync(_flow(optimizer, job, name), registry.store, optimizer.model)
        return result

    return run


def memory_optimization_handler(memory_for: MemoryFor) -> Handler:
    """The handler of :data:`OPTIMIZE` jobs in a memory worker (``remem worker``, ``remem
    serve --workers-in-process``, ``mem.background``): the job's prompt lives in the
    registry of ``memory_for(job.tenant)``'s store (default prefix ``prompts``, as
    ``remem prompts`` and ``/v1/prompts`` keep them), optimized with that memory's model
    (else ``REMEM_LLM_*``; none is a :class:`~remem.errors.ConfigError`, failing the job
    at once)."""
    from remem.llm.config import require_model

    def run(job: Job) -> Mapping[str, Any]:
        memory = memory_for(job.tenant)
        optimizer = PromptOptimizer(memory.llm or require_model(),
                                    registry=PromptRegistry(memory.store))
        return optimization_handler(optimizer)(job) or {}

    return run


def _flow(optimizer: PromptOptimizer, job: Job, name: str) -> Flow[dict[str, Any]]:
    registry = optimizer._need_registry()
    history = yield from registry.history_flow(name)
    for version in history:  # a re-run: the attempt that wrote it crashed before finishing
        if version.change_id == job.id:
            return {"name": name, "changed": True, "committed_version": version.version,
                    "calls": 0, "rerun": True}
    strategy = job.payload.get("strategy")
    result: Optimization = yield from optimizer.optimize_flow(
        name, job.payload.get("trajectories", []), strategy=strategy, auto_commit=True,
        change_id=job.id)
    out = result.to_dict()
    out.pop("text", None)  # in the registry; the diff says what changed
    return out


register_job_kind(OPTIMIZE, lambda memory_for, queue: memory_optimization_handler(memory_for))
