"""Reads count as uses: search hits and gets add to a per-memory count and last-access time
(batched, off the reader's thread, never failing the read), on SQLite, PostgreSQL and in
memory; forgetting's retention score and the "lru" policy use them."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import time
from pathlib import Path

import pytest

from remem import FakeEmbedder
from remem.api import Memory
from remem.background.access import AccessRecorder, recorder_of
from remem.background.forgetting import Budget
from remem.background.queue import JobQueue
from remem.memory.observers import Touched
from tests.conftest import FakeClock
from tests.memory_support import make_store

DAY = 86400.0
_users = itertools.count()


def _memory(backend: str, tmp_path: Path, clock: FakeClock,
            request: pytest.FixtureRequest) -> Memory:
    if backend == "postgres":
        dsn = request.getfixturevalue("pg_database")
        mem = Memory.open(dsn, embedder=FakeEmbedder(), clock=clock)
    else:
        mem = Memory(make_store(backend, tmp_path), clock=clock, owns_store=True)
    assert mem.background.memory is mem  # reads are timed by this memory's clock from now
    return mem


@pytest.fixture
def clock() -> FakeClock:
    # records are stamped by the store's own clock (now): a fake one starts there too
    return FakeClock(time.time())


def _user() -> str:
    return f"reader{next(_users)}"  # PostgreSQL tests of this module share one schema


BACKENDS = ["memory", "file", "postgres"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_search_hits_and_gets_count_as_uses(backend: str, tmp_path: Path, clock: FakeClock,
                                            request: pytest.FixtureRequest) -> None:
    user = _user()
    with _memory(backend, tmp_path, clock, request) as mem:
        tea = mem.add("Drinks green tea", user_id=user, infer=False).changes[0].memory.id
        bike = mem.add("Rides a red bike", user_id=user, infer=False).changes[0].memory.id
        never = mem.add("Speaks Basque", user_id=user, infer=False).changes[0].memory.id
        assert mem.background.usage([tea, bike, never]) == {}  # writes are not uses
        mem.search("green tea", user_id=user, limit=1)
        clock.advance(60)
        mem.search("red bike", user_id=user, limit=1)
        mem.get(tea)
        mem.get_all(user_id=user)  # a listing is not a use
        usage = mem.background.usage([tea, bike, never])
        assert usage == {tea: (2, clock.now), bike: (1, clock.now)}
        clock.advance(60)
        mem.get(bike)
        assert mem.background.usage([bike]) == {bike: (2, clock.now)}


@pytest.mark.parametrize("backend", ["memory", "file"])
def test_async_reads_count_too(backend: str, tmp_path: Path, clock: FakeClock,
                               request: pytest.FixtureRequest) -> None:
    with _memory(backend, tmp_path, clock, request) as mem:
        tea = mem.add("Drinks green tea", user_id="ada", infer=False).changes[0].memory.id

        async def read() -> None:
            await mem.asearch("tea", user_id="ada")
            await mem.aget(tea)

        asyncio.run(read())
        assert mem.background.usage([tea]) == {tea: (2, clock.now)}


def test_one_write_per_batch_of_reads(tmp_path: Path, clock: FakeClock) -> None:
    with _memory("file", tmp_path, clock, pytest.FixtureRequest) as mem:  # type: ignore[arg-type]
        ids = [mem.add(f"fact number {n}", user_id="ada", infer=False).changes[0].memory.id
               for n in range(5)]
        recorder = recorder_of(mem.store)
        assert isinstance(recorder, AccessRecorder)
        recorder.flush()
        before = recorder.recorded
        for _ in range(20):
            mem.search("fact number", user_id="ada", limit=5)
        recorder.flush()
        assert recorder.recorded - before == 100  # 20 searches x 5 hits
        assert mem.background.usage(ids) == {i: (20, clock.now) for i in ids}


def test_counting_never_fails_a_read(tmp_path: Path, clock: FakeClock) -> None:
    with _memory("file", tmp_path, clock, pytest.FixtureRequest) as mem:  # type: ignore[arg-type]
        tea = mem.add("Drinks green tea", user_id="ada", infer=False).changes[0].memory.id
        # a recorder whose database cannot be opened (its path is a directory)
        broken = AccessRecorder(mem.store, clock=clock,
                                queue=JobQueue.open(tmp_path))
        mem.search("tea", user_id="ada")
        broken.observe(Touched((tea,)))
        broken.flush()
        assert (broken.errors, broken.recorded) == (1, 0)  # logged and dropped
        # a read whose notice cannot be handed on at all still answers
        assert [h.memory.id for h in mem.search("tea", user_id="ada")] == [tea]
        assert mem.background.usage([tea]) == {tea: (2, clock.now)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_uses_keep_a_memory_over_budget(backend: str, tmp_path: Path, clock: FakeClock,
                                        request: pytest.FixtureRequest) -> None:
    user = _user()
    with _memory(backend, tmp_path, clock, request) as mem:
        read = mem.add("Drinks green tea", user_id=user, infer=False).changes[0].memory.id
        unread = mem.add("Rides a red bike", user_id=user, infer=False).changes[0].memory.id
        for _ in range(10):
            mem.search("green tea", user_id=user, limit=1)
        # the unread one is newer by a day, yet the uses of the other outweigh that
        clock.advance(DAY)
        mem.update(unread, "Rides a blue bike")
        mem.background.enforce_budget(Budget(max_memories=1, consolidate_first=False),
                                      user_id=user)
        [run] = mem.background.run_due()
        assert run.result is not None and run.result["evicted"] == [unread]
        assert [m.id for m in mem.get_all(user_id=user).memories] == [read]


@pytest.mark.parametrize("backend", ["memory", "postgres"])
def test_lru_evicts_the_least_recently_read(backend: str, tmp_path: Path, clock: FakeClock,
                                            request: pytest.FixtureRequest) -> None:
    user = _user()
    with _memory(backend, tmp_path, clock, request) as mem:
        old = mem.add("Drinks green tea", user_id=user, infer=False).changes[0].memory.id
        clock.advance(DAY)
        new = mem.add("Rides a red bike", user_id=user, infer=False).changes[0].memory.id
        clock.advance(DAY)
        mem.get(old)  # the older memory was read last
        mem.background.enforce_budget(
            Budget(max_memories=1, consolidate_first=False, policy="lru"), user_id=user)
        [run] = mem.background.run_due()
        assert run.result is not None and run.result["evicted"] == [new]
        [event] = [e for e in mem.history(new) if e.op == "invalidate"]
        assert "least recently used" in event.reason


def test_reads_over_http_count_for_the_tenant(tmp_path: Path) -> None:
    import httpx

    from remem.server import ServerConfig, create_app
    from remem.server.routes_jobs import jobs_queue
    from remem.server.state import Principal
    from remem.testing.server import ThreadedServer

    app = create_app(ServerConfig(db=tmp_path / "server.db", embedder=FakeEmbedder(),
                                  mcp=False))
    key = app.state.remem.keys.create("acme")[0]
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with ThreadedServer(app) as server:
            added = httpx.post(f"{server.url}/v1/memories", headers=headers,
                               json={"messages": "Drinks green tea", "user_id": "ada",
                                     "infer": False}).json()
            memory_id = added["changes"][0]["memory"]["id"]
            for _ in range(3):
                found = httpx.post(f"{server.url}/v1/memories/search", headers=headers,
                                   json={"query": "tea", "user_id": "ada"})
                assert found.status_code == 200
            assert httpx.get(f"{server.url}/v1/memories/{memory_id}",
                             headers=headers).status_code == 200
        memory = app.state.remem.memory_for(Principal(tenant="acme"))
        [(uses, _)] = memory.background.usage([memory_id]).values()
        assert uses == 4
    finally:
        jobs_queue(app).close()
        app.state.remem.close()


def test_closing_the_memory_writes_its_reads_first(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                                   ) -> None:
    """``Memory.close`` flushes the store's recorder before the store goes: the reads are in
    the file when ``close`` returns (not written by the recorder's thread later, to a file
    that may be gone by then: "no such table: remem_access")."""
    db = tmp_path / "m.db"
    mem = Memory.open(db, embedder=FakeEmbedder())
    tea = mem.add("Drinks green tea", user_id="u", infer=False).changes[0].memory.id
    mem.get(tea)
    mem.search("green tea", user_id="u", limit=1)
    mem.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT uses FROM remem_access WHERE memory_id = ?",
                            (tea,)).fetchall() == [(2,)]
    db.unlink()
    time.sleep(0.2)  # past the recorder's window: its thread has nothing left to write
    assert "could not record" not in caplog.text
