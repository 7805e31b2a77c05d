"""Every command's default (human) output at 80 columns, as in a pipe or an 80-column
terminal (``COLUMNS=80``): no line is wider than 80 cells, and the text column of a table
gets the room (a long memory's first 30 characters on one line, not two a line)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result
from rich.cells import cell_len

from remem.cli import cli
from remem.threads import ThreadStore

LONG = ("Alice drinks green tea every single morning before she walks to work at the "
        "observatory on the hill, and coffee only on weekends")
CHINESE = "爱丽丝每天早上喝绿茶，周末才喝咖啡，她在山上的天文台工作了很多年"
ENV = {"COLUMNS": "80", "REMEM_EMBEDDER": "fake"}


def run(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), env=ENV, catch_exceptions=False)
    assert result.exit_code == 0, (args, result.output)
    return result


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("width") / "w.db")
    for text in (LONG, CHINESE, "Alice plays the cello"):
        run("add", "--db", path, "--user", "alice", "--no-infer", text)
    with ThreadStore(path) as threads:
        from remem import Message

        chat = threads.create(metadata={"user_id": "alice", "title": "A trip to Lisbon in "
                                        "April, with a long title that must wrap"})
        chat.append([Message.user(LONG), Message.assistant("Noted.")])
    run("blocks", "create", "persona", "--db", path, "--label", "persona", "--value", LONG)
    run("blocks", "attach", "agent-1", "persona", "--db", path)
    run("files", "write", "/notes/tea.md", LONG + "\n" + CHINESE, "--db", path)
    return path


def _memory_id(db: str) -> str:
    listed = json.loads(run("list", "--db", db, "--user", "alice", "--json").stdout)
    return str(next(m["id"] for m in listed["memories"] if m["text"] == LONG))


def _thread_id(db: str) -> str:
    return str(json.loads(run("threads", "ls", "--db", db, "--json").stdout)[0]["thread_id"])


COMMANDS: list[tuple[str, list[str], list[str]]] = [
    # (name, arguments after the command, texts that must show whole on one line)
    ("add", ["add", "--user", "bob", "--no-infer", LONG], [LONG[:30]]),
    ("search", ["search", "--user", "alice", "green tea"], [LONG[:30], CHINESE[:12]]),
    ("list", ["list", "--user", "alice"], [LONG[:30], CHINESE[:12]]),
    ("get", ["get", "{memory}"], [LONG[:30]]),
    ("history", ["history", "{memory}"], [LONG[:30]]),
    ("threads ls", ["threads", "ls"], ['"title": "A trip']),
    ("threads show", ["threads", "show", "{thread}"], [LONG[:30]]),
    ("blocks list", ["blocks", "list"], [LONG[:24]]),
    ("blocks get", ["blocks", "get", "persona"], [LONG[:30]]),
    ("blocks history", ["blocks", "history", "persona"], [LONG[:24]]),
    ("files ls", ["files", "ls", "/notes"], ["/notes/tea.md"]),
    ("files glob", ["files", "glob", "**/*"], ["/notes/tea.md"]),
    ("files grep", ["files", "grep", "tea"], [LONG[:24]]),
    ("files history", ["files", "history", "/notes/tea.md"], [LONG[:24]]),
    ("store search", ["store", "search", "memories"], []),
]


@pytest.mark.parametrize(("name", "args", "whole"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_default_output_reads_at_80_columns(db: str, name: str, args: list[str],
                                            whole: list[str]) -> None:
    filled = [a.replace("{memory}", _memory_id(db)).replace("{thread}", _thread_id(db))
              for a in args]
    out = run(*filled[:2] if name.startswith(("threads", "blocks", "files", "store")) else
              filled[:1], "--db", db, *(filled[2:] if " " in name else filled[1:])).stdout
    lines = out.splitlines()
    assert lines, name
    too_wide = [line for line in lines if cell_len(line) > 80]
    assert too_wide == [], (name, out)
    for text in whole:
        assert any(text in line for line in lines), (name, text, out)
    if name not in ("threads ls", "threads show", "store search"):  # metadata, values: JSON
        assert "{" not in out, (name, out)  # no JSON documents for people
    assert "179" not in out  # no epoch seconds: times are ISO-8601


def test_times_are_iso_8601_in_human_output(db: str) -> None:
    import re

    for args in (["list", "--user", "alice"], ["files", "ls", "/notes"], ["blocks", "history",
                                                                         "persona"]):
        out = run(*args, "--db", db).stdout
        assert re.search(r"\b\d{4}-\d\d-\d\dT\d\d:\d\dZ\b", out), (args, out)
    # --json keeps the wire's numbers (seconds since the epoch) for files
    listed = json.loads(run("files", "ls", "/notes", "--db", db, "--json").stdout)
    assert isinstance(listed[0]["modified_at"], float)
