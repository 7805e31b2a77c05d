"""The Python examples of docs/memory.md and docs/tools.md run, and print what they say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def examples(name: str) -> list[str]:
    return BLOCK.findall((DOCS / name).read_text(encoding="utf-8"))


def expected_lines(code: str) -> list[str]:
    """A print's documented output: its trailing ``# ...`` comment, or the ``# ...`` lines
    right below it."""
    out: list[str] = []
    lines = code.splitlines()
    for i, line in enumerate(lines):
        if "print(" not in line:
            continue
        if "  # " in line:
            out.append(line.split("  # ", 1)[1].strip())
            continue
        j = i + 1
        while j < len(lines) and lines[j].startswith("# "):
            out.append(lines[j][2:])
            j += 1
    return out


def matches(pattern: str, printed: str) -> bool:
    regex = ".*".join(re.escape(part) for part in pattern.split("..."))
    return re.fullmatch(regex, printed) is not None


@pytest.mark.parametrize(("name", "index"), [("memory.md", i) for i in range(3)]
                         + [("tools.md", 0)])
def test_doc_example_runs_and_prints_what_it_says(name: str, index: int) -> None:
    code = examples(name)[index]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, f"{name}[{index}]", "exec"), {"__name__": "docs_example"})
    printed = buffer.getvalue().splitlines()
    expected = expected_lines(code)
    assert expected, "the example documents no output"
    assert len(printed) == len(expected), (printed, expected)
    for want, got in zip(expected, printed, strict=True):
        assert matches(want, got), (want, got)


def test_every_python_block_is_tested() -> None:
    assert len(examples("memory.md")) == 3 and len(examples("tools.md")) == 1
