"""The job kinds a memory worker runs: a registry each family fills with its own kinds.

A kind is a name (``"extract"``, ``"prompts.optimize"``...) and a factory that builds its
handler for a worker: ``factory(memory_for, queue)``, where ``memory_for(tenant)`` is the
memory a job of that tenant works on and ``queue`` the worker's queue (a kind that schedules
its next run queues it there; ``None``: the queue beside each memory's store).

The background package registers the memory kinds it owns (extraction and no-op in
:mod:`remem.background.extraction`, consolidation, forgetting); a family registers its own
when its jobs module is imported (:mod:`remem.episodic.jobs`, :mod:`remem.procedural.jobs`),
and the facade (:mod:`remem.api`) registers a loader that imports those
(:func:`register_kind_loader`): the kinds are read only through :func:`job_kinds` and
:func:`handlers_for`, which run the loaders first, so every worker of a ``Memory`` (``remem
worker``, ``remem serve --workers-in-process``, ``mem.background``) runs every kind, while a
command that runs no job (``remem list``) does not import the families' job modules.
``remem.background`` itself never imports a family.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from remem.background.queue import JobQueue
from remem.background.worker import Handler
from remem.errors import InvalidInputError
from remem.memory.facade import MemoryFacade

__all__ = ["HandlerFactory", "MemoryFor", "handlers_for", "job_kinds", "register_job_kind",
           "register_kind_loader"]

MemoryFor = Callable[[str], MemoryFacade]
"""The memory a job of a tenant works on (``""``: a database's own memory)."""

HandlerFactory = Callable[[MemoryFor, JobQueue | None], Handler]
"""Builds a kind's handler for a worker: ``factory(memory_for, queue)``."""

_KINDS: dict[str, HandlerFactory] = {}
_LOADERS: list[Callable[[], object]] = []
# guards both lists: reentrant, since a loader's import registers kinds and may read them;
# readers take a snapshot under it, as a kind may be registered by another thread meanwhile
_LOADING = threading.RLock()


def register_job_kind(kind: str, factory: HandlerFactory) -> None:
    """Make every memory worker run jobs of ``kind`` with ``factory``'s handler.
    Registering a kind again replaces its factory (a module imported twice)."""
    if not isinstance(kind, str) or not kind.strip():
        raise InvalidInputError(f"a job kind is a non-empty name, got {kind!r}")
    with _LOADING:
        _KINDS[kind] = factory


def register_kind_loader(load: Callable[[], object]) -> None:
    """Call ``load`` (it imports modules that register kinds) once, before the kinds are next
    read: what registers a family's kinds is imported only when a worker needs them."""
    with _LOADING:
        _LOADERS.append(load)


def _run_loaders() -> None:
    with _LOADING:  # a second reader waits until every kind is registered
        while _LOADERS:
            load = _LOADERS.pop(0)
            try:
                load()
            except BaseException:  # not loaded: the next reader tries again (and fails loudly)
                _LOADERS.insert(0, load)
                raise


def job_kinds() -> tuple[str, ...]:
    """The registered kinds, in registration order (after running the loaders)."""
    _run_loaders()
    with _LOADING:
        return tuple(_KINDS)


def handlers_for(memory_for: MemoryFor, queue: JobQueue | None = None) -> dict[str, Handler]:
    """A handler for every registered kind (see the module docstring for ``queue``)."""
    _run_loaders()
    with _LOADING:
        factories = tuple(_KINDS.items())
    return {kind: factory(memory_for, queue) for kind, factory in factories}
