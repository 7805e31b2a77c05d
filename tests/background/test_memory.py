"""Debounced extraction and effects once, on a Memory with a fake clock (no sleeps)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.api import Memory
from remem.background.extraction import EXTRACT
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.llm import ScriptedModel
from remem.memory.store_manager import APPLIED_NAMESPACE
from tests.conftest import FakeClock
from tests.memory_support import conversation, make_store, rule_model


@pytest.fixture(params=["memory", "file"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def model() -> ScriptedModel:
    return rule_model()


@pytest.fixture
def mem(kind: str, tmp_path: Path, model: ScriptedModel, clock: FakeClock) -> Iterator[Memory]:
    with Memory(make_store(kind, tmp_path), llm=model, clock=clock, owns_store=True) as m:
        yield m


def texts(mem: Memory, user_id: str = "alice") -> list[str]:
    return sorted(r.text for r in mem.get_all(user_id=user_id).memories)


def calls(model: ScriptedModel) -> list[list[str]]:
    """The user lines each extraction call covered."""
    return [conversation(request) for request in model.requests]


def test_twenty_submissions_make_one_llm_call(mem: Memory, model: ScriptedModel,
                                              clock: FakeClock) -> None:
    job_ids = set()
    for n in range(20):
        result = mem.submit(f"fact number {n}", thread_id="t1", user_id="alice", delay=30)
        job_ids.add(result.job_id)
        assert result.messages == n + 1 and result.replaced == (n > 0)
        clock.advance(1)  # each inside the delay of the previous one
    assert len(job_ids) == 1
    assert mem.background.run_due() == []  # 1 s of quiet only
    clock.advance(29)
    [job] = mem.background.run_due()
    assert job.status == "done" and job.result is not None
    assert job.result["messages"] == 20
    assert calls(model) == [[f"fact number {n}" for n in range(20)]]
    assert texts(mem) == sorted(f"fact number {n}" for n in range(20))


def test_the_last_message_is_never_left_behind(mem: Memory, model: ScriptedModel,
                                              clock: FakeClock) -> None:
    mem.submit("first", thread_id="t1", user_id="alice", delay=5)
    clock.advance(5)
    worker = mem.background.worker()
    [claimed] = mem.background.queue.claim(worker.name)  # a worker starts on it
    mem.submit("second", thread_id="t1", user_id="alice", delay=5)  # arrives meanwhile
    worker.run_job(claimed)
    clock.advance(5)
    [later] = mem.background.run_due()
    assert later.id != claimed.id
    assert calls(model) == [["first"], ["second"]]
    assert texts(mem) == ["first", "second"]


def test_flush_runs_now_and_cancel_drops(mem: Memory, model: ScriptedModel) -> None:
    mem.submit("I live in Paris", thread_id="t1", user_id="alice", delay=600)
    flushed = mem.flush("t1")
    [job] = flushed.jobs
    assert job["status"] == "done" and job["result"]["messages"] == 1
    assert texts(mem) == ["Lives in Paris"]
    assert mem.flush("t1").jobs == ()  # nothing pending any more
    pending = mem.submit("I live in Rome", thread_id="t1", user_id="alice", delay=600)
    assert mem.cancel("t1", user_id="alice").cancelled == (pending.job_id,)
    assert mem.background.queue.get(pending.job_id).status == "cancelled"
    assert mem.cancel("t1").cancelled == ()
    assert len(model.requests) == 1 and texts(mem) == ["Lives in Paris"]


def test_scopes_of_one_thread_are_separate(mem: Memory, model: ScriptedModel) -> None:
    a = mem.submit("tea", thread_id="t1", user_id="alice", delay=600)
    b = mem.submit("coffee", thread_id="t1", user_id="bob", delay=600)
    assert a.job_id != b.job_id
    [done] = mem.flush("t1", user_id="bob").jobs
    assert done["id"] == b.job_id
    assert texts(mem, "bob") == ["coffee"] and texts(mem, "alice") == []
    assert [j["id"] for j in mem.flush("t1").jobs] == [a.job_id]  # no scope: the whole thread


def test_a_job_rerun_after_a_crash_applies_nothing_twice(mem: Memory, model: ScriptedModel,
                                                        clock: FakeClock) -> None:
    mem.submit(["I live in Paris", "I work at Acme"], thread_id="t1", user_id="alice", delay=0)
    queue = mem.background.queue
    [job] = queue.claim("crashing-worker", lease=10)
    # the worker writes the memories, then dies before recording the job as done
    from remem.background.extraction import extraction_handler

    first = extraction_handler(lambda _: mem)(job)
    assert len(first["changes"]) == 2
    before = texts(mem)
    clock.advance(11)  # its lease expires
    [rerun] = mem.background.run_due()
    assert (rerun.id, rerun.status, rerun.attempts) == (job.id, "done", 2)
    assert rerun.result is not None and rerun.result["changes"] == []
    assert "already applied" in rerun.result["skipped"][0]["reason"]
    assert len(model.requests) == 1  # the re-run did not even ask the model
    assert texts(mem) == before == ["Lives in Paris", "Works at Acme"]
    # history names the job: its events carry the job id as their change id
    record = mem.get_all(user_id="alice").memories[0]
    assert [e.change_id for e in mem.history(record.id)] == [job.id]
    assert mem.store.get(APPLIED_NAMESPACE, job.id) is not None


def test_a_failing_model_retries_then_dies(kind: str, tmp_path: Path, clock: FakeClock) -> None:
    model = ScriptedModel([RuntimeError("provider down")] * 5)
    with Memory(make_store(kind, tmp_path), llm=model, clock=clock, owns_store=True) as mem:
        result = mem.submit("hello", thread_id="t1", user_id="alice", delay=0)
        for _ in range(5):
            mem.background.run_due()
            clock.advance(600)
        job = mem.background.queue.get(result.job_id)
        assert job.status == "dead" and "provider down" in (job.error or "")
        assert job.attempts == job.max_attempts == 5
        assert mem.background.queue.stats().failures == 1


def test_bad_submissions_name_the_field(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="delay"):
        mem.submit("x", thread_id="t1", delay=-1)
    with pytest.raises(InvalidInputError, match="thread_id"):
        mem.submit("x", thread_id="")
    with pytest.raises(InvalidInputError, match="messages"):
        mem.submit([], thread_id="t1")


def test_async_twins(mem: Memory, model: ScriptedModel) -> None:
    async def main() -> None:
        submitted = await mem.asubmit("async fact", thread_id="t9", user_id="alice",
                                      delay=600)
        cancelled = await mem.acancel("t9")
        assert cancelled.cancelled == (submitted.job_id,)
        await mem.asubmit("async fact", thread_id="t9", user_id="alice", delay=600)
        [job] = (await mem.aflush("t9")).jobs
        assert job["status"] == "done"

    asyncio.run(main())
    assert texts(mem) == ["async fact"]


def test_an_in_process_worker_thread_runs_submissions(tmp_path: Path, model: ScriptedModel
                                                      ) -> None:
    with Memory(make_store("file", tmp_path), llm=model, owns_store=True) as mem:
        worker = mem.background.start(poll=0.05)
        result = mem.submit("threaded fact", thread_id="t1", user_id="alice", delay=0)
        for _ in range(400):  # waits for the thread, bounded; asserts no duration
            if mem.background.queue.get(result.job_id).status == "done":
                break
            worker._stopping.wait(0.05)
        assert mem.background.queue.get(result.job_id).status == "done"
        assert texts(mem) == ["threaded fact"]


# -- a property: whatever the interleaving, each message is extracted exactly once --------------

_steps = st.lists(st.one_of(
    st.tuples(st.just("submit"), st.integers(1, 3), st.sampled_from(["t1", "t2"])),
    st.tuples(st.just("advance"), st.integers(1, 40), st.just("")),
    st.tuples(st.just("run"), st.just(0), st.just("")),
    st.tuples(st.just("claim"), st.just(0), st.just("")),
    st.tuples(st.just("flush"), st.just(0), st.sampled_from(["t1", "t2"])),
), max_size=25)


@settings(max_examples=40, deadline=None)
@given(steps=_steps)
def test_every_message_is_extracted_exactly_once(steps: list[tuple[str, int, str]]) -> None:
    clock = FakeClock()
    model = rule_model()
    with Memory(make_store("memory"), llm=model, clock=clock, owns_store=True) as mem:
        sent: list[str] = []
        held = []  # jobs claimed by a slow worker, finished later
        for action, n, thread in steps:
            if action == "submit":
                lines = [f"{thread} line {len(sent) + i}" for i in range(n)]
                sent += lines
                mem.submit(lines, thread_id=thread, user_id="u", delay=30)
            elif action == "advance":
                clock.advance(n)
            elif action == "run":
                mem.background.run_due()
            elif action == "claim":
                held += mem.background.queue.claim(mem.background.worker().name, lease=3600)
            else:
                mem.flush(thread)
        for job in held:
            mem.background.worker().run_job(job)
        clock.advance(10_000)
        mem.background.run_due()
        extracted = [line for call in calls(model) for line in call]
        assert sorted(extracted) == sorted(sent)  # nothing lost, nothing twice
        for thread in ("t1", "t2"):  # and in the order sent, per thread
            mine = [line for line in extracted if line.startswith(thread)]
            assert mine == [line for line in sent if line.startswith(thread)]
        assert all(j.kind == EXTRACT and j.status == "done"
                   for j in mem.background.queue.list_jobs())


def test_a_memory_runs_only_its_own_jobs(mem: Memory, model: ScriptedModel) -> None:
    from remem.background import NewJob

    server_job = mem.background.queue.enqueue(NewJob("noop", tenant="acme"))
    mem.submit("mine", thread_id="t1", user_id="alice", delay=0)
    [ran] = mem.background.run_due()
    assert ran.kind == EXTRACT
    assert mem.background.queue.get(server_job.id).status == "queued"  # a tenant's view runs it


def test_threads_asking_first_for_the_background_share_one_queue(tmp_path: Path) -> None:
    """Threads that reach ``mem.background`` first at once (a submit from each) get one job
    queue, not one each: a second would hold storage and a worker nobody closes."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    threads = 8
    barrier = threading.Barrier(threads)
    with Memory.open(tmp_path / "race.db", embedder=FakeEmbedder()) as mem:
        def first(_: int) -> object:
            barrier.wait()  # all ask together, before any queue is made
            return mem.background

        with ThreadPoolExecutor(threads) as pool:
            got = list(pool.map(first, range(threads)))
        assert len({id(jobs) for jobs in got}) == 1
        assert mem.background is got[0]
