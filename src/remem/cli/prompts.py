"""``remem prompts``: versioned prompts (remem.procedural) in a store file or database.

ls, show, create, update, history, diff, rollback read and write the prompts of a
:class:`~remem.procedural.PromptRegistry`; ``optimize`` rewrites one from trajectories (a JSONL
file: one ``{"messages": [...], "feedback": ...}`` per line) with the chat model configured by
``REMEM_LLM_*`` and stores the result only with ``--commit``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from remem.cli.common import CommandFailed, NamespaceType, db_option
from remem.cli.render import emit_json
from remem.errors import InvalidInputError
from remem.llm.base import ChatModel
from remem.procedural import STRATEGIES, PromptOptimizer, PromptRegistry, PromptVersion
from remem.store import BaseStore, is_dsn, open_store

__all__ = ["cli_model", "open_location", "prompts_group", "read_jsonl"]

F = TypeVar("F", bound=Callable[..., Any])

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


def _options(command: F) -> F:
    command = click.option("--json", "json_output", is_flag=True,
                           help="Machine output: print one JSON document on stdout.")(command)
    command = click.option(
        "--prefix", type=NamespaceType(what="prefix"), default="prompts", show_default=True,
        help="Namespace the prompts live under (dotted, or a JSON array).")(command)
    return db_option(_DB_HELP)(command)


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


@prompts_group.command(name="ls")
@_options
@click.pass_context
def ls(ctx: click.Context, db: str, prefix: tuple[str, ...], json_output: bool) -> None:
    """List prompts with their latest version."""
    found = _registry(ctx, db, prefix).list()
    if json_output:
        emit_json([v.to_dict() for v in found])
        return
    if not found:
        click.echo("no prompts")
    for version in found:
        variables = ", ".join(version.variables) or "-"
        click.echo(f"{version.name}  v{version.version}  {_when(version.created_at)}  "
                   f"variables: {variables}")


@prompts_group.command(name="show")
@click.argument("name")
@click.option("--version", "version", type=click.IntRange(min=1), metavar="N",
              help="Show version N (default: the latest).")
@_options
@click.pass_context
def show(ctx: click.Context, name: str, version: int | None, db: str,
         prefix: tuple[str, ...], json_output: bool) -> None:
    """Print a prompt's text (the latest version, or --version N)."""
    found = _registry(ctx, db, prefix).get(name, version)
    if json_output:
        emit_json(found.to_dict())
        return
    click.echo(found.text)


@prompts_group.command(name="create")
@click.argument("name")
@click.option("--text", metavar="TEXT", help="The prompt's text.")
@click.option("--file", metavar="PATH", help="Read the text from a file ('-': stdin).")
@click.option("--author", default="user", show_default=True, help="Who wrote it.")
@_options
@click.pass_context
def create(ctx: click.Context, name: str, text: str | None, file: str | None, author: str,
           db: str, prefix: tuple[str, ...], json_output: bool) -> None:
    """Create a prompt (version 1); its variables are those its text uses."""
    made = _registry(ctx, db, prefix, create=True).create(name, _read_text(text, file),
                                                         author=author)
    if json_output:
        emit_json(made.to_dict())
        return
    click.echo(f"created {name} v1 (variables: {', '.join(made.variables) or 'none'})")


@prompts_group.command(name="update")
@click.argument("name")
@click.option("--text", metavar="TEXT", help="The new text.")
@click.option("--file", metavar="PATH", help="Read the new text from a file ('-': stdin).")
@click.option("--reason", default="", help="Why it changes (kept in the history).")
@click.option("--author", default="user", show_default=True, help="Who changes it.")
@_options
@click.pass_context
def update(ctx: click.Context, name: str, text: str | None, file: str | None, reason: str,
           author: str, db: str, prefix: tuple[str, ...], json_output: bool) -> None:
    """Write a new version; it must keep the prompt's template variables."""
    made = _registry(ctx, db, prefix).update(name, _read_text(text, file), reason=reason,
                                             author=author)
    if json_output:
        emit_json(made.to_dict())
        return
    click.echo(f"updated {name} to v{made.version}")


@prompts_group.command(name="history")
@click.argument("name")
@_options
@click.pass_context
def history(ctx: click.Context, name: str, db: str, prefix: tuple[str, ...],
            json_output: bool) -> None:
    """Every version of a prompt, oldest first."""
    found = _registry(ctx, db, prefix).history(name)
    if json_output:
        emit_json([v.to_dict() for v in found])
        return
    for version in found:
        click.echo(_version_line(version))


@prompts_group.command(name="diff")
@click.argument("name")
@click.option("--from", "old", type=click.IntRange(min=1), metavar="N",
              help="Version to diff from (default: the one before --to).")
@click.option("--to", "new", type=click.IntRange(min=1), metavar="N",
              help="Version to diff to (default: the latest).")
@_options
@click.pass_context
def diff(ctx: click.Context, name: str, old: int | None, new: int | None, db: str,
         prefix: tuple[str, ...], json_output: bool) -> None:
    """Unified diff between two versions."""
    text = _registry(ctx, db, prefix).diff(name, old, new)
    if json_output:
        emit_json({"name": name, "diff": text})
        return
    click.echo(text or "(no difference)", nl=not text)


@prompts_group.command(name="rollback")
@click.argument("name")
@click.argument("version", type=click.IntRange(min=1))
@click.option("--reason", default=None, help="Why (default: 'rollback to version N').")
@click.option("--author", default="user", show_default=True, help="Who rolls back.")
@_options
@click.pass_context
def rollback(ctx: click.Context, name: str, version: int, reason: str | None, author: str,
             db: str, prefix: tuple[str, ...], json_output: bool) -> None:
    """Make an old version's text current again (as a new version)."""
    made = _registry(ctx, db, prefix).rollback(name, version, author=author, reason=reason)
    if json_output:
        emit_json(made.to_dict())
        return
    click.echo(f"rolled {name} back to v{version}'s text as v{made.version}")


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
@_options
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
