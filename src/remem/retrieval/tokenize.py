"""Keyword tokenization for Chinese, English and text that mixes them.

One tokenizer turns both stored text and queries into terms, so they meet in the keyword
index. Its ``name`` is recorded in the database: terms made by another tokenizer would not
match, so a store refuses to mix them.

The default:

* normalises with NFKC (full-width letters and digits become ASCII) and case-folds;
* splits runs of Han characters into words with jieba's dictionary (``rjieba``, the Rust
  port: same segmentation as ``jieba``, about 30 times faster, no start-up cost to speak of).
  In ``search`` segmentation long words also yield their dictionary sub-words
  (``中华人民共和国`` also gives ``中华``, ``人民``, ``共和国``), so a query that segments a
  phrase differently still meets the stored text;
* splits everything else on non-word characters, drops possessive ``'s`` and joins other
  apostrophes (``don't`` -> ``dont``);
* drops stop words (function words that carry no topic) in both languages, then reduces
  English words to their Snowball (Porter 2) stem, so ``hiking`` meets ``hike``. Both were
  decided by measurement on LoCoMo: see ``docs/search.md``.

Chinese question words (什么, 哪里, 多少, 谁…) are not stop words, and queries are cut like
stored text: in a conversation the turn before an answer is often the question, and it is in
the answer's keyword context. Dropping them from queries, dropping single-character words or
cutting queries into whole words was measured on the Chinese sets in ``tests/data`` and kept
none: hybrid recall within a point on one, up to 4 points lower on the other ("Chinese" in
``docs/search.md``). So was indexing (and querying) Han characters or character bigrams
besides the words: keyword recall alone rises by up to 15 points, but fused with vectors
they lower hybrid recall for two or three of the ten people of ``zh_daily``; not kept.

Hostile text costs time linear in its length, and no term grows without bound:

* a word longer than :data:`STEM_MAX_WORD` characters is not stemmed (Snowball's time grows
  with the square of a word's length: ``"y" * 100_000`` took a second, 300,000 took 18);
* a term longer than :data:`MAX_TERM` characters is cut to its beginning plus a hash of the
  whole of it (:func:`bounded_term`), so a posting's row stays far below PostgreSQL's index
  row limit (about 2,700 bytes) while the same long word in a query still meets it;
* a Han run is segmented in pieces of :data:`HAN_PIECE` characters, so the segmenter (which
  holds the interpreter lock while it works) never stalls other threads for long.

None of these changes the terms of ordinary text (no English word comes near 64 letters, nor a
Chinese sentence near 4,096 characters without punctuation), so the name stays.

One tokenizer serves every thread of a store (and a server's tenants): each thread stems with
a Snowball stemmer of its own (the stemmer keeps the word it works on in the object, so a
shared one mixes words of two threads up). A lock around one shared stemmer was measured too:
same speed in one thread, slower under contention (``benchmarks/hostile_text.py --stemmers``:
4 threads of 50,000 new words, 23-25 µs a word with a stemmer per thread, 30-34 µs with a
lock). The word memo only ever holds terms computed this way; it is a plain dict, whose single
operations (read, write, clear) are atomic, so two threads at worst compute a word twice.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

__all__ = ["CHINESE_STOPWORDS", "ENGLISH_STOPWORDS", "HAN_PIECE", "MAX_TERM", "STEM_MAX_WORD",
           "DefaultTokenizer", "Tokenizer", "bounded_term", "han_pieces", "han_share"]

STEM_MAX_WORD = 64
"""Words longer than this many characters are indexed as they are, not stemmed. The longest
English words in dictionaries have 45 letters; above that a "word" is an identifier, a hash or
junk, which a stem would not help, and Snowball's time grows with the square of the length."""

MAX_TERM = 128
"""The most characters a term holds (:func:`bounded_term`): at most 512 bytes in UTF-8, far
below PostgreSQL's limit of about 2,700 bytes per index row, and long enough that a SHA-512 in
hex (128 characters) stays whole."""

HAN_PIECE = 4096
"""Han runs longer than this many characters are segmented piece by piece (about a millisecond
each). Chinese text has punctuation long before that; a word across two pieces is cut in two."""

_DIGEST_CHARS = 16  # hex digits of the hash that ends a cut term


@runtime_checkable
class Tokenizer(Protocol):
    """Turns text into keyword terms."""

    @property
    def name(self) -> str:
        """A stable name, recorded with the keyword index; change it when the output changes."""
        ...

    def tokenize(self, text: str) -> list[str]:
        """The terms of ``text``, in order, repeats kept (term frequency counts them)."""
        ...


# Function words: articles, pronouns, auxiliaries, prepositions, conjunctions and fillers.
_ENGLISH = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves im ive id youre youve
theyre thats whats dont doesnt didnt isnt wasnt arent werent cant couldnt wont wouldnt
shouldnt hes shes lets oh ok yeah yes hey hi wow also really
"""
ENGLISH_STOPWORDS = frozenset(_ENGLISH.split())

# Particles, pronouns and auxiliaries that jieba emits as separate words.
_CHINESE = """
的 了 着 过 是 在 和 与 及 或 也 都 就 还 又 很 太 吗 呢 吧 啊 呀 哦 嗯 哈 啦 嘛 么 我 你 他 她
它 我们 你们 他们 她们 它们 这 那 这个 那个 这些 那些 一个 有 没 没有 不 被 把 给 让 对 从 向
到 为 为了 以 之 所以 因为 但是 但 而 而且 如果 就是 还是 可以 会 能 要 想 说 去 来 上 下 里
"""
CHINESE_STOPWORDS = frozenset(_CHINESE.split())

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# a letter or digit that is not Han, as one character class (a look-ahead before each
# character made the scan ten times slower, and the scan holds the interpreter lock)
_WORD_CHAR = rf"[^\W_{_HAN}]"
_RUN = re.compile(rf"([{_HAN}]+)|({_WORD_CHAR}+(?:['\u2019]{_WORD_CHAR}+)*)")
# the same runs in ASCII text (no Han, the only apostrophe is ASCII): the words come out
# without the tuples of two groups
_ASCII_RUN = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
_POSSESSIVE = ("'s", "\u2019s")
_NOT_HAN = re.compile(rf"[^{_HAN}]")
#: distinct words a tokenizer remembers the term of before it starts over (a few MB)
_MEMO_WORDS = 200_000

_segmenter_lock = threading.Lock()
_segmenter: Any = None


def han_share(text: str) -> float:
    """The share of Han characters among the letters and digits of ``text`` (0.0 for none):
    how much of it is written in Chinese."""
    han = other = 0
    for run_han, word in _RUN.findall(text):
        han += len(run_han)
        other += len(word)
    return han / (han + other) if han + other else 0.0


def bounded_term(term: str) -> str:
    """``term`` if it has at most :data:`MAX_TERM` characters, else its beginning, ``~`` and
    16 hex digits of a hash of the whole term (:data:`MAX_TERM` characters in all): the same
    long word always gives the same term, two that only share a beginning do not. ``~`` is
    never part of a word, so a cut term cannot be mistaken for one that was not cut."""
    if len(term) <= MAX_TERM:
        return term
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"),
                             digest_size=_DIGEST_CHARS // 2).hexdigest()
    return f"{term[:MAX_TERM - _DIGEST_CHARS - 1]}~{digest}"


def han_pieces(text: str, size: int = HAN_PIECE) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters for the segmenter, each ending just
    after the last character in its reach that is not Han (a space, a punctuation mark, a
    Latin letter), so no Chinese word is cut; a piece of Han alone is cut at ``size``. Time
    linear in the text."""
    start = 0
    while len(text) - start > size:
        end = start + size
        # the window after its first character, reversed: the first match is the last
        # character that is not Han
        back = _NOT_HAN.search(text[end - 1:start:-1])
        if back is not None:
            end -= back.start()
        yield text[start:end]
        start = end
    if start < len(text):
        yield text[start:]


def _rjieba() -> Any:
    """The Chinese segmenter, imported on first use (keeps ``import remem`` light)."""
    global _segmenter
    if _segmenter is None:
        with _segmenter_lock:
            if _segmenter is None:
                import rjieba

                _segmenter = rjieba
    return _segmenter


def _english_stemmer() -> Any:
    """A new English Snowball stemmer (the import costs start-up time: done on first use)."""
    import snowballstemmer  # type: ignore[import-untyped]

    return snowballstemmer.stemmer("english")


class DefaultTokenizer:
    """Chinese + English tokenizer; see the module docstring.

    ``stem``: reduce English words to their Snowball stem (``running`` -> ``run``).
    ``stopwords``: drop function words. ``search_mode``: also emit sub-words of long Chinese
    words.
    """

    def __init__(self, *, stem: bool = True, stopwords: bool = True,
                 search_mode: bool = True) -> None:
        self.stem = stem
        self.stopwords = stopwords
        self.search_mode = search_mode
        # a stemmer per thread, made on the thread's first word (see the module docstring)
        self._local = threading.local()
        self._new_stemmer: Callable[[], Any] | None = None
        if stem:  # snowballstemmer is imported with the first stemmer, not before
            self._new_stemmer = _english_stemmer
        # word -> its term ("" when it is dropped): most words repeat, so each distinct word
        # is cleaned, checked against the stop words and stemmed once
        self._terms = _WordTerms(self._latin_term)

    @property
    def name(self) -> str:
        """E.g. ``remem-v1+stop+search`` (the options are part of the name)."""
        parts = ["remem-v1"]
        if self.stem:
            parts.append("stem")
        if self.stopwords:
            parts.append("stop")
        if self.search_mode:
            parts.append("search")
        return "+".join(parts)

    def tokenize(self, text: str) -> list[str]:
        """Terms of ``text``; see the class docstring."""
        if text.isascii():
            # NFKC leaves ASCII unchanged and casefold is lower: the common case skips both
            # and the Han branch
            terms = self._terms
            return [term for term in map(terms.__getitem__, _ASCII_RUN.findall(text.lower()))
                    if term]
        text = unicodedata.normalize("NFKC", text).casefold()
        out: list[str] = []
        for han, word in _RUN.findall(text):
            if han:
                out.extend(self._han_words(han))
            else:
                term = self._terms[word]
                if term:
                    out.append(term)
        return out

    def _han_words(self, run: str) -> Iterable[str]:
        rjieba = _rjieba()
        cut = rjieba.cut_for_search if self.search_mode else rjieba.cut
        for piece in han_pieces(run):
            for word in cut(piece):
                if self.stopwords and word in CHINESE_STOPWORDS:
                    continue
                yield word if len(word) <= MAX_TERM else bounded_term(word)

    def _latin_term(self, word: str) -> str:
        """The term of one non-Han word, ``""`` when it is dropped (a stop word, or nothing
        left once apostrophes go)."""
        if word.endswith(_POSSESSIVE):
            word = word[:-2]
        if "'" in word or "\u2019" in word:
            word = word.replace("'", "").replace("\u2019", "")
        if not word or (self.stopwords and word in ENGLISH_STOPWORDS):
            return ""
        if len(word) > STEM_MAX_WORD:
            return bounded_term(word)
        if self._new_stemmer is not None and word.isalpha():
            local = self._local
            try:
                stemmer = local.stemmer
            except AttributeError:  # this thread's first word
                stemmer = local.stemmer = self._new_stemmer()
            return str(stemmer.stemWord(word))
        return word


class _WordTerms(dict[str, str]):
    """A bounded memo of word -> term that computes what it lacks (a dict lookup per word on
    the hot path, in C). Words longer than :data:`STEM_MAX_WORD` are computed each time
    (cheaply: they are not stemmed) and never kept, so the memo's size in bytes is bounded too.
    Threads share it: each operation on the dict is atomic, and ``compute`` is pure."""

    def __init__(self, compute: Callable[[str], str]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, word: str) -> str:
        term = self._compute(word)
        if len(word) <= STEM_MAX_WORD:
            if len(self) >= _MEMO_WORDS:  # bound the memo; terms are cheap to redo
                self.clear()
            self[word] = term
        return term
