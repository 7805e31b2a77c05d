"""The JSON shape of every raw store result (pydantic models): each route's response model,
made from the Python result with ``of`` and giving it back with ``value`` (what
``client.store`` returns: the store's own types, :class:`~remem.store.types.Item`,
:class:`~remem.store.types.SearchItem`, namespaces as tuples). Times are ISO 8601, UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Self

from pydantic import BaseModel, Field

from remem.store.types import Item, Namespace, SearchItem, SignalScore
from remem.wire_models import Envelope, Wire

__all__ = [
    "CountOut",
    "NamespaceList",
    "OkOut",
    "SearchItemOut",
    "SearchResultsOut",
    "StoreItemOut",
    "StoreSignalOut",
]


def _utc(moment: datetime | None) -> datetime | None:
    return moment.astimezone(UTC) if moment is not None else None


class OkOut(BaseModel):
    """A write was applied."""

    ok: bool = True

    @classmethod
    def of(cls, result: None) -> OkOut:
        """The answer of a write."""
        return cls()

    def value(self) -> None:
        """A write returns nothing."""
        return None


class StoreItemOut(Wire[Item]):
    """A stored item (times are ISO 8601, UTC)."""

    # the item's value is ``value`` in JSON; ``value()`` gives the item back, as on every
    # result model, so the field is ``value_`` in Python (Wire populates by name)

    namespace: list[str]
    key: str
    value_: dict[str, Any] = Field(alias="value")
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    event_at: datetime | None = None

    @classmethod
    def of(cls, result: Item) -> Self:
        """The model of ``result``."""
        return cls(namespace=list(result.namespace), key=result.key, value=result.value,
                   created_at=result.created_at, updated_at=result.updated_at,
                   expires_at=result.expires_at, event_at=result.event_at)

    def _fields(self) -> dict[str, Any]:
        return {"namespace": tuple(self.namespace), "key": self.key,
                "value": dict(self.value_), "created_at": _utc(self.created_at),
                "updated_at": _utc(self.updated_at), "expires_at": _utc(self.expires_at),
                "event_at": _utc(self.event_at)}

    def value(self) -> Item:
        """The item."""
        return Item(**self._fields())


class StoreSignalOut(BaseModel):
    """How one ranking signal scored a result."""

    rank: int
    score: float


class SearchItemOut(StoreItemOut):
    """A search result: an item, its score (orders the page), each signal's rank and raw
    score, and its relevance in [0, 1] with each signal's part (null or empty without a
    query; ``docs/search.md``, "Scores")."""

    score: float | None = None
    details: dict[str, StoreSignalOut] = Field(default_factory=dict)
    relevance: float | None = Field(None, ge=0, le=1)
    relevance_by_signal: dict[str, float] = Field(default_factory=dict)

    @classmethod
    def of(cls, result: Item) -> Self:
        """The model of ``result`` (a :class:`~remem.store.types.SearchItem`)."""
        if not isinstance(result, SearchItem):
            raise TypeError(f"a search result is a SearchItem, not {type(result).__name__}")
        return cls(**StoreItemOut.of(result).model_dump(by_alias=True), score=result.score,
                   details={name: StoreSignalOut(rank=signal.rank, score=signal.score)
                            for name, signal in result.details.items()},
                   relevance=result.relevance,
                   relevance_by_signal=dict(result.relevance_by_signal))

    def value(self) -> SearchItem:
        """The search result."""
        return SearchItem(**self._fields(), score=self.score,
                          details={name: SignalScore(signal.rank, signal.score)
                                   for name, signal in self.details.items()},
                          relevance=self.relevance,
                          relevance_by_signal=dict(self.relevance_by_signal))


class SearchResultsOut(Envelope[list[SearchItem]]):
    """Items of a store search, best first."""

    items: list[SearchItemOut]


class CountOut(Envelope[int]):
    """How many items match."""

    count: int


class NamespaceList(BaseModel):
    """Distinct namespaces, sorted."""

    namespaces: list[list[str]]

    @classmethod
    def of(cls, result: list[Namespace]) -> NamespaceList:
        """The model of ``result``."""
        return cls(namespaces=[list(ns) for ns in result])

    def value(self) -> list[Namespace]:
        """The namespaces, as tuples (as the store lists them)."""
        return [tuple(ns) for ns in self.namespaces]
