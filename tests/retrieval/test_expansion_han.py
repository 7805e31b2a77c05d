"""The Chinese entity bridge: person names of the top hits (jieba's part-of-speech tags) join
the ``entities`` stage's keyword query; English text is read exactly as before."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.embed import FakeEmbedder
from remem.retrieval.expansion import Entities, han_names, proper_nouns
from remem.retrieval.ranking import Ranking
from remem.store import BaseStore, IndexConfig, InMemoryStore, KeywordConfig, PutOp, SQLiteStore

NS = ("user",)


def test_han_names_are_the_tagged_person_names_in_order() -> None:
    assert han_names("我表哥叫周建国，在宁波一家外贸公司上班") == ["周建国"]
    # a surname cut off a given name that is a dictionary word is joined back
    assert han_names("你记一下，我表哥的名字是董浩然") == ["董浩然"]
    assert han_names("许慧敏和周建国都是我大学同学，许慧敏在深圳") == ["许慧敏", "周建国"]
    assert han_names("今天好冷，出门忘带伞") == []
    assert han_names("we went hiking with Jolene") == []


def test_a_common_surname_the_segmenter_cut_off_is_joined_to_the_given_name() -> None:
    # jieba tags 郑 as a place, 方 as a noun and 启航 as a verb: no name tag on either side
    assert han_names("郑春生在成都公安局上班") == ["郑春生"]
    assert han_names("我新来的同事方启航前两天来我家吃饭了") == ["方启航"]
    # a surname and a title name a person too
    assert han_names("马处长明天开会") == ["马处长"]


def test_a_surname_character_counted_as_a_measure_word_starts_no_name() -> None:
    # jieba keeps 一张 and 这张 whole; these it cuts, and the word before counts the 张 or 段
    assert han_names("多张照片") == []
    assert han_names("许多张照片") == []
    assert han_names("每段路程") == []
    assert han_names("办了张推拿的卡") == []
    assert han_names("拍了 两 张照片") == []  # spaces are no words


def test_a_surname_character_read_as_an_ordinary_word_starts_no_name() -> None:
    assert han_names("我向老师请教") == []  # 向: towards
    assert han_names("我们常联系") == []  # 常: often
    assert han_names("他考了高成绩") == []  # 高: high
    assert han_names("我付车费") == []  # 付: pay
    assert han_names("高一些") == []
    assert han_names("我姓张") == []


def test_a_whole_name_after_a_surname_character_keeps_its_own_reading() -> None:
    assert han_names("我向王芳借了钱") == ["王芳"]
    assert han_names("办了张王芳的卡") == ["王芳"]


def test_an_uncommon_surname_is_not_guessed() -> None:
    # 应 (a verb, and a surname outside the hundred commonest) stays cut off: only 振华's tag
    # could make it a name, and jieba tags it nz
    assert han_names("应振华今年32岁") == []


def test_proper_nouns_add_the_chinese_names_after_the_capitalised_words() -> None:
    assert proper_nouns("周建国下周去Boston出差，Jolene也去") == ["Boston", "Jolene", "周建国"]


# -- English: bit-identical to the stage before the bridge --------------------------------------

_WORD = re.compile("[^\\W\\d_][\\w'\u2019-]*")
_SENTENCE_END = re.compile('[.!?:;\n"\u201c]\\s*$')


def _before_the_bridge(text: str) -> list[str]:
    """The extraction as it was before the Chinese bridge (the reference for text without Han
    characters)."""
    found: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word = match.group()
        if len(word) < 2 or not word[0].isupper():
            continue
        before = text[:match.start()]
        if not before.strip() or _SENTENCE_END.search(before):
            continue
        found.setdefault(word, None)
    return list(found)


_NOT_HAN = st.characters(exclude_categories=("Cs",), exclude_characters="".join(
    chr(c) for lo, hi in ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
    for c in range(lo, hi + 1)))
_ENGLISH_WORDS = st.sampled_from(["Jolene", "went", "to", "Paris.", "Bob:", "the", "LGBTQ",
                                  "\n", "I", "Melanie's", "don't", "Über", "café", "—", "?"])


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(_NOT_HAN, max_size=60),
                      st.lists(_ENGLISH_WORDS, max_size=20).map(" ".join)))
def test_text_without_han_gets_what_it_got_before(text: str) -> None:
    assert proper_nouns(text) == _before_the_bridge(text)


# -- on a store ------------------------------------------------------------------------------

MESSAGES = [
    ("m1", "我表哥叫周建国", "a"),
    ("m2", "周建国在宁波一家外贸公司上班，经常出差", "a"),
    ("m3", "我同事叫李慧敏", "a"),
    ("m4", "李慧敏在杭州当老师", "a"),
    ("m5", "我发小叫王志强，他也在宁波", "b"),
    ("m6", "今天好冷，出门忘带伞", "a"),
    ("m7", "晚饭点了份麻辣烫，有点咸", "b"),
    ("m8", "周末想去爬山", "a"),
]
QUESTION = "我那个在宁波上班的亲戚叫什么？"
BRIDGE = Ranking(entities=Entities(top=1, weight=0.5, max_share=0.5))


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    index = IndexConfig(FakeEmbedder(32), fields=("text",))
    keyword = KeywordConfig(fields=("text",))
    opened: Any = (InMemoryStore(index=index, keyword=keyword) if request.param == "memory"
                   else SQLiteStore(":memory:", index=index, keyword=keyword))
    with opened as ready:
        ready.batch([PutOp(NS, key, {"text": text, "user": user})
                     for key, text, user in MESSAGES])
        yield ready


def _keys(store: BaseStore, ranking: Ranking | None, limit: int = 4, **options: Any
          ) -> list[str]:
    return [hit.key for hit in store.search(NS, query=QUESTION, limit=limit, mode="keyword",
                                            ranking=ranking, **options)]


def test_the_name_in_the_top_hit_reaches_the_message_that_says_who_it_is(
        store: BaseStore) -> None:
    plain = _keys(store, None)
    assert plain[0] == "m2"  # found by 宁波 and 上班
    assert plain.index("m1") >= 2  # only 叫 in common, like m3 and m5
    hits = {h.key: h for h in store.search(NS, query=QUESTION, limit=4, mode="keyword",
                                           ranking=BRIDGE)}
    assert list(hits)[:2] == ["m1", "m2"]  # m1 holds the name and nothing else
    assert set(hits["m1"].details) == {"keyword", "entities"}
    assert "entities" not in hits["m3"].details


def test_hybrid_search_bridges_too(store: BaseStore) -> None:
    def ranked(ranking: Ranking | None) -> list[str]:
        return [h.key for h in store.search(NS, query=QUESTION, limit=8, mode="hybrid",
                                            ranking=ranking)]

    assert ranked(BRIDGE).index("m1") < ranked(None).index("m1")
    hit = next(h for h in store.search(NS, query=QUESTION, limit=8, mode="hybrid",
                                       ranking=BRIDGE) if h.key == "m1")
    assert "entities" in hit.details


def test_the_filter_applies_to_what_the_bridge_adds(store: BaseStore) -> None:
    store.put(NS, "m9", {"text": "周建国是我表哥，比我大五岁", "user": "b"})
    keys = _keys(store, BRIDGE, limit=10, filter={"user": "a"})
    assert set(keys[:2]) == {"m1", "m2"}
    assert "m9" not in keys
    assert "m9" not in _keys(store, None, limit=10)  # no word of the question
    assert "m9" in _keys(store, BRIDGE, limit=10)  # found by the name when the filter allows
