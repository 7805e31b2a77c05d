"""Episodes of old threads: a scheduled run queues one episode extraction per thread idle
for N days (scripted model), stored as episodic memory; once per thread and head."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from remem import FakeEmbedder
from remem.api import Memory
from remem.background.consolidation import CONSOLIDATE
from remem.episodic import EpisodeStore
from remem.episodic.jobs import EXTRACT_EPISODES
from remem.errors import InvalidInputError
from remem.llm import ChatRequest, ScriptedModel
from remem.threads import ThreadStore
from tests.conftest import FakeClock
from tests.memory_support import make_store

DAY = 86400.0


def episode(request: ChatRequest) -> dict[str, Any]:
    return {"episodes": [{"situation": request.messages[-1].text[-60:], "action": "answered",
                          "thought": "",
                          "result": "ok"}]}


def test_idle_threads_get_one_episode_each(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    clock = FakeClock(time.time())
    model = ScriptedModel(default=episode)
    threads = ThreadStore.open(db, clock=clock)
    threads.create("old-1")
    threads.append("old-1", [{"role": "user", "content": "3 km in miles?"},
                             {"role": "assistant", "content": "1.86 miles"}])
    threads.create("old-2")
    threads.append("old-2", "Book a table for two")
    threads.create("empty")
    clock.advance(10 * DAY)
    threads.create("fresh")
    threads.append("fresh", "What is the weather?")
    with Memory.open(db, embedder=FakeEmbedder(), llm=model, clock=clock) as mem:
        run = mem.background.summarize_threads(idle=7 * DAY, interval=DAY)
        assert run.kind == CONSOLIDATE
        done = mem.background.run_due()
        [summary] = [j for j in done if j.kind == CONSOLIDATE]
        assert summary.id == run.id and summary.result is not None
        assert summary.result["threads"] == 4 and summary.result["idle"] == 2
        extracted = sorted((j.thread_id, j.status) for j in done if j.kind == EXTRACT_EPISODES)
        assert extracted == [("old-1", "done"), ("old-2", "done")]
        assert len(model.requests) == 2  # one call per idle thread
        stored = EpisodeStore(mem.store).list()
        assert sorted(e.thread_id for e in stored) == ["old-1", "old-2"]
        # the schedule: the next run a day later finds them summarised already
        [following] = mem.background.queue.list_jobs(kind=CONSOLIDATE, status="queued")
        assert following.run_after == pytest.approx(clock.now + DAY)
        clock.advance(DAY)
        again = mem.background.run_due()
        [second] = [j for j in again if j.kind == CONSOLIDATE]
        assert second.result is not None
        assert (second.result["idle"], second.result["queued"], second.result["already"]) == (
            2, [], 2)
        assert len(model.requests) == 2 and len(EpisodeStore(mem.store).list()) == 2
        # a thread that goes on, then idles again, is summarised again for its new head
        threads.append("old-2", "Make it three people")
        clock.advance(8 * DAY)
        later = mem.background.run_due()
        assert sorted(j.thread_id or "" for j in later if j.kind == EXTRACT_EPISODES) == [
            "fresh", "old-2"]
        assert len(model.requests) == 4
    threads.close()


def test_bad_settings_and_stores_without_threads(clock: FakeClock) -> None:
    with Memory(make_store("memory"), llm=ScriptedModel(default=episode), clock=clock,
                owns_store=True) as mem:
        with pytest.raises(InvalidInputError, match="idle"):
            mem.background.summarize_threads(idle=-1)
        with pytest.raises(InvalidInputError, match="limit"):
            mem.background.summarize_threads(limit=0)
        mem.background.summarize_threads(idle=DAY)
        [run] = mem.background.run_due()
        # an in-memory memory has no thread store beside it: a permanent failure, explained
        assert run.status == "failed" and run.error is not None
        assert "SQLite file or PostgreSQL" in run.error
