"""Threads across processes: concurrent appends lose nothing; kill -9 keeps what was acked."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from remem.threads import ThreadStore

ROOT = Path(__file__).resolve().parents[2]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


_APPENDER = """
import sys
from remem.messages import Message
from remem.threads import ThreadStore
path, tag, count, schema = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with ThreadStore(path, schema=schema) as threads:
    for i in range(count):
        threads.append("shared", [Message.user(f"{tag}-{i}"), Message.assistant(f"{tag}-{i}!")])
print("done", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_processes_appending_to_one_thread_lose_nothing(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    path = (str(tmp_path / "procs.db") if kind == "sqlite"
            else request.getfixturevalue("pg_database"))
    schema = f"procs_{os.getpid()}"
    with ThreadStore(path, schema=schema) as threads:
        threads.create("shared")
    procs = [subprocess.Popen([sys.executable, "-c", _APPENDER, path, tag, "100", schema],
                              env=_child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
             for tag in ("a", "b", "c")]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    with ThreadStore(path, schema=schema) as threads:
        messages = threads.messages("shared")
        assert len(messages) == 600
        texts = [m.text for m in messages]
        assert len(set(texts)) == 600
        # each append's pair stays adjacent, and each process's appends keep their order
        for position in range(0, 600, 2):
            assert texts[position + 1] == texts[position] + "!"
        for tag in ("a", "b", "c"):
            mine = [int(t.split("-")[1]) for t in texts[::2] if t.startswith(tag)]
            assert mine == list(range(100))
        checkpoints = threads.checkpoints("shared", limit=1000)
        assert sorted(cp.position for cp in checkpoints) == list(range(0, 601, 2))


_CRASHER = """
import sys
from remem.messages import Message
from remem.threads import ThreadStore
threads = ThreadStore(sys.argv[1])
threads.create("t")
i = 0
while True:
    threads.append("t", Message.user(f"m{i}" + "x" * 500))
    print(f"ack {i}", flush=True)
    i += 1
"""


@pytest.mark.slow
def test_kill_9_keeps_every_acknowledged_append(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    with subprocess.Popen([sys.executable, "-c", _CRASHER, str(path)], env=_child_env(),
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        acked = -1
        for line in proc.stdout:
            acked = int(line.split()[1])
            if acked >= 300:
                break
        proc.send_signal(signal.SIGKILL)
        for line in proc.stdout:  # acks printed before the kill landed
            acked = int(line.split()[1])
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    with ThreadStore(path) as threads:
        info = threads.get("t")
        assert info.length >= acked + 1
        texts = [m.text[: m.text.index("x")] for m in threads.messages("t")]
        assert texts == [f"m{i}" for i in range(info.length)]
        threads.append("t", threads.messages("t", last=1))  # still writable
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
