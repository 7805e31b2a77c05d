"""Prompt optimization and episode extraction as background jobs: run by a real worker over a
real queue beside a SQLite file, at most once across re-runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.background import JobQueue
from remem.background.worker import Worker
from remem.embed import FakeEmbedder
from remem.episodic import EpisodeStore
from remem.episodic.jobs import EXTRACT_EPISODES, episode_extraction_handler, extract_job
from remem.errors import InvalidInputError
from remem.llm import ScriptedModel
from remem.messages import Message
from remem.procedural import PromptOptimizer, PromptRegistry, Trajectory
from remem.procedural.jobs import OPTIMIZE, optimization_handler, optimize_job
from remem.store import IndexConfig, SQLiteStore

TRAJECTORIES = [
    ([Message.user("Price of the mug?"), Message.assistant("12.5")],
     {"score": 0.0, "comment": "write prices like €12.50"}),
    Trajectory((Message.user("Price of the jar?"), Message.assistant("€3.99")), 1.0, id="t2"),
]


def test_an_optimization_job_commits_once_with_the_job_id(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "agent.db")
    store.setup()
    prompts = PromptRegistry(store)
    prompts.create("shop", "You sell things at {shop}.")
    model = ScriptedModel([{"reasoning": "euro format",
                            "prompt": "You sell things at {shop}. Write prices like €12.50."}])
    optimizer = PromptOptimizer(model, registry=prompts, strategy="prompt_memory")
    with JobQueue.beside(store) as queue:
        queued = queue.enqueue(optimize_job("shop", TRAJECTORIES))
        assert queued.payload["trajectories"][1]["id"] == "t2"
        handler = optimization_handler(optimizer)
        [job] = Worker(queue, {OPTIMIZE: handler}).run_due()
        assert job.status == "done" and job.result is not None
        assert job.result["committed_version"] == 2 and job.result["calls"] == 1
        assert "+You sell things at {shop}. Write prices like €12.50." in job.result["diff"]
        latest = prompts.get("shop")
        assert latest.change_id == job.id and latest.author == "optimizer:prompt_memory"
        assert [t["id"] for t in latest.trajectories] == [None, "t2"]
        # the same job run again (a crash before the queue heard it was done): no model call
        again = handler(job)
        assert again == {"name": "shop", "changed": True, "committed_version": 2,
                         "calls": 0, "rerun": True}
        assert len(model.requests) == 1 and prompts.get("shop").version == 2
    store.close()


def test_a_job_for_a_missing_prompt_fails_at_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "agent.db")
    store.setup()
    optimizer = PromptOptimizer(ScriptedModel(), registry=PromptRegistry(store))
    with JobQueue.beside(store) as queue:
        queue.enqueue(optimize_job("nope", TRAJECTORIES))
        [job] = Worker(queue, {OPTIMIZE: optimization_handler(optimizer)}).run_due()
        assert job.status == "failed" and "no prompt named 'nope'" in (job.error or "")
    with pytest.raises(InvalidInputError, match="strategy must be one of"):
        optimize_job("shop", TRAJECTORIES, strategy="sgd")  # type: ignore[arg-type]
    store.close()


def test_an_episode_extraction_job_stores_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "agent.db", index=IndexConfig(embedder=FakeEmbedder()))
    store.setup()
    episodes = EpisodeStore(store)
    model = ScriptedModel([{"episodes": [
        {"situation": "Parcel late", "action": "Sent tracking link"},
        {"situation": "Wants invoice", "action": "Emailed the invoice"}]}])
    thread = [Message.user("Where is my parcel? Also I need the invoice."),
              Message.assistant("Tracking: ... Invoice sent.")]
    with JobQueue.beside(store) as queue:
        queue.enqueue(extract_job(thread, thread_id="t1"))
        handler = episode_extraction_handler(episodes, model)
        [job] = Worker(queue, {EXTRACT_EPISODES: handler}).run_due()
        assert job.status == "done" and job.result is not None
        assert job.result["episodes"] == [f"{job.id}-0", f"{job.id}-1"]
        assert episodes.get(f"{job.id}-1").thread_id == "t1"
        assert handler(job) == {"episodes": [f"{job.id}-0", f"{job.id}-1"], "calls": 0,
                                "rerun": True}
        assert len(model.requests) == 1 and len(episodes.list()) == 2
    with pytest.raises(InvalidInputError, match="non-empty list of remem Message"):
        extract_job([])
    store.close()
