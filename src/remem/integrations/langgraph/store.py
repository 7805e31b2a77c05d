"""A LangGraph ``BaseStore`` over any remem store.

LangGraph's store API is operations as values (``GetOp``, ``PutOp``, ``SearchOp``,
``ListNamespacesOp``) run by ``batch`` / ``abatch``; remem's store has the same shape. So
the adapter is a pure translation (:func:`plan_batch` turns LangGraph's ops into remem's,
:func:`results_of` turns remem's results back) between a sync and an async shell that run one
remem batch each.

Where the two differ, the adapter follows LangGraph (its ``InMemoryStore``, which the
conformance test runs beside it):

* reads in a batch see the store as it was before the batch; its puts apply after them (the
  last put of a key wins). remem runs a batch in order, so the adapter moves reads first.
* ``PutOp.value=None`` deletes; ``ttl`` is in minutes (remem: seconds).
* a query is a vector search when the store has an index, and is ignored otherwise
  (``mode=`` picks remem's keyword or hybrid search instead).
* filters: LangGraph's ``{"field": value}`` and ``{"field": {"$op": value}}`` on top-level
  fields, nested objects matching as a part (``{"a": {"b": 1}}``).

The remaining differences are listed in ``docs/integrations.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from remem.embed.base import normalize_rows
from remem.errors import ConfigError, FilterError, InvalidInputError, UnsupportedError
from remem.store import BaseStore as RememBaseStore
from remem.store import IndexConfig as RememIndexConfig
from remem.store import open_store
from remem.store import types as remem

try:
    from langgraph.store.base import (
        NOT_PROVIDED,
        BaseStore,
        Embeddings,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        ensure_embeddings,
    )
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ConfigError("remem.integrations.langgraph needs LangGraph: pip install "
                      "'remem[langgraph]'") from error

__all__ = ["LangGraphEmbedder", "RememStore", "plan_batch", "results_of", "translate_filter"]

SearchMode = Literal["langgraph", "auto", "hybrid", "keyword", "vector"]
"""How a query is searched: ``"langgraph"`` (vectors when indexed, else the query is
ignored, as LangGraph's stores do) or one of remem's modes."""

#: LangGraph's operators, then remem's own (an extension: LangGraph's stores refuse them)
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte",
                        "$in", "$nin", "$exists", "$contains"})


class LangGraphEmbedder:
    """A LangChain ``Embeddings`` (or anything LangGraph's ``index["embed"]`` takes: a
    function of a list of texts) as a remem embedder. ``model`` is recorded with the vectors;
    the store refuses to mix vectors of different models, so give a stable name."""

    def __init__(self, embed: Any, dims: int, *, model: str | None = None) -> None:
        if isinstance(embed, str):
            raise UnsupportedError(
                f"index embed {embed!r} names a provider model, which would be downloaded or "
                "called over the network; pass an Embeddings object or a function")
        self._embeddings: Embeddings = ensure_embeddings(embed)
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            raise InvalidInputError(f"index dims must be a positive integer, got {dims!r}")
        self._dims = dims
        self._model = model or f"langgraph:{type(self._embeddings).__name__}-{dims}"

    @property
    def model(self) -> str:
        """The name recorded with the vectors."""
        return self._model

    @property
    def dims(self) -> int:
        """The vector length (LangGraph's ``index["dims"]``)."""
        return self._dims

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


def _field_path(path: str) -> str:
    if path == "$":
        return path
    if not path or any(char in path for char in "[]{}*,"):
        raise UnsupportedError(
            f"index field {path!r}: remem indexes '$' (the whole value) or dotted paths "
            "('text', 'doc.title'); array and multi-field paths ([*], {a,b}) are not "
            "supported; index each field by its dotted path instead")
    return path


def remem_index(index: IndexConfig) -> RememIndexConfig:
    """LangGraph's index config (``dims``, ``embed``, ``fields``) as remem's."""
    if not isinstance(index, Mapping) or "dims" not in index or "embed" not in index:
        raise InvalidInputError("index must be a dict with 'dims' and 'embed' (and optionally "
                                f"'fields'), got {index!r}")
    fields = tuple(_field_path(path) for path in (index.get("fields") or ["$"]))
    return RememIndexConfig(LangGraphEmbedder(index["embed"], index["dims"]), fields=fields)


def _filter_of(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        operators = [key for key in value if isinstance(key, str) and key.startswith("$")]
        if operators:
            unknown = sorted(set(operators) - _OPERATORS)
            if unknown or len(operators) != len(value):
                raise FilterError(
                    f"filter {prefix!r}: the operators are $eq, $ne, $gt, $gte, $lt, $lte "
                    f"(and remem's $in, $nin, $exists, $contains), not mixed with fields; "
                    f"got {sorted(value)}")
            out[prefix] = dict(value)
            return
        if not value:
            out[prefix] = {"$exists": True}  # an empty object matches any object
            return
        for key, inner in value.items():
            _filter_of(f"{prefix}.{_label(key)}", inner, out)
        return
    if isinstance(value, list | tuple):
        raise UnsupportedError(
            f"filter {prefix!r}: remem does not match a whole list; match its elements with "
            f"{{'{prefix}': {{'$contains': element}}}} (one condition per element)")
    out[prefix] = {"$eq": value}


def _label(key: Any) -> str:
    if not isinstance(key, str) or not key or "." in key:
        raise FilterError(f"filter field {key!r}: remem reads dots as paths; use fields "
                          "without '.' (or nested objects)")
    return key


def translate_filter(filter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """LangGraph's filter as remem's filter language: equality on top-level fields, nested
    objects matched as a part (dotted paths), ``$eq``... operators kept. A whole list as the
    value is refused (:class:`~remem.errors.UnsupportedError`, naming ``$contains``)."""
    if not filter:
        return None
    out: dict[str, Any] = {}
    for key, value in filter.items():
        _filter_of(_label(key), value, out)
    return out


def _item(item: remem.Item) -> Item:
    return Item(value=dict(item.value), key=item.key, namespace=tuple(item.namespace),
                created_at=item.created_at, updated_at=item.updated_at)


def _search_item(item: remem.SearchItem, scored: bool) -> SearchItem:
    return SearchItem(namespace=tuple(item.namespace), key=item.key, value=dict(item.value),
                      created_at=item.created_at, updated_at=item.updated_at,
                      score=item.score if scored else None)


def _ttl(ttl: Any) -> Any:
    if ttl is NOT_PROVIDED:
        return remem.NOT_PROVIDED
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0:
        raise InvalidInputError(f"ttl must be a positive number of minutes or None, got {ttl!r}")
    return float(ttl) * 60  # LangGraph counts minutes, remem seconds


def _namespace_match(conditions: Sequence[MatchCondition] | None
                     ) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None,
                                list[MatchCondition]]:
    prefix = suffix = None
    rest: list[MatchCondition] = []
    for condition in conditions or ():
        if condition.match_type == "prefix" and prefix is None:
            prefix = tuple(condition.path)
        elif condition.match_type == "suffix" and suffix is None:
            suffix = tuple(condition.path)
        elif condition.match_type in ("prefix", "suffix"):
            rest.append(condition)
        else:
            raise InvalidInputError(f"match_type must be 'prefix' or 'suffix', got "
                                    f"{condition.match_type!r}")
    return prefix, suffix, rest


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else \
        namespace[len(namespace) - len(path):]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True))


class _Plan:
    """How to answer each LangGraph op from the remem results (built by :func:`plan_batch`)."""

    def __init__(self) -> None:
        self.ops: list[remem.Op] = []
        #: per LangGraph op: (kind, index of its remem op or None, extra)
        self.answers: list[tuple[str, int | None, Any]] = []


def plan_batch(ops: Iterable[Op], *, indexed: bool, mode: SearchMode) -> _Plan:
    """LangGraph ops as one remem batch: the reads first (they see the store as it was), then
    the writes in order (the last put of a key wins)."""
    plan = _Plan()
    writes: list[remem.Op] = []
    for op in ops:
        if isinstance(op, GetOp):
            plan.answers.append(("get", len(plan.ops), None))
            plan.ops.append(remem.GetOp(tuple(op.namespace), str(op.key), op.refresh_ttl))
        elif isinstance(op, SearchOp):
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
                tuple(op.namespace_prefix), filter=translate_filter(op.filter), query=query,
                limit=op.limit, offset=op.offset, refresh_ttl=op.refresh_ttl,
                mode=search_mode))
        elif isinstance(op, ListNamespacesOp):
            if op.limit <= 0:
                plan.answers.append(("empty", None, None))
                continue
            prefix, suffix, rest = _namespace_match(op.match_conditions)
            if rest:  # more conditions than remem's one prefix and one suffix: filter here
                plan.answers.append(("namespaces", len(plan.ops), (rest, op)))
                plan.ops.append(remem.ListNamespacesOp(prefix, suffix, None, limit=1_000_000))
            else:
                plan.answers.append(("namespaces", len(plan.ops), None))
                plan.ops.append(remem.ListNamespacesOp(prefix, suffix, op.max_depth,
                                                       limit=op.limit, offset=op.offset))
        elif isinstance(op, PutOp):
            plan.answers.append(("put", None, None))
            if op.value is None:
                writes.append(remem.DeleteOp(tuple(op.namespace), str(op.key)))
            else:
                index = op.index if op.index is None or op.index is False else [
                    _field_path(path) for path in op.index]
                writes.append(remem.PutOp(tuple(op.namespace), str(op.key), op.value,
                                          ttl=_ttl(op.ttl), index=index))
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
            namespaces = [tuple(ns) for ns in found if isinstance(ns, tuple)]
            if extra is not None:
                rest, op = extra
                namespaces = [ns for ns in namespaces
                              if all(_matches(condition, ns) for condition in rest)]
                if op.max_depth is not None:
                    namespaces = sorted({ns[:op.max_depth] for ns in namespaces})
                namespaces = namespaces[op.offset:op.offset + op.limit]
            out.append(namespaces)
        elif kind == "empty":
            out.append([])
        else:
            out.append(None)
    return out


class RememStore(BaseStore):
    """LangGraph's store API over a remem store.

    ``RememStore(store)`` wraps a store you opened (its index and keyword config apply);
    :meth:`open` opens one by location (a SQLite path, ``":memory:"``, ``"memory://"`` or a
    ``postgresql://`` DSN) with LangGraph's ``index`` config (``dims``, ``embed``,
    ``fields``). ``ttl``: LangGraph's TTL config (``default_ttl`` in minutes,
    ``refresh_on_read``). ``mode``: how queries are searched (see :data:`SearchMode`).
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
        self.ttl_config = ttl
        self.mode: SearchMode = mode
        self._owns_store = owns_store

    @classmethod
    def open(cls, location: str = ":memory:", *, index: IndexConfig | None = None,
             ttl: TTLConfig | None = None, mode: SearchMode = "langgraph",
             **options: Any) -> RememStore:
        """Open (creating if needed) a remem store at ``location`` for LangGraph. Other
        options go to :func:`remem.store.open_store`."""
        store = open_store(location, index=remem_index(index) if index else None, **options)
        return cls(store, ttl=ttl, mode=mode, owns_store=True)

    @property
    def index_config(self) -> RememIndexConfig | None:
        """The remem store's vector index (``None``: no semantic search)."""
        return self.store.index

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph ops as one remem batch."""
        plan = plan_batch(ops, indexed=self.store.index is not None, mode=self.mode)
        return results_of(plan, self.store.batch(plan.ops) if plan.ops else [])

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch`."""
        plan = plan_batch(ops, indexed=self.store.index is not None, mode=self.mode)
        return results_of(plan, await self.store.abatch(plan.ops) if plan.ops else [])

    def close(self) -> None:
        """Close the remem store if :meth:`open` opened it."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> RememStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
