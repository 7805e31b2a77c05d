"""Every worker runs every job kind: ``prompts.optimize`` and ``episodes.extract`` jobs run
through a Memory's own worker (``mem.background``), ``remem worker --once`` in a child process
(the chat model a loopback OpenAI-wire server), and ``remem serve``'s in-process worker, on a
real SQLite file, each in the tenant the job names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from remem.api import Memory
from remem.background import JobQueue
from remem.background.extraction import handlers
from remem.client import Client
from remem.embed import FakeEmbedder
from remem.episodic import EpisodeStore
from remem.episodic.jobs import EXTRACT_EPISODES, extract_job
from remem.llm import ChatRequest, ScriptedModel
from remem.messages import Message
from remem.procedural import PromptRegistry
from remem.procedural.jobs import OPTIMIZE, optimize_job
from remem.server import ServerConfig, create_app
from remem.server.keys import tenant_prefix
from remem.server.routes_jobs import install_in_process_worker, jobs_queue
from remem.store.scoped import ScopedStore
from remem.testing import ChatCall, LoopbackServer
from remem.testing.server import ThreadedServer

REWRITE = {"reasoning": "brevity", "prompt": "Answer {question} briefly."}
EPISODES = {"episodes": [{"situation": "user asked for 3 km in miles", "action": "said 1.86",
                          "thought": "", "result": "thanked"}]}
TRAJECTORIES = [([Message.user("2+2?"), Message.assistant("Let me explain at length...")],
                 {"score": 0.1, "comment": "too long"})]
CONVERSATION = [Message.user("3 km in miles?"), Message.assistant("1.86 miles")]


def _answer(text: str) -> dict[str, Any]:
    # the extraction instructions speak of experience memory; everything else is a rewrite
    return EPISODES if "experience memory" in text else REWRITE


def scripted(request: ChatRequest) -> dict[str, Any]:
    return _answer(" ".join(m.text for m in request.messages) + str(request.response_format))


def wire(call: ChatCall) -> dict[str, Any]:
    return _answer(json.dumps(call.body))


def _enqueue(queue: JobQueue, tenant: str = "") -> tuple[str, str]:
    optimized = queue.enqueue(optimize_job("qa", TRAJECTORIES, strategy="prompt_memory",
                                           tenant=tenant))
    extracted = queue.enqueue(extract_job(CONVERSATION, thread_id="th1", tenant=tenant))
    return optimized.id, extracted.id


def _check(store: Any, optimized: str, extracted: str) -> None:
    latest = PromptRegistry(store).get("qa")
    assert (latest.version, latest.text, latest.change_id) == (
        2, "Answer {question} briefly.", optimized)
    [episode] = EpisodeStore(store).list()
    assert (episode.id, episode.thread_id) == (f"{extracted}-0", "th1")


def test_every_worker_has_both_kinds() -> None:
    kinds = set(handlers(lambda tenant: None))  # type: ignore[arg-type, return-value]
    assert {OPTIMIZE, EXTRACT_EPISODES} <= kinds


def test_a_memorys_own_worker_runs_both_kinds(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(),
                     llm=ScriptedModel(default=scripted)) as mem:
        PromptRegistry(mem.store).create("qa", "Answer {question}.")
        optimized, extracted = _enqueue(mem.background.queue)
        done = mem.background.run_due()
        assert sorted((job.kind, job.status) for job in done) == [
            (EXTRACT_EPISODES, "done"), (OPTIMIZE, "done")]
        _check(mem.store, optimized, extracted)
        assert mem.background.run_due() == []  # each ran once


@pytest.mark.slow
def test_remem_worker_runs_both_kinds_per_tenant(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        acme = ScopedStore(mem.store, tenant_prefix("acme"))
        for store in (mem.store, acme):
            PromptRegistry(store).create("qa", "Answer {question}.")
        local_jobs = _enqueue(mem.background.queue)
        acme_jobs = _enqueue(mem.background.queue, tenant="acme")
    with LoopbackServer() as llm:
        llm.chat.default = wire
        env = {**os.environ, "REMEM_LLM_PROVIDER": "openai", "REMEM_LLM_BASE_URL": llm.url,
               "REMEM_LLM_MODEL": "scripted", "REMEM_LLM_API_KEY": "test"}
        ran = subprocess.run(
            [sys.executable, "-m", "remem", "worker", "--db", str(db), "--embedder", "fake",
             "--once", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    jobs = json.loads(ran.stdout)["jobs"]
    assert sorted((j["kind"], j["status"]) for j in jobs) == sorted(
        [(OPTIMIZE, "done"), (EXTRACT_EPISODES, "done")] * 2)
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        _check(mem.store, *local_jobs)
        _check(ScopedStore(mem.store, tenant_prefix("acme")), *acme_jobs)


def test_the_servers_in_process_worker_runs_both_kinds(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "s.db", embedder=FakeEmbedder(), mcp=False,
                                  llm=ScriptedModel(default=scripted)))
    install_in_process_worker(app, 1, poll=0.05)
    key = app.state.remem.keys.create("acme")[0]
    tenant = app.state.remem.keys.verify(key).tenant
    with ThreadedServer(app) as server, Client(server.url, api_key=key) as client:
        client.prompts.create("qa", "Answer {question}.")
        queue = jobs_queue(app)
        ids = _enqueue(queue, tenant=tenant)
        # the same kinds submitted over HTTP (a second optimization: version 3)
        submitted = client.prompts.submit_optimization("qa", TRAJECTORIES,
                                                       strategy="prompt_memory")
        again = client.prompts.submit_optimization("qa", TRAJECTORIES, idempotency_key="k1",
                                                   strategy="prompt_memory")
        assert client.prompts.submit_optimization(
            "qa", TRAJECTORIES, idempotency_key="k1")["id"] == again["id"]
        extraction = client.episodes.submit_extraction(
            [m.to_dict() for m in CONVERSATION], thread_id="th2")
        assert submitted["kind"] == OPTIMIZE and extraction["kind"] == EXTRACT_EPISODES
        assert submitted["status"] == "queued"
        over_http = [submitted["id"], again["id"], extraction["id"]]
        deadline = time.monotonic() + 60  # a wait, not an assertion on speed
        every = [*ids, *over_http]
        while time.monotonic() < deadline and any(
                client.job(i)["status"] != "done" for i in every):
            time.sleep(0.05)
        assert [client.job(i)["status"] for i in every] == ["done"] * 5
        # the first optimization to run committed version 2; the others found the text
        # already optimized
        history = client.prompts.history("qa")
        assert history[1].text == "Answer {question} briefly."
        assert len(history) == 2 and history[1].change_id in {ids[0], submitted["id"]}
        assert sorted(e.id for e in client.episodes.list()) == sorted(
            [f"{ids[1]}-0", f"{extraction['id']}-0"])
        assert {e.thread_id for e in client.episodes.list()} == {"th1", "th2"}
    app.state.remem.close()
