"""`remem threads` and `remem chat`: real SQLite files, the chat model over loopback HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from remem.cli import cli
from remem.messages import Message
from remem.store import KeywordConfig, SQLiteStore
from remem.testing import LoopbackServer
from remem.threads import ThreadIndex, ThreadStore


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, env=env or {})


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    store = SQLiteStore(path, keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(path, index=ThreadIndex(store)) as threads:
        trip = threads.create("trip", metadata={"user_id": "ada"})
        for text in ("I want to visit Lisbon in spring", "Book a hotel near the river"):
            trip.append([Message.user(text), Message.assistant("Noted: " + text.lower())])
        cooking = threads.create("cook", metadata={"user_id": "ada"})
        cooking.append([Message.user("我想学做北京烤鸭"), Message.assistant("先准备鸭子和酱料")])
        threads.create("other", metadata={"user_id": "bob"}).append(Message.user("hello"))
    return path


def test_ls_text_and_json(db: Path) -> None:
    result = run("threads", "ls", "--db", str(db))
    assert result.exit_code == 0, result.output
    assert "trip" in result.output and "cook" in result.output and "other" in result.output
    result = run("threads", "ls", "--db", str(db), "--user", "ada", "--json")
    data = json.loads(result.output)
    assert sorted(t["thread_id"] for t in data) == ["cook", "trip"]
    assert {t["thread_id"]: t["length"] for t in data} == {"cook": 2, "trip": 4}
    result = run("threads", "ls", "--db", str(db), "--filter", '{"user_id": {"$in": 3}}')
    assert result.exit_code == 2 and "$in" in result.output


def test_show_messages_checkpoints_and_time_travel(db: Path) -> None:
    result = run("threads", "show", "trip", "--db", str(db))
    assert result.exit_code == 0, result.output
    assert "user: I want to visit Lisbon in spring" in result.output
    assert "assistant: Noted: book a hotel near the river" in result.output
    data = json.loads(run("threads", "show", "trip", "--db", str(db), "--checkpoints",
                          "--json").output)
    checkpoints = data["checkpoints"]
    assert [cp["position"] for cp in checkpoints] == [4, 2, 0]
    first_turn = checkpoints[1]["id"]
    old = json.loads(run("threads", "show", "trip", "--db", str(db), "--checkpoint",
                         first_turn, "--json").output)
    assert [m["content"][0]["text"] for m in old["messages"]] == [
        "I want to visit Lisbon in spring", "Noted: i want to visit lisbon in spring"]
    result = run("threads", "rewind", "trip", first_turn, "--db", str(db))
    assert result.exit_code == 0 and "2 messages" in result.output
    assert json.loads(run("threads", "ls", "--db", str(db), "--user", "ada",
                          "--json").output)[0]["length"] == 2


def test_fork_copy_and_rm(db: Path) -> None:
    result = run("threads", "fork", "trip", "--id", "trip2", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["length"] == 4
    result = run("threads", "fork", "trip", "--copy", "--id", "trip3", "--db", str(db))
    assert "copied trip into trip3 (4 messages)" in result.output
    result = run("threads", "rm", "trip", "nope", "--db", str(db), "--json")
    assert json.loads(result.output) == {"deleted": ["trip"], "missing": ["nope"]}
    shown = run("threads", "show", "trip2", "--db", str(db), "--last", "1")
    assert "messages (last 1 of 4)" in shown.output and "book a hotel" in shown.output
    missing = run("threads", "show", "trip", "--db", str(db))
    assert missing.exit_code == 1 and "does not exist" in missing.output
    bad = run("threads", "fork", "trip2", "--checkpoint", "ckpt_nope", "--db", str(db))
    assert bad.exit_code == 1 and "not a checkpoint of thread 'trip2'" in bad.output


def test_missing_database_is_an_error(tmp_path: Path) -> None:
    result = run("threads", "ls", "--db", str(tmp_path / "none.db"))
    assert result.exit_code == 1 and "no database at" in result.output
    assert not (tmp_path / "none.db").exists()


def test_search_finds_threads_by_keywords(db: Path) -> None:
    data = json.loads(run("threads", "search", "hotel by the river", "--db", str(db),
                          "--json").output)["hits"]  # POST /v1/threads/search's document
    assert data[0]["thread_id"] == "trip"
    assert data[0]["matches"][0]["text"] == "Book a hotel near the river"
    result = run("threads", "search", "烤鸭", "--db", str(db), "--user", "ada")
    assert result.exit_code == 0 and result.output.startswith("cook")
    result = run("threads", "search", "hello", "--db", str(db), "--user", "ada")
    assert "no matching threads" in result.output


# -- remem chat ----------------------------------------------------------------------------


def llm_env(server: LoopbackServer) -> dict[str, str]:
    return {"REMEM_LLM_MODEL": "gpt-test", "REMEM_LLM_BASE_URL": server.url,
            "REMEM_LLM_API_KEY": "sk-test", "REMEM_LLM_PROVIDER": "openai"}


def chat_bodies(server: LoopbackServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def test_chat_without_a_model_names_the_variables(tmp_path: Path) -> None:
    env = {name: "" for name in ("REMEM_LLM_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    result = run("chat", "--db", str(tmp_path / "c.db"), input="hi\n", env=env)
    assert result.exit_code == 1
    assert "REMEM_LLM_MODEL" in result.output and "REMEM_LLM_BASE_URL" in result.output


def test_chat_keeps_the_thread_and_uses_memory(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    with LoopbackServer() as server:
        server.chat.add(
            "Nice to meet you, Ada! Lisbon is lovely in spring.",
            "You are planning a spring trip to Lisbon.",
            {"inserts": [{"memory": {"content": "Is planning a trip to Lisbon in spring"}}]},
        )
        first = run("chat", "--db", path, "--thread", "t1", "--user", "ada",
                    input="Hi, I'm Ada and I plan a trip to Lisbon in spring.\n"
                          "What am I planning?\n/exit\n", env=llm_env(server))
        assert first.exit_code == 0, first.output
        assert "thread t1 (new, 0 messages)" in first.output
        assert "assistant> You are planning a spring trip to Lisbon." in first.output
        assert "remembered: Is planning a trip to Lisbon in spring" in first.output
        bodies = chat_bodies(server)
        # the second turn carried the first one from the thread
        assert [m["role"] for m in bodies[1]["messages"]] == [
            "system", "user", "assistant", "user"]

        server.chat.add("Welcome back! Pack for mild weather in Lisbon.")
        second = run("chat", "--db", path, "--thread", "t1", "--user", "ada", "--no-remember",
                     input="Any tips for my trip?\n", env=llm_env(server))
        assert second.exit_code == 0, second.output
        assert "thread t1 (resumed, 4 messages)" in second.output
        assert "saved thread t1: 6 messages" in second.output
        request = chat_bodies(server)[-1]["messages"]
        # resumed history plus the memory in the system prompt
        assert "Is planning a trip to Lisbon in spring" in request[0]["content"]
        assert [m["role"] for m in request] == ["system", "user", "assistant", "user",
                                                "assistant", "user"]
    with ThreadStore(path) as threads:
        texts = [m.text for m in threads.messages("t1")]
    assert texts[-2:] == ["Any tips for my trip?", "Welcome back! Pack for mild weather in Lisbon."]
    # the chat's messages are searchable as past threads
    found = json.loads(run("threads", "search", "Lisbon spring", "--db", path,
                           "--user", "ada", "--json").output)["hits"]
    assert found[0]["thread_id"] == "t1"


def test_chat_survives_a_failed_model_call(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    with LoopbackServer() as server:
        server.enqueue(status=400, body={"error": {"message": "bad request", "type": "x"}})
        server.chat.add("second try works")
        result = run("chat", "--db", path, "--no-remember", "--memories", "0",
                     input="first\nsecond\n", env=llm_env(server))
    assert result.exit_code == 0, result.output
    assert "error:" in result.output and "assistant> second try works" in result.output
    assert "2 messages" in result.output  # the failed turn was not saved
