"""``remem blocks``: create, attach, edit and render core memory blocks kept in a store.

The application's commands (``create``, ``list``, ``get``, ``update``, ``set``, ``delete``,
``attach``, ``detach``) are built from the block request values
(:mod:`remem.blocks.requests`) that ``/v1/blocks`` and the MCP block admin tools take: a
field is an option (ids are positional), the request validates the values, and
:func:`~remem.blocks.requests.run_block_admin` runs it and answers the same JSON as the MCP
tool. ``render`` and ``history`` read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import click

from remem.blocks import Blocks
from remem.blocks.requests import (
    AttachBlockRequest,
    BlockAdminRequest,
    ChangeBlockRequest,
    CreateBlockRequest,
    DeleteBlockRequest,
    DetachBlockRequest,
    GetBlockRequest,
    ListBlocksRequest,
    run_block_admin,
)
from remem.cli.common import NamespaceType, db_option
from remem.cli.files import open_files
from remem.cli.options import RequestCommand, build_request, option_name, request_params
from remem.cli.render import emit_json, print_fields, print_rows
from remem.requests import Request
from remem.store import Namespace
from remem.store.reserved import BLOCKS

__all__ = ["blocks_group"]


@contextmanager
def _blocks(db: str, namespace: Namespace) -> Iterator[Blocks]:
    with open_files(db, namespace) as files:
        yield Blocks(files)


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--namespace", "-n", type=NamespaceType(), default=BLOCKS,
                      show_default=True, help="The store namespace holding the blocks, "
                                              "dot-separated.")(fn)
    fn = db_option("The store (SQLite path or postgresql:// DSN).")(fn)
    return click.option("--json", "json_output", is_flag=True, help=_JSON_HELP)(fn)


_JSON_HELP = "Machine output: the JSON document /v1/blocks and the MCP tools answer."


def _emit(data: Any, json_output: bool) -> None:
    """``data`` (a block tool's JSON) as JSON, or for people: blocks as a table whose value
    column gets the room, anything else as ``key: value`` lines."""
    if json_output:
        emit_json(data)
        return
    blocks = data.get("blocks") if isinstance(data, dict) else None
    if isinstance(blocks, list) and all(isinstance(b, dict) for b in blocks):
        if not blocks:
            click.echo("no blocks")
            return
        print_rows([{**b, "chars": f"{b['chars']}/{b['limit']}",
                     "read_only": "read-only" if b.get("read_only") else ""}
                    for b in blocks], ["id", "label", "chars", "read_only", "value"],
                   text="value", headers={"read_only": ""})
    elif isinstance(data, dict):
        print_fields(data)
    else:
        emit_json(data)


#: ids are positional: the field -> its metavar
_ARGUMENTS: Mapping[str, str] = {"id": "BLOCK_ID", "agent_id": "AGENT_ID",
                                 "block_id": "BLOCK_ID"}
#: an unset bool field keeps the block's flag, so it is a three-way switch, not a flag
_READ_ONLY_SWITCH = click.Option(
    ["--read-only/--writable", "read_only"], default=None,
    help="Make the block read-only for agents, or editable again (default: unchanged).")
#: fields whose request declares no description
_DESCRIPTION_SWITCH = click.Option(
    ["--description", "description"], default=None,
    help="The new description: what belongs in the block (shown to the model).")
_AGENT_SWITCH = click.Option(["--agent", "agent_id"], metavar="ID", default=None,
                             help="Only the blocks this agent sees, in prompt order.")


def _run(request: BlockAdminRequest, db: str, namespace: Namespace, json_output: bool) -> None:
    with _blocks(db, namespace) as blocks:
        _emit(run_block_admin(blocks, request, actor="cli"), json_output)


def _session_params() -> list[click.Parameter]:
    """``--db`` and ``--namespace``, in the order the other commands show them."""
    def holder() -> None:
        """Only carries the options."""

    _common(holder)
    return list(reversed(holder.__click_params__))  # type: ignore[attr-defined]


def _admin_command(model: type[Request], name: str, *, positional: Sequence[str] = (),
                   switches: Sequence[click.Parameter] = ()) -> click.Command:
    """The command ``name`` running ``model``: ``positional`` fields as arguments, the
    ``switches`` given for some fields, the other fields as options."""
    arguments = [click.Argument([field], metavar=_ARGUMENTS[field]) for field in positional]
    own = {p.name for p in switches}
    options = request_params(model, exclude=[*positional, *own])
    params: list[click.Parameter] = [*arguments, *options, *switches]
    fields = {p.name for p in params}

    def callback(db: str, namespace: Namespace, json_output: bool, **values: Any) -> None:
        try:
            request = build_request(model, {k: v for k, v in values.items() if k in fields},
                                    command=name)
        except click.UsageError as exc:  # name the positional arguments as help shows them
            message = exc.message
            for field in positional:
                message = message.replace(f"{option_name(field)}:", f"{_ARGUMENTS[field]}:")
            raise click.UsageError(message, exc.ctx) from None
        _run(request, db, namespace, json_output)  # type: ignore[arg-type]

    return RequestCommand(model, name, callback=callback,
                          params=[*params, *_session_params()], help=_HELP[name])


_HELP: Mapping[str, str] = {
    "create": "Create block BLOCK_ID.",
    "list": "List every block, or with --agent the blocks that agent sees, in order.",
    "get": "Show block BLOCK_ID.",
    "update": "Change fields of block BLOCK_ID (read-only blocks too); the fields not "
              "given stay.",
    "delete": "Delete block BLOCK_ID (the agents it was attached to stop seeing it).",
    "attach": "Show block BLOCK_ID to agent AGENT_ID (shared with the agents that have it).",
    "detach": "Stop showing block BLOCK_ID to agent AGENT_ID.",
}


@click.group(name="blocks")
def blocks_group() -> None:
    """Core memory blocks: labelled, size-limited text always in an agent's prompt."""


@blocks_group.command("set")
@click.argument("block_id")
@click.argument("value")
@_common
def set_command(block_id: str, value: str, db: str, namespace: Namespace,
                json_output: bool) -> None:
    """Replace the text of block BLOCK_ID (read-only blocks too): update --value."""
    _run(build_request(ChangeBlockRequest, {"id": block_id, "value": value}, command="set"),
         db, namespace, json_output)


@blocks_group.command("render")
@click.argument("agent_id")
@click.option("--budget", type=int, default=None, help="Most tokens (default: no limit).")
@_common
def render_command(agent_id: str, budget: int | None, db: str, namespace: Namespace,
                   json_output: bool) -> None:
    """Print AGENT_ID's blocks as they appear in its system prompt."""
    with _blocks(db, namespace) as blocks:
        text = blocks.render(agent_id, budget=budget).text
    if json_output:
        emit_json({"agent_id": agent_id, "text": text})
    else:
        click.echo(text)


@blocks_group.command("history")
@click.argument("block_id")
@_common
def history_command(block_id: str, db: str, namespace: Namespace, json_output: bool) -> None:
    """Show every change of block BLOCK_ID, oldest first."""
    with _blocks(db, namespace) as blocks:
        events = [{"version": e.version, "actor": e.actor, "at": e.at,
                   "value": json.loads(e.after)["value"] if e.after else None}
                  for e in blocks.history(block_id)]
    if json_output:
        emit_json(events)
    else:
        print_rows(events, ["version", "at", "actor", "value"], text="value")


for _command in (
        _admin_command(CreateBlockRequest, "create", positional=["id"]),
        _admin_command(ListBlocksRequest, "list", switches=[_AGENT_SWITCH]),
        _admin_command(GetBlockRequest, "get", positional=["id"]),
        _admin_command(ChangeBlockRequest, "update", positional=["id"],
                       switches=[_DESCRIPTION_SWITCH, _READ_ONLY_SWITCH]),
        _admin_command(DeleteBlockRequest, "delete", positional=["id"]),
        _admin_command(AttachBlockRequest, "attach", positional=["agent_id", "block_id"]),
        _admin_command(DetachBlockRequest, "detach", positional=["agent_id", "block_id"])):
    blocks_group.add_command(_command)
