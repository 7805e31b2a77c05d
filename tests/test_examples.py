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
    lines = result.stdout.splitlines()
    assert lines[1].split()[0] == "tea"  # the tea memory ranks first for a tea query
    assert "users/alice/memories city: Alice lives in Berlin" in result.stdout
    assert "exported 5 items, imported 5" in result.stdout
    assert (tmp_path / "q.db").exists()


def test_readme_python_snippet_runs(tmp_path: Path, monkeypatch: object) -> None:
    readme = (ROOT / "README.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", readme, re.S)
    assert snippet is not None
    result = subprocess.run([sys.executable, "-c", snippet.group(1)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    key, score, rank = result.stdout.split()
    assert key == "tea" and float(score) > 0.5 and rank == "1"
