"""Output helpers shared by the commands: JSON documents, items, result tables and files."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import click
from rich.table import Table
from rich.text import Text

from remem.cli.common import CommandFailed, format_namespace
from remem.memory.requests import MemoryRequest
from remem.memory.wire import RESULT_MODELS
from remem.store import Item, SearchItem

__all__ = [
    "compact_json",
    "emit_json",
    "format_time",
    "print_item",
    "result_json",
    "results_table",
    "write_atomically",
]

TIME_WIDTH, SCORE_WIDTH, MIN_VALUE_WIDTH = 16, 6, 16
"""Column widths of the search table (namespace and key get a share of the terminal)."""


def emit_json(data: Any) -> None:
    """Write ``data`` as one JSON document on stdout (the ``--json`` output)."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def result_json(request: MemoryRequest[Any], result: Any) -> dict[str, Any]:
    """The JSON of ``request``'s result in its declared shape (:mod:`remem.memory.wire`):
    what the Python result's ``to_dict()``, the HTTP API and the MCP tools give."""
    for kind in type(request).__mro__:  # a subclass of a request answers like it
        if kind in RESULT_MODELS:
            data: dict[str, Any] = RESULT_MODELS[kind].of(result).model_dump(
                mode="json", by_alias=True)
            return data
    raise TypeError(f"no JSON shape declared for the result of {type(request).__name__}")


def compact_json(data: Mapping[str, Any] | Sequence[Any], limit: int | None = None) -> str:
    """One-line JSON, cut to ``limit`` characters with an ellipsis."""
    text = json.dumps(data, ensure_ascii=False, separators=(", ", ": "))
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def format_time(moment: datetime | None, *, never: str = "never") -> str:
    """A UTC timestamp for humans, ``YYYY-MM-DD HH:MM:SS``."""
    if moment is None:
        return never
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def print_item(item: Item) -> None:
    """Print an item for humans: its metadata, then its value as indented JSON."""
    rows = [
        ("namespace", format_namespace(item.namespace)),
        ("key", item.key),
        ("created", format_time(item.created_at) + " UTC"),
        ("updated", format_time(item.updated_at) + " UTC"),
        ("expires", format_time(item.expires_at) + (" UTC" if item.expires_at else "")),
    ]
    for label, text in rows:
        click.echo(f"{label + ':':<11}{text}")
    click.echo("value:")
    click.echo(json.dumps(item.value, ensure_ascii=False, indent=2))


def results_table(items: list[SearchItem], *, scored: bool, width: int) -> Table:
    """Search results as a table that fits ``width``: long namespaces and keys wrap, the
    value is cut to the space left."""
    names = [format_namespace(item.namespace) for item in items]
    ns_width = min(max(len("namespace"), *map(len, names)), max(width // 4, 12))
    key_width = min(max(len("key"), *(len(item.key) for item in items)), max(width // 6, 8))
    fixed = [ns_width, key_width, TIME_WIDTH] + ([SCORE_WIDTH] if scored else [])
    value_width = max(width - sum(fixed) - 3 * len(fixed), MIN_VALUE_WIDTH)
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("namespace", width=ns_width, overflow="fold")
    table.add_column("key", width=key_width, overflow="fold")
    table.add_column("updated", width=TIME_WIDTH, no_wrap=True)
    if scored:
        table.add_column("score", width=SCORE_WIDTH, justify="right", no_wrap=True)
    table.add_column("value", width=value_width, no_wrap=True, overflow="ellipsis")
    for item, name in zip(items, names, strict=True):
        cells = [Text(name), Text(item.key), Text(format_time(item.updated_at)[:TIME_WIDTH])]
        if scored:
            cells.append(Text("" if item.score is None else f"{item.score:.3f}"))
        cells.append(Text(compact_json(item.value, value_width)))
        table.add_row(*cells)
    return table


def write_atomically(path: Path, write: Callable[[IO[str]], int]) -> int:
    """Run ``write`` on a temporary file next to ``path``, then move it into place."""
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise CommandFailed(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            count = write(out)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return count
