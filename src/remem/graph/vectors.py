"""In-process vector matrices of one graph's facts and entities, loaded incrementally, and an
inverted-file index over them once a graph is large.

Vectors never change once written (an edit writes a new fact), and ids only grow, so a cache
refreshes by reading the rows with an id above the last one it holds: a search after an
ingest reads only the new rows.

**Exact** below ``ann_min_rows`` rows: similarity is one matrix product over every row
(recall 1.0). At 100k x 384 float32 that product reads 150 MB per query, most of a fact
search's time (``benchmarks/graph.py``), so from ``ann_min_rows`` on the cache builds an
**inverted file** (IVF): spherical k-means puts the rows in ``sqrt(n)`` lists around
centroids, stored contiguously; a query scores the centroids, then only the rows of the best
lists until ``probe`` of all rows are covered (6% by default: about 16x less to read). Rows
written after the build are a tail scanned exactly; the index is rebuilt when the tail
passes a quarter of what was indexed. Builds run in a background thread (search scans
exactly until the lists are in place), so no search waits for one. The index is
approximate: ``benchmarks/graph.py`` measures its recall against the exact scan, and search
rescores the keyword and graph candidates exactly (:meth:`VectorCache.scores`), so a fact
found by another signal never loses its vector score to the approximation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["ANN_MIN_ROWS", "VectorCache"]

#: rows from which a cache searches through an inverted file instead of scanning every row
ANN_MIN_ROWS = 50_000
_CHUNK = 8192  # rows per matrix product when assigning rows to lists


@dataclass(frozen=True, slots=True)
class _Lists:
    """The inverted file over the first ``rows`` rows (kept ordered by list)."""

    centroids: npt.NDArray[np.float32]
    #: list ``i`` holds rows ``offsets[i]:offsets[i + 1]``
    offsets: npt.NDArray[np.int64]
    rows: int
    #: the indexed ids sorted, and their row positions (to find a vector by id)
    sorted_ids: npt.NDArray[np.int64]
    sorted_rows: npt.NDArray[np.int64]


def _normalise(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32)
    return out


def _nearest(matrix: npt.NDArray[np.float32], centroids: npt.NDArray[np.float32]
             ) -> npt.NDArray[np.int64]:
    out = np.empty(len(matrix), dtype=np.int64)
    for lo in range(0, len(matrix), _CHUNK):
        out[lo:lo + _CHUNK] = np.argmax(matrix[lo:lo + _CHUNK] @ centroids.T, axis=1)
    return out


def train_centroids(matrix: npt.NDArray[np.float32], lists: int, *, iterations: int = 6,
                    seed: int = 0) -> npt.NDArray[np.float32]:
    """Spherical k-means on a sample of ``matrix`` (unit rows): ``lists`` unit centroids."""
    rng = np.random.default_rng(seed)
    sample = matrix[np.sort(rng.choice(len(matrix), min(len(matrix), 32 * lists),
                                       replace=False))]
    centroids = sample[rng.choice(len(sample), lists, replace=False)].copy()
    for _ in range(iterations):
        assign = _nearest(sample, centroids)
        order = np.argsort(assign, kind="stable")
        members = assign[order]
        starts = np.searchsorted(members, np.arange(lists))
        counts = np.bincount(assign, minlength=lists)
        sums = np.add.reduceat(sample[order], np.minimum(starts, len(sample) - 1), axis=0)
        filled = counts > 0  # an empty list keeps its centroid
        centroids[filled] = sums[filled]
        centroids = _normalise(centroids)
    return centroids


@dataclass(frozen=True, slots=True)
class _State:
    """What a search reads, replaced whole (never changed in place), so a reader that takes
    it once sees ids, vectors and lists that belong together."""

    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32] | None
    lists: _Lists | None
    max_id: int
    #: bumped when the cache starts over (the embedder changed size)
    generation: int = 0


def _built(state: _State) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], _Lists]:
    """The inverted file over every row of ``state``: its rows reordered by list."""
    assert state.matrix is not None
    lists = max(8, int(np.sqrt(len(state.ids))))
    centroids = train_centroids(state.matrix, lists)
    assign = _nearest(state.matrix, centroids)
    order = np.argsort(assign, kind="stable")
    matrix = np.ascontiguousarray(state.matrix[order])
    ids = state.ids[order]
    offsets = np.searchsorted(assign[order], np.arange(lists + 1)).astype(np.int64)
    by_id = np.argsort(ids)
    return ids, matrix, _Lists(centroids, offsets, len(ids), ids[by_id], by_id.astype(np.int64))


class VectorCache:
    """Ids and unit vectors, appended to by :meth:`refresh`; exact search below
    ``ann_min_rows`` rows, an inverted file probing ``probe`` of the rows from there on.

    ``background``: build the inverted file in a thread, searching exactly until it is ready
    (a search never waits seconds for the build); ``False`` builds it inside
    :meth:`refresh`. :meth:`wait` blocks until a build under way is done."""

    def __init__(self, *, ann_min_rows: int = ANN_MIN_ROWS, probe: float = 0.06,
                 background: bool = True) -> None:
        self._lock = threading.Lock()
        self.ann_min_rows = ann_min_rows
        self.probe = probe
        self.background = background
        self._state = _State(np.zeros(0, dtype=np.int64), None, None, 0)
        self._builder: threading.Thread | None = None

    @property
    def ids(self) -> npt.NDArray[np.int64]:
        """The ids held, in row order."""
        return self._state.ids

    @property
    def matrix(self) -> npt.NDArray[np.float32] | None:
        """The vectors held, one row per id of :attr:`ids` (``None``: none)."""
        return self._state.matrix

    def snapshot(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32] | None]:
        """``(ids, matrix)`` that belong together (a build may swap both at any time)."""
        state = self._state
        return state.ids, state.matrix

    @property
    def _lists(self) -> _Lists | None:
        return self._state.lists

    @property
    def last_id(self) -> int:
        """The highest id held (0: none)."""
        return self._state.max_id

    @property
    def approximate(self) -> bool:
        """Whether :meth:`top` searches through the inverted file (not every row)."""
        return self._state.lists is not None

    def refresh(self, load: Callable[[int], list[tuple[int, bytes]]]) -> None:
        """Append the rows ``load(last_id)`` returns (ids above it, in order); build or
        rebuild the inverted file when the rows call for it."""
        with self._lock:
            state = self._state
            rows = load(state.max_id)
            if not rows:
                return
            new = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
            ids = np.array([i for i, _ in rows], dtype=np.int64)
            if state.matrix is not None and state.matrix.shape[1] != new.shape[1]:
                # the embedder changed size: start over from every row
                state = _State(np.zeros(0, dtype=np.int64), None, None, 0,
                               state.generation + 1)
                rows = load(0)
                new = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
                ids = np.array([i for i, _ in rows], dtype=np.int64)
            matrix = new if state.matrix is None else np.vstack([state.matrix, new])
            state = _State(np.concatenate([state.ids, ids]), matrix, state.lists,
                           int(ids[-1]), state.generation)
            self._state = state
            n = len(state.ids)
            due = n >= self.ann_min_rows and (state.lists is None
                                              or n - state.lists.rows > state.lists.rows // 4)
            if not due or (self._builder is not None and self._builder.is_alive()):
                return
            if not self.background:
                self._install(state, *_built(state))
                return
            self._builder = threading.Thread(target=self._build_in_background, args=(state,),
                                             name="remem-graph-ivf", daemon=True)
            self._builder.start()

    def _build_in_background(self, state: _State) -> None:
        try:
            built = _built(state)
        except Exception:  # the exact scan goes on serving; the next refresh tries again
            return
        with self._lock:
            self._install(state, *built)

    def _install(self, built_from: _State, ids: npt.NDArray[np.int64],
                 matrix: npt.NDArray[np.float32], lists: _Lists) -> None:
        """Swap in an inverted file built over ``built_from``'s rows; rows appended since
        stay behind them as the tail. Caller holds the lock."""
        current = self._state
        if current.generation != built_from.generation or current.matrix is None:
            return  # the cache started over meanwhile: this build is stale
        n = len(built_from.ids)
        self._state = _State(np.concatenate([ids, current.ids[n:]]),
                             np.vstack([matrix, current.matrix[n:]]), lists, current.max_id,
                             current.generation)

    def wait(self, timeout: float | None = None) -> None:
        """Block until an inverted file being built is in place."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)

    def _rows_of(self, state: _State, ids: Sequence[int]) -> tuple[list[int], list[int]]:
        """``(ids found, their row positions)`` in ``state``."""
        if state.matrix is None or not len(ids):
            return [], []
        wanted = np.asarray(ids, dtype=np.int64)
        found: list[int] = []
        rows: list[int] = []
        lists = state.lists
        start = 0 if lists is None else lists.rows
        if lists is not None:
            at = np.searchsorted(lists.sorted_ids, wanted)
            ok = (at < len(lists.sorted_ids)) & (
                lists.sorted_ids[np.minimum(at, len(lists.sorted_ids) - 1)] == wanted)
            found += wanted[ok].tolist()
            rows += lists.sorted_rows[at[ok]].tolist()
        tail = state.ids[start:]  # appended in id order, so sorted
        at = np.searchsorted(tail, wanted)
        ok = (at < len(tail)) & (tail[np.minimum(at, max(len(tail) - 1, 0))] == wanted) \
            if len(tail) else np.zeros(len(wanted), dtype=bool)
        found += wanted[ok].tolist()
        rows += (at[ok] + start).tolist()
        return found, rows

    def _probed(self, state: _State, query: npt.NDArray[np.float32], k: int
                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Row positions and scores of the rows in the best lists (and the tail)."""
        assert state.matrix is not None and state.lists is not None
        lists, matrix = state.lists, state.matrix
        sizes = np.diff(lists.offsets)
        want = max(int(self.probe * lists.rows), 32 * k)
        best = np.argsort(-(lists.centroids @ query))
        covered = np.cumsum(sizes[best])
        take = best[:int(np.searchsorted(covered, want)) + 1]
        spans = [(int(lists.offsets[i]), int(lists.offsets[i + 1])) for i in take]
        spans.append((lists.rows, len(state.ids)))
        positions = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in spans])
        scores = np.concatenate([matrix[a:b] @ query for a, b in spans])
        return positions, scores.astype(np.float32)

    def top(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The ``k`` most similar ``(id, cosine)``, best first (ties by id): exact, or
        through the inverted file (:attr:`approximate`)."""
        state = self._state
        if state.matrix is None or k <= 0 or state.matrix.shape[1] != query.shape[0]:
            return []
        if state.lists is None:
            positions = None
            scores = state.matrix @ query
        else:
            positions, scores = self._probed(state, query, k)
        k = min(k, len(scores))
        part = np.argpartition(-scores, k - 1)[:k]
        rows = part if positions is None else positions[part]
        ids = state.ids
        order = sorted(range(k), key=lambda j: (-float(scores[part[j]]), int(ids[rows[j]])))
        return [(int(ids[rows[j]]), float(scores[part[j]])) for j in order]

    def scores(self, query: npt.NDArray[np.float32], ids: Sequence[int]
               ) -> list[tuple[int, float]]:
        """Exact ``(id, cosine)`` of these ids (those held), in the order found."""
        state = self._state
        if state.matrix is None or state.matrix.shape[1] != query.shape[0]:
            return []
        found, rows = self._rows_of(state, ids)
        if not rows:
            return []
        values = state.matrix[np.asarray(rows, dtype=np.int64)] @ query
        return [(i, float(s)) for i, s in zip(found, values.tolist(), strict=True)]

    def vectors(self, ids: list[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The vectors of these ids (those held)."""
        state = self._state
        found, rows = self._rows_of(state, ids)
        if state.matrix is None:
            return {}
        return {i: state.matrix[r] for i, r in zip(found, rows, strict=True)}
