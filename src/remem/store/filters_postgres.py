"""Filters compiled for PostgreSQL: a ``jsonb`` shadow of each value and SQL over it.

The filter language, its semantics and why the shadow is written the way it is are in
:mod:`remem.store.filters` (the parser, the Python predicate and the SQLite compiler); this
module holds the PostgreSQL half, so each dialect's compiler sits beside the other.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Final, assert_never

from remem.errors import UsageError
from remem.store.filters import (
    _COLUMN_RE,
    _INT64_MAX,
    _INT64_MIN,
    _SQL_OPS,
    SQL,
    And,
    Compare,
    Contains,
    Exists,
    FilterNode,
    In,
    Not,
    Or,
    Scalar,
    _as_sqlite,
    _check_depth,
    _show,
)

__all__ = ["postgres_document", "to_postgres"]

_PG_KIND: Final[dict[str, str]] = {
    "null": "null", "bool": "boolean", "number": "number", "string": "string",
}  # fmt: skip
#: a stored integer beyond the float range reads as +-inf (as in SQLite); 1e400 sorts above
#: every finite filter operand and equals none of them, which is all the filters can observe
_PG_INF: Final = "1e400"


def _pg_number(x: int | float) -> str:
    if isinstance(x, int) and _INT64_MIN <= x <= _INT64_MAX:
        return str(x)
    value = _as_sqlite(x) if isinstance(x, int) else x
    if math.isinf(value):
        return _PG_INF if value > 0 else "-" + _PG_INF
    return str(Decimal(value))  # exact: every float is a finite decimal


def _pg_json(node: Any, out: list[str]) -> None:
    if node is None or isinstance(node, bool):
        out.append("null" if node is None else "true" if node else "false")
    elif isinstance(node, int | float):
        out.append(_pg_number(node))
    elif isinstance(node, str):
        out.append(json.dumps(_as_sqlite(node), ensure_ascii=False))
    elif isinstance(node, Mapping):
        out.append("{")
        first = True
        for key, child in node.items():
            # keys a path segment cannot spell are unreachable: leave them out (jsonb rejects
            # a NUL in a key, and SQLite never matches an escaped key either)
            if '"' in key or "\\" in key or any(ord(ch) < 0x20 for ch in key):
                continue
            out.append("" if first else ",")
            first = False
            out.append(json.dumps(key, ensure_ascii=False) + ":")
            _pg_json(child, out)
        out.append("}")
    elif isinstance(node, list | tuple):
        out.append("[")
        for i, child in enumerate(node):
            if i:
                out.append(",")
            _pg_json(child, out)
        out.append("]")
    else:
        raise TypeError(f"not a JSON value: {_show(node)}")


def postgres_document(value: Mapping[str, Any]) -> str:
    """The JSON text of the ``jsonb`` shadow that :func:`to_postgres` filters (see the module
    docstring): what a filter can observe of ``value``, in a form jsonb compares exactly."""
    out: list[str] = []
    _pg_json(value, out)
    return "".join(out)


def _pg_operand(v: Scalar) -> str:
    out: list[str] = []
    _pg_json(v, out)
    return "".join(out)


class _PostgresCompiler:
    def __init__(self, column: str) -> None:
        self.col = column

    def value(self, path: tuple[str, ...]) -> SQL:
        """The jsonb at ``path``, NULL when a step is missing or not an object."""
        return self.col + "".join(" -> %s::text" for _ in path), list(path)

    def equal_any(self, path: tuple[str, ...], operands: Sequence[Scalar]) -> SQL:
        if not operands:
            return "false", []
        value, params = self.value(path)
        marks = ", ".join("%s::jsonb" for _ in operands)
        # jsonb equality: same kind and equal value, numbers compared as numeric
        return (f"coalesce(({value}) IN ({marks}), false)",
                [*params, *(_pg_operand(v) for v in operands)])

    def leaf(self, node: Compare | In | Exists | Contains) -> SQL:
        match node:
            case Compare(path, op, v):
                if op in ("$eq", "$ne"):
                    sql, params = self.equal_any(path, [v])
                    return (f"(NOT {sql})" if op == "$ne" else sql), params
                value, params = self.value(path)
                sql_op = _SQL_OPS[op]
                if isinstance(v, str):
                    test = (f"jsonb_typeof({value}) = 'string' AND "
                            f"({value} #>> '{{}}') COLLATE \"C\" {sql_op} %s::text")
                    return f"coalesce(({test}), false)", [*params, *params, v]
                assert isinstance(v, int | float)  # the parser allows numbers and strings only
                test = (f"jsonb_typeof({value}) = 'number' AND "
                        f"({value})::numeric {sql_op} %s::numeric")
                return f"coalesce(({test}), false)", [*params, *params, _pg_number(v)]
            case In(path, operands, negate):
                sql, params = self.equal_any(path, operands)
                return (f"(NOT {sql})" if negate else sql), params
            case Exists(path, exists):
                value, params = self.value(path)
                return f"(({value}) IS {'NOT ' if exists else ''}NULL)", params
            case Contains(path, v):
                value, params = self.value(path)
                array = (f"(jsonb_typeof({value}) = 'array' AND EXISTS (SELECT 1 FROM "
                         f"jsonb_array_elements({value}) AS _remem_e(e) WHERE e = %s::jsonb))")
                array_params = [*params, *params, _pg_operand(v)]
                if not isinstance(v, str):
                    return f"coalesce({array}, false)", array_params
                text = (f"(jsonb_typeof({value}) = 'string' AND "
                        f"strpos({value} #>> '{{}}', %s::text) > 0)")
                return (f"coalesce({array} OR {text}, false)",
                        [*array_params, *params, *params, v])
            case _:
                assert_never(node)

    def compile(self, node: FilterNode) -> SQL:
        match node:
            case Not(child):
                sql, params = self.compile(child)
                return f"(NOT {sql})", params
            case And(children) | Or(children):
                if not children:
                    return ("true" if isinstance(node, And) else "false"), []
                parts = [self.compile(c) for c in children]
                joiner = " AND " if isinstance(node, And) else " OR "
                return ("(" + joiner.join(sql for sql, _ in parts) + ")",
                        [p for _, params in parts for p in params])
            case _:
                return self.leaf(node)


def to_postgres(node: FilterNode | None, column: str = "doc") -> tuple[str, list[Any]]:
    """Compile ``node`` to a PostgreSQL boolean expression over the ``jsonb`` column ``column``,
    which must hold :func:`postgres_document` of each value.

    Returns ``(sql, params)`` with psycopg ``%s`` placeholders for every path label and value;
    the expression is parenthesised and never NULL (so NOT is an exact negation). ``None`` gives
    ``("true", [])``. ``column`` is a trusted (optionally table-qualified) identifier.
    """
    if not _COLUMN_RE.fullmatch(column):
        raise UsageError(f"column must be a plain or table-qualified identifier, got {column!r}")
    if node is None:
        return "true", []
    _check_depth(node)
    return _PostgresCompiler(column).compile(node)
