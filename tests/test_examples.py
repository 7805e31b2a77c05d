"""The examples and the README's Python snippet run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def test_readme_python_snippets_run(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    snippets = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(snippets) == 2
    outputs = []
    for snippet in snippets:  # in order, in one directory: they share memory.db
        result = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout.strip())
    # a paraphrase finds the tea memory; a Chinese question finds the Chinese memory
    assert outputs[0] == "I drink green tea every morning | 我住在柏林"
    # the thread has both turns; the fork only the first
    assert outputs[1] == "4 2"
