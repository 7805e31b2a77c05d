"""Hybrid ranking in pure code: fuse per-signal candidate lists, weigh recency, diversify.

Backends produce candidates per signal (``"keyword"``: BM25, ``"vector"``: cosine), each already
restricted to the namespace prefix, the filter and the time range. Everything after that is
here, so every backend ranks the same way:

1. **Fusion.** One signal: its own score. Several: weighted score fusion (``weighted``, the
   default), each signal's scores min-max normalised over its candidates, then a weighted mean
   (a signal that did not find an item adds 0); or reciprocal rank fusion (``rrf``),
   ``sum(w / (k + rank))`` scaled so that first place in every signal scores 1.0. Score fusion
   keeps how much better the best match is than the rest, which rank fusion throws away; it
   measured 4 points of recall@10 better on LoCoMo (``docs/search.md``).
2. **Recency** (optional). The score is multiplied by ``(1 - weight) + weight * 2 ** (-age /
   half_life)``, where age is measured from an explicit "now" back to the item's event time
   (``event_at``, or ``created_at`` when it has none). Relevance stays the main factor;
   recency breaks near-ties and demotes stale matches.
3. **MMR** (optional): maximal marginal relevance re-orders the results so that each next one
   trades relevance (weight ``lambda``) against its similarity to those already picked.
4. **Minimum relevance** (optional): ``min_score`` drops results whose relevance is below it.

Relevance (:mod:`remem.retrieval.relevance`) is each result's match with the query on a fixed
scale from 0 to 1, the same whatever the page, the candidates or the other results; ``score``
(fusion, then the stages, recency and MMR) orders the results and means little outside its
page. ``min_score`` is read on the relevance scale, so it means the same on every page.

Multi-evidence stages (each off unless set; what they are worth is in ``docs/search.md``):
``feedback`` and ``entities`` (:mod:`remem.retrieval.expansion`) search again from the top
hits of a first pass and add what they find as extra signals after fusion, as do ``speakers``
(:mod:`remem.retrieval.speakers`) for the candidates said by someone the query names,
``decompose`` (:mod:`remem.retrieval.decompose`) for each part of a coordinated question, and
``timing`` and ``questions`` (:mod:`remem.retrieval.timing`: time expressions for "when"
questions, a penalty for turns that only ask) and ``reports``
(:mod:`remem.retrieval.reports`: turns in the first person);
``neighbours`` (:mod:`remem.retrieval.neighbours`) gives each candidate a share of the
fused score of the turns next to it in its session, also after fusion, as ``mentions``
(:mod:`remem.retrieval.mentions`) gives it the query terms matched by the candidates naming
the same person;
``sessions`` adds each candidate's session score after that (before recency); ``spread``
re-orders the sorted results across sessions (before MMR) (:mod:`remem.retrieval.sessions`).
``subjects`` (:mod:`remem.retrieval.subjects`) is no part of this ranking: the memory search
runs it around the store's searches, and a store ignores it.

Every result keeps the rank and score it had in each signal, so a user can see why it came back,
and its relevance with each signal's part of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

import numpy as np
import numpy.typing as npt

from remem.errors import InvalidInputError
from remem.retrieval.bm25 import KeywordScores
from remem.retrieval.decompose import Decompose
from remem.retrieval.expansion import Entities, PseudoFeedback
from remem.retrieval.mentions import Mentions
from remem.retrieval.neighbours import Neighbours, Shares
from remem.retrieval.relevance import check_min_score, relevance
from remem.retrieval.reports import SelfReports
from remem.retrieval.sessions import Sessions, Spread, session_boosts, spread_order
from remem.retrieval.speakers import Speakers
from remem.retrieval.subjects import Subjects
from remem.retrieval.timing import QuestionTurns, Timing
from remem.retrieval.tokenize import han_share

__all__ = ["Candidate", "Ranked", "Ranking", "Recency", "rank_candidates"]

#: (item id, tie-break key, score) in rank order
Candidate = tuple[int, tuple[tuple[str, ...], str], float]

Signal = Literal["keyword", "vector"]

#: item ids -> each one's relevance parts, signal -> share in [0, 1]
#: (:mod:`remem.retrieval.relevance`)
Measure = Callable[[Sequence[int]], Mapping[int, Mapping[str, float]]]

#: when fusion reads keyword scores as the query's coverage (see :class:`Ranking`)
Coverage = Literal["han", "always", "never"]


@dataclass(frozen=True, slots=True)
class Recency:
    """Weigh newer memories up. ``half_life``: age at which the recency factor halves.
    ``weight``: 0 ignores recency, 1 ranks by recency times relevance. ``now``: the time ages
    are measured from (``None``: the store's clock at search time); pass the conversation's
    "now" when ranking memories of the past."""

    half_life: timedelta | float = timedelta(days=30)
    weight: float = 0.2
    now: datetime | float | None = None

    def __post_init__(self) -> None:
        seconds = (self.half_life.total_seconds() if isinstance(self.half_life, timedelta)
                   else self.half_life if _is_number(self.half_life) else math.nan)
        if not math.isfinite(seconds) or seconds <= 0:
            raise InvalidInputError(
                "Recency.half_life must be a positive timedelta or number of seconds, "
                f"got {self.half_life!r}"
            )
        if not _is_number(self.weight) or not 0.0 <= self.weight <= 1.0:
            raise InvalidInputError(f"Recency.weight must be within [0, 1], got {self.weight!r}")
        if isinstance(self.now, datetime):
            if self.now.tzinfo is None:
                raise InvalidInputError(
                    "Recency.now must be timezone-aware (e.g. datetime(..., tzinfo=UTC))"
                )
        elif self.now is not None and not (_is_number(self.now) and math.isfinite(self.now)):
            raise InvalidInputError(
                f"Recency.now must be an aware datetime, epoch seconds or None, got {self.now!r}"
            )


@dataclass(frozen=True, slots=True)
class Ranking:
    """How a search with a query ranks its results (see the module docstring).

    ``candidates``: how many results each signal contributes before fusion (at least the
    page's ``offset + limit``). ``weights``: per-signal weights for fusion. ``mmr``: the MMR
    lambda in [0, 1] (``None``: no diversification; needs a vector index).
    ``han_keyword_factor``: multiplies the keyword weight of a query written mostly in Chinese
    (see :meth:`for_query`; 1.0: the same weights for every query). ``keyword_coverage``:
    which queries have their keyword scores fused as coverage of the query instead of min-max
    normalised: ``(score - weakest candidate's) / Σ idf`` of the query terms, capped at 1
    (``"han"``: queries written mostly in Chinese, resolved by :meth:`for_query`, off for
    a ranking used without it; ``"always"``; ``"never"``). ``min_score``: drop results
    whose relevance (in [0, 1], :mod:`remem.retrieval.relevance`) is below it; ``None``:
    keep all. ``feedback``, ``entities``, ``sessions``, ``spread``, ``speakers``,
    ``neighbours``...: the multi-evidence stages (``None``: off).
    """

    fusion: Literal["rrf", "weighted"] = "weighted"
    rrf_k: int = 60
    weights: Mapping[str, float] = field(
        default_factory=lambda: {"keyword": 1.0, "vector": 1.0}
    )
    han_keyword_factor: float = 0.5
    keyword_coverage: Coverage = "han"
    candidates: int = 100
    recency: Recency | None = None
    mmr: float | None = None
    min_score: float | None = None
    feedback: PseudoFeedback | None = None
    entities: Entities | None = None
    sessions: Sessions | None = None
    spread: Spread | None = None
    speakers: Speakers | None = None
    decompose: Decompose | None = None
    timing: Timing | None = None
    questions: QuestionTurns | None = None
    reports: SelfReports | None = None
    neighbours: Neighbours | None = None
    mentions: Mentions | None = None
    subjects: Subjects | None = None

    def __post_init__(self) -> None:
        if self.fusion not in ("rrf", "weighted"):
            raise InvalidInputError(
                f"Ranking.fusion must be 'rrf' or 'weighted', got {self.fusion!r}"
            )
        for name in ("rrf_k", "candidates"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"Ranking.{name} must be an int >= 1, got {value!r}")
        if (not isinstance(self.weights, Mapping)
                or set(self.weights) - {"keyword", "vector"}
                or any(not (_is_number(w) and w >= 0 and math.isfinite(w))
                       for w in self.weights.values())):
            raise InvalidInputError(
                "Ranking.weights maps 'keyword' and/or 'vector' to finite weights >= 0, "
                f"got {self.weights!r}"
            )
        object.__setattr__(self, "weights", dict(self.weights))
        if not (_is_number(self.han_keyword_factor) and math.isfinite(self.han_keyword_factor)
                and self.han_keyword_factor >= 0):
            raise InvalidInputError(
                "Ranking.han_keyword_factor must be a finite number >= 0 (1.0: off), "
                f"got {self.han_keyword_factor!r}"
            )
        if self.keyword_coverage not in ("han", "always", "never"):
            raise InvalidInputError(
                "Ranking.keyword_coverage must be 'han', 'always' or 'never', "
                f"got {self.keyword_coverage!r}"
            )
        if self.recency is not None and not isinstance(self.recency, Recency):
            raise InvalidInputError(
                f"Ranking.recency must be a Recency or None, got {self.recency!r}"
            )
        if self.mmr is not None and not (_is_number(self.mmr) and 0.0 <= self.mmr <= 1.0):
            raise InvalidInputError(f"Ranking.mmr must be within [0, 1], got {self.mmr!r}")
        check_min_score(self.min_score, "Ranking.min_score")
        for name, kind in (("feedback", PseudoFeedback), ("entities", Entities),
                           ("sessions", Sessions), ("spread", Spread),
                           ("speakers", Speakers), ("decompose", Decompose),
                           ("timing", Timing), ("questions", QuestionTurns),
                           ("reports", SelfReports), ("neighbours", Neighbours),
                           ("mentions", Mentions), ("subjects", Subjects)):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise InvalidInputError(
                    f"Ranking.{name} must be a {kind.__name__} or None, got {value!r}"
                )

    def for_query(self, query: str) -> Ranking:
        """The ranking for ``query``: this one, with the keyword weight times
        ``han_keyword_factor`` and ``keyword_coverage="han"`` resolved to ``"always"`` when
        the query is mostly Han characters; otherwise this very ranking, whose ``"han"``
        coverage fusion reads as off.

        Why: segmented Chinese shares everyday words (我, 吃, 喜欢...) between a question and
        many unrelated messages, and min-max fusion gives the best keyword match full marks
        however weak it is, so keywords push paraphrased answers down. Halving their weight
        raised hybrid recall@10 and MRR on both Chinese sets in ``tests/data`` and leaves
        queries in other scripts as they were (``docs/search.md``). Coverage goes further: a
        keyword match counts by how much of the query it matches, not by being the best one.
        """
        if (self.han_keyword_factor == 1.0 and self.keyword_coverage != "han") \
                or han_share(query) <= 0.5:
            return self  # "han" coverage stays unresolved, which fusion reads as off
        weights = dict(self.weights)
        weights["keyword"] = weights.get("keyword", 1.0) * self.han_keyword_factor
        coverage: Coverage = ("always" if self.keyword_coverage == "han"
                              else self.keyword_coverage)
        return replace(self, weights=weights, han_keyword_factor=1.0,
                       keyword_coverage=coverage)

    @property
    def staged(self) -> bool:
        """Whether any multi-evidence stage is on."""
        return any(stage is not None for stage in (self.feedback, self.entities, self.sessions,
                                                   self.spread, self.speakers, self.decompose,
                                                   self.timing, self.questions,
                                                   self.reports, self.neighbours,
                                                   self.mentions))

    @property
    def group_field(self) -> str | None:
        """The value field of the first session stage on, ``sessions`` then ``spread``
        (``None``: neither is on). Each stage groups by its own field: see
        :attr:`group_fields`."""
        for stage in (self.sessions, self.spread):
            if stage is not None:
                return stage.field
        return None

    @property
    def group_fields(self) -> tuple[str, ...]:
        """The distinct value fields the session stages group by, ``sessions``'s first
        (empty: neither is on)."""
        fields = (stage.field for stage in (self.sessions, self.spread) if stage is not None)
        return tuple(dict.fromkeys(fields))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(slots=True)
class Ranked:
    """One fused result: its final score, (rank, score) per signal, and its relevance with
    each signal's part of it (``None`` and empty until measured)."""

    item_id: int
    sort_key: tuple[tuple[str, ...], str]
    score: float
    signals: dict[str, tuple[int, float]]
    relevance: float | None = None
    parts: dict[str, float] = field(default_factory=dict)


def rank_candidates(
    signals: Mapping[str, Sequence[Candidate]],
    ranking: Ranking,
    *,
    needed: int,
    event_times: Callable[[Sequence[int]], Mapping[int, float]] | None = None,
    now: float | None = None,
    vectors: Callable[[Sequence[int]], Mapping[int, npt.NDArray[np.float32]]] | None = None,
    boosts: Mapping[str, tuple[float, Sequence[Candidate]]] | None = None,
    groups: Callable[[str, Sequence[int]], Mapping[int, Hashable]] | None = None,
    measure: Measure | None = None,
) -> list[Ranked]:
    """Fuse, weigh and diversify; return the best ``needed`` results, best first.

    ``boosts``: extra signals found by expansion stages, ``name -> (weight, candidates)``,
    each min-max normalised and added after fusion, times its weight and the best fused
    score (as is the session stage's score). ``event_times``,
    ``vectors`` and ``groups`` (``(field, ids)`` -> item id -> its session) are called once
    (``groups`` once per session field), with the ids of the fused candidates, only when
    recency, MMR or a session stage needs them. A session value names a session within its
    namespace only: two conversations under the prefix, each with a "session 1", are two
    sessions. ``measure`` gives items' relevance parts: called with every fused candidate
    when ``min_score`` filters on relevance, else with the results returned only
    (``None``: results stay unmeasured, and ``min_score`` is refused).
    """
    fused = _fuse(signals, ranking)
    # stage weights are relative to the best fused score, so they mean the same with one
    # signal (raw BM25 or cosine) as with fused scores in [0, 1]
    scale = max((r.score for r in fused), default=0.0)
    if boosts and scale > 0:
        fused = _add_boosts(fused, boosts, scale)
    by_field: dict[str, Mapping[int, Hashable]] = {}
    if ranking.group_fields and fused:
        if groups is None:
            raise InvalidInputError("session stages need the items' session field")
        by_field = {name: _scoped(groups(name, [r.item_id for r in fused]), fused)
                    for name in ranking.group_fields}
    if ranking.sessions is not None and fused:
        added = session_boosts({r.item_id: r.score for r in fused},
                               by_field[ranking.sessions.field], ranking.sessions)
        for entry in fused:
            entry.score += scale * added[entry.item_id]
    if ranking.recency is not None and fused:
        if event_times is None or now is None:
            raise InvalidInputError("recency ranking needs item times and a current time")
        _apply_recency(fused, event_times([r.item_id for r in fused]), ranking.recency, now)
    if ranking.min_score is not None:
        if measure is None:
            raise InvalidInputError("min_score filters on relevance, which needs a measure")
        _measure(fused, measure, ranking)
        fused = [r for r in fused if r.relevance is not None
                 and r.relevance >= ranking.min_score]
    fused.sort(key=lambda r: (-r.score, r.sort_key))
    if ranking.spread is not None:
        by_id = {r.item_id: r for r in fused}
        fused = [by_id[i] for i in spread_order(list(by_id),
                                                by_field.get(ranking.spread.field, {}),
                                                ranking.spread)]
    if ranking.mmr is not None and len(fused) > 1:
        if vectors is None:
            raise InvalidInputError("MMR needs item vectors")
        fused = _mmr(fused, vectors([r.item_id for r in fused]), ranking.mmr, needed)
    fused = fused[:needed]
    if measure is not None:
        _measure(fused, measure, ranking)
    return fused


def _measure(entries: Sequence[Ranked], measure: Measure, ranking: Ranking) -> None:
    """Set the relevance of the entries not measured yet, in one call of ``measure``."""
    todo = [entry for entry in entries if entry.relevance is None]
    if not todo:
        return
    found = measure([entry.item_id for entry in todo])
    for entry in todo:
        entry.parts = dict(found.get(entry.item_id, {}))
        entry.relevance = relevance(entry.parts, ranking.weights)


def _scoped(groups: Mapping[int, Hashable], fused: Sequence[Ranked]
            ) -> dict[int, Hashable]:
    """Each item's group as (namespace, value): a session value is only meaningful within
    its namespace (the first part of the sort key)."""
    return {r.item_id: (r.sort_key[0], groups[r.item_id]) for r in fused
            if r.item_id in groups}


def _fuse(signals: Mapping[str, Sequence[Candidate]], ranking: Ranking) -> list[Ranked]:
    present = {name: cands for name, cands in signals.items() if cands is not None}
    merged: dict[int, Ranked] = {}
    for name, cands in present.items():
        for rank, (item_id, sort_key, score) in enumerate(cands, 1):
            entry = merged.get(item_id)
            if entry is None:
                entry = merged[item_id] = Ranked(item_id, sort_key, 0.0, {})
            entry.signals[name] = (rank, score)
    if len(present) == 1:
        (name,) = present
        for entry in merged.values():
            entry.score = entry.signals[name][1]
        return list(merged.values())
    weights = {name: ranking.weights.get(name, 1.0) for name in present}
    total = sum(weights.values()) or 1.0
    if ranking.fusion == "rrf":
        best = total / (ranking.rrf_k + 1)
        for entry in merged.values():
            entry.score = sum(weights[name] / (ranking.rrf_k + rank)
                              for name, (rank, _) in entry.signals.items()) / best
        return list(merged.values())
    bounds = {}
    for name, cands in present.items():
        scores = [score for _, _, score in cands]
        bounds[name] = (min(scores), max(scores)) if scores else (0.0, 0.0)
    coverage = _coverage_scale(present, ranking)
    for entry in merged.values():
        value = 0.0
        for name, (_, score) in entry.signals.items():
            low, high = bounds[name]
            if name in coverage:
                # above the weakest candidate (which scores 0, as in min-max), in units of
                # the whole query; with no spread, the candidates' own share of the query
                norm = min(1.0, (score - low if high > low else score) / coverage[name])
            else:
                norm = (score - low) / (high - low) if high > low else 1.0
            value += weights[name] * norm
        entry.score = value / total
    return list(merged.values())


def _coverage_scale(present: Mapping[str, Sequence[Candidate]], ranking: Ranking
                    ) -> dict[str, float]:
    """Signal -> the score that means "covers the whole query", for the signals fused as
    coverage: the keyword signal, when the ranking asks for it and its scores carry the
    query's total IDF.

    Why: min-max gives the best keyword match 1.0 however little of the query it matches. In
    Chinese, segmented questions share everyday words (孩子, 现在, 每个月) with many messages,
    so for a paraphrase, whose answer shares no word with it, the best keyword match is such
    a weak one, and it lands beside the answer the vectors found. Measured against the whole
    query's IDF instead of the best match, it scores what it covers. The weakest candidate
    still scores 0: without that anchor the many candidates matching one common word would
    rise above items the keyword signal did not find at all (``docs/search.md``, Chinese)."""
    keyword = present.get("keyword")
    if (ranking.keyword_coverage != "always" or not isinstance(keyword, KeywordScores)
            or keyword.query_idf <= 0):
        return {}
    return {"keyword": keyword.query_idf}


def _add_boosts(fused: list[Ranked], boosts: Mapping[str, tuple[float, Sequence[Candidate]]],
                scale: float) -> list[Ranked]:
    merged = {r.item_id: r for r in fused}
    for name, (weight, cands) in boosts.items():
        if not cands:
            continue
        scores = [score for _, _, score in cands]
        low, high = min(scores), max(scores)
        scaled = isinstance(cands, Shares)  # already in units of the best fused score
        for rank, (item_id, sort_key, score) in enumerate(cands, 1):
            entry = merged.get(item_id)
            if entry is None:
                entry = merged[item_id] = Ranked(item_id, sort_key, 0.0, {})
            entry.signals[name] = (rank, score)
            entry.score += scale * weight * (
                score if scaled else (score - low) / (high - low) if high > low else 1.0)
    return list(merged.values())


def _apply_recency(fused: list[Ranked], times: Mapping[int, float], recency: Recency,
                   default_now: float) -> None:
    now = (recency.now.timestamp() if isinstance(recency.now, datetime)
           else default_now if recency.now is None else float(recency.now))
    half_life = (recency.half_life.total_seconds() if isinstance(recency.half_life, timedelta)
                 else float(recency.half_life))
    by_age = sorted(fused, key=lambda r: -times.get(r.item_id, -math.inf))
    for rank, entry in enumerate(by_age, 1):
        age = max(0.0, now - times.get(entry.item_id, now))
        factor = 2.0 ** (-age / half_life)
        # negative similarities count as zero, so age never improves a bad match
        entry.score = max(entry.score, 0.0) * ((1.0 - recency.weight) + recency.weight * factor)
        entry.signals["recency"] = (rank, factor)


def _mmr(fused: list[Ranked], vectors: Mapping[int, npt.NDArray[np.float32]], lam: float,
         needed: int) -> list[Ranked]:
    top = max(r.score for r in fused)
    relevance = np.array([r.score / top if top > 0 else 0.0 for r in fused])
    dims = next(iter(vectors.values())).shape[0] if vectors else 1
    matrix = np.stack([vectors.get(r.item_id, np.zeros(dims, dtype=np.float32)) for r in fused])
    similarity = matrix @ matrix.T
    chosen: list[int] = []
    max_sim = np.full(len(fused), -np.inf)
    remaining = np.ones(len(fused), dtype=bool)
    while len(chosen) < min(needed, len(fused)):
        gain = lam * relevance - (1.0 - lam) * np.where(np.isinf(max_sim), 0.0, max_sim)
        gain[~remaining] = -np.inf
        pick = int(np.argmax(gain))  # argmax takes the first best: ties keep fused order
        chosen.append(pick)
        remaining[pick] = False
        max_sim = np.maximum(max_sim, similarity[pick])
    return [fused[i] for i in chosen]
