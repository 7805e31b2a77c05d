"""The embedder conformance suite: every embedder passes every test here.

An embedder joins by adding one entry to ``EMBEDDERS``: a name and a factory returning a context
manager that yields a ready embedder and cleans up after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import numpy as np
import numpy.typing as npt
import pytest

from remem.embed import Embedder, FakeEmbedder
from remem.embed.local import LocalEmbedder
from remem.embed.openai import OpenAIEmbedder
from remem.testing import LoopbackServer


@contextmanager
def _openai_loopback() -> Iterator[Embedder]:
    # small batches so the suite's batching test splits requests
    with LoopbackServer(dims=48, api_key="sk-conformance") as server, OpenAIEmbedder(
        "text-embedding-3-small", base_url=server.url, api_key="sk-conformance", batch_size=3,
        max_retries=0,
    ) as embedder:
        yield embedder


EMBEDDERS: dict[str, Callable[[], AbstractContextManager[Embedder]]] = {
    "fake": lambda: nullcontext(FakeEmbedder(32)),
    "openai-loopback": _openai_loopback,
    "local": lambda: nullcontext(LocalEmbedder(batch_size=4)),
}


@pytest.fixture(scope="module", params=sorted(EMBEDDERS))
def embedder(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    with EMBEDDERS[request.param]() as made:
        yield made


TEXTS = [
    "The cat sat on the mat.",
    "Postgres stores rows in heap pages.",
    "我喜欢喝茶",
    "I drink 绿茶 every morning before work",
    "pytest fixtures with scope=module are set up once",
]


def _assert_unit_or_zero(vectors: npt.NDArray[np.float32]) -> None:
    norms = np.linalg.norm(vectors, axis=1)
    assert np.all(np.isclose(norms, 1.0, atol=1e-4) | np.isclose(norms, 0.0, atol=1e-6)), norms


def _cosine(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_is_an_embedder(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)


def test_shape_dtype_and_unit_norm(embedder: Embedder) -> None:
    for method in (embedder.embed_documents, embedder.embed_queries):
        vectors = method(TEXTS)
        assert isinstance(vectors, np.ndarray)
        assert vectors.shape == (len(TEXTS), embedder.dims)
        assert vectors.dtype == np.float32
        assert np.isfinite(vectors).all()
        _assert_unit_or_zero(vectors)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)  # real text


def test_dims_is_a_positive_int_matching_the_output(embedder: Embedder) -> None:
    dims = embedder.dims
    assert isinstance(dims, int) and dims > 0
    assert embedder.embed_documents(["one"]).shape[1] == dims
    assert embedder.dims == dims


def test_empty_input_gives_an_empty_matrix(embedder: Embedder) -> None:
    for method in (embedder.embed_documents, embedder.embed_queries):
        vectors = method([])
        assert vectors.shape == (0, embedder.dims)
        assert vectors.dtype == np.float32


def test_empty_string_is_unit_or_zero(embedder: Embedder) -> None:
    vectors = embedder.embed_documents(["", "tea", ""])
    assert vectors.shape == (3, embedder.dims)
    _assert_unit_or_zero(vectors)
    assert np.allclose(vectors[0], vectors[2])


def test_deterministic(embedder: Embedder) -> None:
    first = embedder.embed_documents(TEXTS)
    again = embedder.embed_documents(TEXTS)
    assert np.allclose(first, again, atol=1e-5)
    assert np.allclose(embedder.embed_queries(TEXTS[:2]), embedder.embed_queries(TEXTS[:2]),
                       atol=1e-5)


def test_batching_matches_one_call(embedder: Embedder) -> None:
    texts = [f"note {i}: the user mentioned topic {i * 7}" for i in range(11)]
    together = embedder.embed_documents(texts)
    one_by_one = np.vstack([embedder.embed_documents([t]) for t in texts])
    in_chunks = np.vstack([embedder.embed_documents(texts[i:i + 4]) for i in range(0, 11, 4)])
    assert np.allclose(together, one_by_one, atol=1e-4)
    assert np.allclose(together, in_chunks, atol=1e-4)


def test_rows_follow_input_order(embedder: Embedder) -> None:
    forward = embedder.embed_documents(TEXTS)
    backward = embedder.embed_documents(list(reversed(TEXTS)))
    assert np.allclose(forward, backward[::-1], atol=1e-4)
    duplicated = embedder.embed_documents(["same text", "other", "same text"])
    assert np.allclose(duplicated[0], duplicated[2], atol=1e-5)
    assert not np.allclose(duplicated[0], duplicated[1], atol=1e-3)


def test_accepts_any_sequence(embedder: Embedder) -> None:
    assert np.allclose(embedder.embed_documents(tuple(TEXTS[:2])),
                       embedder.embed_documents(TEXTS[:2]), atol=1e-5)


def test_model_is_a_stable_non_empty_name(embedder: Embedder) -> None:
    name = embedder.model
    assert isinstance(name, str) and name.strip() == name and name
    embedder.embed_documents(["touch the model"])
    embedder.embed_queries(["touch the model"])
    assert embedder.model == name


def test_queries_find_their_documents(embedder: Embedder) -> None:
    documents = ["green tea and oolong tea", "the database index uses pages on disk",
                 "a football match in the rain"]
    queries = ["which tea", "database index", "football"]
    scores = embedder.embed_queries(queries) @ embedder.embed_documents(documents).T
    assert list(scores.argmax(axis=1)) == [0, 1, 2], scores


def test_chinese_and_mixed_text(embedder: Embedder) -> None:
    texts = ["我喜欢喝茶", "我不喜欢咖啡", "I like 喝茶 with 朋友 on Sundays", "喝茶 tea 🍵"]
    documents = embedder.embed_documents(texts)
    queries = embedder.embed_queries(texts)
    for vectors in (documents, queries):
        assert vectors.shape == (4, embedder.dims)
        assert np.isfinite(vectors).all()
        _assert_unit_or_zero(vectors)
    assert _cosine(documents[0], documents[1]) < 0.999  # different texts, different vectors


def test_long_text_does_not_crash(embedder: Embedder) -> None:
    # ~4k characters, several times the local model's 512-token window (each window costs
    # real inference time, so more text proves nothing more)
    long_text = " ".join(f"word{i % 500} 记忆" for i in range(400))
    vectors = embedder.embed_documents([long_text, "short"])
    assert vectors.shape == (2, embedder.dims)
    assert np.isfinite(vectors).all()
    _assert_unit_or_zero(vectors)
