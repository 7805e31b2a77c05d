"""The ``remem`` command line: commands, output formats, exit codes and the docs' help text."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click import Option
from click.testing import CliRunner, Result

import remem
from remem.cli import cli
from remem.cli.common import format_namespace, parse_namespace
from remem.errors import NamespaceError, StoreError

DOCS = Path(__file__).resolve().parent.parent.parent / "docs" / "cli.md"
STORE_COMMANDS = ("put", "get", "delete", "search", "namespaces", "sweep", "export", "import",
                  "reindex")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def invoke(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Run the CLI in-process; an exception escaping the error policy fails the test."""
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)


def store(db: Path, *args: str, input: str | None = None) -> Result:
    """``remem store --db DB ARGS...``."""
    return invoke("store", "--db", str(db), *args, input=input)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def error_line(result: Result, code: int) -> str:
    """The single ``error:`` line of a failed run (checked: exit code, nothing else printed)."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture
def filled(db: Path) -> Path:
    """A store with a few items in several namespaces."""
    def put(*args: str) -> None:  # no embedder: these items have no vectors
        ok(store(db, "--embedder", "none", "put", *args))

    put("users.u1.memories", "m1", '{"text": "likes tea", "stars": 5}')
    put("users.u1.memories", "m2", '{"text": "hates rain", "stars": 1}')
    put("users.u2.memories", "m1", '{"text": "plays chess", "stars": 3}')
    put("users.u2.prefs", "theme", '{"theme": "dark"}')
    put('["users", "alice@example.com"]', "note", '{"text": "dotted label"}')
    return db


# -- entry point and help -----------------------------------------------------------------------


def test_version() -> None:
    assert ok(invoke("--version")).stdout == f"remem {remem.__version__}\n"


def test_help_lists_every_store_command() -> None:
    text = ok(invoke("store", "--help")).stdout
    for command in STORE_COMMANDS:
        assert re.search(rf"^  {command}\s", text, re.MULTILINE), command
    assert "keyword search only" in " ".join(text.split())


def test_subprocess_entry_point(db: Path) -> None:
    """``python -m remem.cli`` runs the installed entry point in a real process."""
    base = [sys.executable, "-m", "remem.cli", "store", "--db", str(db)]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    env.pop("REMEM_DB", None)

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], input=stdin, capture_output=True, text=True,
                              env=env, timeout=60, check=False)

    put = run("put", "users.u1", "prefs", "-", stdin='{"theme": "dark", "name": "Zoë"}')
    assert put.returncode == 0, put.stderr
    got = run("get", "users.u1", "prefs", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["value"] == {"theme": "dark", "name": "Zoë"}
    missing = run("get", "users.u1", "nope")
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert missing.stderr == "error: no item 'nope' in users.u1\n"
    bad = run("put", "users.u1", "k", "{oops")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1
    version = subprocess.run([sys.executable, "-m", "remem.cli", "--version"],
                             capture_output=True, text=True, check=False, timeout=60)
    assert version.stdout == f"remem {remem.__version__}\n"


# -- put / get / delete -------------------------------------------------------------------------


def test_put_then_get_text_and_json(db: Path) -> None:
    assert ok(store(db, "put", "users.u1", "prefs", '{"theme": "dark"}')).stdout == (
        "stored 'prefs' in users.u1\n"
    )
    text = ok(store(db, "get", "users.u1", "prefs")).stdout
    assert "namespace: users.u1" in text
    assert "expires:   never" in text
    assert '"theme": "dark"' in text
    item = as_json(store(db, "--json", "get", "users.u1", "prefs"))
    assert item["namespace"] == ["users", "u1"]
    assert item["key"] == "prefs"
    assert item["value"] == {"theme": "dark"}
    assert item["expires_at"] is None


def test_put_json_output_and_ttl(db: Path) -> None:
    out = as_json(store(db, "--json", "put", "a", "k", '{"x": 1}', "--ttl", "60"))
    assert out == {"stored": True, "namespace": ["a"], "key": "k", "ttl": 60.0}
    assert as_json(store(db, "--json", "get", "a", "k"))["expires_at"] is not None


def test_put_reads_value_from_stdin(db: Path) -> None:
    ok(store(db, "put", "notes", "n1", "-", input='{"text": "from stdin", "tags": ["a"]}\n'))
    assert as_json(store(db, "--json", "get", "notes", "n1"))["value"] == {
        "text": "from stdin", "tags": ["a"]
    }


def test_options_after_the_subcommand(db: Path, tmp_path: Path) -> None:
    ok(invoke("store", "put", "a", "k", '{"x": 1}', "--db", str(db)))
    item = json.loads(ok(invoke("store", "get", "a", "k", "--json", "--db", str(db))).stdout)
    assert item["value"] == {"x": 1}
    # a --db after the subcommand wins over the group's
    other = tmp_path / "other.db"
    ok(invoke("store", "--db", str(other), "put", "b", "k", '{}', "--db", str(db)))
    assert not other.exists()
    ok(store(db, "get", "b", "k"))


def test_db_from_environment(db: Path) -> None:
    ok(invoke("store", "put", "a", "k", '{"x": 1}', env={"REMEM_DB": str(db)}))
    assert db.exists()
    result = invoke("store", "--json", "get", "a", "k", env={"REMEM_DB": str(db)})
    assert as_json(result)["value"] == {"x": 1}


def test_default_db_is_remem_db_in_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REMEM_DB", raising=False)
    ok(invoke("store", "put", "a", "k", "{}"))
    assert (tmp_path / "remem.db").exists()


def test_delete_reports_whether_the_item_existed(filled: Path) -> None:
    assert ok(store(filled, "delete", "users.u2.prefs", "theme")).stdout == (
        "deleted 'theme' in users.u2.prefs\n"
    )
    assert as_json(store(filled, "--json", "delete", "users.u2.prefs", "theme")) == {
        "deleted": False, "namespace": ["users", "u2", "prefs"], "key": "theme"
    }
    error_line(store(filled, "get", "users.u2.prefs", "theme"), 1)


def test_get_missing_key_exits_1(filled: Path) -> None:
    line = error_line(store(filled, "get", "users.u1.memories", "nope"), 1)
    assert line == "error: no item 'nope' in users.u1.memories"
    error_line(store(filled, "--json", "get", "users.u1.memories", "nope"), 1)


# -- namespaces syntax --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("users.u1.memories", ("users", "u1", "memories")),
        ("single", ("single",)),
        ('["users", "alice@example.com"]', ("users", "alice@example.com")),
        ('  ["a.b"]', ("a.b",)),
    ],
)
def test_parse_namespace(text: str, labels: tuple[str, ...]) -> None:
    assert parse_namespace(text) == labels


@pytest.mark.parametrize(
    "labels", [("users", "u1"), ("users", "alice@example.com"), ("[x",), ("a b", "ü")]
)
def test_format_namespace_round_trips(labels: tuple[str, ...]) -> None:
    assert parse_namespace(format_namespace(labels)) == labels


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("users..u1", "label 1 is empty"),
        ("users.", "label 1 is empty"),
        ("", "at least one label"),
        ("[]", "at least one label"),
        ('["a", 1]', "label 1 must be a string"),
        ("[oops", "not a valid JSON array"),
        ("a.*", "wildcard"),
    ],
)
def test_bad_namespace_exits_2(db: Path, text: str, problem: str) -> None:
    line = error_line(store(db, "put", text, "k", "{}"), 2)
    assert "NAMESPACE" in line
    assert problem in line
    with pytest.raises(NamespaceError):
        parse_namespace(text)


def test_labels_with_dots_round_trip_through_namespaces(filled: Path) -> None:
    listed = ok(store(filled, "namespaces", "--prefix", "users")).stdout.splitlines()
    assert '["users", "alice@example.com"]' in listed
    for text in listed:  # every listed namespace can be passed back as an argument
        ok(store(filled, "search", text))
    item = as_json(store(filled, "--json", "get", '["users","alice@example.com"]', "note"))
    assert item["namespace"] == ["users", "alice@example.com"]


# -- bad input ----------------------------------------------------------------------------------


def test_bad_json_value_exits_2_naming_the_problem(db: Path) -> None:
    line = error_line(store(db, "put", "a", "k", '{"text": }'), 2)
    assert "VALUE" in line and "not valid JSON" in line and "column 10" in line
    line = error_line(store(db, "put", "a", "k", "[1, 2]"), 2)
    assert "expected a JSON object" in line and "array" in line
    line = error_line(store(db, "put", "a", "k", "-", input="nope"), 2)
    assert "stdin" in line and "not valid JSON" in line
    line = error_line(store(db, "put", "a", "k", '{"n": 99999999999999999999999}'), 2)
    assert "64-bit" in line
    assert not db.exists() or as_json(store(db, "--json", "search")) == []


def test_bad_filter_exits_2_naming_the_operator(filled: Path) -> None:
    line = error_line(store(filled, "search", "--filter", '{"stars": {"$bogus": 3}}'), 2)
    assert "$bogus" in line and "--filter" in line
    line = error_line(store(filled, "search", "--filter", '{"stars": {"$gt": null}}'), 2)
    assert "'$gt'" in line
    line = error_line(store(filled, "search", "--filter", "{stars"), 2)
    assert "not valid JSON" in line


def test_bad_key_and_options_exit_2(db: Path) -> None:
    assert "key is empty" in error_line(store(db, "put", "a", "", "{}"), 2)
    assert "--ttl" in error_line(store(db, "put", "a", "k", "{}", "--ttl", "0"), 2)
    assert "--limit" in error_line(store(db, "search", "--limit", "0"), 2)
    assert "No such command" in error_line(store(db, "frobnicate"), 2)
    assert "Missing argument" in error_line(store(db, "get", "a"), 2)
    assert "--embedder" in error_line(store(db, "--embedder", "gpt", "search"), 2)


def test_search_by_meaning_without_embedder_exits_2(filled: Path) -> None:
    line = error_line(store(filled, "--embedder", "none", "search", "--query", "tea", "--mode",
                            "vector"), 2)
    assert "--embedder local" in line


def test_reindex_embeds_items_written_without_an_embedder(filled: Path) -> None:
    assert json.loads(ok(store(filled, "--json", "--embedder", "fake", "reindex")).stdout)[
        "reindexed"] > 0
    hits = json.loads(ok(store(filled, "--json", "--embedder", "fake", "search", "--query",
                               "tea", "--mode", "vector")).stdout)
    assert hits and all("vector" in hit["details"] for hit in hits)


def test_keyword_search_needs_no_embedder(filled: Path) -> None:
    hits = json.loads(ok(store(filled, "--json", "--embedder", "none", "search", "--query",
                               "tea")).stdout)
    assert hits and all("keyword" in hit["details"] for hit in hits)


def test_missing_database_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    assert "no database at" in error_line(store(db, "search"), 1)
    assert not db.exists()


def test_a_file_that_is_not_a_database_exits_1(tmp_path: Path) -> None:
    db = tmp_path / "junk.db"
    db.write_text("this is not sqlite " * 100)
    line = error_line(store(db, "search"), 1)
    assert "not a database" in line


def test_library_failures_exit_1(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("disk on fire\nsecond line")

    monkeypatch.setattr("remem.cli.store.open_store", broken)
    assert error_line(store(db, "put", "a", "k", "{}"), 1) == (
        "error: disk on fire second line"
    )


def test_unexpected_exceptions_are_one_line(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("remem.cli.store.open_store", broken)
    line = error_line(store(db, "put", "a", "k", "{}"), 1)
    assert "RuntimeError" in line and "boom" in line


# -- search and namespaces ----------------------------------------------------------------------


def test_search_table(filled: Path) -> None:
    text = ok(store(filled, "search", "users.u1")).stdout
    assert "namespace" in text and "updated" in text and "value" in text
    assert "users.u1.memories" in text and "m1" in text and "m2" in text
    assert "users.u2" not in text
    assert ok(store(filled, "search", "nobody")).stdout == "no items found\n"


def test_search_json_newest_first(filled: Path) -> None:
    items = as_json(store(filled, "--json", "search", "users"))
    assert [(i["namespace"][1], i["key"]) for i in items] == [
        ("alice@example.com", "note"), ("u2", "theme"), ("u2", "m1"), ("u1", "m2"), ("u1", "m1")
    ]
    assert all(i["score"] is None for i in items)


def test_search_filter_limit_offset(filled: Path) -> None:
    found = as_json(store(filled, "--json", "search", "--filter", '{"stars": {"$gte": 3}}'))
    assert sorted((tuple(i["namespace"]), i["key"]) for i in found) == [
        (("users", "u1", "memories"), "m1"), (("users", "u2", "memories"), "m1")
    ]
    page = as_json(store(filled, "--json", "search", "--limit", "2", "--offset", "1"))
    everything = as_json(store(filled, "--json", "search"))
    assert [i["key"] for i in page] == [i["key"] for i in everything[1:3]]
    assert "--offset 2" in ok(store(filled, "search", "--limit", "2")).stdout


def test_vector_search_with_fake_embedder(db: Path) -> None:
    texts = {"cat": "the cat sat on the mat", "dog": "dogs love long walks",
             "stock": "stock market news today"}
    for key, text in texts.items():
        ok(store(db, "--embedder", "fake", "put", "notes", key, json.dumps({"text": text})))
    ok(store(db, "--embedder", "fake", "put", "notes", "hidden", '{"text": "cat cat"}',
             "--no-index"))
    found = as_json(store(db, "--embedder", "fake", "--json", "search", "-q", "cat on a mat"))
    assert found[0]["key"] == "cat"
    assert "hidden" not in [i["key"] for i in found]
    assert found[0]["score"] > found[-1]["score"]
    assert found[0]["details"]["vector"]["rank"] == 1
    table = ok(store(db, "search", "--query", "cat", "--embedder", "fake")).stdout
    assert "relevance" in table and "cat" in table


def test_namespaces(filled: Path) -> None:
    assert ok(store(filled, "namespaces")).stdout.splitlines() == [
        '["users", "alice@example.com"]', "users.u1.memories", "users.u2.memories",
        "users.u2.prefs",
    ]
    assert as_json(store(filled, "--json", "namespaces", "--max-depth", "2")) == [
        ["users", "alice@example.com"], ["users", "u1"], ["users", "u2"]
    ]
    assert as_json(store(filled, "--json", "namespaces", "--suffix", "memories")) == [
        ["users", "u1", "memories"], ["users", "u2", "memories"]
    ]
    assert as_json(store(filled, "--json", "namespaces", "--prefix", "*.u2", "--limit", "1")) == [
        ["users", "u2", "memories"]
    ]
    empty = store(filled, "namespaces", "--prefix", "nobody")
    assert ok(empty).stdout == "" and "no namespaces" in empty.stderr


# -- TTL, export and import ---------------------------------------------------------------------


def test_sweep_deletes_expired_items(db: Path) -> None:
    ok(store(db, "put", "t", "short", "{}", "--ttl", "0.05"))
    ok(store(db, "put", "t", "long", "{}", "--ttl", "3600"))
    time.sleep(0.1)
    error_line(store(db, "get", "t", "short"), 1)
    assert ok(store(db, "sweep")).stdout == "deleted 1 expired item\n"
    assert as_json(store(db, "--json", "sweep")) == {"deleted": 0}
    ok(store(db, "get", "t", "long"))


def test_export_import_round_trip(filled: Path, tmp_path: Path) -> None:
    ok(store(filled, "put", "ttl", "k", '{"x": 1}', "--ttl", "3600"))
    out = tmp_path / "dump.jsonl"
    assert as_json(store(filled, "--json", "export", "-o", str(out))) == {
        "exported": 6, "file": str(out)
    }
    to_stdout = store(filled, "export")
    assert ok(to_stdout).stdout == out.read_text(encoding="utf-8")
    assert to_stdout.stderr == "exported 6 items\n"
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["key"] for r in records} == {"m1", "m2", "theme", "note", "k"}

    copy = tmp_path / "copy.db"
    assert ok(store(copy, "import", str(out))).stdout == "imported 6 items\n"
    original = as_json(store(filled, "--json", "search", "--limit", "100"))
    imported = as_json(store(copy, "--json", "search", "--limit", "100"))
    strip = [{k: v for k, v in i.items() if k != "expires_at"} for i in original]
    assert [{k: v for k, v in i.items() if k != "expires_at"} for i in imported] == strip

    partial = tmp_path / "partial.db"
    only_u1 = ok(store(filled, "export", "users.u1")).stdout
    assert as_json(store(partial, "--json", "import", "-", input=only_u1)) == {"imported": 2}
    assert as_json(store(partial, "--json", "namespaces")) == [["users", "u1", "memories"]]


def test_import_bad_line_exits_2_naming_the_line(tmp_path: Path) -> None:
    lines = '{"namespace": ["a"], "key": "k", "value": {}}\n{"namespace": ["a"], "key": "j"}\n'
    line = error_line(store(tmp_path / "x.db", "import", "-", input=lines), 2)
    assert "line 2" in line and "value" in line
    assert "No such file" in error_line(store(tmp_path / "x.db", "import", "nope.jsonl"), 2)


def test_export_to_missing_directory_exits_1(filled: Path, tmp_path: Path) -> None:
    line = error_line(store(filled, "export", "-o", str(tmp_path / "no" / "dump.jsonl")), 1)
    assert "cannot write" in line
    assert list(tmp_path.iterdir()) == [filled]


# -- the docs cannot drift ----------------------------------------------------------------------


def _documented_help() -> dict[str, str]:
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- help: (remem[^>]*?) -->\s*```text\n(.*?)```", text, re.DOTALL)
    return dict(blocks)


def _real_help(command: str) -> str:
    """``command --help`` as an 80-column terminal shows it: click wraps at the terminal's
    width less 2, where CliRunner would force 80 (see the test below)."""
    args = [*command.split()[1:], "--help"]
    return ok(CliRunner().invoke(cli, args, env={"COLUMNS": "80"}, terminal_width=78,
                                 catch_exceptions=False)).stdout


def test_help_in_process_is_what_an_80_column_terminal_shows() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    real = subprocess.run([sys.executable, "-m", "remem.cli", "add", "--help"], env=env,
                          capture_output=True, text=True, check=True).stdout
    assert real.replace("python -m remem.cli", "remem") == _real_help("remem add")
    assert max(map(len, real.splitlines())) <= 78


def _all_commands() -> list[str]:
    """Every command path of the real CLI (``remem``, ``remem store``, ``remem store put``...)."""
    import click

    found: list[str] = []

    def walk(command: click.Command, path: str) -> None:
        found.append(path)
        if isinstance(command, click.Group):
            for name, sub in sorted(command.commands.items()):
                if not sub.hidden:
                    walk(sub, f"{path} {name}")

    walk(cli, "remem")
    return found


def test_docs_show_help_for_every_command() -> None:
    documented = _documented_help()
    assert set(documented) == set(_all_commands())
    assert {"remem store", *(f"remem store {c}" for c in STORE_COMMANDS)} <= set(documented)


@pytest.mark.parametrize("command", _all_commands())
def test_docs_help_matches_the_cli(command: str) -> None:
    documented = _documented_help()[command]
    assert documented == _real_help(command), (
        f"docs/cli.md is out of date: replace the block after '<!-- help: {command} -->' "
        f"with the output of `COLUMNS=80 {command} --help` (python tools/update_cli_docs.py)"
    )


def test_a_required_option_shows_no_placeholder_default() -> None:
    # a required request field that becomes an option has no default to show
    from remem.blocks.requests import CreateBlockRequest
    from remem.cli.options import field_param

    option = field_param(CreateBlockRequest, "label")
    assert isinstance(option, Option) and option.required
    assert option.default is None and not option.show_default
