"""The embedder seam: every embedder (local model, HTTP API, fake) implements :class:`Embedder`."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from remem.errors import EmbeddingError, IndexConfigError, RememError

__all__ = ["Embedder", "checked_unit_vectors", "normalize_rows"]


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

    Stores keep unit vectors so that a dot product is the cosine similarity. Squaring the
    values can overflow (in float32 past ~1.8e19: a row of 3e38s, finite float32 values, came
    out as a zero vector) or underflow to a zero norm: a row whose norm is not a positive
    finite number is divided by its largest magnitude first and normed in float64, so every
    finite row keeps its direction. A row holding NaN or an infinity has no direction:
    :class:`~remem.errors.EmbeddingError` names the row and ``model`` (the embedder that
    returned it).
    """
    array = np.asarray(vectors)
    # float32 stays float32 (the common case, normed as fast as before); anything else is
    # read as float64, so values past float32's range are not cut to infinity first
    array = array if array.dtype == np.float32 else np.asarray(array, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {array.shape}")
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        norms = np.linalg.norm(array, axis=1)
    # a norm that is not a positive finite number: a zero row, NaN or infinity in the row
    # (refused), or squares that overflowed or underflowed (the slow path below)
    redo = ~(norms >= np.finfo(array.dtype).tiny) | ~(norms < np.inf)
    if not redo.any():  # the common case, as fast as before
        normalized: npt.NDArray[np.float32] = (array / norms[:, None]).astype(
            np.float32, copy=False)
        return normalized
    rows = np.asarray(array[redo], dtype=np.float64)
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(redo)[np.flatnonzero(~finite)[0]])
        who = f"embedder {model!r}" if model else "the embedder"
        raise EmbeddingError(
            f"{who} returned NaN or infinite values (row {row} of {len(array)}), which have "
            "no direction: fix or replace the embedder")
    scale = np.abs(rows).max(axis=1, keepdims=True) if rows.shape[1] else \
        np.ones((len(rows), 1))
    scale[scale == 0] = 1.0  # a zero row stays zero
    scaled = rows / scale  # every magnitude in [0, 1]: the squares cannot overflow
    lengths = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None]
    lengths[lengths == 0] = 1.0
    out = np.empty(array.shape, dtype=np.float32)
    keep = ~redo
    out[keep] = array[keep] / norms[keep, None]
    out[redo] = scaled / lengths
    return out


_WORD = re.compile(r"\w")


def checked_unit_vectors(fn: Callable[[Sequence[str]], npt.ArrayLike], texts: list[str], *,
                         model: str, dims: int) -> npt.NDArray[np.float32]:
    """Unit vectors of ``texts`` by ``fn`` (one of ``model``'s embed methods). Its failure is
    an EmbeddingError (its cause chained), and so is a vector with NaN or infinity (every
    score with it would be NaN) or of all zeros for a text with a word in it (the vector says
    nothing, every score with it is 0). Text without a word ("???", an emoji) may embed to
    zeros: the bundled FakeEmbedder does. A wrong shape is an IndexConfigError."""
    try:
        array = np.asarray(fn(texts), dtype=np.float32)
    except RememError:
        raise  # already typed (an EmbeddingError naming the model, a ConfigError...)
    except Exception as exc:
        raise EmbeddingError(
            f"embedder {model!r} failed on {len(texts)} text(s): "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if array.shape != (len(texts), dims):
        raise IndexConfigError(
            f"embedder {model!r} returned shape {array.shape} for {len(texts)} "
            f"texts; expected ({len(texts)}, {dims})"
        )
    finite = np.asarray(np.isfinite(array).all(axis=1), dtype=bool).tolist()
    zero = np.asarray(~array.any(axis=1), dtype=bool).tolist()
    for row, (ok, empty) in enumerate(zip(finite, zero, strict=True)):
        if ok and (not empty or not _WORD.search(texts[row])):
            continue
        what = "an all-zero vector" if ok else "NaN or infinite values"
        raise EmbeddingError(
            f"embedder {model!r} returned {what} for text {row} of {len(texts)} "
            f"({texts[row][:60]!r}); nothing was written: fix or replace the embedder"
        )
    return normalize_rows(array)
