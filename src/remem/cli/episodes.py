"""``remem episodes``: episodes and few-shot examples (remem.episodic) in a store file.

add and ls write and list episodes; ``select`` picks relevant, diverse examples for a situation
within a token budget; ``extract`` turns a finished conversation (a JSON list of messages) into
episodes with one call to the model configured by ``REMEM_LLM_*``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from remem.cli.common import (
    CommandFailed,
    NamespaceType,
    db_option,
    embedder_hint,
    embedder_option,
    make_embedder,
)
from remem.cli.prompts import cli_model, open_location
from remem.cli.render import emit_json
from remem.episodic import Episode, EpisodeStore
from remem.errors import InvalidInputError
from remem.messages import Message
from remem.store import IndexConfig

__all__ = ["episodes_group"]

_DB_HELP = "SQLite database file or a postgresql:// DSN."
_EMBEDDER_HELP = ("Embedder of the episodes' situations (the one they were stored with); "
                  "'none': keywords only, no MMR.")


def _episodes(ctx: click.Context, db: str, prefix: tuple[str, ...], embedder: str, *,
              create: bool = False) -> EpisodeStore:
    index = None if embedder == "none" else IndexConfig(embedder=make_embedder(embedder))
    with embedder_hint(db):
        store = open_location(ctx, db, create=create, index=index)
    return EpisodeStore(store, prefix=prefix)


def _options(command: Any) -> Any:
    command = click.option("--json", "json_output", is_flag=True,
                           help="Machine output: print one JSON document on stdout.")(command)
    command = click.option(
        "--prefix", type=NamespaceType(what="prefix"), default="episodes", show_default=True,
        help="Namespace the episodes live under (dotted, or a JSON array).")(command)
    command = embedder_option(_EMBEDDER_HELP)(command)
    return db_option(_DB_HELP)(command)


def _show(episode: Episode) -> None:
    click.echo(f"[{episode.id}] {episode.situation}")
    if episode.thought:
        click.echo(f"  thought: {episode.thought}")
    click.echo(f"  action: {episode.action}")
    if episode.result:
        click.echo(f"  result: {episode.result}")


@click.group(name="episodes")
def episodes_group() -> None:
    """Episodes (situation, thought, action, result) kept as few-shot examples: add, ls,
    select, extract."""


@episodes_group.command(name="add")
@click.option("--situation", required=True, help="What the agent faced.")
@click.option("--action", required=True, help="What it did.")
@click.option("--thought", default="", help="Why.")
@click.option("--result", "outcome", default="", help="What came of it.")
@click.option("--thread", "thread_id", default=None, help="The thread it came from.")
@_options
@click.pass_context
def add(ctx: click.Context, situation: str, action: str, thought: str, outcome: str,
        thread_id: str | None, db: str, embedder: str, prefix: tuple[str, ...],
        json_output: bool) -> None:
    """Store one episode."""
    episode = _episodes(ctx, db, prefix, embedder, create=True).add(
        {"situation": situation, "action": action, "thought": thought, "result": outcome,
         "thread_id": thread_id})
    if json_output:
        emit_json(episode.model_dump(mode="json"))
        return
    click.echo(f"added {episode.id}")


@episodes_group.command(name="ls")
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=20, show_default=True,
              help="Show at most N episodes.")
@_options
@click.pass_context
def ls(ctx: click.Context, limit: int, db: str, embedder: str, prefix: tuple[str, ...],
       json_output: bool) -> None:
    """List episodes, newest first."""
    found = _episodes(ctx, db, prefix, embedder).list(limit=limit)
    if json_output:
        emit_json([e.model_dump(mode="json") for e in found])
        return
    if not found:
        click.echo("no episodes")
    for episode in found:
        _show(episode)


@episodes_group.command(name="select")
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=1, max=50), default=3, show_default=True,
              help="How many examples at most.")
@click.option("--budget", "budget", type=click.IntRange(min=1), default=None,
              help="Token budget of the examples' messages (default: none).")
@click.option("--mmr", type=click.FloatRange(0.0, 1.0), default=0.7, show_default=True,
              help="MMR weight of relevance against novelty (with an embedder).")
@_options
@click.pass_context
def select(ctx: click.Context, query: str, k: int, budget: int | None, mmr: float, db: str,
           embedder: str, prefix: tuple[str, ...], json_output: bool) -> None:
    """Pick relevant, diverse examples for QUERY (a new situation) within the budget."""
    selection = _episodes(ctx, db, prefix, embedder).select_examples(
        query, k, budget, mmr=mmr)
    if json_output:
        emit_json({"examples": [e.model_dump(mode="json") for e in selection.examples],
                   "tokens": selection.tokens, "duplicates": selection.duplicates,
                   "over_budget": selection.over_budget,
                   "messages": [m.to_dict() for m in selection.messages()]})
        return
    if not selection.examples:
        click.echo("no examples")
    for episode in selection.examples:
        _show(episode)
    click.echo(f"{len(selection.examples)} example(s), {selection.tokens} tokens")


def _read_messages(path: str) -> list[Message]:
    try:
        raw = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandFailed(f"cannot read --messages {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"--messages {path} is not JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise InvalidInputError(f"--messages {path} must hold a JSON list of messages")
    messages = []
    for position, entry in enumerate(data):
        try:
            messages.append(Message.model_validate(entry))
        except ValueError as exc:
            raise InvalidInputError(f"--messages [{position}] is not a message: {exc}") from None
    return messages


def _thread_messages(ctx: click.Context, db: str, thread_id: str) -> list[Message]:
    from remem.cli.threads import open_threads

    return list(open_threads(ctx, db).messages(thread_id))


@episodes_group.command(name="extract")
@click.option("--thread", "thread_id", default=None,
              help="The thread to read from the database (see remem threads ls); with "
                   "--messages, only the id the episodes cite.")
@click.option("--messages", "messages_path", default=None, metavar="FILE",
              help='Read the conversation from a JSON list of messages ({"role": ..., '
                   '"content": ...}) instead; "-": stdin.')
@_options
@click.pass_context
def extract(ctx: click.Context, messages_path: str | None, thread_id: str | None, db: str,
            embedder: str, prefix: tuple[str, ...], json_output: bool) -> None:
    """Extract and store the episodes of a finished conversation (one model call)."""
    if messages_path is not None:
        messages = _read_messages(messages_path)
    elif thread_id is not None:
        messages = _thread_messages(ctx, db, thread_id)
    else:
        raise click.UsageError("give the conversation: --thread ID (a thread in the database) "
                               "or --messages FILE")
    store = _episodes(ctx, db, prefix, embedder, create=True)
    done = store.extract(cli_model(ctx), messages, thread_id=thread_id)
    if json_output:
        emit_json({"episodes": [e.model_dump(mode="json") for e in done.episodes],
                   "calls": done.usage.calls, "input_tokens": done.usage.input_tokens,
                   "output_tokens": done.usage.output_tokens})
        return
    for episode in done.episodes:
        _show(episode)
    click.echo(f"{len(done.episodes)} episode(s) stored ({done.usage.calls} call(s))")
