"""``remem graph``: the temporal knowledge graph (remem.graph) in a database.

``ingest`` learns from one episode (text or a JSON list of messages) with the model configured
by ``REMEM_LLM_*`` (one call, two when a name is ambiguous; the same call keeps the profile
and timeline that ``profile`` and ``timeline`` print); ``search`` finds facts (``--as-of``
for what was true then, ``--known-at`` for what was known then); ``entity`` prints an entity's
current facts and timeline; ``export`` writes the graph as JSON or GraphML, or a picture of it
(Graphviz DOT, or SVG drawn without Graphviz).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from remem.cli.common import (
    CommandFailed,
    NamespaceType,
    db_option,
    db_param,
    embedder_param,
    make_embedder,
)
from remem.cli.options import CliName
from remem.cli.render import emit_json
from remem.cli.table import CommandSpec, Family, add_table_commands, json_option, with_params
from remem.errors import InvalidInputError
from remem.graph import Graph, to_dot, to_graphml, to_json, to_svg
from remem.graph.operation_table import GRAPH_OPERATIONS
from remem.graph.requests import EntityRequest, GraphRequest, SearchFactsRequest
from remem.graph.types import EntityPage, Fact, FactHit
from remem.messages import Message
from remem.operations import Operation
from remem.requests import Request

__all__ = ["graph_group"]

_DB_HELP = "SQLite database file or a postgresql:// DSN."
_EMBEDDER_HELP = ("Embedder of fact texts and entity names (the one the graph was built "
                  "with); 'none': keyword and graph search only.")


def _when(value: str | None, option: str) -> float | None:
    """An ISO date or date-time (UTC unless it says otherwise) as epoch seconds."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(f"{option} must be an ISO date or date-time such as "
                                f"2024-03-01 or 2024-03-01T12:00:00+02:00, got {value!r}"
                                ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _day(ts: float | None) -> str:
    return "..." if ts is None else datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def _graph(ctx: click.Context, db: str, namespace: tuple[str, ...], embedder: str,
           *, create: bool = False, model: Any = None) -> Graph:
    if not create and db != ":memory:" and "://" not in db and not Path(db).exists():
        raise CommandFailed(f"no database at {db}; pass --db PATH or set REMEM_DB")
    graph = Graph.open(db, namespace, model=model,
                       embedder=None if embedder == "none" else make_embedder(embedder))
    graph.setup()
    ctx.call_on_close(graph.close)
    return graph


def _session_params() -> list[click.Parameter]:
    """``--db``, ``--embedder``, ``--graph`` and ``--json`` on every graph command."""
    return [db_param(_DB_HELP), embedder_param(_EMBEDDER_HELP),
            click.Option(["--graph", "namespace"], type=NamespaceType(), default="graph",
                         show_default=True,
                         help="Namespace the graph lives under (dotted, or a JSON array)."),
            json_option()]


@click.group(name="graph")
def graph_group() -> None:
    """Temporal knowledge graph: ingest episodes, search facts, entity pages, export;
    the user's profile and timeline."""


@graph_group.command(name="ingest")
@click.argument("text", required=False)
@click.option("--file", "path", default=None,
              help="Read the episode from this file ('-': stdin) instead of TEXT.")
@click.option("--messages", "messages_path", default=None,
              help="A JSON file of messages ({role, content[, created_at]}) as the episode.")
@click.option("--at", "event_at", default=None,
              help="When the episode happened (ISO date/time; default: now or the last "
                   "message's time). Relative dates in it are resolved against this.")
@click.option("--source-id", "source_ids", multiple=True, help="Where it came from (repeat).")
@with_params(_session_params)
@click.pass_context
def ingest(ctx: click.Context, text: str | None, path: str | None,
           messages_path: str | None, event_at: str | None, source_ids: tuple[str, ...],
           db: str, embedder: str, namespace: tuple[str, ...], json_output: bool) -> None:
    """Learn entities and facts from one episode (TEXT, --file or --messages)."""
    from remem.cli.prompts import cli_model

    given = [x for x in (text, path, messages_path) if x is not None]
    if len(given) != 1:
        raise InvalidInputError("give the episode once: TEXT, --file FILE or --messages FILE")
    episode: str | list[Message]
    if messages_path is not None:
        try:
            raw = json.loads(Path(messages_path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandFailed(f"cannot read messages from {messages_path}: {exc}") from None
        if not isinstance(raw, list):
            raise InvalidInputError(f"{messages_path} must hold a JSON list of messages")
        episode = [Message.model_validate(m) for m in raw]
    elif path is not None:
        episode = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    else:
        episode = text or ""
    graph = _graph(ctx, db, namespace, embedder, create=True, model=cli_model(ctx))
    result = graph.ingest(episode, event_at=_when(event_at, "--at"), source_ids=source_ids)
    if json_output:
        emit_json({"episode": result.episode.id, "entities": list(result.entity_ids),
                   "created_entities": list(result.created_entities),
                   "added": list(result.added), "confirmed": list(result.confirmed),
                   "invalidated": list(result.invalidated), "llm_calls": result.llm_calls,
                   "input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
                   "resolutions": list(result.resolutions),
                   "profile_changes": [list(c) for c in result.profile_changes],
                   "events": list(result.events)})
        return
    click.echo(f"episode {result.episode.id}: {len(result.added)} facts added, "
               f"{len(result.confirmed)} confirmed, {len(result.invalidated)} ended; "
               f"{len(result.created_entities)} new entities; {result.llm_calls} model "
               f"call{'s' if result.llm_calls != 1 else ''}")


if TYPE_CHECKING:  # click >= 8.2 types ParamType by its output and input
    _EntityParam = click.ParamType[int | str, Any]
else:
    _EntityParam = click.ParamType


class _EntityRefType(_EntityParam):
    """An entity: its id (digits) or its name."""

    name = "entity"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | str:
        """Digits are an id, anything else a name."""
        text = str(value)
        return int(text) if text.isdigit() else text


def _run(row: Operation, request: GraphRequest[Any], session: Mapping[str, Any]) -> Any:
    """Run ``request`` on the graph of its scope (``--user``/``--agent``: the graph
    ``Memory.graph`` keeps for them), else of ``--graph``."""
    namespace = session["namespace"]
    if request.user_id is not None or request.agent_id is not None:
        from remem.memory.namespaces import scope_namespace

        namespace = ("graph", *scope_namespace(request.user_id, request.agent_id, None))
    graph = _graph(click.get_current_context(), session["db"], namespace, session["embedder"],
                   create=row.writes)
    return request.run_on(graph)


def _focal_ranks_by_distance(values: dict[str, Any]) -> None:
    """With --focal and no --rerank, rank by hops from it (as the command always did)."""
    given = click.get_current_context().get_parameter_source("rerank")
    if values.get("focal") is not None and given is ParameterSource.DEFAULT:
        values["rerank"] = "distance"


def _show_hits(request: SearchFactsRequest, hits: list[FactHit]) -> None:
    if not hits:
        click.echo("no matching facts")
    for hit in hits:
        start, end = hit.interval
        click.echo(f"{hit.score:.3f}  {hit.fact.fact}  [{_day(start)} .. {_day(end)}]  "
                   f"{' -> '.join(hit.path)}")


def _fact_line(fact: Fact, names: dict[int, str]) -> str:
    obj = names.get(fact.object_id, "") if fact.object_id is not None else fact.value or ""
    return (f"  {_day(fact.valid_at)} .. {_day(fact.invalid_at)}  {fact.fact}  "
            f"({names.get(fact.subject_id, '?')} {fact.predicate} {obj})")


def _show_page(request: EntityRequest, page: EntityPage) -> None:
    e = page.entity
    also = f" (also {', '.join(e.aliases)})" if e.aliases else ""
    click.echo(f"{e.name} [{e.type}, id {e.id}]{also}")
    click.echo("current:")
    for fact in page.current:
        click.echo(_fact_line(fact, page.names))
    click.echo("timeline:")
    for fact in page.timeline:
        click.echo(_fact_line(fact, page.names))


_COMMANDS: Mapping[type[Request], CommandSpec] = {
    SearchFactsRequest: CommandSpec(
        "Facts matching QUERY, best first, with their validity and path.", _show_hits,
        arguments={"query": "QUERY"}, prepare=_focal_ranks_by_distance, names={
            "focal": CliName(type=_EntityRefType(), metavar="ENTITY"),
            "rerank": CliName(help="Final order (distance when --focal is given).")}),
    EntityRequest: CommandSpec(
        "An entity's page (ENTITY: a name or an id): current facts and timeline.",
        _show_page, arguments={"entity": "ENTITY"},
        names={"entity": CliName(type=_EntityRefType())}),
}
add_table_commands(graph_group, GRAPH_OPERATIONS, _COMMANDS, Family(_session_params, _run))


@graph_group.command(name="export")
@click.option("--format", "fmt", type=click.Choice(["json", "graphml", "dot", "svg"]),
              default="json", show_default=True,
              help="json: everything; graphml: for Gephi, yEd, Cytoscape; dot: Graphviz; "
                   "svg: a picture (drawn without Graphviz).")
@click.option("--as-of", default=None,
              help="dot and svg: only the facts true at this time (ISO).")
@click.option("--out", default="-", show_default=True, help="File to write ('-': stdout).")
@click.option("--graph", "namespace", type=NamespaceType(), default="graph", show_default=True,
              help="Namespace the graph lives under (dotted, or a JSON array).")
@db_option(_DB_HELP)
@click.pass_context
def export(ctx: click.Context, fmt: str, as_of: str | None, out: str,
           namespace: tuple[str, ...], db: str) -> None:
    """Write the whole graph (episodes, entities, facts with both time lines), or a picture
    of it (dot, svg)."""
    at = _when(as_of, "--as-of")
    if at is not None and fmt not in ("dot", "svg"):
        raise InvalidInputError("--as-of draws the facts true then: use it with --format dot "
                                "or svg (json and graphml hold every fact with its times)")
    graph = _graph(ctx, db, namespace, "none")
    if fmt == "json":
        text = json.dumps(to_json(graph), ensure_ascii=False, indent=2)
    elif fmt == "graphml":
        text = to_graphml(graph)
    else:
        text = (to_dot if fmt == "dot" else to_svg)(graph, as_of=at)
    if out == "-":
        click.echo(text)
    else:
        Path(out).write_text(text + "\n", encoding="utf-8")


def _user_graph(namespace: tuple[str, ...], user: str | None) -> tuple[str, ...]:
    """``--user``: the graph ``Memory.graph(user_id=...)`` keeps (default scopes)."""
    if user is None:
        return namespace
    from remem.memory.namespaces import scope_namespace

    return ("graph", *scope_namespace(user, None, None))


def _patch_ops(sets: tuple[str, ...], removes: tuple[str, ...]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for item in sets:
        path, sep, value = item.partition("=")
        if not sep:
            raise InvalidInputError(f"--set takes /topic/sub_topic=VALUE, got {item!r}")
        ops.append({"op": "add", "path": path.strip(), "value": value})
    ops += [{"op": "remove", "path": path.strip()} for path in removes]
    return ops


_USER_HELP = ("The profile of the graph mem.graph(user_id=USER) keeps (instead of --graph).")


@graph_group.command(name="profile")
@click.option("--user", default=None, help=_USER_HELP)
@click.option("--as-of", default=None, help="The profile as it stood at this time (ISO).")
@click.option("--set", "sets", multiple=True, metavar="PATH=VALUE",
              help="Set a slot, e.g. --set /work/company=Acme (repeat).")
@click.option("--remove", "removes", multiple=True, metavar="PATH",
              help="Remove a slot, e.g. --remove /work/title (repeat).")
@click.option("--history", is_flag=True, help="Print every recorded change instead.")
@with_params(_session_params)
@click.pass_context
def profile(ctx: click.Context, user: str | None, as_of: str | None, sets: tuple[str, ...],
            removes: tuple[str, ...], history: bool, db: str, embedder: str,
            namespace: tuple[str, ...], json_output: bool) -> None:
    """The user's profile kept from the graph's episodes (topic / sub-topic = value); --set
    and --remove change it by hand."""
    ops = _patch_ops(sets, removes)
    graph = _graph(ctx, db, _user_graph(namespace, user), embedder, create=bool(ops))
    if ops:
        changes = graph.patch_profile(ops)
        if not json_output:
            click.echo(f"{len(changes)} change{'s' if len(changes) != 1 else ''} recorded")
    if history:
        changes = graph.profile_history()
        if json_output:
            emit_json([c.to_dict() for c in changes])
            return
        for c in changes:
            click.echo(f"{_day(c.changed_at)}  {c.op:<7} /{c.topic}/{c.sub_topic}  "
                       f"{c.old if c.old is not None else '-'} -> "
                       f"{c.new if c.new is not None else '-'}")
        return
    shown = graph.profile(as_of=_when(as_of, "--as-of")).to_dict()
    if json_output:
        emit_json(shown)
        return
    if not shown:
        click.echo("the profile is empty")
    for topic, subs in shown.items():
        click.echo(f"{topic}:")
        for sub_topic, value in subs.items():
            click.echo(f"  {sub_topic}: {value}")


@graph_group.command(name="timeline")
@click.option("--user", default=None, help=_USER_HELP.replace("profile", "timeline"))
@click.option("--since", default=None, help="Events from this time on (ISO, inclusive).")
@click.option("--until", default=None, help="Events before this time (ISO, exclusive).")
@click.option("--tag", "tags", multiple=True, help="Only events with this tag (repeat: any).")
@with_params(_session_params)
@click.pass_context
def timeline(ctx: click.Context, user: str | None, since: str | None, until: str | None,
             tags: tuple[str, ...], db: str, embedder: str, namespace: tuple[str, ...],
             json_output: bool) -> None:
    """Dated events of the user's life kept from the graph's episodes, by time."""
    graph = _graph(ctx, db, _user_graph(namespace, user), embedder)
    events = graph.timeline(since=_when(since, "--since"), until=_when(until, "--until"),
                            tags=tags)
    if json_output:
        emit_json([e.to_dict() for e in events])
        return
    if not events:
        click.echo("no events")
    for event in events:
        tagged = f"  [{', '.join(event.tags)}]" if event.tags else ""
        click.echo(f"{_day(event.happened_at)}  {event.text}{tagged}")
