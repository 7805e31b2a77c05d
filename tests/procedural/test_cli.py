"""``remem prompts`` and ``remem episodes`` on real database files, the model on a loopback
OpenAI-wire server."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from remem.cli import cli
from remem.testing import LoopbackServer

PROMPT = "You answer questions for {user}."
BETTER = "You answer questions for {user}.\nAlways cite a source."


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, env=env or {})


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.output


def llm_env(server: LoopbackServer) -> dict[str, str]:
    return {"REMEM_LLM_MODEL": "gpt-test", "REMEM_LLM_BASE_URL": server.url,
            "REMEM_LLM_API_KEY": "sk-test", "REMEM_LLM_PROVIDER": "openai"}


def test_prompt_lifecycle(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    assert "created qa v1 (variables: user)" in ok(run("prompts", "create", "qa", "--text",
                                                       PROMPT, "--db", db))
    ok(run("prompts", "update", "qa", "--file", "-", "--reason", "sources", "--db", db,
           input=BETTER))
    assert ok(run("prompts", "show", "qa", "--db", db)) == BETTER + "\n"
    assert ok(run("prompts", "show", "qa", "--version", "1", "--db", db)) == PROMPT + "\n"
    listed = json.loads(ok(run("prompts", "ls", "--json", "--db", db)))  # GET /v1/prompts's
    assert [(p["name"], p["version"]) for p in listed["prompts"]] == [("qa", 2)]
    assert "+Always cite a source." in ok(run("prompts", "diff", "qa", "--db", db))
    assert "rolled qa back to v1's text as v3" in ok(run("prompts", "rollback", "qa", "1",
                                                         "--db", db))
    history = ok(run("prompts", "history", "qa", "--db", db)).splitlines()
    assert [line.split()[0] for line in history] == ["v1", "v2", "v3"]
    assert "rollback to v1" in history[2] and "sources" in history[1]


def test_prompt_errors_exit_2_naming_the_rule(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    ok(run("prompts", "create", "qa", "--text", PROMPT, "--db", db))
    broken = run("prompts", "update", "qa", "--text", "No variables now", "--db", db)
    assert broken.exit_code == 2 and "drops {user}" in broken.output
    missing = run("prompts", "show", "nope", "--db", db)
    assert missing.exit_code == 1 and "no prompt named 'nope'" in missing.output
    both = run("prompts", "create", "x", "--db", db)
    assert both.exit_code == 2 and "--text TEXT or --file PATH" in both.output
    nodb = run("prompts", "ls", "--db", str(tmp_path / "none.db"))
    assert nodb.exit_code == 1 and "no database at" in nodb.output


def test_optimize_shows_the_diff_and_cost_and_commits_only_when_asked(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    ok(run("prompts", "create", "qa", "--text", PROMPT, "--db", db))
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps({
        "messages": [{"role": "user", "content": "Boiling point of water?"},
                     {"role": "assistant", "content": "100 C"}],
        "feedback": {"score": 0.1, "comment": "no source"}}) + "\n")
    rewrite = {"reasoning": "cite sources", "prompt": BETTER}
    with LoopbackServer() as server:
        server.chat.add(rewrite, rewrite)
        shown = ok(run("prompts", "optimize", "qa", "--trajectories", str(trajectories),
                       "--strategy", "prompt_memory", "--db", db, env=llm_env(server)))
        assert "+Always cite a source." in shown and "cost: 1 call(s)" in shown
        assert "not stored" in shown
        assert ok(run("prompts", "show", "qa", "--db", db)) == PROMPT + "\n"
        stored = json.loads(ok(run("prompts", "optimize", "qa", "--trajectories",
                                   str(trajectories), "--strategy", "prompt_memory",
                                   "--commit", "--json", "--db", db, env=llm_env(server))))
    assert stored["committed_version"] == 2 and stored["calls"] == 1
    assert ok(run("prompts", "show", "qa", "--db", db)) == BETTER + "\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{\"messages\": \"hi\"}\nnot json\n")
    failed = run("prompts", "optimize", "qa", "--trajectories", str(bad), "--db", db,
                 env={"REMEM_LLM_MODEL": "x", "REMEM_LLM_BASE_URL": "http://127.0.0.1:9"})
    assert failed.exit_code == 2 and "line 2 is not JSON" in failed.output


def test_episode_commands(tmp_path: Path) -> None:
    db = str(tmp_path / "e.db")
    common = ["--db", db, "--embedder", "fake"]
    ok(run("episodes", "add", "--situation", "refund a damaged parcel", "--action",
           "asked for a photo, then refunded", *common))
    ok(run("episodes", "add", "--situation", "reset a forgotten password", "--action",
           "sent a reset link", *common))
    chosen = json.loads(ok(run("episodes", "select", "parcel arrived damaged", "-k", "1",
                               "--budget", "200", "--json", *common)))
    assert [e["situation"] for e in chosen["examples"]] == ["refund a damaged parcel"]
    assert chosen["tokens"] <= 200 and [m["role"] for m in chosen["messages"]] == [
        "user", "assistant"]
    # the JSON /v1/episodes/list answers
    assert len(json.loads(ok(run("episodes", "ls", "--json", *common)))["episodes"]) == 2
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "My order is late"},
                                    {"role": "assistant", "content": "I expedited it."}]))
    with LoopbackServer() as server:
        server.chat.add({"episodes": [{"situation": "order is late",
                                       "action": "expedited shipping"}]})
        out = ok(run("episodes", "extract", "--messages", str(messages), "--thread", "t9",
                     *common, env=llm_env(server)))
    assert "1 episode(s) stored (1 call(s))" in out
    assert len(json.loads(ok(run("episodes", "ls", "--json", *common)))["episodes"]) == 3
    bad = run("episodes", "add", "--situation", "", "--action", "a", *common)
    assert bad.exit_code == 2 and "situation" in bad.output
    neither = run("episodes", "extract", *common)
    assert neither.exit_code == 2 and "--thread ID" in neither.output


def test_episodes_extract_reads_a_thread_from_the_database(tmp_path: Path) -> None:
    from remem.messages import Message
    from remem.threads import ThreadStore

    db = str(tmp_path / "e.db")
    with ThreadStore(db) as threads:
        threads.create("t1").append([Message.user("My parcel is broken"),
                                     Message.assistant("Refunded after a photo.")])
    with LoopbackServer() as server:
        server.chat.add({"episodes": [{"situation": "broken parcel",
                                       "action": "refund after photo"}]})
        out = json.loads(ok(run("episodes", "extract", "--thread", "t1", "--json", "--db", db,
                                "--embedder", "fake", env=llm_env(server))))
        sent = next(r.body for r in server.requests if r.path.endswith("/chat/completions"))
    assert [e["thread_id"] for e in out["episodes"]] == ["t1"]
    assert "My parcel is broken" in json.dumps(sent)
    missing = run("episodes", "extract", "--thread", "nope", "--db", db, "--embedder", "fake",
                  env={"REMEM_LLM_MODEL": "x", "REMEM_LLM_BASE_URL": "http://127.0.0.1:9"})
    assert missing.exit_code == 1 and "nope" in missing.output
