"""A store seen through a namespace prefix: the tenancy seam of the server.

:class:`ScopedStore` wraps any :class:`~remem.store.BaseStore`. Every operation it executes is
rewritten so its namespace lies under a fixed ``prefix`` (``("tenants", "acme")`` say), and
every result has that prefix stripped again. Because store operations are values and every
layer above the store (the store routes, the :class:`~remem.api.Memory` facade, its locks and
history) reaches storage only through ``batch``, wrapping the store once makes all of them
confined to the prefix by construction: no namespace a caller can write names anything
outside it, and nothing outside it is ever returned. An item written at the bare prefix
itself (only possible around the scoped store, e.g. by raw access to the inner store) is not
shown either; it may still take a slot of an inner search's page, and a count of the whole
scope counts it, so do not write there.

>>> from remem.store import open_store
>>> base = open_store(":memory:")
>>> acme = ScopedStore(base, ("tenants", "acme"))
>>> acme.put(("notes",), "n1", {"text": "hi"})
>>> base.get(("tenants", "acme", "notes"), "n1").value
{'text': 'hi'}
>>> acme.list_namespaces()
[('notes',)]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

from remem.store.base import BaseStore, ViewStore, check_ops, match_namespaces
from remem.store.types import (
    MAX_DEPTH,
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

__all__ = ["ScopedStore"]

_O = TypeVar("_O", GetOp, PutOp, DeleteOp, SearchOp, CountOp)
_I = TypeVar("_I", bound=Item)


def _with(op: _O, name: str, namespace: Namespace) -> _O:
    """A copy of a validated op with another namespace, without validating it all again
    (``dataclasses.replace`` would re-run ``__post_init__``: a JSON round trip per put)."""
    new = object.__new__(type(op))
    for slot in type(op).__slots__:
        object.__setattr__(new, slot, getattr(op, slot))
    object.__setattr__(new, name, namespace)
    return new

#: list_namespaces with a suffix is answered from every namespace under the prefix
_ALL = 2**31


class ScopedStore(ViewStore):
    """``inner`` confined to the namespaces under ``prefix``; see the module docstring.

    The wrapper shares the inner store's index, keyword and TTL configuration (embedding
    happens once, in the inner store's ``batch``). ``close()`` does not close the inner store:
    many scoped views usually share one store, and its owner closes it.
    """

    def __init__(self, inner: BaseStore, prefix: Sequence[str]) -> None:
        super().__init__(inner)
        self.prefix: Namespace = validate_namespace(tuple(prefix), what="prefix")

    # -- rewriting --------------------------------------------------------------------------

    def _inside(self, namespace: Namespace, *, wildcard: bool = False) -> Namespace:
        # the labels were validated when the op was built, the prefix in __init__: only the
        # depth limit can still be broken by joining them
        joined = self.prefix + namespace
        if len(joined) > MAX_DEPTH:
            return validate_namespace(joined, allow_wildcard=wildcard)  # raises, naming it
        return joined

    def _strip(self, namespace: Namespace) -> Namespace:
        n = len(self.prefix)
        if namespace[:n] != self.prefix:  # a backend bug; never hand out another scope's data
            raise AssertionError(f"store returned a namespace outside the scope {self.prefix}")
        return namespace[n:]

    def _rewrite(self, op: Op) -> Op:
        if isinstance(op, GetOp):
            return _with(op, "namespace", self._inside(op.namespace))
        if isinstance(op, PutOp):
            return _with(op, "namespace", self._inside(op.namespace))
        if isinstance(op, DeleteOp):
            return _with(op, "namespace", self._inside(op.namespace))
        if isinstance(op, SearchOp):
            return _with(op, "namespace_prefix", self._inside(op.namespace_prefix))
        if isinstance(op, CountOp):
            return _with(op, "namespace_prefix", self._inside(op.namespace_prefix))
        prefix = self._inside(op.prefix or (), wildcard=True)
        if op.suffix is not None:
            # a suffix could otherwise match labels of the scope prefix itself: fetch every
            # namespace under the prefix and match the stripped ones here
            return ListNamespacesOp(prefix, op.suffix, None, _ALL, 0)
        depth = None if op.max_depth is None else op.max_depth + len(self.prefix)
        return ListNamespacesOp(prefix, None, depth, op.limit, op.offset)

    def _unwrap(self, op: Op, result: Result) -> Result:
        if isinstance(result, Item):
            return self._strip_item(result)
        if isinstance(op, SearchOp):
            assert isinstance(result, list)
            # an item at the bare prefix (written around the scope) is not the scope's: a
            # scoped store can only write below the prefix, so never show one
            return [self._strip_item(r) for r in result
                    if isinstance(r, SearchItem) and len(r.namespace) > len(self.prefix)]
        if isinstance(op, ListNamespacesOp):
            assert isinstance(result, list)
            stripped = [self._strip(ns) for ns in result]  # type: ignore[arg-type]
            if op.suffix is not None:
                return match_namespaces([ns for ns in stripped if ns], op)
            return [ns for ns in stripped if ns]
        return result

    def _strip_item(self, item: _I) -> _I:
        return dataclasses.replace(item, namespace=self._strip(item.namespace))

    # -- the store protocol -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` on the inner store with every namespace under the prefix."""
        op_list = check_ops(ops)
        results = self.inner.batch([self._rewrite(op) for op in op_list])
        return [self._unwrap(op, r) for op, r in zip(op_list, results, strict=True)]

    def iter_items(self, namespace_prefix: Sequence[str] = ()) -> Iterator[Item]:
        """Every live item under ``namespace_prefix`` inside the scope."""
        inside = self._inside(validate_namespace(tuple(namespace_prefix), allow_empty=True,
                                                 what="namespace_prefix"))
        for item in self.inner.iter_items(inside):
            if len(item.namespace) > len(self.prefix):
                yield self._strip_item(item)

    def _ttl_of(self, namespace: Namespace, key: str) -> float | None:
        return self.inner.ttl_of(self._inside(namespace), key)

    def _holds_vectors(self) -> bool:
        return self.inner._holds_vectors()

    def _vector_models(self) -> list[str]:
        return self.inner._vector_models()

