"""Fact search: keyword (BM25), vector and graph signals, fused and reranked.

Signals, each over the facts that pass the validity rule (``as_of`` / ``known_at``):

* ``keyword``: BM25 over fact texts (:func:`remem.retrieval.bm25.bm25_scores`, the store's
  scoring and tokenizer);
* ``vector``: cosine of the query to fact embeddings (when the graph has an embedder);
* ``graph``: facts within ``hops`` of the entities the query names (or of the focal entity),
  found by the recursive expansion, scored ``1 / distance``.

They are fused by :func:`remem.retrieval.ranking.rank_candidates` (weighted score fusion or
RRF; MMR optional). ``rerank="distance"`` then orders by graph distance from the focal entity
(fusion score breaking ties). Every hit carries its path and validity interval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from remem.graph.resolve import name_key
from remem.graph.rows import GraphRows
from remem.graph.types import Fact, FactHit
from remem.retrieval.ranking import Candidate, Ranked, Ranking, rank_candidates

__all__ = ["Expansion", "SearchPlan", "expand", "mentioned_entities", "search"]

Rerank = Literal["fusion", "distance", "mmr"]

#: the graph signal's weight in weighted fusion (each text signal weighs 1): a query that
#: names an entity is mostly asking about its neighbourhood
GRAPH_WEIGHT = 2.0


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """A search's parameters (validated by :meth:`remem.graph.Graph.search`)."""

    query: str
    limit: int
    as_of: float | None
    known_at: float | None
    focal: int | None
    hops: int
    rerank: Rerank
    fusion: Literal["weighted", "rrf"]
    mmr_lambda: float
    candidates: int
    #: postings read per query term at most (its best ones); None: all
    max_postings: int | None = None


@dataclass(frozen=True, slots=True)
class Expansion:
    """Facts reached from seeds: fact id -> (distance, path of entity ids to its nearer end)."""

    reached: dict[int, tuple[int, tuple[int, ...]]]
    facts: dict[int, Fact]


def mentioned_entities(rows: GraphRows, query: str) -> list[int]:
    """Entities the query names: an exact name or alias, or every term of one in the query."""
    terms = rows.tokenizer.tokenize(query)
    have = set(terms)
    near = rows.named_in(name_key(query), terms, 50)
    found = {i for i, e in near.items() if name_key(query) in
             {name_key(n) for n in (e.name, *e.aliases)}}
    for entity in near.values():
        for name in (entity.name, *entity.aliases):
            words = rows.tokenizer.tokenize(name)
            if words and set(words) <= have:
                found.add(entity.id)
                break
    return sorted(found)


def expand(rows: GraphRows, seeds: Sequence[int], hops: int, as_of: float | None,
           known_at: float | None, *, read_facts: bool = True) -> Expansion:
    """Facts within ``hops`` edges of ``seeds`` (distance 1: touching a seed).
    ``read_facts=False``: distances and paths only (``facts`` left empty), what ranking
    needs; search reads the facts of the hits it returns."""
    reach = rows.reach(seeds, hops - 1, as_of, known_at) if hops >= 1 else {}
    facts: dict[int, Fact] = {}
    if read_facts:
        facts = {f.id: f for f in rows.facts_about(reach, as_of=as_of, known_at=known_at)}
        ends_of = [(f.id, f.subject_id, f.object_id) for f in facts.values()]
    else:
        ends_of = rows.ends_about(reach, as_of=as_of, known_at=known_at)
    reached: dict[int, tuple[int, tuple[int, ...]]] = {}
    for fact_id, subject_id, object_id in ends_of:
        ends = [e for e in (subject_id, object_id) if e is not None and e in reach]
        near = min(ends, key=lambda e: (reach[e][0], e))
        depth, path = reach[near]
        reached[fact_id] = (depth + 1, path)
    return Expansion(reached, facts)


#: scores of given ids (exact), when the vector index is approximate: search rescores the
#: other signals' candidates with it
Rescore = Callable[[npt.NDArray[np.float32], list[int]], list[tuple[int, float]]]


def search(rows: GraphRows, plan: SearchPlan, query_vector: npt.NDArray[np.float32] | None,
           vector_top: Callable[[npt.NDArray[np.float32], int], list[tuple[int, float]]],
           vectors: Callable[[list[int]], Mapping[int, npt.NDArray[np.float32]]],
           rescore: Rescore | None = None) -> list[FactHit]:
    """Run ``plan`` inside one read transaction (module docstring)."""
    terms = rows.tokenizer.tokenize(plan.query)
    signals: dict[str, Sequence[Candidate]] = {}
    if terms:
        signals["keyword"] = [(i, ((), f"{i:012d}"), score) for i, score in
                              rows.keyword(terms, plan.as_of, plan.known_at, plan.candidates,
                                           max_postings=plan.max_postings)]
    seeds = [plan.focal] if plan.focal is not None else mentioned_entities(rows, plan.query)
    expansion = expand(rows, seeds, plan.hops, plan.as_of, plan.known_at,
                       read_facts=False) if seeds else Expansion({}, {})
    if query_vector is not None:
        # over-fetch when a time filters: some of the nearest may fail the validity rule
        timed = plan.as_of is not None or plan.known_at is not None
        near = vector_top(query_vector, plan.candidates * (4 if timed else 1))
        if rescore is not None:
            # an approximate index may miss some of what keywords and the graph found (they
            # already passed the time filters): score those exactly, so none loses its
            # vector score to the approximation
            found = {i for i, _ in near}
            others = [c[0] for c in signals.get("keyword", ())] + sorted(expansion.reached)
            extra = rescore(query_vector, [i for i in dict.fromkeys(others) if i not in found])
            near = sorted([*near, *extra], key=lambda p: (-p[1], p[0]))
        if timed:
            valid = rows.valid_ids([i for i, _ in near], as_of=plan.as_of,
                                   known_at=plan.known_at)
            near = [(i, s) for i, s in near if i in valid]
        signals["vector"] = [(i, ((), f"{i:012d}"), s) for i, s in near][:plan.candidates]
    graph: list[Candidate] = []
    if expansion.reached:
        by_distance = sorted(expansion.reached.items(), key=lambda kv: (kv[1][0], kv[0]))
        graph = [(i, ((), f"{i:012d}"), 1.0 / d) for i, (d, _) in
                 by_distance[:plan.candidates * 4]]
    if not signals and not graph:
        return []
    ranked = _fuse(signals, graph, plan)
    mmr = plan.mmr_lambda if plan.rerank == "mmr" and query_vector is not None else None
    if mmr is not None:
        ranked = rank_candidates({"fused": [(r.item_id, r.sort_key, r.score) for r in ranked]},
                                 Ranking(mmr=mmr, candidates=plan.candidates),
                                 needed=plan.limit, vectors=lambda ids: vectors(list(ids)))
    if plan.rerank == "distance":
        ranked.sort(key=lambda r: (expansion.reached.get(r.item_id, (10**9, ()))[0],
                                   -r.score, r.item_id))
    ranked = ranked[:plan.limit]
    ids = [r.item_id for r in ranked]
    facts = {**rows.facts([i for i in ids if i not in expansion.facts]), **expansion.facts}
    touched = {e for i in ids if i in facts
               for e in (facts[i].subject_id, facts[i].object_id) if e is not None}
    touched |= {e for i in ids if i in expansion.reached for e in expansion.reached[i][1]}
    names = {i: e.name for i, e in rows.entities(touched).items()}
    hits: list[FactHit] = []
    for r in ranked:
        fact = facts.get(r.item_id)
        if fact is None:
            continue
        hits.append(hit_of(fact, r.score, r.signals, expansion.reached.get(fact.id), names))
    return hits


def _fuse(signals: dict[str, Sequence[Candidate]], graph: list[Candidate],
          plan: SearchPlan) -> list[Ranked]:
    """Fuse the text signals (the store's fusion), then the graph signal.

    With weighted fusion the graph score enters as it is (``1 / distance``), not min-max
    normalised: a fact two hops from the entity the query names keeps half the weight of a
    fact touching it, instead of dropping to zero behind the nearest ones. It weighs
    :data:`GRAPH_WEIGHT` against each text signal's 1. RRF fuses all three by rank."""
    if plan.fusion == "rrf":
        everything = {**signals, **({"graph": graph} if graph else {})}
        return rank_candidates(everything, Ranking(fusion="rrf", candidates=plan.candidates),
                               needed=10**9)
    ranked = (rank_candidates(signals, Ranking(candidates=plan.candidates), needed=10**9)
              if signals else [])
    if not graph:
        return ranked
    n_text = len(signals)
    by_id = {r.item_id: r for r in ranked}
    for text in by_id.values():
        text.score = text.score * n_text / (n_text + GRAPH_WEIGHT)
    for rank, (item_id, key, score) in enumerate(graph, 1):
        entry = by_id.get(item_id) or by_id.setdefault(item_id, Ranked(item_id, key, 0.0, {}))
        entry.signals["graph"] = (rank, score)
        entry.score += GRAPH_WEIGHT * score / (n_text + GRAPH_WEIGHT)
    return sorted(by_id.values(), key=lambda r: (-r.score, r.sort_key))


def hit_of(fact: Fact, score: float, signals: dict[str, tuple[int, float]],
           reached: tuple[int, tuple[int, ...]] | None, names: Mapping[int, str]) -> FactHit:
    """A hit with its path: the walk to the fact's nearer end, then predicate and far end."""
    subject = names.get(fact.subject_id, str(fact.subject_id))
    obj = None if fact.object_id is None else names.get(fact.object_id, str(fact.object_id))
    if reached is None:
        path: tuple[str, ...] = (subject, fact.predicate, obj if obj is not None
                                 else fact.value or "")
        return FactHit(fact, score, dict(signals), None, path, subject, obj)
    distance, walk = reached
    near = walk[-1]
    far = fact.object_id if near == fact.subject_id else fact.subject_id
    far_name = (names.get(far, str(far)) if far is not None else fact.value or "")
    path = (*(names.get(e, str(e)) for e in walk), fact.predicate, far_name)
    return FactHit(fact, score, dict(signals), distance, path, subject, obj)
