"""``client.store``: the raw store of a ``remem serve`` tenant, over ``/v1/store``.

:class:`RemoteStore` has the store's friendly methods as the server serves them (``put``,
``get``, ``delete``, ``search``, ``count``, ``list_namespaces``) and an async twin of each
(``aput``, ``aget``...), answering the store's own types (:class:`~remem.store.types.Item`,
:class:`~remem.store.types.SearchItem`, namespaces as tuples). Each method builds its request
(:mod:`remem.raw_store.requests`); :func:`call_of` sends it as its row of
:data:`~remem.raw_store.operation_table.STORE_OPERATIONS` says, the row the server builds
the route from; the sync and async methods only send the call with the client's shells.

What the server does differs from a store opened in process in two ways: ``get`` of a
missing item raises :class:`~remem.errors.NotFoundError` (the route's 404) where
:meth:`BaseStore.get <remem.store.BaseStore.get>` returns ``None``, and every operation goes
through the tenant's guarded view, so one under a family's root (memories, files...) raises
:class:`~remem.errors.ReservedNamespaceError` (see ``docs/store.md``, "Reserved roots").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar, cast

from remem.errors import UsageError
from remem.operations import Operation
from remem.raw_store.operation_table import STORE_OPERATIONS
from remem.raw_store.requests import (
    DeleteItemRequest,
    GetItemRequest,
    ListNamespacesRequest,
    PutItemBody,
    StoreCountBody,
    StoreRequest,
    StoreSearchBody,
)
from remem.store.types import Item, Namespace, SearchItem, SearchMode
from remem.transport import Call, Sender

__all__ = ["RemoteStore", "call_of"]

R = TypeVar("R")

#: the row of each store request type
_ROWS: Mapping[type[Any], Operation] = {row.request: row for row in STORE_OPERATIONS}


def call_of(request: StoreRequest[R]) -> Call[R]:
    """The HTTP call that runs ``request`` on a server, from its row of the store table."""
    row = _ROWS.get(type(request))
    if row is None:
        raise UsageError(f"client.store cannot send a {type(request).__name__}; pass one of "
                         "the requests in remem.raw_store.requests")
    return cast(Call[R], row.call(request))


def _args(values: dict[str, Any]) -> dict[str, Any]:
    """A method's arguments (its ``locals()`` on entry) as request fields."""
    return {name: value for name, value in values.items() if name != "self"}


class RemoteStore:
    """The tenant's raw store on the server ``client`` talks to (``client.store``)."""

    def __init__(self, client: Sender) -> None:
        self.client = client

    def run(self, request: StoreRequest[R]) -> R:
        """Run one store request on the server."""
        return self.client._send(call_of(request))

    async def arun(self, request: StoreRequest[R]) -> R:
        """Async :meth:`run`."""
        return await self.client._asend(call_of(request))

    # -- sync ---------------------------------------------------------------------------------

    def put(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
            ttl: float | None = None, index: Literal[False] | Sequence[str] | None = None,
            event_at: datetime | float | None = None) -> None:
        """Store ``value`` at ``namespace`` / ``key``, replacing what is there. ``ttl``:
        seconds until it expires (``None``: never); ``index``: ``None`` for the
        store's indexed fields, ``False`` for none, or the dotted paths of the fields to
        index; ``event_at``: when what it records happened."""
        self.run(PutItemBody.of(**_args(locals())))

    def get(self, namespace: Sequence[str], key: str) -> Item:
        """The item at ``namespace`` / ``key`` (:class:`~remem.errors.NotFoundError` if
        absent or expired)."""
        return self.run(GetItemRequest.of(**_args(locals())))

    def delete(self, namespace: Sequence[str], key: str) -> None:
        """Delete the item (deleting a missing item is not an error)."""
        self.run(DeleteItemRequest.of(**_args(locals())))

    def search(self, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
               filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
               mode: SearchMode = "auto", event_after: datetime | float | None = None,
               event_before: datetime | float | None = None) -> list[SearchItem]:
        """Items under ``namespace_prefix`` matching ``filter``, ranked by ``query`` when
        given (newest first without), a page at a time."""
        return self.run(StoreSearchBody.of(**_args(locals())))

    def count(self, namespace_prefix: Sequence[str] = (), *,
              filter: Mapping[str, Any] | None = None,
              event_after: datetime | float | None = None,
              event_before: datetime | float | None = None) -> int:
        """How many live items under ``namespace_prefix`` match: what :meth:`search` without
        a query lists over all its pages."""
        return self.run(StoreCountBody.of(**_args(locals())))

    def list_namespaces(self, *, prefix: Sequence[str] | None = None,
                        suffix: Sequence[str] | None = None, max_depth: int | None = None,
                        limit: int = 100, offset: int = 0) -> list[Namespace]:
        """Distinct namespaces, sorted (``"*"`` in ``prefix`` or ``suffix`` matches any one
        label; ``max_depth`` cuts longer ones short)."""
        return self.run(ListNamespacesRequest.of(**_args(locals())))

    # -- async --------------------------------------------------------------------------------

    async def aput(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
                   ttl: float | None = None,
                   index: Literal[False] | Sequence[str] | None = None,
                   event_at: datetime | float | None = None) -> None:
        """Async :meth:`put`."""
        await self.arun(PutItemBody.of(**_args(locals())))

    async def aget(self, namespace: Sequence[str], key: str) -> Item:
        """Async :meth:`get`."""
        return await self.arun(GetItemRequest.of(**_args(locals())))

    async def adelete(self, namespace: Sequence[str], key: str) -> None:
        """Async :meth:`delete`."""
        await self.arun(DeleteItemRequest.of(**_args(locals())))

    async def asearch(self, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
                      filter: Mapping[str, Any] | None = None, limit: int = 10,
                      offset: int = 0, mode: SearchMode = "auto",
                      event_after: datetime | float | None = None,
                      event_before: datetime | float | None = None) -> list[SearchItem]:
        """Async :meth:`search`."""
        return await self.arun(StoreSearchBody.of(**_args(locals())))

    async def acount(self, namespace_prefix: Sequence[str] = (), *,
                     filter: Mapping[str, Any] | None = None,
                     event_after: datetime | float | None = None,
                     event_before: datetime | float | None = None) -> int:
        """Async :meth:`count`."""
        return await self.arun(StoreCountBody.of(**_args(locals())))

    async def alist_namespaces(self, *, prefix: Sequence[str] | None = None,
                               suffix: Sequence[str] | None = None,
                               max_depth: int | None = None, limit: int = 100,
                               offset: int = 0) -> list[Namespace]:
        """Async :meth:`list_namespaces`."""
        return await self.arun(ListNamespacesRequest.of(**_args(locals())))
