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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click

from remem.blocks import Blocks
from remem.blocks.operation_table import BLOCK_OPERATIONS
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
from remem.cli.common import NamespaceType, db_param
from remem.cli.files import open_files
from remem.cli.options import CliName, build_request
from remem.cli.render import emit_json, print_fields, print_rows
from remem.cli.table import CommandSpec, Family, add_table_commands, json_option, with_params
from remem.operations import Operation
from remem.requests import Request
from remem.store import Namespace
from remem.store.reserved import BLOCKS

__all__ = ["blocks_group"]


@contextmanager
def _blocks(db: str, namespace: Namespace) -> Iterator[Blocks]:
    with open_files(db, namespace) as files:
        yield Blocks(files)


_DB_HELP = "The store (SQLite path or postgresql:// DSN)."


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


def _run(request: BlockAdminRequest, db: str, namespace: Namespace, json_output: bool) -> None:
    with _blocks(db, namespace) as blocks:
        _emit(run_block_admin(blocks, request, actor="cli"), json_output)


def _session_params() -> list[click.Parameter]:
    """``--json``, ``--db`` and ``--namespace`` on every blocks command."""
    return [json_option(_JSON_HELP), db_param(_DB_HELP), _namespace_param()]


def _namespace_param() -> click.Option:
    return click.Option(["--namespace", "-n"], type=NamespaceType(), default=BLOCKS,
                        show_default=True,
                        help="The store namespace holding the blocks, dot-separated.")


def _run_row(row: Operation, request: BlockAdminRequest, session: Mapping[str, Any]) -> Any:
    """The JSON the MCP block admin tools answer (the row's wire model)."""
    with _blocks(session["db"], session["namespace"]) as blocks:
        return run_block_admin(blocks, request, actor="cli")


def _show(request: BlockAdminRequest, data: Any) -> None:
    _emit(data, False)


_BLOCK_ID = {"id": "BLOCK_ID"}
_AGENT_AND_BLOCK = {"agent_id": "AGENT_ID", "block_id": "BLOCK_ID"}

_COMMANDS: Mapping[type[Request], CommandSpec] = {
    CreateBlockRequest: CommandSpec("Create block BLOCK_ID.", _show, arguments=_BLOCK_ID),
    ListBlocksRequest: CommandSpec(
        "List every block, or with --agent the blocks that agent sees, in order.", _show,
        names={"agent_id": CliName(option=("--agent",), metavar="ID",
                                   help="Only the blocks this agent sees, in prompt order.")}),
    GetBlockRequest: CommandSpec("Show block BLOCK_ID.", _show, arguments=_BLOCK_ID),
    ChangeBlockRequest: CommandSpec(
        "Change fields of block BLOCK_ID (read-only blocks too); the fields not given stay.",
        _show, arguments=_BLOCK_ID, names={
            # an unset bool keeps the block's flag: a three-way switch, not a flag
            "read_only": CliName(option=("--read-only/--writable",), help=(
                "Make the block read-only for agents, or editable again (default: "
                "unchanged).")),
            "description": CliName(help="The new description: what belongs in the block "
                                        "(shown to the model).")}),
    DeleteBlockRequest: CommandSpec(
        "Delete block BLOCK_ID (the agents it was attached to stop seeing it).", _show,
        arguments=_BLOCK_ID),
    AttachBlockRequest: CommandSpec(
        "Show block BLOCK_ID to agent AGENT_ID (shared with the agents that have it).", _show,
        arguments=_AGENT_AND_BLOCK),
    DetachBlockRequest: CommandSpec(
        "Stop showing block BLOCK_ID to agent AGENT_ID.", _show, arguments=_AGENT_AND_BLOCK),
}


@click.group(name="blocks")
def blocks_group() -> None:
    """Core memory blocks: labelled, size-limited text always in an agent's prompt."""


@blocks_group.command("set")
@click.argument("block_id")
@click.argument("value")
@with_params(_session_params)
def set_command(block_id: str, value: str, db: str, namespace: Namespace,
                json_output: bool) -> None:
    """Replace the text of block BLOCK_ID (read-only blocks too): update --value."""
    _run(build_request(ChangeBlockRequest, {"id": block_id, "value": value}, command="set"),
         db, namespace, json_output)


@blocks_group.command("render")
@click.argument("agent_id")
@click.option("--budget", type=int, default=None, help="Most tokens (default: no limit).")
@with_params(_session_params)
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
@with_params(_session_params)
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


add_table_commands(blocks_group, BLOCK_OPERATIONS, _COMMANDS,
                   Family(_session_params, _run_row, json=lambda row, data: data))
