"""``remem prompts``: versioned prompts (remem.procedural) in a store file or database.

ls, show, create, update, history, diff, rollback read and write the prompts of a
:class:`~remem.procedural.PromptRegistry`; ``optimize`` rewrites one from trajectories (a JSONL
file: one ``{"messages": [...], "feedback": ...}`` per line) with the chat model configured by
``REMEM_LLM_*`` and stores the result only with ``--commit``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from remem.cli.common import CommandFailed, NamespaceType, db_param
from remem.cli.options import CliName, NameListType
from remem.cli.render import emit_json
from remem.cli.table import CommandSpec, Family, add_table_commands, json_option
from remem.errors import InvalidInputError
from remem.llm.base import ChatModel
from remem.operations import Operation
from remem.procedural import STRATEGIES, PromptOptimizer, PromptRegistry, PromptVersion
from remem.procedural.operation_table import PROMPT_OPERATIONS
from remem.procedural.requests import (
    CreatePromptRequest,
    GetPromptRequest,
    ListPromptsRequest,
    PromptDiffRequest,
    PromptHistoryRequest,
    PromptRequest,
    RollbackPromptRequest,
    UpdatePromptRequest,
)
from remem.requests import Request
from remem.store import BaseStore, is_dsn, open_store

__all__ = ["cli_model", "open_location", "prompts_group", "read_jsonl"]

_DB_HELP = "SQLite database file or a postgresql:// DSN."


def open_location(ctx: click.Context, db: str, *, create: bool = False,
                  index: Any = None) -> BaseStore:
    """The store at ``db``, closed when the command ends; a missing file is an error unless
    ``create``."""
    if not create and db != ":memory:" and not is_dsn(db) and not Path(db).exists():
        raise CommandFailed(f"no database at {db}; pass --db PATH or set REMEM_DB")
    store = open_store(db, index=index) if index is not None else open_store(db)
    ctx.call_on_close(store.close)
    return store


def _registry(ctx: click.Context, db: str, prefix: tuple[str, ...], *,
              create: bool = False) -> PromptRegistry:
    return PromptRegistry(open_location(ctx, db, create=create), prefix=prefix)


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _read_text(text: str | None, file: str | None) -> str:
    if (text is None) == (file is None):
        raise click.UsageError("give the prompt's text with --text TEXT or --file PATH ('-': "
                               "stdin), one of the two")
    if text is not None:
        return text
    assert file is not None
    if file == "-":
        return sys.stdin.read()
    try:
        return Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandFailed(f"cannot read --file {file}: {exc.strerror}") from None


def _version_line(version: PromptVersion) -> str:
    note = f" (rollback to v{version.rolled_back_to})" if version.rolled_back_to else ""
    return (f"v{version.version}  {_when(version.created_at)}  {version.author}  "
            f"{version.kind}{note}  {version.reason.splitlines()[0] if version.reason else ''}")


@click.group(name="prompts")
def prompts_group() -> None:
    """Versioned prompts: ls, show, create, update, history, diff, optimize, rollback.

    Every change is a new version (text, author, reason, source trajectories, time); template
    variables ({name}; {{ for a literal brace) are checked on every write.
    """


def _session_params() -> list[click.Parameter]:
    """``--db``, ``--prefix`` and ``--json`` on every prompts command."""
    return [db_param(_DB_HELP),
            click.Option(["--prefix"], type=NamespaceType(what="prefix"), default="prompts",
                         show_default=True,
                         help="Namespace the prompts live under (dotted, or a JSON array)."),
            json_option()]


def _run(row: Operation, request: PromptRequest[Any], session: Mapping[str, Any]) -> Any:
    registry = _registry(click.get_current_context(), session["db"], session["prefix"],
                         create=isinstance(request, CreatePromptRequest))
    return registry.run(request)


def _text_from_file(values: dict[str, Any]) -> None:
    """``--file`` (or ``--text``, one of the two) gives the request's text."""
    values["text"] = _read_text(values.get("text"), values.pop("file"))


def _show_list(request: ListPromptsRequest, found: list[PromptVersion]) -> None:
    if not found:
        click.echo("no prompts")
    for version in found:
        variables = ", ".join(version.variables) or "-"
        click.echo(f"{version.name}  v{version.version}  {_when(version.created_at)}  "
                   f"variables: {variables}")


def _show_history(request: PromptHistoryRequest, found: list[PromptVersion]) -> None:
    for version in found:
        click.echo(_version_line(version))


def _show_diff(request: PromptDiffRequest, text: str) -> None:
    click.echo(text or "(no difference)", nl=not text)


_NAME = {"name": "NAME"}
_TEXT = {"text": CliName(metavar="TEXT", required=False),
         "variables": CliName(metavar="NAMES", type=NameListType())}


def _file(what: str) -> list[click.Parameter]:
    return [click.Option(["--file"], metavar="PATH",
                         help=f"Read {what} from a file ('-': stdin).")]


_COMMANDS: Mapping[type[Request], CommandSpec] = {
    ListPromptsRequest: CommandSpec("List prompts with their latest version.", _show_list),
    GetPromptRequest: CommandSpec(
        "Print a prompt's text (the latest version, or --version N).",
        lambda request, found: click.echo(found.text), arguments=_NAME,
        names={"version": CliName(option=("--version",), metavar="N")}),
    CreatePromptRequest: CommandSpec(
        "Create a prompt (version 1); its variables are those its text uses.",
        lambda request, made: click.echo(
            f"created {made.name} v1 (variables: {', '.join(made.variables) or 'none'})"),
        arguments=_NAME, names=_TEXT, params=_file("the text"), prepare=_text_from_file),
    UpdatePromptRequest: CommandSpec(
        "Write a new version; it must keep the prompt's template variables.",
        lambda request, made: click.echo(f"updated {made.name} to v{made.version}"),
        arguments=_NAME, names=_TEXT, params=_file("the new text"),
        prepare=_text_from_file),
    PromptHistoryRequest: CommandSpec(
        "Every version of a prompt, oldest first.", _show_history, arguments=_NAME),
    PromptDiffRequest: CommandSpec(
        "Unified diff between two versions.", _show_diff, arguments=_NAME,
        names={"old": CliName(option=("--from",), metavar="N", help=(
                   "Version to diff from (default: the one before --to).")),
               "new": CliName(option=("--to",), metavar="N",
                              help="Version to diff to (default: the latest).")}),
    RollbackPromptRequest: CommandSpec(
        "Make an old version's text current again (as a new version).",
        lambda request, made: click.echo(
            f"rolled {made.name} back to v{request.version}'s text as v{made.version}"),
        arguments={"name": "NAME", "version": "VERSION"}),
}
add_table_commands(prompts_group, PROMPT_OPERATIONS, _COMMANDS,
                   Family(_session_params, _run))


def cli_model(ctx: click.Context) -> ChatModel:
    """The model of ``REMEM_LLM_*`` (an error naming the variables if unset), closed when the
    command ends (HTTP clients hold a connection pool)."""
    from remem.llm.config import require_model

    model = require_model()
    close = getattr(model, "close", None)
    if callable(close):
        ctx.call_on_close(close)
    return model


def read_jsonl(path: str, what: str) -> list[Any]:
    """The JSON values of a JSONL file ('-': stdin); errors name the line."""
    try:
        lines = (sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
                 ).splitlines()
    except OSError as exc:
        raise CommandFailed(f"cannot read {what} {path}: {exc.strerror}") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{what} {path} line {number} is not JSON ({exc.msg}); "
                                    "write one JSON object per line") from None
    return out


@prompts_group.command(name="optimize")
@click.argument("name")
@click.option("--trajectories", "trajectories_path", required=True, metavar="FILE",
              help='JSONL, one trajectory per line: {"messages": [{"role": ..., "content": '
                   '...}], "feedback": 0.4 | "text" | {...}, "id": ...}; "-": stdin.')
@click.option("--strategy", type=click.Choice(STRATEGIES), default="metaprompt",
              show_default=True, help="How to rewrite.")
@click.option("--max-steps", type=click.IntRange(min=1, max=20), default=3, show_default=True,
              help="Gradient steps (each at most 2 model calls).")
@click.option("--min-feedback", type=click.IntRange(min=0), default=1, show_default=True,
              help="Trajectories with feedback needed before the model is called.")
@click.option("--when-to-update", default=None, help="When a change is warranted (told to "
              "the model).")
@click.option("--update-instructions", default=None, help="How to write changes (told to "
              "the model).")
@click.option("--commit", is_flag=True, help="Store the result as a new version (default: "
              "only show it).")
@click.pass_context
def optimize(ctx: click.Context, name: str, trajectories_path: str, strategy: str,
             max_steps: int, min_feedback: int, when_to_update: str | None,
             update_instructions: str | None, commit: bool, db: str,
             prefix: tuple[str, ...], json_output: bool) -> None:
    """Rewrite a prompt from trajectories with the model of REMEM_LLM_*; show the diff,
    the reasoning and what it cost; store it only with --commit."""
    registry = _registry(ctx, db, prefix)
    trajectories = read_jsonl(trajectories_path, "--trajectories")
    optimizer = PromptOptimizer(cli_model(ctx), registry=registry,
                                strategy=strategy,  # type: ignore[arg-type]
                                max_steps=max_steps, min_feedback=min_feedback,
                                when_to_update=when_to_update,
                                update_instructions=update_instructions)
    result = optimizer.optimize(name, trajectories, auto_commit=commit)
    if json_output:
        emit_json(result.to_dict())
        return
    if result.skipped:
        click.echo(f"skipped: {result.skipped}")
        return
    click.echo(result.diff or "(no change)", nl=not result.diff)
    click.echo(f"reasoning: {result.reasoning}")
    click.echo(f"cost: {result.usage.calls} call(s), {result.usage.input_tokens} input + "
               f"{result.usage.output_tokens} output tokens")
    if result.committed is not None:
        click.echo(f"committed as v{result.committed.version}")
    elif result.changed:
        click.echo("not stored (add --commit to store it)")


optimize.params += _session_params()
