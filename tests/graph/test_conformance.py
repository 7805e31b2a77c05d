"""One suite over every graph backend (SQLite memory, SQLite file, PostgreSQL)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from remem.embed.fake import FakeEmbedder
from remem.errors import InvalidInputError, NotFoundError, StructuredOutputError, UsageError
from remem.graph import Graph, to_graphml, to_json
from remem.llm import ScriptedModel
from tests.graph.conftest import Clock
from tests.graph.scripts import E, F, answer

MakeGraph = Callable[..., Graph]


def ts(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def ada_at(company: str, since: str, *, ends: str | None = None) -> Any:
    entities = [E("Ada"), E(company, "organization")]
    if ends is not None:
        entities = [E("Ada", existing="Ada"), E(company, "organization")]
    return answer(entities, [F("Ada", "works_at", company, f"Ada works at {company}",
                               valid_at=since, contradicts=[ends] if ends else [])])


def test_ingest_writes_entities_and_facts_and_counts_one_call(make_graph: MakeGraph) -> None:
    model = ScriptedModel([ada_at("Acme", "2020-01-01")])
    graph = make_graph(model=model)
    result = graph.ingest("Ada joined Acme in January 2020.", event_at=ts("2020-02-01"))
    assert result.llm_calls == 1 and result.input_tokens > 0
    assert len(result.created_entities) == 2 and len(result.added) == 1
    assert {e.name for e in graph.entities()} == {"Ada", "Acme"}
    (fact,) = graph.facts()
    assert (fact.predicate, fact.valid_at, fact.invalid_at) == ("works_at", ts("2020-01-01"),
                                                                None)
    assert fact.episodes == (result.episode.id,)
    assert "Reference time (when the episode happened): Saturday 2020-02-01" in \
        model.requests[0].messages[-1].text


def test_contradiction_ends_the_old_fact_and_keeps_it(make_graph: MakeGraph) -> None:
    clock = Clock(ts("2020-02-01"))
    model = ScriptedModel([ada_at("Acme", "2020-01-01"),
                           ada_at("Globex", "2022-06-01", ends="Ada works at Acme")])
    graph = make_graph(model=model, clock=clock)
    graph.ingest("Ada joined Acme.", event_at=ts("2020-02-01"))
    clock.now = ts("2022-07-01")
    result = graph.ingest("Ada moved to Globex in June.", event_at=ts("2022-07-01"))
    assert result.llm_calls == 1 and len(result.invalidated) == 1
    facts = {f.fact: f for f in graph.facts()}
    old = facts["Ada works at Acme"]
    assert (old.invalid_at, old.expired_at) == (ts("2022-06-01"), ts("2022-07-01"))

    def employer(as_of: str, known_at: str | None = None) -> set[str]:
        return {f.fact for f in graph.facts(as_of=ts(as_of),
                                            known_at=None if known_at is None else ts(known_at))}

    assert employer("2021-01-01") == {"Ada works at Acme"}
    assert employer("2023-01-01") == {"Ada works at Globex"}
    assert employer("2019-01-01") == set()
    # what we believed in March 2021 about 2023: still Acme (the move was not known yet)
    assert employer("2023-01-01", known_at="2021-03-01") == {"Ada works at Acme"}


def test_identical_fact_adds_a_source(make_graph: MakeGraph) -> None:
    model = ScriptedModel([ada_at("Acme", "2020-01-01"),
                           answer([E("Ada", existing="Ada"), E("Acme", "organization",
                                                               existing="Acme")],
                                  [F("Ada", "works_at", "Acme", "Ada is employed by Acme")])])
    graph = make_graph(model=model)
    first = graph.ingest("Ada joined Acme.")
    second = graph.ingest("Ada still works at Acme.")
    assert second.added == () and second.confirmed == first.added
    (fact,) = graph.facts()
    assert fact.episodes == (first.episode.id, second.episode.id)


def test_namespaces_are_separate_graphs(make_graph: MakeGraph,
                                        make_storage: Callable[..., Any]) -> None:
    storage = make_storage()
    one = make_graph(("tenant", "a"), storage=storage,
                     model=ScriptedModel([ada_at("Acme", "2020-01-01")]))
    two = make_graph(("tenant", "b"), storage=storage,
                     model=ScriptedModel([ada_at("Initech", "2021-01-01")]))
    one.ingest("Ada joined Acme.")
    two.ingest("Ada joined Initech.")
    assert [f.fact for f in one.facts()] == ["Ada works at Acme"]
    assert [h.fact.fact for h in two.search("Ada works")] == ["Ada works at Initech"]
    acme = one.find_entities("Acme")[0].id
    with pytest.raises(NotFoundError):
        two.entity(acme)
    assert two.find_entities("acme") == []


def test_search_by_keyword_vector_and_graph(make_graph: MakeGraph) -> None:
    model = ScriptedModel([
        answer([E("Ada"), E("Acme", "organization"), E("Berlin", "place")],
               [F("Ada", "works_at", "Acme", "Ada works at Acme"),
                F("Acme", "located_in", "Berlin", "Acme has its office in Berlin")]),
        answer([E("Bo"), E("Paris", "place")],
               [F("Bo", "lives_in", "Paris", "Bo lives in Paris")]),
    ])
    graph = make_graph(model=model, embedder=FakeEmbedder())
    graph.ingest("Ada works at Acme, in Berlin.")
    graph.ingest("Bo lives in Paris.")
    hits = graph.search("Ada")
    assert [h.fact.fact for h in hits[:2]] == ["Ada works at Acme",
                                               "Acme has its office in Berlin"]
    far = hits[1]
    assert far.distance == 2 and far.path == ("Ada", "Acme", "located_in", "Berlin")
    assert set(far.signals) >= {"graph"}
    assert hits[0].interval == (hits[0].fact.valid_at, None)
    office = graph.search("office")[0]
    assert office.fact.fact == "Acme has its office in Berlin"
    assert {"keyword", "vector"} <= set(office.signals)
    near = graph.search("Bo", focal="Bo", rerank="distance", hops=1)
    assert near[0].fact.fact == "Bo lives in Paris" and near[0].distance == 1
    reached = graph.expand("Ada", hops=1)
    assert [h.fact.fact for h in reached] == ["Ada works at Acme"]


def test_entity_page(make_graph: MakeGraph) -> None:
    model = ScriptedModel([ada_at("Acme", "2020-01-01"),
                           ada_at("Globex", "2022-06-01", ends="Ada works at Acme")])
    graph = make_graph(model=model, clock=Clock(ts("2024-01-01")))
    graph.ingest("Ada joined Acme.")
    graph.ingest("Ada moved to Globex.")
    page = graph.entity("Ada")
    assert [f.fact for f in page.current] == ["Ada works at Globex"]
    assert [f.fact for f in page.timeline] == ["Ada works at Acme", "Ada works at Globex"]
    assert [f.fact for f in graph.entity("Ada", as_of=ts("2021-01-01")).current] == \
        ["Ada works at Acme"]
    assert page.names[page.current[0].object_id or 0] == "Globex"


def test_export_json_and_graphml(make_graph: MakeGraph) -> None:
    graph = make_graph(model=ScriptedModel([ada_at("Acme", "2020-01-01")]))
    graph.ingest("Ada joined Acme.")
    data = json.loads(json.dumps(to_json(graph)))
    assert [e["name"] for e in data["entities"]] == ["Ada", "Acme"]
    assert data["facts"][0]["predicate"] == "works_at"
    root = ET.fromstring(to_graphml(graph))
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert len(root.findall(".//g:node", ns)) == 2
    (edge,) = root.findall(".//g:edge", ns)
    assert edge.find("g:data[@key='valid_at']", ns).text == "2020-01-01T00:00:00+00:00"  # type: ignore[union-attr]


def test_bad_answer_is_retried_once_then_refused_and_nothing_is_written(
        make_graph: MakeGraph) -> None:
    bad = {"entities": [{"ref": 1, "name": "Ada"}],
           "facts": [{"subject": 1, "predicate": "knows", "object": 7, "fact": "x"}]}
    model = ScriptedModel([bad, bad])
    graph = make_graph(model=model)
    with pytest.raises(StructuredOutputError, match="object must be one of the entity refs"):
        graph.ingest("Ada knows someone.")
    assert len(model.requests) == 2
    assert graph.entities() == [] and graph.episodes() == []


def test_retry_after_a_bad_answer_counts_two_calls(make_graph: MakeGraph) -> None:
    model = ScriptedModel([{"entities": [{"ref": 1, "name": "Ada", "existing": 3}]},
                           ada_at("Acme", "2020-01-01")])
    result = make_graph(model=model).ingest("Ada joined Acme.")
    assert result.llm_calls == 2 and len(result.added) == 1


def test_bad_input_names_the_field(make_graph: MakeGraph) -> None:
    graph = make_graph(model=ScriptedModel([ada_at("Acme", "2020-01-01")]))
    graph.ingest("Ada joined Acme.")
    with pytest.raises(InvalidInputError, match="query"):
        graph.search("  ")
    with pytest.raises(InvalidInputError, match=r"hops must be an int in 0\.\.5"):
        graph.search("Ada", hops=9)
    with pytest.raises(InvalidInputError, match="as_of must be timezone-aware"):
        graph.search("Ada", as_of=datetime(2020, 1, 1))
    with pytest.raises(InvalidInputError, match="focal="):
        graph.search("Ada", rerank="distance")
    with pytest.raises(NotFoundError, match="no entity named 'Zed'"):
        graph.entity("Zed")
    with pytest.raises(InvalidInputError, match="episode is empty"):
        graph.ingest("   ")
    with pytest.raises(UsageError, match="chat model"):
        Graph(graph.storage, ("x",)).ingest("hello")


def test_migrations_are_recorded_and_rows_survive_reopening(
        backend: str, make_graph: MakeGraph, make_storage: Callable[..., Any]) -> None:
    storage = make_storage()
    graph = make_graph(("keep",), storage=storage,
                       model=ScriptedModel([ada_at("Acme", "2020-01-01")]))
    graph.ingest("Ada joined Acme.")
    graph.setup()  # idempotent: the rows stay
    assert [f.fact for f in graph.facts()] == ["Ada works at Acme"]
    if backend == "memory":
        return  # nothing survives closing a :memory: database
    storage.close()
    again = make_graph(("keep",), storage=make_storage())
    assert [f.fact for f in again.facts()] == ["Ada works at Acme"]
    assert [h.fact.fact for h in again.search("Acme")] == ["Ada works at Acme"]


def test_keyword_scores_are_the_retrieval_bm25(make_storage: Callable[..., Any]) -> None:
    """The database sums BM25 (:meth:`GraphRows.keyword`); the scores and the order are those of
    :func:`remem.retrieval.bm25.bm25_scores` over the same postings."""
    from collections import Counter

    from remem.graph.rows import GraphRows
    from remem.retrieval.bm25 import bm25_scores
    from remem.retrieval.tokenize import DefaultTokenizer

    texts = ["Ada works at Acme in Berlin", "Acme builds robots", "Bo likes robots and robots",
             "Ada and Bo met in Paris", "Berlin is large", "张伟在阿里巴巴工作", "Ada Ada Ada"]
    tokenizer = DefaultTokenizer()
    storage = make_storage()
    storage.setup()
    with storage.transaction(True, "kw") as tx:
        rows = GraphRows(tx, "kw", tokenizer)
        ada = rows.insert_entity("Ada", "person", [], 0.0, None)
        ids = [rows.insert_fact(ada.id, "p", None, None, t, None, None, 0.0, None, 1, None).id
               for t in texts]
    for query in ("Ada robots", "robots robots Berlin", "张伟 工作", "Paris"):
        terms = tokenizer.tokenize(query)
        postings = []
        for fact_id, text in zip(ids, texts, strict=True):
            counts = Counter(tokenizer.tokenize(text))
            length = sum(counts.values())
            postings += [(fact_id, ((), f"{fact_id:012d}"), t, counts[t], length)
                         for t in terms if t in counts]
        doc_freq = {t: sum(t in tokenizer.tokenize(x) for x in texts) for t in set(terms)}
        doc_freq = {t: n for t, n in doc_freq.items() if n}
        total = sum(len(tokenizer.tokenize(x)) for x in texts)
        expected = [(i, s) for i, _, s in bm25_scores(postings, doc_freq=doc_freq,
                                                      n_docs=len(texts), total_len=total)]
        with storage.transaction(False, "kw") as tx:
            got = GraphRows(tx, "kw", tokenizer).keyword(terms, None, None, 100)
        assert [i for i, _ in got] == [i for i, _ in expected], query
        assert [round(s, 9) for _, s in got] == [round(s, 9) for _, s in expected], query


def test_max_postings_reads_a_common_terms_best_postings(
        make_storage: Callable[..., Any]) -> None:
    from remem.graph.rows import GraphRows
    from remem.retrieval.tokenize import DefaultTokenizer

    tokenizer = DefaultTokenizer()
    storage = make_storage()
    storage.setup()
    texts = ["robots", "robots robots robots", "robots and many other words here", "cats"]
    with storage.transaction(True, "mp") as tx:
        rows = GraphRows(tx, "mp", tokenizer)
        ada = rows.insert_entity("Ada", "person", [], 0.0, None)
        ids = [rows.insert_fact(ada.id, "p", None, None, t, None, None, 0.0, None, 1, None).id
               for t in texts]
    with storage.transaction(False, "mp") as tx:
        rows = GraphRows(tx, "mp", tokenizer)
        exact = rows.keyword(["robot"], None, None, 10)
        capped = rows.keyword(["robot"], None, None, 10, max_postings=1)
    assert [i for i, _ in exact] == [ids[1], ids[0], ids[2]]
    assert capped == exact[:1]  # the best posting, scored with the whole df


def test_an_entity_created_during_an_ingest_is_found_not_duplicated(
        make_graph: MakeGraph, make_storage: Callable[..., Any]) -> None:
    """The other ingest writes "Ada" while this one waits for its model: resolution runs
    again inside the write, so both facts land on one Ada."""
    storage = make_storage()
    other = make_graph(("race",), storage=storage,
                       model=ScriptedModel([ada_at("Initech", "2020-01-01")]))
    extract = ada_at("Acme", "2020-01-01")

    def slow_model(request: Any) -> Any:
        other.ingest("Ada joined Initech.")  # lands between this ingest's read and write
        return extract(request)

    graph = make_graph(("race",), storage=storage, model=ScriptedModel([slow_model]))
    result = graph.ingest("Ada joined Acme.")
    assert result.resolutions[0] == "exact" and result.created_entities != ()
    assert [e.name for e in graph.entities()].count("Ada") == 1
    assert {f.fact for f in graph.entity("Ada").current} == {"Ada works at Acme",
                                                            "Ada works at Initech"}
