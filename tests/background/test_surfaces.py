"""Background memory on every surface: HTTP and remem.Client, MCP, the CLI (real server, real
SQLite files; the chat model is the scripted rule model)."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from remem.api import Memory
from remem.background import JobQueue, NewJob
from remem.background.requests import SubmitRequest, ThreadJobsRequest
from remem.cli import cli
from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError, NotFoundError, UnsupportedError
from remem.server import ServerConfig, create_app
from remem.server.routes_jobs import install_in_process_worker, jobs_queue
from remem.testing.server import ThreadedServer
from tests.memory_support import rule_model


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, list[str], Any]]:
    app = create_app(ServerConfig(db=tmp_path / "server.db", embedder=FakeEmbedder(),
                                  llm=rule_model(), mcp=False))
    keys = [app.state.remem.keys.create(f"tenant{n}")[0] for n in range(2)]
    with ThreadedServer(app) as server:
        yield server.url, keys, app
    jobs_queue(app).close()
    app.state.remem.close()


def test_submit_flush_cancel_over_http(served: tuple[str, list[str], Any]) -> None:
    url, (key, other_key), _ = served
    with Client(url, api_key=key) as client, Client(url, api_key=other_key) as other:
        first = client.submit("I live in Lisbon", thread_id="t1", user_id="ada", delay=600)
        again = client.submit("I work at Acme", thread_id="t1", user_id="ada", delay=600)
        assert again.job_id == first.job_id and again.replaced and again.messages == 2
        assert [job["id"] for job in client.jobs(status="queued")] == [first.job_id]
        assert client.job(first.job_id)["payload"]["namespace"][-1] == "ada"
        with pytest.raises(NotFoundError):
            other.job(first.job_id)  # another tenant's job does not exist for it
        assert other.jobs() == [] and other.flush("t1").jobs == ()
        [done] = client.flush("t1", user_id="ada").jobs
        assert done["status"] == "done" and done["result"]["messages"] == 2
        texts = sorted(r.text for r in client.get_all(user_id="ada").memories)
        assert texts == ["Lives in Lisbon", "Works at Acme"]
        pending = client.submit("I live in Porto", thread_id="t1", user_id="ada")
        assert client.cancel("t1").cancelled == (pending.job_id,)
        assert client.job(pending.job_id)["status"] == "cancelled"

        async def twins() -> None:
            submitted = await client.asubmit("async", thread_id="t2", user_id="ada")
            assert (await client.acancel("t2")).cancelled == (submitted.job_id,)
            assert (await client.aflush("t2")).jobs == ()
            await client.aclose()  # its async pool belongs to this event loop

        asyncio.run(twins())
        stats = httpx.get(f"{url}/v1/jobs/stats",
                          headers={"Authorization": f"Bearer {key}"}).json()
        assert stats["counts"]["done"] == 1 and stats["counts"]["cancelled"] == 2


def test_client_reads_and_acts_on_jobs_and_budgets(served: tuple[str, list[str], Any]) -> None:
    """Client's job and budget methods (sync and async twins) against a real server, each
    confined to the key's tenant."""
    url, (key, other_key), _ = served
    with Client(url, api_key=key) as client, Client(url, api_key=other_key) as other:
        pending = client.submit("I live in Lisbon", thread_id="t1", user_id="ada", delay=600)
        assert client.job_stats().counts["queued"] == 1
        assert other.job_stats().counts["queued"] == 0
        cancelled = client.cancel_job(pending.job_id)
        assert cancelled["id"] == pending.job_id and cancelled["status"] == "cancelled"
        with pytest.raises(NotFoundError):
            other.retry_job(pending.job_id)  # another tenant's job does not exist for it
        retried = client.retry_job(pending.job_id)
        assert retried["status"] == "queued" and retried["attempts"] == 0
        stored = client.set_budget(user_id="ada", max_memories=5, policy="lru")
        assert stored.namespace[-1] == "ada" and stored.budget.max_memories == 5
        assert stored.budget.policy == "lru"
        assert [b.namespace for b in client.budgets()] == [stored.namespace]
        assert other.budgets() == [] and other.delete_budget(user_id="ada") is False

        async def twins() -> tuple[Any, ...]:
            answers = (await client.ajob(pending.job_id), await client.ajobs(status="queued"),
                       await client.ajob_stats(), await client.acancel_job(pending.job_id),
                       await client.aretry_job(pending.job_id),
                       await client.aset_budget(user_id="bo", max_tokens=100),
                       await client.abudgets(), await client.adelete_budget(user_id="bo"))
            await client.aclose()  # its async pool belongs to this event loop
            return answers

        job, queued, stats, cancelled, retried, bo, budgets, deleted = asyncio.run(twins())
        assert job["id"] == pending.job_id and [j["id"] for j in queued] == [pending.job_id]
        assert stats.counts["queued"] == 1 and cancelled["status"] == "cancelled"
        assert retried["status"] == "queued" and bo.budget.max_tokens == 100
        assert {b.namespace[-1] for b in budgets} == {"ada", "bo"} and deleted is True
        assert client.delete_budget(user_id="ada") is True and client.budgets() == []


def test_bad_requests_are_4xx_naming_the_field(served: tuple[str, list[str], Any]) -> None:
    url, (key, _), _ = served
    headers = {"Authorization": f"Bearer {key}"}
    answer = httpx.post(f"{url}/v1/memories/submit", headers=headers,
                        json={"messages": "x", "thread_id": "t", "delay": -1})
    assert answer.status_code == 422 and "delay" in answer.text
    answer = httpx.post(f"{url}/v1/memories/submit", headers=headers,
                        json={"messages": "x"})
    assert answer.status_code == 422 and "thread_id" in answer.text
    assert httpx.get(f"{url}/v1/jobs/nope", headers=headers).status_code == 404
    assert httpx.get(f"{url}/v1/jobs?status=sleeping", headers=headers).status_code == 422
    with Client(url, api_key=key) as client:
        with pytest.raises(InvalidInputError, match="delay"):
            client.submit("x", thread_id="t", delay=10**9)
        job = client.submit("x", thread_id="t", user_id="u", delay=600)
        client.flush("t")
        answer = httpx.post(f"{url}/v1/jobs/{job.job_id}/cancel", headers=headers)
        assert answer.status_code == 409  # done: nothing to cancel
        assert "only a queued" in answer.json()["message"]


def test_a_server_without_a_model_refuses_submissions(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "x.db", embedder=FakeEmbedder(), mcp=False,
                                  auth=False))
    with ThreadedServer(app) as server, Client(server.url) as client, \
            pytest.raises(UnsupportedError, match="REMEM_LLM"):
        client.submit("x", thread_id="t")
    app.state.remem.close()


def test_workers_in_process_run_submissions(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=tmp_path / "srv.db", embedder=FakeEmbedder(),
                                  llm=rule_model(), mcp=False, auth=False))
    install_in_process_worker(app, 2, poll=0.02)
    with ThreadedServer(app) as server, Client(server.url) as client:
        job = client.submit("I live in Kyoto", thread_id="t1", user_id="ada", delay=0)
        for _ in range(500):  # bounded wait for the worker thread; no timing asserted
            if client.job(job.job_id)["status"] == "done":
                break
            time.sleep(0.02)
        assert client.job(job.job_id)["status"] == "done"
        assert [r.text for r in client.get_all(user_id="ada").memories] == ["Lives in Kyoto"]
    jobs_queue(app).close()
    app.state.remem.close()


def test_mcp_submit_tool() -> None:
    from mcp import Client as McpClient

    from remem.server.mcp import build_mcp
    from remem.server.state import Principal

    without = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), llm=rule_model(),
                                  mcp=False))
    state = app.state.remem

    async def run() -> tuple[set[str], set[str], dict[str, Any], Any]:
        async with McpClient(build_mcp(without.state.remem,
                                       lambda ctx: Principal("acme"))) as client:
            plain = {tool.name for tool in (await client.list_tools()).tools}
        async with McpClient(build_mcp(state, lambda ctx: Principal("acme"))) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            answer = await client.call_tool("submit_memories", {
                "messages": "I live in Oslo", "thread_id": "t1", "user_id": "ada",
                "delay": 0})
            bad = await client.call_tool("submit_memories", {"messages": "x", "threadid": "t"})
        params = set(tools["submit_memories"].input_schema["properties"])
        return plain, params, json.loads(answer.content[0].text), bad

    plain, params, answer, bad = asyncio.run(run())
    assert "submit_memories" not in plain  # no model, no background extraction
    assert params == set(SubmitRequest.model_fields)
    assert answer["messages"] == 1 and answer["job_id"].startswith("job_")
    assert bad.is_error and "threadid" in bad.content[0].text
    [job] = jobs_queue(app).list_jobs(tenant="acme")
    assert job.id == answer["job_id"]
    for a in (app, without):
        a.state.remem.close()


def test_python_and_client_signatures_match_the_requests() -> None:
    for method, request in (("submit", SubmitRequest), ("flush", ThreadJobsRequest),
                            ("cancel", ThreadJobsRequest)):
        for owner in (Memory, Client):
            for name in (method, "a" + method):
                params = inspect.signature(getattr(owner, name)).parameters
                got = {n: p.default for n, p in params.items() if n != "self"}
                want = {n: (f.default if not f.is_required() else inspect.Parameter.empty)
                        for n, f in request.model_fields.items()}
                assert got == want, (owner.__name__, name)


# -- CLI ------------------------------------------------------------------------------------------


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"REMEM_EMBEDDER": "fake"})


def test_jobs_and_worker_commands(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        mem.submit("pending", thread_id="t1", user_id="ada", delay=600)
    with JobQueue.open(db) as queue:
        noops = [queue.enqueue(NewJob("noop", {"n": n})) for n in range(3)]
    listed = run("jobs", "ls", "--db", str(db), "--json")
    assert listed.exit_code == 0, listed.output
    assert len(json.loads(listed.output)["jobs"]) == 4
    text = run("jobs", "ls", "--db", str(db), "--status", "queued")
    assert text.exit_code == 0 and "extract" in text.output and "noop" in text.output
    cancelled = run("jobs", "cancel", "--db", str(db), noops[0].id, "--json")
    assert json.loads(cancelled.output)["status"] == "cancelled"
    retried = run("jobs", "retry", "--db", str(db), noops[0].id, "--json")
    assert json.loads(retried.output)["status"] == "queued"
    ran = run("worker", "--db", str(db), "--once", "--kind", "noop", "--json")
    assert ran.exit_code == 0, ran.output
    assert sorted(j["result"]["n"] for j in json.loads(ran.output)["jobs"]) == [0, 1, 2]
    shown = run("jobs", "show", "--db", str(db), noops[1].id)
    assert "status: done" in shown.output
    stats = json.loads(run("jobs", "stats", "--db", str(db), "--json").output)
    assert stats["counts"]["done"] == 3 and stats["depth"] == 1
    missing = run("jobs", "show", "--db", str(db), "job_nope")
    assert missing.exit_code == 1 and "no job 'job_nope'" in missing.output
    done_cancel = run("jobs", "cancel", "--db", str(db), noops[1].id)
    assert done_cancel.exit_code == 1 and "only a queued" in done_cancel.output
    nothing = run("jobs", "ls", "--db", str(tmp_path / "absent.db"))
    assert nothing.exit_code == 1 and "no database" in nothing.output


def test_remem_worker_offers_every_job_kind_a_worker_runs() -> None:
    import click

    from remem.background.extraction import handlers
    from remem.cli.worker import worker_command

    [kind_option] = [p for p in worker_command.params if p.name == "kinds"]
    assert isinstance(kind_option.type, click.Choice)
    every = set(handlers(lambda tenant: None))  # type: ignore[arg-type,return-value]
    assert set(kind_option.type.choices) == every
