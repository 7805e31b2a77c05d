"""LangGraph's store vocabulary as remem's, in pure code: namespaces and their labels, filters,
TTL configs (used by :mod:`remem.integrations.langgraph.store`).

* Labels follow LangGraph's rules (non-empty strings without ``.`` or NUL) and are refused with
  :class:`InvalidNamespaceError`. The labels LangGraph allows and remem cannot store (control
  characters, lone surrogates, a label ``"*"``) are stored escaped as ``.uXXXX``: LangGraph
  labels never hold a ``.``, so no label is stored as another's escape.
* Filters read as ``SqliteStore`` reads them: a dotted key is a path into nested objects, and
  the operands remem's filter language refuses (non-finite floats, integers past 64 bits,
  strings with NUL) become the conditions they amount to on stored JSON.
* TTL configs: LangGraph counts minutes and remem seconds; ``refresh_on_read`` defaults to
  ``False`` (``SqliteStore``'s default).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from remem.errors import (
    ConfigError,
    FilterError,
    InvalidInputError,
    NamespaceError,
    UnsupportedError,
)
from remem.store import TTLConfig as RememTTLConfig
from remem.store import types as remem
from remem.store.filters import parse_filter

try:
    from langgraph.store.base import NOT_PROVIDED, MatchCondition, TTLConfig
    from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ConfigError("remem.integrations.langgraph needs LangGraph: pip install "
                      "'remem[langgraph]'") from error

__all__ = ["InvalidNamespaceError", "checked_ttl", "decode_label", "decoded_namespace",
           "encode_label", "langgraph_ttl", "match_conditions", "matches_condition", "minutes",
           "namespace_labels", "put_ttl", "remem_ttl", "translate_filter"]

#: LangGraph's operators, then remem's own (an extension: LangGraph's stores refuse them)
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte",
                        "$in", "$nin", "$exists", "$contains"})


class InvalidNamespaceError(NamespaceError, LangGraphNamespaceError):
    """A namespace that LangGraph's rules or remem's refuse: remem's
    :class:`~remem.errors.NamespaceError` and LangGraph's ``InvalidNamespaceError`` at once,
    so code written for either catches it."""


# -- labels ------------------------------------------------------------------------------------

#: what remem refuses in a label (control characters, lone surrogates)
_UNSTORABLE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
_ESCAPE = re.compile(r"\.u([0-9a-f]{4})")
#: a label that is exactly "*" (remem's wildcard), escaped
_STAR = ".u002a"


def encode_label(label: str) -> str:
    """A LangGraph label as the label remem stores: each control character or lone surrogate
    becomes ``.uXXXX`` and a label ``"*"`` becomes ``.u002a``. LangGraph labels never hold a
    ``.``, so no LangGraph label is stored as another's escape."""
    if label == remem.WILDCARD:
        return _STAR
    return _UNSTORABLE.sub(lambda found: f".u{ord(found.group()):04x}", label)


def _unescape(found: re.Match[str]) -> str:
    char = chr(int(found.group(1), 16))
    return char if _UNSTORABLE.match(char) else found.group()


def decode_label(label: str) -> str:
    """The LangGraph label :func:`encode_label` stored as ``label`` (labels without an escape
    come back as they are)."""
    if "." not in label:
        return label
    if label == _STAR:
        return remem.WILDCARD
    return _ESCAPE.sub(_unescape, label)


def namespace_labels(namespace: Any, what: str, *, wildcards: bool = False) -> tuple[str, ...]:
    """``namespace`` checked by LangGraph's label rules, as the labels remem stores
    (``"*"`` stays the wildcard when ``wildcards``)."""
    if isinstance(namespace, str) or not isinstance(namespace, tuple | list):
        raise InvalidNamespaceError(f"{what} must be a tuple of strings, got {namespace!r}")
    out: list[str] = []
    for position, label in enumerate(namespace):
        rule = ("must be a string; convert it with str()" if not isinstance(label, str) else
                "is empty; labels must be non-empty strings" if not label else
                "contains '.', which LangGraph's stores refuse (they join labels with dots); "
                "split it into two labels" if "." in label else
                "contains NUL (U+0000), which LangGraph's stores refuse; remove it"
                if "\x00" in label else "")
        if rule:
            raise InvalidNamespaceError(f"{what} label {position} ({label!r}) in "
                                        f"{tuple(namespace)!r} {rule}")
        out.append(label if wildcards and label == remem.WILDCARD else encode_label(label))
    return tuple(out)


def decoded_namespace(namespace: Sequence[str]) -> tuple[str, ...]:
    """A stored namespace as LangGraph's labels (:func:`decode_label` of each)."""
    return tuple(decode_label(label) for label in namespace)


# -- filters -----------------------------------------------------------------------------------

_INT64 = (-(2**63), 2**63 - 1)
_NOTHING: tuple[str, Any] = ("$in", [])  # no value is in an empty list
_EVERYTHING: tuple[str, Any] = ("$nin", [])


def _number(value: int) -> float:
    """An integer past 64 bits as the float SQLite (and SqliteStore) compares it as."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _non_finite(op: str, value: float) -> tuple[str, Any]:
    """A comparison with ``nan`` or an infinity: stored numbers are finite, so it is true of
    every number, of none, or (``$ne``) of everything."""
    if op == "$ne":
        return _EVERYTHING
    if math.isnan(value):
        return _NOTHING
    every_number = ("$lte", 1.7976931348623157e308) if value > 0 else \
        ("$gte", -1.7976931348623157e308)
    below = op in ("$lt", "$lte")
    above = op in ("$gt", "$gte")
    if (value > 0 and below) or (value < 0 and above):
        return every_number
    return _NOTHING


def _with_nul(op: str, value: str) -> tuple[str, Any]:
    """A comparison with a string holding NUL: stored strings are read up to their first
    NUL (SQLite's JSON functions and PostgreSQL's jsonb cut them there), so none equals it,
    and it orders right after its part before the NUL."""
    head = value.split("\x00", 1)[0]
    if op == "$ne":
        return _EVERYTHING
    if op in ("$gt", "$gte"):
        return "$gt", head
    if op in ("$lt", "$lte"):
        return "$lte", head
    return _NOTHING


def _never_equal(value: Any) -> bool:
    return (isinstance(value, float) and not math.isfinite(value)) or \
        (isinstance(value, str) and "\x00" in value)


def _operand(op: str, value: Any) -> tuple[str, Any]:
    """One condition as remem's, for operands remem's filter language refuses and
    ``SqliteStore`` answers (it compares numbers as floats)."""
    if isinstance(value, bool) or value is None:
        return op, value
    if op in ("$in", "$nin") and isinstance(value, list | tuple):
        numbers = [_number(v) if isinstance(v, int) and not isinstance(v, bool)
                   and not _INT64[0] <= v <= _INT64[1] else v for v in value]
        return op, [v for v in numbers if not _never_equal(v)]  # they match nothing
    if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        value = _number(value)
    if isinstance(value, float) and not math.isfinite(value):
        return _non_finite(op, value) if op != "$contains" else _NOTHING
    if isinstance(value, str) and "\x00" in value:
        return _with_nul(op, value) if op != "$contains" else _NOTHING
    return op, value


class _Conditions:
    """remem conditions by path; a second condition with the same operator on a path goes
    into ``$and`` (a dict holds one)."""

    def __init__(self) -> None:
        self.paths: dict[str, dict[str, Any]] = {}
        self.more: list[dict[str, Any]] = []

    def add(self, path: str, op: str, value: Any) -> None:
        op, value = _operand(op, value)
        conditions = self.paths.setdefault(path, {})
        if op in conditions:
            self.more.append({path: {op: value}})
        else:
            conditions[op] = value

    def filter(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.paths)
        if self.more:
            out["$and"] = self.more
        return out


def _filter_of(path: str, value: Any, out: _Conditions) -> None:
    if isinstance(value, Mapping):
        operators = [key for key in value if isinstance(key, str) and key.startswith("$")]
        if operators:
            unknown = sorted(set(operators) - _OPERATORS)
            if unknown or len(operators) != len(value):
                raise FilterError(
                    f"filter {path!r}: the operators are $eq, $ne, $gt, $gte, $lt, $lte "
                    f"(and remem's $in, $nin, $exists, $contains), not mixed with fields; "
                    f"got {sorted(value)}")
            for op, operand in value.items():
                out.add(path, op, operand)
            return
        if not value:
            out.add(path, "$exists", True)  # an empty object matches any object
            return
        for key, inner in value.items():
            _filter_of(f"{path}.{_nested_key(key)}", inner, out)
        return
    if isinstance(value, list | tuple):
        raise UnsupportedError(
            f"filter {path!r}: remem does not match a whole list; match its elements with "
            f"{{'{path}': {{'$contains': element}}}} (one condition per element)")
    out.add(path, "$eq", value)


def _nested_key(key: Any) -> str:
    if not isinstance(key, str) or not key or "." in key:
        raise FilterError(f"filter field {key!r} inside a nested object: remem reads dots as "
                          "paths; write the whole dotted path as a top-level key instead")
    return key


def _filter_key(key: Any) -> str:
    """A top-level filter key: a field, or a dotted path into nested objects (as
    ``SqliteStore`` reads it)."""
    problem = ("keys are non-empty strings" if not isinstance(key, str) or not key else
               "a key starting with '$' would be read as an operator" if key.startswith("$")
               else "")
    if not problem:
        try:
            parse_filter({key: {"$exists": True}})
        except FilterError as error:
            problem = str(error)
    if problem:
        raise FilterError(f"Invalid filter key {key!r}: {problem}")
    return str(key)


def translate_filter(filter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """LangGraph's filter as remem's filter language: equality on fields (a dotted key is a
    path), nested objects matched as a part (dotted paths), ``$eq``... operators kept,
    operands remem refuses rewritten to what they amount to (see :func:`_operand`). A whole
    list as the value is refused (:class:`~remem.errors.UnsupportedError`, naming
    ``$contains``)."""
    if not filter:
        return None
    out = _Conditions()
    for key, value in filter.items():
        _filter_of(_filter_key(key), value, out)
    return out.filter()


def put_ttl(ttl: Any) -> Any:
    """A put's LangGraph ``ttl`` (minutes, ``None``, or not given) as remem's (seconds)."""
    if ttl is NOT_PROVIDED:
        return remem.NOT_PROVIDED
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise InvalidInputError(f"ttl must be a positive number of minutes or None, got {ttl!r}")
    return float(ttl) * 60  # LangGraph counts minutes, remem seconds


def minutes(value: Any, name: str) -> float | None:
    """The TTL setting ``name``: a positive number of minutes, or ``None``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InvalidInputError(f"ttl[{name!r}] must be a positive number of minutes or None, "
                                f"got {value!r}")
    return float(value)


def checked_ttl(ttl: Any) -> TTLConfig:
    """LangGraph's TTL config, checked, with ``refresh_on_read`` always present (``False``
    when left out: ``SqliteStore``'s default)."""
    if not isinstance(ttl, Mapping):
        raise InvalidInputError(f"ttl must be LangGraph's TTL config (a dict), got {ttl!r}")
    unknown = sorted(set(ttl) - {"default_ttl", "refresh_on_read", "sweep_interval_minutes",
                                 "omit_expired"})
    if unknown:
        raise InvalidInputError(f"ttl has unknown settings {unknown}; LangGraph's are "
                                "default_ttl, refresh_on_read, sweep_interval_minutes")
    refresh = ttl.get("refresh_on_read", False)
    if not isinstance(refresh, bool):
        raise InvalidInputError(f"ttl['refresh_on_read'] must be true or false, got {refresh!r}")
    out = TTLConfig(**ttl)  # type: ignore[typeddict-item]
    out["refresh_on_read"] = refresh
    minutes(ttl.get("default_ttl"), "default_ttl")
    minutes(ttl.get("sweep_interval_minutes"), "sweep_interval_minutes")
    return out


def remem_ttl(ttl: TTLConfig | None) -> RememTTLConfig:
    """LangGraph's TTL config as remem's (seconds; no background sweep: ``RememStore``'s
    :meth:`~RememStore.start_ttl_sweeper` does that)."""
    config = checked_ttl(ttl or {})
    default = minutes(config.get("default_ttl"), "default_ttl")
    return RememTTLConfig(default_ttl=default * 60 if default is not None else None,
                          refresh_on_read=bool(config.get("refresh_on_read")))


def langgraph_ttl(config: RememTTLConfig) -> TTLConfig:
    """A remem store's TTL config as LangGraph's (minutes)."""
    out = TTLConfig(refresh_on_read=config.refresh_on_read)
    if config.default_ttl is not None:
        out["default_ttl"] = float(config.default_ttl) / 60
    if config.sweep_interval is not None:
        out["sweep_interval_minutes"] = config.sweep_interval / 60  # type: ignore[typeddict-item]
    return out


def match_conditions(conditions: Sequence[MatchCondition] | None
                     ) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None,
                                list[MatchCondition]]:
    """A listing's conditions as remem's one prefix and one suffix (stored labels, ``"*"``
    the wildcard), and the conditions left over (checked by :func:`matches_condition`)."""
    prefix = suffix = None
    rest: list[MatchCondition] = []
    for condition in conditions or ():
        if condition.match_type not in ("prefix", "suffix"):
            raise InvalidInputError(f"match_type must be 'prefix' or 'suffix', got "
                                    f"{condition.match_type!r}")
        path = namespace_labels(condition.path, f"{condition.match_type} path", wildcards=True)
        if not path:
            continue  # an empty path constrains nothing
        if condition.match_type == "prefix" and prefix is None:
            prefix = path
        elif condition.match_type == "suffix" and suffix is None:
            suffix = path
        else:
            rest.append(condition)
    return prefix, suffix, rest


def matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` (LangGraph's labels) meets a prefix or suffix condition."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else \
        namespace[len(namespace) - len(path):]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True))
