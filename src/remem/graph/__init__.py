"""Temporal knowledge graph on the SQL remem already has: episodes, entities, fact edges with
validity (``valid_at`` / ``invalid_at``) and knowledge time (``recorded_at`` /
``expired_at``), and the user's profile and timeline kept from the same extraction call.
See ``docs/graph.md`` and ``docs/profile.md``.
"""

from remem.graph.export import to_graphml, to_json
from remem.graph.graph import Graph
from remem.graph.picture import to_dot, to_svg
from remem.graph.profile import (
    DEFAULT_PROFILE,
    Profile,
    ProfileChange,
    ProfileSchema,
    ProfileSlot,
    TimelineEvent,
    Topic,
)
from remem.graph.storage import (
    GraphStorage,
    PostgresGraphStorage,
    SQLiteGraphStorage,
)
from remem.graph.types import Entity, EntityPage, Episode, Fact, FactHit, IngestResult

__all__ = ["DEFAULT_PROFILE", "Entity", "EntityPage", "Episode", "Fact", "FactHit", "Graph",
           "GraphStorage", "IngestResult", "PostgresGraphStorage", "Profile", "ProfileChange",
           "ProfileSchema", "ProfileSlot", "SQLiteGraphStorage", "TimelineEvent", "Topic",
           "to_dot", "to_graphml", "to_json", "to_svg"]
