"""The base of every memory result's JSON shape (:class:`MemoryWire`), and the field types shapes
share: ISO 8601 times, a memory's content.

A value whose ``to_dict()`` is its shape declares that shape beside itself, on this base
(:class:`~remem.memory.records.MemoryOut` in :mod:`remem.memory.records`, the search, page
and change shapes in :mod:`remem.memory.results`), so a value never reaches up to the module
that gathers the shapes; :mod:`remem.memory.wire` gathers them all, names each request's
result model and reads answers back.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, PlainSerializer

from remem.store.types import from_timestamp

__all__ = ["Content", "IsoTime", "MemoryWire", "epoch", "iso_time", "json_of"]

T = TypeVar("T")

IsoTime = Annotated[datetime, PlainSerializer(lambda t: t.isoformat(), return_type=str,
                                              when_used="json")]
"""A time: ISO 8601 in JSON, an aware datetime in Python."""

Content = str | dict[str, Any]
"""A memory's content: text, or a JSON object of its schema."""


def iso_time(ts: float | None) -> datetime | None:
    """Epoch seconds as an aware datetime (``None`` stays ``None``)."""
    return from_timestamp(ts) if ts is not None else None


def epoch(moment: datetime | None) -> float | None:
    """An aware datetime as epoch seconds (``None`` stays ``None``)."""
    return moment.timestamp() if moment is not None else None


class MemoryWire(BaseModel, Generic[T]):
    """A result's JSON shape: :meth:`of` from the Python value, :meth:`value` back."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @classmethod
    def of(cls, result: T) -> Any:
        """The model of ``result``."""
        raise NotImplementedError

    def value(self) -> T:
        """The Python result this JSON describes."""
        raise NotImplementedError


def json_of(model: MemoryWire[Any]) -> dict[str, Any]:
    """A shape as JSON-ready data (field aliases, ISO times): what ``to_dict()`` returns."""
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True)
    return data
