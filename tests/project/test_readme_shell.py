"""The README's shell lines run as written, in the venv the README builds.

Every ```bash block after "## Set up" (the two set-up commands themselves build the venv and
run the whole suite: they are what this test runs in) is split into lines, and each line is
decided here, by its command, in :data:`HOW`:

- ``run``: executed as written by ``bash -c`` in a temporary directory, with this venv's
  ``bin`` first on ``PATH``; it must exit 0. ``REMEM_EMBEDDER=fake`` keeps it offline and
  quick (the default local model finds the same rows; only the scores differ).
- ``needs-llm`` (``remem chat``): the line says it needs ``REMEM_LLM_*``; run as written without
  them, it must exit 1 with one ``error:`` line naming ``REMEM_LLM_MODEL``.
- ``extra`` (``pip install '.[server]'``): not run (a test does not change the machine); the
  extra must exist in pyproject.toml and this venv must have it, as the lines after assume.
- ``server`` (``remem serve``, ``remem ui``): long-running; the command line as written is
  checked with ``--help`` appended (its options parse; it needs no more than the line gives).
- ``eval``: run as written on a tiny LoCoMo file written at the path the line names.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.eval.test_eval import synthetic

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
BIN = Path(sys.executable).parent

HOW = {". .venv/bin/activate": ".", "remem add": "run", "remem search": "run", "remem list": "run",
       "remem threads": "run", "remem keys": "run", "remem chat": "needs-llm", "pip": "extra",
       "remem serve": "server", "remem ui": "server", "remem eval": "eval"}


def shell_lines() -> list[str]:
    """The lines of the README's bash blocks after the set-up section, comments kept."""
    text = README.read_text(encoding="utf-8")
    after_setup = text[text.index("## Quickstart"):]
    blocks = re.findall(r"```bash\n(.*?)```", after_setup, re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def _kind(line: str) -> str:
    words = shlex.split(line, comments=True)
    for prefix, how in HOW.items():
        if " ".join(words[:len(prefix.split())]) == prefix:
            return how
    raise AssertionError(f"README shell line not decided in HOW: {line!r}")


def test_every_readme_shell_line_is_decided() -> None:
    lines = shell_lines()
    assert len(lines) >= 10
    assert {_kind(line) for line in lines} == set(HOW.values())


def _bash(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)


@pytest.mark.slow
def test_the_readme_shell_block_runs_as_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMEM_", "OPENAI_",
                                                                       "ANTHROPIC_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", REMEM_EMBEDDER="fake")
    ran: dict[str, int] = {}
    for line in shell_lines():
        kind = _kind(line)
        ran[kind] = ran.get(kind, 0) + 1
        if kind == ".":  # `. .venv/bin/activate`: this test puts the venv first on PATH
            assert ".venv/bin/activate" in line
            continue
        if kind == "extra":
            extra = re.search(r"\.\[(\w+)\]", line)
            assert extra is not None, line
            pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
            assert extra.group(1) in pyproject["project"]["optional-dependencies"]
            import fastapi  # noqa: F401  (the server extra is in this venv)
            continue
        if kind == "server":
            command = line.split("#", 1)[0].strip() + " --help"
            done = _bash(command, tmp_path, env)
            assert done.returncode == 0 and "Usage:" in done.stdout, (line, done.stderr)
            continue
        if kind == "eval":
            target = tmp_path / shlex.split(line, comments=True)[3]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(synthetic()), encoding="utf-8")
        done = _bash(line, tmp_path, env)
        if kind == "needs-llm":
            assert done.returncode == 1 and "REMEM_LLM_MODEL" in done.stderr, (line, done)
            continue
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        if line.startswith("remem search"):
            assert "green tea" in done.stdout, done.stdout
        if line.startswith("remem list"):
            assert json.loads(done.stdout)["memories"][0]["text"] == "I drink green tea"
        if line.startswith("remem keys create"):
            assert "alice" in done.stdout or "rk_" in done.stdout, done.stdout
    assert ran["run"] >= 5 and ran["server"] == 2 and ran["eval"] == 1, ran
