"""Time-aware scoring for "when" questions: turns that say when something happened climb.

"When did Caroline go to the support group?" is answered by the turn that says "I went to a
support group yesterday", not by a later turn that mentions the group again: the answer is a
time, and people say times with a small vocabulary (yesterday, last week, two days ago, in
May, on Friday, 2022). More generally, a turn that says when something happened reports an
event ("we went camping last weekend"), and events are what questions ask about, where much
of a chat is reaction and small talk: on the LoCoMo dev split, 28% of the evidence turns of
all question kinds hold a time expression against 9% of all turns. :class:`Timing` adds a
fixed ``weight`` (a fraction of the best fused score) to the candidates whose text holds one,
for every query or only for those that ask for a time (:func:`asks_when`).

:class:`QuestionTurns` is its counterpart for turns that only ask: a turn ending in a question
("What got you into running?") shares the topic's words with its answer but rarely holds the
evidence (14% of evidence turns on LoCoMo dev against 24% of all turns); it loses ``weight``.
Both read a value field (``"text"``) of the candidates; pure code here, run by
:mod:`remem.store.candidates`.

The rules are bilingual. Chinese adds its own time words (昨天, 前天, 上周, 上个月, 去年,
周三, 3月5日, 2024年, 三天前, 下午三点, 国庆...) and question turns (ending in a full-width
question mark, or in the particles 吗 or 呢); they are tried only on text holding a Han
character, so text without one is judged exactly as by the English rules alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from remem.errors import InvalidInputError
from remem.retrieval.memo import memoise_short_texts
from remem.retrieval.options import check_field, check_number, check_requires

__all__ = ["QuestionTurns", "Timing", "asks_when", "has_chinese_time_expression",
           "has_english_time_expression", "has_time_expression", "is_question"]


def _check(owner: str, field: object, weight: object, requires: object) -> None:
    check_field(owner, "field", field, holding="the text", example="text")
    check_number(owner, "weight", weight)
    check_requires(owner, requires)


@dataclass(frozen=True, slots=True)
class Timing:
    """Add ``weight`` (in units of the best fused score) to candidates whose ``field`` holds a
    time expression (:func:`has_time_expression`). ``only_when``: only for queries that ask
    for a time (:func:`asks_when`); measured, the stage helps every kind of question, so it
    applies to all by default. ``requires``: only candidates carrying this value field (not
    null) take part, such as ``"source.thread_id"`` for memories said in a conversation
    (``None``: every candidate)."""

    field: str = "text"
    weight: float = 0.1
    only_when: bool = False
    requires: str | None = None

    def __post_init__(self) -> None:
        _check("Timing", self.field, self.weight, self.requires)
        if not isinstance(self.only_when, bool):
            raise InvalidInputError(
                f"Timing.only_when must be True or False, got {self.only_when!r}"
            )


@dataclass(frozen=True, slots=True)
class QuestionTurns:
    """Subtract ``weight`` (in units of the best fused score) from candidates whose ``field``
    is a question (:func:`is_question`). ``requires``: as for :class:`Timing`."""

    field: str = "text"
    weight: float = 0.1
    requires: str | None = None

    def __post_init__(self) -> None:
        _check("QuestionTurns", self.field, self.weight, self.requires)


_MONTH = ("january|february|march|april|may|june|july|august|september|october|november|"
          "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DAY = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend"
_UNIT = "minute|hour|day|night|week|month|year|decade|morning|evening|afternoon|summer|winter|" \
        "spring|fall|autumn"
_NUMBER = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|several"
_TIME = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|recently|lately"
    rf"|(?:last|next|this|past|coming)\s+(?:(?:{_UNIT})s?|{_DAY})"
    rf"|(?:{_NUMBER})\s+(?:{_UNIT})s?\s+(?:ago|back|earlier|later|before)"
    rf"|(?:on|since|until|by)\s+(?:{_DAY})"
    rf"|(?:in|since|until|by|of|early|late|mid)\s+(?:{_MONTH})\b"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH})\b"
    rf"|(?:{_MONTH})\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
    rf"|(?:19|20)\d\d|\d{{1,2}}[:.]\d\d\s*(?:am|pm)?|\d{{1,2}}\s*(?:am|pm))\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"^\s*(?:when|since when|until when)\b|\b(?:what|which)\s+(?:date|day|time|year|month|week"
    r"|season)\b|\bhow\s+long\s+ago\b|\bin\s+which\s+(?:year|month)\b",
    re.IGNORECASE,
)


# every match of _TIME holds one of these words or a digit: a cheap test first (the full
# pattern costs about 40 microseconds a turn, and a search reads about 150 candidates)
_TIME_WORDS = frozenset(
    ["yesterday", "today", "tonight", "tomorrow", "recently", "lately"]
    + _MONTH.split("|") + _DAY.split("|") + [d + "s" for d in _DAY.split("|")]
    + _UNIT.split("|") + [u + "s" for u in _UNIT.split("|")]
)
_LETTERS = re.compile(r"[a-z]+")


# Chinese: numbers in digits or Han numerals; 两 is "two" before a measure word
_ZH_NUM = r"(?:\d{1,4}|[一二两三四五六七八九十几半]{1,3})"
_ZH_PERIOD = "凌晨|清晨|早上|早晨|上午|中午|下午|傍晚|晚上|半夜|夜里"
_ZH_TIME = re.compile(
    # relative days, and the week, month and year around now
    r"大前天|前天|昨天|昨晚|昨日|今天|今早|今晚|今日|明天|明早|明晚|后天|最近|前几天|前阵子|前些天"
    r"|(?:上|下|这|本|上上)(?:个)?(?:周|星期|礼拜|月)"
    r"|去年|今年|明年|前年|后年|年初|年底|年中|月初|月底|月中|周末|上半年|下半年"
    # weekdays: 周三, 星期天, 礼拜五
    r"|(?:周|星期|礼拜)[一二三四五六日天1-7]"
    # dates and years: 3月5日, 十月一号, 2024年, 24年3月 (a month needs its number, and a
    # year four digits or a month: 个月 and 10年 are durations)
    rf"|(?<![\d个])(?:\d{{1,2}}|[一二三四五六七八九十]{{1,3}}|正|腊)月(?:份|初|底|中|{_ZH_NUM}[日号])?"
    r"|(?<!\d)(?:(?:19|20)\d\d年|\d\d年\d{1,2}月)"
    # so long ago, or ahead: 三天前, 两个月后, 半年前
    rf"|{_ZH_NUM}\s*(?:个)?(?:分钟|小时|天|周|星期|礼拜|月|年)(?:之|以)?[前后]"
    # clock times: 下午三点, 晚上7点半, 9:30 (a bare Han numeral before 点 is also "a bit")
    rf"|(?:{_ZH_PERIOD}){_ZH_NUM}[点時时]|(?<!\d)\d{{1,2}}\s*(?:[点时]|[:\uff1a]\d\d)"
    # holidays
    r"|春节|除夕|元旦|元宵|清明|端午|中秋|国庆|五一|寒假|暑假|圣诞"
)
_ZH_WHEN = re.compile(
    r"什么时候|啥时候|何时|哪天|哪一天|哪年|哪一年|哪个月|几月|几号|几点|星期几|周几|礼拜几"
    r"|多久以前|多久前|多长时间以前|什么日子"
)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# a question in Chinese ends in a question mark or in a question particle
_ZH_QUESTION_END = ("\uff1f", "吗", "呢")


@memoise_short_texts(8192)
def has_time_expression(text: str) -> bool:
    """Whether ``text`` says when, in everyday English or Chinese
    (:func:`has_english_time_expression`, :func:`has_chinese_time_expression`)."""
    return has_english_time_expression(text) or has_chinese_time_expression(text)


def has_english_time_expression(text: str) -> bool:
    """Whether ``text`` says when, in everyday English: a relative time ("yesterday", "last
    week", "two days ago"), a weekday or month with a preposition or a day number, a year, or
    a clock time."""
    if not any(ch.isdigit() for ch in text) and _TIME_WORDS.isdisjoint(
            _LETTERS.findall(text.lower())):
        return False
    return _TIME.search(text) is not None


def has_chinese_time_expression(text: str) -> bool:
    """Whether ``text`` says when, in everyday Chinese: a relative day, week, month or year
    (昨天, 上周, 下个月, 去年), a weekday (周三), a date or year (3月5日, 2024年), a time ago or
    ahead (三天前), a clock time with its part of the day (下午三点, 9:30) or a holiday (国庆).
    False for text without a Han character."""
    return _HAN.search(text) is not None and _ZH_TIME.search(text) is not None


def asks_when(query: str) -> bool:
    """Whether ``query`` asks for a time: it starts with "when", or asks "what date/year...",
    "how long ago", "in which month"; in Chinese, it asks 什么时候, 哪天, 几月, 几号, 星期几..."""
    return _WHEN.search(query) is not None or _ZH_WHEN.search(query) is not None


@memoise_short_texts(8192)
def is_question(text: str) -> bool:
    """Whether ``text`` ends in a question mark (or, in Chinese, in a full-width one or the
    particles 吗 and 呢), once a trailing bracketed aside (such as an image caption,
    ``"[shares a photo of ...]"``) is set apart."""
    end = _without_aside(text).rstrip()
    if end.endswith("?"):
        return True
    return end.endswith(_ZH_QUESTION_END) and _HAN.search(end) is not None



def _without_aside(text: str) -> str:
    """``text`` less a trailing ``[...]`` holding no ``]`` (and the spaces around it), if it
    ends in one. Found from the end: a regular expression tried at each ``[`` read to the end
    of the text from every one (quadratic: 0.35 s for 20,000 ``[``)."""
    body = text.rstrip()
    if not body.endswith("]"):
        return text
    close = len(body) - 1
    # the aside opens at the first "[" after the "]" before its own
    opening = body.find("[", body.rfind("]", 0, close) + 1, close)
    return text if opening < 0 else body[:opening].rstrip()
