"""The JSON of every graph answer: the model each row of
:data:`~remem.graph.operation_table.GRAPH_OPERATIONS` answers with (the route's
``response_model``, the MCP tool's answer) and reads back (what ``remem.Client`` returns).

An answer is the Python API's own value: a dataclass of :mod:`remem.graph.types` or
:mod:`remem.graph.profile`, which pydantic reads and writes, carried by an
:class:`~remem.wire_models.Answer` that documents itself as the value (same component name
and schema in OpenAPI); a list goes in an :class:`~remem.wire_models.Envelope` naming it
(``hits``, ``changes``, ``events``).
"""

from __future__ import annotations

from remem.graph.profile import Profile, ProfileChange, TimelineEvent
from remem.graph.types import EntityPage, FactHit, IngestResult
from remem.wire_models import Envelope, answer_model

__all__ = ["EntityPageOut", "FactHitsOut", "IngestResultOut", "ProfileChangesOut", "ProfileOut",
           "TimelineOut"]

IngestResultOut = answer_model(IngestResult, __name__)
EntityPageOut = answer_model(EntityPage, __name__)
ProfileOut = answer_model(Profile, __name__)


class FactHitsOut(Envelope[list[FactHit]]):
    """Hits, best first."""

    hits: list[FactHit]


class ProfileChangesOut(Envelope[list[ProfileChange]]):
    """Recorded profile changes."""

    changes: list[ProfileChange]


class TimelineOut(Envelope[list[TimelineEvent]]):
    """Events, by time."""

    events: list[TimelineEvent]
