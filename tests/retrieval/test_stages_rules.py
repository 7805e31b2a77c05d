"""The rule-based ranking stages of issue 22's second round: time expressions, question turns
and query decomposition (the pure rules, their option errors, and the stages on every
backend of the conformance suite)."""

from __future__ import annotations

from typing import Any

import pytest

from remem.errors import InvalidInputError
from remem.eval.store_retriever import DEFAULT_STAGES, stage_ranking
from remem.retrieval.decompose import Decompose, query_parts
from remem.retrieval.ranking import Ranking
from remem.retrieval.reports import SelfReports, is_self_report
from remem.retrieval.timing import (
    QuestionTurns,
    Timing,
    asks_when,
    has_time_expression,
    is_question,
)
from remem.store import BaseStore, KeywordConfig, PutOp
from tests.conformance.conftest import Factory, backend, make_store

__all__ = ["backend", "make_store"]  # the conformance fixtures, parametrised over backends

NS = ("conv",)

# -- the rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "I went to a support group yesterday", "We met last Friday", "two weeks ago we moved",
    "it was a couple of days back", "back in May it rained", "on 8 May 2023",
    "since March", "in 2022", "see you at 5 pm", "this weekend we camp", "June 3rd",
])
def test_time_expressions_are_found(text: str) -> None:
    assert has_time_expression(text)


@pytest.mark.parametrize("text", [
    "May I ask you something?", "It was a Friday kind of mood", "I did that last time",
    "two dogs and a cat", "the year's best painting",
])
def test_words_that_only_look_like_times_are_not(text: str) -> None:
    assert not has_time_expression(text)


def test_asks_when_and_is_question() -> None:
    assert asks_when("When did Caroline go to the support group?")
    assert asks_when("In which year did they move?")
    assert asks_when("How long ago was the trip?")
    assert not asks_when("What does Melanie paint?")
    assert is_question("Caroline: What got you into running?")
    assert is_question("Mel: How was it? [shares a photo of a lake]")
    assert not is_question("Mel: Running clears my head. [shares a photo: why?]x")
    assert not is_question("Mel: I asked why? Then I left.")


def test_self_reports_are_turns_in_the_first_person() -> None:
    assert is_self_report("Mel: I've been running farther to de-stress.")
    assert is_self_report("Our trip was great")
    assert is_self_report("Caro: the kids and us went camping")
    assert not is_self_report("Mel: You're so inspiring, Caroline!")
    assert not is_self_report("Ivy: Iris likes mymosa")  # a name prefix, words holding "my"
    assert not is_self_report("I: nothing to see here")   # the speaker prefix is not the text


@pytest.mark.parametrize(("query", "parts"), [
    ("What do Melanie and Caroline both like?",
     ["What do Melanie both like?", "What do Caroline both like?"]),
    ("Where did Jon and Gina travel?", ["Where did Jon travel?", "Where did Gina travel?"]),
    ("What are Jon and Gina's hobbies?",
     ["What are Jon's hobbies?", "What are Gina's hobbies?"]),
    ("Do they own both dogs and cats?", ["Do they own dogs?", "Do they own cats?"]),
    ("Did Max, Jon or Gina call?", ["Did Max call?", "Did Jon call?", "Did Gina call?"]),
    ("Did Jo Ann and Bob meet?", ["Did Jo Ann meet?", "Did Bob meet?"]),
    ("compare hiking with swimming", ["compare hiking", "compare swimming"]),
])
def test_coordinations_split_into_one_question_per_conjunct(query: str,
                                                            parts: list[str]) -> None:
    assert query_parts(query) == parts


@pytest.mark.parametrize("query", [
    "What pets do Melanie and her kids have?",  # a name joined to a phrase
    "Where did she go and what did she see?",   # two clauses
    "What does Melanie paint?",
    "Melanie and Melanie?",                     # one conjunct twice
    "When did Nate make vegan icecream and share it?",  # where "share it" ends is unknown
])
def test_questions_the_rules_leave_whole(query: str) -> None:
    assert query_parts(query) == []


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Timing(weight=-0.1), "Timing.weight must be a finite number >= 0"),
    (lambda: Timing(field=""), "Timing.field must name a value field"),
    (lambda: Timing(only_when="yes"), "Timing.only_when must be True or False"),
    (lambda: QuestionTurns(weight=float("inf")), "QuestionTurns.weight"),
    (lambda: QuestionTurns(field=None), "QuestionTurns.field"),
    (lambda: Decompose(weight=True), "Decompose.weight must be a finite number >= 0"),
    (lambda: SelfReports(weight=-1), "SelfReports.weight must be a finite number >= 0"),
    (lambda: SelfReports(field=""), "SelfReports.field must name a value field"),
    (lambda: Ranking(reports=Timing()), "Ranking.reports must be a SelfReports or None"),
    (lambda: Ranking(timing=QuestionTurns()), "Ranking.timing must be a Timing or None"),
    (lambda: Ranking(decompose=0.2), "Ranking.decompose must be a Decompose or None"),
])
def test_bad_options_raise_typed_errors(build: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        build()


def test_the_eval_default_holds_the_kept_stages() -> None:
    ranking = stage_ranking(DEFAULT_STAGES)
    assert ranking.timing == Timing() and ranking.questions == QuestionTurns()
    assert ranking.decompose is None and stage_ranking(["decompose"]).decompose == Decompose()


# -- on every backend ---------------------------------------------------------------------------


def _store(make_store: Factory, rows: list[tuple[str, str]]) -> BaseStore:
    store = make_store(keyword=KeywordConfig(fields=("text",)))
    store.batch([PutOp(NS, key, {"text": text}) for key, text in rows])
    return store


def _keys(store: BaseStore, query: str, ranking: Ranking | None = None) -> list[str]:
    return [hit.key for hit in store.search(NS, query=query, limit=10, mode="keyword",
                                            ranking=ranking)]


def test_timing_and_questions_lift_reports_over_questions(make_store: Factory) -> None:
    store = _store(make_store, [
        ("ask", "Mel: What got you into the pottery class?"),
        ("told", "Caro: I joined a pottery class last week, with my sister"),
        ("other", "Mel: the dog likes to run"),
    ])
    query = "pottery class"
    assert _keys(store, query) == ["ask", "told"]
    hits = store.search(NS, query=query, limit=5, mode="keyword",
                        ranking=Ranking(timing=Timing(weight=0.3)))
    assert [h.key for h in hits] == ["told", "ask"]
    assert hits[0].details["timing"].score == 1.0 and "timing" not in hits[1].details
    assert _keys(store, query, Ranking(questions=QuestionTurns(weight=0.3))) == ["told", "ask"]
    assert _keys(store, query, Ranking(reports=SelfReports(weight=0.3))) == ["told", "ask"]
    # only_when: a query that does not ask when is unchanged
    assert _keys(store, query, Ranking(timing=Timing(weight=0.3, only_when=True))) == [
        "ask", "told"]
    assert _keys(store, "when was the pottery class?",
                 Ranking(timing=Timing(weight=0.3, only_when=True)))[0] == "told"


def test_decompose_lifts_each_parts_turns(make_store: Factory) -> None:
    store = _store(make_store, [
        ("j1", "Jon painted a lake"),
        ("j2", "Jon painted his old dog at home with a brush and a rag"),
        ("j3", "Jon painted the sunset by the sea in June with his friend from school"),
        ("g1", "Gina made a mural"),
        ("g2", "Gina and her friend went to the big store downtown"),
        ("f1", "the weather was nice"), ("f2", "a new book about birds"),
    ])
    query = "What did Jon and Gina paint?"
    assert _keys(store, query) == ["j1", "g1", "j2", "j3", "g2"]
    hits = store.search(NS, query=query, limit=10, mode="keyword",
                        ranking=Ranking(decompose=Decompose(weight=0.5)))
    # "What did Gina paint?" searched alone: Gina's turns pass Jon's weaker ones
    assert [h.key for h in hits] == ["j1", "g1", "g2", "j2", "j3"]
    assert {"part1", "part2"} <= set(hits[0].details) and "part1" not in hits[1].details
    # a query without a coordination ranks as without the stage
    assert _keys(store, "What did Gina paint?", Ranking(decompose=Decompose(weight=1.0))) == \
        _keys(store, "What did Gina paint?")
