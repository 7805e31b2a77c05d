"""Reserved roots: the top-level namespace labels whose records belong to one family of remem.

Every family keeps its records in the one store, each under a top-level label of its own
(a tenant's view of the server's store puts them under the tenant's prefix first). A family's
API is where its rules live (file permissions and approvals, read-only blocks, history,
checked records), so a raw store surface that could write under a family's label would walk
around them. This module is the one registry of those labels: which family owns each, which
API to use instead, and whether a policy governs reads of it. Families take their root labels
from here (``FILES``, ``MEMORIES``...), and :class:`~remem.store.guarded.GuardedStore`, the
view every raw store surface uses, checks each operation against it in one place.

The store is the lowest layer, so this module imports nothing of the families: they import
it. ``tests/store/test_reserved_roots.py`` exercises every family through its own API on one store
and fails if a top-level label appears that is not registered here.

>>> root_of(("files", "default", "files", "/notes"))[0].family
'files'
>>> root_of(("users", "u1")) is None
True
>>> root_of(("tenants", "acme", "memories", "user", "u1"), whole_store=True)[0].label
'memories'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = [
    "APPROVALS",
    "BLOCKS",
    "BOOKKEEPING",
    "EPISODES",
    "FILES",
    "GOVERNED",
    "GRAPH",
    "MEMORIES",
    "PROMPTS",
    "ROOTS",
    "SCOPE_ROOTS",
    "SERVER",
    "TENANTS",
    "THREADS",
    "ReservedRoot",
    "is_bookkeeping",
    "root_of",
]

#: memory records (``Memory`` and the ``/v1/memories`` routes)
MEMORIES: Final = "memories"
#: remem's bookkeeping of memories and locks: ids, history, locks, heads, gates
BOOKKEEPING: Final = "_remem"
#: the file trees agents see (``("files", tree)``)
FILES: Final = "files"
#: file operations parked for a human (``("approvals", tree)``)
APPROVALS: Final = "approvals"
#: core memory blocks, kept as files
BLOCKS: Final = "blocks"
#: versioned prompts
PROMPTS: Final = "prompts"
#: episodes for few-shot examples
EPISODES: Final = "episodes"
#: the temporal graph (rows in its own tables, namespaced under this label)
GRAPH: Final = "graph"
#: the thread search index (threads themselves are rows of their own tables)
THREADS: Final = "threads"
#: the server's own items at the top of its store: API keys, the inspector's secret
SERVER: Final = "_remem_server"
#: the server's store keeps each tenant's scope under ``("tenants", <tenant>)``
TENANTS: Final = "tenants"


@dataclass(frozen=True, slots=True)
class ReservedRoot:
    """One reserved top-level label.

    ``family`` owns it and ``holds`` says what; ``route`` and ``command`` are the HTTP API and
    CLI command to use instead of the raw store. ``governed_reads``: a policy (the server's
    file permissions; for the server's own items, being the operator) decides who reads these
    records, so the raw store shows them to admins only. ``bookkeeping``: remem's own
    records, left out of plain namespace listings. ``server_only``: the label is reserved at
    the top of a server's whole store only, not inside a tenant's scope."""

    label: str
    family: str
    holds: str
    route: str
    command: str
    governed_reads: bool = False
    bookkeeping: bool = False
    server_only: bool = False

    @property
    def use(self) -> str:
        """The API to use instead, as one phrase."""
        return f"{self.route} (CLI: {self.command})"


def _table(*roots: ReservedRoot) -> Mapping[str, ReservedRoot]:
    return MappingProxyType({root.label: root for root in roots})


#: every reserved top-level label -> its entry
ROOTS: Final[Mapping[str, ReservedRoot]] = _table(
    ReservedRoot(MEMORIES, "memories", "memory records",
                 "/v1/memories (add, update, delete, import)",
                 "remem add / update / delete / import"),
    ReservedRoot(BOOKKEEPING, "memories", "memory ids, history, locks, heads and gates",
                 "/v1/memories/{id}/history and /v1/events/{id}/undo",
                 "remem history / undo", bookkeeping=True),
    ReservedRoot(FILES, "files", "file records and their history",
                 "/v1/files (read, write, edit, ls, glob, grep, undo)", "remem files",
                 governed_reads=True),
    ReservedRoot(APPROVALS, "approvals", "file operations waiting for a human",
                 "/v1/approvals (list, approve, reject)", "remem approvals",
                 governed_reads=True),
    ReservedRoot(BLOCKS, "blocks", "core memory blocks and the agents they are attached to",
                 "/v1/blocks and /v1/agents/{id}/blocks", "remem blocks"),
    ReservedRoot(PROMPTS, "prompts", "prompt versions and heads", "/v1/prompts",
                 "remem prompts"),
    ReservedRoot(EPISODES, "episodes", "episodes", "/v1/episodes", "remem episodes"),
    ReservedRoot(GRAPH, "graph", "temporal graphs (rows of their own tables)", "/v1/graph",
                 "remem graph"),
    ReservedRoot(THREADS, "threads", "the thread search index", "/v1/threads",
                 "remem threads"),
    ReservedRoot(SERVER, "server", "API keys and the inspector's signing secret",
                 "no HTTP route", "remem keys", governed_reads=True, bookkeeping=True,
                 server_only=True),
    ReservedRoot(TENANTS, "server", "the tenants' scopes themselves",
                 "/v1/store with the tenant's own key",
                 "remem store put tenants.<tenant>.<label> ...",
                 server_only=True),
)

#: the labels reserved at the top of every family scope (a tenant's view, a local store)
SCOPE_ROOTS: Final[frozenset[str]] = frozenset(
    label for label, root in ROOTS.items() if not root.server_only)
#: the labels of a family scope whose reads a policy governs
GOVERNED: Final[frozenset[str]] = frozenset(
    label for label, root in ROOTS.items() if root.governed_reads and not root.server_only)


def root_of(namespace: Sequence[str], *, whole_store: bool = False
            ) -> tuple[ReservedRoot, str | None] | None:
    """The reserved root ``namespace`` lies under, with the tenant whose scope holds it
    (``None``: not inside a tenant), or ``None`` if it is not reserved.

    Without ``whole_store`` the namespace is read as a family scope sees it (a tenant's view,
    or a store the families use directly). With it, as the server's whole store: the server's
    own labels are reserved too, and inside ``("tenants", T)`` the scope's labels are checked
    after the prefix; the bare prefix itself belongs to the server."""
    if not namespace:
        return None
    head = namespace[0]
    if whole_store and head == TENANTS:
        if len(namespace) < 3:
            return ROOTS[TENANTS], (namespace[1] if len(namespace) > 1 else None)
        inner = root_of(namespace[2:])
        return None if inner is None else (inner[0], namespace[1])
    root = ROOTS.get(head)
    if root is None or (root.server_only and not whole_store):
        return None
    return root, None


def is_bookkeeping(namespace: Sequence[str], *, whole_store: bool = False) -> bool:
    """Whether ``namespace`` holds remem's own bookkeeping (left out of plain listings)."""
    found = root_of(namespace, whole_store=whole_store)
    return found is not None and found[0].bookkeeping
