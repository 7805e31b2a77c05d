"""The public surface of remem.graph is what we mean it to be, and stays importable."""

from __future__ import annotations

import pytest

import remem.graph


def test_graph_all_is_the_public_surface() -> None:
    assert set(remem.graph.__all__) == {
        "DEFAULT_PROFILE", "Entity", "EntityPage", "Episode", "Fact", "FactHit", "Graph",
        "GraphStorage", "IngestResult", "PostgresGraphStorage", "Profile", "ProfileChange",
        "ProfileSchema", "ProfileSlot", "SQLiteGraphStorage", "TimelineEvent", "Topic",
        "to_dot", "to_graphml", "to_json", "to_svg"}
    for name in remem.graph.__all__:
        assert getattr(remem.graph, name).__doc__, name


def test_migrations_are_their_own_family() -> None:
    from remem.graph.schema import GRAPH_MIGRATIONS, GRAPH_MIGRATIONS_POSTGRES

    assert [m.name for m in GRAPH_MIGRATIONS] == [m.name for m in GRAPH_MIGRATIONS_POSTGRES] \
        == ["g001_graph", "g002_profile", "g003_fact_validity", "g004_covering_postings"]


def test_every_async_method_has_its_sync_twins_signature() -> None:
    import inspect

    from remem.graph import Graph

    twins = [n for n in dir(Graph) if n.startswith("a") and n[1:] in dir(Graph)
             and inspect.iscoroutinefunction(getattr(Graph, n))]
    assert sorted(twins) == ["aentity", "aexpand", "aingest", "aprofile", "arefresh_summary",
                             "asearch", "atimeline"]
    for name in twins:
        sync = inspect.signature(getattr(Graph, name[1:]))
        assert inspect.signature(getattr(Graph, name)).parameters == sync.parameters, name


def test_async_methods_answer_as_the_sync_ones() -> None:
    import asyncio

    from remem.graph import Graph
    from remem.llm import ScriptedModel
    from tests.graph.scripts import E, F, answer

    def script() -> ScriptedModel:
        return ScriptedModel([answer([E("Ada"), E("Acme", "organization")],
                                     [F("Ada", "works_at", "Acme", "Ada works at Acme")]),
                              {"summary": "Ada works at Acme."}])

    with Graph.in_memory(model=script(), clock=lambda: 1.0e9) as sync_graph:
        sync_graph.ingest("Ada joined Acme.", event_at=1.0e9)
        expected = ([h.to_dict() for h in sync_graph.search("Ada")],
                    [h.to_dict() for h in sync_graph.expand("Ada")],
                    sync_graph.entity("Ada").current, sync_graph.refresh_summary("Ada")[0])

    async def run() -> tuple[object, ...]:
        with Graph.in_memory(model=script(), clock=lambda: 1.0e9) as graph:
            await graph.aingest("Ada joined Acme.", event_at=1.0e9)
            return ([h.to_dict() for h in await graph.asearch("Ada")],
                    [h.to_dict() for h in await graph.aexpand("Ada")],
                    (await graph.aentity("Ada")).current,
                    (await graph.arefresh_summary("Ada"))[0])

    assert asyncio.run(run()) == expected


def test_memory_graph_lives_in_the_memorys_file_per_scope(tmp_path: object) -> None:
    from pathlib import Path

    from remem import FakeEmbedder, Memory
    from remem.llm import ScriptedModel
    from tests.graph.test_conformance import ada_at

    db = Path(str(tmp_path)) / "mem.db"
    model = ScriptedModel([ada_at("Acme", "2020-01-01")])
    with Memory.open(db, embedder=FakeEmbedder(), llm=model) as mem:
        graph = mem.graph(user_id="alice")
        assert graph is mem.graph(user_id="alice")  # opened once per scope
        assert graph.namespace == ("graph", *mem.namespace_of(user_id="alice"))
        assert graph.ingest("Ada joined Acme.").llm_calls == 1
        assert [f.fact for f in mem.graph(user_id="bob").facts()] == []
    with Memory.open(db, embedder=FakeEmbedder()) as again:  # same file, closed and reopened
        assert [h.fact.fact for h in again.graph(user_id="alice").search("Acme")] == [
            "Ada works at Acme"]


def test_graph_facts_join_the_context_as_a_section(tmp_path: object) -> None:
    from datetime import UTC, datetime
    from pathlib import Path

    from remem import FakeEmbedder, Memory
    from remem.context.graph_section import GraphFactsSection
    from remem.llm import ScriptedModel
    from tests.graph.test_conformance import ada_at

    model = ScriptedModel([ada_at("Acme", "2020-01-01"),
                           ada_at("Globex", "2023-05-01", ends="Ada works at Acme")])
    with Memory.open(Path(str(tmp_path)) / "ctx.db", embedder=FakeEmbedder(),
                     llm=model) as mem:
        graph = mem.graph(user_id="alice")
        graph.ingest("Ada joined Acme.")
        graph.ingest("Ada left Acme for Globex in May 2023.")
        section = GraphFactsSection(clock=lambda: datetime(2024, 1, 1, tzinfo=UTC).timestamp())
        result = mem.context("Where does Ada work?", user_id="alice",
                             sections=[section, "memories"])
        text = result.to_string()
        assert "## Known facts" in text and "Ada works at Globex (since 2023-05-01)" in text
        assert "Acme" not in text  # ended before the clock's time
        assert mem.context("Where does Ada work?", user_id="bob",
                           sections=[section]).to_string() == ""


def test_a_graph_of_the_first_schema_upgrades_in_place(tmp_path: object) -> None:
    """A database holding only g001 (before profiles and the validity index) gets g002 and
    g003 on open, keeping its facts; the new tables and index work."""
    import sqlite3
    from pathlib import Path

    from remem.db import Database, Schema
    from remem.db.migrations import applied_sqlite
    from remem.graph import Graph, SQLiteGraphStorage
    from remem.graph.rows import GraphRows
    from remem.graph.schema import GRAPH_MIGRATIONS
    from remem.graph.storage import _GraphTx
    from remem.retrieval.tokenize import DefaultTokenizer

    path = Path(str(tmp_path)) / "old.db"
    old = Database(path)
    old.migrate(Schema("graph", GRAPH_MIGRATIONS[:1], ()))
    with old.transaction(True) as tx:
        rows = GraphRows(_GraphTx(tx), "old\x1f", DefaultTokenizer())
        ada = rows.insert_entity("Ada", "person", [], 0.0, None)
        rows.insert_fact(ada.id, "age", None, "36", "Ada is 36", None, None, 0.0, None, 1, None)
    old.close()
    with Graph(SQLiteGraphStorage(path), ("old",)) as graph:
        assert [f.fact for f in graph.facts()] == ["Ada is 36"]
        graph.patch_profile([{"op": "add", "path": "/basic_info/age", "value": "36"}])
        assert graph.profile().get("basic_info", "age") == "36"
        assert [f.fact for f in graph.facts(as_of=1.0)] == ["Ada is 36"]
    with sqlite3.connect(path) as conn:
        assert [n for n in applied_sqlite(conn) if n.startswith("g")] == [
            "g001_graph", "g002_profile", "g003_fact_validity", "g004_covering_postings"]
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                              "'index'")}
        assert "graph_facts_validity" in indexes


def test_graphs_beside_one_database_share_its_connections(tmp_path: object) -> None:
    """Every user's graph of a memory (or a server's tenants) uses one storage per database;
    it closes with the last graph, and a graph opened after that reopens it."""
    from pathlib import Path

    from remem import FakeEmbedder, Memory
    from remem.errors import StoreError
    from remem.graph.storage import SharedStorage

    db = Path(str(tmp_path)) / "shared.db"
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        alice, bob = mem.graph(user_id="alice"), mem.graph(user_id="bob")
        assert isinstance(alice.storage, SharedStorage)
        assert isinstance(bob.storage, SharedStorage)
        assert alice.storage.inner is bob.storage.inner
        bob.patch_profile([{"op": "add", "path": "/work/company", "value": "Acme"}])
        inner = alice.storage.inner
        bob.close()
        with pytest.raises(StoreError, match="closed"):
            bob.profile()
        assert alice.profile().to_dict() == {}  # still open for alice
    with Memory.open(db, embedder=FakeEmbedder()) as again:
        reopened = again.graph(user_id="bob")
        assert isinstance(reopened.storage, SharedStorage)
        assert reopened.storage.inner is not inner
        assert reopened.profile().get("work", "company") == "Acme"


def test_threads_asking_first_for_one_graph_share_it(tmp_path: object) -> None:
    """Threads that ask a memory for the same graph at once (none opened yet) get one graph
    holding one storage handle, released when the memory closes."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from remem import FakeEmbedder, Memory
    from remem.graph import Graph
    from remem.graph.storage import _SHARED, SharedStorage

    threads = 8
    barrier = threading.Barrier(threads)
    with Memory.open(Path(str(tmp_path)) / "race.db", embedder=FakeEmbedder()) as mem:
        def first(_: int) -> Graph:
            barrier.wait()  # all ask together, before any graph is cached
            return mem.graph(user_id="alice")

        with ThreadPoolExecutor(threads) as pool:
            got = list(pool.map(first, range(threads)))
        assert len({id(graph) for graph in got}) == 1
        storage = got[0].storage
        assert isinstance(storage, SharedStorage)
        assert _SHARED[storage.key][1] == 1  # one handle: no graph opened and dropped
    assert storage.key not in _SHARED  # the memory closed the only handle
