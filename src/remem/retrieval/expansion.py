"""Query expansion from the top hits: pseudo-relevance feedback and entity-centred expansion.

A question whose answer spans several memories often matches one of them well and the others
only through what that one says. Both stages take the best few fused results of a first pass
as if they were relevant and search again:

- :class:`PseudoFeedback` (pseudo-relevance feedback, Rocchio-style): the query vector moves towards
  the mean vector of the top hits and the vector signal is searched again; optionally the top
  hits' most distinctive terms (by tf-idf over the scope) form a second keyword query whose
  scores are added with a weight;
- :class:`Entities`: the proper nouns of the top hits (capitalised words that do not start a
  sentence; in Chinese, person names by jieba's part-of-speech tags) form a keyword query, so
  turns that mention the same people, places and things join the candidates. The Chinese
  side is the bridge between facts told in separate messages: "我表哥叫周建国" and
  "周建国在宁波一家外贸公司上班" share only the name, so a question asked by relation and
  condition ("我那个在宁波工作的亲戚叫什么") finds the second by its words and reaches the
  first through the name the second holds.

The functions here are pure; the store's candidate code (:mod:`remem.store.candidates`) runs
the searches.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.retrieval.options import check_count, check_number
from remem.retrieval.tokenize import han_pieces

__all__ = ["Entities", "Feedback", "PseudoFeedback", "distinctive_terms", "feedback_vector",
           "han_names", "proper_nouns"]


@dataclass(frozen=True, slots=True)
class PseudoFeedback:
    """Pseudo-relevance feedback from the ``top`` best results of a first pass.

    ``vector``: weight of the top hits' mean vector added to the query vector before the vector
    signal is searched again (0: no vector feedback). ``terms``: how many of the top hits'
    most distinctive terms form a second keyword query (0: none); ``term_weight``: what its
    min-max normalised BM25 scores add to a result's fused score, in units of the best fused
    score.
    """

    top: int = 3
    vector: float = 0.5
    terms: int = 0
    term_weight: float = 0.2

    def __post_init__(self) -> None:
        check_count("Feedback", "top", self.top)
        check_number("Feedback", "vector", self.vector)
        check_count("Feedback", "terms", self.terms, low=0)
        check_number("Feedback", "term_weight", self.term_weight)


#: the old name (issue 34: one name per concept), kept so user code keeps working
Feedback = PseudoFeedback


@dataclass(frozen=True, slots=True)
class Entities:
    """Entity-centred expansion: the proper nouns of the ``top`` best results of a first pass
    (see :func:`proper_nouns`; the terms of those in at most ``max_share`` of the scope's
    items: a name on every turn tells nothing) form a keyword query whose min-max normalised
    scores add ``weight`` (in units of the best fused score) to a result's score."""

    top: int = 3
    weight: float = 0.2
    max_share: float = 0.05

    def __post_init__(self) -> None:
        check_count("Entities", "top", self.top)
        check_number("Entities", "weight", self.weight)
        check_number("Entities", "max_share", self.max_share, high=1.0)


def feedback_vector(query: npt.NDArray[np.float32],
                    top_vectors: Sequence[npt.NDArray[np.float32]],
                    weight: float) -> npt.NDArray[np.float32]:
    """The unit vector of ``query + weight * mean(top_vectors)`` (``query`` when none)."""
    if not top_vectors or weight == 0:
        return query
    centroid = np.mean(np.stack(top_vectors), axis=0)
    moved = query + weight * centroid
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else query


def distinctive_terms(top_terms: Iterable[Sequence[str]], doc_freq: Mapping[str, int],
                      n_docs: int, *, exclude: Iterable[str], limit: int) -> list[str]:
    """The ``limit`` terms of the top hits with the highest summed tf-idf (idf over the
    scope's ``n_docs`` items), leaving out ``exclude`` (the query's own terms); ties by term."""
    skip = set(exclude)
    weight: dict[str, float] = {}
    for terms in top_terms:
        for term in terms:
            df = doc_freq.get(term, 0)
            if term in skip or df <= 0 or n_docs <= 0:
                continue
            weight[term] = weight.get(term, 0.0) + math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    return sorted(weight, key=lambda term: (-weight[term], term))[:limit]


_WORD = re.compile("[^\\W\\d_][\\w'\u2019-]*")
# a word after one of these (and any spaces) starts a sentence; so does one after a line break
_SENTENCE_END = frozenset('.!?:;"\u201c')


def proper_nouns(text: str) -> list[str]:
    """Capitalised words of ``text`` that do not start a sentence (nor follow ``"Name:"``),
    in order, then the person names of its Chinese (:func:`han_names`), deduplicated: a cheap
    stand-in for named entities. Text without Han characters gets the capitalised words
    alone; in text with them, a Latin word ends where Han characters begin
    (``"去Boston出差"`` gives ``Boston``)."""
    han = _HAN.search(text) is not None
    # a Han run stands in as a lowercase word: it separates words and starts no sentence
    latin = _HAN_WORD.sub(" x ", text) if han else text
    found: dict[str, None] = {}
    for match in _WORD.finditer(latin):
        word = match.group()
        if len(word) < 2 or not word[0].isupper():
            continue
        # look back over the spaces before the word only: searching all the text before it
        # for each word made a 141k-character item cost 2 s
        start = gap = match.start()
        while gap and latin[gap - 1].isspace():
            gap -= 1
        if not gap or latin[gap - 1] in _SENTENCE_END or "\n" in latin[gap:start]:
            continue
        found.setdefault(word, None)
    if han:  # no Han character, no tagging: English text pays nothing
        for name in han_names(text):
            found.setdefault(name, None)
    return list(found)


_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HAN_WORD = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def han_names(text: str) -> list[str]:
    """Person names in the Chinese of ``text``, in order, deduplicated: the words jieba's
    part-of-speech tagger marks as names (``nr``, ``nrfg``, ``nrt``), two characters or more.

    Two repairs for names the segmenter cuts: a one-character name word is a surname cut off a
    given name that is also a dictionary word (``周`` + ``建国``, ``董`` + ``浩然``), joined to
    the word after it when that is one or two Han characters; and one of about a hundred
    commonest surnames the tagger read as another word is joined to the two-character word
    after it (``郑``/place + ``春生``, ``方``/noun + ``启航``) under the guards of
    :func:`_is_cut_surname`. The tagger and the second repair also find a few words that are
    not names (``杭州人``, ``张北京``); the stages keep only terms rare in the scope, which
    drops most of them.
    """
    if not _HAN.search(text):
        return []
    # tagged in pieces: the tagger holds the interpreter lock while it works, which a long
    # text would make other threads wait out (a megabyte of Chinese takes most of a second)
    tagger = _tagger()
    tagged: list[tuple[str, str]] = [pair for piece in han_pieces(text)
                                     for pair in tagger.tag(piece) if pair[0].strip()]
    found: dict[str, None] = {}
    index = 0
    while index < len(tagged):
        word, tag = tagged[index]
        before = tagged[index - 1] if index else None
        after = tagged[index + 1] if index + 1 < len(tagged) else None
        index += 1
        if not _HAN_WORD.fullmatch(word):
            continue
        if tag.startswith("nr"):
            if (len(word) == 1 and after is not None and len(after[0]) <= 2
                    and _HAN_WORD.fullmatch(after[0])):
                word += after[0]
                index += 1
        elif after is not None and _is_cut_surname(word, tag, before, after):
            word += after[0]
            index += 1
        else:
            continue
        if len(word) >= 2:
            found.setdefault(word, None)
    return list(found)


#: about the hundred most common Chinese surnames (by how many people hold them)
_COMMON_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林高罗郑梁谢宋唐许韩邓冯曹彭曾肖田董潘袁蔡蒋余于杜叶"
    "程魏苏吕丁任卢姚沈钟姜崔谭陆范汪廖石金韦贾夏付傅方邹熊白孟秦邱侯江尹薛闫段雷龙黎史陶贺"
    "毛郝顾龚邵万覃武钱戴严欧莫孔向常汤")
#: tags of words that are no given name: particles, pronouns, numerals, measure words...
_FUNCTION_TAGS = ("c", "d", "e", "f", "m", "o", "p", "q", "r", "t", "u", "x", "y", "z")
#: tags that say a surname character is used as an ordinary word (向, 常, 高, 付 as words)
_WORD_TAGS = ("a", "d", "p", "v")
#: tags of a given name the tagger did recognise as a name or a proper noun
_NAME_TAGS = ("nr", "nz", "ns")
#: words before a surname character that make it a measure word (每张, 几张)
_COUNTING = frozenset("这那哪几每一两多")
#: surnames that are also measure words
_MEASURE_WORDS = frozenset("张段")


def _is_cut_surname(word: str, tag: str, before: tuple[str, str] | None,
                    after: tuple[str, str]) -> bool:
    """Whether ``word`` (tagged ``tag``) is a common surname the segmenter cut off the
    two-character given name ``after`` it. Not when ``after`` is a particle, pronoun,
    numeral...; not when it is a whole name already (向王芳: 王芳); not when the character
    reads as a preposition, adverb, adjective or verb (向老师, 常联系, 高成绩) unless ``after``
    was tagged a name or proper noun; and not when the word ``before`` makes it a measure
    word (多张照片, 办了张卡)."""
    if len(word) != 1 or word not in _COMMON_SURNAMES:
        return False
    name, name_tag = after
    if len(name) != 2 or not _HAN_WORD.fullmatch(name) or name_tag.startswith(_FUNCTION_TAGS):
        return False
    if name_tag.startswith("nr") and name[0] in _COMMON_SURNAMES:
        return False
    if tag.startswith(_WORD_TAGS) and not name_tag.startswith(_NAME_TAGS):
        return False
    if before is None:
        return True
    counted = before[1].startswith("m") or before[0][-1:] in _COUNTING
    # 张 and 段 are measure words too: 办了张卡
    return not (counted or (word in _MEASURE_WORDS and before[0].endswith("了")))


def _tagger() -> Any:
    """jieba's tagger (``rjieba``, already the tokenizer's segmenter), imported on first use."""
    import rjieba

    return rjieba
