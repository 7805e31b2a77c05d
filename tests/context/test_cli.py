"""``remem context`` and the MCP tool ``get_context``: both built from ContextRequest, both
answering what ``Memory.context`` assembles (the JSON of ``POST /v1/memories/context``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from mcp import Client

from remem.api import Memory
from remem.cli import cli
from remem.context.wire import ContextOut
from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.server.mcp import build_mcp
from remem.server.state import Principal, ServerState
from remem.threads import ThreadStore


def _fill(memory: Memory) -> None:
    for text in ("Alice drinks green tea", "Alice lives in Porto", "Alice runs on Sundays",
                 "Alice is allergic to peanuts"):
        memory.add(text, user_id="alice", infer=False)


def _db(tmp_path: Path) -> str:
    db = str(tmp_path / "ctx.db")
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        _fill(memory)
    with ThreadStore(db) as threads:
        threads.create("t1")
        threads.append("t1", [{"role": "user", "content": "what should I cook tonight?"},
                              {"role": "assistant", "content": "something without peanuts"}])
    return db


def _cli(*argv: str) -> Any:
    return CliRunner().invoke(cli, list(argv), prog_name="remem")


def test_cli_prints_the_context_text(tmp_path: Path) -> None:
    db = _db(tmp_path)
    with Memory.open(db, embedder=FakeEmbedder()) as memory, ThreadStore(db) as threads:
        want = memory.context("tea", user_id="alice", thread_id="t1", threads=threads).text
    result = _cli("context", "tea", "--user", "alice", "--thread", "t1", "--db", db,
                  "--embedder", "fake")
    assert result.exit_code == 0, result.output
    assert result.stdout == want + "\n"
    assert "green tea" in result.stdout and "without peanuts" in result.stdout


def test_cli_json_is_the_http_document_with_drops(tmp_path: Path) -> None:
    db = _db(tmp_path)
    with Memory.open(db, embedder=FakeEmbedder()) as memory, ThreadStore(db) as threads:
        result = memory.context("tea", user_id="alice", thread_id="t1", threads=threads,
                                budget_tokens=30, sections=["memories", "recent"],
                                memory_limit=3)
        want = ContextOut.of(result).model_dump(mode="json")
    got = _cli("context", "tea", "--user", "alice", "--thread", "t1", "--budget-tokens", "30",
               "--sections", "memories,recent", "--memory-limit", "3", "--json", "--db", db,
               "--embedder", "fake")
    assert got.exit_code == 0, got.output
    data = json.loads(got.stdout)
    assert data == want
    assert data["tokens"] <= 30 and data["dropped"]  # the budget left items out, reported
    assert [s["name"] for s in data["sections"]] == ["memories", "recent"]
    assert all({"section", "key", "tokens", "reason"} <= set(d) for d in data["dropped"])


def test_cli_text_mode_reports_drops_on_stderr(tmp_path: Path) -> None:
    db = _db(tmp_path)
    got = _cli("context", "tea", "--user", "alice", "--budget-tokens", "12", "--db", db,
               "--embedder", "fake")
    assert got.exit_code == 0, got.output
    assert "left out" in got.stderr and "budget of 12 tokens" in got.stderr


def test_cli_bad_input_names_the_option(tmp_path: Path) -> None:
    db = _db(tmp_path)
    for argv, needle in ((["--budget-tokens", "-1"], "--budget-tokens"),
                         (["--memory-limit", "0"], "--memory-limit"),
                         (["--sections", "memories,,recent"], "--sections"),
                         (["--sections", "nope"], "nope")):
        got = _cli("context", "--user", "alice", *argv, "--db", db, "--embedder", "fake")
        assert got.exit_code == 2, (argv, got.output)
        assert needle in got.output, (argv, got.output)


def test_cli_without_a_database_says_the_fix(tmp_path: Path) -> None:
    got = _cli("context", "--user", "alice", "--db", str(tmp_path / "missing.db"),
               "--embedder", "fake")
    assert got.exit_code == 1 and "no database at" in got.stderr


def _state() -> ServerState:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    state: ServerState = app.state.remem
    return state


def test_mcp_get_context_answers_the_python_json() -> None:
    state = _state()
    who = Principal("acme")
    _fill(state.memory_for(who))
    threads = state.threads_for(who)
    threads.create("t1")
    threads.append("t1", [{"role": "user", "content": "dinner ideas?"}])
    want = ContextOut.of(state.memory_for(who).context(
        "tea", user_id="alice", thread_id="t1", threads=threads, budget_tokens=40,
    )).model_dump(mode="json")
    server = build_mcp(state, lambda ctx: who, context=True)
    other = build_mcp(state, lambda ctx: Principal("other"), context=True)

    async def calls() -> tuple[Any, Any, Any, tuple[Any, Any]]:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            good = await client.call_tool("get_context", {
                "query": "tea", "user_id": "alice", "thread_id": "t1", "budget_tokens": 40})
            bad = await client.call_tool("get_context", {"budget_tokens": -5})
        async with Client(other) as client:
            foreign = (await client.call_tool("get_context", {
                "query": "tea", "user_id": "alice", "thread_id": "t1"}),
                await client.call_tool("get_context", {"query": "tea", "user_id": "alice"}))
        return tools["get_context"], good, bad, foreign

    tool, good, bad, foreign = asyncio.run(calls())
    assert "token_counter" not in tool.input_schema["properties"]
    assert set(tool.input_schema["properties"]) >= {"query", "budget_tokens", "sections"}
    assert not good.is_error and json.loads(good.content[0].text) == want
    assert bad.is_error and "budget_tokens" in bad.content[0].text
    # another tenant: the thread is missing for it, alice's memories are not there
    assert foreign[0].is_error and "t1" in foreign[0].content[0].text
    assert "tea" not in foreign[0].content[0].text
    assert not foreign[1].is_error and json.loads(foreign[1].content[0].text)["text"] == ""
    state.close()


def test_get_context_is_opt_in() -> None:
    state = _state()

    async def names() -> set[str]:
        async with Client(build_mcp(state, lambda ctx: Principal("acme"))) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert "get_context" not in asyncio.run(names())
    state.close()
