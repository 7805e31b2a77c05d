"""Two or more writers reconciling one namespace at once never lose an update: with threads
sharing a store, and with processes sharing a SQLite file."""

from __future__ import annotations

import itertools
import multiprocessing
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.llm import ChatRequest, ScriptedModel
from remem.memory import MemoryRecord
from remem.store import BaseStore
from tests.memory_support import make_store, rule_answer

CITIES = ["Paris", "Rome", "Oslo", "Lima"]


def city_memories(store: BaseStore) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    mem = Memory(store)
    everything = [h.memory for h in mem.search(user_id="alice", include_invalid=True,
                                               limit=100)]
    lives = [m for m in everything if m.text.startswith("Lives in")]
    return [m for m in lives if m.status == "current"], lives


def check_city_chain(store: BaseStore, writers: int) -> None:
    """Berlin, then every writer's city, each superseding the previous one: one current."""
    current, lives = city_memories(store)
    assert len(current) == 1, [m.text for m in lives]
    assert len(lives) == writers + 1
    by_id = {m.id: m for m in lives}
    chain = [current[0]]
    while chain[-1].supersedes:
        chain.append(by_id[chain[-1].supersedes])
    assert [m.text for m in chain][-1] == "Lives in Berlin"
    assert len(chain) == writers + 1  # nobody's move was lost or overwritten
    assert {m.text for m in chain[:-1]} == {f"Lives in {c}" for c in CITIES[:writers]}


def synced_model(barrier: Any) -> ScriptedModel:
    """Answers correctly, but every writer's first decision waits for the others, so all of
    them decide on the same state and then race to write."""
    local = threading.local()

    def answer(request: ChatRequest) -> dict[str, Any]:
        if not getattr(local, "waited", False):
            local.waited = True
            barrier.wait(timeout=30)
        return rule_answer(request)

    return ScriptedModel(default=answer)


@pytest.fixture(params=["file", "postgres"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    """A store several threads share: a SQLite file, or PostgreSQL (batches at READ
    COMMITTED, so the write lock's gate row is what queues writers)."""
    if request.param == "file":
        store = make_store("file", tmp_path)
    else:
        from remem.store import IndexConfig, KeywordConfig
        from remem.store.postgres import PostgresStore

        dsn = request.getfixturevalue("pg_database")
        schema = f"mem_{next(_schemas)}"
        store = PostgresStore(dsn, schema=schema, pool_max_size=8,
                              index=IndexConfig(FakeEmbedder(), fields=("text",)),
                              keyword=KeywordConfig(fields=("text",)))
        store.setup()
    yield store
    store.close()


_schemas = itertools.count()


def test_threads_adding_distinct_facts_lose_none(shared_store: BaseStore) -> None:
    store = shared_store
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        mem = Memory(store, llm=synced_model(barrier))
        try:
            for i in range(3):
                mem.add(f"Collects stamps from country {n}-{i}", user_id="alice")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    texts = sorted(h.memory.text for h in Memory(store).search(user_id="alice", limit=100))
    assert texts == sorted(f"Collects stamps from country {n}-{i}"
                           for n in range(6) for i in range(3))


def test_threads_moving_city_at_once_supersede_in_a_chain(shared_store: BaseStore) -> None:
    store = shared_store
    Memory(store, llm=ScriptedModel(default=rule_answer)).add("I live in Berlin",
                                                              user_id="alice")
    writers = 3
    barrier = threading.Barrier(writers)
    results: list[Any] = []

    def writer(city: str) -> None:
        results.append(Memory(store, llm=synced_model(barrier)).add(
            f"I moved to {city}", user_id="alice"))

    threads = [threading.Thread(target=writer, args=(c,)) for c in CITIES[:writers]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == writers
    # all decided on Berlin; all but the first writer found it stale and decided again
    assert sorted(r.write_attempts for r in results)[0] == 1
    assert sum(r.usage.calls for r in results) > writers
    check_city_chain(store, writers)


def process_writer(path: str, city: str, barrier: Any) -> None:
    store = make_store("file", Path(path).parent)
    mem = Memory(store, llm=synced_model(barrier))
    # the notes grow the namespace past what a search shows the model, and the fake
    # embedder ranks at random: show every memory, so a move always sees the current city
    # and the test is about the lock, not about retrieval
    mem.formation.search_limit = mem.formation.max_candidates = 100
    mem.add(f"I moved to {city}", user_id="alice")
    for i in range(3):
        mem.add(f"{city} note {i}", user_id="alice")
    store.close()


@pytest.mark.slow
def test_processes_sharing_a_sqlite_file_lose_no_update(tmp_path: Path) -> None:
    store = make_store("file", tmp_path)
    Memory(store, llm=ScriptedModel(default=rule_answer)).add("I live in Berlin",
                                                              user_id="alice")
    writers = 3
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers)
    processes = [context.Process(target=process_writer,
                                 args=(str(tmp_path / "memories.db"), city, barrier))
                 for city in CITIES[:writers]]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * writers
    check_city_chain(store, writers)
    notes = sorted(h.memory.text for h in Memory(store).search(user_id="alice", limit=100)
                   if "note" in h.memory.text)
    assert notes == sorted(f"{c} note {i}" for c in CITIES[:writers] for i in range(3))


def test_the_last_attempt_decides_while_holding_the_lock() -> None:
    store = make_store("memory")
    held: list[int] = []

    def answer(request: ChatRequest) -> dict[str, Any]:
        held.append(len(store.search(("_remem", "locks"), limit=10)))
        return rule_answer(request)

    mem = Memory(store, llm=ScriptedModel(default=answer))
    mem.add("I live in Berlin", user_id="alice")
    mem.formation.max_attempts = 1  # no optimistic attempt left: decide under the lock
    result = mem.add("I moved to Oslo", user_id="alice")
    assert held == [0, 1]
    assert [c.op for c in result.changes] == ["invalidate", "add"]
    assert store.search(("_remem", "locks")) == []  # released with the write
