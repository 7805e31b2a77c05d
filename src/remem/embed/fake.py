"""A deterministic embedder for tests and benchmarks: no model, no network, same output forever."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from remem.embed.base import normalize_rows

__all__ = ["FakeEmbedder"]

_TOKEN = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=65536)
def _token_vector(token: str, dims: int) -> npt.NDArray[np.float32]:
    seed = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "big")
    return np.random.default_rng(seed).standard_normal(dims).astype(np.float32)


class FakeEmbedder:
    """Sums a fixed random vector per lower-cased word (CJK text per character), normalised.

    Texts that share words get similar vectors, so search behaves plausibly in tests, and the
    same text always gets the same vector on every machine. It knows nothing of meaning: use it
    for tests of everything except recall quality. ``calls`` and ``texts_embedded`` count work
    done, so tests can check that caches avoid it.
    """

    def __init__(self, dims: int = 384, *, model: str | None = None) -> None:
        if dims < 1:
            raise ValueError(f"dims must be >= 1, got {dims}")
        self._dims = dims
        self._model = model or f"fake-{dims}"
        self.calls = 0
        self.texts_embedded = 0

    @property
    def model(self) -> str:
        """``fake-{dims}`` unless another name was given."""
        return self._model

    @property
    def dims(self) -> int:
        """Vector length."""
        return self._dims

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self._dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _tokens(text):
                out[row] += _token_vector(token, self._dims)
        return normalize_rows(out)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed stored texts."""
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed queries (the same function: the fake has no query prefix)."""
        return self._embed(texts)


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for word in _TOKEN.findall(text.lower()):
        if any("\u4e00" <= ch <= "\u9fff" for ch in word):
            tokens.extend(word)  # no segmenter here: one token per CJK character
        else:
            tokens.append(word)
    return tokens
