"""An error's hint is data (remem.errors.Hint): Python says it in Python, the CLI as a
``remem`` command from one table (remem.cli.hints.CLI_FIXES)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.api import Memory
from remem.blocks import Blocks
from remem.cli import cli
from remem.cli.hints import CLI_FIXES
from remem.embed import FakeEmbedder
from remem.errors import Fix, NotFoundError
from remem.files import InMemoryFileBackend
from remem.messages import Message
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


def test_a_memory_deleted_for_good_points_to_its_history(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    common = ["--db", db, "--embedder", "fake"]
    added = CliRunner().invoke(cli, ["add", "Alice drinks tea", "--user", "a", "--no-infer",
                                     "--json", *common])
    memory_id = json.loads(added.stdout)["changes"][0]["memory"]["id"]
    CliRunner().invoke(cli, ["delete", memory_id, "--hard", *common])
    line = _cli_error("get", memory_id, *common)
    assert f"`remem history {memory_id}`" in line and "()" not in line, line
    with Memory.open(db, embedder=FakeEmbedder()) as mem, \
            pytest.raises(NotFoundError, match=r"history\(\); undo\(\)"):
        mem.get(memory_id)


def test_a_checkpoint_of_another_thread_points_to_the_thread_s_checkpoints(
        tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with ThreadStore(db) as threads:
        mine, other = threads.create(thread_id="mine"), threads.create(thread_id="other")
        foreign = other.append([Message.user("hi")])
        mine.append([Message.user("hello")])
        with pytest.raises(NotFoundError, match=r"checkpoints\(\)"):
            mine.messages(checkpoint_id=foreign.id)
    line = _cli_error("threads", "show", "mine", "--checkpoint", foreign.id, "--db", db)
    assert "`remem threads show mine --checkpoints`" in line and "()" not in line, line
