"""``remem files`` and ``remem blocks`` on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from remem.cli import cli


def _run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def test_files_round_trip_with_history_and_undo(tmp_path: Path) -> None:
    db = str(tmp_path / "files.db")
    written = json.loads(_run("files", "write", "/notes/a.md", "-", "--json", "--db", db,
                              input="hello world\n").stdout)
    assert written["path"] == "/notes/a.md"
    edited = _run("files", "edit", "/notes/a.md", "world", "there", "--db", db,
                  "--etag", written["etag"])
    assert edited.exit_code == 0, edited.output
    assert _run("files", "read", "/notes/a.md", "--db", db).stdout == "hello there\n"
    stale = _run("files", "write", "/notes/a.md", "x", "--etag", written["etag"], "--db", db)
    assert stale.exit_code == 1 and "changed since etag" in stale.output
    listed = json.loads(_run("files", "ls", "/notes", "--json", "--db", db).stdout)
    assert [e["path"] for e in listed] == ["/notes/a.md"]
    hits = json.loads(_run("files", "grep", "there", "--json", "--db", db).stdout)
    assert [(h["path"], h["line"]) for h in hits] == [("/notes/a.md", 1)]
    assert [e["op"] for e in json.loads(_run("files", "history", "/notes/a.md", "--json",
                                             "--db", db).stdout)] == ["write", "edit"]
    _run("files", "undo", "/notes/a.md", "--db", db)
    assert _run("files", "read", "/notes/a.md", "--db", db).stdout == "hello world\n"
    # other namespaces hold other trees
    assert json.loads(_run("files", "ls", "/", "-n", "other", "--json", "--db", db).stdout) == []


def test_files_refuse_hostile_paths_with_exit_2(tmp_path: Path) -> None:
    db = str(tmp_path / "files.db")
    for path in ("/../etc/passwd", "a\\b", "%2e%2e/x", "\u2215etc"):
        result = _run("files", "write", path, "x", "--db", db)
        assert result.exit_code == 2 and "is refused" in result.output, (path, result.output)


def test_blocks_create_attach_render_and_limits(tmp_path: Path) -> None:
    db = str(tmp_path / "blocks.db")
    assert _run("blocks", "create", "h", "--label", "human", "--limit", "20",
                "--value", "Alice", "--db", db).exit_code == 0
    _run("blocks", "attach", "agent-1", "h", "--db", db)
    rendered = _run("blocks", "render", "agent-1", "--db", db).stdout
    assert '<human chars="5/20">' in rendered and "Alice" in rendered
    over = _run("blocks", "set", "h", "x" * 21, "--db", db)
    assert over.exit_code == 2 and "limit is 20" in over.output
    _run("blocks", "set", "h", "Alice, vegan", "--db", db)
    history = json.loads(_run("blocks", "history", "h", "--json", "--db", db).stdout)
    assert [e["value"] for e in history] == ["Alice", "Alice, vegan"]
    listed = json.loads(_run("blocks", "list", "--json", "--db", db).stdout)["blocks"]
    assert [b["id"] for b in listed] == ["h"]
