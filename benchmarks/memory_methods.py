"""Ranking methods measured through the product (``recall_stages.py --through memory``).

Each conversation of the data set is added as a user would add it: one
``Memory.add(messages, infer=False, thread_id=<session>)`` per session, one named user message
per turn, sent at the session's time (:class:`remem.eval.memory_retriever.MemoryRetriever`).
Each method is then a change to the ranking ``Memory.search`` builds for a question
(:func:`remem.memory.stages.staged_ranking` over :func:`remem.memory.operations.search_ranking`),
run through the memory search's own flow (:func:`remem.memory.operations.search_flow`), so
the memories, their fields and the ranking code are the product's; only the vectors come from
the disk cache.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from remem.api import Memory
from remem.embed.base import Embedder
from remem.eval.locomo import LocomoDataset, Question
from remem.eval.memory_retriever import MemoryRetriever
from remem.eval.metrics import recall_at_k
from remem.memory.flow import run_sync
from remem.memory.operations import search_flow, search_ranking
from remem.memory.stages import SESSION_FIELD, TURN_FIELD, staged_ranking
from remem.retrieval.expansion import Entities, PseudoFeedback
from remem.retrieval.neighbours import Neighbours
from remem.retrieval.ranking import Ranking
from remem.retrieval.subjects import Subjects

if TYPE_CHECKING:
    from recall_stages import Scores

#: a method: the product's ranking for a query -> the ranking to measure
Method = Callable[[str, Ranking], Ranking]


def _same(query: str, ranking: Ranking) -> Ranking:
    return ranking


def memory_methods() -> dict[str, Method]:
    """The product's default ranking and each change measured against it."""
    out: dict[str, Method] = {"product": _same}
    for vector in (0.5, 0.7, 0.85, 1.2, 1.5, 2.0):
        def weigh(query: str, ranking: Ranking, v: float = vector) -> Ranking:
            return replace(ranking, weights={"keyword": 1.0, "vector": v})
        out[f"vector-weight w={vector}"] = weigh
    for coverage in ("always",):
        def cover(query: str, ranking: Ranking, c: str = coverage) -> Ranking:
            return replace(ranking, keyword_coverage=c)  # type: ignore[arg-type]
        out[f"keyword-coverage {coverage}"] = cover
    for candidates in (50, 150, 200):
        def pool(query: str, ranking: Ranking, n: int = candidates) -> Ranking:
            return replace(ranking, candidates=max(n, 10))
        out[f"candidates n={candidates}"] = pool
    for side, (before, after) in {"next": (0, 1)}.items():
        for weight in (0.1, 0.2, 0.3, 0.4):
            def neighbour(query: str, ranking: Ranking, w: float = weight, b: int = before,
                          a: int = after) -> Ranking:
                return replace(ranking, neighbours=Neighbours(
                    field=SESSION_FIELD, order=TURN_FIELD, weight=w, before=b, after=a))
            out[f"+neighbours-{side} w={weight}"] = neighbour
    # a second round seeded by the first: the top hits' distinctive terms, their vectors, or
    # the names they hold, searched again over the product's stages
    for top in (3,):
        for terms, weight in ((5, 0.1), (10, 0.1), (10, 0.2)):
            def terms_round(query: str, ranking: Ranking, t: int = top, n: int = terms,
                            w: float = weight) -> Ranking:
                return replace(ranking, feedback=PseudoFeedback(
                    top=t, vector=0.0, terms=n, term_weight=w))
            out[f"+feedback-terms top={top} n={terms} w={weight}"] = terms_round
    for top in (1,):
        for vector in (0.2, 0.4):
            def vector_round(query: str, ranking: Ranking, t: int = top, v: float = vector
                             ) -> Ranking:
                return replace(ranking, feedback=PseudoFeedback(top=t, vector=v))
            out[f"+feedback-vector top={top} w={vector}"] = vector_round
    for top in (3,):
        for weight in (0.05, 0.1, 0.2):
            def entity_round(query: str, ranking: Ranking, t: int = top, w: float = weight
                             ) -> Ranking:
                return replace(ranking, entities=Entities(top=t, weight=w))
            out[f"+entities top={top} w={weight}"] = entity_round
    # diversity by meaning (maximal marginal relevance): multi-hop answers sit in several
    # memories that say different things
    for lam in (0.3, 0.5, 0.7, 0.8, 0.9):
        def diverse(query: str, ranking: Ranking, m: float = lam) -> Ranking:
            return replace(ranking, mmr=m)
        out[f"+mmr lambda={lam}"] = diverse
    # query-side entity linking across sessions: the sessions that hold a name the question
    # mentions searched again, their best memories first (the ``subjects`` stage)
    for take in (3, 5, 10):
        def subjects(query: str, ranking: Ranking, n: int = take) -> Ranking:
            return replace(ranking, subjects=Subjects(field=SESSION_FIELD, take=n))
        out[f"+subjects take={take}"] = subjects
    return out


def run_memory(dataset: LocomoDataset, embedder: Embedder, methods: dict[str, Method],
               questions: list[Question], partial: str | None = None
               ) -> dict[str, Scores]:
    """Every question under every method, on memories added through ``Memory.add``."""
    from recall_stages import Scores

    results = {name: Scores() for name in methods}
    with tempfile.TemporaryDirectory(prefix="recall-memory-") as directory:
        memory = Memory.open(Path(directory) / "memory.db", embedder=embedder)
        try:
            retriever = MemoryRetriever(memory, run="grid")
            started = time.perf_counter()
            for conversation in dataset.conversations:
                retriever.ingest(conversation.id, conversation.turns)
            embedder.embed_queries([q.question for q in questions])
            save = getattr(embedder, "save", None)
            if save is not None:  # the vector cache: a rerun embeds nothing
                save()
            print(f"ingest {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
            for name, method in methods.items():
                scores = results[name]
                for q in questions:
                    prefix = tuple(retriever.namespace(q.conversation_id))
                    ranking = method(q.question, staged_ranking(
                        search_ranking(limit=10), q.question, None))
                    t0 = time.perf_counter()
                    found = run_sync(search_flow(prefix, q.question, limit=10,
                                                 ranking=ranking), memory.store)
                    scores.ms.append((time.perf_counter() - t0) * 1000)
                    ranked: list[str] = []
                    for hit in found.hits:
                        ranked.extend(i for i in hit.memory.source.message_ids
                                      if i not in ranked)
                    scores.r5.append(recall_at_k(ranked, q.gold, 5))
                    scores.r10.append(recall_at_k(ranked, q.gold, 10))
                print(f"{name:<40} R@10 {np.mean(scores.r10):.4f}", file=sys.stderr,
                      flush=True)
                if partial is not None:  # each method as it ends, for a run cut short
                    with Path(partial).open("a") as out:
                        out.write(json.dumps({"method": name, "r5": scores.r5,
                                              "r10": scores.r10, "ms": scores.ms}) + "\n")
        finally:
            memory.close()
    return results


def memory_latency(dataset: LocomoDataset, embedder: Embedder, live: Embedder,
                   questions: list[Question], stage_sets: dict[str, str | None]
                   ) -> dict[str, dict[str, float]]:
    """Per question: the live query embedding (``live``, timed once per question) plus
    ``Memory.search`` on a SQLite file (document and query vectors from the cache), per
    ``stages`` value; p50/p95 in ms of the search's wall clock and CPU time, and with the
    embedding."""
    embed_ms = []
    for q in questions:
        started = time.perf_counter()
        live.embed_queries([q.question])
        embed_ms.append((time.perf_counter() - started) * 1000)
    embed = np.array(embed_ms)
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="recall-memory-") as directory:
        memory = Memory.open(Path(directory) / "memory.db", embedder=embedder)
        try:
            retriever = MemoryRetriever(memory, run="latency")
            for conversation in dataset.conversations:
                retriever.ingest(conversation.id, conversation.turns)
            for q in questions[:20]:  # warm the page cache and the query-vector memo
                retriever.rank(q.conversation_id, q.question, 10)
            for name, stages in stage_sets.items():
                retriever.stages = stages
                wall, cpu = [], []
                for q in questions:
                    w0, c0 = time.perf_counter(), time.process_time()
                    retriever.rank(q.conversation_id, q.question, 10)
                    cpu.append((time.process_time() - c0) * 1000)
                    wall.append((time.perf_counter() - w0) * 1000)
                search, total = np.array(wall), np.array(wall) + embed
                rows[name] = {"search_p50": float(np.median(search)),
                              "search_p95": float(np.percentile(search, 95)),
                              "cpu_p50": float(np.median(cpu)),
                              "total_p50": float(np.median(total)),
                              "total_p95": float(np.percentile(total, 95))}
        finally:
            memory.close()
    print(f"query embedding (local model): p50 {np.median(embed):.1f} ms, "
          f"p95 {np.percentile(embed, 95):.1f} ms")
    print("| stages (Memory.search) | search p50 / p95 ms | search CPU p50 ms "
          "| with embedding p50 / p95 ms |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['search_p50']:.1f} / {row['search_p95']:.1f} | "
              f"{row['cpu_p50']:.1f} | {row['total_p50']:.1f} / {row['total_p95']:.1f} |")
    return rows
