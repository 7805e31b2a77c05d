"""Metadata filters: parse a Mongo-style filter dict, evaluate it in Python or compile it to SQL
(SQLite or PostgreSQL).

A filter is a dict whose keys are dotted field paths (``"user.name"``) or the logical operators
``$and``, ``$or`` and ``$not``; several keys are ANDed. A field maps to a scalar (shorthand for
``$eq``) or to a dict of operators: ``$eq $ne $gt $gte $lt $lte $in $nin $exists $contains``.
:func:`parse_filter` turns the dict into a small backend-neutral AST (:data:`FilterNode`);
:func:`to_predicate` and :func:`to_sqlite` turn the AST into a Python callable and a SQL
expression that select exactly the same documents.

Semantics (both backends): the JSON kind of the stored value decides. Kinds are null, bool,
number, string, array and object; a bool is never a number and a string never a number, so
``True != 1`` and ``"1" != 1``. ``$eq`` needs the same kind and an equal value (``1 == 1.0``);
``$ne`` is exactly ``NOT $eq`` and so matches missing fields. Ordering operators need a number
or string of the operand's kind; strings order by code point. ``$in`` is any-``$eq``, ``$nin`` is
``NOT $in``. ``$exists`` is true for a present ``null``. ``$contains`` tests the top-level
elements of an array with ``$eq``, or substring of a string. Paths only walk objects: a segment
never indexes an array.

Choices made so SQLite (3.40, JSON1 on text) and Python agree:

* SQLite's JSON functions cut a string at its first NUL (U+0000). Stored strings are therefore
  compared as if truncated at their first NUL in Python too, and filter strings may not contain
  NUL at all.
* SQLite matches a path label against the *raw* text of a key, escapes included. The column must
  hold JSON as written by ``json.dumps(value, ensure_ascii=False)`` (keys not ``\\u``-escaped),
  and path segments may not contain ``"``, ``\\`` or control characters, which that writer
  escapes.
* SQLite reads an integer outside the signed 64-bit range as a float (``inf`` past the float
  range); the Python predicate converts such stored integers the same way. Filter integers must
  fit in 64 bits and filter floats must be finite.
* Logical nesting is capped at :data:`MAX_DEPTH` levels: SQLite's parser stack is small. A
  filter holds at most :data:`MAX_CONDITIONS` conditions and :data:`MAX_OPERANDS` operand
  values, so its SQL stays within SQLite's expression depth (1,000) and PostgreSQL's 65,535
  parameters; a larger one is refused before any SQL is built.

PostgreSQL (``to_postgres`` in :mod:`remem.store.filters_postgres`) filters a ``jsonb``
*shadow* of each value written by ``postgres_document``, which applies the same choices up
front so jsonb agrees with the Python predicate: strings cut at their first NUL (jsonb cannot
hold U+0000 anyway), integers beyond 64 bits as floats, every float written as its exact
decimal expansion (jsonb numbers are ``numeric``, so comparisons are exact like Python's
int/float comparisons; a shortest-repr float would compare as a different number), and keys
that no path can name dropped. Paths walk
objects only (``->`` with a text label never indexes an array) and strings compare with
``COLLATE "C"`` (UTF-8 byte order is code point order).
"""

from __future__ import annotations

import enum
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, assert_never

from remem.errors import FilterError, UsageError

__all__ = [
    "MAX_CONDITIONS",
    "MAX_DEPTH",
    "MAX_OPERANDS",
    "MISSING",
    "And",
    "Compare",
    "CompareOp",
    "Contains",
    "Exists",
    "Filter",
    "FilterNode",
    "In",
    "Not",
    "Or",
    "Scalar",
    "json_kind",
    "parse_filter",
    "resolve_path",
    "to_predicate",
    "to_sqlite",
]

Filter: TypeAlias = Mapping[str, Any]
"""What callers pass: a dict of field paths and operators."""

Scalar: TypeAlias = bool | int | float | str | None
"""A filter operand: the JSON scalars."""

CompareOp: TypeAlias = Literal["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]

MAX_DEPTH: Final = 32
"""Deepest allowed nesting of ``$and``/``$or``/``$not`` (and implicit ANDs) in a filter."""

MAX_CONDITIONS: Final = 200
"""Most conditions in a filter: every field condition (``{"a": 1}``, each operator of
``{"a": {"$gt": 1, "$lt": 5}}``) and every ``$and``/``$or``/``$not``, including the implicit
AND of a dict with several keys. SQLite's expression depth (1,000) grows with each one."""

MAX_OPERANDS: Final = 20_000
"""Most operand values in a filter (an ``$in`` list counts each of its values): each is a
SQL parameter, and PostgreSQL takes at most 65,535 per statement."""

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


class _Missing(enum.Enum):
    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING
"""Returned by :func:`resolve_path` when the path does not resolve (distinct from ``None``)."""


# --------------------------------------------------------------------------- AST


@dataclass(frozen=True, slots=True)
class Compare:
    """``path op operand``: ``$eq``/``$ne`` take any scalar, ordering ops a number or string."""

    path: tuple[str, ...]
    op: CompareOp
    operand: Scalar


@dataclass(frozen=True, slots=True)
class In:
    """The value ``$eq``-matches one of ``operands`` (``negate``: ``$nin``, i.e. NOT ``$in``)."""

    path: tuple[str, ...]
    operands: tuple[Scalar, ...]
    negate: bool = False


@dataclass(frozen=True, slots=True)
class Exists:
    """The path resolves (``exists=True``, a present null counts) or does not."""

    path: tuple[str, ...]
    exists: bool = True


@dataclass(frozen=True, slots=True)
class Contains:
    """An array with a top-level element ``$eq`` to ``operand``, or a string containing it."""

    path: tuple[str, ...]
    operand: Scalar


@dataclass(frozen=True, slots=True)
class And:
    """All children match; no children matches everything."""

    children: tuple[FilterNode, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Some child matches; no children matches nothing."""

    children: tuple[FilterNode, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """Exact negation of ``child`` (so it matches documents where the child's field is missing)."""

    child: FilterNode


FilterNode: TypeAlias = Compare | In | Exists | Contains | And | Or | Not
"""A parsed filter; compile it with :func:`to_predicate` or :func:`to_sqlite`."""


# --------------------------------------------------------------------------- parsing

_LOGICAL_OPS: Final = ("$and", "$or", "$not")
_ORDER_OPS: Final = ("$gt", "$gte", "$lt", "$lte")
_TOO_DEEP: Final = f"filter nests $and/$or/$not (or multi-key dicts) deeper than {MAX_DEPTH} levels"
_COMPARE_OPS: Final[dict[str, CompareOp]] = {
    "$eq": "$eq", "$ne": "$ne", "$gt": "$gt", "$gte": "$gte", "$lt": "$lt", "$lte": "$lte",
}  # fmt: skip
_FIELD_OPS: Final = (*_COMPARE_OPS, "$in", "$nin", "$exists", "$contains")


def _show(x: object) -> str:
    """``type repr`` of a bad value, shortened so messages stay readable."""
    text = repr(x)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(x).__name__} {text}"


def _op_error(op: str, dotted: str, rule: str, bad: object, hint: str = "") -> FilterError:
    msg = f"filter operator {op!r} at path {dotted!r}: {rule}, got {_show(bad)}"
    return FilterError(msg + (f"; {hint}" if hint else ""))


def _parse_path(dotted: str) -> tuple[str, ...]:
    segments = tuple(dotted.split("."))
    for seg in segments:
        problem = ""
        if not seg:
            problem = "segments must be non-empty (no leading, trailing or double dots)"
        elif seg.startswith("$"):
            problem = f"segment {seg!r} starts with '$'; operators go in a dict under the field"
        elif '"' in seg or "\\" in seg or any(ord(ch) < 0x20 for ch in seg):
            problem = f"segment {seg!r} contains a double quote, backslash or control character"
        elif not _is_utf8(seg):
            problem = f"segment {seg!r} is not valid Unicode (lone surrogate)"
        if problem:
            raise FilterError(f"filter path {dotted!r}: {problem}")
    return segments


def _is_utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _scalar(op: str, dotted: str, x: object, *, ordered: bool = False) -> Scalar:
    """Validate one operand and normalise subclasses (e.g. enum members) to plain types."""
    if ordered:
        rule = "operand must be a number or a string"
    else:
        rule = "operand must be a JSON scalar (None, bool, int, float or str)"
    if ordered and (x is None or isinstance(x, bool)):
        hint = "match null with $eq or $exists" if x is None else "compare booleans with $eq"
        raise _op_error(op, dotted, rule, x, hint)
    if x is None or isinstance(x, bool):
        return x
    if isinstance(x, int):
        if not _INT64_MIN <= x <= _INT64_MAX:
            raise _op_error(op, dotted, "integers must fit in signed 64 bits", x)
        return int(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise _op_error(op, dotted, "floats must be finite", x)
        return float(x)
    if isinstance(x, str):
        if not _is_utf8(x):
            raise _op_error(op, dotted, "strings must be valid Unicode (no lone surrogates)", x)
        if "\x00" in x:
            raise _op_error(op, dotted, "strings must not contain NUL (U+0000)", x)
        return str.__str__(x)  # plain str even for a StrEnum member (str() gives its name)
    raise _op_error(op, dotted, rule, x)


def _parse_operator(op: str, operand: object, path: tuple[str, ...], dotted: str) -> FilterNode:
    compare_op = _COMPARE_OPS.get(op)
    if compare_op is not None:
        ordered = compare_op in _ORDER_OPS
        return Compare(path, compare_op, _scalar(op, dotted, operand, ordered=ordered))
    if op in ("$in", "$nin"):
        if not isinstance(operand, list | tuple):
            raise _op_error(op, dotted, "operand must be a list of scalars", operand)
        items = tuple(_scalar(op, dotted, item) for item in operand)
        return In(path, items, negate=op == "$nin")
    if op == "$exists":
        if not isinstance(operand, bool):
            raise _op_error(op, dotted, "operand must be true or false", operand)
        return Exists(path, bool(operand))
    if op == "$contains":
        return Contains(path, _scalar(op, dotted, operand))
    hint = ""
    if op in _LOGICAL_OPS:
        hint = f"; {op} belongs at the top level, e.g. {{{op!r}: ...}} wrapping field filters"
    raise FilterError(
        f"unknown filter operator {op!r} at path {dotted!r}; known operators: "
        f"{', '.join(_FIELD_OPS)}{hint}"
    )


def _parse_field(dotted: str, spec: object) -> FilterNode:
    path = _parse_path(dotted)
    if isinstance(spec, Mapping):
        keys = list(spec)
        for key in keys:
            if not isinstance(key, str):
                raise FilterError(
                    f"filter at path {dotted!r}: keys must be strings, got {_show(key)}"
                )
        ops = [k for k in keys if k.startswith("$")]
        plain = [k for k in keys if not k.startswith("$")]
        if ops and plain:
            raise FilterError(
                f"filter at path {dotted!r}: dict mixes operators ({ops[0]!r}) and plain keys "
                f"({plain[0]!r}); to match a nested field use a dotted path like "
                f"'{dotted}.{plain[0]}'"
            )
        if not ops:
            example = f"'{dotted}.{plain[0]}'" if plain else f"'{dotted}.<key>'"
            raise FilterError(
                f"filter at path {dotted!r}: equality with an object is not supported; "
                f"to match a nested field use a dotted path like {example}"
            )
        nodes = [_parse_operator(op, spec[op], path, dotted) for op in ops]
        return nodes[0] if len(nodes) == 1 else And(tuple(nodes))
    if isinstance(spec, list | tuple):
        raise FilterError(
            f"filter at path {dotted!r}: equality with an array is not supported; use "
            f"{{'{dotted}': {{'$in': [...]}}}} to match any of several values or "
            f"{{'{dotted}': {{'$contains': value}}}} to test whether an array holds a value"
        )
    return Compare(path, "$eq", _scalar("$eq", dotted, spec))


def _parse_logical(op: str, operand: object, depth: int) -> FilterNode:
    if op == "$not":
        if not isinstance(operand, Mapping):
            raise _op_error(op, "<top level>", "operand must be a filter dict", operand)
        return Not(_parse(operand, depth + 1))
    if not isinstance(operand, list | tuple):
        raise _op_error(op, "<top level>", "operand must be a list of filter dicts", operand)
    children: list[FilterNode] = []
    for i, child in enumerate(operand):
        if not isinstance(child, Mapping):
            raise _op_error(op, "<top level>", f"element {i} must be a filter dict", child)
        children.append(_parse(child, depth + 1))
    return And(tuple(children)) if op == "$and" else Or(tuple(children))


def _parse(filter: object, depth: int) -> FilterNode:
    if depth > MAX_DEPTH:  # early exit so absurd nesting never hits Python's recursion limit
        raise FilterError(_TOO_DEEP)
    if not isinstance(filter, Mapping):
        raise FilterError(f"filter must be a dict, got {_show(filter)}")
    nodes: list[FilterNode] = []
    for key, spec in filter.items():
        if not isinstance(key, str):
            raise FilterError(f"filter keys must be strings, got {_show(key)}")
        if key in _LOGICAL_OPS:
            nodes.append(_parse_logical(key, spec, depth))
        elif key.startswith("$"):
            raise FilterError(
                f"unknown logical operator {key!r} at the top level of a filter; known: "
                f"{', '.join(_LOGICAL_OPS)}; field operators go under a field, e.g. "
                f"{{'field': {{{key!r}: value}}}}"
            )
        else:
            nodes.append(_parse_field(key, spec))
    return nodes[0] if len(nodes) == 1 else And(tuple(nodes))


def parse_filter(filter: Filter | None) -> FilterNode | None:
    """Parse and validate ``filter``; ``None`` or ``{}`` gives ``None`` (match everything).

    Raises :class:`~remem.errors.FilterError` naming the operator, the path and the broken rule.
    """
    if filter is None:
        return None
    if isinstance(filter, Mapping) and not filter:
        return None
    node = _parse(filter, 0)
    _check_depth(node)
    _check_size(node)
    return node


def _check_size(node: FilterNode) -> None:
    """Refuse a filter with more conditions or operands than its SQL can hold."""
    conditions = operands = 0
    stack = [node]
    while stack:
        current = stack.pop()
        conditions += 1
        match current:
            case And(children) | Or(children):
                stack.extend(children)
            case Not(child):
                stack.append(child)
            case In(_, values):
                operands += len(values)
            case Compare() | Contains():
                operands += 1
            case Exists():
                pass
            case _:
                assert_never(current)
    if conditions > MAX_CONDITIONS:
        raise FilterError(
            f"filter has {conditions} conditions (field conditions and $and/$or/$not, "
            f"counting the implicit $and of a dict with several keys); the limit is "
            f"{MAX_CONDITIONS}: match many values of one field with $in instead"
        )
    if operands > MAX_OPERANDS:
        raise FilterError(
            f"filter has {operands} operand values (each value of an $in/$nin list counts); "
            f"the limit is {MAX_OPERANDS}: split the query into several searches"
        )


# --------------------------------------------------------------------------- Python evaluation


def resolve_path(value: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """Walk ``path`` through nested objects; :data:`MISSING` if a step is absent or no object."""
    current: Any = value
    for seg in path:
        if not isinstance(current, Mapping) or seg not in current:
            return MISSING
        current = current[seg]
    return current


def json_kind(x: Any) -> str:
    """The JSON kind of a Python value: null, bool, number, string, array or object."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int | float):
        return "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, Mapping):
        return "object"
    if isinstance(x, list | tuple):
        return "array"
    raise TypeError(f"not a JSON value: {_show(x)}")


def _as_sqlite(x: Any) -> Any:
    """Mirror what SQLite's JSON functions return for a stored scalar (see module docstring)."""
    if isinstance(x, str):
        nul = x.find("\x00")
        return x if nul < 0 else x[:nul]
    if isinstance(x, int) and not isinstance(x, bool) and not _INT64_MIN <= x <= _INT64_MAX:
        try:
            return float(x)
        except OverflowError:
            return math.inf if x > 0 else -math.inf
    return x


def _eq(x: Any, v: Scalar) -> bool:
    """``$eq`` on one present value: same kind and equal."""
    if x is MISSING or json_kind(x) != json_kind(v):
        return False
    return bool(_as_sqlite(x) == v)


_ORDER: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le,
}  # fmt: skip

Predicate: TypeAlias = Callable[[Mapping[str, Any]], bool]


def _compile_py(node: FilterNode) -> Predicate:
    match node:
        case Compare(path, op, v):
            if op in ("$eq", "$ne"):
                want = op == "$eq"
                return lambda doc: _eq(resolve_path(doc, path), v) is want
            cmp = _ORDER[op]
            kind = json_kind(v)

            def ordered(doc: Mapping[str, Any]) -> bool:
                x = resolve_path(doc, path)
                return x is not MISSING and json_kind(x) == kind and bool(cmp(_as_sqlite(x), v))

            return ordered
        case In(path, operands, negate):

            def in_(doc: Mapping[str, Any]) -> bool:
                x = resolve_path(doc, path)
                return any(_eq(x, v) for v in operands) != negate

            return in_
        case Exists(path, exists):
            return lambda doc: (resolve_path(doc, path) is not MISSING) == exists
        case Contains(path, v):

            def contains(doc: Mapping[str, Any]) -> bool:
                x = resolve_path(doc, path)
                if isinstance(x, list | tuple):
                    return any(_eq(el, v) for el in x)
                return isinstance(x, str) and isinstance(v, str) and v in _as_sqlite(x)

            return contains
        case And(children):
            preds = [_compile_py(c) for c in children]
            return lambda doc: all(p(doc) for p in preds)
        case Or(children):
            preds = [_compile_py(c) for c in children]
            return lambda doc: any(p(doc) for p in preds)
        case Not(child):
            pred = _compile_py(child)
            return lambda doc: not pred(doc)
        case _:
            assert_never(node)


def to_predicate(node: FilterNode | None) -> Callable[[Mapping[str, Any]], bool]:
    """A callable telling whether an item's value dict matches ``node`` (``None``: always)."""
    if node is None:
        return lambda doc: True
    return _compile_py(node)


# --------------------------------------------------------------------------- SQLite compilation

_COLUMN_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}")

_SQL_OPS: Final[dict[str, str]] = {
    "$eq": "=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<=",
}  # fmt: skip

SQL: TypeAlias = tuple[str, list[Any]]


def _json_path(path: tuple[str, ...]) -> str:
    # Segments never contain '"' (checked at parse time), so quoting each label is enough.
    return "$" + "".join(f'."{seg}"' for seg in path)


def _scalar_sql_type(v: Scalar) -> tuple[str, ...]:
    """json_type() values a stored scalar of ``v``'s kind can have."""
    if v is None:
        return ("null",)
    if isinstance(v, bool):
        return ("true",) if v else ("false",)
    return ("text",) if isinstance(v, str) else ("integer", "real")


class _SqliteCompiler:
    def __init__(self, column: str) -> None:
        self.col = column

    def case(self, path: tuple[str, ...], branches: list[tuple[str, str, list[Any]]]) -> SQL:
        """``CASE json_type(...) WHEN t THEN expr ... ELSE 0 END``: missing paths give 0, not NULL,
        so that NOT stays an exact negation."""
        if not branches:
            return "0", []
        sql = [f"(CASE json_type({self.col}, ?)"]
        params: list[Any] = [_json_path(path)]
        for sql_type, then, then_params in branches:
            sql.append(f" WHEN '{sql_type}' THEN {then}")
            params.extend(then_params)
        sql.append(" ELSE 0 END)")
        return "".join(sql), params

    def in_branches(
        self, path: tuple[str, ...], operands: Sequence[Scalar], op: str = "="
    ) -> list[tuple[str, str, list[Any]]]:
        """CASE branches matching a stored value against any of ``operands`` with ``op``."""
        by_type: dict[str, list[Scalar]] = {}
        for v in operands:
            for sql_type in _scalar_sql_type(v):
                by_type.setdefault(sql_type, []).append(v)
        branches: list[tuple[str, str, list[Any]]] = []
        jpath = _json_path(path)
        for sql_type, values in by_type.items():
            if sql_type in ("null", "true", "false"):
                branches.append((sql_type, "1", []))
                continue
            extract = f"json_extract({self.col}, ?)"
            if len(values) == 1:
                branches.append((sql_type, f"{extract} {op} ?", [jpath, values[0]]))
            else:
                marks = ", ".join("?" * len(values))
                branches.append((sql_type, f"{extract} IN ({marks})", [jpath, *values]))
        return branches

    def element_match(self, v: Scalar) -> SQL:
        """Condition on json_each row ``_remem_je`` for an element ``$eq`` to ``v``."""
        types = ", ".join(f"'{t}'" for t in _scalar_sql_type(v))
        if v is None or isinstance(v, bool):
            return f"_remem_je.type IN ({types})", []
        return f"_remem_je.type IN ({types}) AND _remem_je.value = ?", [v]

    def leaf(self, node: Compare | In | Exists | Contains) -> SQL:
        match node:
            case Compare(path, op, v):
                if op == "$ne":
                    sql, params = self.case(path, self.in_branches(path, [v]))
                    return f"(NOT {sql})", params
                return self.case(path, self.in_branches(path, [v], _SQL_OPS[op]))
            case In(path, operands, negate):
                sql, params = self.case(path, self.in_branches(path, operands))
                return (f"(NOT {sql})" if negate else sql), params
            case Exists(path, exists):
                test = "IS NOT NULL" if exists else "IS NULL"
                return f"(json_type({self.col}, ?) {test})", [_json_path(path)]
            case Contains(path, v):
                cond, cond_params = self.element_match(v)
                # The column is captured in a derived table: written directly inside
                # json_each(...) a bare name like "value" would bind to json_each's own column.
                array = (
                    f"EXISTS (SELECT 1 FROM (SELECT {self.col} AS doc) AS _remem_d, "
                    f"json_each(_remem_d.doc, ?) AS _remem_je WHERE {cond})"
                )
                jpath = _json_path(path)
                branches = [("array", array, [jpath, *cond_params])]
                if isinstance(v, str):
                    branches.append(
                        ("text", f"instr(json_extract({self.col}, ?), ?) > 0", [jpath, v])
                    )
                return self.case(path, branches)
            case _:
                assert_never(node)

    def compile(self, node: FilterNode, negate: bool = False) -> SQL:
        """SQL for ``node`` (or its negation).

        SQLite's parser stack allows only ~100 nested tokens, so NOT is pushed down to the
        leaves (exact, as every expression is two-valued) and nested AND/AND or OR/OR are
        flattened: parentheses then nest once per AND/OR alternation.
        """
        while isinstance(node, Not):
            node, negate = node.child, not negate
        if not isinstance(node, And | Or):
            sql, params = self.leaf(node)
            return (f"(NOT {sql})" if negate else sql), params
        is_and = isinstance(node, And) != negate
        terms = self.flatten(node, negate, is_and)
        if not terms:
            return ("1" if is_and else "0"), []
        parts = [self.compile(child, neg) for child, neg in terms]
        if len(parts) == 1:
            return parts[0]
        joiner = " AND " if is_and else " OR "
        return (
            "(" + joiner.join(sql for sql, _ in parts) + ")",
            [p for _, params in parts for p in params],
        )

    def flatten(self, node: And | Or, negate: bool, is_and: bool) -> list[tuple[FilterNode, bool]]:
        """Children of ``node`` (with their negation), splicing in same-operator descendants."""
        terms: list[tuple[FilterNode, bool]] = []
        for child in node.children:
            neg = negate
            while isinstance(child, Not):
                child, neg = child.child, not neg
            if isinstance(child, And | Or) and (isinstance(child, And) != neg) == is_and:
                terms.extend(self.flatten(child, neg, is_and))
            else:
                terms.append((child, neg))
        return terms


def _depth(node: FilterNode) -> int:
    """Nesting of And/Or/Not nodes above the deepest leaf (a leaf is 0)."""
    match node:
        case And(children) | Or(children):
            return 1 + max((_depth(c) for c in children), default=0)
        case Not(child):
            return 1 + _depth(child)
        case _:
            return 0


def _check_depth(node: FilterNode) -> None:
    if _depth(node) > MAX_DEPTH:
        raise FilterError(_TOO_DEEP)


def to_sqlite(node: FilterNode | None, column: str = "value") -> tuple[str, list[Any]]:
    """Compile ``node`` to a SQLite boolean expression over the JSON text in ``column``.

    Returns ``(sql, params)``: ``sql`` uses ``?`` placeholders for every path and value, is
    parenthesised so it can be embedded in ``WHERE (...)``, and is never NULL. ``None`` gives
    ``("1", [])``. ``column`` is a trusted (optionally table-qualified) identifier; anything else
    raises :class:`~remem.errors.UsageError`.
    """
    if not _COLUMN_RE.fullmatch(column):
        raise UsageError(f"column must be a plain or table-qualified identifier, got {column!r}")
    if node is None:
        return "1", []
    _check_depth(node)
    return _SqliteCompiler(column).compile(node)
