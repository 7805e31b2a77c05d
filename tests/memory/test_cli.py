"""The memory commands: add, search, get, list, update, delete, forget, history, undo,
export, import."""

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
    events = ok_json("history", memory["id"], "--db", db)["events"]
    assert [e["op"] for e in events] == ["add"]
    undone = ok_json("undo", events[0]["id"], "--db", db)
    assert undone["changes"][0]["op"] == "remove"  # undoing an add removes the record
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
    assert "…" + added["changes"][0]["memory"]["id"][-8:] in table.output
    whole = run("search", "cat", "--user", "u", "--db", db, "--full-ids")
    assert added["changes"][0]["memory"]["id"] in whole.output


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
    """Without a chat model an add stores the text as given and says so; --infer asks for
    extraction and fails naming the settings and the fix."""
    for name in ("REMEM_LLM_PROVIDER", "REMEM_LLM_MODEL", "REMEM_LLM_BASE_URL",
                 "REMEM_LLM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    stored = CliRunner().invoke(cli, ["add", "I live in Berlin", "--user", "u", "--db", db,
                                      "--embedder", "fake"], prog_name="remem")
    assert stored.exit_code == 0, stored.output
    assert "I live in Berlin" in stored.stdout
    assert "stored as given: no chat model is configured" in stored.stdout
    result = CliRunner().invoke(cli, ["add", "I live in Berlin", "--user", "u", "--db", db,
                                      "--embedder", "fake", "--infer"], prog_name="remem")
    assert result.exit_code == 1
    assert "REMEM_LLM_MODEL" in result.stderr and "--no-infer" in result.stderr


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (("search", "--db", "/nonexistent/x.db"), 1, "no database at"),
    (("history", "mem_nope"), 1, "no memory with id 'mem_nope'"),
    (("undo", "evt_nope"), 1, "no event"),
    (("add", "", "--no-infer", "--user", "u"), 2, "nothing to remember"),
    (("add", "x", "--no-infer"), 2, "no scope given: pass --user ID"),
    (("list",), 2, "list needs a scope: pass --user, --agent, --thread or --namespace"),
    (("forget", "--yes"), 2, "forget needs a scope: pass --user, --agent, --thread or"),
    (("search", "--limit", "0"), 2, "Invalid value for '--limit': 0 is not in the range"),
    (("search", "--mmr", "2"), 2, "Invalid value for '--mmr'"),
    (("search", "--as-of", "yesterday"), 2, "'yesterday' is not a time"),
    (("search", "--user", "a\x01b"), 2, "--user: String should match pattern"),
    (("update", "mem_nope", "x"), 1, "no memory with id 'mem_nope'"),
    (("update", "x", "{oops"), 2, "starts with '{' but is not a JSON object"),
    (("delete", "x", "--if-version", "0"), 2, "Invalid value for '--if-version'"),
])
def test_errors_are_one_line(db: str, args: tuple[str, ...], code: int,
                             fragment: str) -> None:
    if args[:2] != ("search", "--db"):
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


def test_get_list_update_delete(db: str) -> None:
    first = ok_json("add", "Has a cat", "--user", "u", "--no-infer", "--db", db)
    ok_json("add", "Lives in Porto", "--user", "u", "--no-infer", "--db", db)
    memory_id = first["changes"][0]["memory"]["id"]
    assert ok_json("get", memory_id, "--db", db)["text"] == "Has a cat"
    assert f"id:          {memory_id}" in run("get", memory_id, "--db", db).output
    page = ok_json("list", "--user", "u", "--limit", "1", "--db", db)
    assert len(page["memories"]) == 1 and page["next_offset"] == 1
    assert "--offset 1" in run("list", "--user", "u", "--limit", "1", "--db", db).output
    updated = ok_json("update", memory_id, "Has two cats", "--reason", "counted",
                      "--if-version", "1", "--db", db)
    assert updated["changes"][0]["memory"]["version"] == 2
    conflict = run("update", memory_id, "Has three cats", "--if-version", "1", "--db", db)
    assert conflict.exit_code == 1 and "version" in conflict.stderr
    structured = ok_json("update", memory_id, '{"pets": 2}', "--kind", "pets", "--db", db)
    assert structured["changes"][0]["memory"]["content"] == {"pets": 2}
    events = ok_json("history", memory_id, "--db", db)["events"]
    assert [e["op"] for e in events] == ["add", "update", "update"]
    assert events[1]["reason"] == "counted"
    deleted = ok_json("delete", memory_id, "--reason", "gone", "--db", db)
    assert deleted["changes"][0]["op"] == "invalidate"
    assert [m["text"] for m in ok_json("list", "--user", "u", "--db", db)["memories"]] == [
        "Lives in Porto"]
    everything = ok_json("list", "--user", "u", "--all", "--db", db)["memories"]
    assert len(everything) == 2


def test_forget_asks_first_and_undo_brings_everything_back(db: str) -> None:
    for text in ("Has a cat", "Lives in Porto"):
        ok_json("add", text, "--user", "u", "--no-infer", "--db", db)
    ok_json("add", "Bob's note", "--user", "bob", "--no-infer", "--db", db)
    refused = run("forget", "--user", "u", "--db", db, input="n\n")
    assert refused.exit_code == 1 and "Forget every current memory of user u?" in refused.stderr
    assert len(ok_json("list", "--user", "u", "--db", db)["memories"]) == 2
    asked = run("forget", "--user", "u", "--db", db, input="y\n")
    assert asked.exit_code == 0 and asked.stdout.count("invalidate") == 2
    assert ok_json("list", "--user", "u", "--db", db)["memories"] == []
    assert len(ok_json("list", "--user", "bob", "--db", db)["memories"]) == 1
    ok_json("add", "Has a dog", "--user", "u", "--no-infer", "--db", db)
    forgotten = ok_json("forget", "--user", "u", "--yes", "--db", db)
    undone = ok_json("undo", forgotten["changes"][0]["event_id"], "--db", db)
    assert [c["op"] for c in undone["changes"]] == ["restore"]
    assert [m["text"] for m in ok_json("list", "--user", "u", "--db", db)["memories"]] == [
        "Has a dog"]


def test_search_ranking_options(db: str) -> None:
    for text in ("green tea in the morning", "black tea at night", "coffee at noon"):
        ok_json("add", text, "--user", "u", "--no-infer", "--db", db)
    every = ok_json("search", "tea", "--user", "u", "--db", db)["hits"]
    second = ok_json("search", "tea", "--user", "u", "--offset", "1", "--limit", "1",
                     "--db", db)["hits"]
    assert [h["memory"]["id"] for h in second] == [every[1]["memory"]["id"]]
    # --min-score is a relevance: the hits at the best relevance stay, in score order
    best = max(h["relevance"] for h in every)
    kept = ok_json("search", "tea", "--user", "u", "--min-score", str(best), "--db", db)
    assert [h["memory"]["id"] for h in kept["hits"]] == [
        h["memory"]["id"] for h in every if h["relevance"] >= best]
    assert kept["hits"] and all(h["relevance"] == best for h in kept["hits"])
    recent = ok_json("search", "tea", "--user", "u", "--recency-half-life", "3600",
                     "--recency-weight", "0.5", "--mmr", "0.5", "--mode", "hybrid",
                     "--db", db)["hits"]
    assert {h["memory"]["id"] for h in recent} == {h["memory"]["id"] for h in every}
    assert ok_json("search", "tea", "--user", "u", "--as-of", "946684800", "--db", db)[
        "hits"] == []
