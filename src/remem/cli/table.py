"""Commands built from a family's operation table: one builder for every ``remem`` group.

Each row of a table (:class:`remem.operations.Operation`) that names a ``command``
(``"episodes add"``: the group, then the command) becomes a click command here. Its
parameters are the request's fields (:mod:`remem.cli.options` spells them), its body builds
the request from them, runs it where the group runs requests (:attr:`Family.run`: the
store, a registry, a remote client) and prints the result: ``--json`` prints the row's wire
model (``row.answer(result)``: the document the HTTP API and the MCP tools give), people get
the command's renderer.

What a row cannot say is data on this side, one :class:`CommandSpec` per command: the help,
the renderer, which fields are positional, spellings and defaults of its own, fields it does
not offer (with the reason), parameters it adds and a check before it runs (a confirmation).
A group's shared parameters (``--db``, ``--json``, a ``--prefix``) and how it runs a request
are its :class:`Family`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from remem.cli.options import (
    CLI_NAMES,
    CliName,
    RequestCommand,
    build_request,
    request_params,
)
from remem.cli.render import emit_json
from remem.operations import Operation
from remem.requests import Request

__all__ = ["JSON_HELP", "CommandSpec", "Family", "TableCommand", "add_table_commands",
           "cli_fields", "json_option", "table_commands", "wire_json", "with_params"]

JSON_HELP = "Machine output: print one JSON document on stdout."

F = TypeVar("F", bound=Callable[..., Any])


def json_option(help: str = JSON_HELP) -> click.Option:
    """``--json``: the one machine-output switch every group has."""
    return click.Option(["--json", "json_output"], is_flag=True, help=help)


def with_params(make: Callable[[], Sequence[click.Parameter]]) -> Callable[[F], F]:
    """A decorator giving a hand-written command a family's parameters (``make()``), shown
    in that order where the decorator stands."""
    def decorate(command: F) -> F:
        command.__click_params__ = [  # type: ignore[attr-defined]
            *getattr(command, "__click_params__", []), *reversed(make())]
        return command
    return decorate


def wire_json(row: Operation, result: Any) -> Any:
    """``result`` as the row's wire model's JSON: what the HTTP API and the MCP tools
    answer."""
    return row.answer(result).model_dump(mode="json", by_alias=True)


def cli_fields(row: Operation) -> tuple[str, ...]:
    """The request fields a command built from ``row`` offers, unless its spec leaves one out
    with a reason: every field but the local ones (Python objects, never sent)."""
    return tuple(name for name, info in row.request.model_fields.items() if not info.exclude)


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """What a command needs that its row cannot say.

    ``help``: the command's help. ``show``: prints ``(request, result)`` for people (none:
    the JSON). ``arguments``: positional fields, in order, each with its metavar.
    ``names``: spellings of this command's own, over :data:`~remem.cli.options.CLI_NAMES`
    (``-k``, a default of 20 where the request pages 100, a three-way switch).
    ``omitted``: fields the command does not offer, each with the reason. ``params``:
    parameters it has beside the fields (``--yes``, ``--file``). ``prepare(values)`` may
    change the parsed values (every parameter's, by name) before the request is built from
    them: a field read from a file, or from the database. ``check(request, extras)`` runs
    before the request does (a confirmation, a rule the options must follow).
    """

    help: str
    show: Callable[[Any, Any], None] | None = None
    arguments: Mapping[str, str] = field(default_factory=dict)
    names: Mapping[str, CliName] = field(default_factory=dict)
    omitted: Mapping[str, str] = field(default_factory=dict)
    params: Sequence[click.Parameter] = ()
    prepare: Callable[[dict[str, Any]], None] | None = None
    check: Callable[[Any, Mapping[str, Any]], None] | None = None


@dataclass(frozen=True, slots=True)
class Family:
    """How a group runs its rows. ``params`` makes the parameters every command of the group
    has (``--db``, ``--json``...; fresh ones per command); ``run(row, request, session)``
    runs a request with their values (``session``, by parameter name) and returns the
    result; ``json(row, result)`` is what ``--json`` prints (default: the row's wire
    model)."""

    params: Callable[[], Sequence[click.Parameter]]
    run: Callable[[Operation, Any, Mapping[str, Any]], Any]
    json: Callable[[Operation, Any], Any] = wire_json


class TableCommand(RequestCommand):
    """A command built from a table row: ``row`` and ``spec`` say how (the parity tests read
    them)."""

    def __init__(self, row: Operation, spec: CommandSpec, name: str, **kwargs: Any) -> None:
        super().__init__(row.request, name, **kwargs)
        self.row = row
        self.spec = spec


def table_command(row: Operation, spec: CommandSpec, family: Family) -> TableCommand:
    """The command of ``row``: its request's fields as parameters (``spec.arguments``
    positional, in that order), then ``spec.params``, then the family's."""
    name = (row.command or "").split()[-1]
    names: dict[str, CliName] = {**CLI_NAMES, **spec.names}
    for field_name, metavar in spec.arguments.items():
        spelled = spec.names.get(field_name, CliName())
        names[field_name] = CliName(argument=metavar, required=spelled.required,
                                    default=spelled.default, type=spelled.type)
    offered = [n for n in cli_fields(row) if n not in spec.omitted]
    excluded = [n for n in row.request.model_fields if n not in offered]
    fields = request_params(row.request, exclude=excluded, names=names)
    order = list(spec.arguments)
    fields.sort(key=lambda p: order.index(p.name) if p.name in order else len(order))
    own = {p.name for p in fields}

    def callback(**values: Any) -> None:
        if spec.prepare is not None:
            spec.prepare(values)
        request: Request = build_request(
            row.request, {k: v for k, v in values.items() if k in own},
            command=row.command or name, names=names)
        rest = {k: v for k, v in values.items() if k not in own}
        if spec.check is not None:
            spec.check(request, rest)
        result = family.run(row, request, rest)
        if rest.get("json_output") or spec.show is None:
            emit_json(family.json(row, result))
        else:
            spec.show(request, result)

    return TableCommand(row, spec, name, callback=callback,
                        params=[*fields, *spec.params, *family.params()], help=spec.help)


def table_commands(table: Sequence[Operation], specs: Mapping[type[Request], CommandSpec],
                   family: Family, *, under: str = "") -> dict[str, TableCommand]:
    """The command of each row of ``table`` whose command is one level ``under`` a group
    (``""``: the top level), by name; every such row needs its spec (a :class:`TypeError`
    at import otherwise)."""
    made = {}
    for row in table:
        path = (row.command or "").split()
        if not path or path[:-1] != under.split():
            continue
        spec = specs.get(row.request)
        if spec is None:
            raise TypeError(f"the row of {row.request.__name__} names the command "
                            f"{row.command!r} but remem.cli has no CommandSpec for it")
        made[path[-1]] = table_command(row, spec, family)
    return made


def add_table_commands(group: click.Group, table: Sequence[Operation],
                       specs: Mapping[type[Request], CommandSpec], family: Family) -> None:
    """Add to ``group`` the commands of ``table``'s rows under it (:func:`table_commands`)."""
    for command in table_commands(table, specs, family, under=group.name or "").values():
        group.add_command(command)
