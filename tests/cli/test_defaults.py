"""One set of defaults: every command opens the same database with the same embedder
(remem.settings), and a database with vectors is never searched by keywords alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from remem.cli import cli
from remem.embed import FakeEmbedder
from remem.errors import ConfigError, IndexConfigError
from remem.settings import DEFAULT_DB, DEFAULT_EMBEDDER, load_settings
from remem.store import IndexConfig, open_store


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("REMEM_DB", "REMEM_EMBEDDER", "REMEM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def commands(group: click.Group = cli, path: str = "remem") -> Iterator[tuple[str, click.Command]]:
    for name, command in group.commands.items():
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from commands(command, f"{path} {name}")


def defaults(option: str) -> dict[str, str]:
    """The value each command's ``option`` takes when it is not given."""
    found = {}
    for name, command in commands():
        for param in command.params:
            if option in getattr(param, "opts", ()) and param.expose_value:
                found[name] = param.process_value(click.Context(command), None)
    return found


def test_every_command_opens_the_same_database_with_the_same_embedder(clean: Path) -> None:
    dbs, embedders = defaults("--db"), defaults("--embedder")
    # the memory, store, thread, chat and service commands all have both
    for name in ("remem add", "remem search", "remem history", "remem store", "remem threads ls",
                 "remem chat", "remem serve", "remem keys", "remem mcp"):
        assert dbs[name] == DEFAULT_DB == "remem.db", name
    for name in [n for n in dbs if n.startswith("remem eval ")]:
        # a benchmark runs in a temporary database unless told otherwise (--through memory)
        assert dbs.pop(name) is None, name
    assert set(dbs.values()) == {"remem.db"}, dbs
    for name in [n for n in embedders if n.startswith("remem eval ")]:
        embedders.pop(name)  # benchmarks of embedders over a temporary store, not a database
    assert set(embedders.values()) == {DEFAULT_EMBEDDER} == {"local"}, embedders


def test_precedence_option_environment_config_file_default(clean: Path) -> None:
    assert load_settings(environ={}).source == {"db": "default", "embedder": "default"}
    (clean / "remem.toml").write_text('db = "from-file.db"\nembedder = "fake"\n')
    assert (load_settings(environ={}).db, load_settings(environ={}).embedder) == \
        ("from-file.db", "fake")
    env = {"REMEM_DB": "from-env.db"}
    assert load_settings(environ=env).db == "from-env.db"
    assert load_settings(environ=env).embedder == "fake"  # each setting on its own
    assert load_settings(db="opt.db", environ=env).db == "opt.db"
    other = clean / "elsewhere.toml"
    other.write_text('embedder = "none"\n')
    named = load_settings(environ={"REMEM_CONFIG": str(other)})
    assert (named.db, named.embedder) == ("remem.db", "none")
    assert named.source["embedder"] == str(other)


@pytest.mark.parametrize(("text", "message"), [
    ('dbb = "x.db"\n', "unknown key 'dbb'"),
    ("db = 3\n", "db must be a non-empty string"),
    ('embedder = "bert"\n', "embedder must be one of"),
    ("db = \n", "cannot read it as TOML"),
])
def test_a_bad_config_file_names_the_key_and_the_rule(clean: Path, text: str,
                                                     message: str) -> None:
    (clean / "remem.toml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_settings(environ={})


def test_a_missing_config_file_named_by_the_environment_is_an_error(clean: Path) -> None:
    with pytest.raises(ConfigError, match="REMEM_CONFIG names"):
        load_settings(environ={"REMEM_CONFIG": str(clean / "nope.toml")})


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_a_database_with_vectors_is_not_searched_by_keywords_only(clean: Path) -> None:
    added = run("add", "Alice drinks green tea every morning", "--user", "alice", "--no-infer",
                "--embedder", "fake", "--json")
    assert added.exit_code == 0, added.output
    refused = run("search", "beverage", "--user", "alice", "--embedder", "none")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "holds vectors made with 'fake-" in refused.stderr
    assert "--embedder fake" in refused.stderr
    assert "no memories found" not in refused.output
    # REMEM_EMBEDDER is the other fix the message names
    found = run("search", "green tea", "--user", "alice", "--json",
                env={"REMEM_EMBEDDER": "fake"})
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"][0]["memory"]["text"].startswith("Alice drinks")


def test_the_config_file_sets_every_command(clean: Path) -> None:
    (clean / "remem.toml").write_text('db = "team.db"\nembedder = "fake"\n')
    assert run("add", "Bob plays chess", "--user", "bob", "--no-infer").exit_code == 0
    assert (clean / "team.db").exists() and not (clean / "remem.db").exists()
    listed = run("store", "--json", "namespaces")
    assert listed.exit_code == 0, listed.output
    assert ["memories", "user", "bob"] in json.loads(listed.stdout)


def test_open_store_refuses_a_keyword_only_open_of_a_database_with_vectors(
        tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    with open_store(path, index=IndexConfig(FakeEmbedder(8))) as store:
        store.put(("a",), "k", {"text": "hello"})
    with pytest.raises(IndexConfigError, match=r"vectors made with 'fake-8'.*--embedder fake"):
        open_store(path, strict=True)
    with open_store(path) as store:  # not strict: reading items back (tests, bookkeeping)
        assert store.get(("a",), "k") is not None
    plain = tmp_path / "plain.db"
    with open_store(plain, strict=True) as store:  # nothing to miss: keyword-only is fine
        store.put(("a",), "k", {"text": "hello"})
    open_store(plain, strict=True).close()


def test_the_service_commands_refuse_a_keyword_only_open_too(clean: Path) -> None:
    assert run("add", "Carol likes jazz", "--user", "carol", "--no-infer",
               "--embedder", "fake").exit_code == 0
    refused = run("mcp", "--embedder", "none")
    assert refused.exit_code == 1 and "--embedder fake" in refused.stderr


def test_a_rewind_on_the_command_line_takes_the_words_out_of_thread_search(
        clean: Path) -> None:
    from remem.messages import Message
    from remem.store import KeywordConfig
    from remem.threads import ThreadIndex, ThreadStore

    db = clean / "remem.db"
    store = open_store(db, index=IndexConfig(FakeEmbedder(), fields=("text",)),
                       keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(db, index=ThreadIndex(store)) as threads:
        chat = threads.create("t", metadata={"user_id": "u"})
        first = chat.append(Message.user("book a table for two"))
        chat.append(Message.user("My passport number is X123"))
    env = {"REMEM_EMBEDDER": "fake"}
    before = run("threads", "search", "passport", "--json", env=env)
    assert json.loads(before.stdout)["hits"][0]["thread_id"] == "t"
    assert run("threads", "rewind", "t", first.id, env=env).exit_code == 0
    after = run("threads", "search", "passport", "--json", env=env)
    assert all("passport" not in m["text"] for hit in json.loads(after.stdout)["hits"]
               for m in hit["matches"])
    with open_store(db) as raw:
        assert raw.search(("threads",), query="passport", mode="keyword") == []


def test_store_namespaces_hides_the_bookkeeping_unless_asked(clean: Path) -> None:
    for user in ("alice", "bob"):
        assert run("add", f"{user} likes tea", "--user", user, "--no-infer",
                   "--embedder", "fake").exit_code == 0
    env = {"REMEM_EMBEDDER": "fake"}
    shown = json.loads(run("store", "--json", "namespaces", env=env).stdout)
    assert shown == [["memories", "user", "alice"], ["memories", "user", "bob"]]
    every = json.loads(run("store", "--json", "namespaces", "--all", env=env).stdout)
    assert any(ns[0].startswith("_remem") for ns in every) and len(every) > len(shown)
    text = run("store", "namespaces", "--limit", "1", "--offset", "1", env=env).stdout
    assert text == "memories.user.bob\n"


def test_ids_never_wrap_in_80_columns(clean: Path) -> None:
    env = {"REMEM_EMBEDDER": "fake", "COLUMNS": "80"}
    for text in ("Alice drinks green tea every single morning before she goes to work "
                 "at the observatory on the hill", "Alice plays the cello"):
        assert run("add", text, "--user", "alice", "--no-infer", env=env).exit_code == 0
    listed = json.loads(run("list", "--user", "alice", "--json", env=env).stdout)
    ids = [m["id"] for m in listed["memories"]]
    assert len(ids) == 2
    for command in (["list", "--user", "alice"], ["search", "tea", "--user", "alice"]):
        out = run(*command, env=env).stdout  # shortened to their unique end, never wrapped
        whole = run(*command, "--full-ids", env=env).stdout
        for memory_id in ids if command[0] == "list" else ids[:1]:
            assert any("…" + memory_id[-8:] in line for line in out.splitlines()), out
            assert any(memory_id in line for line in whole.splitlines()), (memory_id, whole)
            assert all(len(line) <= 80 for line in whole.splitlines()), whole
    from remem.threads import ThreadStore

    long_id = "support-conversation-2026-11-25-customer-4711-billing"
    with ThreadStore(clean / "remem.db") as threads:
        threads.create(long_id, metadata={"user_id": "alice", "topic": "x" * 50})
    out = run("threads", "ls", "--full-ids", env=env).stdout
    assert any(long_id in line for line in out.splitlines()), out
    assert all(len(line) <= 80 for line in out.splitlines()), out


def test_tenant_sees_what_the_server_wrote_for_that_tenant(clean: Path) -> None:
    """Memories written by `remem serve` live under tenants.<t>; --tenant reads and writes
    that tenant's view, as the server's keys do."""
    from remem.server.state import Principal, ServerConfig, ServerState

    state = ServerState.open(ServerConfig(db=clean / "remem.db", embedder=FakeEmbedder()))
    try:
        state.memory_for(Principal("acme")).add("Alice drinks green tea", user_id="alice",
                                                infer=False)
    finally:
        state.close()
    env = {"REMEM_EMBEDDER": "fake"}
    mine = json.loads(run("list", "--user", "alice", "--json", env=env).stdout)
    assert mine["memories"] == []  # not the default view's
    acme = run("list", "--user", "alice", "--tenant", "acme", "--json", env=env)
    assert acme.exit_code == 0, acme.output
    assert [m["text"] for m in json.loads(acme.stdout)["memories"]] == ["Alice drinks green tea"]
    found = json.loads(run("search", "green tea", "--user", "alice", "--tenant", "acme",
                           "--json", env=env).stdout)
    assert found["hits"][0]["memory"]["text"] == "Alice drinks green tea"
    assert run("add", "Alice moved to Lisbon", "--user", "alice", "--tenant", "acme",
               "--no-infer", env=env).exit_code == 0
    state = ServerState.open(ServerConfig(db=clean / "remem.db", embedder=FakeEmbedder()))
    try:
        texts = {m.text for m in state.memory_for(Principal("acme")).get_all(user_id="alice")}
    finally:
        state.close()
    assert texts == {"Alice drinks green tea", "Alice moved to Lisbon"}
    bad = run("list", "--user", "alice", "--tenant", "a/b", env=env)
    assert bad.exit_code == 2 and "tenant" in bad.stderr


def test_another_embedder_than_the_vectors_is_refused_with_the_cli_fix(clean: Path) -> None:
    assert run("add", "Alice drinks tea", "--user", "alice", "--no-infer",
               "--embedder", "fake").exit_code == 0
    for command in (["search", "tea", "--user", "alice"], ["store", "namespaces"],
                    ["threads", "search", "tea"]):
        refused = run(*command, env={"REMEM_EMBEDDER": "local"})
        assert refused.exit_code == 1, (command, refused.output)
        assert "holds vectors of model 'fake-" in refused.stderr
        assert "--embedder fake" in refused.stderr, refused.stderr


def test_mcp_names_the_embedder_of_the_vectors(clean: Path) -> None:
    assert run("add", "Dan rides bikes", "--user", "dan", "--no-infer",
               "--embedder", "fake").exit_code == 0
    refused = run("mcp", env={"REMEM_EMBEDDER": "local"})
    assert refused.exit_code == 1 and "--embedder fake" in refused.stderr, refused.stderr
