"""Stored per-namespace budgets: kept in the database, checked after every write; a write
that takes a namespace over its budget queues (durably, once) a forget job that brings it
back, each eviction undoable. Python (SQLite file, PostgreSQL, memory), HTTP and the CLI."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from remem import FakeEmbedder
from remem.api import Memory
from remem.background.access import recorder_of
from remem.background.budgets import Budgets
from remem.background.forgetting import FORGET, Budget
from remem.background.queue import JobQueue
from remem.cli import cli
from remem.errors import InvalidInputError
from remem.server import ServerConfig, create_app
from remem.server.routes_jobs import jobs_queue
from remem.server.state import Principal
from remem.testing.server import ThreadedServer
from tests.conftest import FakeClock
from tests.memory_support import make_store

_users = itertools.count()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(time.time())  # records carry the store's own (real) timestamps


def _memory(backend: str, tmp_path: Path, clock: FakeClock,
            request: pytest.FixtureRequest) -> Memory:
    if backend == "postgres":
        return Memory.open(request.getfixturevalue("pg_database"), embedder=FakeEmbedder(),
                           clock=clock)
    return Memory(make_store(backend, tmp_path), clock=clock, owns_store=True)


def _checked(mem: Memory) -> None:
    """Wait for the budget checks of the writes so far (they run off the writer's thread)."""
    recorder = recorder_of(mem.store)
    assert recorder is not None
    recorder.flush()


def _forget_jobs(mem: Memory, status: str | None = None) -> list[Any]:
    return [j for j in mem.background.queue.list_jobs(kind=FORGET, limit=1000)
            if status is None or j.status == status]


@pytest.mark.parametrize("backend", ["memory", "file", "postgres"])
def test_writes_over_budget_queue_one_run_that_restores_it(
        backend: str, tmp_path: Path, clock: FakeClock,
        request: pytest.FixtureRequest) -> None:
    user = f"budget{next(_users)}"
    with _memory(backend, tmp_path, clock, request) as mem:
        stored = mem.background.set_budget(user_id=user, max_memories=3)
        assert stored.namespace == ("memories", "user", user)
        assert stored.budget.max_memories == 3
        for n in range(3):
            mem.add(f"fact number {n} about {user}", user_id=user, infer=False)
        _checked(mem)
        assert _forget_jobs(mem) == []  # at the budget, not over it
        for n in range(3, 8):
            clock.advance(60)
            mem.add(f"fact number {n} about {user}", user_id=user, infer=False,
                    metadata={"importance": 0.9})
        _checked(mem)
        # five writes over the budget: one pending run (durable, in the queue)
        [pending] = _forget_jobs(mem, "queued")
        assert pending.payload["max_memories"] == 3
        assert pending.payload["namespace"] == ["memories", "user", user]
        done = mem.background.run_due()
        _checked(mem)  # the run's own evictions are writes: checked like any other
        done += mem.background.run_due()
        runs = [j for j in done if j.kind == FORGET]
        assert runs[0].id == pending.id
        # a run queued while the first was evicting finds the namespace within budget
        assert all(r.result is not None and r.result["evicted"] == [] for r in runs[1:])
        report = mem.background.queue.get(pending.id).result
        assert report is not None and (report["before"], report["after"]) == (8, 3)
        current = mem.get_all(user_id=user).memories
        # the three oldest, least important went first
        assert sorted(r.text for r in current) == [f"fact number {n} about {user}"
                                                   for n in range(5, 8)]
        evicted = report["evicted"]
        assert len(evicted) == 5
        [event] = [e for e in mem.history(evicted[0]) if e.op == "invalidate"]
        assert event.actor == "forgetting"
        mem.undo(event.id)  # every eviction is undoable
        assert mem.get(evicted[0]).invalid_at is None
        assert len(mem.get_all(user_id=user).memories) == 4
        _checked(mem)  # the undo is a write too: over again, another run is queued
        [again] = _forget_jobs(mem, "queued")
        assert again.id not in {r.id for r in runs}


def test_budgets_are_stored_in_the_database(tmp_path: Path, clock: FakeClock) -> None:
    db = tmp_path / "memory.db"
    with Memory.open(db, embedder=FakeEmbedder(), clock=clock) as mem:
        mem.background.set_budget(Budget(max_tokens=50, policy="lru"), user_id="ada")
        mem.background.set_budget(user_id="bo", max_memories=10)
    with Memory.open(db, embedder=FakeEmbedder(), clock=clock) as mem:
        found = {b.namespace[-1]: b.budget for b in mem.background.budgets.all()}
        assert found["ada"].max_tokens == 50 and found["ada"].policy == "lru"
        assert found["bo"].max_memories == 10
        # a write to the namespace of a budget set by another process is checked too
        for n in range(12):
            mem.add(f"item {n} of bo", user_id="bo", infer=False)
        _checked(mem)
        [job] = _forget_jobs(mem, "queued")
        assert job.payload["namespace"][-1] == "bo"
        assert mem.background.budgets.delete(("memories", "user", "ada"))
        assert not mem.background.budgets.delete(("memories", "user", "ada"))
        assert [b.namespace[-1] for b in mem.background.budgets.all()] == ["bo"]


def test_setting_a_budget_checks_the_namespace_at_once(clock: FakeClock) -> None:
    with Memory(make_store("memory"), clock=clock, owns_store=True) as mem:
        for n in range(4):
            mem.add(f"item {n}", user_id="ada", infer=False)
        mem.background.set_budget(user_id="ada", max_memories=2, policy="lru")
        [job] = _forget_jobs(mem, "queued")
        mem.background.run_due()
        assert mem.background.queue.get(job.id).status == "done"
        assert len(mem.get_all(user_id="ada").memories) == 2
        assert mem.background.queue.get(job.id).status == "done"


def test_bad_budgets_name_the_field(clock: FakeClock) -> None:
    with Memory(make_store("memory"), clock=clock, owns_store=True) as mem:
        with pytest.raises(InvalidInputError, match="max_memories"):
            mem.background.set_budget(user_id="ada", max_memories=-1)
        with pytest.raises(InvalidInputError, match="policy"):
            mem.background.set_budget(user_id="ada", max_memories=1, policy="fifo")
        with pytest.raises(InvalidInputError, match="max_memories or max_tokens"):
            mem.background.set_budget(user_id="ada")
        with pytest.raises(InvalidInputError, match="namespace"):
            Budgets(JobQueue.in_memory()).set((), Budget(max_memories=1))
        assert mem.background.budgets.all() == []


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, list[str], Any]]:
    app = create_app(ServerConfig(db=tmp_path / "server.db", embedder=FakeEmbedder(),
                                  mcp=False))
    keys = [app.state.remem.keys.create(f"tenant{n}")[0] for n in range(2)]
    with ThreadedServer(app) as server:
        yield server.url, keys, app
    jobs_queue(app).close()
    app.state.remem.close()


def test_budgets_over_http_per_tenant(served: tuple[str, list[str], Any]) -> None:
    url, (key, other_key), app = served
    mine = {"Authorization": f"Bearer {key}"}
    theirs = {"Authorization": f"Bearer {other_key}"}
    answer = httpx.put(f"{url}/v1/budgets", headers=mine,
                       json={"user_id": "ada", "max_memories": 2, "policy": "lru",
                             "consolidate_first": False})
    assert answer.status_code == 200, answer.text
    assert answer.json()["namespace"] == ["memories", "user", "ada"]
    assert httpx.get(f"{url}/v1/budgets", headers=theirs).json() == {"budgets": []}
    bad = httpx.put(f"{url}/v1/budgets", headers=mine, json={"user_id": "ada",
                                                            "max_memories": -3})
    assert bad.status_code in (400, 422) and "max_memories" in bad.text
    empty = httpx.put(f"{url}/v1/budgets", headers=mine, json={"user_id": "ada"})
    assert empty.status_code == 422 and "max_memories or max_tokens" in empty.text
    for n in range(4):
        added = httpx.post(f"{url}/v1/memories", headers=mine,
                           json={"messages": f"item {n}", "user_id": "ada", "infer": False})
        assert added.status_code == 200, added.text
    _checked(app.state.remem.memory_for(Principal(tenant="tenant0")))
    jobs = httpx.get(f"{url}/v1/jobs", headers=mine, params={"kind": FORGET}).json()["jobs"]
    assert [j["status"] for j in jobs] == ["queued"]
    assert httpx.get(f"{url}/v1/jobs", headers=theirs,
                     params={"kind": FORGET}).json()["jobs"] == []
    listed = httpx.get(f"{url}/v1/budgets", headers=mine).json()["budgets"]
    assert [(b["max_memories"], b["policy"]) for b in listed] == [(2, "lru")]
    gone = httpx.delete(f"{url}/v1/budgets", headers=mine, params={"user_id": "ada"})
    assert gone.json() == {"deleted": True}
    assert httpx.delete(f"{url}/v1/budgets", headers=mine,
                        params={"user_id": "ada"}).json() == {"deleted": False}


def test_budget_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        for n in range(3):
            mem.add(f"item {n}", user_id="ada", infer=False)
    runner = CliRunner()
    result = runner.invoke(cli, ["jobs", "budget", "set", "--db", db, "--user", "ada",
                                 "--max-memories", "1", "--no-consolidate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["budget"]["max_memories"] == 1 and data["budget"]["consolidate_first"] is False
    listed = runner.invoke(cli, ["jobs", "budget", "ls", "--db", db])
    assert "memories.user.ada: max_memories=1 policy=retention no-consolidate" in listed.stdout
    bad = runner.invoke(cli, ["jobs", "budget", "set", "--db", db, "--user", "ada"])
    assert bad.exit_code != 0 and "max_memories or max_tokens" in bad.output
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        runs = mem.background.run_due()
        # the run `budget set` queued; a check made meanwhile (a write or a read count
        # recorded while the namespace still held 3) may queue one more, which finds the
        # namespace within its budget and evicts nothing
        [run] = [r for r in runs if r.id == data["job_id"]]
        assert run.result is not None
        assert (run.result["before"], run.result["after"]) == (3, 1)
        for later in runs:
            if later.id != run.id:
                assert later.result is not None and later.result["before"] == 1, later
                assert later.result["after"] == 1, later
    removed = runner.invoke(cli, ["jobs", "budget", "rm", "--db", db, "--user", "ada"])
    assert removed.exit_code == 0 and "dropped" in removed.stdout
    missing = runner.invoke(cli, ["jobs", "budget", "rm", "--db", db, "--user", "ada"])
    assert missing.exit_code != 0 and "has no budget" in missing.output


def test_a_write_checked_after_its_store_closed_still_queues_a_run(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Memory.open(db, embedder=FakeEmbedder()) as owner:
        owner.background.set_budget(Budget(max_memories=1, consolidate_first=False),
                                    user_id="ada")
    # a store closed by its owner directly (not by Memory.close, which flushes the recorder
    # first) before the recorder's checks ran
    store = Memory.open(db, embedder=FakeEmbedder()).store
    writer = Memory(store)
    recorder = recorder_of(writer.store)
    assert recorder is not None
    with recorder._draining:  # hold the recorder's thread back until the store is closed
        for n in range(3):
            writer.add(f"item {n}", user_id="ada", infer=False)
        store.close()
    recorder.flush()  # what the exit hook does
    [check] = recorder.checks[-1:]
    assert check.over and check.memories == -1  # not measured: the run will decide
    with Memory.open(db, embedder=FakeEmbedder()) as owner:
        [run] = [j for j in owner.background.run_due() if j.kind == FORGET]
        assert run.result is not None and (run.result["before"], run.result["after"]) == (3, 1)


def test_a_token_budget_is_checked_on_writes(clock: FakeClock) -> None:
    with Memory(make_store("memory"), clock=clock, owns_store=True) as mem:
        mem.background.set_budget(Budget(max_tokens=12, consolidate_first=False),
                                  user_id="ada")
        mem.add("Drinks green tea every morning", user_id="ada", infer=False)
        mem.background.settle()
        assert _forget_jobs(mem) == []  # within the token budget
        mem.add("Rides a red bike to work on Mondays", user_id="ada", infer=False)
        mem.background.settle()
        [check] = recorder_of(mem.store).checks[-1:]  # type: ignore[union-attr]
        assert check.over and check.tokens > 12
        [run] = mem.background.run_due()
        assert run.result is not None and run.result["tokens_after"] <= 12
        assert len(mem.get_all(user_id="ada").memories) == 1
