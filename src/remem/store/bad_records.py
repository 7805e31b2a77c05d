"""Records that do not parse: skipped by readers, refused by writers, counted, reported.

Every family (memories and their bookkeeping, files, blocks, approvals, skills, prompts,
episodes, the graph, the thread search index) turns what it stored back into its record
values with one parser per record kind. Those parsers run through this module, so a record
that does not parse (an older version's shape, a manual edit, a partial restore, a bug) is
handled the same way everywhere:

* :func:`parse_items` (listings, searches): the bad record is left out, its neighbours come
  back; :func:`parse_or_none` (a lookup that may be absent) reads it as absent;
  :func:`parse_or_raise` (a lookup or a read-modify-write of that very record) raises
  :class:`~remem.errors.BadRecordError` naming the record and the fix;
* each skip is logged once per record and process (logger ``remem.records``, a warning
  naming the family, namespace, key and reason) and counted per family
  (:func:`skipped_counts`; the server exports it as ``remem_bad_records_skipped_total``);
* :func:`check_record` runs the same parser on a record about to be written and refuses it
  with :class:`~remem.errors.RecordFormatError`, so nothing a family writes reads back bad.

``remem doctor`` (:mod:`remem.cli.doctor`) runs the same parsers over a whole database.
This module imports no metrics library: the server subscribes with :func:`add_listener`.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from remem.errors import BadRecordError, RecordFormatError
from remem.store.types import Item, Namespace

__all__ = [
    "FAMILIES",
    "READ_ERRORS",
    "BadRecord",
    "add_listener",
    "check_record",
    "int_field",
    "kind_of",
    "object_field",
    "optional_text",
    "parse_each",
    "parse_items",
    "parse_or_none",
    "parse_or_raise",
    "reason_of",
    "report",
    "skipped_counts",
    "text_field",
    "text_list",
    "time_field",
    "try_parse",
]

logger = logging.getLogger("remem.records")

#: the record families, as metric labels and ``remem doctor`` names them
FAMILIES: Final = (
    "memories", "memory_history", "memory_ids", "memory_heads", "files", "file_history",
    "blocks", "block_agents", "approvals", "skills", "prompts", "episodes", "graph",
    "thread_index",
)

#: what a parser raises on a value of the wrong shape (pydantic's ValidationError, JSON
#: decoding errors and remem's InvalidInputError are ValueErrors; a missing field is a
#: KeyError, a wrong type a TypeError or AttributeError, a huge number an OverflowError)
READ_ERRORS: Final = (ValueError, TypeError, LookupError, AttributeError, ArithmeticError)

#: the epoch seconds a date can be made of (years 1 to 9999, UTC)
_FIRST_TIME: Final = -62_135_596_800.0
_LAST_TIME: Final = 253_402_300_799.0

#: records already logged (logged once per process; later skips are counted only)
_LOGGED_LIMIT: Final = 10_000
_REASON_CHARS: Final = 300

S = TypeVar("S")
R = TypeVar("R")
I = TypeVar("I", bound=Item)  # noqa: E741 (the item type, as the store's generics name it)


@dataclass(frozen=True, slots=True)
class BadRecord:
    """One record that does not parse: its family, where it is, and why."""

    family: str
    namespace: Namespace
    key: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``remem doctor --json``)."""
        return {"family": self.family, "namespace": list(self.namespace), "key": self.key,
                "reason": self.reason}


_lock = threading.Lock()
_counts: Counter[str] = Counter()
_logged: set[tuple[str, Namespace, str]] = set()
_listeners: list[Callable[[], Callable[[BadRecord], None] | None]] = []


def reason_of(exc: BaseException) -> str:
    """A parser's failure as one short line: the exception's kind and message."""
    text = " ".join(str(exc).split()) or "no detail"
    if len(text) > _REASON_CHARS:
        text = text[:_REASON_CHARS - 3] + "..."
    return f"{type(exc).__name__}: {text}"


def add_listener(listener: Callable[[BadRecord], None]) -> None:
    """Call ``listener`` with every skipped record of this process (the server counts them
    in its metrics). A bound method is held weakly: it goes when its object does."""
    ref: Callable[[], Callable[[BadRecord], None] | None]
    if hasattr(listener, "__self__") and hasattr(listener, "__func__"):
        ref = weakref.WeakMethod(listener)
    else:
        ref = lambda: listener  # noqa: E731
    with _lock:
        _listeners.append(ref)


def report(bad: BadRecord) -> None:
    """Count a skipped record, log it (once per record and process) and tell the
    listeners."""
    where = (bad.family, bad.namespace, bad.key)
    with _lock:
        _counts[bad.family] += 1
        first = where not in _logged
        if first and len(_logged) < _LOGGED_LIMIT:
            _logged.add(where)
        listeners = [ref() for ref in _listeners]
        _listeners[:] = [ref for ref, fn in zip(_listeners, listeners, strict=True)
                         if fn is not None]
    if first:
        logger.warning("skipped a %s record that does not parse: namespace %r, key %r: %s "
                       "(remem doctor lists and repairs such records)", bad.family,
                       list(bad.namespace), bad.key, bad.reason)
    for listener in listeners:
        if listener is not None:
            listener(bad)


def skipped_counts() -> dict[str, int]:
    """How many times each family skipped a record in this process (every family named,
    ``0`` when none)."""
    with _lock:
        return {family: _counts.get(family, 0) for family in
                (*FAMILIES, *sorted(set(_counts) - set(FAMILIES)))}


def try_parse(parser: Callable[[S], R], source: S, *, family: str, namespace: Sequence[str],
              key: str) -> R | BadRecord:
    """``parser(source)``, or the :class:`BadRecord` saying why it failed (not reported:
    for ``remem doctor``, which reports records itself)."""
    try:
        return parser(source)
    except READ_ERRORS as exc:
        return BadRecord(family, tuple(namespace), key, reason_of(exc))


def parse_each(sources: Iterable[S], parser: Callable[[S], R], *, family: str,
               where: Callable[[S], tuple[Sequence[str], str]]) -> list[R]:
    """The records of ``sources`` (rows, file reads...), in order; those that do not parse
    are left out and reported at ``where(source)`` (a namespace and a key)."""
    out: list[R] = []
    for source in sources:
        try:
            out.append(parser(source))
        except READ_ERRORS as exc:
            namespace, key = where(source)
            report(BadRecord(family, tuple(namespace), key, reason_of(exc)))
    return out


def _item_where(item: Item) -> tuple[Namespace, str]:
    return item.namespace, item.key


def parse_items(items: Iterable[I], parser: Callable[[I], R], *, family: str) -> list[R]:
    """The records of ``items`` (store items, in order); those that do not parse are left
    out and reported."""
    return parse_each(items, parser, family=family, where=_item_where)


def parse_or_none(parser: Callable[[S], R], source: S, *, family: str,
                  namespace: Sequence[str], key: str) -> R | None:
    """``parser(source)``, or ``None`` (reported) when it does not parse: the record reads
    as absent."""
    parsed = try_parse(parser, source, family=family, namespace=namespace, key=key)
    if isinstance(parsed, BadRecord):
        report(parsed)
        return None
    return parsed


def parse_or_raise(parser: Callable[[S], R], source: S, *, family: str,
                   namespace: Sequence[str], key: str, what: str) -> R:
    """``parser(source)``; when it does not parse, :class:`~remem.errors.BadRecordError`
    naming ``what`` (``"memory 'mem_1'"``), the reason and the fix (reported too)."""
    parsed = try_parse(parser, source, family=family, namespace=namespace, key=key)
    if isinstance(parsed, BadRecord):
        report(parsed)
        raise BadRecordError(
            f"{what} is stored but cannot be read ({parsed.reason}); it is left out of "
            f"every listing. Run 'remem doctor --repair' to move it aside (namespace "
            f"{list(parsed.namespace)!r}, key {parsed.key!r}), then write it again")
    return parsed


def check_record(parser: Callable[[S], R], value: S, *, family: str,
                 namespace: Sequence[str], key: str) -> R:
    """Run ``parser`` on a record about to be written: its result, or
    :class:`~remem.errors.RecordFormatError` (nothing is written) naming the family, the
    record and why it would not read back."""
    parsed = try_parse(parser, value, family=family, namespace=namespace, key=key)
    if isinstance(parsed, BadRecord):
        raise RecordFormatError(
            f"refusing to write a {family} record that would not read back (namespace "
            f"{list(parsed.namespace)!r}, key {parsed.key!r}): {parsed.reason}; fix the "
            "value (see docs/doctor.md for each family's record format)")
    return parsed


# -- field readers the families' parsers share (each names the field and what it got) ---------


def kind_of(value: Any) -> str:
    """A wrong value as a parse error names it: its JSON kind and a short preview."""
    if value is None:
        kind = "null"
    elif isinstance(value, bool):
        kind = "a boolean"
    elif isinstance(value, int | float):
        kind = "a number"
    elif isinstance(value, str):
        kind = "text"
    elif isinstance(value, list | tuple):
        kind = "an array"
    elif isinstance(value, dict):
        kind = "an object"
    else:
        kind = type(value).__name__
    return f"{kind} ({value!r:.60})"


def text_field(value: Any, name: str) -> str:
    """``value`` if it is text, else ``TypeError`` naming field ``name``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be text, got {kind_of(value)}")
    return value


def optional_text(value: Any, name: str) -> str | None:
    """Text or ``None``."""
    return None if value is None else text_field(value, name)


def time_field(value: Any, name: str) -> float | None:
    """An optional time in epoch seconds: a finite number a date can be made of."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds since the epoch, got "
                        f"{kind_of(value)}")
    if not _FIRST_TIME <= value <= _LAST_TIME:  # NaN compares false too
        raise ValueError(f"{name} = {value!r} is not a time a date can be made of")
    return float(value)


def int_field(value: Any, name: str, *, minimum: int | None = None) -> int:
    """An integer (an integral float too: some JSON writers make ``2.0`` of ``2``), at least
    ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not value.is_integer()):
        raise TypeError(f"{name} must be an integer, got {kind_of(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def object_field(value: Any, name: str) -> dict[str, Any]:
    """A JSON object (``None``: an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a JSON object, got {kind_of(value)}")
    return value


def text_list(value: Any, name: str) -> tuple[str, ...]:
    """A list of texts (``None``: empty)."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{name} must be a list of texts, got {kind_of(value)}")
    return tuple(value)
