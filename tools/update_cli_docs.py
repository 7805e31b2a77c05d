"""Refresh the ``--help`` blocks of docs/cli.md from the real CLI.

Every ``<!-- help: remem ... -->`` marker is followed by a ```text block; this replaces each
block with the command's current help as an 80-column terminal shows it. Add a marker for a
new command by hand, then run ``python tools/update_cli_docs.py``; tests/cli/test_cli.py checks
the result.

The memory commands' options are built from the request models (remem.cli.options), so a
field added to a request, or a changed ``Field(description=...)``, changes their help: run
this after such an edit too.
"""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from remem.cli import cli

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
BLOCK = re.compile(r"(<!-- help: (remem[^>]*?) -->\s*```text\n)(.*?)(```)", re.DOTALL)


TERMINAL_COLUMNS = 80
"""The terminal the help blocks are rendered for."""


def real_help(command: str) -> str:
    """``command --help`` as an 80-column terminal shows it. Click wraps help at the
    terminal's width less 2 (78 here); ``CliRunner`` would force 80 instead, so the width is
    passed as a real terminal gives it (tests/cli/test_cli.py checks one against a process)."""
    result = CliRunner().invoke(cli, [*command.split()[1:], "--help"],
                                env={"COLUMNS": str(TERMINAL_COLUMNS)}, prog_name="remem",
                                terminal_width=TERMINAL_COLUMNS - 2)
    if result.exit_code != 0:
        raise SystemExit(f"{command} --help failed: {result.output}")
    return result.output


def main() -> None:
    text = DOCS.read_text(encoding="utf-8")
    updated = BLOCK.sub(lambda m: m.group(1) + real_help(m.group(2)) + m.group(4), text)
    DOCS.write_text(updated, encoding="utf-8")
    print(f"{DOCS}: {len(BLOCK.findall(text))} help blocks refreshed")


if __name__ == "__main__":
    main()
