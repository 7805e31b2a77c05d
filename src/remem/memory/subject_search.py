"""The ``subjects`` stage of a memory search: the named person's own sessions searched first.

:mod:`remem.retrieval.subjects` says what the stage does and why; this is its flow. One store
batch holds the keyword probe for the names the query mentions and the ordinary search; when
the probe finds the subject's sessions, a second batch searches them, and their best
memories lead the page. Every search keeps the request's namespace prefix, filter and time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from remem.memory.flow import Flow, StoreBatch
from remem.memory.results import MemoryHit
from remem.retrieval.options import field_value
from remem.retrieval.ranking import Ranking
from remem.retrieval.subjects import Subjects, merge_subject, subject_sessions
from remem.store.bad_records import parse_items
from remem.store.types import Namespace, SearchItem, SearchMode, SearchOp, SignalScore

__all__ = ["subject_search_flow"]


def _items(found: Any) -> list[SearchItem]:
    assert isinstance(found, list)
    return [item for item in found if isinstance(item, SearchItem)]


def _hits(items: Sequence[SearchItem]) -> list[MemoryHit]:
    return parse_items(items, MemoryHit.from_item, family="memories")


def subject_search_flow(namespace_prefix: Namespace, query: str, names: Sequence[str], *,
                        store_filter: Mapping[str, Any], limit: int, offset: int,
                        mode: SearchMode, ranking: Ranking, stage: Subjects
                        ) -> Flow[list[MemoryHit]]:
    """The page (``offset``, ``limit``) of a search whose query mentions ``names``, with the
    subject's sessions searched first (``ranking``: the ordinary search's, without the
    stage)."""
    probe = SearchOp(namespace_prefix, filter=store_filter, query=" ".join(names),
                     limit=stage.probe, mode="keyword")
    ordinary = SearchOp(namespace_prefix, filter=store_filter, query=query,
                        limit=offset + limit, mode=mode, ranking=ranking)
    found = yield StoreBatch([probe, ordinary])
    probed, hits = _items(found[0]), _hits(_items(found[1]))
    sessions = subject_sessions(
        names, [(str(field_value(item.value, "text") or ""), _session(item.value, stage))
                for item in probed], stage)
    if not sessions:
        return hits[offset:]
    within = SearchOp(namespace_prefix, filter={"$and": [
        dict(store_filter), {stage.field: {"$in": list(sessions)}}]}, query=query,
        limit=stage.take, mode=mode, ranking=replace(ranking, candidates=max(
            ranking.candidates, stage.take)))
    again = yield StoreBatch([within])
    own = _hits(_items(again[0]))
    by_id = {hit.memory.id: hit for hit in hits}
    lead = hits[0].score if hits and hits[0].score is not None else 0.0
    for rank, hit in enumerate(own, start=1):  # the subject's memories lead: scores say so
        score = hit.score or 0.0
        by_id[hit.memory.id] = replace(hit, score=lead + score, details={
            **hit.details, "subjects": SignalScore(rank=rank, score=score)})
    order = merge_subject([hit.memory.id for hit in own], [hit.memory.id for hit in hits],
                          stage)
    return [by_id[memory_id] for memory_id in order][offset:offset + limit]


def _session(value: Any, stage: Subjects) -> str | int | None:
    session = field_value(value, stage.field)
    if isinstance(session, bool) or not isinstance(session, str | int) or session == "":
        return None
    return session
