"""kill -9 of a `remem worker` process in the middle of 200 extraction jobs, on SQLite and on
PostgreSQL: after a restart every job completes and the memories equal those of a run
without a crash (none lost, none doubled). The chat model is a loopback OpenAI-wire server
answering like a correct model (the rule model); everything else is real."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from remem.api import Memory
from remem.background import JobQueue
from remem.embed import FakeEmbedder
from remem.llm import ChatRequest
from remem.memory.store_manager import APPLIED_NAMESPACE
from remem.testing import ChatCall, LoopbackServer
from tests.memory_support import rule_answer, rule_model

JOBS = 200
pytestmark = pytest.mark.slow
_schemas = itertools.count()


def answer(call: ChatCall) -> dict[str, Any]:
    time.sleep(0.005)  # a model takes a moment: the kill lands inside jobs, not between them
    return rule_answer(ChatRequest(call.messages))


def submit_all(mem: Memory) -> None:
    for n in range(JOBS):
        mem.submit([f"I like colour {n}", f"fact {n} about user{n % 10}"],
                   thread_id=f"t{n}", user_id=f"user{n % 10}", delay=0)


def state(mem: Memory) -> list[tuple[str, str]]:
    """Every current memory as (user, text), and how often each text was added."""
    found = []
    for user in range(10):
        page = mem.get_all(user_id=f"user{user}", limit=1000)
        found += [(f"user{user}", r.text) for r in page.memories]
    return sorted(found)


def worker(db: str, llm_url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "REMEM_LLM_PROVIDER": "openai", "REMEM_LLM_BASE_URL": llm_url,
           "REMEM_LLM_MODEL": "scripted", "REMEM_LLM_API_KEY": "test"}
    return subprocess.Popen(
        [sys.executable, "-m", "remem", "worker", "--db", db, "--embedder", "fake",
         "--concurrency", "4", "--lease", "3", "--poll", "0.05", "--grace", "5"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(queue: JobQueue, done: int, limit: float) -> dict[str, int]:
    deadline = time.monotonic() + limit
    counts = queue.stats().counts
    while counts.get("done", 0) < done and time.monotonic() < deadline:
        time.sleep(0.05)
        counts = queue.stats().counts
    return counts


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kill_9_in_the_middle_of_200_jobs(backend: str, tmp_path: Path,
                                          request: pytest.FixtureRequest) -> None:
    db = (request.getfixturevalue("pg_database") if backend == "postgres"
          else str(tmp_path / "memory.db"))
    # the reference: the same submissions run in this process, without a crash
    with Memory.open(tmp_path / "reference.db", embedder=FakeEmbedder(),
                     llm=rule_model()) as reference:
        submit_all(reference)
        reference.background.run_due()
        expected = state(reference)
    assert len(expected) == 2 * JOBS

    with LoopbackServer() as llm, Memory.open(db, embedder=FakeEmbedder()) as mem:
        llm.chat.default = answer
        submit_all(mem)
        queue = mem.background.queue
        first = worker(db, llm.url)
        counts = wait_for(queue, JOBS // 3, 120)
        first.send_signal(signal.SIGKILL)
        first.wait()
        if first.stderr:
            first.stderr.close()
        at_kill = queue.stats().counts
        assert 0 < at_kill.get("done", 0) < JOBS, (counts, at_kill)
        second = worker(db, llm.url)
        try:
            final = wait_for(queue, JOBS, 180)
        finally:
            second.send_signal(signal.SIGTERM)  # graceful: exits 0 once its jobs are done
            code = second.wait(60)
        log = ""
        if second.stderr:
            log = second.stderr.read().decode()
            second.stderr.close()
        assert code == 0, log
        assert final == {"done": JOBS}, (final, log)
        jobs = queue.list_jobs(limit=1000)
        retried = [j for j in jobs if j.attempts > 1]
        assert state(mem) == expected  # nothing lost, nothing doubled
        adds = Counter(e.memory_id for r in (m for u in range(10) for m in mem.get_all(
            user_id=f"user{u}", limit=1000).memories) for e in mem.history(r.id)
            if e.op == "add")
        assert set(adds.values()) == {1}
        markers = [item for item in mem.store.search(APPLIED_NAMESPACE, limit=1000)]
        assert len(markers) == JOBS  # every job's changes applied exactly once
        print(f"\n{backend}: killed with {at_kill}; {len(retried)} jobs re-run after the "
              f"crash; final {final}; memories {len(expected)} == reference")
