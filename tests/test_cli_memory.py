"""The memory commands: add, search, history, undo, export, import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from remem.cli import cli


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "mem.db")


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [*args, "--embedder", "fake"], input=input,
                              prog_name="remem", catch_exceptions=False)


def ok_json(*args: str, input: str | None = None) -> Any:
    result = run(*args, "--json", input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_add_search_history_undo(db: str) -> None:
    added = ok_json("add", "Alice drinks green tea", "--user", "alice", "--no-infer",
                    "--db", db, "--kind", "preference")
    memory = added["changes"][0]["memory"]
    assert memory["text"] == "Alice drinks green tea" and memory["kind"] == "preference"
    assert added["usage"] == {"llm_calls": 0, "input_tokens": 0, "output_tokens": 0}
    ok_json("add", "-", "--user", "alice", "--no-infer", "--db", db,
            input="Alice lives in Porto\n")
    hits = ok_json("search", "tea", "--user", "alice", "--db", db)["hits"]
    assert hits[0]["memory"]["id"] == memory["id"]
    assert ok_json("search", "--user", "bob", "--db", db)["hits"] == []
    events = ok_json("history", memory["id"], "--db", db)
    assert [e["op"] for e in events] == ["add"]
    undone = ok_json("undo", events[0]["id"], "--db", db)
    assert undone["changes"][0]["op"] == "restore"
    texts = [h["memory"]["text"] for h in ok_json("search", "--user", "alice",
                                                   "--db", db)["hits"]]
    assert texts == ["Alice lives in Porto"]
    human = run("history", memory["id"], "--db", db)
    assert "add" in human.output and "restore" in human.output


def test_search_as_of_and_all(db: str) -> None:
    added = ok_json("add", "Has a cat", "--user", "u", "--no-infer", "--db", db)
    assert ok_json("search", "--user", "u", "--db", db, "--as-of",
                   "2000-01-01")["hits"] == []
    assert len(ok_json("search", "--user", "u", "--db", db, "--all")["hits"]) == 1
    table = run("search", "cat", "--user", "u", "--db", db)
    assert added["changes"][0]["memory"]["id"][:12] in table.output


def test_export_import(db: str, tmp_path: Path) -> None:
    ok_json("add", "Has a cat", "--user", "u", "--no-infer", "--db", db)
    out = tmp_path / "m.jsonl"
    assert ok_json("export", str(out), "--db", db) == {"exported": 2, "path": str(out)}
    other = str(tmp_path / "other.db")
    assert ok_json("import", str(out), "--db", other)["imported"] == 2
    assert ok_json("search", "cat", "--user", "u", "--db", other)["hits"][0]["memory"][
        "text"] == "Has a cat"
    stdout = run("export", "-", "--db", db)
    assert len(stdout.stdout.splitlines()) == 2


def test_add_without_a_model_names_the_settings(db: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REMEM_LLM_PROVIDER", "REMEM_LLM_MODEL", "REMEM_LLM_BASE_URL",
                 "REMEM_LLM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(cli, ["add", "I live in Berlin", "--user", "u", "--db", db,
                                      "--embedder", "fake"], prog_name="remem")
    assert result.exit_code == 1
    assert "REMEM_LLM_MODEL" in result.stderr and "--no-infer" in result.stderr


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (("search", "--db", "/nonexistent/x.db"), 1, "no database at"),
    (("history", "mem_nope"), 1, "no memory with id 'mem_nope'"),
    (("undo", "evt_nope"), 1, "no event"),
    (("add", "", "--no-infer", "--user", "u"), 2, "nothing to remember"),
    (("add", "x", "--no-infer"), 2, "no scope given: pass --user ID"),
])
def test_errors_are_one_line(db: str, args: tuple[str, ...], code: int,
                             fragment: str) -> None:
    if args[0] != "search":
        run("add", "seed", "--user", "u", "--no-infer", "--db", db)
        args = (*args, "--db", db)
    result = CliRunner().invoke(cli, [*args, "--embedder", "fake"], prog_name="remem")
    assert result.exit_code == code, result.output
    assert result.stderr.startswith("error: ") and fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_memory_commands_take_a_postgres_dsn(pg_database: str) -> None:
    # a DSN is a database, not a file: search must not refuse it as missing
    added = ok_json("add", "I drink green tea", "--no-infer", "--user", "u", "--db", pg_database)
    assert [change["op"] for change in added["changes"]] == ["add"]
    found = ok_json("search", "tea", "--user", "u", "--db", pg_database)
    assert [hit["memory"]["text"] for hit in found["hits"]] == ["I drink green tea"]
