"""In-process vector matrices of one graph's facts and entities, loaded incrementally.

Vectors never change once written (an edit writes a new fact), and ids only grow, so a cache
refreshes by reading the rows with an id above the last one it holds: a search after an
ingest reads only the new rows. Similarity is a matrix product over the whole namespace
(exact, no index): measured in ``benchmarks/graph.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

__all__ = ["VectorCache"]


class VectorCache:
    """Ids and unit vectors, appended to by :meth:`refresh`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.matrix: npt.NDArray[np.float32] | None = None
        self._pending: list[tuple[int, bytes]] = []

    @property
    def last_id(self) -> int:
        """The highest id held (0: none)."""
        return int(self.ids[-1]) if len(self.ids) else 0

    def refresh(self, load: Callable[[int], list[tuple[int, bytes]]]) -> None:
        """Append the rows ``load(last_id)`` returns (ids above it, in order)."""
        with self._lock:
            rows = load(self.last_id)
            if not rows:
                return
            new = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
            ids = np.array([i for i, _ in rows], dtype=np.int64)
            if self.matrix is not None and self.matrix.shape[1] != new.shape[1]:
                self.matrix, self.ids = None, np.zeros(0, dtype=np.int64)
                rows = load(0)  # the embedder changed size: start over from every row
                new = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
                ids = np.array([i for i, _ in rows], dtype=np.int64)
            self.matrix = new if self.matrix is None else np.vstack([self.matrix, new])
            self.ids = np.concatenate([self.ids, ids])

    def top(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The ``k`` most similar ``(id, cosine)``, best first (ties by id)."""
        if self.matrix is None or k <= 0 or self.matrix.shape[1] != query.shape[0]:
            return []
        scores = self.matrix @ query
        k = min(k, len(scores))
        part = np.argpartition(-scores, k - 1)[:k]
        order = sorted(part.tolist(), key=lambda i: (-float(scores[i]), int(self.ids[i])))
        return [(int(self.ids[i]), float(scores[i])) for i in order]

    def vectors(self, ids: list[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The vectors of these ids (those held)."""
        if self.matrix is None:
            return {}
        positions = np.searchsorted(self.ids, ids)
        out: dict[int, npt.NDArray[np.float32]] = {}
        for item_id, pos in zip(ids, positions.tolist(), strict=True):
            if pos < len(self.ids) and int(self.ids[pos]) == item_id:
                out[item_id] = self.matrix[pos]
        return out
