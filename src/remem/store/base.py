"""The store protocol: backends implement ``_execute``; everything else is shared here.

``batch`` semantics (the same on every backend, tested by the conformance suite):

* Operations run **in order, as one atomic unit**. A read sees the writes made by earlier
  operations of the same batch (read-your-writes), and on the SQL backends the whole batch is
  one transaction: if any operation fails, none of its writes are kept.
* Every operation of a batch sees the same "now" (one clock reading), so items put together
  share their timestamps.
* Embedding happens before anything is written, for all puts and queries of the batch at once.
  An embedder failure therefore leaves the store untouched.

The blocking methods are plain blocking calls (SQLite, psycopg's sync pool, in-process
dicts): nothing in them needs an event loop, so they also work on a thread whose loop is
running (a Jupyter cell, a sync call inside an ``async def`` graph node) and hold that loop for
the length of the call, as LangGraph's own sync savers do. The async twins run them in a worker
thread, so the loop keeps serving other tasks.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Literal, Self

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, checked_unit_vectors
from remem.embed.cache import EmbedCounts, TextKind, VectorMemo, text_hash
from remem.errors import (
    InvalidInputError,
    UnsupportedError,
    UsageError,
)
from remem.retrieval.bm25 import BM25Params, bm25_scores
from remem.retrieval.ranking import Candidate, Ranked, Ranking, rank_candidates
from remem.retrieval.tokenize import DefaultTokenizer, Tokenizer
from remem.store.candidates import (
    CandidateSource,
    KeywordHits,
    ValueMemo,
    expand_candidates,
    group_reader,
    relevance_reader,
)
from remem.store.index_text import WHOLE_VALUE, index_texts, keyword_text
from remem.store.types import (
    MAX_TIMESTAMP,
    MAX_TTL,
    NOT_PROVIDED,
    OP_TYPES,
    WILDCARD,
    CountOp,
    DeleteOp,
    GetOp,
    Item,
    ListNamespacesOp,
    Namespace,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchMode,
    SearchOp,
    SignalScore,
    check_address,
)

__all__ = [
    "UPDATED_AT_TOLERANCE",
    "BaseStore",
    "IndexConfig",
    "KeywordConfig",
    "KeywordHits",
    "Prepared",
    "TTLConfig",
    "ViewStore",
    "check_ops",
    "index_texts",
    "keyword_text",
    "match_namespaces",
]

#: how close two ``updated_at`` readings must be to count as the same version: Item timestamps
#: are datetimes, which keep microseconds, so a round trip can move a float by up to 0.5 µs
UPDATED_AT_TOLERANCE = 1e-6

logger = logging.getLogger("remem.store")


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """What to embed and with which embedder.

    ``fields`` are dotted paths into the value; ``"$"`` (the default) embeds the whole value as
    JSON text. A string field is embedded as is, a list of strings as its lines, anything else
    as JSON. An item gets one vector per present field; its score is its best field's.
    """

    embedder: Embedder
    fields: tuple[str, ...] = (WHOLE_VALUE,)

    def __post_init__(self) -> None:
        fields = (self.fields,) if isinstance(self.fields, str) else tuple(self.fields)
        if not fields or not all(isinstance(f, str) and f for f in fields):
            raise InvalidInputError(
                f"IndexConfig.fields must be non-empty dotted paths or '$', got {self.fields!r}"
            )
        object.__setattr__(self, "fields", fields)

    @property
    def dims(self) -> int:
        """The embedder's vector length."""
        return self.embedder.dims

    @property
    def model(self) -> str:
        """The embedder's model name, recorded with every vector."""
        return self.embedder.model


@dataclass(frozen=True, slots=True)
class KeywordConfig:
    """What to index for keyword (BM25) search and how to split it into terms.

    ``fields``: dotted paths as in :class:`IndexConfig`; ``None`` (the default) uses the vector
    index's fields, or the whole value when there is no vector index. For ``"$"`` the keyword
    text is every string in the value (keys and JSON punctuation are left out).
    ``tokenizer``: Chinese + English by default (:class:`~remem.retrieval.DefaultTokenizer`);
    its name is recorded and a store refuses terms from another tokenizer.
    """

    fields: tuple[str, ...] | None = None
    tokenizer: Tokenizer = field(default_factory=DefaultTokenizer)
    bm25: BM25Params = field(default_factory=BM25Params)

    def __post_init__(self) -> None:
        if self.fields is not None:
            fields = (self.fields,) if isinstance(self.fields, str) else tuple(self.fields)
            if not fields or not all(isinstance(f, str) and f for f in fields):
                raise InvalidInputError(
                    "KeywordConfig.fields must be None or non-empty dotted paths or '$', "
                    f"got {self.fields!r}"
                )
            object.__setattr__(self, "fields", fields)
        if not isinstance(self.tokenizer, Tokenizer):
            raise InvalidInputError(
                "KeywordConfig.tokenizer must have a name and a tokenize(text) method"
            )
        if not isinstance(self.bm25, BM25Params):
            raise InvalidInputError(f"KeywordConfig.bm25 must be a BM25Params, got {self.bm25!r}")


#: a word character: a text with one has content an embedder must place somewhere
@dataclass(frozen=True, slots=True)
class TTLConfig:
    """Time-to-live defaults.

    ``default_ttl``: seconds applied to puts that pass no ``ttl`` (``None``: never expire).
    ``refresh_on_read``: a get or search that returns an item with a TTL pushes its expiry to
    now + TTL (per-call ``refresh_ttl`` overrides this).
    ``sweep_interval``: seconds between background sweeps by a daemon thread started by
    ``setup()`` and stopped by ``close()`` (``None``: sweep only when :meth:`BaseStore.sweep`
    is called). Reads never depend on sweeping; it only reclaims space.
    """

    default_ttl: float | None = None
    refresh_on_read: bool = True
    sweep_interval: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.default_ttl, timedelta):
            object.__setattr__(self, "default_ttl", self.default_ttl.total_seconds())
        if self.default_ttl is not None and not 0 < self.default_ttl <= MAX_TTL:
            raise InvalidInputError(
                f"TTLConfig.default_ttl must be a positive number of seconds up to "
                f"{MAX_TTL:.0e} (about 317 years) or None, got {self.default_ttl!r}"
            )
        if self.sweep_interval is not None and not self.sweep_interval > 0:
            raise InvalidInputError(
                f"TTLConfig.sweep_interval must be a positive number of seconds or None, "
                f"got {self.sweep_interval!r}"
            )


@dataclass(slots=True)
class Prepared:
    """What a batch needs computed before it touches storage."""

    now: float
    #: op position -> [(field, unit vector, text hash)] for puts that are indexed
    put_vectors: dict[int, list[tuple[str, npt.NDArray[np.float32], bytes]]] = field(
        default_factory=dict
    )
    #: op position -> term frequencies of a put's keyword text (absent: no keyword entry)
    put_terms: dict[int, dict[str, int]] = field(default_factory=dict)
    #: op position -> unit query vector for searches that use the vector signal
    query_vectors: dict[int, npt.NDArray[np.float32]] = field(default_factory=dict)
    #: op position -> distinct query terms for searches that use the keyword signal
    query_terms: dict[int, list[str]] = field(default_factory=dict)
    #: op position -> the signals a search with a query ranks by
    signals: dict[int, tuple[str, ...]] = field(default_factory=dict)


def _labels_match(labels: Namespace, pattern: Namespace) -> bool:
    return all(p in (WILDCARD, label) for p, label in zip(pattern, labels, strict=True))


def match_namespaces(namespaces: Iterable[Namespace], op: ListNamespacesOp) -> list[Namespace]:
    """Apply a :class:`ListNamespacesOp` to the distinct namespaces of a store (pure)."""
    out: set[Namespace] = set()
    for ns in namespaces:
        if op.prefix is not None and (
            len(ns) < len(op.prefix) or not _labels_match(ns[: len(op.prefix)], op.prefix)
        ):
            continue
        if op.suffix is not None and (
            len(ns) < len(op.suffix) or not _labels_match(ns[-len(op.suffix):], op.suffix)
        ):
            continue
        out.add(ns[: op.max_depth] if op.max_depth is not None else ns)
    return sorted(out)[op.offset : op.offset + op.limit]


def check_ops(ops: Iterable[Op]) -> list[Op]:
    """``ops`` as a list, or an :class:`InvalidInputError` naming the first one that is not a
    store operation."""
    op_list = list(ops)
    for position, op in enumerate(op_list):
        if not isinstance(op, OP_TYPES):
            raise InvalidInputError(
                f"batch operation {position} is a {type(op).__name__}; expected one of "
                f"{', '.join(kind.__name__ for kind in OP_TYPES)}"
            )
    return op_list


def literal_prefix(pattern: Namespace | None) -> Namespace:
    """The labels of a match pattern before its first wildcard (what an index can narrow on)."""
    if pattern is None:
        return ()
    head: list[str] = []
    for label in pattern:
        if label == WILDCARD:
            break
        head.append(label)
    return tuple(head)


class BaseStore(ABC):
    """A long-term store of JSON items under namespaces.

    Backends implement :meth:`_execute` (and usually :meth:`setup`, :meth:`close`,
    :meth:`sweep`); the friendly methods here build operations and call :meth:`batch`.
    ``abatch`` runs the same code in a worker thread, so sync and async behave identically.
    """

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 keyword: KeywordConfig | Literal[False] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.index = index
        #: ``None`` when keyword search is off (``keyword=False``)
        self.keyword: KeywordConfig | None = (
            None if keyword is False else keyword if keyword is not None else KeywordConfig()
        )
        self.ttl = ttl or TTLConfig()
        self._memo = VectorMemo()
        self._embeds = EmbedCounts()  # searches and writes embed from many threads at once
        self.clock = clock
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    # -- the seam -----------------------------------------------------------------------------

    @abstractmethod
    def _execute(self, ops: Sequence[Op], prepared: Prepared) -> list[Result]:
        """Run ``ops`` in order as one atomic unit; see the module docstring."""

    @abstractmethod
    def setup(self) -> None:
        """Create or upgrade storage. Idempotent; called lazily by the first batch."""

    @abstractmethod
    def close(self) -> None:
        """Release connections and caches."""

    @abstractmethod
    def sweep(self) -> int:
        """Delete expired items now; return how many were deleted."""

    def _start_sweeper(self) -> None:
        """Start the background sweep thread if ``ttl.sweep_interval`` asks for one."""
        interval = self.ttl.sweep_interval
        if interval is None or self._sweeper is not None:
            return

        def loop() -> None:
            while not self._sweeper_stop.wait(interval):
                try:
                    self.sweep()
                except Exception:  # keep sweeping; the next read is still correct
                    logger.exception("background TTL sweep failed")

        self._sweeper = threading.Thread(target=loop, name="remem-ttl-sweeper", daemon=True)
        self._sweeper.start()

    def _stop_sweeper(self) -> None:
        if self._sweeper is not None:
            self._sweeper_stop.set()
            if self._sweeper is not threading.current_thread():
                self._sweeper.join()
            self._sweeper = None

    # -- batch --------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute operations in order as one atomic unit and return one result per operation:
        ``Item | None`` for gets, ``list[SearchItem]`` for searches, ``list[tuple]`` for
        list_namespaces, ``int`` for counts, ``None`` for puts and deletes."""
        op_list = check_ops(ops)
        if not op_list:
            return []
        self.setup()
        return self._execute(op_list, self._prepare(op_list))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (same semantics; runs in a worker thread)."""
        op_list = list(ops)
        return await asyncio.to_thread(self.batch, op_list)

    def _prepare(self, ops: Sequence[Op]) -> Prepared:
        prepared = Prepared(now=self.clock())
        doc_slots: list[tuple[int, str]] = []
        doc_texts: list[str] = []
        query_slots: list[int] = []
        query_texts: list[str] = []
        for position, op in enumerate(ops):
            if isinstance(op, PutOp):
                check_address(op.namespace, op.key)
            if isinstance(op, PutOp) and op.index is not False:
                if self.index is not None:
                    fields = self.index.fields if op.index is None else op.index
                    for field_path, text in index_texts(op.value, fields):
                        doc_slots.append((position, field_path))
                        doc_texts.append(text)
                if self.keyword is not None:
                    prepared.put_terms[position] = self._term_counts(op)
            elif isinstance(op, SearchOp) and op.query is not None:
                signals = self._signals(op.mode)
                prepared.signals[position] = signals
                if "vector" in signals:
                    query_slots.append(position)
                    query_texts.append(op.query)
                if "keyword" in signals:
                    assert self.keyword is not None
                    terms = self.keyword.tokenizer.tokenize(op.query)
                    prepared.query_terms[position] = list(dict.fromkeys(terms))
                ranking = op.ranking or Ranking()
                if ranking.mmr is not None and self.index is None:
                    raise UnsupportedError(
                        "Ranking.mmr compares result vectors; open the store with "
                        "index=IndexConfig(embedder=...) or leave mmr=None"
                    )
        if doc_texts:
            vectors, hashes = self._embed_cached("document", doc_texts)
            for (position, field_path), vector, digest in zip(doc_slots, vectors, hashes,
                                                                strict=True):
                prepared.put_vectors.setdefault(position, []).append((field_path, vector, digest))
        if query_texts:
            vectors, _ = self._embed_cached("query", query_texts)
            for position, vector in zip(query_slots, vectors, strict=True):
                prepared.query_vectors[position] = vector
        return prepared

    def _signals(self, mode: SearchMode) -> tuple[str, ...]:
        """The signals a search with a query uses in ``mode``; errors name the missing config."""
        if mode == "auto":
            signals = tuple(name for name, on in (("keyword", self.keyword is not None),
                                                  ("vector", self.index is not None)) if on)
            if not signals:
                raise UnsupportedError(
                    "search with a query needs keyword or vector indexing; this store was "
                    "opened with keyword=False and no index: search with filter= only"
                )
            return signals
        signals = ("keyword", "vector") if mode == "hybrid" else (mode,)
        if "vector" in signals and self.index is None:
            raise UnsupportedError(
                f"mode={mode!r} needs a vector index; open the store with "
                "index=IndexConfig(embedder=...) or use mode='keyword'"
            )
        if "keyword" in signals and self.keyword is None:
            raise UnsupportedError(
                f"mode={mode!r} needs keyword indexing, which this store has off "
                "(keyword=False); use mode='vector'"
            )
        return signals

    def _term_counts(self, op: PutOp) -> dict[str, int]:
        assert self.keyword is not None
        config = self.keyword
        fields = (op.index if op.index is not None and op.index is not False
                  else config.fields if config.fields is not None
                  else self.index.fields if self.index is not None else (WHOLE_VALUE,))
        counts: dict[str, int] = {}
        for term in config.tokenizer.tokenize(keyword_text(op.value, fields)):
            counts[term] = counts.get(term, 0) + 1
        return counts

    @property
    def embed_counts(self) -> dict[str, int]:
        """Texts embedded by this store's embedder vs served from the cache (both kinds),
        since it was opened."""
        return self._embeds.snapshot()

    def _embed_cached(self, kind: TextKind, texts: list[str]
                      ) -> tuple[list[npt.NDArray[np.float32]], list[bytes]]:
        """Vectors for ``texts``, embedding only texts this model has not embedded before."""
        assert self.index is not None
        model = self.index.model
        hashes = [text_hash(kind, text) for text in texts]
        found = self._memo.get_many(model, hashes)
        if kind == "document" and len(found) < len(set(hashes)):
            found.update(self._stored_vectors([h for h in hashes if h not in found]))
        todo: dict[bytes, str] = {}
        for digest, text in zip(hashes, texts, strict=True):
            if digest not in found:
                todo.setdefault(digest, text)
        self._embeds.add(cached=len(texts) - len(todo))
        if todo:
            embed = (self.index.embedder.embed_documents if kind == "document"
                     else self.index.embedder.embed_queries)
            fresh = self._embed(embed, list(todo.values()))
            new = dict(zip(todo, fresh, strict=True))
            self._memo.put_many(model, new)
            found.update(new)
            self._embeds.add(embedded=len(todo))
        return [found[digest] for digest in hashes], hashes

    def _holds_vectors(self) -> bool:
        """Whether any item has a vector (SQL backends override; in memory there are none
        without an index)."""
        return False

    def _vector_models(self) -> list[str]:
        """The names of the embedding models whose vectors this store holds, sorted (SQL
        backends override; in memory, only the open index's model can have made any)."""
        return []

    def _stored_vectors(self, hashes: list[bytes]) -> dict[bytes, npt.NDArray[np.float32]]:
        """Vectors this store already holds for document text hashes (SQL backends override;
        the default relies on the in-process memo alone)."""
        return {}

    def _embed(self, fn: Callable[[Sequence[str]], npt.NDArray[np.float32]],
               texts: list[str]) -> npt.NDArray[np.float32]:
        """Unit vectors for ``texts``, checked (:func:`remem.embed.base.checked_unit_vectors`)."""
        assert self.index is not None
        return checked_unit_vectors(fn, texts, model=self.index.model, dims=self.index.dims)

    # -- ranked search, shared by backends ----------------------------------------------------

    def _ranked_search(self, position: int, op: SearchOp, prepared: Prepared,
                       source: CandidateSource) -> list[Ranked]:
        """The page of a search with a query: candidates per signal from the backend's
        ``source`` (already restricted to prefix, filter and time range), then fusion and
        re-ranking in pure code."""
        signals = prepared.signals[position]
        ranking = (op.ranking or Ranking()).for_query(op.query or "")
        needed = op.offset + op.limit
        plain = (len(signals) == 1 and ranking.recency is None and ranking.mmr is None
                 and ranking.min_score is None and not ranking.staged)
        if not plain and needed > ranking.candidates:
            # a deeper candidate list would change fusion and re-ranking, so pages fetched
            # with different offsets would disagree (duplicates, gaps)
            raise InvalidInputError(
                f"offset + limit ({needed}) exceeds Ranking.candidates ({ranking.candidates}); "
                "fused and re-ranked results stop there: pass ranking=Ranking(candidates=N) "
                "with N >= offset + limit"
            )
        # one signal, ranked as is: no need to look past the page
        depth = needed if plain else ranking.candidates
        lists: dict[str, list[Candidate]] = {}
        hits: KeywordHits | None = None
        if "keyword" in signals:
            terms = prepared.query_terms[position]
            found: list[Candidate] = []
            if terms:
                hits = source.keyword_hits(terms, depth)
                assert self.keyword is not None
                found = bm25_scores(hits.postings, doc_freq=hits.doc_freq, n_docs=hits.n_docs,
                                    total_len=hits.total_len, params=self.keyword.bm25,
                                    limit=depth)
            lists["keyword"] = found
        if "vector" in signals:
            lists["vector"] = source.vector_hits(prepared.query_vectors[position], depth)
        # before the stages: feedback may replace the vector list with a moved query's
        measure = relevance_reader(source, keyword=hits,
                                   query_vector=prepared.query_vectors.get(position),
                                   vector_list=lists.get("vector"))
        if ranking.staged:
            source = ValueMemo(source)
        boosts = expand_candidates(
            source, ranking, lists, query=op.query or "",
            query_vector=prepared.query_vectors.get(position),
            query_terms=prepared.query_terms.get(position, []), item_texts=self._keyword_text,
            tokenize=self.keyword.tokenizer.tokenize if self.keyword is not None else None,
            bm25=self.keyword.bm25 if self.keyword is not None else BM25Params(),
            depth=ranking.candidates) if ranking.staged else {}
        ranked = rank_candidates(lists, ranking, needed=needed, event_times=source.event_times,
                                 now=prepared.now, vectors=source.item_vectors, boosts=boosts,
                                 groups=group_reader(source), measure=measure)
        return ranked[op.offset:needed]

    def _keyword_text(self, value: Mapping[str, Any]) -> str:
        """The text the keyword index holds for ``value`` (the configured fields)."""
        fields = (self.keyword.fields if self.keyword is not None and self.keyword.fields
                  is not None else self.index.fields if self.index is not None
                  else (WHOLE_VALUE,))
        return keyword_text(value, fields)

    @staticmethod
    def _hit(item: Item, ranked: Ranked) -> SearchItem:
        """``item`` as the search result ``ranked`` describes."""
        return SearchItem.from_item(
            item, ranked.score,
            {name: SignalScore(rank, score) for name, (rank, score) in ranked.signals.items()},
            relevance=ranked.relevance, relevance_by_signal=ranked.parts)

    # -- TTL helpers shared by backends -------------------------------------------------------

    def _expiry_for(self, op: PutOp, now: float) -> tuple[float | None, float | None]:
        """``(ttl_seconds, expires_at)`` for a put."""
        ttl = self.ttl.default_ttl if op.ttl is NOT_PROVIDED else op.ttl
        # PutOp normalised a timedelta to seconds when it was built
        assert not isinstance(ttl, NotProvided | timedelta)
        if op.expires_at is not None:
            return ttl, op.expires_at
        base = op.updated_at if op.updated_at is not None else now
        if ttl is None:
            return None, None
        # both are bounded when the op is built; the sum may still pass year 9999
        return ttl, min(base + float(ttl), MAX_TIMESTAMP)

    def _refresh(self, flag: bool | None) -> bool:
        return self.ttl.refresh_on_read if flag is None else flag

    # -- friendly methods ---------------------------------------------------------------------

    def get(self, namespace: Sequence[str], key: str, *,
            refresh_ttl: bool | None = None) -> Item | None:
        """The item at ``namespace`` / ``key``, or ``None`` if absent or expired."""
        result = self.batch([GetOp(_ns(namespace), key, refresh_ttl)])[0]
        assert result is None or isinstance(result, Item)
        return result

    def put(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
            ttl: float | timedelta | NotProvided | None = NOT_PROVIDED,
            index: Literal[False] | Sequence[str] | None = None,
            event_at: datetime | float | None = None) -> None:
        """Insert or replace an item. See :class:`PutOp` for ``ttl``, ``index`` and
        ``event_at``."""
        self.batch([PutOp(_ns(namespace), key, value, ttl=ttl, index=index, event_at=event_at)])

    def delete(self, namespace: Sequence[str], key: str) -> None:
        """Delete an item; deleting a missing item is not an error."""
        self.batch([DeleteOp(_ns(namespace), key)])

    def search(self, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
               filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
               refresh_ttl: bool | None = None, mode: SearchMode = "auto",
               ranking: Ranking | None = None, event_after: datetime | float | None = None,
               event_before: datetime | float | None = None) -> list[SearchItem]:
        """Items under ``namespace_prefix`` matching ``filter`` (and the event-time range),
        ranked by ``query`` if given, else newest first. See :class:`SearchOp`."""
        op = SearchOp(_ns(namespace_prefix), filter, query, limit, offset, refresh_ttl, mode,
                      ranking, event_after, event_before)
        result = self.batch([op])[0]
        assert isinstance(result, list)
        return result  # type: ignore[return-value]

    def list_namespaces(self, *, prefix: Sequence[str] | None = None,
                        suffix: Sequence[str] | None = None, max_depth: int | None = None,
                        limit: int = 100, offset: int = 0) -> list[Namespace]:
        """Distinct namespaces, sorted; see :class:`ListNamespacesOp`."""
        op = ListNamespacesOp(
            _ns(prefix) if prefix is not None else None,
            _ns(suffix) if suffix is not None else None,
            max_depth, limit, offset,
        )
        result = self.batch([op])[0]
        assert isinstance(result, list)
        return result  # type: ignore[return-value]

    def count(self, namespace_prefix: Sequence[str] = (), *,
              filter: Mapping[str, Any] | None = None,
              event_after: datetime | float | None = None,
              event_before: datetime | float | None = None) -> int:
        """How many live items :meth:`search` without a query would list for these
        arguments, all pages together; see :class:`CountOp`."""
        result = self.batch([CountOp(_ns(namespace_prefix), filter, event_after,
                                     event_before)])[0]
        assert isinstance(result, int)
        return result

    def reindex(self, namespace_prefix: Sequence[str] = (), *, batch_size: int = 500,
                progress: Callable[[int], None] | None = None) -> int:
        """Rebuild the keyword terms and vectors of every live item under the prefix with the
        store's current configuration; return how many items it visited.

        Use it after opening a store with an embedder for the first time, or after changing
        the indexed fields. Values, timestamps, TTLs and event times are kept; texts already
        embedded by this model are not embedded again. Per-item choices made at put time
        (``index=False`` or a field list) are replaced by the store's configuration.
        ``progress`` is called with the running count after each batch.

        Safe beside other writers: each item is written back only if it is unchanged since it
        was read (``PutOp.if_updated_at``); one changed or deleted meanwhile is left as it is
        (its writer already indexed it with the same configuration).
        """
        if self.index is None and self._holds_vectors():
            raise UsageError(
                "reindex without a vector index would drop every stored vector: open the "
                "store with index=IndexConfig(embedder=...) (CLI: --embedder local)"
            )
        count = 0
        pending: list[PutOp] = []

        def flush() -> None:
            nonlocal count, pending
            self.batch(pending)
            count += len(pending)
            pending = []
            if progress is not None:
                progress(count)

        for item in self.iter_items(namespace_prefix):  # pages: safe to write in between
            ttl = self.ttl_of(item.namespace, item.key) if item.expires_at else None
            pending.append(PutOp(
                item.namespace, item.key, item.value, ttl=ttl, event_at=item.event_at,
                created_at=item.created_at.timestamp(), updated_at=item.updated_at.timestamp(),
                expires_at=item.expires_at.timestamp() if item.expires_at else None,
                if_updated_at=item.updated_at.timestamp(),
            ))
            if len(pending) >= batch_size:
                flush()
        if pending:
            flush()
        return count

    @abstractmethod
    def iter_items(self, namespace_prefix: Sequence[str] = ()) -> Iterator[Item]:
        """Every live item under ``namespace_prefix`` with its timestamps (for export), in
        namespace then key order. Does not refresh TTLs."""

    def ttl_of(self, namespace: Sequence[str], key: str) -> float | None:
        """The TTL in seconds recorded for an item (``None``: none or no such item)."""
        return self._ttl_of(tuple(namespace), key)

    @abstractmethod
    def _ttl_of(self, namespace: Namespace, key: str) -> float | None: ...

    async def aget(self, namespace: Sequence[str], key: str, *,
                   refresh_ttl: bool | None = None) -> Item | None:
        """Async :meth:`get`."""
        return await asyncio.to_thread(self.get, namespace, key, refresh_ttl=refresh_ttl)

    async def aput(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
                   ttl: float | timedelta | NotProvided | None = NOT_PROVIDED,
                   index: Literal[False] | Sequence[str] | None = None,
                   event_at: datetime | float | None = None) -> None:
        """Async :meth:`put`."""
        await asyncio.to_thread(self.put, namespace, key, value, ttl=ttl, index=index,
                                event_at=event_at)

    async def adelete(self, namespace: Sequence[str], key: str) -> None:
        """Async :meth:`delete`."""
        await asyncio.to_thread(self.delete, namespace, key)

    async def asearch(self, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
                      filter: Mapping[str, Any] | None = None, limit: int = 10,
                      offset: int = 0, refresh_ttl: bool | None = None,
                      mode: SearchMode = "auto", ranking: Ranking | None = None,
                      event_after: datetime | float | None = None,
                      event_before: datetime | float | None = None) -> list[SearchItem]:
        """Async :meth:`search`."""
        return await asyncio.to_thread(
            self.search, namespace_prefix, query=query, filter=filter, limit=limit,
            offset=offset, refresh_ttl=refresh_ttl, mode=mode, ranking=ranking,
            event_after=event_after, event_before=event_before,
        )

    async def alist_namespaces(self, *, prefix: Sequence[str] | None = None,
                               suffix: Sequence[str] | None = None,
                               max_depth: int | None = None, limit: int = 100,
                               offset: int = 0) -> list[Namespace]:
        """Async :meth:`list_namespaces`."""
        return await asyncio.to_thread(
            self.list_namespaces, prefix=prefix, suffix=suffix, max_depth=max_depth,
            limit=limit, offset=offset,
        )

    async def acount(self, namespace_prefix: Sequence[str] = (), *,
                     filter: Mapping[str, Any] | None = None,
                     event_after: datetime | float | None = None,
                     event_before: datetime | float | None = None) -> int:
        """Async :meth:`count`."""
        return await asyncio.to_thread(self.count, namespace_prefix, filter=filter,
                                       event_after=event_after, event_before=event_before)

    async def asweep(self) -> int:
        """Async :meth:`sweep`."""
        return await asyncio.to_thread(self.sweep)

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.setup()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.setup)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await asyncio.to_thread(self.close)


def _ns(namespace: Sequence[str]) -> Namespace:
    # the op validates and converts; a plain str must reach it unchanged to be rejected
    return namespace  # type: ignore[return-value]


class ViewStore(BaseStore):
    """A view over another store (``inner``), sharing its index, keyword, TTL and clock: the
    view rewrites or checks operations in its own :meth:`batch` and hands them to ``inner``
    (:class:`~remem.store.scoped.ScopedStore`, :class:`~remem.store.guarded.GuardedStore`).
    ``close()`` leaves ``inner`` open: many views share one store, and its owner closes it."""

    def __init__(self, inner: BaseStore) -> None:
        super().__init__(index=inner.index, ttl=inner.ttl,
                         keyword=inner.keyword if inner.keyword is not None else False,
                         clock=inner.clock)
        self.inner = inner

    def _execute(self, ops: Sequence[Op], prepared: Prepared) -> list[Result]:
        raise AssertionError(f"{type(self).__name__}.batch delegates to the inner store")

    def setup(self) -> None:
        """Set up the inner store (idempotent)."""
        self.inner.setup()

    def close(self) -> None:
        """Nothing to release: the inner store belongs to whoever opened it."""

    def sweep(self) -> int:
        """Sweep expired items of the whole inner store (TTL is not per view)."""
        return self.inner.sweep()
