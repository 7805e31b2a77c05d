"""Request and response bodies of the HTTP API (pydantic models; they are the OpenAPI schema).

The memory routes take the request values of :mod:`remem.memory.requests` as their bodies
and answer with the result models of :mod:`remem.memory.wire` (both derived from the memory
operation table by :mod:`remem.server.operation_routes`); the few models here are the
store's bodies and the error body.

The constraints mirror the store's own rules (:mod:`remem.store.types`), so a request that
breaks one is refused by validation with a 422 naming the field, before any I/O. Rules the
schema cannot state (``"*"`` as a label, integers beyond 64 bits...) are still enforced by
the library and answered with a 422 as well.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

from remem.requests import (
    MAX_NAMESPACE_DEPTH,
    Label,
    Limit,
    NamespacePath,
    NamespacePrefix,
    Offset,
    Timestamp,
)

__all__ = [
    "MAX_NAMESPACE_DEPTH",
    "ErrorBody",
    "ErrorDetail",
    "ItemOut",
    "Key",
    "Label",
    "NamespaceList",
    "NamespacePath",
    "PutItemBody",
    "SearchItemOut",
    "StoreSearchBody",
]

Key = Annotated[str, StringConstraints(min_length=1, max_length=1024,
                                       pattern=r"^[^\x00-\x1f\x7f]+$")]
Query = Annotated[str, StringConstraints(max_length=10_000)]


class _Body(BaseModel):
    # strict: JSON false is not the number 0, "1" is not 1 (an integer still counts as a float)
    model_config = ConfigDict(extra="forbid", strict=True)


class ErrorDetail(BaseModel):
    """One problem: where (``field``, a dotted path such as ``body.namespace.0``) and what."""

    field: str | None = None
    message: str


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: ``error`` is a machine-readable kind, ``message`` says what is
    wrong and how to fix it, ``field`` names the offending field when there is one."""

    error: str
    message: str
    field: str | None = None
    details: list[ErrorDetail] = Field(default_factory=list)


# -- store --------------------------------------------------------------------------------------


class PutItemBody(_Body):
    """Insert or replace one item."""

    namespace: NamespacePath
    key: Key
    value: dict[str, Any]
    ttl: Annotated[float, Field(gt=0, le=10**10)] | None = Field(
        None, description="seconds until the item expires; null: never")
    index: Literal[False] | Annotated[list[Label], Field(min_length=1, max_length=32)] | None = \
        Field(None, description="null: the store's indexed fields; false: not searchable by "
                                "query; a list of dotted paths: those fields")
    event_at: Timestamp | None = Field(None, description="when it happened (epoch seconds)")

    @field_validator("index", mode="before")
    @classmethod
    def _index_is_false_or_paths(cls, value: Any) -> Any:
        # Literal[False] alone would also take 0 (0 == False)
        if value is not None and not isinstance(value, bool | list):
            raise ValueError("index must be null, false or a list of dotted field paths")
        return value


class StoreSearchBody(_Body):
    """Search items under a namespace prefix (see the store's ``search``)."""

    namespace_prefix: NamespacePrefix = Field(default_factory=list)
    query: Query | None = None
    filter: dict[str, Any] | None = None
    limit: Limit = 10
    offset: Offset = 0
    mode: Literal["auto", "hybrid", "keyword", "vector"] = "auto"
    event_after: Timestamp | None = None
    event_before: Timestamp | None = None


class ItemOut(BaseModel):
    """A stored item (times are ISO 8601, UTC)."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    event_at: datetime | None = None


class SignalOut(BaseModel):
    """How one ranking signal scored a result."""

    rank: int
    score: float


class SearchItemOut(ItemOut):
    """A search result: an item, its score (orders the page), each signal's rank and raw
    score, and its relevance in [0, 1] with each signal's part (null or empty without a
    query; ``docs/search.md``, "Scores")."""

    score: float | None = None
    details: dict[str, SignalOut] = Field(default_factory=dict)
    relevance: float | None = Field(None, ge=0, le=1)
    relevance_by_signal: dict[str, float] = Field(default_factory=dict)


class SearchResultsOut(BaseModel):
    """Items of a store search, best first."""

    items: list[SearchItemOut]


class NamespaceList(BaseModel):
    """Distinct namespaces, sorted."""

    namespaces: list[list[str]]


class OkOut(BaseModel):
    """A write was applied."""

    ok: bool = True
