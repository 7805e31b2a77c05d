"""What memory reads and writes tell the background: notices a flow yields on the side.

A search or get yields :class:`Touched` with the ids it returns (reads count as uses); a
commit that wrote yields :class:`Wrote` with its namespace (a budget may now be exceeded).
The runners (:func:`remem.memory.flow.run_sync` / ``run_async``) hand each notice to
:func:`notify`, which passes it to the store's observer and returns at once: the observer
only queues it (its own thread does the writing), and a failing observer is logged, never
raised, so a notice can neither slow down nor fail the read or write that yielded it.

The observer of a store comes from the factory registered with :func:`set_observer_factory`:
:mod:`remem.background.access` registers it when imported (use counts and budget checks live
beside the job queue), and the facade (:mod:`remem.api`) imports it, so every ``Memory``
counts its reads. This package never imports the background: without a factory there is no
observer, and notices are dropped.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from remem.store.types import Namespace

__all__ = ["Notice", "StoreObserver", "Touched", "Wrote", "close_observer", "notify",
           "observer_for", "set_observer_factory"]

log = logging.getLogger("remem.memory")


@dataclass(frozen=True, slots=True)
class Touched:
    """These memories were returned to a reader (a search hit, a get)."""

    memory_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Wrote:
    """A commit changed memories of this namespace; ``changes``: the ``(at, op)`` of each
    history event it wrote (memory changes are counted per day from them)."""

    namespace: Namespace
    changes: tuple[tuple[float, str], ...] = ()


Notice = Touched | Wrote


class StoreObserver(Protocol):
    """Receives the notices of one store's flows; must return at once."""

    def observe(self, notice: Touched | Wrote) -> None:
        """Queue ``notice`` (never block, never raise)."""
        ...

    def flush(self) -> None:
        """Handle every notice queued so far, now (a job that reads what they record)."""
        ...


_factory: Callable[[Any], StoreObserver | None] | None = None
_observers: weakref.WeakKeyDictionary[Any, StoreObserver | None] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def set_observer_factory(factory: Callable[[Any], StoreObserver | None] | None) -> None:
    """Build each store's observer with ``factory(store)`` from now on (``None``: none)."""
    global _factory
    with _lock:
        _factory = factory
        _observers.clear()


def observer_for(store: Any) -> StoreObserver | None:
    """The observer of ``store`` (made on first use; ``None`` when there is none)."""
    try:
        return _observers[store]
    except KeyError:
        pass
    except TypeError:  # a store that cannot be weakly referenced or hashed: no observer
        return None
    with _lock:
        if store not in _observers:
            _observers[store] = _factory(store) if _factory is not None else None
        return _observers[store]


def close_observer(store: Any) -> None:
    """Flush and close the observer ``store`` has, if one was made: what the owner of a store
    calls before closing it, so what the observer counted is written now, not by its thread
    after the store is gone (to a deleted file, or not at all)."""
    try:
        observer = _observers.get(store)
    except TypeError:  # a store that cannot be weakly referenced or hashed: no observer
        return
    close = getattr(observer, "close", None)
    if callable(close):
        close()


def notify(store: Any, notice: Touched | Wrote) -> None:
    """Hand ``notice`` to the store's observer; errors are logged, never raised."""
    if store is None:
        return
    try:
        observer = observer_for(store)
        if observer is not None:
            observer.observe(notice)
    except Exception:  # a notice must not fail the read or write it follows
        log.exception("could not record %s", type(notice).__name__)
