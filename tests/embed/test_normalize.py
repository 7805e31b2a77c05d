"""Unit vectors from any finite embedder output (issue 32, item 5): an embedder answering
with values near float32's limit (3e38) kept its direction, where the float32 norm overflowed
and a zero vector was stored; NaN or infinity is an ``EmbeddingError`` naming the embedder,
on SQLite and PostgreSQL and in the graph alike."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from remem.embed import FakeEmbedder, normalize_rows
from remem.errors import EmbeddingError
from remem.graph import Graph, PostgresGraphStorage, SQLiteGraphStorage
from remem.llm import ScriptedModel
from remem.store import IndexConfig, open_store
from tests.graph.scripts import E, F, answer


class ScaledEmbedder:
    """The fake embedder's vectors, each scaled so its largest value is ``top`` (float32)."""

    def __init__(self, top: float, name: str = "scaled") -> None:
        self.inner = FakeEmbedder(dims=64)
        self.top = top
        self.name = name

    @property
    def model(self) -> str:
        return self.name

    @property
    def dims(self) -> int:
        return self.inner.dims

    def _scaled(self, vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        biggest = np.abs(vectors).max(axis=1, keepdims=True)
        biggest[biggest == 0] = 1.0
        with np.errstate(over="ignore"):  # top=inf scales to infinities on purpose
            return (vectors.astype(np.float64) / biggest * self.top).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._scaled(self.inner.embed_documents(texts))

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._scaled(self.inner.embed_queries(texts))


def test_rows_keep_their_direction_whatever_their_scale() -> None:
    direction = np.array([[3.0, -4.0, 0.0]])
    for scale in (3e38 / 4, 1e-40, 1.0, 1e300):
        assert np.allclose(normalize_rows(direction * scale), [[0.6, -0.8, 0.0]]), scale
    huge = np.full((2, 384), 3e38, dtype=np.float32)
    assert np.allclose(np.linalg.norm(normalize_rows(huge), axis=1), 1.0)
    assert normalize_rows([[0.0, 0.0]]).tolist() == [[0.0, 0.0]]  # zero stays zero
    assert normalize_rows(np.zeros((0, 3))).shape == (0, 3)
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(EmbeddingError, match=r"^embedder 'm' returned NaN or infinite "
                                                 r"values \(row 1 of 2\)"):
            normalize_rows([[1.0, 0.0], [bad, 1.0]], model="m")


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_database"))
    return str(tmp_path / "vectors.db")


def test_huge_vectors_are_stored_as_unit_vectors(location: str) -> None:
    texts = ["green tea in the morning", "a bicycle with a flat tyre", "rain over Berlin"]
    scores = {}
    for top in (1.0, 3e38):
        schema = f"scaled_{secrets.token_hex(3)}"
        kwargs = {"schema": schema} if location.startswith("postgresql") else {}
        path = location if kwargs else f"{location}.{schema}"
        store = open_store(path, index=IndexConfig(ScaledEmbedder(top), fields=("text",)),
                           keyword=False, **kwargs)
        try:
            for n, text in enumerate(texts):
                store.put(("docs",), f"d{n}", {"text": text})
            hits = store.search(("docs",), query="green tea in the morning", limit=3)
            scores[top] = [(hit.key, round(hit.score or 0.0, 5)) for hit in hits]
        finally:
            store.close()
    assert scores[3e38][0] == ("d0", 1.0)  # the same text: cosine 1, not 0 (a zero vector)
    assert scores[3e38] == scores[1.0]


def test_non_finite_vectors_are_refused_naming_the_embedder(location: str) -> None:
    kwargs = {"schema": f"inf_{secrets.token_hex(3)}"} if location.startswith(
        "postgresql") else {}
    store = open_store(location, index=IndexConfig(ScaledEmbedder(np.inf, "broken-7"),
                                                   fields=("text",)), **kwargs)
    try:
        with pytest.raises(EmbeddingError, match="embedder 'broken-7' returned NaN or "
                                                 "infinite values"):
            store.put(("docs",), "d", {"text": "tea"})
        assert store.get(("docs",), "d") is None
    finally:
        store.close()


def test_the_graph_normalises_huge_vectors_and_refuses_non_finite_ones(location: str) -> None:
    def graph_of(embedder: ScaledEmbedder) -> Graph:
        storage = PostgresGraphStorage(location) if location.startswith("postgresql") else \
            SQLiteGraphStorage(location)
        model = ScriptedModel(default=answer(
            [E("Ada"), E("Acme", "organization")],
            [F("Ada", "works_at", "Acme", "Ada works at Acme")]))
        return Graph(storage, ("graph", "vectors", secrets.token_hex(4)), model=model,
                     embedder=embedder)

    found = {}
    for top in (1.0, 3e38):
        with graph_of(ScaledEmbedder(top)) as graph:
            graph.ingest("Ada works at Acme.")
            hits = graph.search("Ada works at Acme", limit=1)
            found[top] = [(h.fact.fact, round(h.score, 5)) for h in hits]
    assert found[3e38] == found[1.0] and found[1.0][0][0] == "Ada works at Acme"
    with graph_of(ScaledEmbedder(np.inf, "broken-8")) as graph, \
            pytest.raises(EmbeddingError, match="embedder 'broken-8' returned NaN"):
        graph.ingest("Ada works at Acme.")
