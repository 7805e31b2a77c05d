"""Click parameters read from the request models, so a request field is a CLI option with no
second declaration.

:func:`request_params` turns each field of a :class:`~remem.requests.Request` into an option
(``min_score`` -> ``--min-score``) or, for the fields :data:`CLI_NAMES` says, a positional
argument. The field's type picks the click type (bounded int -> ``IntRange``, ``Literal`` ->
``Choice``, bool -> a flag, ``--flag/--no-flag`` when it defaults to true, a namespace ->
:class:`NamespaceType`, JSON object -> :class:`JsonObjectType`, timestamp ->
:class:`TimestampType`), its default is the option's default and its description the help
(bounds of a million or more are sanity limits the request checks, left out of the help).
:data:`CLI_NAMES` is the one table of CLI spellings that differ from the field names
(``--user`` for ``user_id``, ``--all`` for ``include_invalid``...). A field of a type this
module does not know fails at import, so a new parameter cannot silently miss the CLI.

:func:`build_request` validates the parsed values into the request; a bad value is a usage
error (exit 2) naming the option.
"""

from __future__ import annotations

import inspect
import math
import re
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
import click
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from remem.cli.common import FilterType, JsonObjectType, NamespaceType, parse_json_object
from remem.errors import InvalidInputError
from remem.memory.requests import Messages
from remem.requests import JsonObject, NamespacePath, NamespacePrefix, Request, Timestamp

__all__ = [
    "CLI_NAMES",
    "CliName",
    "NameListType",
    "RequestCommand",
    "TextOrJsonType",
    "TextType",
    "TimestampType",
    "build_request",
    "field_param",
    "option_name",
    "request_command",
    "request_params",
]

R = TypeVar("R", bound=Request)

#: bounds at or beyond this are sanity limits (checked by the request), not worth a help line
_SANITY_BOUND = 1e6


if TYPE_CHECKING:
    _TextParam = click.ParamType[str, Any]
    _ContentParam = click.ParamType[str | dict[str, Any], Any]
    _TimeParam = click.ParamType[float, Any]
    AnyParamType = click.ParamType[Any, Any]
    _NamesParam = click.ParamType[list[str], Any]
else:
    _TextParam = _ContentParam = _TimeParam = AnyParamType = click.ParamType
    _NamesParam = click.ParamType


# -- click types the requests need ----------------------------------------------------------------


class TextType(_TextParam):
    """Text, ``-`` for stdin; blank text fails with ``empty`` (e.g. ``"nothing to remember"``)."""

    name = "text"

    def __init__(self, *, empty: str = "") -> None:
        self.empty = empty

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        """Read stdin for ``-``; refuse blank text when ``empty`` says why."""
        text = sys.stdin.read() if value == "-" else str(value)
        if self.empty and not text.strip():
            name = param.human_readable_name if param is not None else "text"
            self.fail(f"{self.empty}: {name} is empty", param, ctx)
        return text


class TextOrJsonType(_ContentParam):
    """A memory's content: text, or a JSON object when the text is one (``{...}``);
    ``-`` reads it from stdin."""

    name = "content"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str | dict[str, Any]:
        """Text as is, a JSON object parsed (a structured memory)."""
        if isinstance(value, dict):
            return value
        text = sys.stdin.read() if value == "-" else str(value)
        if not text.lstrip().startswith("{"):
            return text
        try:
            return parse_json_object(text)
        except InvalidInputError as exc:
            self.fail(f"starts with '{{' but is not a JSON object: {exc}", param, ctx)


class TimestampType(_TimeParam):
    """A point in time: ISO 8601 (``2026-01-31``, ``2026-01-31T09:00:00+02:00``; UTC unless it
    has an offset) or epoch seconds. Converts to epoch seconds."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        """Parse the text; say both accepted spellings when it is neither."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            pass
        else:
            if math.isfinite(seconds):
                return seconds
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{text!r} is not a time: write ISO 8601 (2026-01-31 or "
                      "2026-01-31T09:00:00+02:00) or epoch seconds", param, ctx)
        if moment.tzinfo is None:  # whose midnight? the CLI says UTC
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()


class NameListType(_NamesParam):
    """Names separated by commas (``profile,memories``), in the order given."""

    name = "names"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> list[str]:
        """Split on commas; an empty name (``a,,b``) fails naming the option."""
        if isinstance(value, list | tuple):
            return [str(v) for v in value]
        names = [part.strip() for part in str(value).split(",")]
        if not all(names):
            self.fail(f"{value!r} has an empty name: write names separated by commas, "
                      "e.g. profile,memories", param, ctx)
        return names


# -- the one table of CLI spellings ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CliName:
    """How a request field is written on the command line when not as ``--field-name``.

    ``option``: the option's names (one name for a bool gives a plain flag). ``argument``: a
    positional argument with this metavar instead of an option. ``required``/``default``:
    when they differ from the field's (``TEXT`` is optional: stdin; ``--text`` is not
    required where ``--file`` may give the text).
    ``type``: the click type, when the field's type alone does not say it. ``help``: the
    help, when the field's description is not what the command should say. ``default``
    applies to an option too (a command listing 20 where the request pages 100).
    """

    option: tuple[str, ...] = ()
    argument: str | None = None
    metavar: str | None = None
    required: bool | None = None
    default: Any = None
    type: AnyParamType | None = None
    help: str | None = None


CLI_NAMES: Mapping[str, CliName] = {
    "user_id": CliName(option=("--user",), metavar="ID"),
    "agent_id": CliName(option=("--agent",), metavar="ID"),
    "thread_id": CliName(option=("--thread",), metavar="ID"),
    "namespace": CliName(metavar="NS"),
    "include_invalid": CliName(option=("--all",)),
    "filters": CliName(option=("--filter",), metavar="JSON", type=FilterType()),
    "metadata": CliName(metavar="JSON"),
    # not --version: that is the program's version
    "version": CliName(option=("--if-version",), metavar="N"),
    "expected_version": CliName(metavar="N"),
    "messages": CliName(argument="TEXT", required=False, default="-",
                        type=TextType(empty="nothing to remember")),
    "query": CliName(argument="QUERY"),
    "content": CliName(argument="CONTENT"),
    "memory_id": CliName(argument="MEMORY_ID"),
    "event_id": CliName(argument="EVENT_ID"),
    "limit": CliName(metavar="N"),
    "offset": CliName(metavar="N"),
    "recency_half_life": CliName(metavar="SECONDS"),
    "mmr": CliName(metavar="LAMBDA"),
    "sections": CliName(metavar="NAMES", type=NameListType()),
}
"""Field name -> its CLI spelling, for every command built from a request."""

#: click types of the shared field types (matched by the type alias, not the field name)
_ALIAS_TYPES: tuple[tuple[Any, Callable[[], AnyParamType]], ...] = (
    (Messages, TextType),
    (NamespacePath, NamespaceType),
    (NamespacePrefix, lambda: NamespaceType(allow_empty=True)),
    (JsonObject, JsonObjectType),
    (Timestamp, TimestampType),
)


# -- reading a field's type -----------------------------------------------------------------------


def _union_args(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for a in get_args(annotation) if a is not type(None))
    return ()


def _is_alias(field: FieldInfo, alias: Any) -> bool:
    """Whether ``field`` is declared as ``alias`` (or ``alias | None``)."""
    args = _union_args(field.annotation)
    if len(args) == 1:
        return bool(args[0] == alias)
    probe = FieldInfo.from_annotation(alias)  # how pydantic flattens a bare alias
    return bool(probe.annotation == field.annotation and probe.metadata == field.metadata)


def _core(field: FieldInfo) -> tuple[Any, list[Any]]:
    """The field's type without ``None`` and ``Annotated``, and its constraints."""
    annotation, metadata = field.annotation, list(field.metadata)
    args = _union_args(annotation)
    if len(args) == 1:
        annotation = args[0]
    if get_origin(annotation) is Annotated:
        annotation, *extra = get_args(annotation)
        metadata += extra
    flat: list[Any] = []
    for item in metadata:
        flat += item.metadata if isinstance(item, FieldInfo) else [item]
    return annotation, flat


def _bound(metadata: Sequence[Any], kind: type[Any], attr: str) -> Any:
    for item in metadata:
        if isinstance(item, kind):
            value = getattr(item, attr)
            if abs(value) < _SANITY_BOUND:
                return value
    return None


def _click_type(name: str, field: FieldInfo,
                names: Mapping[str, CliName] = CLI_NAMES) -> AnyParamType | None:
    """The click type of a field (``None`` for a bool: a flag)."""
    spelled = names.get(name)
    if spelled is not None and spelled.type is not None:
        return spelled.type
    for alias, make in _ALIAS_TYPES:
        if _is_alias(field, alias):
            return make()
    args = _union_args(field.annotation)
    if len(args) > 1 and any(a == JsonObject for a in args):
        return TextOrJsonType()
    core, metadata = _core(field)
    if core is bool:
        return None
    if get_origin(core) is Literal:
        return click.Choice([str(choice) for choice in get_args(core)])
    if core is int or core is float:
        low = _bound(metadata, annotated_types.Ge, "ge")
        above = _bound(metadata, annotated_types.Gt, "gt")
        high = _bound(metadata, annotated_types.Le, "le")
        below = _bound(metadata, annotated_types.Lt, "lt")
        if low is None and above is None and high is None and below is None:
            return click.INT if core is int else click.FLOAT
        if core is int:
            return click.IntRange(low if above is None else above, high if below is None
                                  else below, min_open=above is not None,
                                  max_open=below is not None)
        return click.FloatRange(low if above is None else above, high if below is None
                                else below, min_open=above is not None,
                                max_open=below is not None)
    if core is str:
        return click.STRING
    raise TypeError(f"the CLI has no option type for field {name!r} ({field.annotation!r}); "
                    "add its type to remem.cli.options._ALIAS_TYPES or CLI_NAMES")


# -- parameters -----------------------------------------------------------------------------------


def option_name(name: str, names: Mapping[str, CliName] = CLI_NAMES) -> str:
    """The CLI spelling of field ``name`` (``--user``, ``QUERY``, ``--min-score``) in the
    spellings ``names`` (a command's own, over :data:`CLI_NAMES`)."""
    spelled = names.get(name, CliName())
    if spelled.argument:
        return spelled.argument
    return spelled.option[0] if spelled.option else "--" + name.replace("_", "-")


def _spell(text: str, fields: Sequence[str],
           names: Mapping[str, CliName] = CLI_NAMES) -> str:
    """``text`` with the ``fields`` named in it spelled as the CLI spells them."""
    if not fields:
        return text
    return re.sub(r"(?<![-\w])(" + "|".join(map(re.escape, fields)) + r")\b",
                  lambda m: option_name(m.group(1), names), text)


def _help(text: str | None, model: type[Request],
          names: Mapping[str, CliName] = CLI_NAMES) -> str:
    """A field description as CLI help: a sentence, other fields spelled as options
    (``user_id`` -> ``--user``, ``infer=false`` -> ``--no-infer``)."""
    if not text:
        return ""
    fields = model.model_fields
    flags = [n for n, f in fields.items() if _core(f)[0] is bool and not names.get(n)]
    if flags:
        text = re.sub(r"\b(" + "|".join(flags) + r")=(true|false)\b",
                      lambda m: ("--" if m.group(2) == "true" else "--no-")
                      + m.group(1).replace("_", "-"), text)
    text = _spell(text, [n for n in fields if "_" in n], names)  # one-word names read as words
    text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def field_param(model: type[Request], name: str,
                names: Mapping[str, CliName] = CLI_NAMES) -> click.Parameter:
    """The click option or argument of field ``name`` of ``model``, spelled as ``names``
    says (a command's own spellings over :data:`CLI_NAMES`)."""
    field = model.model_fields[name]
    spelled = names.get(name, CliName())
    kind = _click_type(name, field, names)
    # a required field has no default (pydantic's placeholder must not reach the help)
    default = None if field.is_required() else field.get_default(call_default_factory=True)
    if spelled.default is not None and not spelled.argument:
        default = spelled.default
    if spelled.argument:
        required = field.is_required() if spelled.required is None else spelled.required
        return click.Argument([name], type=kind, required=required,
                              default=spelled.default if spelled.default is not None
                              else (None if required else default),
                              metavar=spelled.argument if required
                              else f"[{spelled.argument}]")
    help_text = spelled.help or _help(field.description, model, names)
    decls = list(spelled.option) or ["--" + name.replace("_", "-")]
    if kind is None:  # a bool: a flag
        if default is None:  # unset means "decide for me": --flag/--no-flag, neither given
            decls = decls if "/" in decls[0] else [f"{decls[0]}/--no-{decls[0][2:]}"]
            return click.Option([*decls, name], default=None, help=help_text)
        if len(decls) == 1 and "/" not in decls[0] and not default:
            return click.Option([*decls, name], is_flag=True, default=False, help=help_text)
        if len(decls) == 1 and "/" not in decls[0]:
            decls = [f"{decls[0]}/--no-{decls[0][2:]}"]
        return click.Option([*decls, name], default=bool(default), show_default=True,
                            help=help_text)
    if isinstance(kind, TimestampType):  # the field says how Python and JSON spell it
        help_text = re.sub(r"\s*\([^()]*epoch[^()]*\)", "", help_text).rstrip(".")
        help_text += ": ISO 8601 (UTC unless it has an offset) or epoch seconds."
    metavar = spelled.metavar
    if metavar is None and isinstance(kind, click.IntRange | click.FloatRange):
        metavar = "INTEGER" if isinstance(kind, click.IntRange) else "FLOAT"
    shown = default not in (None, "", [], ())
    required = field.is_required() if spelled.required is None else spelled.required
    return click.Option([*decls, name], type=kind, required=required,
                        default=default if shown else None, show_default=shown,
                        metavar=metavar, help=help_text)


def request_params(model: type[Request], *, exclude: Sequence[str] = (),
                   names: Mapping[str, CliName] = CLI_NAMES) -> list[click.Parameter]:
    """The parameters of ``model``'s fields minus ``exclude``, spelled as ``names`` says:
    arguments first (in field order), then options."""
    fields = [name for name in model.model_fields if name not in exclude]
    params = [field_param(model, name, names) for name in fields]
    return ([p for p in params if isinstance(p, click.Argument)]
            + [p for p in params if not isinstance(p, click.Argument)])


def build_request(model: type[R], values: Mapping[str, Any], *, command: str = "",
                  names: Mapping[str, CliName] = CLI_NAMES) -> R:
    """Validate parsed CLI values into ``model``; a bad value is a click usage error naming
    the option (exit 2). ``None`` means not given: the request's default applies."""
    given = {name: value for name, value in values.items() if value is not None}
    try:
        return model(**given)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            loc = error["loc"]
            if loc:
                problems.append(f"{option_name(str(loc[0]), names)}: {error['msg']}")
                continue
            # a rule across fields: its message names them, and the operation
            message = error["msg"].removeprefix("Value error, ")
            if command and model.operation:
                message = re.sub(rf"\b{re.escape(model.operation)}\b", command, message)
            problems.append(_spell(message, list(model.model_fields), names))
        raise click.UsageError("; ".join(problems)) from None


class RequestCommand(click.Command):
    """A command built from a request by :func:`request_command`; ``model`` says which."""

    def __init__(self, model: type[Request], name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.model = model


def request_command(model: type[R], *, name: str, params: Sequence[click.Parameter] = (),
                    exclude: Sequence[str] = ()) -> Callable[[Callable[..., None]],
                                                             click.Command]:
    """A click command whose parameters are ``model``'s fields (minus ``exclude``) and
    ``params``. The decorated body gets the validated request as ``request`` and each of
    ``params`` by name; its docstring is the help."""
    fields = request_params(model, exclude=exclude)
    names = {param.name for param in fields}

    def decorate(body: Callable[..., None]) -> click.Command:
        def callback(**values: Any) -> None:
            request = build_request(model, {k: v for k, v in values.items() if k in names},
                                    command=name)
            body(request=request, **{k: v for k, v in values.items() if k not in names})

        return RequestCommand(model, name, callback=callback, params=[*fields, *params],
                              help=inspect.getdoc(body))

    return decorate
