"""The fact vector cache: exact below ``ann_min_rows``, an inverted file from there on (its
recall against the exact scan, lookups by id across the indexed rows and the tail, rebuilds);
and graph search through it answering as the exact scan does on a small graph."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from remem.embed.fake import FakeEmbedder
from remem.graph import Graph
from remem.graph.rows import GraphRows
from remem.graph.vectors import VectorCache, train_centroids

MakeGraph = Callable[..., Graph]


def clustered(n: int, dims: int = 32, clusters: int = 20, seed: int = 1
              ) -> npt.NDArray[np.float32]:
    """Unit vectors around ``clusters`` centres (how real embeddings of topics spread)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dims))
    rows = centres[rng.integers(0, clusters, n)] + 0.35 * rng.standard_normal((n, dims))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


def loader(matrix: npt.NDArray[np.float32], start_id: int = 1
           ) -> Callable[[int], list[tuple[int, bytes]]]:
    rows = [(start_id + i, v.tobytes()) for i, v in enumerate(matrix)]
    return lambda after: [r for r in rows if r[0] > after]


def test_inverted_file_recall_lookups_tail_and_rebuild() -> None:
    data = clustered(4000)
    exact = VectorCache(ann_min_rows=10**9)
    ivf = VectorCache(ann_min_rows=1000, background=False)
    exact.refresh(loader(data[:3000]))
    ivf.refresh(loader(data[:3000]))
    assert not exact.approximate and ivf.approximate
    queries = clustered(50, seed=9)
    recall = np.mean([len({i for i, _ in exact.top(q, 10)} & {i for i, _ in ivf.top(q, 10)})
                      / 10 for q in queries])
    assert recall >= 0.9
    # scores are exact cosines, best first, ties by id
    for q in queries[:5]:
        hits = ivf.top(q, 10)
        assert hits == sorted(hits, key=lambda h: (-h[1], h[0]))
        for item_id, score in hits:
            assert abs(score - float(data[item_id - 1] @ q)) < 1e-5
    # rows written after the build are a tail, scanned exactly and found by id
    ivf.refresh(loader(data[:3500]))
    assert ivf.last_id == 3500 and ivf._lists is not None and ivf._lists.rows == 3000
    assert ivf.top(data[3400], 1)[0][0] == 3401
    wanted = [5, 2999, 3001, 3500, 99999]
    found = ivf.vectors(wanted)
    assert sorted(found) == [5, 2999, 3001, 3500]
    assert all(np.array_equal(found[i], data[i - 1]) for i in found)
    assert [i for i, _ in ivf.scores(queries[0], wanted)] == [5, 2999, 3001, 3500]
    # past a quarter more than indexed, the index is rebuilt over every row
    ivf.refresh(loader(data))
    assert ivf._lists is not None and ivf._lists.rows == 4000
    assert ivf.top(data[3999], 1)[0][0] == 4000


def test_a_background_build_keeps_rows_appended_meanwhile() -> None:
    """Searches scan exactly until the lists are built in a thread; rows written during the
    build end up behind them, none lost."""
    data = clustered(3000, seed=4)
    cache = VectorCache(ann_min_rows=1000)
    cache.refresh(loader(data[:2000]))
    assert cache.top(data[5], 1)[0][0] == 6  # answered at once, whatever the build's state
    cache.refresh(loader(data))  # may land before or after the build finishes
    cache.wait()
    cache.refresh(loader(data))  # nothing new; a rebuild may start (3000 > 2000 * 1.25)
    cache.wait()
    assert cache.approximate and cache.last_id == 3000
    assert sorted(cache.ids.tolist()) == list(range(1, 3001))
    held = cache.vectors(list(range(1, 3001)))
    assert len(held) == 3000 and all(np.array_equal(held[i], data[i - 1]) for i in (1, 2000,
                                                                                   3000))
    assert cache.top(data[2999], 1)[0][0] == 3000


def test_centroids_are_unit_vectors_near_the_clusters() -> None:
    data = clustered(2000, clusters=8)
    centroids = train_centroids(data, 8)
    assert centroids.shape == (8, 32)
    assert np.allclose(np.linalg.norm(centroids, axis=1), 1.0, atol=1e-5)
    # most rows sit much closer to their nearest centroid than to a random direction
    assert float(np.mean(np.max(data @ centroids.T, axis=1))) > 0.8


def test_search_through_the_inverted_file_answers_as_the_exact_scan(
        make_graph: MakeGraph) -> None:
    embedder = FakeEmbedder(64)
    ivf = make_graph(embedder=embedder, ann_min_rows=100)
    exact = make_graph(("t", "exact"), storage=ivf.storage, embedder=embedder,
                       ann_min_rows=10**9)
    rng = random.Random(3)
    names = [f"Person{i}" for i in range(40)]
    topics = ["solar", "coffee", "chess", "rockets", "wine", "poetry"]
    for graph in (ivf, exact):
        with graph._rows(True) as rows:
            assert isinstance(rows, GraphRows)
            ids = [rows.insert_entity(n, "person", [], 0.0, embedder.embed_documents([n])[0]).id
                   for n in names]
            r = random.Random(5)
            for _ in range(200):
                s, o = r.sample(range(len(names)), 2)
                text = f"{names[s]} talked with {names[o]} about {r.choice(topics)}"
                rows.insert_fact(ids[s], "talked_with", ids[o], None, text,
                                 1.0e9 + r.random() * 1e8, None, 1.0e9, None, 0,
                                 embedder.embed_documents([text])[0])
    for _ in range(10):
        query = f"What did {rng.choice(names)} say about {rng.choice(topics)}?"
        got = ivf.search(query, limit=10)
        want = exact.search(query, limit=10)
        assert [h.fact.fact for h in got] == [h.fact.fact for h in want], query
        # float32 products over a slice may round differently than over the whole matrix
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6)
    ivf._fact_vectors.wait()  # built in the background: searches so far may have been exact
    assert ivf._fact_vectors.approximate and not exact._fact_vectors.approximate
    query = "What did Person3 say about chess?"
    assert [h.fact.fact for h in ivf.search(query)] == [h.fact.fact for h in exact.search(query)]
