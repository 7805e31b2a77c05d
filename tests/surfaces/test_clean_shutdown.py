"""A stopped process leaves its data in the SQLite file itself, not in the ``-wal`` beside it:
``Memory.close()``, ``remem serve``, ``remem mcp``, ``remem ui`` and ``remem worker`` stopped by
SIGTERM checkpoint the WAL (``PRAGMA wal_checkpoint(TRUNCATE)``), so a copy of the main file
alone (what a careless backup takes) holds every acknowledged write."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from remem._sqlite import CHECKPOINT_WAIT
from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.testing.server import ServerProcess, free_port

#: the environment of a child without a chat model (its adds store the text as given)
ENV = {**os.environ, "REMEM_LLM_MODEL": "", "REMEM_LLM_PROVIDER": ""}


def _main_file_alone(db: Path, where: Path) -> Path:
    """A copy of ``db`` without its ``-wal`` and ``-shm``: what a plain file copy keeps."""
    where.mkdir()
    copy = where / db.name
    shutil.copyfile(db, copy)
    assert not (where / f"{db.name}-wal").exists()
    return copy


def _texts_in(copy: Path, user: str) -> list[str]:
    with Memory.open(copy, embedder=FakeEmbedder()) as memory:
        return sorted(m.text for m in memory.get_all(user_id=user, limit=100).memories)


def _wal_bytes(db: Path) -> int:
    wal = Path(f"{db}-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_memory_close_leaves_everything_in_the_main_file(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memory = Memory.open(db, embedder=FakeEmbedder())
    for n in range(5):
        memory.add(f"note {n} about tea", user_id="u", infer=False)
    assert _wal_bytes(db) > 0  # before close the writes are in the WAL
    copy_before = _main_file_alone(db, tmp_path / "before")
    memory.close()
    assert _wal_bytes(db) == 0
    copy = _main_file_alone(db, tmp_path / "after")
    assert _texts_in(copy, "u") == [f"note {n} about tea" for n in range(5)]
    # the copy taken before close did not have them: the checkpoint is what put them there
    with sqlite3.connect(copy_before) as conn:
        assert "items" not in {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_close_while_another_process_reads_does_not_hang_or_lose_data(tmp_path: Path) -> None:
    """A reader elsewhere (here: a connection holding a read snapshot) keeps the checkpoint
    from emptying the WAL: close waits about CHECKPOINT_WAIT seconds, then leaves the pages
    in the WAL, where the next opener finds them."""
    db = tmp_path / "busy.db"
    memory = Memory.open(db, embedder=FakeEmbedder())
    memory.add("first note", user_id="u", infer=False)
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM items").fetchone()  # a snapshot before the next add
    memory.add("second note", user_id="u", infer=False)
    started = time.monotonic()
    memory.close()
    took = time.monotonic() - started
    assert took < CHECKPOINT_WAIT + 5
    reader.execute("COMMIT")
    reader.close()
    with Memory.open(db, embedder=FakeEmbedder()) as again:
        assert sorted(m.text for m in again.get_all(user_id="u").memories) == [
            "first note", "second note"]


@pytest.mark.slow
def test_sigterm_of_remem_serve_leaves_the_data_in_the_main_file(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    texts = [f"served note {n}" for n in range(6)]
    with ServerProcess(["--db", str(db), "--no-auth", "--embedder", "fake"],
                       env=ENV) as server:
        for text in texts:
            answer = httpx.post(server.url + "/v1/memories", timeout=30,
                                json={"messages": text, "user_id": "u", "infer": False})
            assert answer.status_code == 200, answer.text
        assert _wal_bytes(db) > 0
        code = server.stop()
    assert code in (0, -signal.SIGTERM)
    assert _wal_bytes(db) == 0
    assert _texts_in(_main_file_alone(db, tmp_path / "copy"), "u") == texts


def _rpc(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any] | None:
    """Send one JSON-RPC message to ``remem mcp`` over stdio; its answer for a request."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = proc.stdout.readline()
        assert line, "remem mcp closed its stdout"
        answer: dict[str, Any] = json.loads(line)
        if answer.get("id") == message["id"]:
            return answer


@pytest.mark.slow
def test_sigterm_of_remem_mcp_leaves_the_data_in_the_main_file(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    proc = subprocess.Popen([sys.executable, "-m", "remem", "mcp", "--db", str(db),
                             "--embedder", "fake"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    try:
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}})
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n in range(3):
            answer = _rpc(proc, {"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                                 "params": {"name": "add_memory", "arguments": {
                                     "messages": f"mcp note {n}", "user_id": "u"}}})
            assert answer is not None and not answer["result"].get("isError"), answer
        assert _wal_bytes(db) > 0
        proc.send_signal(signal.SIGTERM)  # stdin still open: the host stops it
        assert proc.wait(30) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
    assert _wal_bytes(db) == 0
    assert _texts_in(_main_file_alone(db, tmp_path / "copy"), "u") == [
        f"mcp note {n}" for n in range(3)]


@pytest.mark.slow
def test_sigterm_of_remem_ui_and_worker_leaves_the_wal_empty(tmp_path: Path) -> None:
    """A process killed outright leaves its writes in the WAL; the inspector or a worker
    that then opens the file and is stopped by SIGTERM leaves them in the main file."""
    for command in (["ui", "--port", str(free_port())], ["worker", "--poll", "0.05"]):
        db = tmp_path / f"{command[0]}.db"
        writer = subprocess.Popen([sys.executable, "-c", (
            "import os, signal\n"
            "from remem import Memory\nfrom remem.embed import FakeEmbedder\n"
            f"m = Memory.open({str(db)!r}, embedder=FakeEmbedder())\n"
            "for n in range(4):\n"
            "    m.add(f'crashed note {n}', user_id='u', infer=False)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")], env=ENV)
        assert writer.wait(60) == -signal.SIGKILL
        assert _wal_bytes(db) > 0
        log = (tmp_path / f"{command[0]}.log").open("w")
        proc = subprocess.Popen([sys.executable, "-m", "remem", *command, "--db", str(db),
                                 "--embedder", "fake"], stdout=log, stderr=log, env=ENV)
        try:
            started = threading.Event()
            for _ in range(400):  # it opened the file once it says so on stderr
                if "remem inspector on" in (tmp_path / f"{command[0]}.log").read_text() \
                        or "worker " in (tmp_path / f"{command[0]}.log").read_text():
                    started.set()
                    break
                assert proc.poll() is None, (tmp_path / f"{command[0]}.log").read_text()
                time.sleep(0.05)
            assert started.is_set()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) in (0, -signal.SIGTERM)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            log.close()
        assert _wal_bytes(db) == 0, command
        assert _texts_in(_main_file_alone(db, tmp_path / f"copy-{command[0]}"), "u") == [
            f"crashed note {n}" for n in range(4)]
