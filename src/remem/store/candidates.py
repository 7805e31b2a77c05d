"""The candidate seam of ranked search: what a backend hands the shared ranking code.

A search with a query gets, per signal, the best candidates under its prefix, filter and time
range from the backend (:class:`CandidateSource`); fusion and re-ranking then run in pure code
(:func:`remem.retrieval.ranking.rank_candidates`), the same for every backend. The in-memory
store answers from dictionaries and a NumPy matrix, SQLite from its tables and an in-process
matrix, PostgreSQL from its tables and pgvector.

:func:`expand_candidates` runs the expansion stages of a :class:`Ranking` (pseudo-relevance
feedback, entities) against a source: a first fusion picks the top hits, then the source is
searched again from them. It is shared by every backend, like the ranking itself, as is
:func:`relevance_reader`, which measures results on the relevance scale
(:mod:`remem.retrieval.relevance`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from remem.retrieval.bm25 import BM25Params, Posting, bm25_scores, idf_weights
from remem.retrieval.decompose import query_parts
from remem.retrieval.expansion import distinctive_terms, feedback_vector, proper_nouns
from remem.retrieval.mentions import Mentions, mention_shares, mentioned_names
from remem.retrieval.neighbours import Neighbours, Shares, neighbour_shares, position_of
from remem.retrieval.options import field_value
from remem.retrieval.ranking import Candidate, Measure, Ranking, rank_candidates
from remem.retrieval.relevance import keyword_share, vector_share
from remem.retrieval.reports import is_self_report
from remem.retrieval.speakers import names_in
from remem.retrieval.timing import asks_when, has_time_expression, is_question

__all__ = ["CandidateSource", "KeywordHits", "ValueMemo", "expand_candidates", "group_reader",
           "relevance_reader"]


@dataclass(frozen=True, slots=True)
class KeywordHits:
    """What a backend returns for a keyword query: postings of the candidates (prefix, filter
    and time range applied) and corpus statistics over the live items under the prefix.

    ``held``: postings of every item the search may return that holds a term, when
    ``postings`` keeps fewer (a backend that checks a filter on the best candidates only);
    ``None``: ``postings`` has them all. Relevance reads which terms a result holds there,
    whether or not it ranked among the keyword candidates."""

    postings: list[Posting]
    doc_freq: dict[str, int]
    n_docs: int
    total_len: int
    held: list[Posting] | None = field(default=None, kw_only=True)


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

    def vector_scores(self, query: npt.NDArray[np.float32], ids: Sequence[int]
                      ) -> Mapping[int, float]:
        """Item id -> the cosine of its best field with the unit ``query``, computed as
        :meth:`vector_hits` scores it (items without a vector are absent), for relevance."""
        ...

    def item_values(self, ids: Sequence[int]) -> Mapping[int, Mapping[str, Any]]:
        """Item id -> its value, for the stages that read the top hits' text or session."""
        ...

    def term_counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        """How many live items under the prefix hold each of ``terms`` (absent: none), and
        how many hold any keyword text: the corpus statistics of :meth:`keyword_hits`
        without its postings."""
        ...


Boosts = dict[str, tuple[float, list[Candidate]]]  # a Shares list is not min-max normalised


class ValueMemo:
    """A :class:`CandidateSource` that reads each item's value at most once per search (the
    speaker and session stages both read the candidates' values); the rest is delegated."""

    def __init__(self, source: CandidateSource) -> None:
        self.source = source
        self._values: dict[int, Mapping[str, Any]] = {}

    def keyword_hits(self, terms: list[str], depth: int | None = None) -> KeywordHits:
        return self.source.keyword_hits(terms, depth)

    def vector_hits(self, query: npt.NDArray[np.float32], depth: int) -> list[Candidate]:
        return self.source.vector_hits(query, depth)

    def event_times(self, ids: Sequence[int]) -> Mapping[int, float]:
        return self.source.event_times(ids)

    def item_vectors(self, ids: Sequence[int]) -> Mapping[int, npt.NDArray[np.float32]]:
        return self.source.item_vectors(ids)

    def vector_scores(self, query: npt.NDArray[np.float32], ids: Sequence[int]
                      ) -> Mapping[int, float]:
        return self.source.vector_scores(query, ids)

    def term_counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        return self.source.term_counts(terms)

    def item_values(self, ids: Sequence[int]) -> Mapping[int, Mapping[str, Any]]:
        missing = [i for i in dict.fromkeys(ids) if i not in self._values]
        if missing:
            self._values.update(self.source.item_values(missing))
        return {i: self._values[i] for i in ids if i in self._values}


def expand_candidates(source: CandidateSource, ranking: Ranking,
                      lists: dict[str, list[Candidate]], *, query: str,
                      query_vector: npt.NDArray[np.float32] | None,
                      query_terms: Sequence[str],
                      item_texts: Callable[[Mapping[str, Any]], str] | None,
                      tokenize: Callable[[str], list[str]] | None,
                      bm25: BM25Params, depth: int) -> Boosts:
    """Run ``ranking``'s candidate stages and return their boosts for
    :func:`~remem.retrieval.ranking.rank_candidates`. First the stages that search again
    (query parts, feedback, entities): the vector list may be replaced by a search from the
    moved query, and extra keyword lists come back as boosts. Then the stages that read the
    candidates (speakers, timing, questions, reports, mentions, neighbours) run on the final
    lists. ``item_texts`` turns a value into its keyword text and ``tokenize`` that into
    terms (``None``: no keyword index)."""
    found = _search_again(source, ranking, lists, query=query, query_vector=query_vector,
                          query_terms=query_terms, item_texts=item_texts, tokenize=tokenize,
                          bm25=bm25, depth=depth)
    # the per-candidate marks read the final lists: an item feedback dropped from the vector
    # list is no candidate any more, and a mark alone must not bring it back
    boosts = _candidate_marks(source, ranking, lists, query)
    boosts.update(found)
    if ranking.mentions is not None and tokenize is not None and "keyword" in lists:
        mentions = _mention_shares(source, lists, ranking.mentions, query_terms, tokenize)
        if mentions:
            boosts["mentions"] = (ranking.mentions.weight, mentions)
    if ranking.neighbours is not None:
        shares = _neighbour_shares(source, ranking, lists, ranking.neighbours)
        if shares:
            boosts["neighbours"] = (ranking.neighbours.weight, shares)
    return boosts


def _neighbour_shares(source: CandidateSource, ranking: Ranking,
                      lists: Mapping[str, Sequence[Candidate]], stage: Neighbours) -> Shares:
    """Each candidate's share of its neighbours' fused scores (signals only, before any other
    stage), in units of the best fused score."""
    plain = Ranking(fusion=ranking.fusion, rrf_k=ranking.rrf_k, weights=ranking.weights,
                    han_keyword_factor=1.0, keyword_coverage=ranking.keyword_coverage,
                    candidates=ranking.candidates)
    fused = rank_candidates(lists, plain, needed=len({i for c in lists.values()
                                                      for i, _, _ in c}))
    scale = max((r.score for r in fused), default=0.0)
    if scale <= 0.0:
        return Shares()
    keys = {r.item_id: r.sort_key for r in fused}
    # a session value is scoped by its namespace (the first part of the sort key): two
    # conversations under the prefix may both have a session 1
    positions = {item_id: ((keys[item_id][0], where[0]), where[1]) for item_id, value in
                 source.item_values([r.item_id for r in fused]).items()
                 if (where := position_of(value, stage)) is not None}
    shares = neighbour_shares({r.item_id: r.score for r in fused}, positions, stage,
                              tie_keys=keys)
    return Shares(sorted(((i, keys[i], share / scale) for i, share in shares.items()),
                         key=lambda c: (-c[2], c[1])))


def _candidate_marks(source: CandidateSource, ranking: Ranking,
                     lists: Mapping[str, Sequence[Candidate]], query: str) -> Boosts:
    """The stages that mark candidates of ``lists`` by their own value: speakers, timing,
    questions and reports, each a list of the marked candidates scoring 1."""
    boosts: Boosts = {}
    if ranking.speakers is not None:
        boosts["speakers"] = (ranking.speakers.weight,
                              _named_speakers(source, lists, query, ranking.speakers.field,
                                              ranking.speakers.requires))
    timing = ranking.timing
    if timing is not None and (not timing.only_when or asks_when(query)):
        boosts["timing"] = (timing.weight,
                            _text_matches(source, lists, timing.field, has_time_expression,
                                          timing.requires))
    if ranking.questions is not None:
        # a penalty: a negative weight subtracts from the fused score
        boosts["questions"] = (-ranking.questions.weight,
                               _text_matches(source, lists, ranking.questions.field,
                                             is_question, ranking.questions.requires))
    if ranking.reports is not None:
        boosts["reports"] = (ranking.reports.weight,
                             _text_matches(source, lists, ranking.reports.field,
                                           is_self_report))
    return boosts


def _search_again(source: CandidateSource, ranking: Ranking,
                  lists: dict[str, list[Candidate]], *, query: str,
                  query_vector: npt.NDArray[np.float32] | None, query_terms: Sequence[str],
                  item_texts: Callable[[Mapping[str, Any]], str] | None,
                  tokenize: Callable[[str], list[str]] | None, bm25: BM25Params,
                  depth: int) -> Boosts:
    """The stages that search the source again: one keyword search per part of a
    coordinated query, then from the first pass's top hits the feedback (which may replace
    ``lists["vector"]``) and the entities."""
    boosts: Boosts = {}
    if ranking.decompose is not None and tokenize is not None and "keyword" in lists:
        boosts.update(_part_boosts(source, query, ranking.decompose.weight, tokenize, bm25,
                                   depth))
    feedback, entities = ranking.feedback, ranking.entities
    if feedback is None and entities is None:
        return boosts
    top_n = max(stage.top for stage in (feedback, entities) if stage is not None)
    plain = replace(ranking, feedback=None, entities=None, sessions=None, spread=None,
                    recency=None, mmr=None, min_score=None)
    top = [r.item_id for r in rank_candidates(lists, plain, needed=top_n)]
    if not top:
        return boosts
    if feedback is not None and feedback.vector > 0 and query_vector is not None \
            and "vector" in lists:
        found = source.item_vectors(top[:feedback.top])
        moved = feedback_vector(query_vector, [found[i] for i in top[:feedback.top]
                                               if i in found], feedback.vector)
        lists["vector"] = source.vector_hits(moved, depth)
    if item_texts is None or tokenize is None or "keyword" not in lists:
        return boosts
    texts = {i: item_texts(value) for i, value in source.item_values(top).items()}
    if feedback is not None and feedback.terms > 0:
        top_terms = [tokenize(texts[i]) for i in top[:feedback.top] if i in texts]
        pool = sorted({t for terms in top_terms for t in terms} - set(query_terms))
        if pool:
            hits = source.keyword_hits(pool, None)
            chosen = distinctive_terms(top_terms, hits.doc_freq, hits.n_docs,
                                       exclude=query_terms, limit=feedback.terms)
            boosts["feedback"] = (feedback.term_weight, _bm25(hits, chosen, bm25, depth))
    if entities is not None:
        names = [name for i in top[:entities.top] if i in texts
                 for name in proper_nouns(texts[i])]
        pool = sorted({t for name in names for t in tokenize(name)})
        if pool:
            hits = source.keyword_hits(pool, None)
            most = entities.max_share * hits.n_docs
            chosen = [t for t in pool if 0 < hits.doc_freq.get(t, 0) <= most]
            boosts["entities"] = (entities.weight, _bm25(hits, chosen, bm25, depth))
    return boosts


def _mention_shares(source: CandidateSource, lists: Mapping[str, Sequence[Candidate]],
                    stage: Mentions, query_terms: Sequence[str],
                    tokenize: Callable[[str], list[str]]) -> Shares:
    """Each candidate's share of the query terms matched by the other candidates naming the
    same person (:func:`~remem.retrieval.mentions.mention_shares`), names too common in the
    scope left out."""
    if not query_terms:
        return Shares()
    keys = {item_id: key for cands in lists.values() for item_id, key, _ in cands}
    texts = {item_id: text for item_id, value in source.item_values(list(keys)).items()
             if isinstance(text := field_value(value, stage.field), str)
             and (stage.requires is None or field_value(value, stage.requires) is not None)}
    found = {item_id: mentioned for item_id, text in texts.items()
             if (mentioned := mentioned_names(text))}
    counts = Counter(name for mentioned in found.values() for name in mentioned)
    # a name only one candidate mentions groups nothing: its scope frequency is not read
    name_terms = {name: tokenize(name) for name, n in counts.items() if n > 1}
    # a person the query names is found by name already; grouping by them lifts all their
    # messages alike
    asked = set(query_terms)
    name_terms = {name: terms for name, terms in name_terms.items()
                  if not asked.intersection(terms)}
    pool = sorted({term for terms in name_terms.values() for term in terms})
    if not pool:
        return Shares()
    doc_freq, n_docs = source.term_counts(pool)
    most = stage.max_share * n_docs
    rare = {name for name, terms in name_terms.items()
            if terms and 0 < min(doc_freq.get(t, 0) for t in terms) <= most}
    grouped = {item_id: kept for item_id, mentioned in found.items()
               if (kept := [name for name in mentioned if name in rare])}
    item_terms = {item_id: tokenize(texts[item_id]) for item_id in grouped}
    shares = mention_shares(query_terms, item_terms, grouped)
    return Shares(sorted(((i, keys[i], share) for i, share in shares.items()),
                         key=lambda c: (-c[2], c[1])))


def _named_speakers(source: CandidateSource, lists: Mapping[str, Sequence[Candidate]],
                    query: str, field: str, requires: str | None = None) -> list[Candidate]:
    """The candidates whose ``field`` names someone the query names (and that carry
    ``requires``, when given), all scoring 1."""
    keys = {item_id: key for cands in lists.values() for item_id, key, _ in cands}
    found: list[Candidate] = []
    named: dict[str, bool] = {}
    for item_id, value in source.item_values(list(keys)).items():
        if requires is not None and field_value(value, requires) is None:
            continue
        who = field_value(value, field)
        if isinstance(who, str):
            if who not in named:
                named[who] = names_in(query, who)
            if named[who]:
                found.append((item_id, keys[item_id], 1.0))
    return sorted(found, key=lambda c: c[1])


def _text_matches(source: CandidateSource, lists: Mapping[str, Sequence[Candidate]],
                  field: str, test: Callable[[str], bool],
                  requires: str | None = None) -> list[Candidate]:
    """The candidates whose ``field`` is a string passing ``test`` (and that carry
    ``requires``, when given), all scoring 1."""
    keys = {item_id: key for cands in lists.values() for item_id, key, _ in cands}
    found: list[Candidate] = []
    for item_id, value in source.item_values(list(keys)).items():
        if requires is not None and field_value(value, requires) is None:
            continue
        text = field_value(value, field)
        if isinstance(text, str) and test(text):
            found.append((item_id, keys[item_id], 1.0))
    return sorted(found, key=lambda c: c[1])


def _part_boosts(source: CandidateSource, query: str, weight: float,
                 tokenize: Callable[[str], list[str]], bm25: BM25Params, depth: int) -> Boosts:
    """One keyword search per part of a coordinated query (``part1``, ``part2``...)."""
    parts = [list(dict.fromkeys(tokenize(part))) for part in query_parts(query)]
    parts = [terms for terms in parts if terms]
    if len(parts) < 2:
        return {}
    hits = source.keyword_hits(sorted({t for terms in parts for t in terms}), None)
    return {f"part{number}": (weight, _bm25(hits, terms, bm25, depth))
            for number, terms in enumerate(parts, 1)}


def _bm25(hits: KeywordHits, terms: Sequence[str], params: BM25Params,
          depth: int) -> list[Candidate]:
    keep = set(terms)
    if not keep:
        return []
    return bm25_scores([p for p in hits.postings if p[2] in keep],
                       doc_freq={t: n for t, n in hits.doc_freq.items() if t in keep},
                       n_docs=hits.n_docs, total_len=hits.total_len, params=params,
                       limit=depth)


def group_reader(source: CandidateSource
                 ) -> Callable[[str, Sequence[int]], Mapping[int, Hashable]]:
    """``(field, ids)`` -> item id -> the value of its ``field`` (the session), for the
    session stages, each reading its own field; items whose field is missing, null or not a
    scalar form no session. The ranking scopes each value by the item's namespace."""

    def read(field: str, ids: Sequence[int]) -> Mapping[int, Hashable]:
        out: dict[int, Hashable] = {}
        for item_id, value in source.item_values(ids).items():
            group = field_value(value, field)
            if isinstance(group, str | int | float) and not isinstance(group, bool):
                out[item_id] = group
        return out

    return read


def relevance_reader(source: CandidateSource, *, keyword: KeywordHits | None,
                     query_vector: npt.NDArray[np.float32] | None,
                     vector_list: Sequence[Candidate] | None) -> Measure:
    """The relevance parts of a search's results (:mod:`remem.retrieval.relevance`).

    ``keyword``: the hits of the query's terms, when the search uses the keyword signal
    (``None``: it does not, or the query has no term); it measures only when some query term
    occurs under the prefix. ``query_vector`` and ``vector_list``: the query's vector and
    the vector signal's candidates for it, when the search uses vectors (the candidates'
    cosines are reused; any other result's are read from ``source``). A list moved by
    pseudo-relevance feedback must not be passed: relevance is measured against the query."""
    idf: dict[str, float] = {}
    query_idf = 0.0
    if keyword is not None:
        idf, query_idf = idf_weights(keyword.doc_freq, keyword.n_docs)
    held: dict[int, list[str]] | None = None
    cosines = {item_id: score for item_id, _, score in vector_list or ()}

    def measure(ids: Sequence[int]) -> dict[int, dict[str, float]]:
        nonlocal held
        parts: dict[int, dict[str, float]] = {item_id: {} for item_id in ids}
        if keyword is not None and query_idf > 0:
            if held is None:
                held = {}
                for item_id, _, term, _, _ in (keyword.held if keyword.held is not None
                                               else keyword.postings):
                    held.setdefault(item_id, []).append(term)
            for item_id in ids:
                parts[item_id]["keyword"] = keyword_share(held.get(item_id, ()), idf, query_idf)
        if query_vector is not None:
            missing = [item_id for item_id in dict.fromkeys(ids) if item_id not in cosines]
            if missing:
                found = source.vector_scores(query_vector, missing)
                cosines.update({item_id: found.get(item_id, 0.0) for item_id in missing})
            for item_id in ids:
                parts[item_id]["vector"] = vector_share(cosines.get(item_id, 0.0))
        return parts

    return measure
