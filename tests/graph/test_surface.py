"""The public surface of remem.graph is what we mean it to be, and stays importable."""

from __future__ import annotations

import remem.graph


def test_graph_all_is_the_public_surface() -> None:
    assert set(remem.graph.__all__) == {
        "Entity", "EntityPage", "Episode", "Fact", "FactHit", "Graph", "GraphStorage",
        "IngestResult", "PostgresGraphStorage", "SQLiteGraphStorage", "to_graphml", "to_json"}
    for name in remem.graph.__all__:
        assert getattr(remem.graph, name).__doc__, name


def test_migrations_are_their_own_family() -> None:
    from remem.graph.schema import GRAPH_MIGRATIONS, GRAPH_MIGRATIONS_POSTGRES

    assert [m.name for m in GRAPH_MIGRATIONS] == [m.name for m in GRAPH_MIGRATIONS_POSTGRES] \
        == ["g001_graph"]
