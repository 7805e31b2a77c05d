"""The job kinds a memory worker runs: a registry each family fills with its own kinds.

A kind is a name (``"extract"``, ``"prompts.optimize"``...) and a factory that builds its
handler for a worker: ``factory(memory_for, queue)``, where ``memory_for(tenant)`` is the
memory a job of that tenant works on and ``queue`` the worker's queue (a kind that schedules
its next run queues it there; ``None``: the queue beside each memory's store).

The background package registers the memory kinds it owns (extraction and no-op in
:mod:`remem.background.extraction`, consolidation, forgetting); a family registers its own
when its jobs module is imported (:mod:`remem.episodic.jobs`, :mod:`remem.procedural.jobs`),
and the facade (:mod:`remem.api`) imports those, so every worker of a ``Memory`` (``remem
worker``, ``remem serve --workers-in-process``, ``mem.background``) runs every kind.
``remem.background`` itself never imports a family.
"""

from __future__ import annotations

from collections.abc import Callable

from remem.background.queue import JobQueue
from remem.background.worker import Handler
from remem.errors import InvalidInputError
from remem.memory.facade import MemoryFacade

__all__ = ["HandlerFactory", "MemoryFor", "handlers_for", "job_kinds", "register_job_kind"]

MemoryFor = Callable[[str], MemoryFacade]
"""The memory a job of a tenant works on (``""``: a database's own memory)."""

HandlerFactory = Callable[[MemoryFor, JobQueue | None], Handler]
"""Builds a kind's handler for a worker: ``factory(memory_for, queue)``."""

_KINDS: dict[str, HandlerFactory] = {}


def register_job_kind(kind: str, factory: HandlerFactory) -> None:
    """Make every memory worker run jobs of ``kind`` with ``factory``'s handler.
    Registering a kind again replaces its factory (a module imported twice)."""
    if not isinstance(kind, str) or not kind.strip():
        raise InvalidInputError(f"a job kind is a non-empty name, got {kind!r}")
    _KINDS[kind] = factory


def job_kinds() -> tuple[str, ...]:
    """The registered kinds, in registration order."""
    return tuple(_KINDS)


def handlers_for(memory_for: MemoryFor, queue: JobQueue | None = None) -> dict[str, Handler]:
    """A handler for every registered kind (see the module docstring for ``queue``)."""
    return {kind: factory(memory_for, queue) for kind, factory in _KINDS.items()}
