"""The neighbouring-turns stage: its pure scoring, its option errors, and its effect on small
real stores (in memory, SQLite in memory and on file; the fake embedder or keywords only),
including that a filter and a time range still bound what it lifts, and that rankings without
it are bit-identical to what they were before turns carried their order."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.eval.store_retriever import STAGES, stage_ranking
from remem.retrieval.neighbours import Neighbours, Shares, neighbour_shares, position_of
from remem.retrieval.ranking import Ranking, rank_candidates
from remem.retrieval.sessions import Sessions
from remem.retrieval.speakers import Speakers
from remem.retrieval.timing import QuestionTurns, Timing
from remem.store import BaseStore, IndexConfig, InMemoryStore, KeywordConfig, PutOp, SQLiteStore

# -- pure scoring -------------------------------------------------------------------------------

POSITIONS: dict[int, Any] = {1: ("s1", 1), 2: ("s1", 2), 3: ("s1", 3), 4: ("s2", 1),
                             5: ("s1", 5)}


def test_shares_come_from_the_best_adjacent_turn_of_the_same_session() -> None:
    scores = {1: 0.9, 2: 0.1, 3: 0.4, 4: 0.8, 5: 0.7}
    shares = neighbour_shares(scores, POSITIONS, Neighbours(before=1, after=1))
    # 2 sits between 1 (0.9) and 3 (0.4); 3 after 2; 1 before 2; 4 is alone in its session;
    # 5 is two turns from 3, so not adjacent
    assert shares == {1: 0.1, 2: 0.9, 3: 0.1}


def test_before_and_after_choose_the_side_that_lends() -> None:
    scores = {1: 0.9, 2: 0.1, 3: 0.4}
    assert neighbour_shares(scores, POSITIONS, Neighbours(before=1, after=0)) == {
        2: 0.9, 3: 0.1}
    assert neighbour_shares(scores, POSITIONS, Neighbours(before=0, after=1)) == {
        1: 0.1, 2: 0.4}
    # two turns on each side: 3 also borrows from 1, and 5 from 3
    wide = neighbour_shares({**scores, 5: 0.2}, POSITIONS, Neighbours(before=2, after=2))
    assert wide == {1: 0.4, 2: 0.9, 3: 0.9, 5: 0.4}


def test_top_limits_the_lenders_and_negative_scores_lend_nothing() -> None:
    scores = {1: 0.9, 2: 0.1, 3: 0.4}
    assert neighbour_shares(scores, POSITIONS, Neighbours(before=1, top=1)) == {2: 0.9}
    assert neighbour_shares({1: -0.5, 2: -0.2}, POSITIONS, Neighbours(before=1)) == {}


def test_position_needs_a_scalar_session_and_a_whole_order() -> None:
    stage = Neighbours()
    assert position_of({"session": 2, "turn": 3}, stage) == (2, 3)
    assert position_of({"session": "a", "turn": 3.0}, stage) == ("a", 3)
    for value in ({"session": 2}, {"turn": 3}, {"session": [1], "turn": 1},
                  {"session": 1, "turn": 1.5}, {"session": 1, "turn": True},
                  {"session": True, "turn": 1}, "text"):
        assert position_of(value, stage) is None


def test_shares_add_their_weight_times_the_neighbours_own_score() -> None:
    """A Shares signal is not min-max normalised: the lift is weight x the neighbour's score."""
    signals = {"keyword": [(1, (("c",), "a"), 2.0), (2, (("c",), "b"), 1.0),
                           (3, (("c",), "c"), 0.5)]}
    shares = Shares([(2, (("c",), "b"), 1.0), (3, (("c",), "c"), 0.5)])
    ranked = rank_candidates(signals, Ranking(), needed=3,
                             boosts={"neighbours": (0.5, shares)})
    # one signal: fused scores are the raw ones (best 2.0); 2 gains 2.0 x 0.5 x 1.0, 3 half that
    assert [(r.item_id, r.score) for r in ranked] == [(1, 2.0), (2, 2.0), (3, 1.0)]


# -- option errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Neighbours(field=""), "Neighbours.field must name a value field"),
    (lambda: Neighbours(order=3), "Neighbours.order must name a value field"),
    (lambda: Neighbours(weight=-0.1), "Neighbours.weight must be a finite number >= 0"),
    (lambda: Neighbours(weight=math.nan), "Neighbours.weight"),
    (lambda: Neighbours(before=-1), "Neighbours.before must be an int >= 0"),
    (lambda: Neighbours(after=1.5), "Neighbours.after must be an int >= 0"),
    (lambda: Neighbours(before=0, after=0), "both 0, so no turn would lend"),
    (lambda: Neighbours(top=0), "Neighbours.top must be an int >= 1 or None"),
    (lambda: Ranking(neighbours=Sessions()), "Ranking.neighbours must be a Neighbours or None"),
])
def test_bad_options_raise_typed_errors(build: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        build()


def test_stage_ranking_knows_the_stage() -> None:
    assert "neighbours" in STAGES
    ranking = stage_ranking(["neighbours"])
    assert ranking.neighbours == Neighbours(field="session", order="turn")
    assert ranking.staged and stage_ranking([]).neighbours is None


# -- on real stores -----------------------------------------------------------------------------

NS = ("conv",)
MAY, JUNE = datetime(2023, 5, 8, tzinfo=UTC), datetime(2023, 6, 9, tzinfo=UTC)
#: (key, session, turn, speaker, text, when)
CHAT = [
    ("D1:1", 1, 1, "Caroline", "What got you into running marathons?", MAY),
    ("D1:2", 1, 2, "Melanie", "My dad took me along when I was ten, every weekend", MAY),
    ("D1:3", 1, 3, "Caroline", "That is lovely", MAY),
    ("D2:1", 2, 1, "Melanie", "I ran a race in the rain", JUNE),
    ("D2:2", 2, 2, "Caroline", "Marathons sound hard; my knees hate running", JUNE),
    ("D2:3", 2, 3, "Melanie", "Pottery class was fun this week", JUNE),
]
QUERY = "What got Melanie into running marathons, and who took her?"


@pytest.fixture(params=["memory", "sqlite-memory", "sqlite-file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    keyword = KeywordConfig(fields=("text",))
    index = IndexConfig(FakeEmbedder(32), fields=("text",))
    made: BaseStore
    if request.param == "memory":
        made = InMemoryStore(index=index, keyword=keyword)
    else:
        path = ":memory:" if request.param == "sqlite-memory" else tmp_path / "n.db"
        made = SQLiteStore(path, index=index, keyword=keyword)
    with made:
        made.batch([PutOp(NS, key, {"text": text, "session": session, "turn": turn,
                                    "speaker": speaker}, event_at=when)
                    for key, session, turn, speaker, text, when in CHAT])
        yield made


def _keys(store: BaseStore, ranking: Ranking | None, mode: Any = "keyword",
          **options: Any) -> list[str]:
    return [hit.key for hit in store.search(NS, query=QUERY, limit=10, mode=mode,
                                            ranking=ranking, **options)]


def test_the_answer_after_a_matching_question_climbs(store: BaseStore) -> None:
    plain = _keys(store, None)
    assert plain.index("D1:2") > plain.index("D1:1")
    assert plain.index("D1:2") > plain.index("D2:2")
    staged = Ranking(neighbours=Neighbours(weight=0.8, before=1, after=0))
    lifted = _keys(store, staged)
    assert lifted.index("D1:2") < plain.index("D1:2")
    assert lifted.index("D1:2") < lifted.index("D2:2")
    hit = next(h for h in store.search(NS, query=QUERY, limit=10, mode="keyword",
                                       ranking=staged) if h.key == "D1:2")
    assert "neighbours" in hit.details
    # only candidates take part: "That is lovely" matches nothing and is not brought in
    assert "D1:3" not in lifted


STAGED = Ranking(neighbours=Neighbours(weight=0.3), sessions=Sessions(), speakers=Speakers(),
                 timing=Timing(), questions=QuestionTurns())
INDEX = IndexConfig(FakeEmbedder(32), fields=("text",))
KEYWORD = KeywordConfig(fields=("text",))


def _staged_hits(made: BaseStore) -> list[tuple[str, float, Any]]:
    with made as store:
        store.batch([PutOp(NS, key, {"text": text, "session": session, "turn": turn,
                                     "speaker": speaker}, event_at=when)
                     for key, session, turn, speaker, text, when in CHAT])
        hits = store.search(NS, query=QUERY, limit=10, mode="hybrid", ranking=STAGED)
        return [(h.key, round(h.score, 9), h.details.get("neighbours")) for h in hits]


def test_the_stage_ranks_alike_on_every_backend(tmp_path: Path) -> None:
    """With every kept stage and neighbours on, in hybrid mode, the in-memory store and SQLite
    (in memory and on file) give the same keys, scores and neighbour shares."""
    results = [_staged_hits(InMemoryStore(index=INDEX, keyword=KEYWORD)),
               _staged_hits(SQLiteStore(":memory:", index=INDEX, keyword=KEYWORD)),
               _staged_hits(SQLiteStore(tmp_path / "n.db", index=INDEX, keyword=KEYWORD))]
    assert results[0] == results[1] == results[2]
    assert len(results[0]) == len(CHAT)  # hybrid: the vectors find every turn
    assert sum(share is not None for _, _, share in results[0]) >= 4


def test_the_stage_ranks_alike_on_postgresql(pg_database: str) -> None:
    """PostgreSQL hands values back from jsonb: the turn order still reads as a number."""
    from remem.store.postgres import PostgresStore

    store = PostgresStore(pg_database, schema="neighbours", index=INDEX, keyword=KEYWORD)
    store.setup()
    assert _staged_hits(store) == _staged_hits(InMemoryStore(index=INDEX, keyword=KEYWORD))


def test_a_filter_and_a_time_range_still_bound_the_stage(store: BaseStore) -> None:
    staged = Ranking(neighbours=Neighbours(weight=0.8, before=1, after=1))
    # the question turn is Caroline's: filtered out, it neither shows nor lends
    only_melanie = _keys(store, staged, filter={"speaker": "Melanie"})
    assert set(only_melanie) <= {"D1:2", "D2:1", "D2:3"}
    hits = store.search(NS, query=QUERY, limit=10, mode="keyword", ranking=staged,
                        filter={"speaker": "Melanie"})
    assert all("neighbours" not in hit.details for hit in hits)
    # a time range keeps session 2 out, however strong its neighbours
    june = _keys(store, staged, event_after=JUNE)
    assert june and all(key.startswith("D2:") for key in june)
    may = _keys(store, staged, event_before=JUNE)
    assert may and all(key.startswith("D1:") for key in may)


# -- without the stage: as before ---------------------------------------------------------------

ENGLISH = ["running", "marathon", "dad", "pottery", "rain", "knees", "weekend", "lovely"]
CHINESE = ["跑步", "马拉松", "爸爸", "陶艺", "下雨", "膝盖", "周末", "我", "喜欢"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.sampled_from([ENGLISH, CHINESE]).flatmap(
    lambda vocabulary: st.tuples(
        st.lists(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=5),
                 min_size=1, max_size=12),
        st.lists(st.sampled_from(vocabulary), min_size=1, max_size=3))))
def test_rankings_without_the_stage_are_bit_identical(
        words: tuple[list[list[str]], list[str]]) -> None:
    """Values that carry a turn order rank exactly as those that do not (no stage, and the
    default stages), in English and Chinese; with the stage at weight 0, the same scores."""
    texts, query_words = words
    joiner = "" if query_words[0] in CHINESE else " "
    query = joiner.join(query_words)
    index = IndexConfig(FakeEmbedder(16), fields=("text",))
    keyword = KeywordConfig(fields=("text",))
    runs: dict[str, list[list[tuple[str, float]]]] = {}
    with InMemoryStore(index=index, keyword=keyword) as memory, \
            SQLiteStore(":memory:", index=index, keyword=keyword) as sqlite:
        for name, store in (("memory", memory), ("sqlite", sqlite)):
            for ns, with_turn in ((("old",), False), (("new",), True)):
                store.batch([PutOp(ns, f"k{i:02d}", {
                    "text": joiner.join(t), "session": 1 + i // 4, "speaker": "A",
                    **({"turn": 1 + i % 4} if with_turn else {})})
                    for i, t in enumerate(texts)])
            for ranking in (None, stage_ranking(["sessions", "speakers", "timing",
                                                 "questions"])):
                old, new = ([(h.key, h.score, dict(h.details)) for h in store.search(
                    ns, query=query, limit=10, mode="hybrid", ranking=ranking)]
                    for ns in (("old",), ("new",)))
                assert new == old
                runs.setdefault(name, []).append([(k, s) for k, s, _ in new])
            weightless = Ranking(neighbours=Neighbours(weight=0.0))
            zero = [(h.key, h.score) for h in store.search(
                ("new",), query=query, limit=10, mode="hybrid", ranking=weightless)]
            assert zero == runs[name][0]
    assert runs["memory"] == runs["sqlite"]
