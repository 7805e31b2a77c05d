"""``remem backup``: an online copy of a SQLite database while other threads and processes
write to it holds every write acknowledged before the backup started, opens as a remem
database on its own (no ``-wal``), and never leaves a partial file; PostgreSQL gets the
pg_dump command instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from remem._sqlite import backup_file
from remem.api import Memory
from remem.cli import cli
from remem.embed import FakeEmbedder
from remem.errors import StoreError

ENV = {**os.environ, "REMEM_LLM_MODEL": "", "REMEM_LLM_PROVIDER": ""}


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _ids_in(copy: Path) -> set[str]:
    with Memory.open(copy, embedder=FakeEmbedder()) as memory:
        return {m.id for m in memory.get_all(user_id="w", limit=1000).memories}


def test_backup_while_another_thread_writes(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    memory = Memory.open(db, embedder=FakeEmbedder())
    acknowledged = [memory.add(f"first note {n}", user_id="w", infer=False).added[0].id
                    for n in range(20)]
    stop = threading.Event()
    later: list[str] = []

    def write() -> None:
        n = 0
        while not stop.is_set() and n < 400:
            later.append(memory.add(f"later note {n}", user_id="w", infer=False).added[0].id)
            n += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while len(later) < 5:  # the writer is mid-stream when the backup starts
            threading.Event().wait(0.01)
        before = set(acknowledged) | set(later)  # acknowledged before the backup started
        result = _run("backup", "--db", str(db), str(tmp_path / "copy.db"), "--json")
    finally:
        stop.set()
        writer.join(60)
        memory.close()
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    copy = tmp_path / "copy.db"
    assert report["path"] == str(copy) and report["bytes"] == copy.stat().st_size
    assert not Path(f"{copy}-wal").exists()
    found = _ids_in(copy)
    assert before <= found  # everything acknowledged before it began
    assert found <= before | set(later)  # and nothing that was never written


def test_backup_while_another_process_writes(tmp_path: Path) -> None:
    """A writer process prints each id once its add returned; every id printed before the
    backup started is in the copy."""
    db = tmp_path / "proc.db"
    Memory.open(db, embedder=FakeEmbedder()).close()
    writer = subprocess.Popen([sys.executable, "-c", (
        "from remem import Memory\nfrom remem.embed import FakeEmbedder\n"
        f"m = Memory.open({str(db)!r}, embedder=FakeEmbedder())\n"
        "for n in range(100000):\n"
        "    print(m.add(f'note {n}', user_id='w', infer=False).added[0].id, flush=True)\n")],
        stdout=subprocess.PIPE, text=True, env=ENV)
    copies = tmp_path / "copies"
    copies.mkdir()
    try:
        assert writer.stdout is not None
        before = {writer.stdout.readline().strip() for _ in range(30)}
        result = _run("backup", "--db", str(db), str(copies))  # a directory: same name
        after = {writer.stdout.readline().strip() for _ in range(5)}  # still writing
    finally:
        writer.kill()
        writer.wait(30)
        if writer.stdout is not None:
            writer.stdout.close()
    assert result.exit_code == 0, result.output
    assert "quick_check ok" in result.stdout
    assert len(after) == 5
    in_copy = _ids_in(copies / "proc.db")
    assert before <= in_copy <= _ids_in(db)


def test_backup_into_a_directory_and_refusals(tmp_path: Path) -> None:
    db = tmp_path / "src.db"
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        kept = memory.add("kept note", user_id="w", infer=False).added[0].id
    copies = tmp_path / "copies"
    copies.mkdir()
    made = _run("backup", "--db", str(db), str(copies))
    assert made.exit_code == 0, made.output
    assert _ids_in(copies / "src.db") == {kept}
    again = _run("backup", "--db", str(db), str(copies))
    assert again.exit_code == 1 and "exists; pass --force" in again.output
    assert _run("backup", "--db", str(db), str(copies), "--force").exit_code == 0
    assert sorted(p.name for p in copies.iterdir()) == ["src.db"]  # no temporary left
    itself = _run("backup", "--db", str(db), str(tmp_path))
    assert itself.exit_code == 2 and "is the database itself" in itself.output
    missing = _run("backup", "--db", str(tmp_path / "nope.db"), str(tmp_path / "x.db"))
    assert missing.exit_code == 1 and "no SQLite database at" in missing.output
    memory_db = _run("backup", "--db", ":memory:", str(tmp_path / "x.db"))
    assert memory_db.exit_code == 2 and "nothing to copy" in memory_db.output
    assert not (tmp_path / "x.db").exists()


def test_postgres_gets_the_pg_dump_command() -> None:
    result = _run("backup", "--db", "postgresql://me:secret@db.example/remem", "out.dump")
    assert result.exit_code == 1
    assert "pg_dump --format=custom --schema=remem" in result.output
    assert "secret" not in result.output  # the DSN (and its password) is not echoed


def test_a_damaged_source_leaves_no_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"broken\.db"):
        backup_file(str(broken), str(tmp_path / "out.db"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.db"]
