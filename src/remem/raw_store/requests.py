"""The raw store's operations as request values: one per ``/v1/store`` route, each running
itself on a store (:meth:`StoreRequest.run_on`).

The fields and their limits are the routes' (they mirror the store's own rules,
:mod:`remem.store.types`), so a request that breaks one is refused by validation, in Python
as over HTTP, before any I/O; rules the schema cannot state (``"*"`` as a label, a filter's
operators...) are still the store's, answered with an :class:`~remem.errors.InvalidInputError`
(a 422). The three requests whose JSON is a route's whole body keep the names the OpenAPI
schema has always given them (:class:`PutItemBody`, :class:`StoreSearchBody`,
:class:`StoreCountBody`); the others travel as query parameters.

A request runs on whatever store it is given: the server gives each one the caller's
:class:`~remem.store.guarded.GuardedStore` (reserved roots checked there, in one place).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BeforeValidator, Field, StringConstraints, field_validator

from remem.errors import NotFoundError
from remem.requests import (
    MAX_NAMESPACE_DEPTH,
    Label,
    Limit,
    NamespacePath,
    NamespacePrefix,
    Offset,
    Request,
    Timestamp,
)
from remem.store.base import BaseStore
from remem.store.types import NOT_PROVIDED, Item, Namespace, SearchItem

__all__ = [
    "DeleteItemRequest",
    "GetItemRequest",
    "Key",
    "ListNamespacesRequest",
    "PutItemBody",
    "QueryText",
    "StoreCountBody",
    "StoreRequest",
    "StoreSearchBody",
]

R = TypeVar("R")

Key = Annotated[str, StringConstraints(min_length=1, max_length=1024,
                                       pattern=r"^[^\x00-\x1f\x7f]+$")]
"""An item's key: 1-1024 printable characters."""

QueryText = Annotated[str, StringConstraints(max_length=10_000)]
"""A search query: at most 10,000 characters."""


def _as_dict(value: Any) -> Any:
    # any Mapping from Python (a MappingProxyType...); JSON gives dicts
    return dict(value) if isinstance(value, Mapping) and not isinstance(value, dict) else value


Object = Annotated[dict[str, Any], BeforeValidator(_as_dict)]
"""A JSON object (any mapping from Python)."""


class StoreRequest(Request, Generic[R]):
    """Base of the raw store's requests; ``R`` is what running one returns."""

    def run_on(self, store: BaseStore) -> R:
        """Run the request on ``store``."""
        raise NotImplementedError


class PutItemBody(StoreRequest[None]):
    """Insert or replace one item."""

    operation: ClassVar[str] = "put"

    namespace: NamespacePath
    key: Key
    value: Object
    ttl: Annotated[float, Field(gt=0, le=10**10)] | None = Field(
        None, description="seconds until the item expires; null: never")
    index: Literal[False] | Annotated[list[Label], Field(min_length=1, max_length=32)] | None = \
        Field(None, description="null: the store's indexed fields; false: not searchable by "
                                "query; a list of dotted paths: those fields")
    event_at: Timestamp | None = Field(None, description="when it happened (epoch seconds)")

    @field_validator("index", mode="before")
    @classmethod
    def _index_is_false_or_paths(cls, value: Any) -> Any:
        # Literal[False] alone would also take 0 (0 == False); Python callers pass tuples
        if isinstance(value, tuple):
            return list(value)
        if value is not None and not isinstance(value, bool | list):
            raise ValueError("index must be null, false or a list of dotted field paths")
        return value

    def run_on(self, store: BaseStore) -> None:
        """Store ``value`` at ``namespace`` / ``key``."""
        store.put(tuple(self.namespace), self.key, self.value,
                  ttl=self.ttl if self.ttl is not None else NOT_PROVIDED, index=self.index,
                  event_at=self.event_at)


class GetItemRequest(StoreRequest[Item]):
    """Read one item."""

    operation: ClassVar[str] = "get"

    namespace: NamespacePath = Field(description="the namespace, one label per repetition")
    key: Key

    def run_on(self, store: BaseStore) -> Item:
        """The item (a :class:`~remem.errors.NotFoundError` if absent or expired)."""
        item = store.get(tuple(self.namespace), self.key)
        if item is None:
            raise NotFoundError(f"no item with key {self.key!r} in namespace "
                                f"{list(self.namespace)!r}")
        return item


class DeleteItemRequest(StoreRequest[None]):
    """Delete one item (deleting a missing item is not an error)."""

    operation: ClassVar[str] = "delete"

    namespace: NamespacePath = Field(description="the namespace, one label per repetition")
    key: Key

    def run_on(self, store: BaseStore) -> None:
        """Delete the item."""
        store.delete(tuple(self.namespace), self.key)


class StoreSearchBody(StoreRequest[list[SearchItem]]):
    """Search items under a namespace prefix (see the store's ``search``)."""

    operation: ClassVar[str] = "search"

    namespace_prefix: NamespacePrefix = Field(default_factory=list)
    query: QueryText | None = None
    filter: Annotated[dict[str, Any] | None, BeforeValidator(_as_dict)] = None
    limit: Limit = 10
    offset: Offset = 0
    mode: Literal["auto", "hybrid", "keyword", "vector"] = "auto"
    event_after: Timestamp | None = None
    event_before: Timestamp | None = None

    def run_on(self, store: BaseStore) -> list[SearchItem]:
        """The items found, best first."""
        return store.search(tuple(self.namespace_prefix), query=self.query, filter=self.filter,
                            limit=self.limit, offset=self.offset, mode=self.mode,
                            event_after=self.event_after, event_before=self.event_before)


class StoreCountBody(StoreRequest[int]):
    """Count items under a namespace prefix (see the store's ``count``)."""

    operation: ClassVar[str] = "count"

    namespace_prefix: NamespacePrefix = Field(default_factory=list)
    filter: Annotated[dict[str, Any] | None, BeforeValidator(_as_dict)] = None
    event_after: Timestamp | None = None
    event_before: Timestamp | None = None

    def run_on(self, store: BaseStore) -> int:
        """How many live items match."""
        return store.count(tuple(self.namespace_prefix), filter=self.filter,
                           event_after=self.event_after, event_before=self.event_before)


class ListNamespacesRequest(StoreRequest[list[Namespace]]):
    """Distinct namespaces (``*`` in ``prefix``/``suffix`` matches any one label)."""

    operation: ClassVar[str] = "list_namespaces"

    prefix: NamespacePrefix | None = None
    suffix: NamespacePrefix | None = None
    max_depth: Annotated[int, Field(ge=1, le=MAX_NAMESPACE_DEPTH)] | None = None
    limit: Limit = 100
    offset: Offset = 0

    def run_on(self, store: BaseStore) -> list[Namespace]:
        """The namespaces, sorted."""
        return store.list_namespaces(
            prefix=tuple(self.prefix) if self.prefix else None,
            suffix=tuple(self.suffix) if self.suffix else None,
            max_depth=self.max_depth, limit=self.limit, offset=self.offset)
