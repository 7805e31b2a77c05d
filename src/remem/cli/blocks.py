"""``remem blocks``: create, attach, edit and render core memory blocks kept in a store."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from remem.blocks import Blocks
from remem.cli.common import NamespaceType, db_option
from remem.cli.files import open_files
from remem.store import Namespace

__all__ = ["blocks_group"]


@contextmanager
def _blocks(db: str, namespace: Namespace) -> Iterator[Blocks]:
    with open_files(db, namespace) as files:
        yield Blocks(files)


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--namespace", "-n", type=NamespaceType(), default="blocks",
                      show_default=True, help="The store namespace holding the blocks, "
                                              "dot-separated.")(fn)
    return db_option("The store (SQLite path or postgresql:// DSN).")(fn)


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@click.group(name="blocks")
def blocks_group() -> None:
    """Core memory blocks: labelled, size-limited text always in an agent's prompt."""


@blocks_group.command("create")
@click.argument("block_id")
@click.option("--label", required=True, help="How agents name the block, e.g. 'human'.")
@click.option("--value", default="", help="The initial text.")
@click.option("--limit", type=int, default=2000, show_default=True,
              help="Most characters the block may hold.")
@click.option("--description", default="", help="What belongs in the block.")
@click.option("--read-only", is_flag=True, help="Agents may read but not edit it.")
@_common
def create_command(block_id: str, label: str, value: str, limit: int, description: str,
                   read_only: bool, db: str, namespace: Namespace) -> None:
    """Create block BLOCK_ID."""
    with _blocks(db, namespace) as blocks:
        _emit(blocks.create(block_id, label=label, value=value, limit=limit,
                            description=description, read_only=read_only,
                            actor="cli").to_dict())


@blocks_group.command("list")
@_common
def list_command(db: str, namespace: Namespace) -> None:
    """List every block."""
    with _blocks(db, namespace) as blocks:
        _emit([b.to_dict() for b in blocks.list_blocks()])


@blocks_group.command("attach")
@click.argument("agent_id")
@click.argument("block_id")
@_common
def attach_command(agent_id: str, block_id: str, db: str, namespace: Namespace) -> None:
    """Show block BLOCK_ID to agent AGENT_ID."""
    with _blocks(db, namespace) as blocks:
        blocks.attach(agent_id, block_id)
        _emit({"agent_id": agent_id, "blocks": blocks.attached(agent_id)})


@blocks_group.command("set")
@click.argument("block_id")
@click.argument("value")
@_common
def set_command(block_id: str, value: str, db: str, namespace: Namespace) -> None:
    """Replace the text of block BLOCK_ID (read-only blocks too)."""
    with _blocks(db, namespace) as blocks:
        _emit(blocks.update(block_id, value=value, actor="cli").to_dict())


@blocks_group.command("render")
@click.argument("agent_id")
@click.option("--budget", type=int, default=None, help="Most tokens (default: no limit).")
@_common
def render_command(agent_id: str, budget: int | None, db: str, namespace: Namespace) -> None:
    """Print AGENT_ID's blocks as they appear in its system prompt."""
    with _blocks(db, namespace) as blocks:
        click.echo(blocks.render(agent_id, budget=budget).text)


@blocks_group.command("history")
@click.argument("block_id")
@_common
def history_command(block_id: str, db: str, namespace: Namespace) -> None:
    """Show every change of block BLOCK_ID."""
    with _blocks(db, namespace) as blocks:
        _emit([{"version": e.version, "actor": e.actor, "at": e.at,
                "value": json.loads(e.after)["value"] if e.after else None}
               for e in blocks.history(block_id)])
