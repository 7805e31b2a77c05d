"""Temporal knowledge graph on the SQL remem already has: episodes, entities, fact edges with
validity (``valid_at`` / ``invalid_at``) and knowledge time (``recorded_at`` /
``expired_at``). See ``docs/graph.md``.
"""

from remem.graph.export import to_graphml, to_json
from remem.graph.graph import Graph
from remem.graph.storage import (
    GraphStorage,
    PostgresGraphStorage,
    SQLiteGraphStorage,
)
from remem.graph.types import Entity, EntityPage, Episode, Fact, FactHit, IngestResult

__all__ = ["Entity", "EntityPage", "Episode", "Fact", "FactHit", "Graph", "GraphStorage",
           "IngestResult", "PostgresGraphStorage", "SQLiteGraphStorage", "to_graphml",
           "to_json"]
