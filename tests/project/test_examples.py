"""The scripts in examples/ run as written and print what the docs say they show (the
Python blocks of README.md and docs/ are run by tests/project/test_docs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_runs(tmp_path: Path) -> None:
    # offline and without a chat model: the demo must say it stores text as given
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_LLM_")}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py"), str(tmp_path / "q.db")],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("no LLM configured") and "add(infer=False)" in out
    # a paraphrase finds the tea memory; a Chinese question finds the Chinese one
    assert "'what does she drink for breakfast?' -> I drink green tea every morning" in out
    assert "'她在学什么语言？' -> 我在学中文，每周上两次课" in out
    assert ("moved: lives now -> I live in Munich; as of before the move -> I live in Berlin"
            in out)
    assert "  add by user (stored as given)\n  invalidate by user (moved)\n" in out
    assert "manage_memory -> {\"status\": \"created\"" in out
    assert "\"content\": \"Alice is allergic to peanuts\"" in out.split("search_memory ->")[1]
    assert "Error in manage_memory: 'content' is required for action 'update'" in out
    assert "exported 11 lines (memories and history), imported 11" in out
    assert (tmp_path / "q.db").exists()


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
