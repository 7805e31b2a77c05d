"""A consolidation merge is one transaction: ``kill -9`` of a real worker process in the
middle of a consolidation run leaves every cluster either merged whole or untouched; the
run resumed by another worker finishes the rest, merging each cluster once. SQLite and
PostgreSQL; the model is a scripted OpenAI-wire server."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from remem import FakeEmbedder
from remem.api import Memory
from remem.memory.flow import run_sync
from remem.memory.manager import NewMemory
from remem.testing import ChatCall, LoopbackServer

pytestmark = pytest.mark.slow
CLUSTERS = 30
_users = itertools.count()


def planted() -> dict[str, int]:
    """Three near-duplicates per cluster (text -> cluster)."""
    cluster_of: dict[str, int] = {}
    for k in range(CLUSTERS):
        base = f"user enjoys hobby{k} with friend{k} in town{k}"
        for text in (base, base + " every day", "really " + base):
            cluster_of[text] = k
    return cluster_of


def merged_text(k: int) -> str:
    return f"user really enjoys hobby{k} with friend{k} in town{k} every day"


CALLS: list[int] = []


def answer(call: ChatCall) -> dict[str, Any]:
    CALLS.append(1)
    time.sleep(0.03)  # a model takes a moment: the kill lands between merges, mid-run
    lines = re.findall(r"^\[(\d+)\] (.*)$", call.messages[-1].text, re.M)
    texts = [json.loads(text) for _, text in lines]
    k = int(re.search(r"hobby(\d+)", texts[0]).group(1))  # type: ignore[union-attr]
    return {"merge": True, "content": merged_text(k), "keep": [], "reason": "same hobby"}


def cluster_states(mem: Memory, user: str, cluster_of: dict[str, int]) -> Counter[str]:
    """Each cluster as 'whole' (its three memories current), 'merged' (one current memory
    saying the merged text, the other two invalidated) or something else (a torn merge)."""
    current: dict[int, list[str]] = {k: [] for k in range(CLUSTERS)}
    invalid: Counter[int] = Counter()
    page = mem.get_all(user_id=user, limit=1000, include_invalid=True)
    for record in page.memories:
        k = cluster_of.get(record.text)
        if k is None:
            k = int(re.search(r"hobby(\d+)", record.text).group(1))  # type: ignore[union-attr]
        if record.invalid_at is None:
            current[k].append(record.text)
        else:
            invalid[k] += 1
    states: Counter[str] = Counter()
    for k, texts in current.items():
        if sorted(texts) == sorted(t for t, c in cluster_of.items() if c == k) and not invalid[k]:
            states["whole"] += 1
        elif texts == [merged_text(k)] and invalid[k] == 2:
            states["merged"] += 1
        else:
            states[f"torn {k}: {texts} + {invalid[k]} invalid"] += 1
    return states


def worker(db: str, llm_url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "REMEM_LLM_PROVIDER": "openai", "REMEM_LLM_BASE_URL": llm_url,
           "REMEM_LLM_MODEL": "scripted", "REMEM_LLM_API_KEY": "test"}
    return subprocess.Popen(
        [sys.executable, "-m", "remem", "worker", "--db", db, "--embedder", "fake",
         "--concurrency", "1", "--lease", "2", "--poll", "0.05", "--grace", "5"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kill_9_mid_consolidation_leaves_each_merge_whole_or_absent(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    db = (request.getfixturevalue("pg_database") if backend == "postgres"
          else str(tmp_path / "memory.db"))
    user = f"merger{next(_users)}"
    cluster_of = planted()
    with LoopbackServer() as llm, Memory.open(db, embedder=FakeEmbedder()) as mem:
        llm.chat.default = answer
        CALLS.clear()
        namespace = mem.namespace_of(user_id=user)
        run_sync(mem.formation.store_flow(namespace, [NewMemory(t) for t in cluster_of]),
                 mem.store)
        assert cluster_states(mem, user, cluster_of) == {"whole": CLUSTERS}
        job = mem.background.consolidate(user_id=user)
        first = worker(db, llm.url)
        deadline = time.monotonic() + 120
        states = cluster_states(mem, user, cluster_of)
        while states["merged"] < CLUSTERS // 4 and time.monotonic() < deadline:
            time.sleep(0.1)
            states = cluster_states(mem, user, cluster_of)
        first.send_signal(signal.SIGKILL)
        first.wait()
        if first.stderr:
            first.stderr.close()
        at_kill = cluster_states(mem, user, cluster_of)
        # every cluster whole or merged: no merge half-applied
        assert set(at_kill) <= {"whole", "merged"}, at_kill
        assert 0 < at_kill["merged"] < CLUSTERS, at_kill
        assert mem.background.queue.get(job.id).status == "running"  # killed mid-job
        second = worker(db, llm.url)
        try:
            while (mem.background.queue.get(job.id).status != "done"
                   and time.monotonic() < deadline + 60):
                time.sleep(0.05)
        finally:
            second.send_signal(signal.SIGTERM)
            code = second.wait(60)
        log = second.stderr.read().decode() if second.stderr else ""
        if second.stderr:
            second.stderr.close()
        assert code == 0, log
        done = mem.background.queue.get(job.id)
        assert done.status == "done" and done.attempts == 2, (done, log)
        assert cluster_states(mem, user, cluster_of) == {"merged": CLUSTERS}
        # each cluster merged once: one edit of its keeper, two invalidations, one change id
        for record in mem.get_all(user_id=user, limit=1000).memories:
            events = [e for e in mem.history(record.id) if e.actor == "consolidation"]
            assert [e.op for e in events] == ["update"], events
        # the resumed run asked only about the clusters still whole
        assert done.result is not None
        assert done.result["merged"] == CLUSTERS - at_kill["merged"]
        print(f"\n{backend}: killed with {at_kill}; resumed run merged "
              f"{done.result['merged']}; {len(CALLS)} model calls for {CLUSTERS} clusters")
