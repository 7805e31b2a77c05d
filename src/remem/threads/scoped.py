"""Threads seen by one tenant: the tenancy seam of the server's ``/v1/threads``.

:class:`ScopedThreads` is a view of a :class:`~remem.threads.store.ThreadStore`: same
database, same code, but it reads and writes only the threads of one tenant, as
:class:`~remem.store.scoped.ScopedStore` does for items. Thread ids are not namespaced in the
database, so the view keeps the tenant in three places, all inside the threads layer:

- **ids**: the tenant's thread ``t1`` is stored as ``<tenant>/t1`` (tenant names never
  contain ``/``). Every request's ids are mapped on the way in and every result's on the way
  out, and error messages are written with the tenant's own ids, so nothing a tenant sends
  names another tenant's thread and nothing it gets back shows the prefix.
- **listing**: listings and sweeps select stored ids in the tenant's range
  (``<tenant>/`` up to ``<tenant>0`` in byte order), whatever filter the caller adds.
- **metadata**: each thread's metadata carries the tenant under :data:`TENANT_KEY` (kept for
  databases written by older servers, which listed threads by it); callers never see it,
  and metadata keys starting with ``_remem`` are refused as reserved.

A checkpoint id of another tenant's thread is "not a checkpoint of this thread", exactly as
an unknown one. Search runs on the view's own :class:`~remem.threads.search.ThreadIndex`
(give it one over the tenant's scoped store), and its hits are checked against the view.

>>> from remem.threads import ThreadStore
>>> store = ThreadStore.open()
>>> acme, beta = ScopedThreads(store, "acme"), ScopedThreads(store, "beta")
>>> _ = acme.create("t1", messages="hello")
>>> beta.exists("t1"), [t.thread_id for t in acme.list_threads()]
(False, ['t1'])
>>> store.get("acme/t1").metadata
{'_remem_tenant': 'acme'}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from remem.errors import InvalidInputError, StoreError, UsageError
from remem.threads.store import ThreadStore
from remem.threads.types import Checkpoint, ThreadInfo

if TYPE_CHECKING:
    from remem.llm.base import ChatModel
    from remem.threads.search import ThreadIndex
    from remem.threads.summary import SummaryPolicy

__all__ = ["RESERVED_PREFIX", "TENANT_KEY", "ScopedThreads"]

#: the metadata key naming a thread's tenant (never shown to the tenant)
TENANT_KEY = "_remem_tenant"
#: metadata keys the view keeps for itself
RESERVED_PREFIX = "_remem"


class ScopedThreads(ThreadStore):
    """``inner``'s threads of ``tenant`` only; see the module docstring.

    ``index``: the tenant's :class:`~remem.threads.search.ThreadIndex` (``None``: no search).
    ``summarizer``/``policy``: the chat model and policy of :meth:`compact` (and of
    auto-compaction when both are set); by default the inner store's. The view shares the
    inner store's connections: :meth:`close` leaves them open for the inner store's owner.
    """

    def __init__(self, inner: ThreadStore, tenant: str, *, index: ThreadIndex | None = None,
                 summarizer: ChatModel | None = None,
                 policy: SummaryPolicy | None = None) -> None:
        # no ThreadStore.__init__: the view opens nothing, it borrows the inner store's parts
        if not isinstance(tenant, str) or not tenant or "/" in tenant:
            raise InvalidInputError(f"tenant must be a non-empty name without '/', got "
                                    f"{tenant!r}")
        if isinstance(inner, ScopedThreads):
            raise UsageError("ScopedThreads wraps a ThreadStore, not another view")
        self.inner = inner
        self.tenant = tenant
        self.path = inner.path
        self.db = inner.db
        self.default_ttl = inner.default_ttl
        self.summarizer = summarizer if summarizer is not None else inner.summarizer
        self.policy = policy if policy is not None else inner.policy
        self.index = index
        self.clock = inner.clock
        self._bases = inner._bases  # branch ids are global to the database
        self._prefix = f"{tenant}/"

    def __repr__(self) -> str:
        return f"ScopedThreads({self.path!r}, tenant={self.tenant!r})"

    def close(self) -> None:
        """Nothing to close: the inner store's owner closes the connections."""

    # -- the tenant's id space --------------------------------------------------------------

    def _key(self, thread_id: str) -> str:
        return self._prefix + thread_id

    def _shown(self, key: str) -> str:
        if not key.startswith(self._prefix):
            # requests only reach the tenant's range: a key outside it is a bug, never shown
            raise StoreError(f"thread store returned a thread outside tenant "
                             f"{self.tenant!r}; refusing to show it")
        return key[len(self._prefix):]

    def _scope(self) -> tuple[str, tuple[Any, ...]]:
        # "0" is the character after "/": in byte order the range holds exactly the ids with
        # the prefix. SQLite compares bytes; PostgreSQL's default collation may not (a
        # linguistic one can skip punctuation), so it is told to.
        column = 't.id COLLATE "C"' if self.db.dialect.name == "postgres" else "t.id"
        return f"{column} >= ? AND {column} < ?", (self._prefix, f"{self.tenant}0")

    def _metadata_in(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        for key in metadata:
            if key.startswith(RESERVED_PREFIX):
                raise InvalidInputError(
                    f"metadata key {key!r}: keys starting with {RESERVED_PREFIX!r} are "
                    "reserved by the server; rename it")
        return {**metadata, TENANT_KEY: self.tenant}

    def _metadata_out(self, metadata: Mapping[str, Any]) -> Mapping[str, Any]:
        return {k: v for k, v in metadata.items() if k != TENANT_KEY}

    def _info_out(self, info: ThreadInfo) -> ThreadInfo:
        return dataclasses.replace(info, thread_id=self._shown(info.thread_id),
                                   metadata=self._metadata_out(info.metadata),
                                   head=self._checkpoint_out(info.head))

    def _checkpoint_out(self, checkpoint: Checkpoint) -> Checkpoint:
        meta = checkpoint.metadata
        source = meta.get("from_thread")
        if isinstance(source, str):  # a fork or copy names the thread it came from
            meta = {**meta, "from_thread": self._shown(source)}
        return dataclasses.replace(checkpoint, thread_id=self._shown(checkpoint.thread_id),
                                   metadata=meta)
