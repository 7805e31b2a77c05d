"""The CLI's words for what an error says to do next.

Errors carry their hint as data (:class:`remem.errors.Hint`: a :class:`~remem.errors.Fix` and
its subject); ``str(error)`` ends with the Python API's words. The CLI says the same fix as a
``remem`` command, from the one table here, :data:`CLI_FIXES` (tests/cli/test_hints.py checks
that every :class:`~remem.errors.Fix` has a row).
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Mapping
from typing import Final

from remem.errors import Fix, RememError

__all__ = ["CLI_FIXES", "cli_message"]


def _quoted(subject: str) -> str:
    return shlex.quote(subject) if subject else "NAME"


def _files(subject: str) -> str:
    folder = posixpath.dirname(subject) or "/"
    return (f"see which files exist with `remem files ls {shlex.quote(folder)}` or "
            "`remem files glob '**/*'`")


CLI_FIXES: Final[Mapping[Fix, Callable[[str], str]]] = {
    Fix.LIST_BLOCKS: lambda _: "list them with `remem blocks list`",
    Fix.LIST_FILES: _files,
    Fix.CREATE_PROMPT: lambda name: (f"create it with `remem prompts create {_quoted(name)} "
                                     "--text TEXT`, or list them with `remem prompts ls`"),
    Fix.PROMPT_HISTORY: lambda name: f"see `remem prompts history {_quoted(name)}`",
    Fix.LIST_APPROVALS: lambda _: "list them with `remem approvals ls`",
    Fix.LIST_THREADS: lambda _: "list them with `remem threads ls`",
    Fix.LIST_CHECKPOINTS: lambda thread: (f"list them with `remem threads show "
                                          f"{_quoted(thread)} --checkpoints`"),
    Fix.MEMORY_HISTORY: lambda memory: (f"read it with `remem history {_quoted(memory)}`; "
                                        "`remem undo EVENT` brings it back"),
}
"""Each fix in the CLI's words, from the hint's subject."""


def cli_message(error: RememError) -> str:
    """``error``'s message for the command line: its fact and, when it carries a hint, the
    hint as a ``remem`` command (its Python words otherwise)."""
    hint = error.hint
    if hint is None or hint.fix not in CLI_FIXES:
        return str(error)
    return f"{error.fact}; {CLI_FIXES[hint.fix](hint.subject)}"
