"""The timing and questions stages in Chinese: time expressions, question turns and "when"
questions by rule, English judged exactly as by the English rules alone, and both stages on a
small Chinese store."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem import InMemoryStore
from remem.retrieval.ranking import Ranking
from remem.retrieval.timing import (
    QuestionTurns,
    Timing,
    asks_when,
    has_chinese_time_expression,
    has_english_time_expression,
    has_time_expression,
    is_question,
)
from remem.store import KeywordConfig, PutOp

# -- the rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "我昨天去医院拿了体检报告", "前天晚上没睡好", "提醒我下周三交季度规划的初稿",
    "上个月刚换了工作", "去年搬到了杭州", "周三要开会", "星期天带孩子去公园",
    "3月5日是我妈生日", "十月一号出发", "2024年我们结的婚", "24年3月开始学车",
    "三天前丢了钥匙", "两个月后就要毕业了", "下午三点去接孩子", "晚上7点半见", "9:30左右到",
    "国庆去了一趟厦门", "月底交房租", "这周末加班",
])
def test_chinese_time_expressions_are_found(text: str) -> None:
    assert has_chinese_time_expression(text)
    assert has_time_expression(text)


@pytest.mark.parametrize("text", [
    "有一点累", "从徐汇过去要坐11号线转2号线", "三个月的工资都花完了", "我工作10年了",
    "周围很安静", "我们组有五个人", "每个月房租四千五", "I went to the museum",
])
def test_chinese_words_that_only_look_like_times_are_not(text: str) -> None:
    assert not has_chinese_time_expression(text)


def test_a_text_mixing_both_languages_is_judged_by_both() -> None:
    assert has_time_expression("我们 last week 去了 Costco")  # English rule
    assert has_time_expression("deadline 是下周五")  # Chinese rule
    assert not has_english_time_expression("deadline 是下周五")


@pytest.mark.parametrize(("text", "expected"), [
    ("你最近在忙什么？", True), ("你吃饭了吗", True), ("那你呢", True),
    ("周末有空吗？[发了一张图]", True), ("好的，明白了。", False), ("吗啡是一种药", False),
    ("我问他：为什么？然后就走了。", False), ("What about you?", True),
])
def test_chinese_question_turns(text: str, expected: bool) -> None:
    assert is_question(text) is expected


@pytest.mark.parametrize(("query", "expected"), [
    ("我是什么时候去的杭州？", True), ("年糕是哪天生病的？", True), ("她几月几号生日？", True),
    ("周会在星期几？", True), ("年糕是什么品种的猫？", False), ("When did we move?", True),
])
def test_chinese_queries_that_ask_when(query: str, expected: bool) -> None:
    assert asks_when(query) is expected


# -- English unchanged --------------------------------------------------------------------------

# the English rules of before the Chinese ones were added, written out as they were
_ENGLISH_QUESTION = re.compile(r"\s*\[[^\]]*\]\s*$")


def _english_is_question(text: str) -> bool:
    return _ENGLISH_QUESTION.sub("", text).rstrip().endswith("?")


_WORDS = ["yesterday", "last", "week", "May", "on", "Friday", "2022", "ago", "two", "days",
          "I", "went", "home", "?", "[photo]", "at", "5", "pm", "3:30", "in", "since", "the"]
_ENGLISH_TEXT = st.one_of(
    st.text(alphabet=string.printable, max_size=60),
    st.lists(st.sampled_from(_WORDS), max_size=12).map(" ".join),
)


@given(_ENGLISH_TEXT)
def test_text_without_han_is_judged_by_the_english_rules_alone(text: str) -> None:
    assert has_time_expression(text) == has_english_time_expression(text)
    assert not has_chinese_time_expression(text)
    assert is_question(text) == _english_is_question(text)


# -- the stages on a small Chinese store --------------------------------------------------------

NS = ("daily",)


def _keys(store: InMemoryStore, query: str, ranking: Ranking | None = None) -> list[str]:
    return [hit.key for hit in store.search(NS, query=query, limit=10, mode="keyword",
                                            ranking=ranking)]


def test_timing_and_questions_lift_a_chinese_report_over_a_question() -> None:
    rows = [
        ("ask", "你上次说的那个瑜伽课，瑜伽课怎么样？"),
        ("told", "我上周报了一个瑜伽课，每周两次"),
        ("other", "今天的地铁特别挤"),
    ]
    with InMemoryStore(keyword=KeywordConfig(fields=("text",))) as store:
        store.batch([PutOp(NS, key, {"text": text}) for key, text in rows])
        query = "我报的瑜伽课"
        assert _keys(store, query)[:2] == ["ask", "told"]
        hits = store.search(NS, query=query, limit=5, mode="keyword",
                            ranking=Ranking(timing=Timing(weight=0.5)))
        assert [h.key for h in hits][:2] == ["told", "ask"]
        assert hits[0].details["timing"].score == 1.0 and "timing" not in hits[1].details
        assert _keys(store, query, Ranking(questions=QuestionTurns(weight=0.5)))[:2] == [
            "told", "ask"]
