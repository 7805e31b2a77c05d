"""Multi-evidence ranking stages: the pure parts, their option errors, and "off changes nothing".

Store behaviour on every backend is in ``test_stages_backends.py``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.eval.store_retriever import DEFAULT_STAGES, STAGES, stage_ranking
from remem.retrieval.decompose import Decompose
from remem.retrieval.expansion import (
    Entities,
    PseudoFeedback,
    distinctive_terms,
    feedback_vector,
    proper_nouns,
)
from remem.retrieval.ranking import Ranking, rank_candidates
from remem.retrieval.reports import SelfReports
from remem.retrieval.sessions import Sessions, Spread, session_boosts, spread_order
from remem.retrieval.speakers import Speakers, names_in
from remem.retrieval.timing import QuestionTurns, Timing
from remem.store import BaseStore, IndexConfig, InMemoryStore, PutOp, SQLiteStore

# -- pure parts ---------------------------------------------------------------------------------


def test_session_score_is_the_mean_of_its_best_turns_relative_to_the_best_session() -> None:
    scores = {1: 0.9, 2: 0.1, 3: 0.6, 4: 0.6, 5: 0.5}
    groups = {1: "a", 2: "a", 3: "b", 4: "b", 5: None}
    added = session_boosts(scores, {k: v for k, v in groups.items() if v}, Sessions(weight=0.5,
                                                                                  depth=2))
    # a: (0.9 + 0.1) / 2 = 0.5, b: (0.6 + 0.6) / 2 = 0.6 -> b is the best session
    assert added[3] == added[4] == pytest.approx(0.5)
    assert added[1] == added[2] == pytest.approx(0.5 * 0.5 / 0.6)
    assert added[5] == 0.0


def test_session_depth_counts_missing_turns_as_zero() -> None:
    added = session_boosts({1: 1.0, 2: 0.8, 3: 0.8}, {1: "lone", 2: "pair", 3: "pair"},
                           Sessions(weight=1.0, depth=2))
    assert added[2] == pytest.approx(1.0) and added[1] == pytest.approx(0.5 / 0.8)


def test_spread_takes_per_session_turns_in_rounds() -> None:
    order = [1, 2, 3, 4, 5, 6]
    groups = {1: "a", 2: "a", 3: "a", 4: "b", 6: "a"}
    assert spread_order(order, groups, Spread(per_session=2)) == [1, 2, 4, 5, 3, 6]
    assert spread_order(order, groups, Spread(per_session=10)) == order


def test_proper_nouns_skip_sentence_starts_and_the_speaker_prefix() -> None:
    text = "Caroline: I went to the LGBTQ group with Melanie in Paris. Then we met Bob."
    assert proper_nouns(text) == ["LGBTQ", "Melanie", "Paris", "Bob"]
    assert proper_nouns("nothing here at all") == []


def test_names_in_matches_whole_words_ignoring_case() -> None:
    assert names_in("What does melanie paint?", "Melanie")
    assert not names_in("What does Melanies paint?", "Melanie")
    assert names_in("Did Jo Ann come?", "Jo Ann")
    assert not names_in("anything", "  ")


def test_feedback_vector_moves_the_query_towards_the_top_hits() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    top = [np.array([0.0, 1.0], dtype=np.float32)]
    moved = feedback_vector(query, top, 1.0)
    assert np.allclose(moved, [math.sqrt(0.5), math.sqrt(0.5)])
    assert feedback_vector(query, [], 1.0) is query
    assert feedback_vector(query, top, 0.0) is query


def test_distinctive_terms_prefer_rare_terms_and_leave_the_query_out() -> None:
    chosen = distinctive_terms([["pottery", "class", "day"], ["pottery", "kiln"]],
                               {"pottery": 2, "class": 50, "day": 90, "kiln": 1}, 100,
                               exclude=["class"], limit=2)
    assert chosen == ["pottery", "kiln"]


def test_boosts_and_sessions_are_relative_to_the_best_fused_score() -> None:
    signals = {"keyword": [(1, (("u",), "a"), 4.0), (2, (("u",), "b"), 3.0)]}
    boosts = {"speakers": (0.5, [(2, (("u",), "b"), 1.0)])}
    ranked = rank_candidates(signals, Ranking(speakers=Speakers()), needed=2, boosts=boosts)
    assert [r.item_id for r in ranked] == [2, 1]
    assert ranked[0].score == pytest.approx(3.0 + 0.5 * 4.0)
    assert ranked[0].signals["speakers"] == (1, 1.0)


def test_session_stages_need_the_groups() -> None:
    signals = {"keyword": [(1, (("u",), "a"), 1.0)]}
    with pytest.raises(InvalidInputError, match="session"):
        rank_candidates(signals, Ranking(sessions=Sessions()), needed=1)


# -- option errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Sessions(weight=-0.1), "Sessions.weight must be a finite number >= 0"),
    (lambda: Sessions(weight=math.nan), "Sessions.weight"),
    (lambda: Sessions(depth=0), "Sessions.depth must be an int >= 1"),
    (lambda: Sessions(field=""), "Sessions.field must name a value field"),
    (lambda: Spread(per_session=0), "Spread.per_session must be an int >= 1"),
    (lambda: Spread(field=3), "Spread.field"),
    (lambda: PseudoFeedback(top=0), "Feedback.top must be an int >= 1"),
    (lambda: PseudoFeedback(vector=-1), "Feedback.vector must be a finite number >= 0"),
    (lambda: PseudoFeedback(terms=-1), "Feedback.terms must be an int >= 0"),
    (lambda: PseudoFeedback(term_weight=math.inf), "Feedback.term_weight"),
    (lambda: Entities(max_share=1.5), r"Entities.max_share must be a finite number within"),
    (lambda: Entities(top=True), "Entities.top"),
    (lambda: Speakers(weight="high"), "Speakers.weight"),
    (lambda: Speakers(field=""), "Speakers.field"),
    (lambda: Ranking(sessions="session"), "Ranking.sessions must be a Sessions or None"),
    (lambda: Ranking(feedback=Entities()), "Ranking.feedback must be a PseudoFeedback or None"),
    (lambda: stage_ranking(["sessions", "bogus"]), "unknown ranking stage 'bogus'"),
])
def test_bad_stage_options_raise_typed_errors(build: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        build()


def test_stage_ranking_turns_on_what_it_names() -> None:
    assert stage_ranking([]) == Ranking()
    ranking = stage_ranking(DEFAULT_STAGES)
    assert ranking.sessions == Sessions() and ranking.speakers == Speakers()
    assert ranking.spread is None and ranking.feedback is None and ranking.entities is None
    every = stage_ranking(STAGES)
    assert every.staged and every.group_field == "session"


# -- stages off: the same ranking as before ------------------------------------------------------

WORDS = ["pottery", "class", "kiln", "paint", "lake", "camping", "Melanie", "Caroline", "book",
         "dog", "run", "race", "and", "yesterday", "why?", "my"]

corpora = st.lists(
    st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
              st.integers(min_value=1, max_value=4), st.sampled_from(["Melanie", "Caroline"])),
    min_size=1, max_size=25)


def _fill(store: BaseStore, corpus: list[tuple[list[str], int, str]]) -> None:
    store.batch([PutOp(("c",), f"k{i:02d}", {"text": " ".join(words), "session": session,
                                            "speaker": speaker})
                 for i, (words, session, speaker) in enumerate(corpus)])


def _results(store: BaseStore, query: str, ranking: Ranking | None) -> list[tuple[str, float]]:
    return [(hit.key, round(hit.score, 9))
            for hit in store.search(("c",), query=query, limit=10, mode="hybrid",
                                    ranking=ranking)]


NEUTRAL = Ranking(sessions=Sessions(weight=0.0), speakers=Speakers(weight=0.0),
                  feedback=PseudoFeedback(vector=0.0, terms=0), entities=Entities(weight=0.0),
                  timing=Timing(weight=0.0), questions=QuestionTurns(weight=0.0),
                  decompose=Decompose(weight=0.0), reports=SelfReports(weight=0.0))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=corpora, query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
def test_stages_off_or_weightless_rank_as_before(tmp_path_factory: pytest.TempPathFactory,
                                                  corpus: list[tuple[list[str], int, str]],
                                                  query: list[str]) -> None:
    """On InMemory and SQLite (file): no stage, and every stage at weight 0, give the same
    keys and scores, and the two backends agree."""
    index = IndexConfig(FakeEmbedder(32), fields=("text",))
    path = Path(tmp_path_factory.mktemp("stages")) / "s.db"
    text = " ".join(query)
    seen = []
    with InMemoryStore(index=index) as memory, SQLiteStore(path, index=index) as sqlite:
        for store in (memory, sqlite):
            _fill(store, corpus)
            plain = _results(store, text, None)
            assert _results(store, text, Ranking()) == plain
            assert _results(store, text, NEUTRAL) == plain
            seen.append(plain)
    assert seen[0] == seen[1]
