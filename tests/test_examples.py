"""The examples and the README's Python snippet run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_runs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py"), str(tmp_path / "q.db")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # a paraphrase finds the tea memory; a Chinese question finds the Chinese one
    assert "'what does she drink for breakfast?' -> tea:" in out
    assert "'她在学什么语言？' -> lang:" in out
    assert "users/alice/memories city: Alice lives in Berlin" in out
    assert "exported 6 items, imported 6" in out
    assert (tmp_path / "q.db").exists()


def test_readme_python_snippet_runs(tmp_path: Path, monkeypatch: object) -> None:
    readme = (ROOT / "README.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", readme, re.S)
    assert snippet is not None
    result = subprocess.run([sys.executable, "-c", snippet.group(1)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    key, score, details = result.stdout.split(" ", 2)
    assert key == "tea" and float(score) > 0.5
    assert "'keyword': SignalScore(rank=1" in details and "'vector': SignalScore(rank=1" in details
