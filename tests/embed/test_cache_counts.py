"""EmbedCounts under threads: every count lands, however many threads add at once. (On
CPython 3.11 the GIL happens to keep a dict item's += whole, so a lock-free version passes
here too; the lock is for builds and versions where it does not, and these tests pin the
totals either way.)"""

from __future__ import annotations

import threading

from remem.embed import FakeEmbedder
from remem.embed.cache import EmbedCounts
from remem.store import IndexConfig, open_store


def test_concurrent_adds_lose_no_count() -> None:
    counts, threads, adds = EmbedCounts(), 8, 5_000
    barrier = threading.Barrier(threads)

    def add() -> None:
        barrier.wait()
        for _ in range(adds):
            counts.add(embedded=1, cached=2)

    workers = [threading.Thread(target=add) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counts.snapshot() == {"embedded": threads * adds, "cached": 2 * threads * adds}


def test_a_store_searched_from_threads_counts_every_query() -> None:
    threads, queries = 6, 60
    with open_store(":memory:", index=IndexConfig(FakeEmbedder(), fields=("text",))) as store:
        store.put(("n",), "a", {"text": "green tea"})
        barrier = threading.Barrier(threads)

        def search(worker: int) -> None:
            barrier.wait()
            for n in range(queries):  # each query text once: embedded, never cached
                store.search(("n",), query=f"tea {worker} {n}", limit=1)

        workers = [threading.Thread(target=search, args=(w,)) for w in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert store.embed_counts["embedded"] == 1 + threads * queries  # the put's text too
