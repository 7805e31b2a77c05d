"""What the ranking stages' text reading costs stays bounded by the text's length.

Each case below is an input that took the earlier code many seconds (or, at these sizes, would
not finish in a CI run): exponential backtracking in the coordination pattern of
:func:`~remem.retrieval.decompose.query_parts`, and quadratic rescans in
:func:`~remem.retrieval.expansion.proper_nouns` and :func:`~remem.retrieval.timing.is_question`.
The tests assert what the call returns; the properties check that the linear versions give
what the earlier ones gave, written out here as they were.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from remem.retrieval import Ranking
from remem.retrieval.decompose import _COMPARE, _COORDINATION, Decompose, query_parts
from remem.retrieval.expansion import _HAN_WORD, _WORD, han_names, proper_nouns
from remem.retrieval.timing import has_time_expression, is_question
from remem.store import InMemoryStore, KeywordConfig

NAMES = ["Anna", "Ben", "Carl", "Dora", "Emil", "Fred", "Gina", "Hugo", "Ida", "Jan", "Kim",
         "Lea", "Max", "Nina", "Otto", "Paul", "Rita", "Sam", "Tom", "Uwe", "Vera", "Walt",
         "Xena", "Yves", "Zoe", "Abe", "Bea", "Cy"]


# -- decompose -----------------------------------------------------------------------------------

def test_a_long_list_of_names_without_a_coordination_is_left_whole() -> None:
    # 28 names: the earlier pattern tried 2**28 readings (17 s at 22 names, doubling per name)
    query = "Which of " + ", ".join(NAMES) + " likes pottery?"
    assert query_parts(query) == []
    assert query_parts("What about " + ", ".join(["Aa"] * 40) + " x and y") == []


def test_the_decompose_stage_answers_a_query_listing_many_names() -> None:
    query = "Which of " + ", ".join(NAMES) + " likes pottery?"
    with InMemoryStore(keyword=KeywordConfig(fields=("text",))) as store:
        store.put(("a",), "anna", {"text": "Anna likes pottery"})
        store.put(("a",), "walt", {"text": "Walt went sailing"})
        found = store.search(("a",), query=query, mode="keyword",
                             ranking=Ranking(decompose=Decompose()))
    assert [item.key for item in found][:1] == ["anna"]


def test_lists_of_more_than_eight_and_queries_over_500_characters_are_not_split() -> None:
    eight = "Did " + ", ".join(NAMES[:7]) + " and " + NAMES[7] + " call?"
    assert query_parts(eight) == [f"Did {name} call?" for name in NAMES[:8]]
    nine = "Did " + ", ".join(NAMES[:8]) + " and " + NAMES[8] + " call?"
    assert query_parts(nine) == []
    long = "Did Jon and Gina call? " + "Tell me everything. " * 24
    assert len(long) > 500 and query_parts(long[:500]) != []
    assert query_parts(long) == []


# the coordination patterns as they were, with two branches that both read a capitalised word
_OLD_CONJUNCT = r"(?:[A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*)*|[\w'\u2019-]+)"
_OLD_COORDINATION = re.compile(
    rf"(?:\b(?:both|either|between)\s+)?"
    rf"(?P<items>{_OLD_CONJUNCT}(?:\s*,\s*{_OLD_CONJUNCT})*,?\s+(?:and|or|&)\s+{_OLD_CONJUNCT})"
)
_OLD_COMPARE = re.compile(
    rf"\bcompare\s+(?P<a>{_OLD_CONJUNCT})\s+(?:with|to|and)\s+(?P<b>{_OLD_CONJUNCT})",
    re.IGNORECASE)
_QUERY_TOKENS = st.sampled_from(["Jo", "Ann", "Bob's", "Über", "dogs", "both", "either", "and",
                                 "or", "&", "compare", "with", "to", "x1", "the", "K", "Max"])
_QUERY_GAPS = st.sampled_from([" ", ", ", ",", " ,", "  ", "?", "\n", "-"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_QUERY_TOKENS, _QUERY_GAPS), max_size=12))
def test_the_coordination_patterns_match_what_they_matched_before(
        pieces: list[tuple[str, str]]) -> None:
    query = "".join(token + gap for token, gap in pieces)
    assert ([m.span("items") for m in _COORDINATION.finditer(query)]
            == [m.span("items") for m in _OLD_COORDINATION.finditer(query)])
    assert _sides(_COMPARE.search(query)) == _sides(_OLD_COMPARE.search(query))


def _sides(match: re.Match[str] | None) -> tuple[tuple[int, int], ...]:
    return () if match is None else (match.span("a"), match.span("b"))


# -- proper nouns --------------------------------------------------------------------------------

def test_proper_nouns_of_a_long_text_are_read_in_one_pass() -> None:
    # 560,000 characters: the earlier code searched all the text before each capitalised word
    # (16 s at 170,000 characters, four times that at twice the length)
    text = "hello " + "Word and more " * 40_000 + "then Paris. Lyon"
    assert proper_nouns(text) == ["Word", "Paris"]


_OLD_SENTENCE_END = re.compile('[.!?:;\n"\u201c]\\s*$')


def _old_proper_nouns(text: str) -> list[str]:
    """:func:`proper_nouns` as it was, searching all the text before each word."""
    han = _HAN_WORD.search(text) is not None
    latin = _HAN_WORD.sub(" x ", text) if han else text
    found: dict[str, None] = {}
    for match in _WORD.finditer(latin):
        word = match.group()
        if len(word) < 2 or not word[0].isupper():
            continue
        before = latin[:match.start()]
        if not before.strip() or _OLD_SENTENCE_END.search(before):
            continue
        found.setdefault(word, None)
    if han:
        for name in han_names(text):
            found.setdefault(name, None)
    return list(found)


_TEXT_TOKENS = st.sampled_from(["Jolene", "Bob", "went", "LGBTQ", "Über", "I", "to", "周建国",
                                "去", ".", "!", ":", '"', "\u201c", "?", ";", "x.Y"])
_TEXT_GAPS = st.sampled_from(["", " ", "  ", "\n", " \n ", "\t", "\xa0", "\u2028", "\x1c",
                              "\u3000", ",", "-"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TEXT_GAPS, _TEXT_TOKENS), max_size=14))
def test_proper_nouns_are_what_they_were(pieces: list[tuple[str, str]]) -> None:
    text = "".join(gap + token for gap, token in pieces)
    assert proper_nouns(text) == _old_proper_nouns(text)


# -- question turns and time expressions -------------------------------------------------------

def test_a_text_of_many_brackets_is_read_in_one_pass() -> None:
    # 200,000 "[": the earlier pattern read to the end from each (0.35 s at 20,000)
    assert is_question("[" * 200_000 + "x") is False
    assert is_question("Why? " + "[" * 200_000 + "]") is True
    assert is_question("Why " + "[a] " * 50_000) is False


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="[]? \n\ta吗", max_size=30))
def test_question_turns_are_what_they_were(text: str) -> None:
    end = re.sub(r"\s*\[[^\]]*\]\s*$", "", text).rstrip()
    assert is_question(text) is (end.endswith("?") or end.endswith("吗"))


def test_only_texts_up_to_1000_characters_are_cached() -> None:
    short, long = "we met yesterday? " + "x" * 900, "we met yesterday? " + "x" * 1000
    before_time, before_question = _calls(has_time_expression), _calls(is_question)
    assert has_time_expression(long) and is_question(long) is False
    assert (_calls(has_time_expression), _calls(is_question)) == (before_time, before_question)
    assert has_time_expression(short) and is_question(short) is False
    assert has_time_expression(short)
    assert (_calls(has_time_expression), _calls(is_question)) == (before_time + 2,
                                                                  before_question + 1)


def _calls(cached: Any) -> int:
    info = cached.cache_info()
    return int(info.hits + info.misses)
