"""An embedder with a disk cache, shared by the retrieval benchmarks (an experiment aid:
embed a data set once, then rerun rankings in seconds)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder

__all__ = ["CachedEmbedder", "local_embedder", "save_cache"]


class CachedEmbedder:
    """An :class:`~remem.embed.base.Embedder` that answers from a disk cache, embedding (and
    remembering) only texts it has not seen; same model name, so a store cannot tell."""

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        self.inner, self.path = inner, Path(path)
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self.misses = 0
        if self.path.exists():
            with np.load(self.path) as data:
                self._vectors = {name: data[name] for name in data.files}

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dims(self) -> int:
        return self.inner.dims

    def _key(self, kind: str, text: str) -> str:
        digest = hashlib.blake2b(f"{self.model}\0{kind}\0{text}".encode(), digest_size=16)
        return digest.hexdigest()

    def _embed(self, kind: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        keys = [self._key(kind, t) for t in texts]
        missing = sorted({i for i, k in enumerate(keys) if k not in self._vectors})
        if missing:
            self.misses += len(missing)
            batch = [texts[i] for i in missing]
            fresh = (self.inner.embed_queries(batch) if kind == "query"
                     else self.inner.embed_documents(batch))
            for i, vector in zip(missing, fresh, strict=True):
                self._vectors[keys[i]] = np.asarray(vector, dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys]) if keys else np.zeros(
            (0, self.dims), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._embed("document", texts)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._embed("query", texts)

    def save(self) -> None:
        """Write the cache (atomically: a temporary file, then a rename)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial.npz")
        np.savez(partial, **self._vectors)
        partial.replace(self.path)


def local_embedder(cache: str | Path | None) -> Embedder:
    """The local model, answered through a disk cache at ``cache`` when one is given."""
    from remem.embed.local import LocalEmbedder

    live = LocalEmbedder()
    return live if cache is None else CachedEmbedder(live, cache)


def save_cache(embedder: Embedder) -> None:
    """Write ``embedder``'s cache if it has one."""
    if isinstance(embedder, CachedEmbedder):
        embedder.save()
