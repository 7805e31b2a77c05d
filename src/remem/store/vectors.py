"""An in-process matrix of unit vectors searched exactly with NumPy, shared by every backend
that keeps its vectors in this process (in-memory, and SQLite as per-prefix partitions of its
table, :mod:`remem.store.vector_partitions`).

Exact search keeps recall at 1.0 by construction; a matrix-vector product over 100k x 384
float32 takes about 10 ms on two cores. Only a SQLite scope too large to hold may be searched
approximately instead (:mod:`remem.store.ann`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from remem.retrieval.ranking import Candidate
from remem.store.types import Namespace

__all__ = ["TextHashes", "VectorIndex", "best_scores", "first_chunk", "matrix_hits",
           "ranked_hits", "ranked_rows", "top_matches"]

_FIRST_CHUNK = 256
_BLOCK = 8192  # rows per block of the matrix


class VectorIndex:
    """Vectors keyed by an integer id, each belonging to an item id and a namespace.

    The matrix is a list of fixed-size blocks rather than one array, so growing never copies
    the vectors already held (a doubling copy of a 150 MB matrix would double peak memory).
    """

    def __init__(self, dims: int, block: int = _BLOCK) -> None:
        self.dims = dims
        self._block = block  # rows per block: small for a small partition
        self._blocks: list[npt.NDArray[np.float32]] = []
        self._item = np.zeros(0, dtype=np.int64)  # item id per row, -1 for a free row
        self._ns = np.zeros(0, dtype=np.int32)  # namespace code per row
        self._size = 0
        self._row_of: dict[int, int] = {}
        self._free: list[int] = []
        self._namespaces: list[Namespace] = []
        self._ns_code: dict[Namespace, int] = {}
        self._items_with_rows: dict[int, int] = {}
        self._multi_row_items = 0

    def __len__(self) -> int:
        return len(self._row_of)

    def nbytes(self) -> int:
        """Bytes held by the arrays (vectors and per-row metadata)."""
        return int(sum(b.nbytes for b in self._blocks) + self._item.nbytes + self._ns.nbytes)

    def upsert(self, vector_id: int, item_id: int, namespace: Namespace,
               vector: npt.NDArray[np.float32]) -> None:
        """Add or replace the vector ``vector_id``."""
        self.upsert_many([vector_id], [item_id], [namespace], vector.reshape(1, -1))

    def reserve(self, capacity: int) -> None:
        """Allocate room for ``capacity`` rows up front (a bulk load then never regrows)."""
        while len(self._blocks) * self._block < capacity:
            self._blocks.append(np.zeros((self._block, self.dims), dtype=np.float32))
        self._reserve_metadata(capacity)

    def _reserve_metadata(self, capacity: int) -> None:
        if len(self._item) < capacity:
            held = len(self._item)
            item = np.full(capacity, -1, dtype=np.int64)
            item[:held] = self._item
            ns = np.zeros(capacity, dtype=np.int32)
            ns[:held] = self._ns
            self._item, self._ns = item, ns

    def upsert_many(self, vector_ids: list[int], item_ids: list[int],
                    namespaces: list[Namespace], vectors: npt.NDArray[np.float32]) -> None:
        """:meth:`upsert` for many vectors at once (rows of ``vectors``)."""
        for vector_id in vector_ids:
            if vector_id in self._row_of:
                self.remove(vector_id)
        n = len(vector_ids)
        reused = [self._free.pop() for _ in range(min(n, len(self._free)))]
        start = self._size
        self._size += n - len(reused)
        if self._size > len(self._item):
            # per-row metadata is small (12 bytes a row): doubling keeps appends cheap;
            # vector blocks are added only as rows need them
            self._reserve_metadata(max(self._size, 2 * len(self._item), 1024))
        while len(self._blocks) * self._block < self._size:
            self._blocks.append(np.zeros((self._block, self.dims), dtype=np.float32))
        rows = reused + list(range(start, self._size))
        codes = np.empty(n, dtype=np.int32)
        for position, namespace in enumerate(namespaces):
            code = self._ns_code.get(namespace)
            if code is None:
                code = len(self._namespaces)
                self._namespaces.append(namespace)
                self._ns_code[namespace] = code
            codes[position] = code
        row_array = np.asarray(rows, dtype=np.intp)
        self._item[row_array] = item_ids
        self._ns[row_array] = codes
        for position, row in enumerate(rows):
            self._blocks[row // self._block][row % self._block] = vectors[position]
        for vector_id, item_id, row in zip(vector_ids, item_ids, rows, strict=True):
            self._row_of[vector_id] = row
            count = self._items_with_rows.get(item_id, 0) + 1
            self._items_with_rows[item_id] = count
            if count == 2:
                self._multi_row_items += 1

    def remove(self, vector_id: int) -> None:
        """Forget ``vector_id`` (no error if absent)."""
        row = self._row_of.pop(vector_id, None)
        if row is None:
            return
        item_id = int(self._item[row])
        count = self._items_with_rows[item_id] - 1
        if count == 1:
            self._multi_row_items -= 1
        if count:
            self._items_with_rows[item_id] = count
        else:
            del self._items_with_rows[item_id]
        self._item[row] = -1
        self._free.append(row)

    def _scores_all(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Scores of rows ``0 .. size-1``, block by block (no copy of the vectors)."""
        parts = []
        for index, block in enumerate(self._blocks):
            used = min(self._block, self._size - index * self._block)
            if used <= 0:
                break
            parts.append(_dot_rows(block[:used], query))
        return np.concatenate(parts)

    def _scores_of(self, rows: npt.NDArray[np.intp],
                   query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Scores of the given rows (sorted ascending), gathering within each block."""
        bounds = np.searchsorted(rows, np.arange(len(self._blocks) + 1) * self._block)
        parts = []
        for index, block in enumerate(self._blocks):
            lo, hi = bounds[index], bounds[index + 1]
            if lo < hi:
                parts.append(_dot_rows(block[rows[lo:hi] - index * self._block], query))
        return np.concatenate(parts)

    def _codes_under(self, prefix: Namespace) -> npt.NDArray[np.int32] | None:
        """Namespace codes under ``prefix``; ``None`` means every namespace."""
        if not prefix:
            return None
        depth = len(prefix)
        codes = [c for ns, c in self._ns_code.items() if ns[:depth] == prefix]
        if len(codes) == len(self._namespaces):
            return None
        return np.asarray(codes, dtype=np.int32)

    def ranked_items(self, query: npt.NDArray[np.float32],
                     prefix: Namespace) -> Iterator[tuple[int, float]]:
        """Yield ``(item_id, score)`` under ``prefix``, best first, each item once (its best
        vector's cosine similarity).

        Work is lazy: one matrix product, then partial sorts of growing size (256, 1024, ...),
        so a caller that stops after a few candidates never pays for a full sort.
        """
        size = self._size
        if size == 0:
            return
        item = self._item[:size]
        codes = self._codes_under(prefix)
        valid = item >= 0 if codes is None else (np.isin(self._ns[:size], codes) & (item >= 0))
        count = int(np.count_nonzero(valid))
        if count == 0:
            return
        if count * 4 < size:
            # a small part of the matrix: gathering its rows beats multiplying all of them
            rows = np.flatnonzero(valid)
            scores = self._scores_of(rows, query)
            row_items = item[rows]
        else:
            # most of the matrix: multiply it all (no copy) and push the rest to the bottom
            scores = self._scores_all(query)
            if count < size:
                scores[~valid] = -np.inf
            row_items = item
        yield from ranked_rows(scores, row_items, count, multi=bool(self._multi_row_items))


def ranked_rows(scores: npt.NDArray[np.float32], row_items: npt.NDArray[np.int64], count: int,
                *, multi: bool) -> Iterator[tuple[int, float]]:
    """Yield ``(item_id, score)`` of the ``count`` rows scoring above ``-inf``, best first
    (ties in row order), each item once when ``multi`` (an item may own several rows).

    Lazy: partial sorts of growing size (256, 1024, ...), so a caller that stops after a few
    candidates never pays for a full sort. ``scores`` is not modified."""
    seen: set[int] | None = set() if multi else None
    emitted = np.zeros(len(scores), dtype=bool)
    negated = -scores
    stage = _FIRST_CHUNK
    while True:
        if stage >= count:
            order = np.argsort(negated, kind="stable")[:count]
        else:
            top = _smallest(negated, stage)
            order = top[np.lexsort((top, negated[top]))]  # ties in row order
        # ties at a stage boundary may swap members between stages: skip what was sent
        order = order[~emitted[order]]
        emitted[order] = True
        yield from _emit(order, row_items, scores, seen)
        if stage >= count:
            return
        stage *= 4


class TextHashes:
    """Document text hash -> id of a stored vector of that text: the embedding cache's lookup,
    kept in process and brought up to date from the table by sequence number, as the matrix is.

    A hash index in the database costs a random page write per put (114 of 542 WAL pages of a
    100-item batch at 100k items); this costs about 170 bytes per vector in memory. Texts
    stored more than once keep their other ids, so removing one copy keeps the text found.
    """

    def __init__(self) -> None:
        #: the table's vector_seq this map reflects (-1: nothing read yet)
        self.seq = -1
        self._id_of: dict[bytes, int] = {}
        self._hash_of: dict[int, bytes] = {}
        self._copies: dict[bytes, set[int]] = {}  # further ids of texts stored several times

    def __len__(self) -> int:
        return len(self._hash_of)

    def add(self, vector_ids: Iterable[int], hashes: Iterable[bytes]) -> None:
        for vector_id, digest in zip(vector_ids, hashes, strict=True):
            held = self._id_of.get(digest)
            if held is not None and held != vector_id:
                self._copies.setdefault(digest, set()).add(held)
            self._id_of[digest] = vector_id
            self._hash_of[vector_id] = digest

    def remove(self, vector_ids: Iterable[int]) -> None:
        for vector_id in vector_ids:
            digest = self._hash_of.pop(vector_id, None)
            if digest is None:
                continue
            copies = self._copies.get(digest)
            if self._id_of[digest] != vector_id:
                assert copies is not None
                copies.discard(vector_id)
            elif copies:
                self._id_of[digest] = copies.pop()
            else:
                del self._id_of[digest]
            if copies is not None and not copies:
                del self._copies[digest]

    def ids_of(self, hashes: Iterable[bytes]) -> list[int]:
        """Vector ids of the hashes held (one per hash)."""
        return [self._id_of[h] for h in hashes if h in self._id_of]


def _smallest(values: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Positions of the ``k`` smallest values (any order; ``k < len(values)``).

    A full ``argpartition`` of 100k scores took 1 ms of a 8 ms search. A strided sample
    gives a cut that about ``2 k`` values pass; only those are partitioned. Exact: when
    fewer than ``k`` pass (an unlucky sample), the whole array is partitioned instead."""
    step = len(values) // (8 * k)
    if step >= 2:
        sample = np.partition(values[::step], 2 * k // step)
        passed = np.flatnonzero(values <= sample[2 * k // step])
        if len(passed) >= k:
            return passed[np.argpartition(values[passed], k - 1)[:k]]
    return np.argpartition(values, k - 1)[:k]


def _dot_rows(matrix: npt.NDArray[np.float32],
              query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``matrix @ query`` computed row by row in the same order of operations whatever a row's
    position. BLAS ``sgemv`` takes different code paths for different rows, so equal vectors
    could score a few ulps apart and tie-breaks would differ between backends; ``einsum`` is
    also faster here (memory-bound, no thread wake-ups)."""
    scores: npt.NDArray[np.float32] = np.einsum("ij,j->i", matrix, query)
    return scores


def best_scores(pairs: Sequence[tuple[int, npt.NDArray[np.float32]]],
                query: npt.NDArray[np.float32]) -> dict[int, float]:
    """Item id -> the best cosine of its ``(item id, unit vector)`` rows with the unit
    ``query``, row by row as every backend's vector search computes it (:func:`_dot_rows`),
    so an item scores the same here as among the vector candidates."""
    if not pairs:
        return {}
    scores = _dot_rows(np.stack([vector for _, vector in pairs]), query).tolist()
    best: dict[int, float] = {}
    for (item_id, _), score in zip(pairs, scores, strict=True):
        if item_id not in best or score > best[item_id]:
            best[item_id] = score
    return best


def _emit(order: npt.NDArray[np.intp], row_items: npt.NDArray[np.int64],
          scores: npt.NDArray[np.float32], seen: set[int] | None) -> Iterator[tuple[int, float]]:
    for item_id, score in zip(row_items[order].tolist(), scores[order].tolist(), strict=True):
        if seen is not None:
            if item_id in seen:
                continue
            seen.add(item_id)
        yield item_id, score


def first_chunk(needed: int) -> int:
    """How many best-first candidates to confirm in a first round trip, for ``needed``."""
    return max(64, needed + needed // 4)


def top_matches(ranked: Iterator[tuple[int, float]], needed: int,
                fetch: Callable[[list[int]], dict[int, object]]) -> list[tuple[int, float]]:
    """Walk ``ranked`` in chunks, keeping items that ``fetch`` confirms (filter, TTL), until
    ``needed`` are found; then keep every further candidate tied with the last score, so the
    caller's tie-break (namespace, key) is the same on every backend.

    ``fetch`` receives candidate ids and returns the ones that match. The first chunk is a
    little over ``needed`` (most candidates usually match, and confirming one may read a large
    row); chunks then grow fourfold, so a selective filter costs a few round trips, never one
    per candidate.
    """
    found: list[tuple[int, float]] = []
    chunk_size = first_chunk(needed)
    exhausted = False
    last_score: float | None = None
    while not exhausted:
        chunk: list[tuple[int, float]] = []
        for pair in ranked:
            chunk.append(pair)
            if len(chunk) >= chunk_size:
                break
        else:
            exhausted = True
        if not chunk:
            break
        matched = fetch([item_id for item_id, _ in chunk])
        for item_id, score in chunk:
            if item_id not in matched:
                continue
            if len(found) >= needed and score != last_score:
                return found
            found.append((item_id, score))
            if len(found) == needed:
                last_score = score
        chunk_size *= 4
    return found


def matrix_hits(index: VectorIndex, query: npt.NDArray[np.float32], prefix: Namespace,
                depth: int,
                addresses: Callable[[list[int]], Mapping[int, tuple[Namespace, str]]]
                ) -> list[Candidate]:
    """The ``depth`` best items of ``index`` under ``prefix`` (plus any tied with the last),
    best first, ties by (namespace, key). ``addresses`` receives candidate item ids and
    returns the address of each one that is alive and matches the search."""
    return ranked_hits(index.ranked_items(query, prefix), depth, addresses)


def ranked_hits(ranked: Iterator[tuple[int, float]], depth: int,
                addresses: Callable[[list[int]], Mapping[int, tuple[Namespace, str]]]
                ) -> list[Candidate]:
    """:func:`matrix_hits` over any best-first ``(item_id, score)`` iterator."""
    seen: dict[int, tuple[Namespace, str]] = {}

    def fetch(ids: list[int]) -> dict[int, object]:
        found = addresses(ids)
        seen.update(found)
        return dict(found)

    out = [(item_id, seen[item_id], score)
           for item_id, score in top_matches(ranked, depth, fetch)]
    out.sort(key=lambda c: (-c[2], c[1]))
    return out
