"""Consolidation: related memories of a namespace merged, one LLM call per cluster.

A consolidation run over a namespace:

1. reads its current memories (a page of 1,000 at a time);
2. finds clusters of memories that may say the same thing (pure code, :func:`clusters`):
   the same content (exact), most words in common (lexical: Jaccard of their keyword tokens
   >= ``lexical``), or close vectors (semantic: the store's vector search, score >=
   ``semantic``, when the store has an index). Only memories recorded within ``lookback``
   seconds start a cluster (all current memories may join one);
3. asks the model once per cluster (:class:`ClusterDecision`): merge the members into one
   memory (its text keeps every detail), or keep some or all apart, with a reason;
4. applies each merge in one commit (:func:`merge_flow`): the oldest member (or the one
   already saying the merged text) is edited in place to the merged text (same id, version
   + 1: history keeps what it said) and the others are invalidated with a reason naming it,
   never deleted. The events of one merge share one change id (the job id and the
   cluster's number), marked as a bulk change: undoing any of them undoes the whole merge.

A crash leaves each merge whole or absent; a run interrupted part-way and run again finds
the merged clusters gone (their other members are no longer current), so it is safe to repeat.

Scheduling (:class:`Consolidation`): a ``consolidate`` job per namespace, under a debounce key
of its own, so at most one run per namespace is queued or running at a time; when it finishes
it queues the next one ``interval`` seconds later (the schedule is the job in the queue).

Other scheduled upkeep rides on ``consolidate`` jobs too, so every worker already runs it: a
job whose payload holds a key registered with :func:`register_consolidation_run` runs that
run instead (the episodes of idle threads, ``"threads"``, registered by
:mod:`remem.episodic.thread_episodes`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from remem.background.jobs import Job, Submission
from remem.background.queue import JobQueue
from remem.llm.base import Usage
from remem.memory.facade import MemoryFacade
from remem.memory.flow import Flow, StoreBatch, StructuredCall, run_sync
from remem.memory.history import BULK_CHANGE
from remem.memory.locking import LockSettings
from remem.memory.reconcile import ChangeContext, Plan, Skip, plan_delete, plan_edit
from remem.memory.records import (
    IDS_NAMESPACE,
    MemoryRecord,
    current_filter,
    memory_or_none,
    memory_records,
    normalize_text,
)
from remem.memory.writer import commit
from remem.messages.types import Message
from remem.retrieval.tokenize import DefaultTokenizer
from remem.store.types import GetOp, Item, Namespace, PutOp, SearchOp

__all__ = ["CONSOLIDATE", "ClusterDecision", "Consolidation", "ConsolidationReport",
           "ConsolidationRun", "clusters", "consolidate_flow", "consolidation_handler",
           "merge_flow", "register_consolidation_run", "registered_run"]

#: the job kind of a consolidation run
CONSOLIDATE = "consolidate"
_PAGE = 1000
_COMMON = 50  # a token in more memories than this links nothing by itself

INSTRUCTIONS = (
    "You tidy a long-term memory. The numbered memories below were found to be similar. "
    "Decide whether they say the same thing. If they do, set merge to true and write content: "
    "one short memory that keeps every detail any of them holds (no detail may be lost). "
    "List in keep the numbers of memories that are about something else (they stay as they "
    "are). Give a short reason."
)


class ClusterDecision(BaseModel):
    """The model's answer for one cluster."""

    model_config = ConfigDict(extra="forbid")

    merge: bool = Field(description="true: the memories (less those in keep) say the same "
                                    "thing and become one")
    content: str = Field("", description="the merged memory, when merge is true")
    keep: list[int] = Field(default_factory=list,
                            description="numbers of memories to leave as they are")
    reason: str = Field("", description="why, in a few words")


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """What a run did: clusters found, merges applied, memories invalidated, LLM usage."""

    namespace: Namespace
    memories: int
    clusters: int
    merged: int
    invalidated: int
    usage: Usage = field(default_factory=Usage)
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"namespace": list(self.namespace), "memories": self.memories,
                "clusters": self.clusters, "merged": self.merged,
                "invalidated": self.invalidated,
                "usage": {"llm_calls": self.usage.calls,
                          "input_tokens": self.usage.input_tokens,
                          "output_tokens": self.usage.output_tokens},
                "reasons": list(self.reasons)}


def _tokens(text: str, tokenizer: DefaultTokenizer) -> frozenset[str]:
    return frozenset(t.lower() for t in tokenizer.tokenize(text))


def clusters(records: Sequence[MemoryRecord], *, seeds: set[str] | None = None,
             links: Sequence[tuple[str, str]] = (), lexical: float = 0.6,
             max_size: int = 10) -> list[list[MemoryRecord]]:
    """Groups of two or more records that may say the same thing (pure).

    Two records are linked when their normalised texts are equal, when the Jaccard similarity
    of their keyword tokens is at least ``lexical``, or when ``links`` names the pair
    (semantic neighbours found by the caller). Only pairs with a record in ``seeds`` (ids;
    ``None``: all) count. Linked records form a cluster (transitively), oldest first, at most
    ``max_size`` (a larger group is cut into pieces).
    """
    tokenizer = DefaultTokenizer()
    ids = [r.id for r in records]
    index = {r.id: n for n, r in enumerate(records)}
    parent = list(range(len(records)))

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    def link(a: int, b: int) -> None:
        if seeds is not None and ids[a] not in seeds and ids[b] not in seeds:
            return
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    exact: dict[str, int] = {}
    tokens = [_tokens(r.text, tokenizer) for r in records]
    postings: dict[str, list[int]] = {}
    for n, record in enumerate(records):
        key = normalize_text(record.text)
        if key in exact:
            link(exact[key], n)
        else:
            exact[key] = n
        for token in tokens[n]:
            postings.setdefault(token, []).append(n)
    for n, mine in enumerate(tokens):
        seen: set[int] = set()
        for token in mine:
            near = postings[token]
            if len(near) > _COMMON:
                continue
            for m in near:
                if m <= n or m in seen:
                    continue
                seen.add(m)
                other = tokens[m]
                union = len(mine | other)
                if union and len(mine & other) / union >= lexical:
                    link(n, m)
    for a, b in links:
        if a in index and b in index:
            link(index[a], index[b])
    groups: dict[int, list[MemoryRecord]] = {}
    for n, record in enumerate(records):
        groups.setdefault(find(n), []).append(record)
    found: list[list[MemoryRecord]] = []
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda r: (r.created_at, r.id))
        found += [group[i:i + max_size] for i in range(0, len(group), max_size)
                  if len(group[i:i + max_size]) >= 2]
    return found


def _prompt(cluster: Sequence[MemoryRecord]) -> tuple[Message, ...]:
    lines = "\n".join(f"[{n}] {json.dumps(r.text, ensure_ascii=False)}"
                      for n, r in enumerate(cluster, 1))
    return (Message.user(f"Memories:\n{lines}\n\nAnswer with merge, content, keep, reason."),)


def consolidate_flow(namespace: Namespace, *, now: float, lock: LockSettings,
                     lookback: float | None = None, lexical: float = 0.6,
                     semantic: float | None = 0.9, vectors: bool = False,
                     change_key: str = "consolidate") -> Flow[ConsolidationReport]:
    """One consolidation run over ``namespace`` as a flow (see the module docstring).
    ``vectors``: the store has a vector index (semantic candidates are searched)."""
    records: list[MemoryRecord] = []
    offset = 0
    while True:
        [page] = yield StoreBatch([SearchOp(namespace, filter=current_filter(), limit=_PAGE,
                                            offset=offset)])
        assert isinstance(page, list)
        # a record that does not parse is left alone (reported; remem doctor repairs it)
        records += memory_records(item for item in page if isinstance(item, Item))
        if len(page) < _PAGE:
            break
        offset += _PAGE
    records = [r for r in records if tuple(r.namespace) == tuple(namespace)]
    seeds = ({r.id for r in records if r.created_at >= now - lookback}
             if lookback is not None else None)
    links: list[tuple[str, str]] = []
    if vectors and semantic is not None:
        starts = [r for r in records if seeds is None or r.id in seeds]
        found = yield StoreBatch([SearchOp(namespace, filter=current_filter(), query=r.text,
                                           mode="vector", limit=5) for r in starts])
        for record, hits in zip(starts, found, strict=True):
            assert isinstance(hits, list)
            links += [(record.id, hit.key) for hit in hits
                      if hit.key != record.id and (hit.score or 0.0) >= semantic]
    groups = clusters(records, seeds=seeds, links=links, lexical=lexical)
    usage = Usage()
    merged = invalidated = 0
    reasons: list[str] = []
    for number, cluster in enumerate(groups):
        answer = yield StructuredCall(_prompt(cluster), ClusterDecision, INSTRUCTIONS,
                                      "consolidate")
        usage = usage + answer.usage
        decision: ClusterDecision = answer.value
        members = [r for n, r in enumerate(cluster, 1) if n not in set(decision.keep)]
        if not decision.merge or len(members) < 2 or not decision.content.strip():
            reasons.append(f"kept {[r.id for r in cluster]}: {decision.reason}")
            continue
        content = decision.content.strip()
        # the member already saying the merged text keeps it (two current copies of one
        # text are not allowed); otherwise the oldest is edited
        keeper = next((r for r in members if r.text == content), members[0])
        others = [r for r in members if r.id != keeper.id]
        plan = yield from merge_flow(namespace, keeper, others, content, decision.reason,
                                     now=now, lock=lock, change_id=f"{change_key}:{number}")
        if not plan.changes:
            reasons.append(f"kept {[r.id for r in cluster]}: "
                           f"{'; '.join(s.reason for s in plan.skipped) or 'unchanged'}")
            continue
        invalidated += len(others)
        merged += 1
        reasons.append(f"merged {[r.id for r in members]}: {decision.reason}")
    return ConsolidationReport(namespace, len(records), len(groups), merged, invalidated,
                               usage, tuple(reasons))


def merge_flow(namespace: Namespace, keeper: MemoryRecord, others: Sequence[MemoryRecord],
               content: str, reason: str, *, now: float, lock: LockSettings,
               change_id: str) -> Flow[Plan]:
    """Merge ``others`` into ``keeper`` (edited to ``content``) in **one commit**: the edit,
    every invalidation, their history events and a bulk-change mark are one atomic batch,
    so a crash leaves the whole merge or none of it, and undoing any of its events undoes
    all of them (the sources come back, the keeper says what it said before).

    Nothing is written (a :class:`Skip` says why) when a member is no longer current (a
    concurrent change) or another current memory already says ``content``."""
    ids = [keeper.id, *(r.id for r in others)]
    keep_ctx = ChangeContext(now=now, actor="consolidation",
                             reason=f"merged {[r.id for r in others]} into it: {reason}",
                             change_id=change_id)
    gone_ctx = ChangeContext(now=now, actor="consolidation",
                             reason=f"merged into {keeper.id}: {reason}", change_id=change_id)
    # undoing any event of the change undoes the whole merge (remem.memory.operations)
    marker = PutOp(IDS_NAMESPACE, change_id, {"type": BULK_CHANGE, "op": "merge",
                                              "namespace": list(namespace)},
                   index=False, ttl=None)

    def plan_for(results: list[Any], head: int) -> Flow[Plan]:
        plan = Plan()
        # one that does not parse now counts as changed since (the merge is skipped)
        now_records = [memory_or_none(i) if isinstance(i, Item) else None for i in results]
        if any(r is None or r.invalid_at is not None for r in now_records):
            plan.skipped.append(Skip("changed since", content, keeper.id))
            return plan
        current = [r for r in now_records if r is not None]
        first = current[0]
        edited = first.evolve(content=content) if content != first.text else None
        if edited is not None:
            found = yield StoreBatch([SearchOp(namespace, filter={
                **current_filter(), "content_hash": edited.content_hash}, limit=len(ids) + 5)])
            taken = [i.key for i in found[0] if i.key not in ids]
            if taken:
                plan.skipped.append(Skip("duplicate", content, taken[0]))
                return plan
            plan.extend(plan_edit(first, keep_ctx, content=content))
        for record in current[1:]:
            plan.extend(plan_delete(record, gone_ctx))
        if plan.ops:
            plan.ops.append(marker)
        return plan

    result: Plan = yield from commit(namespace, [GetOp(namespace, i) for i in ids], plan_for,
                                     lock)
    return result


ConsolidationRun = Callable[[MemoryFacade, Job, JobQueue | None], Mapping[str, Any]]
"""Another run a ``consolidate`` job carries: ``run(memory, job, queue)`` returns its report
(``queue``: the worker's, where a scheduled run queues its next one)."""

_RUNS: dict[str, ConsolidationRun] = {}
_RUNS_LOCK = threading.Lock()  # a family may register while a worker thread looks one up


def register_consolidation_run(payload_key: str, run: ConsolidationRun) -> None:
    """Run ``run`` for every ``consolidate`` job whose payload holds ``payload_key`` (the
    family owning the run registers it when imported; again: replaced)."""
    with _RUNS_LOCK:
        _RUNS[payload_key] = run


def registered_run(payload: Mapping[str, Any]) -> ConsolidationRun | None:
    """The run registered for a key ``payload`` holds (``None``: the memory consolidation)."""
    with _RUNS_LOCK:
        runs = tuple(_RUNS.items())
    for key, other in runs:
        if payload.get(key) is not None:  # e.g. a run over idle threads ("threads")
            return other
    return None


def consolidation_handler(memory_for: Callable[[str], MemoryFacade],
                          queue: JobQueue | None = None) -> Callable[[Job], Mapping[str, Any]]:
    """The handler of :data:`CONSOLIDATE` jobs; with ``queue`` and an ``interval`` in the
    payload, a finished run queues the next one (the schedule). A payload holding a key of
    :func:`register_consolidation_run` runs that run instead."""
    from remem.llm.config import require_model

    def run(job: Job) -> Mapping[str, Any]:
        memory = memory_for(job.tenant)
        payload = job.payload
        other = registered_run(payload)
        if other is not None:
            return other(memory, job, queue)
        flow = consolidate_flow(
            tuple(payload["namespace"]), now=memory.clock(), lock=memory.lock,
            lookback=payload.get("lookback"), lexical=payload.get("lexical", 0.6),
            semantic=payload.get("semantic", 0.9), vectors=memory.store.index is not None,
            change_key=job.id)
        report = run_sync(flow, memory.store, memory.llm or require_model())
        interval = payload.get("interval")
        if queue is not None and interval:
            Consolidation(queue, tenant=job.tenant).schedule(
                tuple(payload["namespace"]), interval=interval,
                lookback=payload.get("lookback"), first_in=interval)
        return report.to_dict()

    return run


class Consolidation:
    """Consolidation runs in the queue: one now (:meth:`run_soon`), or on a schedule."""

    def __init__(self, queue: JobQueue, *, tenant: str = "") -> None:
        self.queue = queue
        self.tenant = tenant

    @staticmethod
    def key(namespace: Namespace) -> str:
        """The debounce key of a namespace's runs: one pending at a time."""
        return "consolidate:" + json.dumps(list(namespace), ensure_ascii=False)

    def schedule(self, namespace: Namespace, *, interval: float | None = None,
                 lookback: float | None = None, first_in: float = 0.0) -> Job:
        """Queue a run of ``namespace`` in ``first_in`` seconds (replacing a pending one);
        with ``interval``, each run queues the next. Returns the pending job."""
        payload = {"namespace": list(namespace), "interval": interval, "lookback": lookback}
        return self.queue.submit(Submission(
            CONSOLIDATE, self.key(namespace), self.key(namespace)[:512], [], payload,
            delay=first_in, tenant=self.tenant))
