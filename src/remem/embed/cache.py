"""Content-hash caching of embeddings: the same text with the same model is embedded once.

Stores look texts up by :func:`text_hash` in two places: a bounded in-process LRU
(:class:`VectorMemo`, which also covers queries) and, for documents, the vectors the store
already holds (SQL backends keep each vector's text hash, so the cache survives restarts and is
shared by every process on the database, at the cost of one small index).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["EmbedCounts", "TextKind", "VectorMemo", "text_hash"]

TextKind = Literal["document", "query"]


def text_hash(kind: TextKind, text: str) -> bytes:
    """16-byte BLAKE2b of the text and its kind (queries and documents embed differently)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(b"q\0" if kind == "query" else b"d\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.digest()


class VectorMemo:
    """A thread-safe LRU of ``(model, text hash) -> unit vector`` holding at most ``size``.

    One memo serves every thread of a store (and every tenant of a server): each method holds
    the lock for the whole of its work, and the vectors it keeps are read-only views, so no
    caller can change a vector another thread is handed (writing to one raises
    ``ValueError``)."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[str, bytes], npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, model: str, hashes: Iterable[bytes]
                 ) -> dict[bytes, npt.NDArray[np.float32]]:
        """The cached vectors among ``hashes`` (refreshing their recency)."""
        found: dict[bytes, npt.NDArray[np.float32]] = {}
        with self._lock:
            for digest in hashes:
                vector = self._entries.get((model, digest))
                if vector is not None:
                    self._entries.move_to_end((model, digest))
                    found[digest] = vector
        return found

    def put_many(self, model: str, vectors: Mapping[bytes, npt.NDArray[np.float32]]) -> None:
        """Remember ``vectors``, evicting the least recently used beyond ``size``."""
        if self.size <= 0:
            return
        kept = {}
        for digest, vector in vectors.items():
            view = vector.view()
            view.flags.writeable = False
            kept[digest] = view
        with self._lock:
            for digest, view in kept.items():
                self._entries[(model, digest)] = view
                self._entries.move_to_end((model, digest))
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)


class EmbedCounts:
    """Texts embedded by a model vs served from a cache, added to from many threads at once
    under a lock: a ``+=`` on a shared dict is a read and a write, kept whole today only by
    CPython's GIL."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = {"embedded": 0, "cached": 0}

    def add(self, *, embedded: int = 0, cached: int = 0) -> None:
        """Count ``embedded`` texts embedded and ``cached`` served from the cache."""
        with self._lock:
            self._counts["embedded"] += embedded
            self._counts["cached"] += cached

    def snapshot(self) -> dict[str, int]:
        """The counts so far, as a new dict."""
        with self._lock:
            return dict(self._counts)
