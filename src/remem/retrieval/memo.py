"""Memoising per-text readings of candidates (names, time words, questions).

A store's searches keep meeting the same candidates, so the stages that read each candidate's
text remember what they read, but only for texts up to :data:`SHORT_TEXT` characters: a cache
of a few thousand long documents would hold megabytes each, and a search reads few of them.

A store's threads (and a server's tenants) share these memos: ``functools.lru_cache`` keeps its
table consistent under threads, and the wrapped readings are pure functions of the text, so a
race at worst reads one text twice (``tests/retrieval/test_cache_races.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

__all__ = ["SHORT_TEXT", "memoise_short_texts"]

SHORT_TEXT = 1000
"""The longest text (in characters) whose reading is remembered."""

T = TypeVar("T")


def memoise_short_texts(size: int) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Wrap a pure function of a text so that the last ``size`` texts of at most
    :data:`SHORT_TEXT` characters are answered from memory; longer texts are read each time."""

    def wrap(read: Callable[[str], T]) -> Callable[[str], T]:
        cached = lru_cache(maxsize=size)(read)

        @wraps(read)
        def memoised(text: str) -> T:
            return cached(text) if len(text) <= SHORT_TEXT else read(text)

        memoised.cache_info = cached.cache_info  # type: ignore[attr-defined]
        return memoised

    return wrap
