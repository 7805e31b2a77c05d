"""The ``remem`` command line: ``remem store ...`` reads and writes a store file.

One module per command group (:mod:`remem.cli.store`); shared argument types and the error
policy live in :mod:`remem.cli.common`, output helpers in :mod:`remem.cli.render`. The memory
commands (:mod:`remem.cli.memory`) are built from the memory requests by
:mod:`remem.cli.options`. :func:`main` is the console entry point.
"""

from __future__ import annotations

import click

from remem import __version__
from remem.cli.approvals import approvals_group
from remem.cli.backup import backup_command
from remem.cli.blocks import blocks_group
from remem.cli.chat import chat_command
from remem.cli.common import RememGroup
from remem.cli.context import context_command
from remem.cli.doctor import doctor_command
from remem.cli.episodes import episodes_group
from remem.cli.eval import eval_group
from remem.cli.files import files_group
from remem.cli.graph import graph_group
from remem.cli.jobs import jobs_group
from remem.cli.memory import MEMORY_COMMANDS
from remem.cli.pg import pg_group
from remem.cli.prompts import prompts_group
from remem.cli.serve import SERVICE_COMMANDS
from remem.cli.store import store_group
from remem.cli.threads import threads_group
from remem.cli.ui import ui_command
from remem.cli.usage import usage_command
from remem.cli.worker import worker_command

__all__ = ["cli", "main"]


@click.group(cls=RememGroup, name="remem", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="remem",
                      message="%(prog)s %(version)s")
def cli() -> None:
    """remem: memory for LLM agents, in one SQLite file.

    Every command exits 0 on success, 1 on failure and 2 on bad input, printing errors as
    one "error: ..." line on stderr. Add --json to a store command for machine output.
    """


cli.add_command(store_group)
cli.add_command(eval_group)
cli.add_command(pg_group)
cli.add_command(threads_group)
cli.add_command(jobs_group)
cli.add_command(worker_command)
cli.add_command(chat_command)
cli.add_command(prompts_group)
cli.add_command(episodes_group)
cli.add_command(files_group)
cli.add_command(blocks_group)
cli.add_command(graph_group)
cli.add_command(context_command)
cli.add_command(approvals_group)
cli.add_command(ui_command)
cli.add_command(usage_command)
cli.add_command(doctor_command)
cli.add_command(backup_command)
for _command in MEMORY_COMMANDS:  # remem add / search / get / list / update / delete ...
    cli.add_command(_command)
for _command in SERVICE_COMMANDS:  # remem serve / keys / mcp
    cli.add_command(_command)


def main() -> None:
    """Console entry point (``remem``): run the CLI and exit with its status."""
    cli.main(prog_name="remem")
