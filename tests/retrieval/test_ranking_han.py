"""A query written mostly in Chinese weighs keywords by ``Ranking.han_keyword_factor`` and fuses
them as coverage of the query (``Ranking.keyword_coverage``); other queries rank as before."""

from __future__ import annotations

import math
from typing import Any

import pytest

from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.retrieval.bm25 import KeywordScores, bm25_scores
from remem.retrieval.ranking import Candidate, Ranking, rank_candidates
from remem.retrieval.tokenize import han_share
from remem.store import BaseStore, IndexConfig, InMemoryStore, PutOp, SQLiteStore

TEXTS = ["我每天早上都喝绿茶", "我住在柏林，离公司很近", "周末我喜欢去爬山", "我对芒果过敏",
         "我的猫叫团子", "我在一家做机器人的公司上班", "下个月我要去上海出差", "我喜欢喝咖啡"]


def test_han_share_counts_han_characters_among_letters_and_digits() -> None:
    assert han_share("我住在哪里？") == 1.0
    assert han_share("where do I live?") == 0.0
    assert han_share("") == 0.0
    assert han_share("我的 MacBook") == pytest.approx(2 / 9)
    assert han_share("我用MacBook写代码") == pytest.approx(5 / 12)


def test_for_query_scales_the_keyword_weight_of_chinese_queries_only() -> None:
    ranking = Ranking(weights={"keyword": 2.0, "vector": 1.0})
    chinese = ranking.for_query("我对什么过敏？")
    assert chinese.weights == {"keyword": 1.0, "vector": 1.0}
    assert chinese.for_query("我对什么过敏？") == chinese  # applied once
    assert ranking.for_query("what am I allergic to?") is ranking
    assert ranking.for_query("我的 MacBook Pro 是哪一年买的") is ranking  # mostly Latin
    off = Ranking(han_keyword_factor=1.0, keyword_coverage="never")
    assert off.for_query("我对什么过敏？") is off


@pytest.mark.parametrize("bad", [-0.5, float("nan"), float("inf"), "half", True])
def test_a_bad_factor_is_a_typed_error_naming_the_field(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="han_keyword_factor"):
        Ranking(han_keyword_factor=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_chinese_query_with_factor_zero_ranks_by_meaning_alone(backend: str,
                                                                 tmp_path: object) -> None:
    """Factor 0 drops the keyword signal of a Chinese query from fusion, so hybrid search
    ranks exactly as vector search; an English query keeps both signals."""
    index = IndexConfig(FakeEmbedder(32), fields=("text",))
    store = (InMemoryStore(index=index) if backend == "memory"
             else SQLiteStore(f"{tmp_path}/s.db", index=index))
    with store:
        store.batch([PutOp(("u",), f"k{i}", {"text": text}) for i, text in enumerate(TEXTS)])
        store.batch([PutOp(("u",), "en", {"text": "green tea every morning"})])

        def hits(query: str, mode: str, factor: float) -> list[tuple[str, float]]:
            return [(hit.key, round(hit.score, 9)) for hit in store.search(
                ("u",), query=query, limit=9, mode=mode,  # type: ignore[arg-type]
                ranking=Ranking(han_keyword_factor=factor))]

        query = "我每天喝什么茶"
        by_meaning = [key for key, _ in hits(query, "vector", 0.0)]
        assert [key for key, _ in hits(query, "hybrid", 0.0)] == by_meaning
        assert hits(query, "hybrid", 0.0) != hits(query, "hybrid", 1.0)  # keywords count
        english = "green tea"
        assert hits(english, "hybrid", 0.0) == hits(english, "hybrid", 1.0)


def test_for_query_turns_coverage_on_for_chinese_queries_only() -> None:
    ranking = Ranking()
    assert ranking.for_query("我对什么过敏？").keyword_coverage == "always"
    assert ranking.for_query("what am I allergic to?") is ranking  # "han" stays: off
    coverage_only = Ranking(han_keyword_factor=1.0)
    chinese = coverage_only.for_query("我对什么过敏？")
    assert (chinese.keyword_coverage, chinese.weights) == ("always", ranking.weights)
    never = Ranking(keyword_coverage="never").for_query("我对什么过敏？")
    assert (never.keyword_coverage, never.weights["keyword"]) == ("never", 0.5)


@pytest.mark.parametrize("bad", ["chinese", None, True])
def test_a_bad_coverage_is_a_typed_error_naming_the_field(bad: object) -> None:
    with pytest.raises(InvalidInputError, match=r"keyword_coverage.*'han', 'always' or 'never'"):
        Ranking(keyword_coverage=bad)  # type: ignore[arg-type]


def test_bm25_carries_the_idf_of_the_query_terms_found_in_scope() -> None:
    key = ((("u",), "a"))
    postings = [(1, key, "绿茶", 1, 4), (2, (("u",), "b"), "早上", 2, 6)]
    scores = bm25_scores(postings, doc_freq={"绿茶": 1, "早上": 3, "柏林": 0}, n_docs=10,
                         total_len=50)
    idf = [math.log(1 + (10 - df + 0.5) / (df + 0.5)) for df in (1, 3)]
    assert isinstance(scores, KeywordScores)
    assert scores.query_idf == pytest.approx(sum(idf))  # 柏林 occurs nowhere: not counted
    # an item of average length holding each term once scores exactly the query's idf
    whole = bm25_scores([(1, key, "绿茶", 1, 5), (1, key, "早上", 1, 5)],
                        doc_freq={"绿茶": 1, "早上": 3}, n_docs=10, total_len=50)
    assert whole[0][2] == pytest.approx(whole.query_idf)
    assert bm25_scores([], doc_freq={}, n_docs=0, total_len=0).query_idf == 0.0


def _key(name: str) -> tuple[tuple[str, ...], str]:
    return (("u",), name)


def test_coverage_scores_a_keyword_match_by_how_much_of_the_query_it_covers() -> None:
    """The best keyword match covers a fifth of the query: min-max gives it full marks and it
    passes the best vector match; as coverage it adds a fifth of the keyword weight."""
    keyword = KeywordScores([(1, _key("weak"), 2.0), (2, _key("weaker"), 1.0),
                             (3, _key("weakest"), 0.5)], query_idf=10.0)
    vector: list[Candidate] = [(4, _key("answer"), 0.9), (1, _key("weak"), 0.5),
                               (3, _key("weakest"), 0.1)]
    signals = {"keyword": keyword, "vector": vector}

    def ranked(ranking: Ranking) -> dict[str, float]:
        return {r.sort_key[1]: r.score for r in rank_candidates(signals, ranking, needed=9)}

    minmax = ranked(Ranking(keyword_coverage="never"))
    assert max(minmax, key=minmax.__getitem__) == "weak"
    assert minmax["weak"] == pytest.approx((1.0 + 0.5) / 2)
    coverage = ranked(Ranking(keyword_coverage="always"))
    assert max(coverage, key=coverage.__getitem__) == "answer"
    assert coverage["weak"] == pytest.approx((0.15 + 0.5) / 2)  # (2 - 0.5) / 10
    assert coverage["weakest"] == pytest.approx(0.0)  # the weakest candidate still scores 0
    # "han" unresolved (no for_query: e.g. graph search) is off
    assert ranked(Ranking()) == minmax
    # one keyword candidate (no spread): its own share of the query
    alone = {r.sort_key[1]: r.score for r in rank_candidates(
        {"keyword": KeywordScores([(1, _key("weak"), 2.0)], query_idf=10.0),
         "vector": vector}, Ranking(keyword_coverage="always"), needed=9)}
    assert alone["weak"] == pytest.approx((0.2 + 0.5) / 2)


def test_coverage_needs_the_query_idf() -> None:
    """A keyword list without the query's statistics (a plain list) fuses by min-max."""
    vector: list[Candidate] = [(2, _key("b"), 0.9), (1, _key("a"), 0.1)]
    plain: list[Candidate] = [(1, _key("a"), 2.0), (2, _key("b"), 1.0)]
    on = rank_candidates({"keyword": plain, "vector": vector},
                         Ranking(keyword_coverage="always"), needed=9)
    off = rank_candidates({"keyword": plain, "vector": vector},
                          Ranking(keyword_coverage="never"), needed=9)
    assert [(r.item_id, r.score) for r in on] == [(r.item_id, r.score) for r in off]


# LoCoMo-style turns and questions: English keeps min-max fusion, bit for bit
TURNS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That's amazing! I painted a sunrise over the lake last weekend.",
    "Caroline: I'm researching adoption agencies, I'd love to be a mom.",
    "Melanie: We went camping with the kids at the beach in June.",
    "Caroline: My grandma gave me this necklace when I was a kid in Sweden.",
    "Melanie: I ran a charity race for mental health on Saturday.",
    "Caroline: 我上个月开始学中文了，老师很有耐心。",
]
QUESTIONS = ["When did Caroline go to the LGBTQ support group?",
             "What did Melanie paint recently?", "Where did Melanie camp with her kids?",
             "What did Caroline research?", "Where is Caroline's necklace from?"]


def _store(backend: str, tmp_path: Any, request: pytest.FixtureRequest) -> BaseStore:
    index = IndexConfig(FakeEmbedder(32), fields=("text",))
    if backend == "memory":
        return InMemoryStore(index=index)
    if backend == "sqlite":
        return SQLiteStore(f"{tmp_path}/s.db", index=index)
    from remem.store.postgres import PostgresStore

    return PostgresStore(request.getfixturevalue("pg_database"), index=index)


def _hits(store: BaseStore, query: str, ranking: Ranking) -> list[tuple[str, float]]:
    return [(hit.key, hit.score) for hit in store.search(("u",), query=query, limit=7,
                                                         mode="hybrid", ranking=ranking)]


def test_english_queries_rank_exactly_as_with_coverage_off(tmp_path: Any,
                                                           request: pytest.FixtureRequest
                                                           ) -> None:
    old = Ranking(han_keyword_factor=1.0, keyword_coverage="never")
    with _store("sqlite", tmp_path, request) as store:
        store.batch([PutOp(("u",), f"D1:{i}", {"text": t}) for i, t in enumerate(TURNS)])
        for question in QUESTIONS:
            assert _hits(store, question, Ranking()) == _hits(store, question, old)
        chinese = "她上个月开始学什么了？老师有耐心吗"
        assert _hits(store, chinese, Ranking()) != _hits(store, chinese, old)


@pytest.mark.parametrize("backend", ["memory", "postgres"])
def test_coverage_ranks_chinese_queries_the_same_on_every_backend(
        backend: str, tmp_path: Any, request: pytest.FixtureRequest) -> None:
    """The query's idf comes from each backend's corpus statistics: scores must still match
    the SQLite file's bit for bit (a filter narrows the candidates, not the statistics)."""
    queries = ["我每天喝什么茶", "我对什么水果过敏", "我下个月去哪里出差"]

    def run(store: BaseStore) -> list[list[tuple[str, float]]]:
        with store:
            store.batch([PutOp(("u",), f"k{i}", {"text": t, "n": i})
                         for i, t in enumerate(TEXTS)])
            return [_hits(store, q, Ranking()) for q in queries] + [
                [(hit.key, hit.score) for hit in store.search(
                    ("u",), query=q, limit=5, filter={"n": {"$gte": 2}}, mode="hybrid")]
                for q in queries]

    expected = run(_store("sqlite", tmp_path, request))
    assert run(_store(backend, tmp_path, request)) == expected
