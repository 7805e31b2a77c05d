"""In-memory backend: dictionaries plus a NumPy vector matrix, guarded by one lock.

For tests, notebooks and short-lived agents. Same semantics as the SQL backends (the
conformance suite checks it): a batch is atomic (an undo log rolls it back on error) and reads
see earlier writes of the same batch.
"""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from remem.retrieval.bm25 import Posting
from remem.retrieval.ranking import Candidate, Ranked
from remem.store.base import (
    UPDATED_AT_TOLERANCE,
    BaseStore,
    IndexConfig,
    KeywordConfig,
    Prepared,
    TTLConfig,
    match_namespaces,
)
from remem.store.candidates import KeywordHits
from remem.store.filters import to_predicate
from remem.store.types import (
    CountOp,
    DeleteOp,
    GetOp,
    Item,
    ListNamespacesOp,
    Namespace,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    from_timestamp,
)
from remem.store.vectors import VectorIndex, best_scores, matrix_hits

__all__ = ["InMemoryStore"]


@dataclass(slots=True)
class _Record:
    item_id: int
    namespace: Namespace
    key: str
    value: dict[str, object]
    created_at: float
    updated_at: float
    ttl: float | None
    expires_at: float | None
    event_at: float | None = None
    #: (vector id, unit vector) per embedded field; kept here so an undo can restore them
    vectors: list[tuple[int, npt.NDArray[np.float32]]] = field(default_factory=list)
    #: keyword term frequencies (empty: not in the keyword index)
    terms: dict[str, int] = field(default_factory=dict)

    def alive(self, now: float) -> bool:
        return self.expires_at is None or self.expires_at > now

    def to_item(self) -> Item:
        return Item(
            self.namespace, self.key, copy.deepcopy(self.value), from_timestamp(self.created_at),
            from_timestamp(self.updated_at),
            from_timestamp(self.expires_at) if self.expires_at is not None else None,
            from_timestamp(self.event_at) if self.event_at is not None else None,
        )

    def event_time(self) -> float:
        return self.event_at if self.event_at is not None else self.created_at


class InMemoryStore(BaseStore):
    """A store that lives in this process and disappears with it."""

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 keyword: KeywordConfig | Literal[False] | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        if clock is None:
            super().__init__(index=index, ttl=ttl, keyword=keyword)
        else:
            super().__init__(index=index, ttl=ttl, keyword=keyword, clock=clock)
        self._lock = threading.RLock()
        self._records: dict[tuple[Namespace, str], _Record] = {}
        # namespace -> its records, so a prefix search visits only the namespaces under it
        self._by_namespace: dict[Namespace, dict[str, _Record]] = {}
        self._by_id: dict[int, _Record] = {}
        # namespace -> term -> {item id: term frequency}: the keyword index
        self._postings: dict[Namespace, dict[str, dict[int, int]]] = {}
        self._ids = itertools.count(1)
        self._vectors = VectorIndex(index.dims) if index is not None else None

    def setup(self) -> None:
        """Start the background sweeper if configured; nothing else to set up."""
        self._start_sweeper()

    def close(self) -> None:
        """Stop the sweeper and drop every item."""
        self._stop_sweeper()
        with self._lock:
            self._records.clear()
            self._by_namespace.clear()
            self._by_id.clear()
            self._postings.clear()
            if self.index is not None:
                self._vectors = VectorIndex(self.index.dims)

    def _vector_models(self) -> list[str]:
        with self._lock:
            held = self._vectors is not None and len(self._vectors) > 0
        return [self.index.model] if held and self.index is not None else []

    def _execute(self, ops: Sequence[Op], prepared: Prepared) -> list[Result]:
        with self._lock:
            undo: list[tuple[tuple[Namespace, str], _Record | None]] = []
            try:
                return [self._run(position, op, prepared, undo)
                        for position, op in enumerate(ops)]
            except BaseException:
                for address, previous in reversed(undo):
                    self._set(address, previous)
                raise

    def _run(self, position: int, op: Op, prepared: Prepared,
             undo: list[tuple[tuple[Namespace, str], _Record | None]]) -> Result:
        now = prepared.now
        if isinstance(op, GetOp):
            record = self._records.get((op.namespace, op.key))
            if record is None or not record.alive(now):
                return None
            if self._refresh(op.refresh_ttl) and record.ttl is not None:
                undo.append(((op.namespace, op.key), replace(record)))
                record.expires_at = now + record.ttl
            return record.to_item()
        if isinstance(op, PutOp):
            address = (op.namespace, op.key)
            previous = self._records.get(address)
            if op.if_updated_at is not None and not (
                    previous is not None and previous.alive(now)
                    and abs(previous.updated_at - op.if_updated_at) <= UPDATED_AT_TOLERANCE):
                return None  # the item changed or went away since it was read
            undo.append((address, replace(previous) if previous is not None else None))
            ttl, expires_at = self._expiry_for(op, now)
            alive_before = previous is not None and previous.alive(now)
            created = op.created_at if op.created_at is not None else (
                previous.created_at if previous is not None and alive_before else now)
            record = _Record(
                next(self._ids), op.namespace, op.key, dict(op.value), created,
                op.updated_at if op.updated_at is not None else now, ttl, expires_at,
                op.event_ts, terms=prepared.put_terms.get(position, {}),
            )
            record.vectors = [
                # copy: a row view would keep the whole batch's embedding array alive
                (next(self._ids), vector.copy())
                for _, vector, _ in prepared.put_vectors.get(position, [])
            ]
            self._set(address, record)
            return None
        if isinstance(op, DeleteOp):
            address = (op.namespace, op.key)
            previous = self._records.get(address)
            if previous is not None:
                undo.append((address, replace(previous)))
                self._set(address, None)
            return None
        if isinstance(op, SearchOp):
            return self._search(position, op, prepared, undo)
        if isinstance(op, CountOp):
            predicate = to_predicate(op.parsed_filter)
            return sum(1 for r in self._under(op.namespace_prefix)
                       if _matches(r, op, now, predicate))
        assert isinstance(op, ListNamespacesOp)
        return match_namespaces(
            {ns for ns, bucket in self._by_namespace.items()
             if any(r.alive(now) for r in bucket.values())}, op
        )

    def _set(self, address: tuple[Namespace, str], record: _Record | None) -> None:
        """Make ``record`` the state at ``address`` (``None`` deletes), keeping indexes in step."""
        old = self._records.pop(address, None)
        if old is not None:
            bucket = self._by_namespace[address[0]]
            del bucket[address[1]]
            if not bucket:
                del self._by_namespace[address[0]]
            self._by_id.pop(old.item_id, None)
            if self._vectors is not None:
                for vector_id, _ in old.vectors:
                    self._vectors.remove(vector_id)
            if old.terms:
                index = self._postings[address[0]]
                for term in old.terms:
                    postings = index[term]
                    del postings[old.item_id]
                    if not postings:
                        del index[term]
                if not index:
                    del self._postings[address[0]]
        if record is None:
            return
        self._records[address] = record
        self._by_namespace.setdefault(address[0], {})[address[1]] = record
        self._by_id[record.item_id] = record
        if self._vectors is not None:
            for vector_id, vector in record.vectors:
                self._vectors.upsert(vector_id, record.item_id, record.namespace, vector)
        if record.terms:
            index = self._postings.setdefault(address[0], {})
            for term, tf in record.terms.items():
                index.setdefault(term, {})[record.item_id] = tf

    def _under(self, prefix: Namespace) -> Iterator[_Record]:
        depth = len(prefix)
        for namespace, bucket in self._by_namespace.items():
            if namespace[:depth] == prefix:
                yield from bucket.values()

    def _search(self, position: int, op: SearchOp, prepared: Prepared,
                undo: list[tuple[tuple[Namespace, str], _Record | None]]) -> list[SearchItem]:
        now = prepared.now
        predicate = to_predicate(op.parsed_filter)

        def matches(record: _Record) -> bool:
            return _matches(record, op, now, predicate)

        scored: list[tuple[_Record, Ranked | None]]
        if position not in prepared.signals:  # no query: a newest-first listing
            records = sorted(
                (r for r in self._under(op.namespace_prefix) if matches(r)),
                key=lambda r: (-r.updated_at, r.namespace, r.key),
            )
            scored = [(r, None) for r in records[op.offset : op.offset + op.limit]]
        else:
            source = _MemoryCandidates(self, op, now, matches)
            ranked = self._ranked_search(position, op, prepared, source)
            scored = [(self._by_id[r.item_id], r) for r in ranked]
        results: list[SearchItem] = []
        refresh = self._refresh(op.refresh_ttl)
        for record, found in scored:
            if refresh and record.ttl is not None:
                undo.append(((record.namespace, record.key), replace(record)))
                record.expires_at = now + record.ttl
            item = record.to_item()
            results.append(SearchItem.from_item(item) if found is None
                           else self._hit(item, found))
        return results

    def sweep(self) -> int:
        """Delete expired items; return how many."""
        with self._lock:
            now = self.clock()
            expired = [a for a, r in self._records.items() if not r.alive(now)]
            for address in expired:
                self._set(address, None)
            return len(expired)

    def iter_items(self, namespace_prefix: Sequence[str] = ()) -> Iterator[Item]:
        """Live items under the prefix, in namespace then key order (a snapshot)."""
        prefix = tuple(namespace_prefix)
        with self._lock:
            now = self.clock()
            records = sorted(
                (r for r in self._records.values()
                 if r.namespace[: len(prefix)] == prefix and r.alive(now)),
                key=lambda r: (r.namespace, r.key),
            )
            items = [r.to_item() for r in records]
        yield from items

    def _ttl_of(self, namespace: Namespace, key: str) -> float | None:
        with self._lock:
            record = self._records.get((namespace, key))
            return record.ttl if record is not None else None


def _matches(record: _Record, op: SearchOp | CountOp, now: float,
             predicate: Callable[[Mapping[str, Any]], bool]) -> bool:
    """Whether a search or count selects ``record``: alive, under the prefix, in the event
    range, matching the filter (``predicate``)."""
    prefix = op.namespace_prefix
    if not (record.namespace[:len(prefix)] == prefix and record.alive(now)):
        return False
    after, before = op.event_range
    if after is not None or before is not None:
        at = record.event_time()
        if (after is not None and at < after) or (before is not None and at >= before):
            return False
    return predicate(record.value)


class _MemoryCandidates:
    """A search's candidates from the dictionaries and the matrix (a
    :class:`~remem.store.candidates.CandidateSource`)."""

    def __init__(self, store: InMemoryStore, op: SearchOp, now: float,
                 matches: Callable[[_Record], bool]) -> None:
        self.store, self.op, self.now, self.matches = store, op, now, matches
        self._n_docs: int | None = None  # the scope's size, once a keyword query counted it

    def vector_hits(self, query: npt.NDArray[np.float32], depth: int) -> list[Candidate]:
        by_id, matches = self.store._by_id, self.matches
        assert self.store._vectors is not None
        return matrix_hits(
            self.store._vectors, query, self.op.namespace_prefix, depth,
            lambda ids: {i: (by_id[i].namespace, by_id[i].key) for i in ids
                         if i in by_id and matches(by_id[i])})

    def keyword_hits(self, terms: list[str], depth: int | None = None) -> KeywordHits:
        """Postings of matching candidates, and corpus statistics over live items under the
        prefix (not narrowed by the filter), as the SQL backends compute them."""
        store, now, prefix = self.store, self.now, self.op.namespace_prefix
        depth = len(prefix)
        postings: list[Posting] = []
        doc_freq: dict[str, int] = {}
        n_docs = total_len = 0
        for namespace, index in store._postings.items():
            if namespace[:depth] != prefix:
                continue
            for record in store._by_namespace[namespace].values():
                if record.terms and record.alive(now):
                    n_docs += 1
                    total_len += sum(record.terms.values())
            for term in terms:
                for item_id, tf in index.get(term, {}).items():
                    record = store._by_id[item_id]
                    if not record.alive(now):
                        continue
                    doc_freq[term] = doc_freq.get(term, 0) + 1
                    if self.matches(record):
                        postings.append((item_id, (record.namespace, record.key), term, tf,
                                         sum(record.terms.values())))
        self._n_docs = n_docs
        return KeywordHits(postings, doc_freq, n_docs, total_len)

    def term_counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        store, now, prefix = self.store, self.now, self.op.namespace_prefix
        doc_freq: dict[str, int] = {}
        n_docs = 0
        for namespace, index in store._postings.items():
            if namespace[:len(prefix)] != prefix:
                continue
            if self._n_docs is None:
                n_docs += sum(1 for record in store._by_namespace[namespace].values()
                              if record.terms and record.alive(now))
            for term in terms:
                alive = sum(1 for item_id in index.get(term, {})
                            if store._by_id[item_id].alive(now))
                if alive:
                    doc_freq[term] = doc_freq.get(term, 0) + alive
        if self._n_docs is None:
            self._n_docs = n_docs
        return doc_freq, self._n_docs

    def event_times(self, ids: Sequence[int]) -> dict[int, float]:
        return {i: self.store._by_id[i].event_time() for i in ids}

    def item_vectors(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        by_id = self.store._by_id
        return {i: by_id[i].vectors[0][1] for i in ids if by_id[i].vectors}

    def vector_scores(self, query: npt.NDArray[np.float32], ids: Sequence[int]
                      ) -> dict[int, float]:
        by_id = self.store._by_id
        return best_scores([(i, vector) for i in ids if i in by_id
                            for _, vector in by_id[i].vectors], query)

    def item_values(self, ids: Sequence[int]) -> dict[int, Mapping[str, Any]]:
        return {i: self.store._by_id[i].value for i in ids if i in self.store._by_id}
