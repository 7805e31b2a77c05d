"""A LangGraph ``BaseStore`` over any remem store.

LangGraph's store API is operations as values (``GetOp``, ``PutOp``, ``SearchOp``,
``ListNamespacesOp``) run by ``batch`` / ``abatch``; remem's store has the same shape. So
the adapter is a pure translation (:func:`plan_batch` turns LangGraph's ops into remem's,
:func:`results_of` turns remem's results back) between a sync and an async shell that run one
remem batch each.

Where LangGraph's own stores differ, the adapter follows its ``SqliteStore`` for what a
persistent store must decide (filters, TTL, labels) and its ``InMemoryStore`` for batch
semantics; their test suites, run on it, are the referee:

* reads in a batch see the store as it was before the batch; its puts apply after them (the
  last put of a key wins). remem runs a batch in order, so the adapter moves reads first.
* ``PutOp.value=None`` deletes; ``ttl`` is in minutes (remem: seconds). Reads refresh a TTL
  when they ask to, and by default only with ``ttl={"refresh_on_read": True}``.
* a query is a vector search when the store has an index, and is ignored otherwise
  (``mode=`` picks remem's keyword or hybrid search instead).
* filters: ``{"field": value}`` and ``{"field": {"$op": value}}``, a dotted field a path
  into nested objects, nested objects matching as a part (``{"a": {"b": 1}}``); operands
  remem's filter language refuses (non-finite floats, integers past 64 bits, strings with
  NUL) become the conditions they amount to.
* namespaces follow LangGraph's label rules (no ``.``, no NUL, non-empty strings) and raise
  :class:`InvalidNamespaceError`; labels remem cannot store (control characters, ``"*"``) are
  kept under an escaped form (:func:`encode_label`) that no LangGraph label can take.

The remaining differences are listed in ``docs/integrations.md``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, normalize_rows
from remem.errors import ConfigError, InvalidInputError, NamespaceError, UnsupportedError
from remem.store import BaseStore as RememBaseStore
from remem.store import IndexConfig as RememIndexConfig
from remem.store import open_store
from remem.store import types as remem

try:
    from langgraph.store.base import (
        BaseStore,
        Embeddings,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        ensure_embeddings,
    )
    from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ConfigError("remem.integrations.langgraph needs LangGraph: pip install "
                      "'remem[langgraph]'") from error

from remem.integrations.langgraph.translate import (
    InvalidNamespaceError,
    checked_ttl,
    decode_label,
    decoded_namespace,
    encode_label,
    langgraph_ttl,
    match_conditions,
    matches_condition,
    minutes,
    namespace_labels,
    put_ttl,
    remem_ttl,
    translate_filter,
)

__all__ = ["InvalidNamespaceError", "LangGraphEmbedder", "RememStore", "decode_label",
           "encode_label", "plan_batch", "results_of", "translate_filter"]

logger = logging.getLogger("remem.integrations.langgraph")

SearchMode = Literal["langgraph", "auto", "hybrid", "keyword", "vector"]
"""How a query is searched: ``"langgraph"`` (vectors when indexed, else the query is
ignored, as LangGraph's stores do) or one of remem's modes."""

#: SqliteStore's sweep interval when neither the call nor the TTL config names one
_SWEEP_MINUTES = 5.0


# -- the index ---------------------------------------------------------------------------------

class LangGraphEmbedder:
    """A LangChain ``Embeddings`` (or anything LangGraph's ``index["embed"]`` takes: a
    function of a list of texts) as a remem embedder. ``model`` is recorded with the vectors;
    the store refuses to mix vectors of different models, so give a stable name. ``config``:
    the LangGraph index config it came from (``RememStore.index_config`` shows it)."""

    def __init__(self, embed: Any, dims: int, *, model: str | None = None,
                 config: Mapping[str, Any] | None = None) -> None:
        if isinstance(embed, str):
            raise UnsupportedError(
                f"index embed {embed!r} names a provider model, which would be downloaded or "
                "called over the network; pass an Embeddings object or a function")
        self._embeddings: Embeddings = ensure_embeddings(embed)
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            raise InvalidInputError(f"index dims must be a positive integer, got {dims!r}")
        self._dims = dims
        self._model = model or f"langgraph:{type(self._embeddings).__name__}-{dims}"
        self.config: dict[str, Any] | None = dict(config) if config is not None else None

    @property
    def model(self) -> str:
        """The name recorded with the vectors."""
        return self._model

    @property
    def dims(self) -> int:
        """The vector length (LangGraph's ``index["dims"]``)."""
        return self._dims

    @property
    def embeddings(self) -> Embeddings:
        """The LangChain ``Embeddings`` that embeds (``embed`` itself, or a wrapper of it)."""
        return self._embeddings

    def _array(self, vectors: Sequence[Sequence[float]], count: int) -> npt.NDArray[np.float32]:
        array = np.asarray(vectors, dtype=np.float32).reshape(count, -1) if count else \
            np.zeros((0, self._dims), dtype=np.float32)
        if array.shape[1] != self._dims:
            raise InvalidInputError(f"the embeddings returned vectors of {array.shape[1]} "
                                    f"numbers; index dims says {self._dims}")
        return normalize_rows(array)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed stored texts."""
        texts = list(texts)
        return self._array(self._embeddings.embed_documents(texts) if texts else [],
                           len(texts))

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed queries (one ``embed_query`` call each, as LangGraph does)."""
        return self._array([self._embeddings.embed_query(text) for text in texts], len(texts))


class RememEmbeddings(Embeddings):
    """A remem embedder as a LangChain ``Embeddings`` (``RememStore.embeddings`` of a store
    whose index was not given in LangGraph's form)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts."""
        return [[float(x) for x in row] for row in self.embedder.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return [float(x) for x in self.embedder.embed_queries([text])[0]]


def _field_path(path: str) -> str:
    if path == "$":
        return path
    if not isinstance(path, str) or not path or any(char in path for char in "[]{}*,"):
        raise UnsupportedError(
            f"index field {path!r}: remem indexes '$' (the whole value) or dotted paths "
            "('text', 'doc.title'); array and multi-field paths ([*], {a,b}) are not "
            "supported; index each field by its dotted path instead")
    return path


def remem_index(index: IndexConfig) -> RememIndexConfig:
    """LangGraph's index config (``dims``, ``embed``, ``fields``; ``SqliteStore``'s
    ``text_fields`` is read as ``fields``) as remem's."""
    if not isinstance(index, Mapping) or "dims" not in index or "embed" not in index:
        raise InvalidInputError("index must be a dict with 'dims' and 'embed' (and optionally "
                                f"'fields'), got {index!r}")
    given: Any = index.get("fields") or index.get("text_fields") or ["$"]
    fields = tuple(_field_path(path) for path in ([given] if isinstance(given, str) else given))
    return RememIndexConfig(LangGraphEmbedder(index["embed"], index["dims"], config=index),
                            fields=fields)


def _langgraph_index(index: RememIndexConfig | None
                     ) -> tuple[IndexConfig | None, Embeddings | None]:
    """A remem store's index as LangGraph's ``index_config`` and ``embeddings``."""
    if index is None:
        return None, None
    embedder = index.embedder
    if isinstance(embedder, LangGraphEmbedder) and embedder.config is not None:
        return IndexConfig(**embedder.config), embedder.embeddings  # type: ignore[typeddict-item]
    embeddings = RememEmbeddings(embedder)
    return IndexConfig(dims=index.dims, embed=embeddings, fields=list(index.fields)), embeddings


# -- items ------------------------------------------------------------

def _item(item: remem.Item) -> Item:
    return Item(value=dict(item.value), key=item.key, namespace=decoded_namespace(item.namespace),
                created_at=item.created_at, updated_at=item.updated_at)


def _search_item(item: remem.SearchItem, scored: bool) -> SearchItem:
    return SearchItem(namespace=decoded_namespace(item.namespace), key=item.key,
                      value=dict(item.value), created_at=item.created_at,
                      updated_at=item.updated_at, score=item.score if scored else None)


class _Plan:
    """How to answer each LangGraph op from the remem results (built by :func:`plan_batch`)."""

    def __init__(self) -> None:
        self.ops: list[remem.Op] = []
        #: per LangGraph op: (kind, index of its remem op or None, extra)
        self.answers: list[tuple[str, int | None, Any]] = []


def plan_batch(ops: Iterable[Op], *, indexed: bool, mode: SearchMode) -> _Plan:
    """LangGraph ops as one remem batch: the reads first (they see the store as it was), then
    the writes in order (the last put of a key wins). A namespace either side refuses raises
    :class:`InvalidNamespaceError` before anything runs."""
    try:
        return _plan(ops, indexed=indexed, mode=mode)
    except InvalidNamespaceError:
        raise
    except NamespaceError as error:  # remem's own rules (label length, depth, keys)
        raise InvalidNamespaceError(str(error)) from error


def _plan(ops: Iterable[Op], *, indexed: bool, mode: SearchMode) -> _Plan:
    plan = _Plan()
    writes: list[remem.Op] = []
    for op in ops:
        if isinstance(op, GetOp):
            plan.answers.append(("get", len(plan.ops), None))
            plan.ops.append(remem.GetOp(namespace_labels(op.namespace, "namespace"), str(op.key),
                                        bool(op.refresh_ttl)))
        elif isinstance(op, SearchOp):
            prefix = namespace_labels(op.namespace_prefix, "namespace prefix")
            if op.limit <= 0:
                plan.answers.append(("empty", None, None))
                continue
            if op.offset < 0:
                raise InvalidInputError(f"offset must be >= 0, got {op.offset}")
            query = op.query or None
            if mode == "langgraph":
                search_mode: remem.SearchMode = "vector"
                if not indexed:
                    query = None  # LangGraph ignores a query without an index
            else:
                search_mode = mode
            plan.answers.append(("search", len(plan.ops), query is not None))
            plan.ops.append(remem.SearchOp(
                prefix, filter=translate_filter(op.filter), query=query, limit=op.limit,
                offset=op.offset, refresh_ttl=bool(op.refresh_ttl), mode=search_mode))
        elif isinstance(op, ListNamespacesOp):
            prefix_path, suffix, rest = match_conditions(op.match_conditions)
            if op.limit <= 0:
                plan.answers.append(("empty", None, None))
                continue
            if rest:  # more conditions than remem's one prefix and one suffix: filter here
                plan.answers.append(("namespaces", len(plan.ops), (rest, op)))
                plan.ops.append(remem.ListNamespacesOp(prefix_path, suffix, None,
                                                       limit=1_000_000))
            else:
                plan.answers.append(("namespaces", len(plan.ops), None))
                plan.ops.append(remem.ListNamespacesOp(prefix_path, suffix, op.max_depth,
                                                       limit=op.limit, offset=op.offset))
        elif isinstance(op, PutOp):
            plan.answers.append(("put", None, None))
            namespace = namespace_labels(op.namespace, "namespace")
            if op.value is None:
                writes.append(remem.DeleteOp(namespace, str(op.key)))
            else:
                index = op.index if op.index is None or op.index is False else [
                    _field_path(path) for path in op.index]
                writes.append(remem.PutOp(namespace, str(op.key), op.value,
                                          ttl=put_ttl(op.ttl), index=index))
        else:
            raise InvalidInputError(f"unknown LangGraph store operation {type(op).__name__}")
    plan.ops.extend(writes)
    return plan


def results_of(plan: _Plan, results: Sequence[remem.Result]) -> list[Result]:
    """The LangGraph results of a planned batch from remem's results."""
    out: list[Result] = []
    for kind, position, extra in plan.answers:
        found = results[position] if position is not None else None
        if kind == "get":
            out.append(_item(found) if isinstance(found, remem.Item) else None)
        elif kind == "search":
            assert isinstance(found, list)
            out.append([_search_item(item, bool(extra)) for item in found
                        if isinstance(item, remem.SearchItem)])
        elif kind == "namespaces":
            assert isinstance(found, list)
            namespaces = [decoded_namespace(ns) for ns in found if isinstance(ns, tuple)]
            if extra is not None:
                rest, op = extra
                namespaces = [ns for ns in namespaces
                              if all(matches_condition(condition, ns) for condition in rest)]
                if op.max_depth is not None:
                    namespaces = sorted({ns[:op.max_depth] for ns in namespaces})
                namespaces = namespaces[op.offset:op.offset + op.limit]
            out.append(namespaces)
        elif kind == "empty":
            out.append([])
        else:
            out.append(None)
    return out


@contextlib.contextmanager
def _namespace_errors() -> Iterator[None]:
    try:
        yield
    except LangGraphNamespaceError as error:
        if isinstance(error, InvalidNamespaceError):
            raise
        raise InvalidNamespaceError(str(error)) from error


class RememStore(BaseStore):
    """LangGraph's store API over a remem store.

    ``RememStore(store)`` wraps a store you opened (its index, keyword and TTL config apply);
    :meth:`open` opens one by location (a SQLite path, ``":memory:"``, ``"memory://"`` or a
    ``postgresql://`` DSN) with LangGraph's ``index`` config (``dims``, ``embed``,
    ``fields``). ``ttl``: LangGraph's TTL config (``default_ttl`` in minutes,
    ``refresh_on_read``, ``sweep_interval_minutes`` for :meth:`start_ttl_sweeper`); left out,
    the wrapped store's. ``mode``: how queries are searched (see :data:`SearchMode`).

    ``index_config`` is LangGraph's dict (``dims``, ``embed``, ``fields``...) and
    ``embeddings`` its LangChain ``Embeddings``, both ``None`` without an index.
    """

    supports_ttl: bool = True

    def __init__(self, store: RememBaseStore, *, ttl: TTLConfig | None = None,
                 mode: SearchMode = "langgraph", owns_store: bool = False) -> None:
        if not isinstance(store, RememBaseStore):
            raise InvalidInputError(f"RememStore wraps a remem store (remem.store.open_store), "
                                    f"got {type(store).__name__}")
        if mode not in ("langgraph", "auto", "hybrid", "keyword", "vector"):
            raise InvalidInputError(f"mode must be langgraph, auto, hybrid, keyword or vector, "
                                    f"got {mode!r}")
        self.store = store
        # refresh_on_read is always present, so LangGraph's get/search default to it
        self.ttl_config: TTLConfig = checked_ttl(ttl) if ttl is not None else \
            langgraph_ttl(store.ttl)
        self.mode: SearchMode = mode
        self.index_config, self.embeddings = _langgraph_index(store.index)
        self._owns_store = owns_store
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    @classmethod
    def open(cls, location: str = ":memory:", *, index: IndexConfig | None = None,
             ttl: TTLConfig | None = None, mode: SearchMode = "langgraph",
             **options: Any) -> RememStore:
        """Open (creating if needed) a remem store at ``location`` for LangGraph. Other
        options go to :func:`remem.store.open_store`."""
        store = open_store(location, index=remem_index(index) if index else None,
                           ttl=remem_ttl(ttl), **options)
        try:
            return cls(store, ttl=ttl if ttl is not None else TTLConfig(), mode=mode,
                       owns_store=True)
        except BaseException:
            store.close()
            raise

    def setup(self) -> None:
        """Create or upgrade the remem store's tables (idempotent; :meth:`open` has)."""
        self.store.setup()

    async def asetup(self) -> None:
        """Async :meth:`setup`."""
        await asyncio.to_thread(self.store.setup)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph ops as one remem batch."""
        plan = plan_batch(ops, indexed=self.store.index is not None, mode=self.mode)
        return results_of(plan, self.store.batch(plan.ops) if plan.ops else [])

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch`."""
        plan = plan_batch(ops, indexed=self.store.index is not None, mode=self.mode)
        return results_of(plan, await self.store.abatch(plan.ops) if plan.ops else [])

    # LangGraph's friendly methods check labels before batching and raise its own class;
    # these raise remem's InvalidNamespaceError (both classes) instead

    def get(self, *args: Any, **kwargs: Any) -> Item | None:
        """LangGraph's ``get`` (see ``langgraph.store.base.BaseStore``)."""
        with _namespace_errors():
            return super().get(*args, **kwargs)

    def search(self, *args: Any, **kwargs: Any) -> list[SearchItem]:
        """LangGraph's ``search``."""
        with _namespace_errors():
            return super().search(*args, **kwargs)

    def put(self, *args: Any, **kwargs: Any) -> None:
        """LangGraph's ``put`` (``ttl`` in minutes)."""
        with _namespace_errors():
            super().put(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> None:
        """LangGraph's ``delete``."""
        with _namespace_errors():
            super().delete(*args, **kwargs)

    def list_namespaces(self, *args: Any, **kwargs: Any) -> list[tuple[str, ...]]:
        """LangGraph's ``list_namespaces``."""
        with _namespace_errors():
            return super().list_namespaces(*args, **kwargs)

    async def aget(self, *args: Any, **kwargs: Any) -> Item | None:
        """Async :meth:`get`."""
        with _namespace_errors():
            return await super().aget(*args, **kwargs)

    async def asearch(self, *args: Any, **kwargs: Any) -> list[SearchItem]:
        """Async :meth:`search`."""
        with _namespace_errors():
            return await super().asearch(*args, **kwargs)

    async def aput(self, *args: Any, **kwargs: Any) -> None:
        """Async :meth:`put`."""
        with _namespace_errors():
            await super().aput(*args, **kwargs)

    async def adelete(self, *args: Any, **kwargs: Any) -> None:
        """Async :meth:`delete`."""
        with _namespace_errors():
            await super().adelete(*args, **kwargs)

    async def alist_namespaces(self, *args: Any, **kwargs: Any) -> list[tuple[str, ...]]:
        """Async :meth:`list_namespaces`."""
        with _namespace_errors():
            return await super().alist_namespaces(*args, **kwargs)

    # -- TTL sweeping, as LangGraph's SQL stores ----------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete expired items now; how many. (Reads never return expired items anyway:
        sweeping reclaims space.)"""
        return self.store.sweep()

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl`."""
        return await self.store.asweep()

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None
                          ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (else the TTL config's, else 5) in a daemon
        thread until :meth:`stop_ttl_sweeper`, :meth:`close` or the returned future is
        cancelled. Calling it while a sweeper runs starts no second one."""
        interval = minutes(sweep_interval_minutes, "sweep_interval_minutes") or minutes(
            self.ttl_config.get("sweep_interval_minutes"), "sweep_interval_minutes") or \
            _SWEEP_MINUTES
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda done: self._sweeper_stop.set()
                                 if done.cancelled() else None)
        if self._sweeper is not None and self._sweeper.is_alive():
            return future
        self._sweeper_stop.clear()
        stop = self._sweeper_stop

        def loop() -> None:
            while not stop.wait(interval * 60):
                try:
                    swept = self.sweep_ttl()
                    if swept:
                        logger.info("swept %d expired store items", swept)
                except Exception:  # keep sweeping; reads are correct without it
                    logger.exception("TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self._sweeper = threading.Thread(target=loop, name="remem-langgraph-ttl", daemon=True)
        self._sweeper.start()
        return future

    async def astart_ttl_sweeper(self, sweep_interval_minutes: float | None = None
                                 ) -> concurrent.futures.Future[None]:
        """Async :meth:`start_ttl_sweeper` (the sweeper is a thread either way)."""
        return RememStore.start_ttl_sweeper(self, sweep_interval_minutes)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``False`` if it was still running after ``timeout``
        seconds (``None``: wait for it)."""
        return self._stop_sweeper(timeout)

    def _stop_sweeper(self, timeout: float | None) -> bool:
        sweeper = self._sweeper
        if sweeper is None:
            return True
        self._sweeper_stop.set()
        if sweeper is not threading.current_thread():
            sweeper.join(timeout)
        if sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Async :meth:`stop_ttl_sweeper`."""
        return await asyncio.to_thread(self._stop_sweeper, timeout)

    def close(self) -> None:
        """Stop the sweeper; close the remem store if :meth:`open` opened it."""
        self._stop_sweeper(None)
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> RememStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
