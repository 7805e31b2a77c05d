"""Two processes x eight threads writing and reading the same namespaces of one PostgreSQL
store: no lost write, no deadlock, no duplicate-key (or any other) error reaching the caller."""

from __future__ import annotations

import multiprocessing
import random
import threading
import traceback
from typing import Any

import pytest

from remem.embed import FakeEmbedder
from remem.store import DeleteOp, GetOp, IndexConfig, PutOp, SearchOp
from remem.store.postgres import PostgresStore

PROCESSES = 2
THREADS = 8
ROUNDS = 8
HOT_KEYS = [f"hot{i}" for i in range(6)]
NAMESPACES = [("users", "shared"), ("users", "shared", "notes")]
SCHEMA = "concurrency"


def _store(dsn: str) -> PostgresStore:
    return PostgresStore(dsn, schema=SCHEMA, index=IndexConfig(FakeEmbedder(16), fields=("text",)),
                         pool_max_size=THREADS)


def _thread(store: PostgresStore, worker: str, errors: list[str]) -> None:
    rng = random.Random(worker)
    try:
        for r in range(ROUNDS):
            ns = NAMESPACES[r % 2]
            hot = rng.sample(HOT_KEYS, 3)  # the same rows, in a different order per thread
            ops: list[Any] = [
                PutOp(ns, f"{worker}-{r}", {"text": f"note {worker} {r}", "w": worker, "r": r}),
                *(PutOp(ns, key, {"text": f"hot by {worker}", "w": worker, "r": r})
                  for key in hot),
                GetOp(ns, hot[0]),
                SearchOp(ns, query=f"note {worker}", limit=5),
            ]
            if r % 5 == 4:
                ops.append(DeleteOp(ns, rng.choice(HOT_KEYS)))
            results = store.batch(ops)
            got = results[len(hot) + 1]
            # read-your-writes inside the batch, whatever the other writers did
            assert got is not None and got.value["w"] == worker, got  # type: ignore[union-attr]
            store.search(NAMESPACES[0], filter={"r": {"$gte": 0}}, limit=10)
    except BaseException:
        errors.append(f"{worker}: {traceback.format_exc()}")


def _process(dsn: str, index: int, queue: Any) -> None:
    store = _store(dsn)
    errors: list[str] = []
    threads = [threading.Thread(target=_thread, args=(store, f"p{index}t{t}", errors))
               for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    if any(thread.is_alive() for thread in threads):
        errors.append(f"p{index}: a thread did not finish in 240 s (deadlock?)")
    store.close()
    queue.put(errors)


@pytest.mark.slow
def test_two_processes_eight_threads_lose_nothing(pg_database: str) -> None:
    setup = _store(pg_database)
    setup.setup()
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    procs = [context.Process(target=_process, args=(pg_database, i, queue))
             for i in range(PROCESSES)]
    for proc in procs:
        proc.start()
    errors = [e for _ in procs for e in queue.get(timeout=300)]
    for proc in procs:
        proc.join(timeout=30)
    assert errors == []
    try:
        # every unique write is there, exactly once
        keys = {item.key for item in setup.iter_items(("users",))}
        for p in range(PROCESSES):
            for t in range(THREADS):
                assert {f"p{p}t{t}-{r}" for r in range(ROUNDS)} <= keys
        # each hot key that survived holds one writer's complete value (no torn write)
        for ns in NAMESPACES:
            for key in HOT_KEYS:
                item = setup.get(ns, key)
                if item is not None:
                    assert item.value["text"] == f"hot by {item.value['w']}"
        # keyword and vector indexes agree with the rows: no duplicate or orphan entries
        hits = setup.search(("users",), query="note", mode="keyword", limit=1000)
        assert len(hits) == len({(h.namespace, h.key) for h in hits}) == \
            PROCESSES * THREADS * ROUNDS
        vector_hits = setup.search(("users",), query="note", mode="vector", limit=1000)
        assert len({(h.namespace, h.key) for h in vector_hits}) == len(vector_hits)
    finally:
        setup.close()
