"""Values of the long-term store: items, namespaces and the operations a backend executes.

Operations are frozen values validated when they are built, so a backend never sees a bad
namespace, key or value: ``BaseStore.batch`` receives a list of them and returns one result per
operation, in order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from remem.errors import InvalidInputError, InvalidValueError, NamespaceError
from remem.retrieval.ranking import Ranking

if TYPE_CHECKING:  # filters imports this module
    from remem.store.filters import FilterNode

__all__ = [
    "MAX_TIMESTAMP",
    "MAX_TTL",
    "MAX_VALUE_DEPTH",
    "MIN_TIMESTAMP",
    "NOT_PROVIDED",
    "OP_TYPES",
    "CountOp",
    "DeleteOp",
    "GetOp",
    "Item",
    "ListNamespacesOp",
    "Namespace",
    "NestingError",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchMode",
    "SearchOp",
    "SignalScore",
    "bounded_json",
    "from_timestamp",
    "nesting_problem",
    "to_timestamp",
    "validate_key",
    "validate_namespace",
    "validate_value",
]

Namespace: TypeAlias = tuple[str, ...]
SearchMode: TypeAlias = Literal["auto", "hybrid", "keyword", "vector"]
SEARCH_MODES: Final = ("auto", "hybrid", "keyword", "vector")

MAX_LABEL_LENGTH: Final = 256
MAX_KEY_LENGTH: Final = 1024
MAX_DEPTH: Final = 64
#: deepest nesting of objects and arrays in a value (the value itself is level 1): deeper
#: values are refused when the op is built, so nothing is stored that cannot be read back
MAX_VALUE_DEPTH: Final = 64
#: longest TTL in seconds (about 317 years): an expiry must stay within year 9999
MAX_TTL: Final = 10**10
#: epoch seconds of 0001-01-01 and of the last second of 9999, the range of a datetime
MIN_TIMESTAMP: Final = -62_135_596_800
MAX_TIMESTAMP: Final = 253_402_300_799
WILDCARD: Final = "*"


class NotProvided(Enum):
    """Sentinel type: the caller did not pass a value (distinct from ``None``)."""

    NOT_PROVIDED = "NOT_PROVIDED"


NOT_PROVIDED: Final = NotProvided.NOT_PROVIDED


_FORBIDDEN = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def _bad_char(text: str) -> str | None:
    """``repr`` of the first control character or lone surrogate in ``text``, if any."""
    if text.isascii() and text.isprintable():  # printable ASCII: no control character
        return None
    found = _FORBIDDEN.search(text)
    return repr(found.group()) if found else None


def validate_namespace(namespace: Any, *, what: str = "namespace", allow_empty: bool = False,
                       allow_wildcard: bool = False) -> Namespace:
    """Return ``namespace`` as a tuple of labels, or raise :class:`NamespaceError`.

    Rules: a tuple or list of strings; each label non-empty, at most 256 characters, without
    control characters or lone surrogates (they cannot be stored or typed reliably). Labels may
    contain dots and slashes: remem never splits a stored namespace. ``"*"`` is a wildcard only
    in ``list_namespaces`` match conditions.
    """
    if isinstance(namespace, str):
        raise NamespaceError(
            f"{what} must be a tuple of strings, got the string {namespace!r}; "
            f"write ({namespace!r},) for a single label"
        )
    if not isinstance(namespace, tuple | list):
        raise NamespaceError(
            f"{what} must be a tuple of strings, got {type(namespace).__name__}"
        )
    labels = tuple(namespace)
    if not labels and not allow_empty:
        raise NamespaceError(f"{what} must have at least one label, got ()")
    if len(labels) > MAX_DEPTH:
        raise NamespaceError(f"{what} has {len(labels)} labels; the limit is {MAX_DEPTH}")
    for position, label in enumerate(labels):
        if not isinstance(label, str):
            raise NamespaceError(
                f"{what} label {position} must be a string, got {type(label).__name__} "
                f"{label!r}; convert it with str()"
            )
        if not label:
            raise NamespaceError(f"{what} label {position} is empty; labels must be non-empty")
        if len(label) > MAX_LABEL_LENGTH:
            raise NamespaceError(
                f"{what} label {position} has {len(label)} characters; "
                f"the limit is {MAX_LABEL_LENGTH}"
            )
        bad = _bad_char(label)
        if bad is not None:
            raise NamespaceError(
                f"{what} label {position} ({label!r}) contains the character {bad}; "
                "control characters and lone surrogates are not allowed in labels"
            )
        if label == WILDCARD and not allow_wildcard:
            raise NamespaceError(
                f"{what} label {position} is '*', which is reserved as the wildcard "
                "of list_namespaces match conditions"
            )
    return labels


#: namespaces already validated for items, to the labels they were validated as: an item's
#: namespace is checked label by label once, then looked up (most writes reuse a few)
_ITEM_NAMESPACES: dict[tuple[Any, ...], Namespace] = {}
_ITEM_NAMESPACES_MAX: Final = 10_000


def _valid_item_namespace(namespace: Any) -> Namespace:
    """:func:`validate_namespace` with its defaults, remembering the namespaces it passed."""
    if type(namespace) is tuple:
        try:
            known = _ITEM_NAMESPACES.get(namespace)
        except TypeError:  # an unhashable label: validate_namespace names it
            known = None
        if known is not None:
            return known
    labels = validate_namespace(namespace)
    if all(type(label) is str for label in labels):  # never a str subclass's look-alike
        if len(_ITEM_NAMESPACES) >= _ITEM_NAMESPACES_MAX:
            _ITEM_NAMESPACES.clear()
        _ITEM_NAMESPACES[labels] = labels
    return labels


def validate_key(key: Any) -> str:
    """Return ``key`` or raise :class:`NamespaceError` naming the rule it breaks."""
    if not isinstance(key, str):
        raise NamespaceError(f"key must be a string, got {type(key).__name__} {key!r}")
    if not key:
        raise NamespaceError("key is empty; keys must be non-empty strings")
    if len(key) > MAX_KEY_LENGTH:
        raise NamespaceError(f"key has {len(key)} characters; the limit is {MAX_KEY_LENGTH}")
    bad = _bad_char(key)
    if bad is not None:
        raise NamespaceError(
            f"key {key!r} contains the character {bad}; control characters and lone "
            "surrogates are not allowed in keys"
        )
    return key


#: a path while walking a value: (parent path, key or index), ``None`` at the root
_Path: TypeAlias = "tuple[_Path, str | int] | None"


def _render_path(root: str, path: _Path) -> str:
    """``root.a.b[0]``, the middle cut out past eight steps so messages stay readable."""
    steps: list[str | int] = []
    while path is not None:
        path, step = path
        steps.append(step)
    steps.reverse()
    shown = [f"[{s}]" if isinstance(s, int) else f".{str(s)[:40]}" for s in steps]
    if len(shown) > 8:
        shown = [*shown[:4], f"(...{len(shown) - 6} more...)", *shown[-2:]]
    return root + "".join(shown)


def nesting_problem(value: Any, root: str, limit: int = MAX_VALUE_DEPTH) -> str | None:
    """Why ``value`` nests objects and arrays deeper than ``limit`` levels (``value`` itself
    is level 1), naming the path to the first container past the limit; ``None`` if it fits.

    The walk is iterative, so a value nested thousands of levels (or one that contains
    itself) is refused instead of overflowing Python's recursion limit.
    """
    stack: list[tuple[Any, int, _Path]] = [(value, 1, None)]
    while stack:
        node, depth, path = stack.pop()
        children: Any
        if isinstance(node, Mapping):
            children = node.items()
        elif isinstance(node, list | tuple):
            children = enumerate(node)
        else:
            continue
        if depth > limit:
            return (f"{_render_path(root, path)}: nested deeper than {limit} levels of "
                    "objects and arrays; flatten it, or store the deep part as a JSON string")
        for step, child in children:
            if isinstance(child, Mapping | list | tuple):
                stack.append((child, depth + 1, (path, step if isinstance(step, int)
                                                  else str(step))))
    return None


def validate_value(value: Any) -> dict[str, Any]:
    """Return a JSON-clean deep copy of ``value`` or raise :class:`InvalidValueError`.

    See :func:`_validated_value` for the rules.
    """
    return _validated_value(value)[0]


class NestingError(ValueError):
    """A JSON value nests deeper than its limit (raised by :func:`bounded_json`)."""


def bounded_json(value: Any, root: str, limit: int) -> str:
    """``value`` as compact JSON text, valid UTF-8, nesting at most ``limit`` levels.

    Raises :class:`NestingError` naming the path past the limit (see :func:`nesting_problem`),
    else what ``json.dumps`` or UTF-8 encoding raise (``TypeError``, ``ValueError``,
    ``UnicodeEncodeError``).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (RecursionError, ValueError) as exc:
        # past ~1,000 levels the encoder overflows the stack, and a value that contains itself
        # is a ValueError: the iterative walk names where either passes the limit
        problem = nesting_problem(value, root, limit)
        if problem is not None:
            raise NestingError(problem) from None
        if isinstance(exc, RecursionError):
            raise NestingError(f"{root} is nested too deeply to encode") from None
        raise
    # each level opens a bracket: with no more brackets than levels allowed (the usual case,
    # checked in C) the value cannot be too deep, and the walk is skipped
    if text.count("{") + text.count("[") > limit:
        problem = nesting_problem(value, root, limit)
        if problem is not None:
            raise NestingError(problem)
    text.encode("utf-8")
    return text


def _validated_value(value: Any) -> tuple[dict[str, Any], str]:
    """A JSON-clean deep copy of ``value`` and its compact JSON text.

    A value is a JSON object: a dict with string keys whose leaves are ``None``, ``bool``,
    ``int`` (signed 64-bit), finite ``float`` or ``str`` (no lone surrogates), nesting at most
    :data:`MAX_VALUE_DEPTH` levels; ``int``, ``float`` and ``bool`` keys become strings as in
    JSON. The copy decouples the stored value from the caller's object, so mutating it later
    changes nothing in the store. One walk checks and copies (see :func:`_copy_dict`); the
    text is then encoded from the copy, which needs no further checks.
    """
    if not isinstance(value, Mapping):
        raise InvalidValueError(
            f"value must be a JSON object (a dict), got {type(value).__name__}; "
            'wrap it, e.g. {"content": value}'
        )
    try:
        copy = _copy_dict(value, 1)
        text = _encode(copy)
        if _SURROGATE.search(text) is not None:
            _find_surrogate(copy)
    except _BadNode as exc:
        raise InvalidValueError(exc.render()) from None
    return copy, text


#: compact JSON text of a copied value. No circular check: it only ever encodes the fresh tree
#: made by :func:`_copy_dict`. ``json.dumps`` builds an encoder per call (about 1 µs, a sixth
#: of a put's validation), so the C encoder is built once when the interpreter has it
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, check_circular=False,
                                   separators=(",", ":"))
_C_ENCODER: Final[Any] = getattr(json.encoder, "c_make_encoder", None)


def _make_encode() -> Callable[[dict[str, Any]], str]:
    def encode(value: dict[str, Any]) -> str:
        return "".join(chunks(value, 0))

    sample = {"a": [1, -0.5, "é\n", None, True, {}]}
    try:  # the C encoder is internal to json: use it only if it still answers as expected
        chunks = _C_ENCODER(None, _ENCODER.default, json.encoder.encode_basestring, None, ":",
                            ",", False, False, True)
        if encode(sample) == _ENCODER.encode(sample):
            return encode
    except TypeError:
        pass
    return _ENCODER.encode


_encode: Final = _make_encode()
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_NOT_JSON_HINT: Final = ("use only dict, list, str, int, float, bool and None (finite numbers, "
                         "valid Unicode)")


class _BadNode(Exception):
    """A node that breaks a value rule. Raised where it is found without a path; each
    enclosing container adds its step while the exception passes through it, so the path is
    only built when a value is refused."""

    def __init__(self, kind: str, detail: str = "") -> None:
        self.kind = kind  # "deep", "int", "json", or "key" (a bad key, until its object is known)
        self.detail = detail
        self.steps: list[str | int] = []  # innermost first

    def render(self) -> str:
        steps = self.steps[::-1]
        if self.kind == "deep":
            path = _render_path("value", _as_path(steps))
            return (f"{path}: nested deeper than {MAX_VALUE_DEPTH} levels of objects and "
                    "arrays; flatten it, or store the deep part as a JSON string")
        full = "value" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)
        if self.kind == "int":
            return (f"{full} = {self.detail} does not fit in a signed 64-bit integer; store it "
                    "as a string")
        return f"value is not JSON-serialisable: {full} {self.detail}; {_NOT_JSON_HINT}"


def _as_path(steps: list[str | int]) -> _Path:
    path: _Path = None
    for step in steps:
        path = (path, step)
    return path


def _copy_dict(node: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    """A checked copy of a JSON object at nesting level ``depth``.

    The common types are tested by exact type first (one ``is`` per leaf); subclasses, other
    types and bad keys take :func:`_copy_other` / :func:`_json_key`. Recursion is bounded by
    the depth check, which also stops a value that contains itself.
    """
    if depth > MAX_VALUE_DEPTH:
        raise _BadNode("deep")
    if type(node) is not dict and not isinstance(node, dict):
        # json accepts dict and its subclasses only; other mappings at the top level too
        raise _BadNode("json", f"is a {type(node).__name__}, not a dict")
    out: dict[str, Any] = {}
    key: Any = None
    try:
        for key, child in node.items():
            if type(key) is not str:
                key = _json_key(key)
            kind = type(child)
            if kind is str:
                pass
            elif kind is int:
                if not _INT64_MIN <= child <= _INT64_MAX:
                    raise _BadNode("int", str(child))
            elif kind is dict:
                child = _copy_dict(child, depth + 1)
            elif kind is list:
                child = _copy_list(child, depth + 1)
            elif kind is float:
                if child - child != 0.0:  # inf - inf and nan - nan are nan
                    raise _BadNode("json", f"= {child!r} is not a finite number")
            elif child is not None and kind is not bool:
                child = _copy_other(child, depth + 1)
            out[key] = child
    except _BadNode as exc:
        if exc.kind == "key":  # a bad key is reported at the object that holds it
            exc.kind = "json"
        else:
            exc.steps.append(key)
        raise
    return out


def _copy_list(node: Sequence[Any], depth: int) -> list[Any]:
    """A checked copy of a JSON array (a list or tuple) at nesting level ``depth``."""
    if depth > MAX_VALUE_DEPTH:
        raise _BadNode("deep")
    out: list[Any] = []
    try:
        for child in node:
            kind = type(child)
            if kind is str:
                pass
            elif kind is int:
                if not _INT64_MIN <= child <= _INT64_MAX:
                    raise _BadNode("int", str(child))
            elif kind is dict:
                child = _copy_dict(child, depth + 1)
            elif kind is list:
                child = _copy_list(child, depth + 1)
            elif kind is float:
                if child - child != 0.0:
                    raise _BadNode("json", f"= {child!r} is not a finite number")
            elif child is not None and kind is not bool:
                child = _copy_other(child, depth + 1)
            out.append(child)
    except _BadNode as exc:
        exc.steps.append(len(out))  # the index of the child being copied
        raise
    return out


def _copy_other(node: Any, depth: int) -> Any:
    """Subclasses of the JSON types, copied as ``json`` encodes them (a ``str`` enum as its
    text, an ``IntEnum`` as its number, a tuple as an array); anything else is refused."""
    if isinstance(node, str):
        return str.__str__(node)
    if isinstance(node, int):  # bool has no subclasses: this is an int subclass
        number = int(int.__repr__(node))
        if not _INT64_MIN <= number <= _INT64_MAX:
            raise _BadNode("int", str(number))
        return number
    if isinstance(node, float):
        real = float(float.__repr__(node))
        if not math.isfinite(real):
            raise _BadNode("json", f"= {real!r} is not a finite number")
        return real
    if isinstance(node, dict):
        return _copy_dict(node, depth)
    if isinstance(node, list | tuple):
        return _copy_list(node, depth)
    raise _BadNode("json", f"is a {type(node).__name__}")


def _json_key(key: Any) -> str:
    """A non-string object key as JSON writes it (``True`` -> ``"true"``, ``1`` -> ``"1"``)."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, bool):
        return "null" if key is None else "true" if key else "false"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        if not math.isfinite(key):
            raise _BadNode("key", f"has the key {key!r}, which is not a finite number")
        return float.__repr__(key)
    raise _BadNode("key", f"has a key of type {type(key).__name__}; keys must be strings")


def _find_surrogate(node: Any) -> None:
    """Raise naming where a lone surrogate sits in a copied value (rare: after a fast scan of
    the text found one)."""
    if isinstance(node, str):
        found = _SURROGATE.search(node)
        if found is not None:
            raise _BadNode("json", f"contains the lone surrogate {found.group()!r}, which is "
                                   "not valid Unicode")
        return
    if isinstance(node, dict):
        for key in node:
            if _SURROGATE.search(key) is not None:
                raise _BadNode("json", f"has the key {key!r}, which contains a lone surrogate "
                                       "(not valid Unicode)")
    children = node.items() if isinstance(node, dict) else enumerate(node)
    for step, child in children:
        try:
            _find_surrogate(child)
        except _BadNode as exc:
            exc.steps.append(step)
            raise


def _ttl_seconds(ttl: float | timedelta | NotProvided | None) -> float | NotProvided | None:
    if ttl is None or ttl is NOT_PROVIDED:
        return ttl
    if isinstance(ttl, timedelta):
        ttl = ttl.total_seconds()
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise InvalidInputError(
            f"ttl must be seconds (a number) or a timedelta, got {type(ttl).__name__}"
        )
    if not ttl > 0:  # NaN too (it compares false)
        raise InvalidInputError(f"ttl must be a positive number of seconds, got {ttl!r}")
    if ttl > MAX_TTL:  # infinity and ints too large for a float too
        raise InvalidInputError(
            f"ttl must be at most {MAX_TTL:.0e} seconds (about 317 years, so the expiry stays "
            f"within year 9999), got {_short(ttl)}; pass ttl=None for an item that never "
            "expires"
        )
    return float(ttl)


def _short(number: float) -> str:
    text = repr(number)
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} digits)"


def to_timestamp(value: datetime | float | None, name: str) -> float | None:
    """An aware datetime or epoch seconds as epoch seconds (``None`` stays ``None``), within
    years 1-9999 (what a datetime can hold, so it can be read back)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidInputError(
                f"{name} must be timezone-aware: pass datetime(..., tzinfo=UTC) or epoch seconds"
            )
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and math.isnan(value)):
        raise InvalidInputError(
            f"{name} must be an aware datetime or epoch seconds, got {value!r}"
        )
    if not MIN_TIMESTAMP <= value <= MAX_TIMESTAMP:  # infinities and huge ints too
        raise InvalidInputError(
            f"{name} must be epoch seconds within years 1-9999 ({MIN_TIMESTAMP} to "
            f"{MAX_TIMESTAMP}), got {_short(value)}"
        )
    return float(value)


def _as_float(value: datetime | float | None) -> float | None:
    return value.timestamp() if isinstance(value, datetime) else value


def from_timestamp(ts: float) -> datetime:
    """Seconds since the epoch to an aware UTC datetime."""
    return datetime.fromtimestamp(ts, tz=UTC)


@dataclass(frozen=True, slots=True)
class Item:
    """A stored JSON document.

    ``expires_at`` is ``None`` for items without a TTL. ``event_at`` is when what the item
    records happened (a conversation turn's date, say), distinct from when it was stored;
    ``None`` when it was not given. Timestamps are aware UTC datetimes.
    """

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    event_at: datetime | None = None

    @property
    def effective_time(self) -> datetime:
        """``event_at`` if set, else ``created_at``: what time ranges and recency use."""
        return self.event_at if self.event_at is not None else self.created_at

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (ISO 8601 timestamps)."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "event_at": self.event_at.isoformat() if self.event_at else None,
        }


@dataclass(frozen=True, slots=True)
class SignalScore:
    """How one ranking signal scored a result: ``"keyword"`` (BM25), ``"vector"`` (cosine) or
    ``"recency"`` (the recency factor in [0, 1], rank 1 = newest)."""

    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class SearchItem(Item):
    """An item returned by search, with its final score and the score of each signal.

    ``score`` is ``None`` when the search had no query (pure filter listing).
    """

    score: float | None = None
    details: Mapping[str, SignalScore] = field(default_factory=dict)

    @classmethod
    def from_item(cls, item: Item, score: float | None = None,
                  details: Mapping[str, SignalScore] | None = None) -> SearchItem:
        """``item`` as a search result with its final score and per-signal details."""
        return cls(item.namespace, item.key, item.value, item.created_at, item.updated_at,
                   item.expires_at, item.event_at, score, dict(details or {}))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict including the score and its details."""
        data = Item.to_dict(self)
        data["score"] = self.score
        data["details"] = {k: {"rank": v.rank, "score": v.score} for k, v in self.details.items()}
        return data


@dataclass(frozen=True, slots=True)
class GetOp:
    """Read one item. ``refresh_ttl`` overrides the store's refresh-on-read setting."""

    namespace: Namespace
    key: str
    refresh_ttl: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "namespace", validate_namespace(self.namespace))
        validate_key(self.key)


@dataclass(frozen=True, slots=True)
class PutOp:
    """Insert or replace one item.

    ``ttl``: seconds (or a timedelta) until the item expires; ``None`` for never; left out, the
    store's default. ``index``: ``None`` embeds the fields of the store's index config, ``False``
    embeds nothing for this item, a list of dotted paths embeds those fields instead.
    ``event_at`` (an aware datetime or epoch seconds): when what the item records happened;
    searches filter and weigh recency by it (``created_at`` stands in when it is ``None``).
    ``created_at`` / ``updated_at`` / ``expires_at`` (epoch seconds) are for imports only: they
    keep an exported item's timestamps. ``if_updated_at`` makes the put conditional: it is
    skipped unless a live item exists whose ``updated_at`` is this time (to the microsecond,
    the resolution of :class:`Item` timestamps), so a writer that read an item never overwrites
    a newer version or brings back a deleted one.
    """

    namespace: Namespace
    key: str
    value: Mapping[str, Any]
    ttl: float | timedelta | NotProvided | None = NOT_PROVIDED
    index: Literal[False] | Sequence[str] | None = None
    event_at: datetime | float | None = None
    created_at: float | None = None
    updated_at: float | None = None
    expires_at: float | None = None
    if_updated_at: float | None = None
    #: the value as compact JSON text (computed once; SQL backends store it as is)
    value_json: str = field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        # one of the hottest paths of a bulk load: fields left at their default (most of
        # them, usually) are not rewritten
        setattr_ = object.__setattr__
        setattr_(self, "namespace", _valid_item_namespace(self.namespace))
        validate_key(self.key)
        value, text = _validated_value(self.value)
        setattr_(self, "value", value)
        setattr_(self, "value_json", text)
        if self.ttl is not NOT_PROVIDED:
            setattr_(self, "ttl", _ttl_seconds(self.ttl))
        for name in _PUT_TIMES:
            given = getattr(self, name)
            if given is not None:
                setattr_(self, name, to_timestamp(given, name))
        if self.index is not None and self.index is not False:
            if (isinstance(self.index, str) or not isinstance(self.index, Sequence)
                    or not all(isinstance(f, str) and f for f in self.index)):
                raise InvalidInputError(
                    "index must be None, False or a list of dotted field paths, "
                    f"got {self.index!r}"
                )
            object.__setattr__(self, "index", tuple(self.index))

    @property
    def event_ts(self) -> float | None:
        """``event_at`` as epoch seconds (it is normalised to them when the op is built)."""
        return _as_float(self.event_at)


@dataclass(frozen=True, slots=True)
class DeleteOp:
    """Delete one item (deleting a missing item is not an error)."""

    namespace: Namespace
    key: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "namespace", validate_namespace(self.namespace))
        validate_key(self.key)


@dataclass(frozen=True, slots=True)
class SearchOp:
    """Search items under a namespace prefix.

    With a ``query``, results come best first with scores. ``mode`` picks the signals:
    ``"keyword"`` (BM25), ``"vector"`` (cosine; needs a vector index), ``"hybrid"`` (both,
    fused) or ``"auto"`` (hybrid when the store has a vector index, else keyword).
    ``ranking`` tunes fusion, recency, MMR and a minimum score (:class:`~remem.retrieval.Ranking`).
    Without a query: newest ``updated_at`` first, ties broken by namespace then key.
    ``filter`` (the language of :mod:`remem.store.filters`) and the event-time range
    ``event_after <= t < event_before`` (``t`` = ``event_at``, else ``created_at``) are
    applied inside the candidate queries.
    """

    namespace_prefix: Namespace
    filter: Mapping[str, Any] | None = None
    query: str | None = None
    limit: int = 10
    offset: int = 0
    refresh_ttl: bool | None = None
    mode: SearchMode = "auto"
    ranking: Ranking | None = None
    event_after: datetime | float | None = None
    event_before: datetime | float | None = None
    #: ``filter`` parsed (set by ``__post_init__``; not an argument)
    parsed_filter: FilterNode | None = field(default=None, init=False, compare=False,
                                             repr=False)

    def __post_init__(self) -> None:
        from remem.store.filters import parse_filter

        object.__setattr__(
            self,
            "namespace_prefix",
            validate_namespace(self.namespace_prefix, what="namespace_prefix", allow_empty=True),
        )
        _check_count("limit", self.limit, minimum=1)
        _check_count("offset", self.offset, minimum=0)
        if self.query is not None and not isinstance(self.query, str):
            raise InvalidInputError(f"query must be a string, got {type(self.query).__name__}")
        if self.mode not in SEARCH_MODES:
            raise InvalidInputError(
                f"mode must be one of {', '.join(SEARCH_MODES)}, got {self.mode!r}"
            )
        if self.ranking is not None and not isinstance(self.ranking, Ranking):
            raise InvalidInputError(
                f"ranking must be a remem.retrieval.Ranking, got {type(self.ranking).__name__}"
            )
        for name in ("event_after", "event_before"):
            object.__setattr__(self, name, to_timestamp(getattr(self, name), name))
        # parsed once here (a FilterError surfaces before any I/O); backends compile this
        object.__setattr__(self, "parsed_filter", parse_filter(self.filter))

    @property
    def event_range(self) -> tuple[float | None, float | None]:
        """``(event_after, event_before)`` as epoch seconds (``None``: unbounded)."""
        return _as_float(self.event_after), _as_float(self.event_before)


@dataclass(frozen=True, slots=True)
class ListNamespacesOp:
    """List distinct namespaces, optionally matching a prefix and/or suffix (``"*"`` matches
    any one label) and truncated to ``max_depth`` labels, sorted, deduplicated."""

    prefix: Namespace | None = None
    suffix: Namespace | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0

    def __post_init__(self) -> None:
        for name in ("prefix", "suffix"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(
                    self, name, validate_namespace(value, what=name, allow_wildcard=True)
                )
        if self.max_depth is not None:
            _check_count("max_depth", self.max_depth, minimum=1)
        _check_count("limit", self.limit, minimum=1)
        _check_count("offset", self.offset, minimum=0)


@dataclass(frozen=True, slots=True)
class CountOp:
    """Count the live items a :class:`SearchOp` without a query would list: under
    ``namespace_prefix``, matching ``filter`` and the event-time range. The result is an
    ``int``, exact (not an estimate); the cost grows with the items under the prefix, and with
    a filter each of them is checked against it."""

    namespace_prefix: Namespace = ()
    filter: Mapping[str, Any] | None = None
    event_after: datetime | float | None = None
    event_before: datetime | float | None = None
    #: ``filter`` parsed (set by ``__post_init__``; not an argument)
    parsed_filter: FilterNode | None = field(default=None, init=False, compare=False,
                                             repr=False)

    def __post_init__(self) -> None:
        from remem.store.filters import parse_filter

        object.__setattr__(self, "namespace_prefix", validate_namespace(
            self.namespace_prefix, what="namespace_prefix", allow_empty=True))
        for name in ("event_after", "event_before"):
            object.__setattr__(self, name, to_timestamp(getattr(self, name), name))
        object.__setattr__(self, "parsed_filter", parse_filter(self.filter))

    @property
    def event_range(self) -> tuple[float | None, float | None]:
        """``(event_after, event_before)`` as epoch seconds (``None``: unbounded)."""
        return _as_float(self.event_after), _as_float(self.event_before)


def _check_count(name: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError(f"{name} must be an integer >= {minimum}, got {value!r}")


_PUT_TIMES: Final = ("event_at", "created_at", "updated_at", "expires_at", "if_updated_at")

Op: TypeAlias = GetOp | PutOp | DeleteOp | SearchOp | ListNamespacesOp | CountOp
#: every operation type, in the order error messages name them
OP_TYPES: Final = (GetOp, PutOp, DeleteOp, SearchOp, ListNamespacesOp, CountOp)
Result: TypeAlias = Item | list[SearchItem] | list[Namespace] | int | None
