"""What the packages below the facade need from a memory: :class:`MemoryFacade`, a Protocol
:class:`remem.api.Memory` satisfies.

The background job kinds, the episode and prompt jobs and the context sections work on a
memory handed to them; they type it with this Protocol, never with :mod:`remem.api`, which
sits above them and imports them (a family that imported the facade would make a cycle).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from remem.llm.base import ChatModel
from remem.memory.locking import LockSettings
from remem.memory.namespaces import NamespaceTemplate
from remem.memory.store_manager import MemoryStoreManager
from remem.store.base import BaseStore

__all__ = ["MemoryFacade"]


class MemoryFacade(Protocol):
    """A memory's store and settings, as a job or a section reads them."""

    @property
    def store(self) -> BaseStore:
        """The store the memories live in."""
        ...

    @property
    def llm(self) -> ChatModel | None:
        """The chat model, if one was given or configured."""
        ...

    @property
    def clock(self) -> Callable[[], float]:
        """The memory's clock (epoch seconds)."""
        ...

    @property
    def lock(self) -> LockSettings:
        """How its writes take the per-namespace write lock."""
        ...

    @property
    def template(self) -> NamespaceTemplate | None:
        """The namespace template scopes are filled into (``None``: the default scopes)."""
        ...

    @property
    def formation(self) -> MemoryStoreManager:
        """Memory formation over the store (extraction, reconciliation, writes)."""
        ...
