"""The candidate seam of ranked search: what a backend hands the shared ranking code.

A search with a query gets, per signal, the best candidates under its prefix, filter and time
range from the backend (:class:`CandidateSource`); fusion and re-ranking then run in pure code
(:func:`remem.retrieval.ranking.rank_candidates`), the same for every backend. The in-memory
store answers from dictionaries and a NumPy matrix, SQLite from its tables and an in-process
matrix, PostgreSQL from its tables and pgvector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from remem.retrieval.bm25 import Posting
from remem.retrieval.ranking import Candidate

__all__ = ["CandidateSource", "KeywordHits"]


@dataclass(frozen=True, slots=True)
class KeywordHits:
    """What a backend returns for a keyword query: postings of the candidates (prefix, filter
    and time range applied) and corpus statistics over the live items under the prefix."""

    postings: list[Posting]
    doc_freq: dict[str, int]
    n_docs: int
    total_len: int


class CandidateSource(Protocol):
    """One search's view of a backend; every answer is already restricted to the search's
    prefix, filter and time range, and to live items."""

    def keyword_hits(self, terms: list[str], depth: int | None = None) -> KeywordHits:
        """Postings of ``terms`` (distinct) and the BM25 corpus statistics. ``depth``: only
        the postings of the best ``depth`` candidates are needed (``None``: all); a source
        may return more."""
        ...

    def vector_hits(self, query: npt.NDArray[np.float32], depth: int) -> list[Candidate]:
        """The ``depth`` items nearest to the unit ``query`` (plus any tied with the last),
        best first, ties by (namespace, key)."""
        ...

    def event_times(self, ids: Sequence[int]) -> Mapping[int, float]:
        """Item id -> event time (``event_at``, else ``created_at``), for recency."""
        ...

    def item_vectors(self, ids: Sequence[int]) -> Mapping[int, npt.NDArray[np.float32]]:
        """Item id -> its first field's unit vector, for MMR (items without one are absent)."""
        ...
