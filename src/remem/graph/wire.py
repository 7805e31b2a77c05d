"""The JSON of every graph answer: the model each row of
:data:`~remem.graph.operation_table.GRAPH_OPERATIONS` answers with (the route's
``response_model``, the MCP tool's answer) and reads back (what ``remem.Client`` returns).

An answer is the Python API's own value: a dataclass of :mod:`remem.graph.types` or
:mod:`remem.graph.profile`, which pydantic reads and writes, carried by an :class:`Answer`
that documents itself as the value (same component name and schema in OpenAPI); a list goes
in an envelope naming it (``hits``, ``changes``, ``events``).
"""

from __future__ import annotations

from typing import Any, Generic, Self, TypeVar, cast

from pydantic import BaseModel, RootModel

from remem.graph.profile import Profile, ProfileChange, TimelineEvent
from remem.graph.types import EntityPage, FactHit, IngestResult

__all__ = ["Answer", "EntityPageOut", "FactHitsOut", "IngestResultOut", "Listed",
           "ProfileChangesOut", "ProfileOut", "TimelineOut", "answer_model"]

T = TypeVar("T")


class Answer(RootModel[T], Generic[T]):
    """An answer that is a Python value itself: :meth:`of` carries it, :meth:`value` gives it
    back, and its JSON schema is the value's (no wrapper layer in the OpenAPI schema)."""

    @classmethod
    def of(cls, result: T) -> Self:
        """The answer carrying ``result``."""
        return cls(result)

    def value(self) -> T:
        """The value carried."""
        return self.root

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        return handler(core_schema["schema"])  # the root's schema, not a $ref to it


def answer_model(kind: type[T]) -> type[Answer[T]]:
    """The :class:`Answer` of ``kind``, named as ``kind`` is (so is its OpenAPI component)."""
    return cast(type[Answer[T]], type(kind.__name__, (Answer[kind],),  # type: ignore[valid-type]
                                      {"__doc__": kind.__doc__, "__module__": __name__}))


IngestResultOut = answer_model(IngestResult)
EntityPageOut = answer_model(EntityPage)
ProfileOut = answer_model(Profile)


class Listed(BaseModel):
    """A list answer under the one field that names it."""

    @classmethod
    def of(cls, result: list[Any]) -> Self:
        """The envelope of ``result``."""
        (name,) = cls.model_fields
        return cls(**{name: result})

    def value(self) -> list[Any]:
        """The list."""
        (name,) = type(self).model_fields
        found: list[Any] = getattr(self, name)
        return found


class FactHitsOut(Listed):
    """Hits, best first."""

    hits: list[FactHit]


class ProfileChangesOut(Listed):
    """Recorded profile changes."""

    changes: list[ProfileChange]


class TimelineOut(Listed):
    """Events, by time."""

    events: list[TimelineEvent]
