"""Output helpers shared by the commands: JSON documents, items, result tables and files."""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from remem.cli.common import CommandFailed, format_namespace
from remem.memory.requests import MemoryRequest
from remem.memory.wire import RESULT_MODELS
from remem.store import Item, SearchItem

__all__ = [
    "FULL_IDS_HELP",
    "compact_json",
    "emit_json",
    "format_time",
    "human_value",
    "iso_time",
    "people_table",
    "print_fields",
    "print_item",
    "print_rows",
    "print_table",
    "result_json",
    "results_table",
    "short_ids",
    "write_atomically",
]

TIME_WIDTH, SCORE_WIDTH, MIN_VALUE_WIDTH = 17, 9, 16
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
    """A UTC timestamp for humans in ISO-8601, ``YYYY-MM-DDTHH:MM:SSZ``."""
    if moment is None:
        return never
    return iso_time(moment)


def iso_time(moment: datetime | float | None, *, minutes: bool = False,
             never: str = "-") -> str:
    """``moment`` (a datetime, or seconds since the epoch as the store keeps them) in
    ISO-8601 UTC: ``2025-06-15T12:00:00Z``, or ``2025-06-15T12:00Z`` with ``minutes`` (table
    cells); ``never`` for ``None``. The one spelling of a time in human output."""
    if moment is None:
        return never
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, UTC)
    elif moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%MZ" if minutes else "%Y-%m-%dT%H:%M:%SZ")


SHORT_ID = 8
"""The fewest trailing characters a shortened id shows."""

FULL_IDS_HELP = "Show ids whole (tables shorten them to their unique end: …c99210a4f)."


def short_ids(ids: Sequence[str], *, full: bool = False) -> list[str]:
    """``ids`` as a table shows them: the shortest end (at least :data:`SHORT_ID` characters)
    that tells them apart, after ``…``; whole with ``full`` or where the end is the id.

    remem's ids begin with their kind and creation time (``mem_01a250d8...``), so ids made
    together share their start; their random end tells them apart."""
    if full:
        return list(ids)
    distinct = set(ids)
    size = SHORT_ID
    while size < max(map(len, distinct), default=0) and \
            len({i[-size:] for i in distinct}) < len(distinct):
        size += 1
    return [i if len(i) <= size + 1 else "…" + i[-size:] for i in ids]


def people_table() -> Table:
    """An empty table for people that reads at 80 columns and in a pipe: no box, two spaces
    between columns, a bold header. Give the text column ``ratio=1`` and a ``min_width``
    and the others ``no_wrap``, so the text gets the room (tests/cli/test_width.py renders
    each command at 80 columns)."""
    return Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1),
                 header_style="bold")


def print_table(table: Table) -> None:
    """Print ``table`` on stdout at the terminal's width (80 in a pipe, or ``$COLUMNS``),
    without the spaces that pad its lines to that width."""
    console = Console(highlight=False)
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():
        click.echo(line.rstrip())


def print_item(item: Item) -> None:
    """Print an item for humans: its metadata, then its value as indented JSON."""
    rows = [
        ("namespace", format_namespace(item.namespace)),
        ("key", item.key),
        ("created", format_time(item.created_at)),
        ("updated", format_time(item.updated_at)),
        ("expires", format_time(item.expires_at)),
    ]
    for label, text in rows:
        click.echo(f"{label + ':':<11}{text}")
    click.echo("value:")
    click.echo(json.dumps(item.value, ensure_ascii=False, indent=2))


def results_table(items: list[SearchItem], *, scored: bool, width: int) -> Table:
    """Search results as a table that fits ``width``: long namespaces and keys wrap, the
    value is cut to the space left. ``scored``: a ``relevance`` column (0-1, the same
    whatever the page; ``docs/search.md``, "Scores")."""
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
        table.add_column("relevance", width=SCORE_WIDTH, justify="right", no_wrap=True)
    table.add_column("value", width=value_width, no_wrap=True, overflow="ellipsis")
    for item, name in zip(items, names, strict=True):
        cells = [Text(name), Text(item.key), Text(iso_time(item.updated_at, minutes=True))]
        if scored:
            cells.append(Text("" if item.relevance is None else f"{item.relevance:.3f}"))
        cells.append(Text(compact_json(item.value, value_width)))
        table.add_row(*cells)
    return table


TIME_KEYS = frozenset({"at", "created_at", "updated_at", "modified_at", "expires_at"})
"""Keys whose number is a time (seconds since the epoch on the wire): shown in ISO-8601."""

LINE = 80
"""The width of the ``key: value`` lines :func:`print_fields` wraps to."""


def human_value(key: str, value: Any, *, minutes: bool = False) -> str:
    """One JSON value of a result as people read it: times in ISO-8601, ``-`` for nothing,
    lists joined by commas, other objects as one line of JSON."""
    if value is None:
        return "-"
    if key in TIME_KEYS and isinstance(value, int | float) and not isinstance(value, bool):
        return iso_time(float(value), minutes=minutes)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value) if value else "-"
    if isinstance(value, dict | list):
        return compact_json(value)
    return str(value)


def print_fields(data: Mapping[str, Any], *, skip: Sequence[str] = ()) -> None:
    """A result object for people: one ``key: value`` line per field (keys aligned, long
    values wrapped under themselves, the lines of a text kept), see :func:`human_value`."""
    keys = [k for k in data if k not in skip]
    pad = max(map(len, keys), default=0) + 2
    for key in keys:
        text = human_value(key, data[key])
        lines = text.splitlines() or [""]
        first = True
        for line in lines:
            label = f"{key}:".ljust(pad) if first else " " * pad
            wrapped = textwrap.wrap(line, max(LINE - pad, 20), break_on_hyphens=False,
                                    drop_whitespace=False) or [""]
            for part in wrapped:
                click.echo((label + part).rstrip())
                label = " " * pad
            first = False


def print_rows(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
               text: str | None = None, headers: Mapping[str, str] | None = None) -> None:
    """Result objects as a table for people (:func:`people_table`): ``columns`` of each row,
    ``text`` the one that wraps and gets the room, the others never wrapped; times to the
    minute in ISO-8601 (:func:`human_value`)."""
    table = people_table()
    for name in columns:
        header = (headers or {}).get(name, name)
        if name == text:
            table.add_column(header, ratio=1, min_width=24, overflow="fold")
        else:
            table.add_column(header, no_wrap=True, overflow="ellipsis")
    for row in rows:
        table.add_row(*(Text(human_value(name, row.get(name), minutes=True))
                        for name in columns))
    print_table(table)


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
