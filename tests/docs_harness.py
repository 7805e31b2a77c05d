"""Find, run and check the Python examples of README.md and docs/ (driven by
tests/project/test_docs.py).

Every ```` ```python ```` block of ``README.md``, ``docs/*.md`` and ``benchmarks/README.md`` is
one test. A block runs **on its own**, as a reader would run it after copying it: in a fresh
interpreter (a subprocess), in a fresh temporary working directory, with nothing from the
blocks before it. The interpreter refuses to reach any LLM or embedding provider off loopback
(:func:`remem.testing.block_remote_requests`) and sees none of the ``REMEM_*``, ``OPENAI_*``
or ``ANTHROPIC_*`` variables of the test run, so no block can use a real key. Warnings are
errors there, as in the test suite.

**Documented output.** A ``print(...)`` documents what it prints with a comment: the comment
at the end of the line the call ends on, or, when there is none, the ``# ...`` comment lines
right below it (one per printed line)::

    print(hit.memory.text)              # Lives in Munich
    print(sorted(model.usage.by_operation()), model.usage.snapshot().calls)
    # ['chat', 'summarize'] 2

A block that prints must document every line it prints, in order; ``...`` in a documented
line matches any text (ids, scores, timestamps).

**Markers.** An HTML comment on the line right before the fence changes how a block is tested
(GitHub does not render it):

``<!-- docs-test: fragment: REASON -->``
    The block is deliberately not standalone (it needs data remem cannot ship, say): it is
    only compiled, never run. The reason is required and shows in the test report.
``<!-- docs-test: postgres -->``
    The block runs against a fresh PostgreSQL database of the test run (``tests/pg_fixtures``):
    every ``postgresql://...`` URL in the block is replaced by that database's DSN.
``<!-- docs-test: server -->``
    The block runs against a ``remem serve`` started for it (a SQLite file, the fake embedder,
    the loopback server as its chat model): ``http://127.0.0.1:8000`` is replaced by the
    server's URL and ``"rk_..."`` by an API key of tenant ``acme`` (also ``$REMEM_API_KEY``).

Any other ``docs-test`` comment, or one that is not right before a Python fence, is an error.
Tracebacks name the Markdown file and its line numbers.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[1]
#: the Markdown files whose Python blocks are tested (benchmarks/README.md has none today)
PAGES = ("README.md", "docs/*.md", "benchmarks/README.md")
#: how a block is tested: "run" unless a marker says otherwise
Kind = Literal["run", "fragment", "postgres", "server"]
MARKERS: tuple[Kind, ...] = ("fragment", "postgres", "server")
#: what a ``server`` block says, and what the harness puts in its place
SERVER_URL = "http://127.0.0.1:8000"
SERVER_KEY = '"rk_..."'
POSTGRES_URL = re.compile(r"postgresql://[^\s\"']+")

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<body>.*?)\s*-->")
#: variables that could reach a real provider, or change what a block does
_HIDDEN_ENV = ("REMEM_", "OPENAI_", "ANTHROPIC_")
#: run in the child before the block: no provider off loopback, then the block as __main__
_RUNNER = """\
import sys
from remem.testing import block_remote_requests

block_remote_requests()
filename, source_path = sys.argv[1:3]
with open(source_path, encoding="utf-8") as source:
    code = compile(source.read(), filename, "exec")
exec(code, {"__name__": "__main__"})
"""


class MarkdownError(ValueError):
    """A Markdown file whose blocks or markers the harness cannot read."""


@dataclass(frozen=True)
class Block:
    """One ```` ```python ```` block: where it is, its code and how it is tested."""

    page: str  # relative to the repository root, with "/" separators
    line: int  # 1-based line of the opening fence
    code: str
    kind: Kind = "run"
    reason: str = ""  # why a fragment is one

    @property
    def id(self) -> str:
        return f"{self.page}:L{self.line}"

    def source(self) -> str:
        """The code preceded by blank lines, so that line N of it is line N of the page."""
        return "\n" * self.line + self.code


def parse_marker(comment: str, where: str) -> tuple[Kind, str]:
    """``(kind, reason)`` of a ``docs-test`` comment's body (the text after ``docs-test:``)."""
    kind, _, reason = comment.partition(":")
    kind, reason = kind.strip(), reason.strip()
    if kind not in MARKERS:
        raise MarkdownError(f"{where}: unknown marker 'docs-test: {comment}'; "
                            f"use one of {', '.join(MARKERS)}")
    if kind == "fragment" and not reason:
        raise MarkdownError(f"{where}: a fragment needs a reason: "
                            "<!-- docs-test: fragment: why it cannot run on its own -->")
    if kind != "fragment" and reason:
        raise MarkdownError(f"{where}: 'docs-test: {kind}' takes no reason, got {reason!r}")
    return kind, reason


def blocks_of(text: str, page: str) -> list[Block]:
    """Every Python block of one Markdown text, with its marker applied."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            if _MARKER.search(lines[i]) and not (
                    i + 1 < len(lines) and (following := _FENCE.match(lines[i + 1]))
                    and _language(following) == "python"):
                raise MarkdownError(f"{page}:L{i + 1}: a docs-test marker must be on the line "
                                    "right before a ```python fence")
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        end = i + 1
        while end < len(lines) and not (lines[end].strip().startswith(fence)
                                        and lines[end].strip().strip(fence[0]) == ""):
            end += 1
        if end == len(lines):
            raise MarkdownError(f"{page}:L{i + 1}: a code fence that is never closed")
        if _language(opening) == "python":
            code = "\n".join(line.removeprefix(indent) for line in lines[i + 1:end]) + "\n"
            kind: Kind = "run"
            reason = ""
            marker = _MARKER.search(lines[i - 1]) if i > 0 else None
            if marker is not None:
                kind, reason = parse_marker(marker["body"], f"{page}:L{i}")
            blocks.append(Block(page, i + 1, code, kind, reason))
        i = end + 1
    return blocks


def _language(fence: re.Match[str]) -> str:
    return (fence["info"].split() or [""])[0]


def pages(root: Path = ROOT) -> list[Path]:
    found: list[Path] = []
    for pattern in PAGES:
        found.extend(sorted(root.glob(pattern)))
    return found


def collect(root: Path = ROOT) -> list[Block]:
    """Every Python block of every page, in page order."""
    blocks: list[Block] = []
    for path in pages(root):
        page = path.relative_to(root).as_posix()
        blocks.extend(blocks_of(path.read_text(encoding="utf-8"), page))
    return blocks


def documented_output(code: str) -> list[str]:
    """The lines the block's ``print`` calls say they print (see the module docstring)."""
    tree = ast.parse(code)
    trailing: dict[int, str] = {}  # line -> comment after code on that line
    whole: dict[int, str] = {}  # line -> a comment that is the whole line
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            text = token.string[1:].removeprefix(" ").rstrip()
            if token.line[:col].strip():
                trailing[row] = text
            else:
                whole[row] = text
    prints = sorted((node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "print")
    expected: list[str] = []
    for _, end in prints:
        if end in trailing:
            expected.append(trailing[end])
            continue
        row = end + 1
        while row in whole:
            expected.append(whole[row])
            row += 1
    return expected


def line_matches(expected: str, printed: str) -> bool:
    """Whether a printed line is the documented one; ``...`` stands for any text."""
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, printed.rstrip()) is not None


def output_problems(expected: list[str], printed: list[str]) -> list[str]:
    """What differs between the documented and the printed lines (empty: they agree)."""
    problems = [f"line {n}: documented {want!r}, printed {got!r}"
                for n, (want, got) in enumerate(zip(expected, printed, strict=False), 1)
                if not line_matches(want, got)]
    if len(expected) != len(printed):
        problems.append(f"documented {len(expected)} line(s), printed {len(printed)}: "
                        f"{printed!r}; document every printed line with a # comment")
    return problems


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a block: none of the provider or remem variables of this run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_HIDDEN_ENV)}
    env.setdefault("OMP_NUM_THREADS", "1")  # the local embedder: no threads fighting for CPUs
    return {**env, **(extra or {})}


def run(block: Block, tmp: Path, *, replace: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """Run one block in a new interpreter, in the empty directory ``tmp/work``; ``replace``
    maps texts of the block to what they stand for in this run (a server's URL, a DSN)."""
    source = block.source()
    for old, new in (replace or {}).items():
        source = source.replace(old, new)
    script = tmp / "block.py"
    script.write_text(source, encoding="utf-8")
    workdir = tmp / "work"
    workdir.mkdir()
    command = [sys.executable, "-W", "error", "-c", _RUNNER, str(ROOT / block.page), str(script)]
    return subprocess.run(command,
                          cwd=workdir, env=child_env(env), capture_output=True, text=True,
                          timeout=timeout, check=False)
