"""The raw store as a client may use it: family roots refused, in one place.

:class:`GuardedStore` wraps a store (a tenant's :class:`~remem.store.scoped.ScopedStore` on
the server; the whole store for ``remem store`` and a keyless server's local tenant, where the
server's own labels and each ``("tenants", T)`` scope are checked too) and checks every
operation of every batch against the registry of reserved roots (:mod:`remem.store.reserved`)
before any I/O. Every raw store surface (``/v1/store``, the MCP ``list_namespaces`` tool,
``remem store``) reaches the store only through it, so a rule a family enforces in its own API
cannot be walked around there:

* a put or delete under a reserved root raises
  :class:`~remem.errors.ReservedNamespaceError` naming the family and the API to use, for
  every caller (admins included: a family's records are written through its API only);
* a read (get, search, count, namespace listing) under a root whose reads a policy governs
  (files, approvals; in a whole store also the server's keys and secrets) raises it too,
  unless the view is an admin's (``admin=True``), who may read them for repair;
* a read spanning governed roots without naming one (an empty prefix, a listing whose prefix
  starts with ``*``; in a whole store also ``("tenants",)`` and ``("tenants", T)``) never
  returns governed records to a non-admin: a count subtracts theirs exactly, in the same
  batch (a whole store lists its tenants first); a listing pages past them exactly; a
  newest-first search of a scope runs as one search per readable top-level label (at most
  :data:`SPLIT_LABELS` of them) merged in the backends' order, exactly; a ranked search (or
  one over more labels, or a whole store) reads a wider window from offset 0 and drops
  them, reading past at most :data:`HIDDEN_WINDOW` of them for one page, so its page can
  come back short when more of them rank first (search under a prefix then).

Checks happen before the batch runs, so a refused batch writes nothing. A batch without a
spanning read is passed on whole; one with such reads runs as one batch of the inner store
(its reads still see its writes), plus follow-up reads when a search or listing must look
further.

>>> from remem.store import open_store
>>> from remem.errors import ReservedNamespaceError
>>> raw = GuardedStore(open_store(":memory:"))
>>> raw.put(("notes",), "n1", {"text": "hi"})
>>> try:
...     raw.put(("files", "default", "files", "/memories"), "a.md", {"content": "x"})
... except ReservedNamespaceError as refused:
...     print(refused.family, "->", refused.use)
files -> /v1/files (read, write, edit, ls, glob, grep, undo) (CLI: remem files)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from remem.errors import ReservedNamespaceError
from remem.store.base import BaseStore, ViewStore, check_ops, literal_prefix
from remem.store.reserved import GOVERNED, ROOTS, TENANTS, ReservedRoot, root_of
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
    validate_namespace,
)

__all__ = ["HIDDEN_WINDOW", "SPLIT_LABELS", "GuardedStore"]

#: most records of governed roots a spanning search reads past to fill one page
HIDDEN_WINDOW: Final = 10_000
#: most top-level labels a newest-first search over every label is split into
SPLIT_LABELS: Final = 64
#: namespaces fetched per page when a spanning listing pages past governed ones
_LIST_PAGE: Final = 500


def _write_refused(namespace: Namespace, root: ReservedRoot,
                   tenant: str | None) -> ReservedNamespaceError:
    scope = f" of tenant {tenant!r}" if tenant is not None and root.label != TENANTS else ""
    return ReservedNamespaceError(
        f"namespace {list(namespace)!r} is under {root.label!r}{scope}, where the "
        f"{root.family} family keeps {root.holds}: the raw store never writes there, since "
        f"that would go around the family's rules; use {root.use}",
        root=root.label, family=root.family, use=root.use)


def _read_refused(namespace: Namespace, root: ReservedRoot) -> ReservedNamespaceError:
    return ReservedNamespaceError(
        f"namespace {list(namespace)!r} is under {root.label!r}, where the {root.family} "
        f"family keeps {root.holds}, and a policy governs who reads them: the raw store "
        f"shows them to admin keys only (for repair); read them with {root.use}",
        root=root.label, family=root.family, use=root.use)


def _newest(op: SearchOp, pages: Sequence[Result]) -> list[SearchItem]:
    """``op``'s page from the first offset + limit items of each label, newest first, ties
    by namespace then key (the order of a search without a query on every backend)."""
    merged = [item for page in pages if isinstance(page, list) for item in page
              if isinstance(item, SearchItem)]
    merged.sort(key=lambda item: (item.namespace, item.key))
    merged.sort(key=lambda item: item.updated_at, reverse=True)  # stable: ties keep order
    return merged[op.offset:op.offset + op.limit]


def _read_at(op: Op) -> Namespace:
    """The namespace (or literal prefix) a read op is confined to (``()``: every root)."""
    if isinstance(op, GetOp):
        return op.namespace
    if isinstance(op, SearchOp | CountOp):
        return op.namespace_prefix
    assert isinstance(op, ListNamespacesOp)
    return literal_prefix(op.prefix)


class GuardedStore(ViewStore):
    """``inner`` as a raw store surface may use it; see the module docstring.

    ``admin``: the caller may read governed roots (an admin key, or the operator at the
    command line). ``whole_store``: ``inner`` is a server's whole store, not one scope, so
    the server's own labels are reserved too (its keys and secrets governed) and each
    ``("tenants", T)`` scope is checked inside. ``hidden_window``: how many governed records
    a search over every root reads past for one page. ``close()`` does not close ``inner``;
    its owner does.
    """

    def __init__(self, inner: BaseStore, *, admin: bool = False, whole_store: bool = False,
                 hidden_window: int = HIDDEN_WINDOW) -> None:
        super().__init__(inner)
        self.admin = admin
        self.whole_store = whole_store
        self.hidden_window = hidden_window

    # -- the one check ------------------------------------------------------------------------

    def check(self, op: Op) -> None:
        """Raise :class:`ReservedNamespaceError` if ``op`` may not run through this view."""
        if isinstance(op, PutOp | DeleteOp):
            found = root_of(op.namespace, whole_store=self.whole_store)
            if found is not None:
                raise _write_refused(op.namespace, *found)
            return
        self._check_read(_read_at(op))

    def _check_read(self, namespace: Namespace) -> None:
        if self.admin or not namespace:
            return
        found = root_of(namespace, whole_store=self.whole_store)
        if found is not None and found[0].governed_reads:
            raise _read_refused(namespace, found[0])

    def _shown(self, namespace: Namespace) -> bool:
        """Whether a non-admin may see a record (or namespace) at ``namespace``."""
        found = root_of(namespace, whole_store=self.whole_store)
        return found is None or not found[0].governed_reads

    def _spans(self, op: Op) -> bool:
        """Whether a non-admin's read ``op`` reaches over governed roots without naming one:
        an empty prefix (in a whole store also ``("tenants",)`` or ``("tenants", T)``)."""
        if not isinstance(op, SearchOp | CountOp | ListNamespacesOp):
            return False
        at = _read_at(op)
        return not at or (self.whole_store and at[0] == TENANTS and len(at) <= 2)

    def _hidden_under(self, prefix: Namespace) -> list[Namespace]:
        """The governed prefixes under a spanning ``prefix`` (disjoint, so their counts
        add up): the governed roots, and in a whole store its own governed labels and each
        tenant's governed roots (the tenants are listed first, outside the batch)."""
        governed = sorted(GOVERNED)
        if not self.whole_store:
            return [(label,) for label in governed]
        if len(prefix) == 2:
            return [(*prefix, label) for label in governed]
        tenants: list[Namespace] = []
        while True:
            page = self.inner.list_namespaces(prefix=(TENANTS,), max_depth=2,
                                              limit=_LIST_PAGE, offset=len(tenants))
            tenants.extend(page)
            if len(page) < _LIST_PAGE:
                break
        inside: list[Namespace] = [(*tenant, label) for tenant in tenants
                                   if len(tenant) == 2 for label in governed]
        if prefix:  # ("tenants",)
            return inside
        top = sorted(label for label, root in ROOTS.items() if root.governed_reads)
        return [*((label,) for label in top), *inside]

    # -- the store protocol -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Check every op, then run them on the inner store (see the module docstring)."""
        op_list = check_ops(ops)
        for op in op_list:
            self.check(op)
        if self.admin or not any(self._spans(op) for op in op_list):
            return self.inner.batch(op_list)
        return self._spanning(op_list)

    def _splits(self, op: Op) -> bool:
        """Whether ``op`` is a newest-first search over every label of a scope, which can
        be run as one search per visible label and merged, exactly."""
        return (isinstance(op, SearchOp) and op.query is None and not self.whole_store
                and self._spans(op))

    def _visible_labels(self, op_list: list[Op]) -> list[str] | None:
        """The scope's top-level labels a non-admin may read (with those the batch's own
        puts add), or ``None`` when there are more than :data:`SPLIT_LABELS`."""
        most = SPLIT_LABELS + len(GOVERNED)
        listed = self.inner.list_namespaces(max_depth=1, limit=most + 1)
        if len(listed) > most:
            return None
        labels = {ns[0] for ns in listed} | {op.namespace[0] for op in op_list
                                             if isinstance(op, PutOp)}
        return sorted(label for label in labels if label not in GOVERNED)

    def _spanning(self, op_list: list[Op]) -> list[Result]:
        """Run a batch holding reads over every root for a non-admin: each such read is
        widened (counts of the governed roots beside a count, one search per visible label
        for a newest-first search, a wider window for a ranked search or a listing) in the
        one inner batch, then trimmed of governed records."""
        labels = (self._visible_labels(op_list) if any(self._splits(op) for op in op_list)
                  else None)
        sent: list[Op] = []
        spans: list[tuple[int, int]] = []
        for op in op_list:
            start = len(sent)
            if not self._spans(op):
                sent.append(op)
            elif isinstance(op, CountOp):
                sent.append(op)
                sent.extend(dataclasses.replace(op, namespace_prefix=hidden)
                            for hidden in self._hidden_under(op.namespace_prefix))
            elif labels is not None and self._splits(op):
                assert isinstance(op, SearchOp)
                sent.extend(dataclasses.replace(op, namespace_prefix=(label,), offset=0,
                                                limit=op.offset + op.limit)
                            for label in labels)
            elif isinstance(op, SearchOp):
                sent.append(dataclasses.replace(op, limit=op.offset + op.limit, offset=0))
            else:
                assert isinstance(op, ListNamespacesOp)
                sent.append(dataclasses.replace(
                    op, limit=max(op.offset + op.limit, _LIST_PAGE), offset=0))
            spans.append((start, len(sent)))
        results = self.inner.batch(sent)
        out: list[Result] = []
        for op, (start, end) in zip(op_list, spans, strict=True):
            if start == end:  # a split search over a scope with no readable label
                out.append([])
                continue
            first = results[start]
            if not self._spans(op):
                out.append(first)
            elif isinstance(op, CountOp):
                hidden = [n for n in results[start + 1:end] if isinstance(n, int)]
                assert isinstance(first, int) and len(hidden) == end - start - 1
                out.append(first - sum(hidden))
            elif labels is not None and self._splits(op):
                assert isinstance(op, SearchOp)
                out.append(_newest(op, results[start:end]))
            elif isinstance(op, SearchOp):
                out.append(self._search_on(op, first))  # type: ignore[arg-type]
            else:
                assert isinstance(op, ListNamespacesOp)
                out.append(self._list_on(op, first))  # type: ignore[arg-type]
        return out

    def _search_on(self, op: SearchOp, found: list[SearchItem]) -> list[SearchItem]:
        """The page ``op`` asks for, from ``found`` (its results from offset 0 with a
        window of offset + limit), read again with wider windows while governed records
        fill it, up to ``hidden_window`` of them."""
        wanted = op.offset + op.limit
        window, most = wanted, wanted + self.hidden_window
        while True:
            shown = [item for item in found if self._shown(item.namespace)]
            if len(shown) >= wanted or len(found) < window or window >= most:
                return shown[op.offset:wanted]
            hidden = len(found) - len(shown)
            window = min(max(window * 4, wanted + 2 * hidden), most)
            again = self.inner.batch([dataclasses.replace(op, limit=window, offset=0)])[0]
            assert isinstance(again, list)
            found = again  # type: ignore[assignment]

    def _list_on(self, op: ListNamespacesOp, found: list[Namespace]) -> list[Namespace]:
        """The page ``op`` asks for, paging through the sorted listing past governed
        namespaces (exact: a listing is sorted, so pages never overlap)."""
        wanted = op.offset + op.limit
        page = max(wanted, _LIST_PAGE)
        shown = [ns for ns in found if self._shown(ns)]
        start = 0
        while len(shown) < wanted and len(found) == page:
            start += page
            more = self.inner.batch([dataclasses.replace(op, limit=page, offset=start)])[0]
            assert isinstance(more, list)
            found = more  # type: ignore[assignment]
            shown.extend(ns for ns in found if self._shown(ns))
        return shown[op.offset:wanted]

    def reindex(self, namespace_prefix: Sequence[str] = (), *, batch_size: int = 500,
                progress: Callable[[int], None] | None = None) -> int:
        """Reindex the inner store's items under the prefix: maintenance that writes every
        value back unchanged, so reserved roots are reindexed too (a governed prefix is
        refused to a non-admin, as a read of it is)."""
        prefix = validate_namespace(tuple(namespace_prefix), allow_empty=True,
                                    what="namespace_prefix")
        self._check_read(prefix)
        return self.inner.reindex(prefix, batch_size=batch_size, progress=progress)

    def iter_items(self, namespace_prefix: Sequence[str] = ()) -> Iterator[Item]:
        """Every live item under ``namespace_prefix`` this view may read."""
        prefix = validate_namespace(tuple(namespace_prefix), allow_empty=True,
                                    what="namespace_prefix")
        self._check_read(prefix)
        for item in self.inner.iter_items(prefix):
            if self.admin or self._shown(item.namespace):
                yield item

    def _ttl_of(self, namespace: Namespace, key: str) -> float | None:
        self._check_read(namespace)
        return self.inner.ttl_of(namespace, key)

    def _holds_vectors(self) -> bool:
        return self.inner._holds_vectors()

    def _vector_models(self) -> list[str]:
        return self.inner._vector_models()
