"""Query plans of a fact search on SQLite: no statement reads a whole namespace of facts (a
search's cost must not grow with the graph). The plans are SQLite's own EXPLAIN QUERY PLAN
of the statements a real search runs, on a real file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from remem.embed import FakeEmbedder
from remem.graph import Graph, SQLiteGraphStorage
from remem.graph.rows import GraphRows
from remem.retrieval.tokenize import DefaultTokenizer


class _Recorded(SQLiteGraphStorage):
    """A SQLite storage remembering each statement (and its parameters) run through it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def transaction(self, write: bool, ns: str) -> Any:
        inner = super().transaction(write, ns)
        statements = self.statements

        class Recording:
            def __enter__(self) -> Any:
                tx = inner.__enter__()
                execute = tx.execute

                def recorded(query: str, params: Any = ()) -> Any:
                    statements.append((query, tuple(params)))
                    return execute(query, params)

                tx.execute = recorded
                return tx

            def __exit__(self, *exc: Any) -> Any:
                return inner.__exit__(*exc)

        return Recording()


def test_no_search_statement_reads_a_whole_namespace_of_facts(tmp_path: Path) -> None:
    storage = _Recorded(tmp_path / "plans.db")
    ns = "plans\x1f"
    with storage.transaction(True, ns) as tx:
        rows = GraphRows(tx, ns, DefaultTokenizer())
        people = [rows.insert_entity(f"Person{i}", "person", [], 0.0, None).id
                  for i in range(30)]
        for i in range(200):
            rows.insert_fact(people[i % 30], "knows", people[(i * 7 + 1) % 30], None,
                             f"Person{i % 30} knows Person{(i * 7 + 1) % 30} from chess",
                             1.0e9, None, 1.0e9, None, 1, None)
    with Graph(storage, ("plans",), embedder=FakeEmbedder()) as graph:
        storage.statements.clear()
        assert graph.search("Who does Person3 know from chess?", as_of=1.1e9)
        assert graph.expand("Person3", hops=2)
        searched = list(storage.statements)
        plans = {}
        with storage.transaction(False, ns) as tx:
            for query, params in searched:
                plans[query] = [r[3] for r in tx.execute(f"EXPLAIN QUERY PLAN {query}",
                                                         params)]
    assert any("graph_facts_subject" in line for p in plans.values() for line in p)
    for query, plan in plans.items():
        whole = [line for line in plan if ("graph_facts" in line or " f " in f" {line} ")
                 and (line.startswith("SCAN") or line.endswith("(ns=?)"))]
        assert not whole, (query, plan)
