"""Keyword (BM25) search, hybrid fusion, recency, MMR and event time, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError, UnsupportedError
from remem.retrieval import BM25Params, Ranking, Recency
from remem.store import BaseStore, IndexConfig, KeywordConfig, PutOp, SearchOp
from tests.conformance.conftest import Factory
from tests.conftest import FakeClock

DAY = 86_400.0


def keys(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.key for h in hits]


def test_keyword_search_ranks_by_bm25(store: BaseStore) -> None:
    store.batch([
        PutOp(("u",), "tea", {"text": "green tea with jasmine"}),
        PutOp(("u",), "teas", {"text": "tea tea tea"}),
        PutOp(("u",), "cat", {"text": "the cat sleeps"}),
        PutOp(("u",), "long", {"text": "tea " + "filler words " * 40}),
    ])
    hits = store.search(("u",), query="Tea")
    assert keys(hits) == ["teas", "tea", "long"]  # frequency, then length normalisation
    assert all(h.details["keyword"].rank == i for i, h in enumerate(hits, 1))
    assert all(h.score == h.details["keyword"].score > 0 for h in hits)
    assert store.search(("u",), query="submarine") == []


def test_chinese_and_mixed_text(store: BaseStore) -> None:
    store.batch([
        PutOp(("u",), "dali", {"text": "我下个月要去大理拍婚纱照"}),
        PutOp(("u",), "phone", {"text": "刚买了新的iPhone，拍照效果很好"}),
        PutOp(("u",), "work", {"text": "明天有个meeting，deadline是周五"}),
    ])
    assert keys(store.search(("u",), query="婚纱照在哪里拍")) == ["dali"]
    assert keys(store.search(("u",), query="iphone"))[0] == "phone"
    assert keys(store.search(("u",), query="DEADLINE 周五")) == ["work"]
    # full-width letters fold to ASCII
    assert keys(store.search(("u",), query="ｉＰｈｏｎｅ")) == ["phone"]


def test_filter_and_prefix_are_inside_the_candidate_query(store: BaseStore) -> None:
    ops = [PutOp(("u", "a"), f"x{i}", {"text": "tea " * (i + 1), "keep": i % 10 == 0})
           for i in range(60)]
    ops += [PutOp(("u", "b"), f"y{i}", {"text": "tea tea tea tea", "keep": True})
            for i in range(20)]
    store.batch(ops)
    hits = store.search(("u", "a"), query="tea", filter={"keep": True}, limit=10)
    assert sorted(keys(hits)) == sorted(f"x{i}" for i in range(0, 60, 10))
    assert all(h.namespace == ("u", "a") for h in hits)


def test_filter_that_rejects_the_best_candidates_pages_past_them(store: BaseStore) -> None:
    # the SQL stores check a value filter on the best-scored candidates a page at a time:
    # here the 280 best fail it, so the answer lies several pages down
    store.batch([PutOp(("u",), f"x{n:03}", {"text": "tea " * (n + 1), "keep": n < 20})
                 for n in range(300)])
    first = store.search(("u",), query="tea", filter={"keep": True}, limit=5)
    assert keys(first) == ["x019", "x018", "x017", "x016", "x015"]
    assert [h.details["keyword"].rank for h in first] == [1, 2, 3, 4, 5]
    second = store.search(("u",), query="tea", filter={"keep": True}, limit=5, offset=5)
    assert keys(second) == ["x014", "x013", "x012", "x011", "x010"]
    every = store.search(("u",), query="tea", filter={"keep": True}, limit=100)
    assert keys(every) == [f"x{n:03}" for n in range(19, -1, -1)]
    assert store.search(("u",), query="tea", filter={"keep": "never"}, limit=5) == []


def test_filter_does_not_change_scores(store: BaseStore) -> None:
    store.batch([PutOp(("u",), f"k{i}", {"text": f"tea {'milk ' * i}", "n": i})
                 for i in range(8)])
    every = {h.key: h.score for h in store.search(("u",), query="tea milk", limit=20)}
    some = {h.key: h.score for h in store.search(("u",), query="tea milk", limit=20,
                                                 filter={"n": {"$gte": 4}})}
    assert set(some) == {"k4", "k5", "k6", "k7"}
    assert all(some[k] == pytest.approx(every[k]) for k in some)


def test_statistics_are_scoped_to_the_prefix(store: BaseStore) -> None:
    store.batch([PutOp(("a",), "doc", {"text": "rare word here"}),
                 PutOp(("a",), "other", {"text": "something else"})])
    alone = store.search(("a",), query="rare")[0].score
    store.batch([PutOp(("b",), f"k{i}", {"text": "rare rare"}) for i in range(20)])
    assert store.search(("a",), query="rare")[0].score == pytest.approx(alone)
    assert store.search((), query="rare")[0].score != pytest.approx(alone)


def test_updates_deletes_and_expiry_leave_the_index(store: BaseStore, clock: FakeClock
                                                    ) -> None:
    store.put(("u",), "k", {"text": "old words"})
    store.put(("u",), "k", {"text": "new words"})
    assert store.search(("u",), query="old") == []
    assert keys(store.search(("u",), query="new")) == ["k"]
    store.delete(("u",), "k")
    assert store.search(("u",), query="new") == []
    store.put(("u",), "t", {"text": "fleeting"}, ttl=10)
    clock.advance(11)
    assert store.search(("u",), query="fleeting") == []


def test_failed_batch_leaves_no_terms(store: BaseStore) -> None:
    with pytest.raises(UnsupportedError):
        store.batch([PutOp(("u",), "k", {"text": "ghost"}), SearchOp(("u",), query="x",
                                                                     mode="vector")])
    assert store.search(("u",), query="ghost") == []


def test_read_your_writes_for_keyword_search(store: BaseStore) -> None:
    results = store.batch([PutOp(("u",), "k", {"text": "kiwi"}), SearchOp(("u",), query="kiwi")])
    assert keys(results[1]) == ["k"]  # type: ignore[arg-type]


def test_keyword_fields_and_opt_out(make_store: Factory) -> None:
    store = make_store(keyword=KeywordConfig(fields=("title",)))
    store.put(("u",), "a", {"title": "apple pie", "body": "banana"})
    store.put(("u",), "b", {"title": "banana", "body": "apple"}, index=False)
    assert keys(store.search(("u",), query="apple")) == ["a"]
    assert store.search(("u",), query="banana") == []


def test_whole_value_keyword_text_is_its_strings(store: BaseStore) -> None:
    store.put(("u",), "a", {"title": "Paris", "tags": ["travel", {"city": "Lyon"}], "n": 42})
    assert keys(store.search(("u",), query="lyon")) == ["a"]
    assert store.search(("u",), query="title") == []  # keys are not text


def test_modes_need_their_index(make_store: Factory) -> None:
    plain = make_store()
    with pytest.raises(UnsupportedError, match="IndexConfig"):
        plain.search(("u",), query="x", mode="hybrid")
    vectors_only = make_store(index=IndexConfig(FakeEmbedder(16)), keyword=False)
    with pytest.raises(UnsupportedError, match="keyword=False"):
        vectors_only.search(("u",), query="x", mode="keyword")
    assert vectors_only.search(("u",), query="x") == []  # auto: vector only
    with pytest.raises(InvalidInputError, match="mode must be one of"):
        SearchOp(("u",), query="x", mode="fuzzy")  # type: ignore[arg-type]


def hybrid_store(make_store: Factory) -> BaseStore:
    store = make_store(index=IndexConfig(FakeEmbedder(64), fields=("text",)))
    store.batch([
        PutOp(("u",), "both", {"text": "green tea in kyoto"}),
        PutOp(("u",), "tea", {"text": "green tea"}),
        PutOp(("u",), "kyoto", {"text": "kyoto temples"}),
        PutOp(("u",), "none", {"text": "motorbike repairs"}),
    ])
    return store


def test_hybrid_fuses_both_signals_with_details(make_store: Factory) -> None:
    store = hybrid_store(make_store)
    hits = store.search(("u",), query="green tea kyoto", limit=4)
    assert hits[0].key == "both"
    assert set(hits[0].details) == {"keyword", "vector"}
    assert hits[0].details["keyword"].rank == 1
    assert 0 <= hits[-1].score <= hits[0].score <= 1.0  # type: ignore[operator]
    rrf = store.search(("u",), query="green tea kyoto", limit=4, ranking=Ranking(fusion="rrf"))
    assert rrf[0].key == "both" and 0 < rrf[-1].score < rrf[0].score <= 1.0  # type: ignore[operator]
    # an item only one signal found still carries that signal's rank
    by_key = {h.key: h for h in hits}
    assert "keyword" not in by_key["none"].details
    assert by_key["none"].details["vector"].rank >= 1


def test_weighted_fusion_and_signal_weights(make_store: Factory) -> None:
    store = hybrid_store(make_store)
    weighted = store.search(("u",), query="green tea kyoto",
                            ranking=Ranking(fusion="weighted"), limit=4)
    assert weighted[0].key == "both"
    assert weighted[1].score < weighted[0].score <= 1.0  # type: ignore[operator]
    keyword_only = store.search(("u",), query="kyoto", limit=4,
                                ranking=Ranking(weights={"keyword": 1.0, "vector": 0.0}))
    assert [h.key for h in keyword_only][:2] in (["kyoto", "both"], ["both", "kyoto"])


def test_min_score_drops_results_less_relevant(make_store: Factory) -> None:
    store = hybrid_store(make_store)
    every = store.search(("u",), query="green tea kyoto", limit=4)
    floor = sorted((h.relevance or 0.0 for h in every), reverse=True)[1]
    kept = store.search(("u",), query="green tea kyoto", limit=4,
                        ranking=Ranking(min_score=floor))
    assert keys(kept) == [h.key for h in every if (h.relevance or 0.0) >= floor]
    assert 2 <= len(kept) < len(every)


def test_recency_prefers_newer_events_relative_to_now(store: BaseStore) -> None:
    base = datetime(2023, 5, 1, tzinfo=UTC)
    store.batch([
        PutOp(("u",), "old", {"text": "moved to Berlin"}, event_at=base),
        PutOp(("u",), "new", {"text": "moved to Berlin"}, event_at=base + timedelta(days=200)),
    ])
    plain = store.search(("u",), query="berlin")
    assert plain[0].score == pytest.approx(plain[1].score)
    recent = store.search(("u",), query="berlin", ranking=Ranking(
        recency=Recency(half_life=timedelta(days=30), weight=0.5,
                        now=base + timedelta(days=210))))
    assert keys(recent) == ["new", "old"]
    assert recent[0].details["recency"].rank == 1
    assert recent[0].details["recency"].score > recent[1].details["recency"].score
    # "now" before both events: ages clamp to zero, nothing changes order by recency
    early = store.search(("u",), query="berlin", ranking=Ranking(
        recency=Recency(weight=0.5, now=base - timedelta(days=1))))
    assert early[0].score == pytest.approx(early[1].score)


def test_event_time_is_stored_and_filters_ranges(store: BaseStore, clock: FakeClock) -> None:
    may = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    store.batch([
        PutOp(("u",), "may", {"text": "trip"}, event_at=may),
        PutOp(("u",), "june", {"text": "trip"}, event_at=may + timedelta(days=30)),
        PutOp(("u",), "undated", {"text": "trip"}),
    ])
    item = store.get(("u",), "may")
    assert item is not None and item.event_at == may and item.effective_time == may
    undated = store.get(("u",), "undated")
    assert undated is not None and undated.event_at is None
    assert undated.effective_time == undated.created_at
    window = {"event_after": may, "event_before": may + timedelta(days=10)}
    assert keys(store.search(("u",), **window)) == ["may"]  # type: ignore[arg-type]
    assert keys(store.search(("u",), query="trip", **window)) == ["may"]  # type: ignore[arg-type]
    assert keys(store.search(("u",), query="trip", event_after=clock() - 1)) == ["undated"]
    with pytest.raises(InvalidInputError, match="event_at must be timezone-aware"):
        PutOp(("u",), "k", {}, event_at=datetime(2023, 1, 1))


def test_mmr_spreads_near_duplicates(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(FakeEmbedder(64), fields=("text",)))
    store.batch([
        PutOp(("u",), "a1", {"text": "tea tea green tea"}),
        PutOp(("u",), "a2", {"text": "tea tea green tea"}),
        PutOp(("u",), "a3", {"text": "tea tea green tea"}),
        PutOp(("u",), "b", {"text": "green tea ceremony in kyoto"}),
    ])
    plain = keys(store.search(("u",), query="green tea", limit=2))
    diverse = keys(store.search(("u",), query="green tea", limit=2, ranking=Ranking(mmr=0.3)))
    assert plain[1].startswith("a")
    assert diverse[0].startswith("a") and diverse[1] == "b"
    keyword_only = make_store()
    with pytest.raises(UnsupportedError, match="mmr"):
        keyword_only.search(("u",), query="tea", ranking=Ranking(mmr=0.5))


def test_ranking_validation() -> None:
    for bad in ({"fusion": "max"}, {"rrf_k": 0}, {"candidates": 0}, {"candidates": True},
                {"mmr": 1.5}, {"mmr": "0.5"}, {"weights": {"graph": 1.0}}, {"weights": None},
                {"weights": {"keyword": "1"}}, {"min_score": float("nan")},
                {"min_score": "1"}, {"min_score": 1.5}, {"min_score": -0.1},
                {"recency": 0.5}):
        with pytest.raises(InvalidInputError, match="Ranking"):
            Ranking(**bad)  # type: ignore[arg-type]
    for bad_recency in ({"half_life": 0}, {"half_life": "x"}, {"weight": "a"},
                        {"weight": None}, {"now": "2024"}, {"now": float("nan")}):
        with pytest.raises(InvalidInputError, match="Recency"):
            Recency(**bad_recency)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"BM25Params\.k1"):
        BM25Params(k1="1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"KeywordConfig\.bm25"):
        KeywordConfig(bm25="x")  # type: ignore[arg-type]
    for bad_index in ("text", [1], True, [""]):
        with pytest.raises(InvalidInputError, match="index must be"):
            PutOp(("u",), "k", {}, index=bad_index)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="timezone-aware"):
        Recency(now=datetime(2023, 1, 1))


def test_embedding_cache_never_embeds_a_text_twice(make_store: Factory) -> None:
    embedder = FakeEmbedder(16)
    store = make_store(index=IndexConfig(embedder, fields=("text",)))
    store.batch([PutOp(("u",), "a", {"text": "same"}), PutOp(("u",), "b", {"text": "same"})])
    store.put(("u",), "c", {"text": "same"})
    store.search(("u",), query="same")
    store.search(("u",), query="same")
    assert embedder.texts_embedded == 2  # one document, one query
    assert store.embed_counts == {"embedded": 2, "cached": 3}


def test_reindex_indexes_what_was_left_out_and_keeps_the_rest(make_store: Factory,
                                                              clock: FakeClock) -> None:
    embedder = FakeEmbedder(16)
    store = make_store(index=IndexConfig(embedder, fields=("text",)))
    store.put(("u",), "hidden", {"text": "secret garden"}, index=False, ttl=100,
              event_at=datetime(2023, 5, 1, tzinfo=UTC))
    store.put(("u",), "shown", {"text": "open field"})
    before = store.get(("u",), "hidden", refresh_ttl=False)
    assert store.search(("u",), query="garden", mode="keyword") == []
    clock.advance(5)
    assert store.reindex(("u",), batch_size=1) == 2
    after = store.get(("u",), "hidden", refresh_ttl=False)
    assert after == before  # value, timestamps, expiry and event time kept
    assert keys(store.search(("u",), query="garden", mode="keyword")) == ["hidden"]
    assert keys(store.search(("u",), query="secret garden", mode="vector"))[0] == "hidden"
    assert embedder.texts_embedded == 3  # "open field" came from the cache
    assert store.ttl_of(("u",), "hidden") == 100


def test_put_search_put_in_one_batch_keeps_the_vector_cache_current(make_store: Factory
                                                                    ) -> None:
    # a search mid-batch must not freeze the cache before the batch's later writes
    store = make_store(index=IndexConfig(FakeEmbedder(16)), keyword=False)
    store.put(("n",), "b", {"text": "zebra"})
    store.batch([PutOp(("n",), "a", {"text": "apple"}), SearchOp(("n",), query="apple"),
                 PutOp(("n",), "b", {"text": "apple pie"})])
    hits = store.search(("n",), query="apple pie", limit=2)
    assert keys(hits) == ["b", "a"]
    fresh = make_store(index=IndexConfig(FakeEmbedder(16)), keyword=False)
    fresh.batch([PutOp(("n",), "a", {"text": "apple"}), PutOp(("n",), "b", {"text": "apple pie"})])
    expected = fresh.search(("n",), query="apple pie", limit=2)
    assert [h.score for h in hits] == pytest.approx([h.score for h in expected], abs=1e-6)


def test_fused_pages_never_reach_past_the_candidates(make_store: Factory) -> None:
    store = make_store(index=IndexConfig(FakeEmbedder(16), fields=("text",)))
    store.batch([PutOp(("u",), f"k{i:02d}", {"text": f"tea {'green ' * (i % 5)}{i}"})
                 for i in range(40)])
    ranking = Ranking(candidates=30)
    one_go = keys(store.search(("u",), query="green tea", limit=30, ranking=ranking))
    pages = [k for offset in range(0, 30, 10) for k in keys(store.search(
        ("u",), query="green tea", limit=10, offset=offset, ranking=ranking))]
    assert pages == one_go and len(set(pages)) == 30
    with pytest.raises(InvalidInputError, match=r"Ranking\.candidates"):
        store.search(("u",), query="green tea", limit=10, offset=25, ranking=ranking)


def test_conditional_put_and_reindex_never_overwrite_newer_writes(store: BaseStore,
                                                                  clock: FakeClock) -> None:
    store.put(("n",), "k", {"v": 1})
    read = store.get(("n",), "k")
    assert read is not None
    clock.advance(1)
    store.put(("n",), "k", {"v": 2})
    store.batch([PutOp(("n",), "k", {"v": "stale"}, if_updated_at=read.updated_at.timestamp())])
    assert store.get(("n",), "k").value == {"v": 2}  # type: ignore[union-attr]
    store.batch([PutOp(("n",), "gone", {"v": 0}, if_updated_at=read.updated_at.timestamp())])
    assert store.get(("n",), "gone") is None
    current = store.get(("n",), "k")
    assert current is not None
    store.batch([PutOp(("n",), "k", {"v": 3}, if_updated_at=current.updated_at.timestamp())])
    assert store.get(("n",), "k").value == {"v": 3}  # type: ignore[union-attr]

    store.batch([PutOp(("r",), f"k{i:04d}", {"v": 0}) for i in range(1000)])

    def meddle(done: int) -> None:
        if done == 500:  # another writer, between two reindex batches, a second later
            clock.advance(1)
            store.put(("r",), "k0700", {"v": "new"})
            store.delete(("r",), "k0800")

    store.reindex(("r",), batch_size=500, progress=meddle)
    assert store.get(("r",), "k0700").value == {"v": "new"}  # type: ignore[union-attr]
    assert store.get(("r",), "k0800") is None
