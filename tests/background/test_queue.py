"""The job queue's conformance suite: every test runs on memory, a SQLite file and PostgreSQL."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.background import JobQueue, NewJob, Submission
from remem.background.jobs import backoff, merge_messages
from remem.db.migrations import applied_sqlite
from remem.errors import ConflictError, InvalidInputError, NotFoundError
from tests.conftest import FakeClock

_schemas = itertools.count()


def open_queue(kind: str, tmp_path: Path, request: pytest.FixtureRequest,
               clock: FakeClock) -> JobQueue:
    if kind == "postgres":
        dsn = request.getfixturevalue("pg_database")
        return JobQueue.open(dsn, schema=f"jobs{next(_schemas)}", clock=clock)
    if kind == "memory":
        return JobQueue.in_memory(clock=clock)
    return JobQueue.open(tmp_path / "jobs.db", clock=clock)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def queue(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[JobQueue]:
    with open_queue(request.param, tmp_path, request, clock) as q:
        yield q


def msg(n: int) -> dict[str, object]:
    return {"id": f"m{n}", "role": "user", "content": f"message {n}"}


def test_enqueue_claim_complete(queue: JobQueue) -> None:
    job = queue.enqueue(NewJob("noop", {"n": 1}))
    assert job.status == "queued" and job.attempts == 0
    [claimed] = queue.claim("w1")
    assert (claimed.id, claimed.status, claimed.claimed_by, claimed.attempts) == (
        job.id, "running", "w1", 1)
    assert queue.claim("w2") == []  # exclusive
    assert queue.complete(job.id, "w1", {"ok": 1})
    done = queue.get(job.id)
    assert (done.status, done.result, done.claimed_by) == ("done", {"ok": 1}, None)
    assert done.finished_at is not None
    assert not queue.complete(job.id, "w1")  # a second completion is refused


def test_delay_and_order(queue: JobQueue, clock: FakeClock) -> None:
    later = queue.enqueue(NewJob("noop", {"n": "later"}, delay=10))
    first = queue.enqueue(NewJob("noop", {"n": "first"}))
    assert [j.id for j in queue.claim("w", limit=5)] == [first.id]
    clock.advance(10)
    assert [j.id for j in queue.claim("w", limit=5)] == [later.id]


def test_kinds_filter(queue: JobQueue) -> None:
    queue.enqueue(NewJob("a"))
    b = queue.enqueue(NewJob("b"))
    assert [j.id for j in queue.claim("w", kinds=["b"])] == [b.id]


def test_idempotency_key_returns_the_same_job(queue: JobQueue) -> None:
    one = queue.enqueue(NewJob("noop", {"n": 1}, idempotency_key="k"))
    two = queue.enqueue(NewJob("noop", {"n": 2}, idempotency_key="k"))
    assert two.id == one.id and two.payload == {"n": 1}
    other_tenant = queue.enqueue(NewJob("noop", idempotency_key="k", tenant="t2"))
    assert other_tenant.id != one.id
    assert len(queue.list_jobs()) == 2


def test_expired_lease_is_claimable_again(queue: JobQueue, clock: FakeClock) -> None:
    job = queue.enqueue(NewJob("noop"))
    queue.claim("dead-worker", lease=5)
    clock.advance(4)
    assert queue.claim("w2") == []
    clock.advance(2)
    [again] = queue.claim("w2")
    assert (again.id, again.claimed_by, again.attempts) == (job.id, "w2", 2)
    assert not queue.complete(job.id, "dead-worker")  # lost its lease
    assert queue.heartbeat(job.id, "w2", lease=5)
    assert queue.complete(job.id, "w2")


def test_heartbeat_keeps_the_lease(queue: JobQueue, clock: FakeClock) -> None:
    job = queue.enqueue(NewJob("noop"))
    queue.claim("w1", lease=5)
    for _ in range(3):
        clock.advance(4)
        assert queue.heartbeat(job.id, "w1", lease=5)
        assert queue.claim("w2") == []
    assert not queue.heartbeat(job.id, "w2")


def test_retries_back_off_then_dead(queue: JobQueue, clock: FakeClock) -> None:
    job = queue.enqueue(NewJob("noop", max_attempts=3))
    for attempt in (1, 2):
        [claimed] = queue.claim("w")
        assert claimed.attempts == attempt
        failed = queue.fail(job.id, "w", f"boom {attempt}")
        assert failed is not None and failed.status == "queued"
        assert failed.run_after == clock.now + backoff(attempt)
        assert queue.claim("w") == []  # not before the backoff
        clock.advance(backoff(attempt))
    queue.claim("w")
    dead = queue.fail(job.id, "w", "boom 3")
    assert dead is not None and (dead.status, dead.error, dead.attempts) == ("dead", "boom 3", 3)
    assert queue.claim("w") == []
    assert queue.stats().failures == 1


def test_permanent_failure(queue: JobQueue) -> None:
    job = queue.enqueue(NewJob("noop"))
    queue.claim("w")
    failed = queue.fail(job.id, "w", "bad input", permanent=True)
    assert failed is not None and failed.status == "failed"


def test_lease_expired_on_last_attempt_is_dead(queue: JobQueue, clock: FakeClock) -> None:
    job = queue.enqueue(NewJob("noop", max_attempts=2))
    for _ in range(2):
        assert [j.id for j in queue.claim("w", lease=1)] == [job.id]
        clock.advance(2)
    assert queue.claim("w") == []
    dead = queue.get(job.id)
    assert dead.status == "dead" and "lease" in (dead.error or "")


def test_release_does_not_count_the_attempt(queue: JobQueue) -> None:
    job = queue.enqueue(NewJob("noop"))
    queue.claim("w")
    assert queue.release(job.id, "w")
    released = queue.get(job.id)
    assert (released.status, released.attempts, released.claimed_by) == ("queued", 0, None)
    assert [j.id for j in queue.claim("w2")] == [job.id]


def test_cancel_and_retry(queue: JobQueue) -> None:
    job = queue.enqueue(NewJob("noop"))
    assert queue.cancel(job.id).status == "cancelled"
    assert queue.claim("w") == []
    again = queue.retry(job.id)
    assert (again.status, again.attempts) == ("queued", 0)
    queue.claim("w")
    with pytest.raises(ConflictError, match="running"):
        queue.cancel(job.id)
    with pytest.raises(ConflictError, match="only a failed"):
        queue.retry(job.id)
    with pytest.raises(NotFoundError, match="no job 'nope'"):
        queue.get("nope")


def test_retry_of_a_debounced_job_with_a_newer_pending_one_conflicts(queue: JobQueue) -> None:
    # found by schemathesis: the second queued job of one debounce key broke the unique
    # index and answered 503
    old = queue.submit(Submission("extract", "t1", "t1", [msg(1)], delay=30))
    queue.cancel(old.id)
    newer = queue.submit(Submission("extract", "t1", "t1", [msg(2)], delay=30))
    assert newer.id != old.id
    with pytest.raises(ConflictError, match=f"job {newer.id} is already pending"):
        queue.retry(old.id)
    assert queue.get(old.id).status == "cancelled"
    queue.cancel(newer.id)
    assert queue.retry(old.id).status == "queued"


def test_tenants_do_not_see_each_other(queue: JobQueue) -> None:
    job = queue.enqueue(NewJob("noop", tenant="a"))
    with pytest.raises(NotFoundError):
        queue.get(job.id, tenant="b")
    with pytest.raises(NotFoundError):
        queue.cancel(job.id, tenant="b")
    assert queue.list_jobs(tenant="b") == [] and len(queue.list_jobs(tenant="a")) == 1
    assert queue.stats(tenant="b").depth == 0 and queue.stats(tenant="a").depth == 1


def test_submissions_replace_the_pending_job(queue: JobQueue, clock: FakeClock) -> None:
    first = queue.submit(Submission("extract", "t1", "t1", [msg(1)], {"scope": 1}, delay=30))
    clock.advance(20)
    second = queue.submit(Submission("extract", "t1", "t1", [msg(2), msg(1)], delay=30))
    assert second.id == first.id
    assert [m["id"] for m in second.payload["messages"]] == ["m1", "m2"]
    assert second.payload["scope"] == 1
    assert second.run_after == clock.now + 30
    clock.advance(29)
    assert queue.claim("w") == []  # quiet for 29 s only
    clock.advance(1)
    [claimed] = queue.claim("w")
    assert claimed.id == first.id
    # while it runs, a new submission starts a new job, which waits for the running one
    third = queue.submit(Submission("extract", "t1", "t1", [msg(3)], delay=0))
    assert third.id != first.id and [m["id"] for m in third.payload["messages"]] == ["m3"]
    assert queue.claim("w2") == []
    queue.complete(first.id, "w")
    assert [j.id for j in queue.claim("w2")] == [third.id]


def test_flush_and_cancel_pending(queue: JobQueue, clock: FakeClock) -> None:
    job = queue.submit(Submission("extract", "k1", "t1", [msg(1)], delay=300))
    other = queue.submit(Submission("extract", "k2", "t2", [msg(2)], delay=300))
    assert queue.claim("w") == []
    assert [j.id for j in queue.flush("t1")] == [job.id]
    assert [j.id for j in queue.claim("w", limit=5)] == [job.id]
    assert [j.id for j in queue.cancel_pending("t2")] == [other.id]
    assert queue.get(other.id).status == "cancelled"
    assert queue.flush("t2") == []


def test_claim_one(queue: JobQueue) -> None:
    job = queue.submit(Submission("extract", "k1", "t1", [msg(1)], delay=300))
    claimed = queue.claim_one(job.id, "me")
    assert claimed is not None and claimed.status == "running"
    assert queue.claim_one(job.id, "you") is None


def test_stats(queue: JobQueue, clock: FakeClock) -> None:
    queue.enqueue(NewJob("noop"))
    queue.enqueue(NewJob("noop", delay=100))
    done = queue.enqueue(NewJob("noop"))
    queue.claim_one(done.id, "w")
    queue.complete(done.id, "w")
    clock.advance(7)
    stats = queue.stats()
    assert stats.counts == {"queued": 2, "done": 1}
    assert stats.depth == 2 and stats.lag == 7
    assert stats.to_dict()["counts"]["dead"] == 0


def test_list_filters(queue: JobQueue, clock: FakeClock) -> None:
    a = queue.enqueue(NewJob("a", thread_id="t1"))
    clock.advance(1)
    b = queue.enqueue(NewJob("b"))
    assert [j.id for j in queue.list_jobs()] == [b.id, a.id]
    assert [j.id for j in queue.list_jobs(kind="a")] == [a.id]
    assert [j.id for j in queue.list_jobs(thread_id="t1")] == [a.id]
    assert queue.list_jobs(status="done") == []
    with pytest.raises(InvalidInputError, match="status must be one of"):
        queue.list_jobs(status="nope")  # type: ignore[arg-type]


def test_concurrent_claims_take_each_job_once(queue: JobQueue) -> None:
    ids = {queue.enqueue(NewJob("noop", {"n": n})).id for n in range(60)}
    taken: list[str] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        while jobs := queue.claim(name, limit=3):
            with lock:
                taken.extend(j.id for j in jobs)
            for job in jobs:
                assert queue.complete(job.id, name)

    workers = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert sorted(taken) == sorted(ids)
    assert queue.stats().counts == {"done": 60}


@pytest.mark.parametrize("bad", [
    {"kind": ""}, {"kind": "x", "delay": -1}, {"kind": "x", "max_attempts": 0},
    {"kind": "x", "idempotency_key": ""},
])
def test_bad_jobs_name_the_field(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match=next(reversed(bad)) if len(bad) > 1 else "kind"):
        NewJob(**bad)  # type: ignore[arg-type]


def test_bad_claims(queue: JobQueue) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        queue.claim("w", limit=0)
    with pytest.raises(InvalidInputError, match="lease"):
        queue.claim("w", lease=0)


def test_merge_keeps_order_and_drops_repeats() -> None:
    merged = merge_messages([msg(1), msg(2)], [msg(2), msg(3), msg(3), msg(1), msg(4)])
    assert [m["id"] for m in merged] == ["m1", "m2", "m3", "m4"]


def test_the_queue_lives_beside_the_store(tmp_path: Path, clock: FakeClock) -> None:
    import sqlite3

    from remem.store import SQLiteStore

    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store, JobQueue.beside(store, clock=clock) as queue:
        store.put(("a",), "k", {"x": 1})
        queue.enqueue(NewJob("noop"))
    conn = sqlite3.connect(path)
    assert "j001_jobs" in applied_sqlite(conn)
    assert conn.execute("SELECT COUNT(*) FROM remem_jobs").fetchone() == (1,)
    conn.close()
    # reopening finds the job (durable) and applies nothing twice
    with JobQueue.open(path, clock=clock) as queue:
        assert queue.stats().counts == {"queued": 1}


def test_finish_many_records_only_the_workers_jobs(queue: JobQueue) -> None:
    mine = [queue.enqueue(NewJob("noop", {"n": n})) for n in range(3)]
    claimed = queue.claim("w1", limit=2)
    other = queue.claim("w2", limit=1)
    finished = queue.finish_many("w1", [(j.id, {"n": j.payload["n"]}) for j in mine])
    assert sorted(j.id for j in finished) == sorted(j.id for j in claimed)
    assert all(j.status == "done" for j in finished)
    assert queue.get(other[0].id).status == "running"
    assert queue.finish_many("w1", []) == []


def test_a_worker_batch_records_successes_and_failures(queue: JobQueue) -> None:
    from remem.background.worker import Worker

    def handler(job: object) -> dict[str, int]:
        n = job.payload["n"]  # type: ignore[attr-defined]
        if n == 1:
            raise RuntimeError("odd one out")
        if n == 2:
            raise InvalidInputError("cannot ever work")
        return {"n": n}

    for n in range(4):
        queue.enqueue(NewJob("noop", {"n": n}))
    worker = Worker(queue, {"noop": handler})
    after = worker.run_batch(queue.claim(worker.name, limit=10))
    status = {j.payload["n"]: j.status for j in after}
    assert status == {0: "done", 1: "queued", 2: "failed", 3: "done"}
    assert (worker.done, worker.failed) == (2, 2)
    with pytest.raises(InvalidInputError, match="handler"):
        Worker(queue, {})


def test_claims_can_be_limited_to_one_tenant(queue: JobQueue) -> None:
    ours = queue.enqueue(NewJob("noop"))
    theirs = queue.enqueue(NewJob("noop", tenant="acme"))
    assert [j.id for j in queue.claim("w", limit=5, tenant="")] == [ours.id]
    assert [j.id for j in queue.claim("w", limit=5, tenant="acme")] == [theirs.id]


# -- beside the jobs: read counts, budgets, the metrics breakdown ------------------------------

_prefixes = itertools.count()


def test_read_counts_add_up_and_keep_the_latest_read(queue: JobQueue) -> None:
    assert queue.access(["mem_a"]) == {}
    queue.touch([("mem_a", 2, 100.0), ("mem_b", 1, 50.0)])
    queue.touch([("mem_a", 1, 90.0)])  # an older read arriving late keeps the latest time
    queue.touch([])
    assert queue.access(["mem_a", "mem_b", "mem_c"]) == {"mem_a": (3, 100.0),
                                                        "mem_b": (1, 50.0)}
    many = [(f"mem_{n}", 1, float(n)) for n in range(1200)]  # more ids than one IN list
    queue.touch(many)
    assert len(queue.access([m for m, _, _ in many])) == 1200


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 3),
                                   st.floats(0, 1e9, allow_nan=False)),
                         max_size=8), max_size=6))
def test_read_counts_match_a_model(queue: JobQueue,
                                   batches: list[list[tuple[int, int, float]]]) -> None:
    prefix = f"p{next(_prefixes)}_"  # one queue for every example: ids of its own
    expected: dict[str, tuple[int, float]] = {}
    for batch in batches:
        reads = [(f"{prefix}{i}", n, at) for i, n, at in batch]
        # a batch as the recorder writes it: one row per id
        merged: dict[str, tuple[int, float]] = {}
        for memory_id, n, at in reads:
            uses, last = merged.get(memory_id, (0, at))
            merged[memory_id] = (uses + n, max(last, at))
        queue.touch([(i, n, at) for i, (n, at) in merged.items()])
        for memory_id, (n, at) in merged.items():
            uses, last = expected.get(memory_id, (0, at))
            expected[memory_id] = (uses + n, max(last, at))
    assert queue.access([f"{prefix}{i}" for i in range(6)]) == expected


def test_concurrent_read_counts_add_up(queue: JobQueue) -> None:
    ids = [f"c{n}" for n in range(30)]

    def reader(offset: int) -> None:
        for round_ in range(10):
            # each writer in its own order: the rows are upserted sorted, so no deadlock
            rotated = ids[offset:] + ids[:offset]
            queue.touch([(i, 1, float(round_)) for i in rotated])

    threads = [threading.Thread(target=reader, args=(n * 7,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert queue.access(ids) == {i: (40, 9.0) for i in ids}


def test_budgets_are_kept_per_tenant_and_namespace(queue: JobQueue, clock: FakeClock) -> None:
    queue.put_budget("", '["memories","user","ada"]', '{"max_memories":3}')
    queue.put_budget("acme", '["memories","user","ada"]', '{"max_memories":9}')
    clock.advance(5)
    queue.put_budget("", '["memories","user","ada"]', '{"max_memories":4}')  # replaced
    queue.put_budget("", '["memories","user","bo"]', '{"max_tokens":100}')
    assert queue.budgets(tenant="") == [
        ("", '["memories","user","ada"]', '{"max_memories":4}', clock.now),
        ("", '["memories","user","bo"]', '{"max_tokens":100}', clock.now)]
    assert [b[2] for b in queue.budgets(tenant="acme")] == ['{"max_memories":9}']
    assert [b[1] for b in queue.budgets(namespaces=['["memories","user","bo"]'])] == [
        '["memories","user","bo"]']
    assert queue.budgets(namespaces=[]) == []
    assert queue.delete_budget("", '["memories","user","ada"]')
    assert not queue.delete_budget("", '["memories","user","ada"]')
    assert len(queue.budgets()) == 2


def test_breakdown_by_kind_and_status(queue: JobQueue) -> None:
    for kind in ("noop", "noop", "extract"):
        queue.enqueue(NewJob(kind))
    [claimed] = queue.claim("w1", kinds=["extract"])
    queue.complete(claimed.id, "w1")
    queue.enqueue(NewJob("noop", tenant="acme"))
    assert queue.breakdown() == {("noop", "queued"): 3, ("extract", "done"): 1}
    assert queue.breakdown(tenant="acme") == {("noop", "queued"): 1}


def test_an_old_jobs_table_is_migrated(tmp_path: Path, clock: FakeClock) -> None:
    import sqlite3

    from remem.background.sql import JOB_SCHEMA
    from remem.db.migrations import apply_sqlite

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_sqlite(conn, JOB_SCHEMA.sqlite[:1])  # a database from before read counts, budgets
    conn.close()
    with JobQueue.open(path, clock=clock) as old:
        job = old.enqueue(NewJob("noop"))
    with JobQueue.open(path, clock=clock) as queue:
        queue.touch([("mem_a", 1, 1.0)])
        assert queue.access(["mem_a"]) == {"mem_a": (1, 1.0)}
        assert queue.get(job.id).status == "queued"
    conn = sqlite3.connect(path)
    assert applied_sqlite(conn)[-5:] == ["j001_jobs", "j002_access_budgets", "j003_usage",
                                         "j004_activity", "u001_counters"]
    conn.close()
