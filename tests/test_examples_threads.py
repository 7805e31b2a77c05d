"""examples/threads.py runs as written and shows what docs/threads.md says it shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_threads_example_runs(tmp_path: Path) -> None:
    # one OpenMP thread: the local model is much faster than with threads fighting for 2 cores
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "threads.py"), str(tmp_path / "t.db")],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "trip: 5 messages, 4 checkpoints" in out
    assert ("at the first turn: ['I want to visit Lisbon in April.', "
            "'Lisbon in April is mild and sunny.']") in out
    assert "after the rewind: ['Actually, a hotel in Belém.'" in out
    assert "fork: trip-porto, 5 messages, from ckpt_" in out
    assert "travel threads: ['trip', 'trip-porto']; backup has 5 messages" in out
    assert "summary covers the first 10, cost 1 model call(s)" in out
    assert "summary: The user asked how to cook: roast duck, dumplings" in out
    assert "(first: system, the summary)" in out
    # paraphrases with no shared words find the right past conversation
    assert "'where did I want to sleep on my Portuguese holiday?' -> trip:" in out
    assert "'我以前问过怎么做烤鸭吗？' -> cooking:" in out
    assert (tmp_path / "t.db").exists()
