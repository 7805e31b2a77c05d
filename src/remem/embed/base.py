"""The embedder seam: every embedder (local model, HTTP API, fake) implements :class:`Embedder`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "normalize_rows"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors of a fixed dimension.

    Documents (what is stored) and queries (what is searched for) are embedded by separate
    methods because many models expect different prefixes or instructions for each.
    ``model`` names the model and its version; the store records it and refuses to mix
    vectors of different models in one index.
    """

    @property
    def model(self) -> str:
        """A stable name for the model, e.g. ``"fake-384"``."""
        ...

    @property
    def dims(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed stored texts: an array of shape ``(len(texts), dims)``."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed search queries: an array of shape ``(len(texts), dims)``."""
        ...


def normalize_rows(vectors: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Scale each row to unit length (zero rows stay zero), as float32.

    Stores keep unit vectors so that a dot product is the cosine similarity.
    """
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: npt.NDArray[np.float32] = (array / norms).astype(np.float32, copy=False)
    return normalized
