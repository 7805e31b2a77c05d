"""A query written mostly in Chinese weighs keywords by ``Ranking.han_keyword_factor``."""

from __future__ import annotations

import pytest

from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.retrieval.ranking import Ranking
from remem.retrieval.tokenize import han_share
from remem.store import IndexConfig, InMemoryStore, PutOp, SQLiteStore

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
    off = Ranking(han_keyword_factor=1.0)
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
