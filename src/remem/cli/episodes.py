"""``remem episodes``: episodes and few-shot examples (remem.episodic) in a store file.

add and ls write and list episodes; ``select`` picks relevant, diverse examples for a situation
within a token budget; ``extract`` turns a finished conversation (a JSON list of messages) into
episodes with one call to the model configured by ``REMEM_LLM_*``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from remem.cli.common import (
    CommandFailed,
    NamespaceType,
    db_param,
    embedder_hint,
    embedder_param,
    make_embedder,
)
from remem.cli.options import CliName
from remem.cli.prompts import cli_model, open_location
from remem.cli.render import emit_json
from remem.cli.table import CommandSpec, Family, add_table_commands, json_option
from remem.episodic import Episode, EpisodeStore, Selection
from remem.episodic.operation_table import EPISODE_OPERATIONS
from remem.episodic.requests import (
    AddEpisodeRequest,
    EpisodeRequest,
    ListEpisodesRequest,
    SelectExamplesRequest,
)
from remem.errors import InvalidInputError
from remem.messages import Message
from remem.operations import Operation
from remem.requests import Request
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


def _show(episode: Episode) -> None:
    click.echo(f"[{episode.id}] {episode.situation}")
    if episode.thought:
        click.echo(f"  thought: {episode.thought}")
    click.echo(f"  action: {episode.action}")
    if episode.result:
        click.echo(f"  result: {episode.result}")


def _session_params() -> list[click.Parameter]:
    """``--db``, ``--embedder``, ``--prefix`` and ``--json`` on every episodes command."""
    return [db_param(_DB_HELP), embedder_param(_EMBEDDER_HELP),
            click.Option(["--prefix"], type=NamespaceType(what="prefix"), default="episodes",
                         show_default=True,
                         help="Namespace the episodes live under (dotted, or a JSON array)."),
            json_option()]


def _run(row: Operation, request: EpisodeRequest[Any], session: Mapping[str, Any]) -> Any:
    """Run ``request`` on the episodes of ``--db`` (created by a command that writes)."""
    episodes = _episodes(click.get_current_context(), session["db"], session["prefix"],
                         session["embedder"], create=row.writes)
    return episodes.run(request)


def _show_list(request: ListEpisodesRequest, found: list[Episode]) -> None:
    if not found:
        click.echo("no episodes")
    for episode in found:
        _show(episode)


def _show_selection(request: SelectExamplesRequest, selection: Selection) -> None:
    if not selection.examples:
        click.echo("no examples")
    for episode in selection.examples:
        _show(episode)
    click.echo(f"{len(selection.examples)} example(s), {selection.tokens} tokens")


@click.group(name="episodes")
def episodes_group() -> None:
    """Episodes (situation, thought, action, result) kept as few-shot examples: add, ls,
    select, extract."""


_COMMANDS: Mapping[type[Request], CommandSpec] = {
    AddEpisodeRequest: CommandSpec(
        "Store one episode.", lambda request, episode: click.echo(f"added {episode.id}")),
    ListEpisodesRequest: CommandSpec(
        "List episodes, newest first.", _show_list,
        names={"limit": CliName(metavar="N", default=20)}),
    SelectExamplesRequest: CommandSpec(
        "Pick relevant, diverse examples for QUERY (a new situation) within the budget.",
        _show_selection, arguments={"query": "QUERY"},
        names={"k": CliName(option=("-k",), metavar="N"),
               "budget_tokens": CliName(option=("--budget",), metavar="N")}),
}
add_table_commands(episodes_group, EPISODE_OPERATIONS, _COMMANDS,
                   Family(_session_params, _run))


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


# extract reads the conversation from a file or the database's thread: hand-written
@episodes_group.command(name="extract")
@click.option("--thread", "thread_id", default=None,
              help="The thread to read from the database (see remem threads ls); with "
                   "--messages, only the id the episodes cite.")
@click.option("--messages", "messages_path", default=None, metavar="FILE",
              help='Read the conversation from a JSON list of messages ({"role": ..., '
                   '"content": ...}) instead; "-": stdin.')
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


extract.params += _session_params()
