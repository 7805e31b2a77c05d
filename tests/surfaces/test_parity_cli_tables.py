"""Every row of every family's table that names a ``command`` is that ``remem`` command, and
the command is its request: its parameters are exactly the request's fields (less the local
ones, and those its spec leaves out with a reason) plus what the command declares it adds.
A row cannot name a command the CLI does not build, and the CLI builds no command from a
request no row declares (:mod:`remem.cli.table`)."""

from __future__ import annotations

import click
import pytest

from remem.background.operation_table import JOB_OPERATIONS
from remem.blocks.operation_table import BLOCK_OPERATIONS
from remem.cli import cli
from remem.cli.context import CLI_EXCLUDED
from remem.cli.options import RequestCommand
from remem.cli.table import TableCommand, cli_fields
from remem.context.operation_table import CONTEXT_OPERATIONS
from remem.episodic.operation_table import EPISODE_OPERATIONS
from remem.files.operation_table import APPROVAL_OPERATIONS, FILE_OPERATIONS
from remem.graph.operation_table import GRAPH_OPERATIONS
from remem.memory.operation_table import MEMORY_OPERATIONS
from remem.operations import Operation
from remem.procedural.operation_table import PROMPT_OPERATIONS
from remem.raw_store.operation_table import STORE_OPERATIONS
from remem.threads.operation_table import THREAD_OPERATIONS

TABLES: dict[str, tuple[Operation, ...]] = {
    "memory": MEMORY_OPERATIONS, "context": CONTEXT_OPERATIONS, "store": STORE_OPERATIONS,
    "threads": THREAD_OPERATIONS, "graph": GRAPH_OPERATIONS, "prompts": PROMPT_OPERATIONS,
    "episodes": EPISODE_OPERATIONS, "blocks": BLOCK_OPERATIONS, "jobs": JOB_OPERATIONS,
    "files": FILE_OPERATIONS, "approvals": APPROVAL_OPERATIONS,
}

ROWS = [row for table in TABLES.values() for row in table if row.command]


def command_at(path: str) -> click.Command:
    """The command at ``path`` (``"episodes add"``) under ``remem``."""
    command: click.Command = cli
    for name in path.split():
        assert isinstance(command, click.Group), f"{command.name} is not a group ({path})"
        found = command.commands.get(name)
        assert found is not None, f"no command {path!r}"
        command = found
    return command


def _commands(group: click.Group, path: str = "") -> list[tuple[str, click.Command]]:
    found = []
    for name in group.commands:
        command = group.commands[name]
        found.append((f"{path}{name}", command))
        if isinstance(command, click.Group):
            found += _commands(command, f"{path}{name} ")
    return found


@pytest.mark.parametrize("row", ROWS, ids=[row.command or "" for row in ROWS])
def test_the_command_is_the_request(row: Operation) -> None:
    command = command_at(row.command or "")
    assert isinstance(command, RequestCommand) and command.model is row.request
    fields = set(cli_fields(row))
    params = {param.name for param in command.params}
    if isinstance(command, TableCommand):
        spec = command.spec
        assert command.row is row
        assert set(spec.omitted) <= fields and all(spec.omitted.values())
        offered = fields - set(spec.omitted)
        assert params & set(row.request.model_fields) == offered
        assert list(spec.arguments) == [p.name for p in command.params
                                        if isinstance(p, click.Argument)][:len(spec.arguments)]
        assert all(p.name in params for p in spec.params)
    else:  # the memory commands, checked closely in test_parity_cli_mcp_tools.py
        omitted = set(CLI_EXCLUDED) if row.command == "context" else set()
        assert params & set(row.request.model_fields) == fields - omitted
    for param in command.params:
        if isinstance(param, click.Option) and param.name in fields:
            assert param.help, f"{row.command} {param.opts[0]} has no help"


def test_every_command_built_from_a_request_is_a_row() -> None:
    rows = {row.command: row for row in ROWS}
    built = {path: command for path, command in _commands(cli)
             if isinstance(command, RequestCommand)}
    assert set(built) <= set(rows)
    assert all(built[path].model is rows[path].request for path in built)
