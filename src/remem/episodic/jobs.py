"""Episode extraction as a job of the background queue (:mod:`remem.background`).

:func:`extract_job` builds the job (a finished conversation and its thread id);
:func:`episode_extraction_handler` is what a :class:`~remem.background.worker.Worker` runs:
one extraction call, its episodes stored under ids made from the job id
(``<job id>-0``, ``-1``...). A job re-run after a crash finds them and returns them without
calling the model again.

Importing this module registers the kind with every memory worker
(:func:`~remem.background.kinds.register_job_kind`; the facade, :mod:`remem.api`, imports it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from remem.background.jobs import Job, NewJob
from remem.background.kinds import MemoryFor, register_job_kind
from remem.background.worker import Handler
from remem.episodic.episodes import EpisodeStore
from remem.errors import InvalidInputError, NotFoundError
from remem.llm.base import ChatModel
from remem.memory.flow import run_sync
from remem.messages.types import Message

__all__ = ["EXTRACT_EPISODES", "episode_extraction_handler", "extract_job",
           "memory_episode_handler"]

#: the job kind
EXTRACT_EPISODES = "episodes.extract"


def extract_job(messages: Sequence[Message], *, thread_id: str | None = None,
                idempotency_key: str | None = None, tenant: str = "",
                max_attempts: int = 3) -> NewJob:
    """A job extracting the episodes of the finished conversation ``messages``."""
    if not messages or not all(isinstance(m, Message) for m in messages):
        raise InvalidInputError("messages must be a non-empty list of remem Message values")
    return NewJob(EXTRACT_EPISODES, {"messages": [m.to_dict() for m in messages]},
                  idempotency_key=idempotency_key, tenant=tenant, thread_id=thread_id,
                  max_attempts=max_attempts)


def episode_extraction_handler(episodes: EpisodeStore, model: ChatModel) -> Handler:
    """The handler of :data:`EXTRACT_EPISODES` jobs, storing into ``episodes``."""

    def run(job: Job) -> Mapping[str, Any]:
        done = _already(episodes, job.id)
        if done:
            return {"episodes": done, "calls": 0, "rerun": True}
        messages = tuple(Message.model_validate(m) for m in job.payload.get("messages", []))
        flow = episodes.extract_flow(messages, thread_id=job.thread_id, id_prefix=job.id)
        extracted = run_sync(flow, episodes.store, model)
        return {"episodes": [e.id for e in extracted.episodes],
                "calls": extracted.usage.calls, "input_tokens": extracted.usage.input_tokens,
                "output_tokens": extracted.usage.output_tokens}

    return run


def memory_episode_handler(memory_for: MemoryFor) -> Handler:
    """The handler of :data:`EXTRACT_EPISODES` jobs in a memory worker (``remem worker``,
    ``remem serve --workers-in-process``, ``mem.background``): episodes go to the
    :class:`EpisodeStore` of ``memory_for(job.tenant)``'s store (default prefix
    ``episodes``, as ``remem episodes`` and ``/v1/episodes`` keep them), extracted with that
    memory's model (else ``REMEM_LLM_*``)."""
    from remem.llm.config import require_model

    def run(job: Job) -> Mapping[str, Any]:
        memory = memory_for(job.tenant)
        handler = episode_extraction_handler(EpisodeStore(memory.store),
                                             memory.llm or require_model())
        return handler(job) or {}

    return run


def _already(episodes: EpisodeStore, job_id: str) -> list[str]:
    found: list[str] = []
    while True:
        try:
            found.append(episodes.get(f"{job_id}-{len(found)}").id)
        except NotFoundError:
            return found


register_job_kind(EXTRACT_EPISODES, lambda memory_for, queue: memory_episode_handler(memory_for))
