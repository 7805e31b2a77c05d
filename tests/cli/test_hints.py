"""An error's hint is data (remem.errors.Hint): Python says it in Python, the CLI as a
``remem`` command from one table (remem.cli.hints.CLI_FIXES)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.blocks import Blocks
from remem.cli import cli
from remem.cli.hints import CLI_FIXES
from remem.errors import Fix, NotFoundError
from remem.files import InMemoryFileBackend
from remem.procedural import PromptRegistry
from remem.store import InMemoryStore
from remem.threads import ThreadStore


def test_every_fix_has_cli_words() -> None:
    assert set(CLI_FIXES) == set(Fix)
    for fix, words in CLI_FIXES.items():
        assert "`remem " in words("x"), fix


def _cli_error(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 1, result.output
    [line] = result.stderr.splitlines()
    return line


CASES = [
    (["blocks", "get", "nope"], "no block with id 'nope'",
     "list them with `remem blocks list`", "list them with Blocks.list_blocks()"),
    (["files", "read", "/nope.md"], "no file at '/nope.md'",
     "`remem files ls /` or `remem files glob '**/*'`",
     "call ls or glob to see which files exist"),
    (["prompts", "show", "greet"], "no prompt named 'greet'",
     "create it with `remem prompts create greet --text TEXT`",
     "create it with create(name, text)"),
    (["threads", "show", "nope"], "thread 'nope' does not exist",
     "list them with `remem threads ls`", "list them with ThreadStore.list_threads()"),
]


@pytest.mark.parametrize(("args", "fact", "cli_words", "python_words"), CASES,
                         ids=["blocks", "files", "prompts", "threads"])
def test_the_cli_names_a_command_and_python_a_call(
        tmp_path: Path, args: list[str], fact: str, cli_words: str, python_words: str) -> None:
    db = str(tmp_path / "e.db")
    assert CliRunner().invoke(cli, ["prompts", "create", "other", "--text", "hi",
                                    "--db", db]).exit_code == 0  # the database exists
    line = _cli_error(*args, "--db", db)
    assert line.startswith(f"error: {fact}") and cli_words in line, line
    assert python_words not in line and "()" not in line, line
    with pytest.raises(NotFoundError) as raised:
        if args[0] == "blocks":
            Blocks(InMemoryFileBackend()).get("nope")
        elif args[0] == "files":
            InMemoryFileBackend().read("/nope.md")
        elif args[0] == "threads":
            ThreadStore(":memory:").thread("nope")
        else:
            PromptRegistry(InMemoryStore()).get("greet")
    error = raised.value
    assert str(error).startswith(fact) and str(error).endswith(python_words), str(error)
    assert "remem " not in str(error)
    assert error.hint is not None and error.fact.startswith(fact)
