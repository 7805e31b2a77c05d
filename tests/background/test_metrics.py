"""The job queue in Prometheus: a real server's /metrics, scraped and parsed, shows the queue
depth by kind and status, how the jobs that ran ended, failures and the oldest job's lag,
read from the database every worker writes to."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from remem.background import JobQueue, NewJob
from remem.background.worker import Worker
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.server import ServerConfig, create_app
from remem.server.metrics import JobQueueCollector
from remem.server.routes_jobs import jobs_queue
from remem.testing.server import ThreadedServer


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db = tmp_path / "server.db"
    app = create_app(ServerConfig(db=db, embedder=FakeEmbedder(), mcp=False))
    with ThreadedServer(app) as server:
        yield server.url, db
    jobs_queue(app).close()
    app.state.remem.close()


def scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    answer = httpx.get(f"{url}/metrics")
    assert answer.status_code == 200
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = (
                sample.value)
    return found


def boom(job: Any) -> None:
    raise RuntimeError("the model is down")


def bad(job: Any) -> None:
    raise InvalidInputError("payload.n must be a number")


def test_queue_gauges_are_scraped(served: tuple[str, Path]) -> None:
    url, db = served
    before = scrape(url)
    assert before["remem_jobs_up"] == {(): 1.0}
    assert before["remem_jobs_failures"] == {(): 0.0}
    # another process's view of the same database: jobs queued two minutes ago
    with JobQueue.open(db, clock=lambda: time.time() - 120) as late:
        for n in range(3):
            late.enqueue(NewJob("noop", {"n": n}))
        late.enqueue(NewJob("extract", {"n": 9}))
    with JobQueue.open(db) as queue:
        queue.enqueue(NewJob("boom", max_attempts=1))
        queue.enqueue(NewJob("bad"))
        queue.enqueue(NewJob("later", delay=3600))
        queue.enqueue(NewJob("noop", {"n": 99}))
        lag = scrape(url)["remem_jobs_oldest_queued_lag_seconds"][()]
        assert 120 <= lag < 3600
        worker = Worker(queue, {"noop": lambda job: {"ok": True}, "boom": boom, "bad": bad},
                        name="w1")
        # one noop is claimed and left running (its worker "still working on it")
        [claimed] = queue.claim("w2", limit=1, kinds=["noop"])
        assert claimed.payload["n"] == 0  # the oldest due
        worker.run_due()
        queue.cancel(queue.enqueue(NewJob("noop", {"n": 5}, delay=60)).id)
    metrics = scrape(url)
    depth = metrics["remem_jobs_queue_depth"]
    assert depth == {(("kind", "extract"), ("status", "queued")): 1.0,
                     (("kind", "later"), ("status", "queued")): 1.0,
                     (("kind", "noop"), ("status", "running")): 1.0}
    finished = metrics["remem_jobs_finished"]
    assert finished == {(("kind", "noop"), ("outcome", "done")): 3.0,
                        (("kind", "noop"), ("outcome", "cancelled")): 1.0,
                        (("kind", "boom"), ("outcome", "dead")): 1.0,
                        (("kind", "bad"), ("outcome", "failed")): 1.0}
    assert metrics["remem_jobs_failures"] == {(): 2.0}
    # the extract job (no handler in this worker) is still waiting since two minutes ago
    assert metrics["remem_jobs_oldest_queued_lag_seconds"][()] >= 120
    # the request metrics are still there
    assert any(name.startswith("remem_http_requests") for name in metrics)


def test_a_queue_that_cannot_be_read_does_not_fail_metrics(tmp_path: Path) -> None:
    def broken() -> JobQueue:
        queue = JobQueue.open(tmp_path)  # a directory: no database opens there
        queue.setup()
        return queue

    families = {f.name: f for f in JobQueueCollector(broken).collect()}
    assert list(families) == ["remem_jobs_up"]
    assert [s.value for s in families["remem_jobs_up"].samples] == [0.0]
    with JobQueue.open(tmp_path / "ok.db") as queue:
        queue.enqueue(NewJob("noop"))
        families = {f.name: f for f in JobQueueCollector(lambda: queue).collect()}
    assert [s.value for s in families["remem_jobs_up"].samples] == [1.0]
    assert [s.value for s in families["remem_jobs_queue_depth"].samples] == [1.0]
