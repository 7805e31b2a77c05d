"""Every piece of module-level state remem's threads share, raced.

tests/project/test_shared_state.py finds each such piece in ``src/remem`` (a container made at
import and written by a function, or a name a function rebinds with ``global``) and requires
a test here, or elsewhere, that races it. Each test starts its threads together on a barrier,
with Python's thread switch interval shortened so that they interleave often, and checks what
the threads got against what one thread alone gets: one shared object where there must be
one, every registration seen exactly once, no ``RuntimeError`` from a walk over a container
another thread is changing.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem import _http
from remem._sqlite import SQLiteConnections
from remem.background import kinds
from remem.background.access import AccessRecorder
from remem.background.access import _flush_all as flush_access_recorders
from remem.background.consolidation import register_consolidation_run, registered_run
from remem.background.jobs import NewJob
from remem.background.queue import JobQueue
from remem.context.assemble import (
    DEFAULT_ORDER,
    ContextRequest,
    register_section,
    registered_sections,
    resolve_sections,
    unregister_section,
)
from remem.context.sections import SummarySection
from remem.files.permissions import Policy
from remem.graph import Graph
from remem.memory.manager import FixedSchemaModel
from remem.memory.observers import observer_for, set_observer_factory
from remem.retrieval.tokenize import _rjieba
from remem.store import InMemoryStore, SQLiteStore
from remem.store import bad_records as bad
from remem.store.ann import _scan_pool
from remem.store.types import Item, validate_namespace
from remem.usage.recorder import UsageRecorder
from remem.usage.recorder import _flush_all as flush_usage_recorders
from tests.race_support import race

THREADS = 8


@pytest.fixture(autouse=True)
def _switch_often() -> Iterator[None]:
    """Threads switch every microsecond (5 ms by default), so a walk over a container meets
    another thread's change in a short test, as it would in hours of serving."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _race(work: Callable[[int], Any], threads: int = THREADS) -> list[Any]:
    """``work(i)`` in ``threads`` threads started together; their results (errors raise)."""
    return race(threads, work)


# -- registries filled by families while workers read them --------------------------------------


def test_job_kinds_registered_while_workers_build_their_handlers() -> None:
    """``handlers_for`` walks the kinds while a family registers more (a lazily imported
    module, in another thread): before the walk took a snapshot, it failed with
    "dictionary changed size during iteration"."""
    names = [f"race.kind.{i}" for i in range(400)]

    def factory(memory_for: Any, queue: Any) -> Callable[[Any], dict[str, Any]]:
        sum(range(50))  # a factory does some work: the walk yields to the writer meanwhile
        return lambda job: {}

    def work(me: int) -> int:
        if me == 0:
            for name in names:
                kinds.register_job_kind(name, factory)
            return len(names)
        seen = 0
        for _ in range(200):
            seen = max(seen, len(kinds.handlers_for(lambda tenant: None)))
        return seen

    try:
        _race(work)
        assert set(names) <= set(kinds.job_kinds())
        handlers = kinds.handlers_for(lambda tenant: None)
        assert set(names) <= set(handlers)
    finally:
        with kinds._LOADING:
            for name in names:
                kinds._KINDS.pop(name, None)


def test_kind_loaders_run_once_however_many_readers_ask_first() -> None:
    calls: list[int] = []
    for n in range(20):
        kinds.register_kind_loader(lambda n=n: calls.append(n))
    results = _race(lambda me: kinds.job_kinds())
    assert sorted(calls) == list(range(20))  # each loader once, none lost or repeated
    assert all(result == results[0] for result in results)


def test_consolidation_runs_registered_while_a_worker_looks_one_up() -> None:
    keys = [f"race_run_{i}" for i in range(300)]

    def run(memory: Any, job: Any, queue: Any) -> dict[str, Any]:
        return {}

    def work(me: int) -> int:
        if me == 0:
            for key in keys:
                register_consolidation_run(key, run)
            return 0
        found = 0
        for _ in range(300):
            found += registered_run({keys[-1]: 1}) is run
        return found

    from remem.background import consolidation

    try:
        _race(work)
        assert all(registered_run({key: 1}) is run for key in keys)
        assert registered_run({"namespace": ["x"]}) is None  # the memory consolidation
    finally:
        with consolidation._RUNS_LOCK:
            for key in keys:
                consolidation._RUNS.pop(key, None)


def test_context_sections_registered_while_others_assemble() -> None:
    names = [f"race_section_{i}" for i in range(200)]
    request = ContextRequest(query="tea", user_id="ada")

    def work(me: int) -> int:
        if me == 0:
            for name in names:
                register_section(SummarySection(name=name))
            for name in names[::2]:
                assert unregister_section(name)
            return 0
        longest = 0
        for _ in range(200):
            chosen = [s.name for s in resolve_sections(request)]
            assert chosen[:len(DEFAULT_ORDER)] == list(DEFAULT_ORDER)
            longest = max(longest, len(chosen))
        return longest

    try:
        _race(work)
        assert set(registered_sections()) >= set(names[1::2])
        assert not set(registered_sections()) & set(names[::2])
    finally:
        for name in names:
            unregister_section(name)


# -- per-database handles shared by every store of a process ------------------------------------


def test_one_write_lock_per_file_however_its_path_is_spelled(tmp_path: Path,
                                                             monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    spellings = ["race.db", str(tmp_path / "race.db"), f"./{'race.db'}",
                 str(tmp_path / "." / "race.db")]

    def work(me: int) -> Any:
        connections = SQLiteConnections(spellings[me % len(spellings)], owner="race")
        return connections._write_lock

    locks = _race(work, threads=16)
    assert len({id(lock) for lock in locks}) == 1


def test_queues_beside_one_in_memory_store_share_its_jobs() -> None:
    store = InMemoryStore()
    queues = _race(lambda me: JobQueue.beside(store))
    for queue in queues:
        queue.setup()
    job = queues[0].enqueue(NewJob("race.kind", {"n": 1}))
    assert all(queue.get(job.id).id == job.id for queue in queues)


def test_usage_counters_beside_one_in_memory_store_are_one_storage() -> None:
    from remem.usage.storage import usage_storage_of

    store = InMemoryStore()
    storages = _race(lambda me: usage_storage_of(store))
    assert len({id(storage) for storage in storages}) == 1
    assert usage_storage_of(InMemoryStore()) is not storages[0]  # another store: its own


def test_graphs_beside_one_file_share_one_storage(tmp_path: Path) -> None:
    from remem.graph import storage as graph_storage

    store = SQLiteStore(tmp_path / "graph.db")
    graphs = _race(lambda me: Graph.beside(store, ("graph", f"user{me}")))
    try:
        keys = {graph.storage.key for graph in graphs}
        assert len(keys) == 1
        [key] = keys
        assert graph_storage._SHARED[key][1] == THREADS  # every handle counted
        _race(lambda me: graphs[me].close())
        assert key not in graph_storage._SHARED  # the last close closed the storage
    finally:
        store.close()


def test_one_observer_per_store_while_the_factory_changes() -> None:
    """Readers ask for a store's observer while the factory is replaced (the access recorder
    is installed on import): each gets an observer the factory of its moment built, and a
    store keeps one observer until the factory changes."""
    made: list[Any] = []

    class Observer:
        def observe(self, notice: Any) -> None:
            pass

        def flush(self) -> None:
            pass

    def factory(store: Any) -> Observer:
        made.append(store)
        return Observer()

    stores = [InMemoryStore() for _ in range(4)]
    from remem.memory import observers

    before = observers._factory
    try:
        set_observer_factory(factory)
        got = _race(lambda me: [observer_for(stores[me % 4]) for _ in range(200)])
        for me, seen in enumerate(got):
            assert len({id(o) for o in seen}) == 1, me  # one observer per store
        assert len(made) == len(stores)  # built once each, however many asked at once

        def flip(me: int) -> None:
            for n in range(100):
                if me == 0:
                    set_observer_factory(factory if n % 2 else None)
                else:
                    found = observer_for(stores[me % 4])
                    assert found is None or isinstance(found, Observer)

        _race(flip)
    finally:
        set_observer_factory(before)


# -- recorders flushed at exit while others are made --------------------------------------------


def test_the_exit_flush_walks_recorders_while_threads_make_more(tmp_path: Path) -> None:
    queue = JobQueue.beside(InMemoryStore())
    queue.setup()
    store = InMemoryStore()
    kept: list[Any] = []

    def work(me: int) -> int:
        for _ in range(150):
            if me == 0:
                flush_usage_recorders()
                flush_access_recorders()
            elif me % 2:
                kept.append(UsageRecorder(queue))
            else:
                kept.append(AccessRecorder(store, queue=queue))
        return 0

    try:
        _race(work)
    finally:
        for recorder in kept:
            recorder.close()


# -- caches of computed values ------------------------------------------------------------------


def test_item_namespaces_validated_across_the_cache_limit() -> None:
    """Item namespaces are remembered once validated, up to a limit where the memory is
    cleared; threads crossing the limit together each get their own namespace back."""

    def work(me: int) -> int:
        for n in range(3000):
            namespace = ("race", f"t{me}", f"n{n}")
            item = Item(namespace, "k", {"v": n}, 0.0, 0.0)
            assert item.namespace == namespace
        return 0

    _race(work, threads=4)  # 12,000 namespaces: past the 10,000 limit
    with pytest.raises(Exception, match="namespace"):
        validate_namespace(("race", ""))


def test_fixed_schemas_are_built_once_and_handed_out_as_copies() -> None:
    class Facts(FixedSchemaModel):
        facts: list[str]

    def work(me: int) -> dict[str, Any]:
        schema = Facts.model_json_schema()
        schema["title"] = f"changed by {me}"  # a caller's change stays its own
        return Facts.model_json_schema()

    schemas = _race(work)
    assert all(schema == schemas[0] for schema in schemas)
    assert schemas[0]["title"] == "Facts"


def test_racing_apps_refuse_repeated_parameters_and_wrong_methods() -> None:
    """Each route's single-valued query parameters are remembered by route; apps built and
    dropped while others serve must never hand one route's names to another. A wrong
    method's 405 reads the OpenAPI schema for its ``Allow`` header: FastAPI's first build
    is not thread-safe, and apps building theirs together answered 500."""
    from fastapi.testclient import TestClient

    from remem.server import ServerConfig, create_app

    def work(me: int) -> tuple[int, ...]:
        app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
        try:
            with TestClient(app) as client:
                twice = client.get("/v1/jobs", params=[("limit", "1"), ("limit", "2")])
                once = client.get("/v1/jobs", params={"limit": "1"})
                listed = client.post("/v1/memories/list", json={"user_id": "a"})
                wrong = client.get("/v1/memories")
                assert "POST" in wrong.headers.get("allow", "")
                return (twice.status_code, once.status_code, listed.status_code,
                        wrong.status_code)
        finally:
            app.state.remem.close()

    assert set(_race(work, threads=4)) == {(422, 200, 200, 405)}


def test_a_file_policy_from_the_environment_is_read_once(tmp_path: Path,
                                                         monkeypatch: Any) -> None:
    from remem.server import ServerConfig, create_app
    from remem.server.routes_files import FILE_POLICY_ENV, file_policy

    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"rules": [{"effect": "deny", "operations": ["write"]}]}))
    monkeypatch.setenv(FILE_POLICY_ENV, str(policy))
    app = create_app(ServerConfig(db=":memory:", mcp=False, auth=False))
    try:
        got = _race(lambda me: file_policy(app.state.remem))
        assert len({id(p) for p in got}) == 1 and isinstance(got[0], Policy)
        assert got[0].rules[0].effect == "deny"
    finally:
        app.state.remem.close()


def test_each_server_keeps_the_file_policy_set_on_it() -> None:
    from remem.files.permissions import Rule
    from remem.server import ServerConfig, create_app
    from remem.server.routes_files import file_policy, set_file_policy

    apps = [create_app(ServerConfig(db=":memory:", mcp=False, auth=False)) for _ in range(4)]
    policies = [Policy((Rule("deny", paths=f"/t{n}/**"),)) for n in range(4)]

    def work(me: int) -> int:
        state = apps[me].state.remem
        for n in range(100):
            set_file_policy(state, policies[me])
            assert file_policy(state) is policies[me]  # never another server's
            if n % 10 == 9:
                set_file_policy(state, None)
                assert file_policy(state).rules == ()  # back to allowing everything
        return 0

    try:
        _race(work, threads=4)
    finally:
        for app in apps:
            app.state.remem.close()


def test_bad_records_counted_exactly_from_racing_readers(caplog: Any) -> None:
    before = bad.skipped_counts().get("memory", 0)
    heard: list[bad.BadRecord] = []
    lock = threading.Lock()

    class Listener:
        def hear(self, record: bad.BadRecord) -> None:
            with lock:
                heard.append(record)

    listener = Listener()
    bad.add_listener(listener.hear)

    def work(me: int) -> int:
        for n in range(100):
            bad.report(bad.BadRecord("memory", ("race", str(me)), f"k{n}", "ValueError: x"))
            if n % 10 == 0:
                bad.add_listener(lambda record: None)
        return 0

    with caplog.at_level(logging.ERROR, logger="remem"):  # the warnings: not the point here
        _race(work)
    assert bad.skipped_counts()["memory"] - before == THREADS * 100
    assert len(heard) == THREADS * 100


# -- names rebound by a function ----------------------------------------------------------------


def test_the_chinese_segmenter_is_imported_once_for_every_thread() -> None:
    modules = _race(lambda me: _rjieba())
    assert len({id(m) for m in modules}) == 1
    assert modules[0].cut("我喜欢喝茶")  # a working segmenter


def test_blocking_remote_requests_is_seen_whole_by_racing_checks() -> None:
    import httpx

    from remem.errors import UsageError

    was = _http.remote_requests_blocked()

    def work(me: int) -> int:
        refused = 0
        for n in range(200):
            if me == 0:
                _http.block_remote_requests(n % 2 == 0)
            try:
                _http.check_host_allowed(httpx.URL("https://example.com/v1"))
            except UsageError:
                refused += 1
            _http.check_host_allowed(httpx.URL("http://127.0.0.1:1/"))  # loopback: never
        return refused

    try:
        _race(work)
    finally:
        _http.block_remote_requests(was)


def test_the_scan_pool_is_made_once_for_every_thread() -> None:
    pools = _race(lambda me: _scan_pool())
    assert len({id(p) for p in pools}) == 1
    assert pools[0].submit(sum, [1, 2]).result() == 3  # a working pool
