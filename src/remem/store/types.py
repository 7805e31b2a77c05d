"""Values of the long-term store: items, namespaces and the operations a backend executes.

Operations are frozen values validated when they are built, so a backend never sees a bad
namespace, key or value: ``BaseStore.batch`` receives a list of them and returns one result per
operation, in order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from remem.errors import InvalidInputError, NamespaceError
from remem.retrieval.ranking import Ranking
from remem.store.values import (
    MAX_VALUE_DEPTH,
    NestingError,
    bounded_json,
    nesting_problem,
    validate_value,
    validated_value,
)

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
    "check_address",
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
#: UTF-8 bytes an item's address may take: its labels, one separator byte each, and its key.
#: Every backend refuses more, so none acknowledges what another cannot hold: PostgreSQL's
#: btree indexes on (namespace, key) take rows of at most ~2,700 bytes
MAX_ADDRESS_BYTES: Final = 2048
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


def check_address(namespace: Namespace, key: str) -> None:
    """Raise :class:`NamespaceError` when ``namespace`` and ``key`` together take more than
    :data:`MAX_ADDRESS_BYTES` in UTF-8 (checked on every put, after a scoped view has added
    its prefix, so every backend answers the same)."""
    chars = sum(map(len, namespace)) + len(namespace) + len(key)
    if chars * 4 <= MAX_ADDRESS_BYTES:  # no UTF-8 character takes more than 4 bytes
        return
    used = sum(len(label.encode()) + 1 for label in namespace) + len(key.encode())
    if used > MAX_ADDRESS_BYTES:
        raise NamespaceError(
            f"namespace and key together take {used} bytes in UTF-8 (each label plus one, and "
            f"the key); the limit is {MAX_ADDRESS_BYTES}: use shorter labels or a shorter key "
            "(e.g. a hash of a long one)")


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
    """How one ranking signal scored a result: its rank among the signal's candidates and
    its raw score there: ``"keyword"`` (BM25), ``"vector"`` (cosine) or ``"recency"`` (the
    recency factor in [0, 1], rank 1 = newest)."""

    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class SearchItem(Item):
    """An item returned by search, with its final score, its relevance and the score of each
    signal.

    ``score`` orders the results (fused, then re-ranked); it means little outside its page.
    ``relevance`` is how well the item matches the query on a fixed scale from 0 to 1, the
    same whatever the page or the other results, and ``relevance_by_signal`` each signal's
    part of it (``"keyword"``: the share of the query's term weight the item holds,
    ``"vector"``: the cosine clamped to [0, 1]; :mod:`remem.retrieval.relevance`).
    ``details`` has the rank and raw score (BM25, cosine, recency factor) of each signal that
    found the item among its candidates. All are ``None`` or empty when the search had no
    query (pure filter listing).
    """

    score: float | None = None
    details: Mapping[str, SignalScore] = field(default_factory=dict)
    relevance: float | None = None
    relevance_by_signal: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_item(cls, item: Item, score: float | None = None,
                  details: Mapping[str, SignalScore] | None = None, *,
                  relevance: float | None = None,
                  relevance_by_signal: Mapping[str, float] | None = None) -> SearchItem:
        """``item`` as a search result with its final score, per-signal details and
        relevance."""
        return cls(item.namespace, item.key, item.value, item.created_at, item.updated_at,
                   item.expires_at, item.event_at, score, dict(details or {}), relevance,
                   dict(relevance_by_signal or {}))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict including the score, its details and the relevance."""
        data = Item.to_dict(self)
        data["score"] = self.score
        data["details"] = {k: {"rank": v.rank, "score": v.score} for k, v in self.details.items()}
        data["relevance"] = self.relevance
        data["relevance_by_signal"] = dict(self.relevance_by_signal)
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
        value, text = validated_value(self.value)
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
