"""The store protocol: backends implement ``_execute``; everything else is shared here.

``batch`` semantics (the same on every backend, tested by the conformance suite):

* Operations run **in order, as one atomic unit**. A read sees the writes made by earlier
  operations of the same batch (read-your-writes), and on the SQL backends the whole batch is
  one transaction: if any operation fails, none of its writes are kept.
* Every operation of a batch sees the same "now" (one clock reading), so items put together
  share their timestamps.
* Embedding happens before anything is written, for all puts and queries of the batch at once.
  An embedder failure therefore leaves the store untouched.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import TracebackType
from typing import Any, ClassVar, Literal, Self

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, normalize_rows
from remem.errors import IndexConfigError, InvalidInputError, UnsupportedError
from remem.store.filters import MISSING, resolve_path
from remem.store.types import (
    NOT_PROVIDED,
    WILDCARD,
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
    SearchOp,
)

__all__ = ["BaseStore", "IndexConfig", "Prepared", "TTLConfig", "index_texts", "match_namespaces"]

WHOLE_VALUE = "$"

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
        if self.default_ttl is not None and not self.default_ttl > 0:
            raise InvalidInputError(
                f"TTLConfig.default_ttl must be a positive number of seconds or None, "
                f"got {self.default_ttl!r}"
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
    #: op position -> [(field, unit vector)] for puts that are indexed
    put_vectors: dict[int, list[tuple[str, npt.NDArray[np.float32]]]] = field(
        default_factory=dict
    )
    #: op position -> unit query vector for searches with a query
    query_vectors: dict[int, npt.NDArray[np.float32]] = field(default_factory=dict)


def index_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[tuple[str, str]]:
    """The ``(field, text)`` pairs to embed for ``value``; absent fields are skipped."""
    pairs: list[tuple[str, str]] = []
    for path in fields:
        if path == WHOLE_VALUE:
            pairs.append((path, json.dumps(value, ensure_ascii=False, sort_keys=True)))
            continue
        found = resolve_path(value, tuple(path.split(".")))
        if found is MISSING or found is None:
            continue
        if isinstance(found, str):
            text = found
        elif isinstance(found, list) and all(isinstance(x, str) for x in found):
            text = "\n".join(found)
        else:
            text = json.dumps(found, ensure_ascii=False, sort_keys=True)
        if text:
            pairs.append((path, text))
    return pairs


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

    #: capabilities this backend supports, e.g. ``{"vector_search", "ttl"}``
    capabilities: ClassVar[frozenset[str]] = frozenset({"ttl", "vector_search"})

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.index = index
        self.ttl = ttl or TTLConfig()
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
        list_namespaces, ``None`` for puts and deletes."""
        op_list = list(ops)
        for position, op in enumerate(op_list):
            if not isinstance(op, GetOp | PutOp | DeleteOp | SearchOp | ListNamespacesOp):
                raise InvalidInputError(
                    f"batch operation {position} is a {type(op).__name__}; expected GetOp, "
                    "PutOp, DeleteOp, SearchOp or ListNamespacesOp"
                )
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
            if isinstance(op, PutOp) and self.index is not None and op.index is not False:
                fields = self.index.fields if op.index is None else op.index
                for field_path, text in index_texts(op.value, fields):
                    doc_slots.append((position, field_path))
                    doc_texts.append(text)
            elif isinstance(op, SearchOp) and op.query is not None:
                if self.index is None:
                    raise UnsupportedError(
                        "search with a query needs a vector index; open the store with "
                        "index=IndexConfig(embedder=...) or search with filter= only"
                    )
                query_slots.append(position)
                query_texts.append(op.query)
        if doc_texts:
            assert self.index is not None
            vectors = self._embed(self.index.embedder.embed_documents, doc_texts)
            for (position, field_path), vector in zip(doc_slots, vectors, strict=True):
                prepared.put_vectors.setdefault(position, []).append((field_path, vector))
        if query_texts:
            assert self.index is not None
            vectors = self._embed(self.index.embedder.embed_queries, query_texts)
            for position, vector in zip(query_slots, vectors, strict=True):
                prepared.query_vectors[position] = vector
        return prepared

    def _embed(self, fn: Callable[[Sequence[str]], npt.NDArray[np.float32]],
               texts: list[str]) -> npt.NDArray[np.float32]:
        assert self.index is not None
        array = np.asarray(fn(texts), dtype=np.float32)
        if array.shape != (len(texts), self.index.dims):
            raise IndexConfigError(
                f"embedder {self.index.model!r} returned shape {array.shape} for {len(texts)} "
                f"texts; expected ({len(texts)}, {self.index.dims})"
            )
        return normalize_rows(array)

    # -- TTL helpers shared by backends -------------------------------------------------------

    def _expiry_for(self, op: PutOp, now: float) -> tuple[float | None, float | None]:
        """``(ttl_seconds, expires_at)`` for a put."""
        ttl = self.ttl.default_ttl if op.ttl is NOT_PROVIDED else op.ttl
        # PutOp normalised a timedelta to seconds when it was built
        assert not isinstance(ttl, NotProvided | timedelta)
        if op.expires_at is not None:
            return ttl, op.expires_at
        base = op.updated_at if op.updated_at is not None else now
        return ttl, (base + float(ttl)) if ttl is not None else None

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
            index: Literal[False] | Sequence[str] | None = None) -> None:
        """Insert or replace an item. See :class:`PutOp` for ``ttl`` and ``index``."""
        self.batch([PutOp(_ns(namespace), key, value, ttl=ttl, index=index)])

    def delete(self, namespace: Sequence[str], key: str) -> None:
        """Delete an item; deleting a missing item is not an error."""
        self.batch([DeleteOp(_ns(namespace), key)])

    def search(self, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
               filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
               refresh_ttl: bool | None = None) -> list[SearchItem]:
        """Items under ``namespace_prefix`` matching ``filter``, ranked by ``query`` if given,
        else newest first. See :class:`SearchOp`."""
        op = SearchOp(_ns(namespace_prefix), filter, query, limit, offset, refresh_ttl)
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
                   index: Literal[False] | Sequence[str] | None = None) -> None:
        """Async :meth:`put`."""
        await asyncio.to_thread(self.put, namespace, key, value, ttl=ttl, index=index)

    async def adelete(self, namespace: Sequence[str], key: str) -> None:
        """Async :meth:`delete`."""
        await asyncio.to_thread(self.delete, namespace, key)

    async def asearch(self, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
                      filter: Mapping[str, Any] | None = None, limit: int = 10,
                      offset: int = 0, refresh_ttl: bool | None = None) -> list[SearchItem]:
        """Async :meth:`search`."""
        return await asyncio.to_thread(
            self.search, namespace_prefix, query=query, filter=filter, limit=limit,
            offset=offset, refresh_ttl=refresh_ttl,
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
