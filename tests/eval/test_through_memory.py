"""``remem eval ... --through memory``: each session added with Memory.add(infer=False) and each
question asked of Memory.search, on SQLite and PostgreSQL; and the extraction path with a
scripted model."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from remem.api import Memory
from remem.cli import cli
from remem.embed import FakeEmbedder
from remem.eval.locomo import TurnMemory
from remem.eval.memory_retriever import MemoryRetriever
from tests.memory_support import make_store, rule_model

DATA = Path(__file__).parent.parent / "data" / "eval"
FILES = {"memdaily": DATA / "memdaily_zh.json", "longmemeval": DATA / "longmemeval_mini.json",
         "locomo": DATA / "locomo_facts_mini.json"}
DAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def turns() -> list[TurnMemory]:
    said = [(1, "Caroline", "Caroline: I went to a support group yesterday"),
            (1, "Melanie", "Melanie: That sounds great, how was it?"),
            (2, "Melanie", "Melanie: I painted a sunrise last week"),
            (2, "Caroline", "Caroline: Painting is lovely")]
    out, seen = [], {1: 0, 2: 0}
    for session, speaker, text in said:
        seen[session] += 1
        out.append(TurnMemory("c1", f"D{session}:{seen[session]}", speaker, text, session,
                              seen[session], DAY.replace(day=DAY.day + session)))
    return out


def run(command: str, *args: str) -> dict[str, Any]:
    result: Result = CliRunner().invoke(cli, ["eval", command, str(FILES[command]),
                                              "--embedder", "fake", "--bootstrap", "0",
                                              "--json", *args])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.fixture(params=["sqlite", "postgres"])
def memory(request: pytest.FixtureRequest) -> Memory:
    if request.param == "postgres":
        return Memory.open(request.getfixturevalue("pg_database"), embedder=FakeEmbedder())
    return Memory(make_store("sqlite"), owns_store=True)


def test_turns_go_through_memory_add_and_come_back_as_turn_ids(memory: Memory) -> None:
    retriever = MemoryRetriever(memory)
    retriever.ingest("c1", turns())
    records = memory.get_all(namespace=retriever.namespace("c1")).memories
    by_id = {r.source.message_ids[0]: r for r in records}
    assert set(by_id) == {"D1:1", "D1:2", "D2:1", "D2:2"}
    assert by_id["D2:1"].source.speaker == "Melanie" and by_id["D2:1"].source.turn == 1
    assert by_id["D1:2"].source.thread_id == "c1:session_1"
    assert by_id["D2:1"].event_time == (DAY.replace(day=10)).timestamp()
    ranked = retriever.rank("c1", "When did Caroline go to the support group?", 3)
    assert ranked[0] == "D1:1" and len(ranked) == 3
    assert retriever.rank("c2", "anything", 3) == []  # another conversation's namespace
    memory.close()


def test_extraction_through_the_formation_pipeline_with_a_scripted_model() -> None:
    memory = Memory(make_store("sqlite"), llm=rule_model(), owns_store=True)
    retriever = MemoryRetriever(memory, infer=True)
    said = [TurnMemory("c1", "D1:1", "Ann", "I live in Oslo", 1, 1, DAY),
            TurnMemory("c1", "D1:2", "Ann", "I like tea", 1, 2, DAY),
            TurnMemory("c1", "D2:1", "Ann", "I work at Acme", 2, 1, DAY.replace(day=9))]
    retriever.ingest("c1", said)
    facts = {r.text: r for r in memory.get_all(namespace=retriever.namespace("c1")).memories}
    assert set(facts) == {"Lives in Oslo", "I like tea", "Works at Acme"}
    assert facts["Works at Acme"].source.thread_id == "c1:session_2"
    assert facts["Works at Acme"].source.speaker == "Ann"
    # a fact counts for the turns of the session it was extracted from
    assert retriever.rank("c1", "Acme", 2)[:1] == ["D2:1"]
    memory.close()


@pytest.mark.parametrize("command", ["locomo", "memdaily", "longmemeval"])
def test_every_eval_command_runs_through_memory(command: str, tmp_path: Path) -> None:
    store = run(command, "--through", "store", "--backend", "memory")
    through = run(command, "--through", "memory", "--out", str(tmp_path))
    assert through["config"]["through"] == "memory" and store["config"]["through"] == "store"
    assert through["main"]["n"] == store["main"]["n"] > 0
    records = [json.loads(line) for line in
               (tmp_path / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert records and any(r["ranking"] for r in records)
    # the memory path finds gold, as the store path does on these small files
    assert through["main"]["recall@10"] >= 0.5 and store["main"]["recall@10"] >= 0.5


def test_through_memory_on_postgresql(pg_database: str) -> None:
    doc = run("locomo", "--through", "memory", "--db", pg_database)
    assert doc["config"]["through"] == "memory" and doc["main"]["n"] > 0
    assert doc["config"]["backend"] == "postgresql"  # the database it ran in, not --backend


def test_db_needs_through_memory() -> None:
    result = CliRunner().invoke(cli, ["eval", "locomo", str(FILES["locomo"]), "--embedder",
                                      "fake", "--bootstrap", "0", "--db", "x.db"])
    assert result.exit_code == 2 and "--through memory" in result.stderr


def test_extract_runs_the_formation_pipeline_with_the_configured_model() -> None:
    """``--extract``: each session goes through Memory.add(infer=True) with the model
    REMEM_LLM_* configure (here a loopback server speaking OpenAI's wire format)."""
    from remem.testing import LoopbackServer
    from remem.testing.chat_server import ChatCall

    def one_fact(call: ChatCall) -> dict[str, Any]:
        # the session's last words as its one fact: findable by the session's questions
        said = call.messages[-1].text.strip().splitlines()[-1]
        return {"inserts": [{"memory": {"content": said[-300:]}}]}

    with LoopbackServer() as server:
        server.chat.default = one_fact
        env = {"REMEM_LLM_MODEL": "gpt-test", "REMEM_LLM_BASE_URL": server.url,
               "REMEM_LLM_API_KEY": "sk-test", "REMEM_LLM_PROVIDER": "openai",
               "REMEM_LLM_MAX_RETRIES": "0"}
        result = CliRunner().invoke(cli, [
            "eval", "locomo", str(FILES["locomo"]), "--embedder", "fake", "--bootstrap", "0",
            "--json", "--through", "memory", "--extract"], env=env)
        calls = server.requests_to("/v1/chat/completions")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc = json.loads(result.stdout)
    assert doc["config"]["through"] == "memory" and doc["config"]["extract"] is True
    sessions = {(c["sample_id"], key) for c in json.loads(FILES["locomo"].read_text())
                for key in c["conversation"] if re.fullmatch(r"session_\d+", key)}
    assert len(calls) >= len(sessions) > 0  # one extraction (or more) per session
    assert doc["main"]["n"] > 0 and doc["main"]["recall@50"] > 0


def test_extract_without_a_model_names_the_setting_and_needs_through_memory() -> None:
    base = ["eval", "locomo", str(FILES["locomo"]), "--embedder", "fake", "--bootstrap", "0"]
    result = CliRunner().invoke(cli, [*base, "--through", "memory", "--extract"],
                                env={"REMEM_LLM_MODEL": None})
    assert result.exit_code == 1
    assert "--extract needs a chat model" in result.stderr and "REMEM_LLM_MODEL" in result.stderr
    result = CliRunner().invoke(cli, [*base, "--extract"])
    assert result.exit_code == 2 and "--through memory" in result.stderr
