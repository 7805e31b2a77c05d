"""The mentions stage: its pure scoring, its option errors, and its effect on small real stores
(in memory, SQLite in memory and on file, PostgreSQL; keywords only or the fake embedder),
including that a filter still bounds what takes part and that a name too common is ignored."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.eval.store_retriever import STAGES, stage_ranking
from remem.retrieval.mentions import Mentions, mention_shares, mentioned_names
from remem.retrieval.ranking import Ranking
from remem.retrieval.sessions import Sessions
from remem.store import BaseStore, IndexConfig, InMemoryStore, KeywordConfig, PutOp, SQLiteStore

# -- pure scoring -------------------------------------------------------------------------------


def test_a_candidate_gains_the_query_terms_its_persons_other_candidates_match() -> None:
    query = ["杭州", "朋友", "生日"]
    terms = {1: ["庞明辉", "杭州", "老师"], 2: ["庞明辉", "生日"], 3: ["鲁冬梅", "生日"],
             4: ["球友", "庞明辉"], 5: ["鲁冬梅", "成都"]}
    names = {1: ["庞明辉"], 2: ["庞明辉"], 3: ["鲁冬梅"], 4: ["庞明辉"], 5: ["鲁冬梅"]}
    shares = mention_shares(query, terms, names)
    # 2 matches 生日 itself and gains 杭州 from 1; 1 gains 生日; 4 matches nothing and gains
    # both; 鲁冬梅's messages match only 生日 between them, which 3 already has
    assert shares == pytest.approx({1: 1 / 3, 2: 1 / 3, 4: 2 / 3, 5: 1 / 3})
    assert 3 not in shares


def test_the_best_name_counts_and_no_query_terms_give_nothing() -> None:
    terms = {1: ["a", "x"], 2: ["b", "y"], 3: ["c"]}
    names = {1: ["P"], 2: ["Q"], 3: ["P", "Q"]}
    assert mention_shares(["a", "b", "c"], terms, names) == pytest.approx(
        {1: 1 / 3, 2: 1 / 3, 3: 1 / 3})
    # 3 matches neither term: each of its names brings one, and the best counts, not the sum
    assert mention_shares(["a", "b"], terms, names) == pytest.approx({3: 0.5})
    assert mention_shares([], terms, names) == {}
    assert mention_shares(["a"], terms, {}) == {}


def test_names_are_capitalised_words_and_tagged_chinese_names() -> None:
    assert mentioned_names("I met Caroline at the Louvre") == ("Caroline", "Louvre")
    assert mentioned_names("庞明辉在杭州当英语老师") == ("庞明辉",)
    assert mentioned_names("the weather is nice") == ()


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Mentions(field=""), "Mentions.field must name a value field"),
    (lambda: Mentions(field=3), "Mentions.field must name a value field"),
    (lambda: Mentions(weight=-0.1), "Mentions.weight must be a finite number >= 0"),
    (lambda: Mentions(weight=math.inf), "Mentions.weight must be a finite number >= 0"),
    (lambda: Mentions(weight=True), "Mentions.weight"),
    (lambda: Mentions(max_share=1.5), r"Mentions.max_share must be a finite number within \[0,"),
    (lambda: Mentions(max_share=math.nan), "Mentions.max_share"),
    (lambda: Ranking(mentions=Sessions()), "Ranking.mentions must be a Mentions or None"),
])
def test_bad_options_raise_typed_errors(build: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        build()


def test_stage_ranking_knows_the_stage() -> None:
    assert "mentions" in STAGES
    ranking = stage_ranking(["mentions"])
    assert ranking.mentions == Mentions(field="text")
    assert ranking.staged and stage_ranking([]).mentions is None


# -- on real stores -----------------------------------------------------------------------------

NS = ("pool",)
#: (key, person, text): three people told about in separate messages, linked by name only
POOL = [
    ("m01", "hu", "胡天佑是我堂弟"),
    ("m02", "hu", "胡天佑生日是7月3号"),
    ("m03", "hu", "胡天佑在重庆当会计"),
    ("m04", "lu", "鲁冬梅是我表姐"),
    ("m05", "lu", "鲁冬梅生日是5月21号"),
    ("m06", "lu", "鲁冬梅在成都当医生"),
    ("m07", "pang", "我球友叫庞明辉"),
    ("m08", "pang", "庞明辉在杭州当英语老师"),
    ("m09", "pang", "庞明辉生日是2月6号"),
    ("m10", "me", "我最近在学做饭"),
]
QUERY = "我那个在杭州上班的朋友生日是哪天？"
STAGE = Mentions(max_share=0.5)  # a ten-item pool: each name is in three of them


def _fill(store: BaseStore) -> None:
    store.batch([PutOp(NS, key, {"text": text, "person": person})
                 for key, person, text in POOL])


@pytest.fixture(params=["memory", "sqlite-memory", "sqlite-file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    keyword = KeywordConfig(fields=("text",))
    made: BaseStore
    if request.param == "memory":
        made = InMemoryStore(keyword=keyword)
    else:
        path = ":memory:" if request.param == "sqlite-memory" else tmp_path / "m.db"
        made = SQLiteStore(path, keyword=keyword)
    with made:
        _fill(made)
        yield made


def _keys(store: BaseStore, ranking: Ranking | None, **options: Any) -> list[str]:
    return [hit.key for hit in store.search(NS, query=QUERY, limit=10, mode="keyword",
                                            ranking=ranking, **options)]


def test_the_friend_in_hangzhous_birthday_comes_first(store: BaseStore) -> None:
    plain = _keys(store, None)
    # by keywords alone the birthdays match 生日 alike (the shorter text first), and nothing
    # says which one is the friend in Hangzhou's
    assert plain.index("m09") > plain.index("m05")
    staged = _keys(store, Ranking(mentions=STAGE))
    assert staged.index("m09") < min(staged.index("m02"), staged.index("m05"))
    assert set(staged[:2]) == {"m08", "m09"}
    hit = next(h for h in store.search(NS, query=QUERY, limit=10, mode="keyword",
                                       ranking=Ranking(mentions=STAGE)) if h.key == "m09")
    assert hit.details["mentions"].score == pytest.approx(1 / 5)  # 杭州 of 5 query terms


def test_a_name_in_too_many_items_groups_nothing(store: BaseStore) -> None:
    strict = Ranking(mentions=Mentions(max_share=0.2))  # three of ten items is too many
    assert _keys(store, strict) == _keys(store, None)
    hits = store.search(NS, query=QUERY, limit=10, mode="keyword", ranking=strict)
    assert all("mentions" not in hit.details for hit in hits)


def test_a_person_the_query_names_is_not_grouped_by(store: BaseStore) -> None:
    # the name finds their messages already; grouping by it would lift them all alike
    named = "庞明辉在杭州做什么工作"
    hits = store.search(NS, query=named, limit=10, mode="keyword",
                        ranking=Ranking(mentions=STAGE))
    assert hits and all("mentions" not in hit.details for hit in hits)
    assert [h.key for h in hits] == [h.key for h in store.search(
        NS, query=named, limit=10, mode="keyword")]


def test_a_filter_bounds_what_takes_part(store: BaseStore) -> None:
    # with the Hangzhou message filtered out, nothing lifts the friend's birthday
    ranking = Ranking(mentions=STAGE)
    kept = {"text": {"$ne": "庞明辉在杭州当英语老师"}}
    assert _keys(store, ranking, filter=kept) == _keys(store, None, filter=kept)
    hits = store.search(NS, query=QUERY, limit=10, mode="keyword", ranking=ranking,
                        filter=kept)
    assert hits and all("mentions" not in hit.details for hit in hits)


def _check_scope(made: BaseStore) -> None:
    def shares(store: BaseStore, share: float, **options: Any) -> list[str]:
        hits = store.search(NS, query=QUERY, limit=10, mode="keyword",
                            ranking=Ranking(mentions=Mentions(max_share=share)), **options)
        return [hit.key for hit in hits if "mentions" in hit.details]

    with made as store:
        _fill(store)
        store.batch([PutOp(("poolx",), f"x{i}", {"text": "庞明辉来了"}) for i in range(30)])
        store.batch([PutOp(NS, f"old{i}", {"text": "庞明辉走了"}, ttl=0.001) for i in range(30)])
        time.sleep(0.01)
        assert shares(store, 0.3) and not shares(store, 0.2)
        assert shares(store, 0.3, filter={"person": "pang"})
        store.put((*NS, "sub"), "s1", {"text": "庞明辉又来了"})  # 4 of 11: over 0.3
        assert not shares(store, 0.3) and shares(store, 0.4)


def test_only_live_items_under_the_prefix_count_towards_max_share(tmp_path: Path) -> None:
    """庞明辉 is in 3 of the scope's 10 items: grouped under max_share 0.3, not under 0.2.
    Items outside the prefix (a sibling namespace), expired ones and a filter do not change
    that; an item in a namespace below the prefix does."""
    _check_scope(InMemoryStore(keyword=KEYWORD))
    _check_scope(SQLiteStore(tmp_path / "s.db", keyword=KEYWORD))


def test_only_live_items_under_the_prefix_count_on_postgresql(pg_database: str) -> None:
    from remem.store.postgres import PostgresStore

    store = PostgresStore(pg_database, schema="mentions_scope", keyword=KEYWORD)
    store.setup()
    _check_scope(store)


def test_without_keywords_the_stage_does_nothing(tmp_path: Path) -> None:
    ranking = Ranking(mentions=Mentions(max_share=1.0))
    with InMemoryStore(index=INDEX) as vectors_only, \
            InMemoryStore(index=INDEX, keyword=KEYWORD) as both:
        for store in (vectors_only, both):
            _fill(store)
            store.put(NS, "odd", {"text": 7, "person": "pang"})  # not a string: skipped
        for store, mode in ((vectors_only, "vector"), (both, "vector")):
            hits = store.search(NS, query=QUERY, limit=10, mode=mode, ranking=ranking)
            assert hits and all("mentions" not in hit.details for hit in hits)
        hits = both.search(NS, query=QUERY, limit=20, mode="hybrid", ranking=ranking)
        assert any("mentions" in hit.details for hit in hits)
        assert all("mentions" not in hit.details for hit in hits if hit.key == "odd")


INDEX = IndexConfig(FakeEmbedder(32), fields=("text",))
KEYWORD = KeywordConfig(fields=("text",))
STAGED = Ranking(mentions=STAGE, sessions=Sessions(field="person"))


def _staged_hits(made: BaseStore) -> list[tuple[str, float, Any]]:
    with made as store:
        _fill(store)
        hits = store.search(NS, query=QUERY, limit=10, mode="hybrid", ranking=STAGED)
        return [(h.key, round(h.score, 9), h.details.get("mentions")) for h in hits]


def test_the_stage_ranks_alike_on_every_backend(tmp_path: Path) -> None:
    """In hybrid mode with sessions, the in-memory store and SQLite (in memory and on file)
    give the same keys, scores and shares."""
    results = [_staged_hits(InMemoryStore(index=INDEX, keyword=KEYWORD)),
               _staged_hits(SQLiteStore(":memory:", index=INDEX, keyword=KEYWORD)),
               _staged_hits(SQLiteStore(tmp_path / "m.db", index=INDEX, keyword=KEYWORD))]
    assert results[0] == results[1] == results[2]
    assert sum(share is not None for _, _, share in results[0]) >= 3


def test_the_stage_ranks_alike_on_postgresql(pg_database: str) -> None:
    from remem.store.postgres import PostgresStore

    store = PostgresStore(pg_database, schema="mentions", index=INDEX, keyword=KEYWORD)
    store.setup()
    assert _staged_hits(store) == _staged_hits(InMemoryStore(index=INDEX, keyword=KEYWORD))


def test_weight_zero_changes_no_score(store: BaseStore) -> None:
    plain = [(h.key, h.score) for h in store.search(NS, query=QUERY, limit=10, mode="keyword")]
    zero = [(h.key, h.score) for h in store.search(
        NS, query=QUERY, limit=10, mode="keyword", ranking=Ranking(mentions=Mentions(
            weight=0.0, max_share=0.5)))]
    assert zero == plain


# -- across backends, on random pools ------------------------------------------------------------

PEOPLE = ["庞明辉", "鲁冬梅", "胡天佑", "魏永刚"]
FACTS = ["生日是2月6号", "在杭州当英语老师", "在成都当医生", "是我表姐", "今年32岁", "老家是潍坊的"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pool=st.lists(st.tuples(st.sampled_from(PEOPLE), st.sampled_from(FACTS)), min_size=2,
                     max_size=14),
       asked=st.lists(st.sampled_from(["杭州", "生日", "医生", "表姐", "潍坊", "老师"]),
                      min_size=1, max_size=3),
       share=st.sampled_from([0.3, 0.5, 1.0]))
def test_memory_and_sqlite_rank_alike_with_the_stage(pool: list[tuple[str, str]],
                                                      asked: list[str], share: float) -> None:
    """The in-memory store and SQLite agree on keys, scores and shares: the names' scope
    frequencies (``term_counts``) and the candidates' terms are read alike."""
    query = "我那个" + "的".join(asked) + "是谁"
    ranking = Ranking(mentions=Mentions(max_share=share))
    runs = []
    with InMemoryStore(keyword=KEYWORD) as memory, SQLiteStore(":memory:",
                                                                keyword=KEYWORD) as sqlite:
        for store in (memory, sqlite):
            store.batch([PutOp(NS, f"k{i:02d}", {"text": person + fact})
                         for i, (person, fact) in enumerate(pool)])
            store.put(("other",), "x", {"text": "庞明辉" * 3})  # outside the scope
            runs.append([(h.key, round(h.score, 9), h.details.get("mentions"))
                         for h in store.search(NS, query=query, limit=20, mode="keyword",
                                               ranking=ranking)])
    assert runs[0] == runs[1]
