"""Vector partitions held in process on demand: one :class:`~remem.store.vectors.VectorIndex`
per searched namespace prefix, least recently used first out, within a budget in bytes.

SQLite keeps its vectors as rows; a search scoped to a prefix (one tenant, one user) reads
that prefix's vectors once, by the namespace range of the items table, and then searches them
in memory: its cost follows the prefix, not the file. A scope too large for the budget (every
item of a million-item file) is never held: :func:`stream_ranked` scores it chunk by chunk as
rows arrive and keeps only ``(item id, score)`` pairs (12 bytes an item), so it stays exact and
the process's memory stays bounded, at the price of reading every vector of the scope from
the file on each such search.

Partitions are brought up to date with the table the way the whole matrix used to be: by the
database's ``vector_seq``, new rows applied to each resident partition whose prefix holds
their namespace and tombstones removed from all. Pure bookkeeping, no I/O: the SQLite store
reads the rows.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from remem.store.types import Namespace
from remem.store.vectors import VectorIndex, _dot_rows, ranked_rows

__all__ = ["DEFAULT_VECTOR_CACHE_BYTES", "VectorPartitions", "partition_for", "stream_ranked"]

#: the default budget of resident vector partitions per store (1 GiB: 690k 384-d vectors).
#: A scope past it is streamed from the file on every search (seconds at a million vectors),
#: so the default keeps any scope the old whole-matrix store held in memory at its old speed
#: (a 300k-item file searched whole); smaller budgets trade that for memory
DEFAULT_VECTOR_CACHE_BYTES = 2**30

#: one row as read from the table: (vector id, item id, namespace, float32 vector)
VectorRow = tuple[int, int, Namespace, npt.NDArray[np.float32]]


def partition_for(dims: int, rows: int) -> VectorIndex:
    """An empty index sized for about ``rows`` vectors: blocks of the next power of two (at
    least 64 rows, at most the default 8192), so a 200-item tenant holds 300 kB, not a 12 MB
    block."""
    block = 64
    while block < rows and block < 8192:
        block *= 2
    index = VectorIndex(dims, block=block)
    index.reserve(rows)
    return index


class VectorPartitions:
    """Resident partitions keyed by namespace prefix, evicted least recently used first so
    their arrays stay within ``budget`` bytes. ``seq`` is the table's ``vector_seq`` they
    reflect (-1: nothing read). Not thread-safe: the store holds its lock around every use."""

    def __init__(self, budget: int = DEFAULT_VECTOR_CACHE_BYTES) -> None:
        self.budget = budget
        self.seq = -1
        self._parts: OrderedDict[Namespace, VectorIndex] = OrderedDict()

    def __len__(self) -> int:
        return len(self._parts)

    def nbytes(self) -> int:
        """Bytes held by every resident partition."""
        return sum(part.nbytes() for part in self._parts.values())

    def get(self, prefix: Namespace) -> VectorIndex | None:
        """The partition of ``prefix`` (now the most recently used), or ``None``."""
        part = self._parts.get(prefix)
        if part is not None:
            self._parts.move_to_end(prefix)
        return part

    def fits(self, rows: int, dims: int) -> bool:
        """Whether a partition of ``rows`` vectors may be held at all (within the budget on
        its own: a 100k-item file under the default budget is one resident partition)."""
        return rows * (dims * 4 + 12) <= self.budget

    def add(self, prefix: Namespace, part: VectorIndex) -> None:
        """Hold ``part`` for ``prefix``, evicting the least recently used beyond the budget."""
        self._parts[prefix] = part
        self._parts.move_to_end(prefix)
        self._evict()

    def _evict(self) -> None:
        total = self.nbytes()
        while total > self.budget and len(self._parts) > 1:
            _, gone = self._parts.popitem(last=False)
            total -= gone.nbytes()

    def clear(self) -> None:
        """Drop every partition (the next search of each prefix reads it again)."""
        self._parts.clear()
        self.seq = -1

    def remove(self, vector_ids: Iterable[int]) -> None:
        """Forget these vectors in every partition."""
        ids = list(vector_ids)
        for part in self._parts.values():
            for vector_id in ids:
                part.remove(vector_id)

    def apply(self, rows: list[VectorRow]) -> None:
        """Add or replace new rows in each partition whose prefix holds their namespace."""
        for prefix, part in self._parts.items():
            depth = len(prefix)
            mine = [row for row in rows if row[2][:depth] == prefix]
            if mine:
                part.upsert_many([r[0] for r in mine], [r[1] for r in mine],
                                 [r[2] for r in mine], np.stack([r[3] for r in mine]))
        self._evict()


def stream_ranked(chunks: Iterable[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]],
                  query: npt.NDArray[np.float32]) -> Iterator[tuple[int, float]]:
    """Best-first ``(item_id, score)`` over vectors arriving in chunks of ``(item ids,
    matrix)``, each item once (its best vector): exact, holding the scores only."""
    ids: list[npt.NDArray[np.int64]] = []
    scores: list[npt.NDArray[np.float32]] = []
    for item_ids, matrix in chunks:
        ids.append(item_ids)
        scores.append(_dot_rows(matrix, query))
    if not ids:
        return
    row_items = np.concatenate(ids)
    all_scores = np.concatenate(scores)
    multi = len(np.unique(row_items)) < len(row_items)
    yield from ranked_rows(all_scores, row_items, len(all_scores), multi=multi)
