"""The embedder seam: every embedder (local model, HTTP API, fake) implements :class:`Embedder`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from remem.errors import EmbeddingError

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


def normalize_rows(vectors: npt.ArrayLike, *, model: str | None = None
                   ) -> npt.NDArray[np.float32]:
    """Scale each row to unit length (zero rows stay zero), as float32.

    Stores keep unit vectors so that a dot product is the cosine similarity. Each row is
    divided by its largest magnitude before its norm is taken, in float64: squaring the raw
    values overflows (in float32 past ~1.8e19, so a row of 3e38s, finite float32 values,
    came out as a zero vector) or underflows to a zero norm. A row holding NaN or an
    infinity has no direction: :class:`~remem.errors.EmbeddingError` names the row and
    ``model`` (the embedder that returned it).
    """
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {array.shape}")
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        who = f"embedder {model!r}" if model else "the embedder"
        raise EmbeddingError(
            f"{who} returned NaN or infinite values (row {row} of {len(array)}), which have "
            "no direction: fix or replace the embedder")
    scale = np.abs(array).max(axis=1, keepdims=True) if array.shape[1] else \
        np.ones((len(array), 1))
    scale[scale == 0] = 1.0  # a zero row stays zero
    scaled = array / scale  # every magnitude in [0, 1]: the squares cannot overflow
    norms = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None]
    norms[norms == 0] = 1.0
    normalized: npt.NDArray[np.float32] = (scaled / norms).astype(np.float32)
    return normalized
