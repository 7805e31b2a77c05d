"""VectorIndex against NumPy brute force, across several matrix blocks, with removals; the
text hash map of the embedding cache."""

from __future__ import annotations

import numpy as np

from remem.store.vectors import TextHashes, VectorIndex, _smallest


def test_ranking_matches_brute_force_across_blocks() -> None:
    rng = np.random.default_rng(1)
    n = 20_000  # more than two blocks of 8192 rows
    vectors = rng.standard_normal((n, 8)).astype(np.float32)
    index = VectorIndex(8)
    for start in range(0, n, 3000):
        ids = list(range(start, min(start + 3000, n)))
        index.upsert_many(ids, ids, [("a", str(j % 7)) for j in ids], vectors[start : start + 3000])
    for j in range(0, n, 5):
        index.remove(j)
    index.upsert(n, n, ("a", "3"), vectors[10])  # reuses a freed row
    assert len(index) == n - n // 5 + 1
    query = vectors[3]
    scores = vectors @ query
    alive = [j for j in range(n) if j % 5]

    subset = [j for j in np.argsort(-scores) if j % 5 and j % 7 == 3]
    got = [item for item, _ in index.ranked_items(query, ("a", "3"))]
    # the re-added copy of row 10 ties with row 10 itself if 10 is in the subset; it is not
    assert got[:100] == [int(j) for j in _merge(subset, n, scores[10], scores)][:100]

    everything = [item for item, _ in index.ranked_items(query, ())]
    assert len(everything) == len(alive) + 1
    assert sorted(everything) == sorted([*alive, n])


def _merge(order: list[int], extra: int, extra_score: float, scores: np.ndarray) -> list[int]:
    """Insert ``extra`` (score ``extra_score``) into a list sorted by descending score."""
    out: list[int] = []
    placed = False
    for j in order:
        if not placed and extra_score > scores[j]:
            out.append(extra)
            placed = True
        out.append(int(j))
    return out if placed else [*out, extra]


def test_text_hashes_keep_every_copy_of_a_text() -> None:
    hashes = TextHashes()
    hashes.add([1, 2, 3], [b"a", b"b", b"a"])
    assert len(hashes) == 3 and hashes.ids_of([b"a", b"b", b"z"]) == [3, 2]
    hashes.remove([3, 99])  # the newest copy of "a" goes: the older one stands in
    assert hashes.ids_of([b"a"]) == [1]
    hashes.add([4], [b"a"])
    hashes.remove([1])  # an older copy goes: the newest stays
    assert hashes.ids_of([b"a"]) == [4]
    hashes.remove([4, 2])
    assert hashes.ids_of([b"a", b"b"]) == [] and len(hashes) == 0
    hashes.add([2], [b"c"])  # an id used again, for another text
    assert hashes.ids_of([b"b", b"c"]) == [2]


def test_smallest_is_exact_even_when_the_sample_misleads() -> None:
    rng = np.random.default_rng(3)
    for n, k in ((100_000, 256), (100_000, 1024), (30_000, 4096), (5_000, 256), (600, 256)):
        values = rng.standard_normal(n).astype(np.float32)
        values[rng.integers(0, n, n // 3)] = 0.5  # many ties
        got = _smallest(values, k)
        assert len(got) == k == len(set(got.tolist()))
        assert np.sort(values[got]).tolist() == np.sort(values)[:k].tolist()
    values = np.full(100_000, 1e9, dtype=np.float32)
    values[::48] = np.arange(len(values[::48]))  # the sample is all the small values: its
    got = _smallest(values, 256)  # cut lets 11 pass, fewer than 256, so all are partitioned
    assert np.sort(values[got]).tolist() == np.sort(values)[:256].tolist()
