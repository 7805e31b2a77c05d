"""The store over SQL, written once for SQLite and PostgreSQL.

:class:`SQLStore` runs a batch's operations inside a transaction its backend opened: gets,
conditional puts, deletes, searches (listing or ranked) and namespace listings, with the
statements of its :class:`~remem.store.sql_dialect.StoreDialect`. A backend supplies the
transaction (locking, retries), the statement runner, and what its storage does differently:
the bulk write of a run of puts, what a delete leaves behind, and vector candidates (an
in-process NumPy matrix on SQLite, pgvector on PostgreSQL).

Refreshed TTLs are collected as item ids while a batch runs and applied by the backend in one
statement (:meth:`SQLStore._apply_refreshes`): every operation of a batch shares one "now".
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from remem.retrieval.bm25 import bm25_scores
from remem.retrieval.ranking import Candidate
from remem.store.base import UPDATED_AT_TOLERANCE, BaseStore, Prepared, match_namespaces
from remem.store.candidates import KeywordHits
from remem.store.namespace_codec import decode_ns
from remem.store.sql_dialect import ListingPath, Statement, StoreDialect, wide_scope
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
from remem.store.vectors import best_scores, first_chunk

__all__ = ["SQLStore", "put_run"]

TxT = TypeVar("TxT")
T = TypeVar("T")
Row = tuple[Any, ...]


def put_run(ops: Sequence[Op], start: int) -> list[tuple[int, PutOp]]:
    """Consecutive unconditional puts from ``start`` with distinct addresses (one multi-row
    upsert must not touch a row twice: the later put of a key starts the next run)."""
    run: list[tuple[int, PutOp]] = []
    seen: set[tuple[Namespace, str]] = set()
    for position in range(start, len(ops)):
        op = ops[position]
        if not isinstance(op, PutOp) or op.if_updated_at is not None:
            break
        if (op.namespace, op.key) in seen:
            break
        seen.add((op.namespace, op.key))
        run.append((position, op))
    return run


class SQLStore(BaseStore, Generic[TxT]):
    """The shared body of the SQL backends; ``TxT`` is what a backend's transaction hands the
    statements (a connection, or a connection with per-transaction state)."""

    dialect: StoreDialect

    # -- the backend's part --------------------------------------------------------------------

    @abstractmethod
    def _query(self, tx: TxT, text: str, params: Sequence[Any]) -> list[Row]:
        """Run one statement; its rows (empty for a statement that returns none)."""

    @abstractmethod
    def _read(self, body: Callable[[TxT], T]) -> T:
        """Set up, then run ``body`` in one short read transaction."""

    @abstractmethod
    def _put_many(self, tx: TxT, run: list[tuple[int, PutOp]], prepared: Prepared) -> None:
        """Upsert puts of distinct addresses with their terms and vectors."""

    def _after_delete(self, tx: TxT, item_ids: list[int]) -> None:
        """Drop what the deleted items leave behind (nothing where foreign keys cascade)."""

    @abstractmethod
    def _vector_hits(self, tx: TxT, op: SearchOp, query: npt.NDArray[np.float32], depth: int,
                     where: str, params: list[Any]) -> list[Candidate]:
        """The vector signal's candidates (see
        :meth:`~remem.store.candidates.CandidateSource.vector_hits`); ``where``/``params``
        select the live items the search may return."""

    @abstractmethod
    def _field_vectors(self, tx: TxT, ids: Sequence[int]
                       ) -> list[tuple[int, npt.NDArray[np.float32]]]:
        """``(item id, vector)`` of every field of these items under the open model, in
        insertion order (an item's first field first)."""

    def _item_vectors(self, tx: TxT, ids: Sequence[int]
                      ) -> dict[int, npt.NDArray[np.float32]]:
        """Item id -> its first field's vector under the open model."""
        out: dict[int, npt.NDArray[np.float32]] = {}
        for item_id, vector in self._field_vectors(tx, ids):
            out.setdefault(item_id, vector)
        return out

    def _term_keys(self, tx: TxT, terms: list[str]) -> dict[Any, str]:
        """What the postings store for each of the query ``terms`` that may have postings
        (stored key -> term): the term itself here; SQLite stores an integer id."""
        return {term: term for term in terms}

    def _items_first(self, op: SearchOp, n_docs: int) -> bool:
        """Whether a keyword search reads its scope item by item (see
        :meth:`~remem.store.sql_dialect.StoreDialect.keyword_postings`)."""
        return False

    # -- a batch, inside the backend's transaction ----------------------------------------------

    def _run_ops(self, tx: TxT, ops: Sequence[Op], prepared: Prepared,
                 refreshes: list[int]) -> list[Result]:
        """Every operation in order; runs of plain puts go to :meth:`_put_many` together."""
        results: list[Result] = []
        while len(results) < len(ops):
            run = put_run(ops, len(results))
            if run:  # consecutive unconditional puts: a few statements for all
                self._put_many(tx, run, prepared)
                results.extend([None] * len(run))
            else:
                position = len(results)
                results.append(self._run(tx, position, ops[position], prepared, refreshes))
        return results

    def _run(self, tx: TxT, position: int, op: Op, prepared: Prepared,
             refreshes: list[int]) -> Result:
        dialect, now = self.dialect, prepared.now
        if isinstance(op, GetOp):
            rows = self._query(tx, *dialect.get_item(op.namespace, op.key, now))
            if not rows:
                return None
            return self._finish(rows, op.refresh_ttl, now, refreshes)[0]
        if isinstance(op, PutOp):  # a conditional put: unconditional ones come in runs
            assert op.if_updated_at is not None
            rows = self._query(tx, *dialect.current_version(op.namespace, op.key, now))
            if not rows or abs(rows[0][0] - op.if_updated_at) > UPDATED_AT_TOLERANCE:
                return None  # the item changed or went away since it was read
            self._put_many(tx, [(position, op)], prepared)
            return None
        if isinstance(op, DeleteOp):
            gone = self._query(tx, *dialect.delete_item(op.namespace, op.key))
            if gone:
                self._after_delete(tx, [int(row[0]) for row in gone])
            return None
        if isinstance(op, SearchOp):
            return self._search(tx, position, op, prepared, refreshes)
        if isinstance(op, CountOp):
            return int(self._query(tx, *dialect.count(op, now))[0][0])
        assert isinstance(op, ListNamespacesOp)
        rows = self._query(tx, *dialect.namespaces(op, now))
        return match_namespaces((decode_ns(row[0]) for row in rows), op)

    def _apply_refreshes(self, tx: TxT, refreshes: list[int], now: float) -> None:
        if refreshes:
            self._query(tx, *self.dialect.refresh_ttls(sorted(set(refreshes)), now))

    def _finish(self, rows: Sequence[Row], refresh_flag: bool | None, now: float,
                refreshes: list[int]) -> list[Item]:
        """Rows of ``COLUMNS`` to items, recording TTL refreshes (the returned expiry is the
        refreshed one)."""
        refresh = self._refresh(refresh_flag)
        out: list[Item] = []
        for item_id, ns, key, value, created, updated, expires, ttl, event in rows:
            if refresh and ttl is not None:
                expires = now + ttl
                refreshes.append(item_id)
            out.append(Item(decode_ns(ns), key, json.loads(value), from_timestamp(created),
                            from_timestamp(updated),
                            from_timestamp(expires) if expires is not None else None,
                            from_timestamp(event) if event is not None else None))
        return out

    # -- search ----------------------------------------------------------------------------------

    def _search(self, tx: TxT, position: int, op: SearchOp, prepared: Prepared,
                refreshes: list[int]) -> list[SearchItem]:
        now = prepared.now
        if position not in prepared.signals:  # no query: a newest-first listing
            path = self._listing_path(tx, op)
            rows = self._query(tx, *self.dialect.listing(op, now, path=path))
            return [SearchItem.from_item(item)
                    for item in self._finish(rows, op.refresh_ttl, now, refreshes)]
        where, params = self.dialect.items_where(op, now)
        source = _SQLCandidates(self, tx, op, now, where, params)
        ranked = self._ranked_search(position, op, prepared, source)
        if not ranked:
            return []
        by_id = {row[0]: row for row in self._query(
            tx, *self.dialect.items_by_id([r.item_id for r in ranked]))}
        items = self._finish([by_id[r.item_id] for r in ranked], op.refresh_ttl, now, refreshes)
        return [self._hit(item, r) for item, r in zip(items, ranked, strict=True)]

    def _listing_path(self, tx: TxT, op: SearchOp) -> ListingPath:
        """How a newest-first listing reads (see :data:`ListingPath`): one namespace in index
        order; a wide prefix (or none) by walking the updated_at index until the page is
        full; else the prefix's items, sorted. Two index probes of bounded cost decide."""
        prefix = op.namespace_prefix
        if not prefix:
            return "newest"
        if self._is_leaf(tx, prefix):
            return "leaf"
        total = int(self._query(tx, *self.dialect.table_size())[0][0])
        cap = wide_scope(total, op.offset + op.limit)
        if cap >= total:
            return "scope"
        held = int(self._query(tx, *self.dialect.scope_size(prefix, cap))[0][0])
        return "newest" if held >= cap else "scope"

    def _is_leaf(self, tx: TxT, prefix: Namespace) -> bool:
        """Whether no namespace lies strictly below ``prefix``."""
        probe = self.dialect.is_leaf(prefix)
        return probe is not None and not self._query(tx, *probe)

    def _keyword_hits(self, tx: TxT, op: SearchOp, terms: list[str], now: float,
                      where: str, params: list[Any], depth: int | None) -> KeywordHits:
        """Postings of the candidates, and corpus statistics under the prefix (no filter).

        A filter on the values is checked last, on the best-scored candidates only (see
        :meth:`_best_matching`): evaluated in the postings query it decoded the JSON value of
        every item holding a query term. BM25 statistics ignore the filter, so a candidate's
        score, and the order, are the same either way."""
        dialect = self.dialect
        n_docs = total_len = 0
        for statement in dialect.corpus_stats(op, now):
            for docs, length in self._query(tx, *statement):
                n_docs, total_len = n_docs + int(docs), total_len + int(length)
        deferred = bool(dialect.compile_filter(op.parsed_filter)[0])
        scan: Statement = (dialect.items_where(op, now, with_filter=False) if deferred
                           else (where, params))
        keys = self._term_keys(tx, terms)
        rows = self._query(tx, *dialect.keyword_postings(
            list(keys), *scan, items_first=self._items_first(op, n_docs))) if keys else []
        decoded: dict[str, Namespace] = {}
        postings = []
        for item_id, ns, key, stored, tf, length in rows:
            namespace = decoded.get(ns)
            if namespace is None:
                namespace = decoded[ns] = decode_ns(ns)
            postings.append((int(item_id), (namespace, key), keys[stored], int(tf),
                             int(length)))
        if op.event_after is not None or op.event_before is not None:
            doc_freq = {keys[stored]: int(n) for stored, n in self._query(
                tx, *dialect.doc_freq(list(keys), *dialect.scope_where(op, now)))} if keys else {}
        else:  # the postings read cover the whole scope
            doc_freq = {}
            for _, _, term, _, _ in postings:
                doc_freq[term] = doc_freq.get(term, 0) + 1
        hits = KeywordHits(postings, doc_freq, n_docs, total_len)
        if not deferred:
            return hits
        kept = self._best_matching(tx, hits, depth, where, params)
        return KeywordHits([p for p in postings if p[0] in kept], doc_freq, n_docs, total_len,
                           held=postings)

    def _best_matching(self, tx: TxT, hits: KeywordHits, depth: int | None, where: str,
                       params: list[Any]) -> set[int]:
        """Ids of the best ``depth`` candidates (all when ``None``) that match ``where``,
        checked best first a page at a time (most memories match a facade's filter, so the
        first page usually settles it). Order: BM25 score, then (namespace, key), a total
        order, so these are exactly the best ``depth`` of the matching candidates."""
        assert self.keyword is not None
        ranked = [item_id for item_id, _, _ in bm25_scores(
            hits.postings, doc_freq=hits.doc_freq, n_docs=hits.n_docs,
            total_len=hits.total_len, params=self.keyword.bm25)]
        kept: set[int] = set()
        start, page = 0, len(ranked) if depth is None else first_chunk(depth)
        while start < len(ranked) and (depth is None or len(kept) < depth):
            ids = ranked[start:start + page]
            matching = {int(row[0]) for row in self._query(
                tx, *self.dialect.addresses(ids, where, params))}
            for item_id in ids:  # in rank order, so the cut keeps the best
                if item_id in matching and (depth is None or len(kept) < depth):
                    kept.add(item_id)
            start, page = start + len(ids), page * 4
        return kept

    # -- reads outside a batch -------------------------------------------------------------------

    def iter_items(self, namespace_prefix: Sequence[str] = ()) -> Iterator[Item]:
        """Live items under the prefix in namespace then key order, read in pages (each page
        its own short transaction, so writing in between is safe)."""
        self.setup()
        prefix = tuple(namespace_prefix)
        after: tuple[str, str] = ("", "")
        now = self.clock()
        while True:
            rows = self._read_rows(self.dialect.items_page(prefix, after, now))
            if not rows:
                return
            yield from self._finish(rows, False, now, [])
            after = (rows[-1][1], rows[-1][2])

    def _read_rows(self, statement: Statement) -> list[Row]:
        return self._read(lambda tx: self._query(tx, *statement))

    def _ttl_of(self, namespace: Namespace, key: str) -> float | None:
        rows = self._read_rows(self.dialect.ttl_of(namespace, key))
        return None if not rows or rows[0][0] is None else float(rows[0][0])

    def _holds_vectors(self) -> bool:
        return bool(self._read_rows(self.dialect.any_vector()))

    def _vector_models(self) -> list[str]:
        return [str(row[0]) for row in self._read_rows(self.dialect.vector_models())]


class _SQLCandidates(Generic[TxT]):
    """One search's candidates from a SQL backend, inside its transaction (a
    :class:`~remem.store.candidates.CandidateSource`)."""

    def __init__(self, store: SQLStore[TxT], tx: TxT, op: SearchOp, now: float, where: str,
                 params: list[Any]) -> None:
        self.store, self.tx, self.op, self.now = store, tx, op, now
        self.where, self.params = where, params
        self._n_docs: int | None = None  # the scope's size, once a keyword query counted it

    def keyword_hits(self, terms: list[str], depth: int | None = None) -> KeywordHits:
        hits = self.store._keyword_hits(self.tx, self.op, terms, self.now, self.where,
                                        self.params, depth)
        self._n_docs = hits.n_docs
        return hits

    def vector_hits(self, query: npt.NDArray[np.float32], depth: int) -> list[Candidate]:
        return self.store._vector_hits(self.tx, self.op, query, depth, self.where, self.params)

    def event_times(self, ids: Sequence[int]) -> dict[int, float]:
        rows = self.store._query(self.tx, *self.store.dialect.event_times(list(ids)))
        return {int(item_id): float(at) for item_id, at in rows}

    def item_vectors(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        return self.store._item_vectors(self.tx, ids)

    def vector_scores(self, query: npt.NDArray[np.float32], ids: Sequence[int]
                      ) -> dict[int, float]:
        return best_scores(self.store._field_vectors(self.tx, ids), query)

    def term_counts(self, terms: list[str]) -> tuple[dict[str, int], int]:
        store, dialect = self.store, self.store.dialect
        if self._n_docs is None:  # on PostgreSQL a count over the whole scope: once a search
            self._n_docs = sum(int(docs) for statement in dialect.corpus_stats(self.op, self.now)
                               for docs, _ in store._query(self.tx, *statement))
        keys = store._term_keys(self.tx, terms)
        doc_freq = {keys[stored]: int(n) for stored, n in store._query(
            self.tx, *dialect.doc_freq(list(keys), *dialect.scope_where(self.op, self.now)))
        } if keys else {}
        return doc_freq, self._n_docs

    def item_values(self, ids: Sequence[int]) -> dict[int, Mapping[str, Any]]:
        rows = self.store._query(self.tx, *self.store.dialect.items_by_id(list(ids)))
        # SQLite hands the JSON text back, PostgreSQL's jsonb may arrive decoded
        return {int(row[0]): json.loads(row[3]) if isinstance(row[3], str | bytes) else row[3]
                for row in rows}
