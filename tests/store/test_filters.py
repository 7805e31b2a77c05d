"""Tests of remem.store.filters: parser errors, the Python predicate and the SQLite compiler.

Every semantic case runs through both backends and asserts they select the same documents.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.errors import FilterError, UsageError
from remem.store.filters import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_OPERANDS,
    MISSING,
    And,
    Compare,
    Contains,
    Exists,
    In,
    Not,
    Or,
    json_kind,
    parse_filter,
    resolve_path,
    to_predicate,
    to_sqlite,
)

# --------------------------------------------------------------------------- helpers


def _dumps(doc: Mapping[str, Any]) -> str:
    # The SQLite compiler expects keys written unescaped (see the module docstring).
    return json.dumps(doc, ensure_ascii=False)


def _connect(docs: Mapping[int, Mapping[str, Any]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    conn.executemany(
        "INSERT INTO items (id, value) VALUES (?, ?)", [(i, _dumps(d)) for i, d in docs.items()]
    )
    return conn


def _sql_ids(conn: sqlite3.Connection, flt: Mapping[str, Any] | None) -> set[int]:
    sql, params = to_sqlite(parse_filter(flt))
    rows = conn.execute(f"SELECT id, ({sql}) FROM items", params).fetchall()
    # The expression is two-valued: never NULL, so NOT is an exact negation.
    assert all(flag in (0, 1) for _, flag in rows), rows
    return {row_id for row_id, flag in rows if flag == 1}


def _py_ids(docs: Mapping[int, Mapping[str, Any]], flt: Mapping[str, Any] | None) -> set[int]:
    pred = to_predicate(parse_filter(flt))
    return {i for i, d in docs.items() if pred(d)}


def _both(docs: Mapping[int, Mapping[str, Any]], flt: Mapping[str, Any] | None) -> set[int]:
    """Matching ids, asserting the predicate and the SQL agree."""
    conn = _connect(docs)
    try:
        sql = _sql_ids(conn, flt)
    finally:
        conn.close()
    py = _py_ids(docs, flt)
    assert sql == py, f"filter {flt!r}: sql {sorted(sql)} != python {sorted(py)}"
    return py


DOCS: dict[int, dict[str, Any]] = {
    1: {"name": "alice", "age": 30, "score": 9.5, "active": True, "tags": ["a", "b"],
        "meta": {"city": "Paris", "zip": "75001", "geo": {"lat": 48.8}}},
    2: {"name": "bob", "age": "30", "active": False, "tags": [],
        "meta": {"city": "北京"}},
    3: {"name": "carol", "age": 25.0, "active": None,
        "tags": [["a"], {"a": 1}, 1, True, None], "meta": "Paris"},
    4: {"name": "😀 dave", "age": True, "tags": "a,b", "meta": None},
    5: {"age": 1, "count": 1.0, "tags": [1.0, 2, False], "meta": {"city": None}},
    6: {"name": "Émile", "age": -3, "tags": ["中文", "😀"], "meta": {"city": "paris"}},
    7: {"age": [30], "tags": {"0": "a", "a": "a"}, "name": ""},
}  # fmt: skip

ALL = set(DOCS)


def ids(flt: Mapping[str, Any] | None) -> set[int]:
    return _both(DOCS, flt)


# --------------------------------------------------------------------------- semantics


@pytest.mark.parametrize("flt", [None, {}, {"$and": []}])
def test_empty_filters_match_everything(flt: Mapping[str, Any] | None) -> None:
    assert ids(flt) == ALL


def test_none_and_empty_parse_to_none() -> None:
    assert parse_filter(None) is None
    assert parse_filter({}) is None
    assert to_sqlite(None) == ("1", [])
    assert to_predicate(None)({"anything": 1}) is True


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"age": 30}, {1}),  # "30" (string) and [30] (array) do not equal 30
        ({"age": 30.0}, {1}),  # numbers compare numerically
        ({"age": "30"}, {2}),
        ({"age": 1}, {5}),  # True is not 1
        ({"age": True}, {4}),
        ({"active": False}, {2}),  # False is not 0 / missing / null
        ({"active": None}, {3}),  # $eq null matches only a present null
        ({"count": 1}, {5}),
        ({"name": ""}, {7}),
        ({"name": {"$eq": "alice"}}, {1}),
        ({"meta.city": "Paris"}, {1}),  # nested; doc 3 has meta == "Paris" (no object)
        ({"meta.city": "北京"}, {2}),
        ({"meta.city": None}, {5}),
        ({"meta.geo.lat": 48.8}, {1}),
        ({"name": "😀 dave"}, {4}),
        ({"name": "Émile"}, {6}),
        ({"tags.0": "a"}, {7}),  # segments never index arrays
        ({"tags.a": "a"}, {7}),
        ({"nope": None}, set()),
    ],
)
def test_eq(flt: Mapping[str, Any], expected: set[int]) -> None:
    assert ids(flt) == expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"age": {"$ne": 30}}, ALL - {1}),
        ({"active": {"$ne": None}}, ALL - {3}),  # missing fields match $ne
        ({"active": {"$ne": True}}, ALL - {1}),
        ({"meta.city": {"$ne": "Paris"}}, ALL - {1}),
        ({"age": {"$ne": 1}}, ALL - {5}),
    ],
)
def test_ne(flt: Mapping[str, Any], expected: set[int]) -> None:
    assert ids(flt) == expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"age": {"$gt": 25}}, {1}),
        ({"age": {"$gte": 25}}, {1, 3}),
        ({"age": {"$lt": 25}}, {5, 6}),  # True (doc 4) is not a number
        ({"age": {"$lte": 1}}, {5, 6}),
        ({"age": {"$gt": 0.5}}, {1, 3, 5}),
        ({"age": {"$gt": "3"}}, {2}),  # only the string "30"; strings never order vs numbers
        ({"age": {"$gt": "4"}}, set()),
        ({"age": {"$gt": 1, "$lt": 30}}, {3}),
        ({"name": {"$gt": "b"}}, {2, 3, 4, 6}),  # code-point order: "É", "😀" sort last
        ({"name": {"$lt": "a"}}, {7}),
        ({"name": {"$gt": "Ω"}}, {4}),  # U+03A9 < U+1F600; "É" (U+00C9) < "Ω"
        ({"meta.city": {"$gt": "P"}}, {1, 2, 6}),
        ({"score": {"$lte": 9.5}}, {1}),
        ({"nope": {"$lt": 1}}, set()),
    ],
)
def test_ordering(flt: Mapping[str, Any], expected: set[int]) -> None:
    assert ids(flt) == expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"age": {"$in": [30, "30"]}}, {1, 2}),
        ({"age": {"$in": [True, None, 25]}}, {3, 4}),
        ({"active": {"$in": [None, False]}}, {2, 3}),
        ({"age": {"$in": []}}, set()),
        ({"age": {"$nin": []}}, ALL),
        ({"age": {"$nin": [30, 1]}}, ALL - {1, 5}),
        ({"active": {"$nin": [True, False]}}, ALL - {1, 2}),  # missing matches $nin
        ({"meta.city": {"$in": ("Paris", "北京")}}, {1, 2}),
        ({"age": {"$in": [1.0]}}, {5}),
    ],
)
def test_in_nin(flt: Mapping[str, Any], expected: set[int]) -> None:
    assert ids(flt) == expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"active": {"$exists": True}}, {1, 2, 3}),  # present null counts
        ({"active": {"$exists": False}}, {4, 5, 6, 7}),
        ({"meta.city": {"$exists": True}}, {1, 2, 5, 6}),
        ({"meta.geo.lat": {"$exists": True}}, {1}),
        ({"tags.0": {"$exists": True}}, {7}),
    ],
)
def test_exists(flt: Mapping[str, Any], expected: set[int]) -> None:
    assert ids(flt) == expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"tags": {"$contains": "a"}}, {1, 4}),  # doc 3's ["a"] is nested; doc 4 is a string
        ({"tags": {"$contains": 1}}, {3, 5}),  # 1 == 1.0; True (doc 3) is not 1
        ({"tags": {"$contains": True}}, {3}),
        ({"tags": {"$contains": False}}, {5}),
        ({"tags": {"$contains": None}}, {3}),
        ({"tags": {"$contains": 2.0}}, {5}),
        ({"tags": {"$contains": "中文"}}, {6}),
        ({"tags": {"$contains": "😀"}}, {6}),
        ({"tags": {"$contains": ","}}, {4}),  # substring of a string field
        ({"tags": {"$contains": ""}}, {4}),  # "" is in every string, but not in arrays
        ({"name": {"$contains": "li"}}, {1}),
        ({"name": {"$contains": "Li"}}, set()),  # case-sensitive
        ({"name": {"$contains": "😀"}}, {4}),
        ({"name": {"$contains": ""}}, ALL - {5}),
        ({"tags": {"$contains": "0"}}, set()),  # objects never contain (keys or values)
        ({"age": {"$contains": 30}}, {7}),  # number fields never contain; arrays do
        ({"age": {"$contains": "3"}}, {2}),
    ],
)
def test_contains(flt: Mapping[str, Any], expected: set[int]) -> None:
    assert ids(flt) == expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"$not": {"age": {"$gt": 25}}}, ALL - {1}),  # includes missing/non-number ages
        ({"$not": {"active": {"$exists": True}}}, {4, 5, 6, 7}),
        ({"$not": {}}, set()),
        ({"$or": []}, set()),
        ({"$and": []}, ALL),
        ({"$or": [{"age": 30}, {"age": "30"}]}, {1, 2}),
        ({"$or": [{"age": 30}, {"$not": {"name": {"$exists": True}}}]}, {1, 5}),
        ({"$and": [{"tags": {"$contains": "a"}}, {"$not": {"tags": "a,b"}}]}, {1}),
        ({"name": {"$exists": True}, "age": {"$lt": 30}}, {3, 6}),  # implicit AND
        (
            {"$or": [{"$and": [{"age": {"$gte": 25}}, {"age": {"$lte": 30}}]}, {"age": True}]},
            {1, 3, 4},
        ),
        ({"$not": {"$not": {"age": 30}}}, {1}),
        ({"$not": {"$or": [{"age": 30}, {"age": 1}]}}, ALL - {1, 5}),
        ({"$and": [{"$or": []}]}, set()),
        ({"$or": [{"$and": []}]}, ALL),
        ({"$or": [{}]}, ALL),
    ],
)
def test_logical(flt: Mapping[str, Any], expected: set[int]) -> None:
    assert ids(flt) == expected


def test_arrays_of_objects_are_not_traversed() -> None:
    docs: dict[int, dict[str, Any]] = {
        1: {"items": [{"sku": "x"}, {"sku": "y"}]},
        2: {"items": {"sku": "x"}},
    }
    assert _both(docs, {"items.sku": "x"}) == {2}
    assert _both(docs, {"items": {"$contains": "x"}}) == set()
    assert _both(docs, {"items.sku": {"$exists": False}}) == {1}


def test_large_numbers_and_extremes() -> None:
    docs: dict[int, dict[str, Any]] = {
        1: {"n": 2**63 - 1},
        2: {"n": -(2**63)},
        3: {"n": 1e300},
        4: {"n": -1e300},
        5: {"n": 5e-324},
        6: {"n": 2**53 + 1},
        7: {"n": -0.0},
    }
    assert _both(docs, {"n": 2**63 - 1}) == {1}
    assert _both(docs, {"n": -(2**63)}) == {2}
    assert _both(docs, {"n": {"$gt": 2**62}}) == {1, 3}
    assert _both(docs, {"n": {"$lt": -1e299}}) == {4}
    assert _both(docs, {"n": {"$lte": -(2**63)}}) == {2, 4}
    assert _both(docs, {"n": 2**53 + 1}) == {6}
    assert _both(docs, {"n": float(2**53)}) == set()  # int/float compare exactly
    assert _both(docs, {"n": 0}) == {7}
    assert _both(docs, {"n": {"$gt": 0}}) == {1, 3, 5, 6}


def test_stored_integers_beyond_64_bits_read_as_floats() -> None:
    # SQLite turns them into floats; the predicate mirrors that.
    docs: dict[int, dict[str, Any]] = {1: {"n": 2**63 + 1}, 2: {"n": 10**400}, 3: {"n": -(10**400)}}
    assert _both(docs, {"n": float(2**63)}) == {1}
    assert _both(docs, {"n": {"$gt": 2**63 - 1}}) == {1, 2}
    assert _both(docs, {"n": {"$lt": -1e308}}) == {3}


def test_strings_are_cut_at_nul() -> None:
    # SQLite's JSON functions stop at NUL; the predicate does the same.
    docs: dict[int, dict[str, Any]] = {1: {"s": "ab\x00cd"}, 2: {"s": "ab"}, 3: {"s": ["ab\x00cd"]}}
    assert _both(docs, {"s": "ab"}) == {1, 2}
    assert _both(docs, {"s": {"$contains": "cd"}}) == set()
    assert _both(docs, {"s": {"$contains": "ab"}}) == {1, 2, 3}
    assert _both(docs, {"s": {"$gt": "a"}}) == {1, 2}


def test_unicode_keys_and_odd_segments() -> None:
    docs: dict[int, dict[str, Any]] = {
        1: {"用户": {"名字": "张三"}},
        2: {"a b": {"c-d": 1, "e[0]": 2, "f'g": 3, "#": 4, "😀": 5}},
    }
    assert _both(docs, {"用户.名字": "张三"}) == {1}
    assert _both(docs, {"a b.c-d": 1}) == {2}
    assert _both(docs, {"a b.e[0]": 2}) == {2}
    assert _both(docs, {"a b.f'g": 3}) == {2}
    assert _both(docs, {"a b.#": 4}) == {2}
    assert _both(docs, {"a b.😀": 5}) == {2}


def test_sql_embeds_in_larger_queries() -> None:
    conn = _connect(DOCS)
    conn.execute("CREATE TABLE other (id INTEGER PRIMARY KEY, value TEXT)")
    conn.execute('INSERT INTO other VALUES (1, \'{"tags": ["zzz"]}\')')
    node = parse_filter({"tags": {"$contains": "a"}, "age": {"$ne": 1}})
    sql, params = to_sqlite(node, column="i.value")
    # A second table with a "value" column and extra placeholders around the filter.
    rows = conn.execute(
        f"SELECT i.id FROM items AS i JOIN other AS o ON o.id = ? "
        f"WHERE ({sql}) OR i.id = ? ORDER BY i.id",
        [1, *params, 6],
    ).fetchall()
    assert [r[0] for r in rows] == [1, 4, 6]
    sql, params = to_sqlite(parse_filter({"$or": [{"age": 30}, {"age": True}]}))
    rows = conn.execute(f"SELECT id FROM items WHERE NOT {sql} ORDER BY id", params).fetchall()
    assert [r[0] for r in rows] == [2, 3, 5, 6, 7]
    conn.close()


def test_sql_binds_user_data() -> None:
    evil = "x'); DROP TABLE items; --"
    sql, params = to_sqlite(parse_filter({"a.b": evil, "c": {"$contains": evil}}))
    assert evil not in sql and "DROP" not in sql and '"a"' not in sql
    assert evil in params and '$."a"."b"' in params and '$."c"' in params
    conn = _connect({1: {"a": {"b": evil}, "c": [evil]}})
    assert conn.execute(f"SELECT id FROM items WHERE {sql}", params).fetchall() == [(1,)]
    conn.close()


@pytest.mark.parametrize("column", ["value; --", "1col", "a.b.c.d", "", "va lue"])
def test_bad_column(column: str) -> None:
    with pytest.raises(UsageError, match="column"):
        to_sqlite(parse_filter({"a": 1}), column=column)


def test_ast_shapes() -> None:
    assert parse_filter({"a.b": 1}) == Compare(("a", "b"), "$eq", 1)
    assert parse_filter({"a": {"$gt": 1, "$lt": 5}}) == And(
        (Compare(("a",), "$gt", 1), Compare(("a",), "$lt", 5))
    )
    assert parse_filter({"a": {"$nin": [1, "x"]}}) == In(("a",), (1, "x"), negate=True)
    assert parse_filter({"$or": [{"a": {"$exists": False}}, {"b": {"$contains": "z"}}]}) == Or(
        (Exists(("a",), False), Contains(("b",), "z"))
    )
    assert parse_filter({"$not": {"a": None}}) == Not(Compare(("a",), "$eq", None))
    node = parse_filter({"a": 1})
    with pytest.raises(AttributeError):
        node.path = ("b",)  # type: ignore[misc, union-attr]


def test_resolve_path_and_json_kind() -> None:
    doc = {"a": {"b": None, "c": [1, {"d": 2}]}}
    assert resolve_path(doc, ("a", "b")) is None
    assert resolve_path(doc, ("a", "x")) is MISSING
    assert resolve_path(doc, ("a", "c", "0")) is MISSING
    assert resolve_path(doc, ("a", "b", "c")) is MISSING
    assert resolve_path(doc, ()) is doc
    assert repr(MISSING) == "MISSING"
    values: tuple[Any, ...] = (None, True, 0, 1.5, "", [], (), {})
    kinds = [json_kind(x) for x in values]
    assert kinds == ["null", "bool", "number", "number", "string", "array", "array", "object"]
    with pytest.raises(TypeError):
        json_kind(b"bytes")


def test_operands_are_normalised() -> None:
    import enum

    class Color(str, enum.Enum):  # noqa: UP042 - str() of this gives "Color.RED"
        RED = "red"

    class Level(enum.IntEnum):
        HIGH = 3

    node = parse_filter({"c": Color.RED, "n": {"$in": [Level.HIGH]}})
    assert node == And((Compare(("c",), "$eq", "red"), In(("n",), (3,))))
    assert type(node.children[0].operand) is str  # type: ignore[union-attr]
    assert _both({1: {"c": "red", "n": 3}}, {"c": Color.RED, "n": {"$in": [Level.HIGH]}}) == {1}


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("flt", "fragments"),
    [
        ([1], ["filter must be a dict", "list"]),
        ({1: 2}, ["keys must be strings", "int 1"]),
        ({"a": {1: 2}}, ["path 'a'", "keys must be strings"]),
        ({"": 1}, ["path ''", "non-empty"]),
        ({"a..b": 1}, ["path 'a..b'", "non-empty"]),
        ({"a.": 1}, ["path 'a.'", "non-empty"]),
        ({"a.$b": 1}, ["path 'a.$b'", "starts with '$'"]),
        ({'a"b': 1}, ["path 'a\"b'", "double quote"]),
        ({"a\\b": 1}, ["backslash"]),
        ({"a\nb": 1}, ["control character"]),
        ({"a\ud800": 1}, ["surrogate"]),
        ({"$foo": 1}, ["'$foo'", "$and, $or, $not"]),
        ({"$eq": 1}, ["'$eq'", "under a field", "{'field': {'$eq': value}}"]),
        ({"a": {"$foo": 1}}, ["'$foo'", "path 'a'", "$eq", "$contains"]),
        ({"a": {"$not": {"$gt": 1}}}, ["'$not'", "path 'a'", "top level"]),
        ({"a": {"$gt": 1, "b": 2}}, ["path 'a'", "'$gt'", "'a.b'"]),
        ({"a": {"b": 2}}, ["path 'a'", "object", "'a.b'"]),
        ({"a": {}}, ["path 'a'", "object", "dotted path"]),
        ({"a": [1, 2]}, ["path 'a'", "array", "$in", "$contains"]),
        ({"a": (1,)}, ["path 'a'", "$in"]),
        ({"a": b"x"}, ["'$eq'", "path 'a'", "JSON scalar", "bytes"]),
        ({"a": {"$eq": [1]}}, ["'$eq'", "path 'a'", "JSON scalar", "list [1]"]),
        ({"a": {"$ne": {"x": 1}}}, ["'$ne'", "path 'a'", "JSON scalar"]),
        (
            {"age": {"$gt": True}},
            ["'$gt'", "path 'age'", "number or a string", "bool True", "compare booleans with $eq"],
        ),
        ({"age": {"$lte": None}}, ["'$lte'", "path 'age'", "number or a string", "None"]),
        ({"age": {"$lt": [1]}}, ["'$lt'", "path 'age'", "number or a string"]),
        ({"x": {"$gte": float("nan")}}, ["'$gte'", "path 'x'", "finite"]),
        ({"x": float("inf")}, ["'$eq'", "path 'x'", "finite"]),
        ({"x": {"$in": [float("-inf")]}}, ["'$in'", "path 'x'", "finite"]),
        ({"x": 2**63}, ["'$eq'", "path 'x'", "64 bits"]),
        ({"x": {"$ne": -(2**63) - 1}}, ["'$ne'", "path 'x'", "64 bits"]),
        ({"x": "\ud800"}, ["'$eq'", "path 'x'", "surrogate"]),
        ({"x": {"$contains": "a\x00b"}}, ["'$contains'", "path 'x'", "NUL"]),
        ({"x": {"$in": "abc"}}, ["'$in'", "path 'x'", "list of scalars", "str 'abc'"]),
        ({"x": {"$nin": [[1]]}}, ["'$nin'", "path 'x'", "JSON scalar", "list [1]"]),
        ({"x": {"$in": {1, 2}}}, ["'$in'", "path 'x'", "list of scalars", "set"]),
        ({"x": {"$exists": 1}}, ["'$exists'", "path 'x'", "true or false", "int 1"]),
        ({"x": {"$exists": None}}, ["'$exists'", "path 'x'", "true or false"]),
        ({"x": {"$contains": [1]}}, ["'$contains'", "path 'x'", "JSON scalar"]),
        ({"$and": {"a": 1}}, ["'$and'", "list of filter dicts", "dict"]),
        ({"$or": [{"a": 1}, 2]}, ["'$or'", "element 1", "int 2"]),
        ({"$or": "a"}, ["'$or'", "list of filter dicts"]),
        ({"$not": [{"a": 1}]}, ["'$not'", "filter dict", "list"]),
        ({"$and": [{"a": {"$gt": False}}]}, ["'$gt'", "path 'a'", "bool False"]),
        ({"$not": {"$or": [{"a.b..c": 1}]}}, ["path 'a.b..c'"]),
    ],
)
def test_errors(flt: Any, fragments: list[str]) -> None:
    with pytest.raises(FilterError) as info:
        parse_filter(flt)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert isinstance(info.value, ValueError)


def test_error_message_format() -> None:
    with pytest.raises(FilterError) as info:
        parse_filter({"age": {"$gt": True}})
    assert str(info.value) == (
        "filter operator '$gt' at path 'age': operand must be a number or a string, "
        "got bool True; compare booleans with $eq"
    )


def _nested(depth: int, make: Any) -> dict[str, Any]:
    flt: dict[str, Any] = {"a": {"$contains": 1}, "b": {"$contains": "x"}}  # depth 1 (implicit AND)
    for level in range(depth - 1):
        flt = make(flt, level)
    return flt


@pytest.mark.parametrize(
    "make",
    [
        # NOT and an implicit AND, alternating: NOT(AND(NOT(AND(...)), c), ...)
        lambda f, i: {**f, "c": {"$exists": False}} if i % 2 else {"$not": f},
        lambda f, i: {"$or" if i % 2 else "$and": [f, {"c": {"$ne": 1}}]},  # AND/OR alternating
        lambda f, i: {"$not": f},
        lambda f, i: {"$and": [f]},
    ],
)
def test_nesting_limit(make: Any) -> None:
    docs: dict[int, dict[str, Any]] = {1: {"a": [1], "b": "xy"}, 2: {"a": 2}, 3: {}}
    # MAX_DEPTH levels still compile to SQL that SQLite's parser accepts.
    _both(docs, _nested(MAX_DEPTH, make))
    with pytest.raises(FilterError, match="deeper than 32 levels"):
        parse_filter(_nested(MAX_DEPTH + 1, make))


def test_nesting_limit_guards_deep_input() -> None:
    flt: dict[str, Any] = {"a": 1}
    for _ in range(5000):  # would exhaust Python's recursion limit without the early check
        flt = {"$not": flt}
    with pytest.raises(FilterError, match="deeper than"):
        parse_filter(flt)
    node: Any = Compare(("a",), "$eq", 1)
    for _ in range(MAX_DEPTH + 1):
        node = Not(node)
    with pytest.raises(FilterError, match="deeper than"):
        to_sqlite(node)


def _alternating_wide(levels: int, width: int) -> dict[str, Any]:
    """AND/OR alternating ``levels`` deep, each level with ``width`` sibling conditions."""
    flt: dict[str, Any] = {"a": {"$contains": "x"}}
    for level in range(levels - 1):
        siblings = [{f"k{level}_{i}": {"$ne": i}} for i in range(width)]
        flt = {"$or" if level % 2 else "$and": [flt, *siblings]}
    return flt


def _conditions(flt: Mapping[str, Any]) -> int:
    node = parse_filter(flt)
    count, stack = 0, [node]
    while stack:
        current = stack.pop()
        count += 1
        if isinstance(current, And | Or):
            stack.extend(current.children)
        elif isinstance(current, Not):
            stack.append(current.child)
    return count


@pytest.mark.parametrize("shape", [
    lambda n: {"$or": [{"a": {"$contains": "x"}} for _ in range(n - 1)]},
    lambda n: {f"k{i}": {"$ne": i} for i in range(n - 1)},
    lambda n: {"$and": [{"$or": [{"a": i}, {"b": {"$ne": i}}]} for i in range(n // 3)]},
    lambda n: {"$or": [{} for _ in range(n - 1)]},
], ids=["or-chain", "wide-dict", "and-of-ors", "or-of-empty"])
def test_condition_limit(shape: Any) -> None:
    # the largest filter allowed still compiles to SQL SQLite's parser accepts (its expression
    # depth limit is 1,000); one condition more is refused before any SQL, naming the limit
    docs: dict[int, dict[str, Any]] = {1: {"a": ["x"], "b": 1}, 2: {"a": 2}, 3: {}}
    biggest = shape(MAX_CONDITIONS)
    assert MAX_CONDITIONS - 2 <= _conditions(biggest) <= MAX_CONDITIONS
    _both(docs, biggest)
    with pytest.raises(FilterError, match=f"conditions .*the limit is {MAX_CONDITIONS}"):
        parse_filter(shape(MAX_CONDITIONS + 3))


def test_condition_limit_with_the_deepest_nesting() -> None:
    # depth and width at once: 32 alternating levels of 5 conditions each
    flt = _alternating_wide(MAX_DEPTH, 5)
    assert _conditions(flt) <= MAX_CONDITIONS
    _both({1: {"a": ["x"]}, 2: {"a": "y"}}, flt)


def test_operand_limit() -> None:
    docs: dict[int, dict[str, Any]] = {1: {"a": 1.0}, 2: {"a": 7}, 3: {"a": "1"}}
    numbers = list(range(MAX_OPERANDS - 1))
    assert _both(docs, {"a": {"$in": numbers}, "b": {"$exists": False}}) == {1, 2}
    with pytest.raises(FilterError, match=f"{MAX_OPERANDS + 1} operand values.*the limit is "
                                          f"{MAX_OPERANDS}"):
        parse_filter({"a": {"$in": list(range(MAX_OPERANDS))}, "b": 1})


# --------------------------------------------------------------------------- property test

KEYS = ["a", "b", "c", "中"]
# A small shared pool of values, drawn most of the time by both documents and filters so that
# filters hit: equal numbers of both types, bool/number and string/number look-alikes.
_POOL = st.sampled_from(
    [None, True, False, 0, 1, 1.0, -1, 2, 0.5, -0.0, "", "a", "b", "ab", "A", "1", "中文", "😀"]
)
_STRINGS = st.one_of(
    st.text(alphabet="ab\x00é中😀", max_size=3),
    st.text(max_size=4),
)
_NUMBERS = st.one_of(
    st.sampled_from([2.5, 1e300, -1e-300, 2**53 + 1, 2.0**53, 2**63 - 1, -(2**63)]),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)
_STORED_SCALARS = st.one_of(
    _POOL,
    _POOL,
    _POOL,
    _POOL,
    _NUMBERS,
    _STRINGS,
    st.integers(min_value=2**63, max_value=2**70),  # SQLite reads these as floats
)
_VALUES = st.recursive(
    _STORED_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    ),
    max_leaves=6,
)
# Mostly flat values (scalars, arrays of scalars, small objects) so that filters hit often.
_FIELD_VALUES = st.one_of(
    _STORED_SCALARS,
    st.lists(_STORED_SCALARS, max_size=4),
    st.dictionaries(st.sampled_from(KEYS), _STORED_SCALARS, max_size=3),
    _VALUES,
)
# Every key present about half the time, so both $exists outcomes are common.
DOCUMENTS = st.fixed_dictionaries({}, optional={k: _FIELD_VALUES for k in KEYS})

_OPERAND_STRINGS = _STRINGS.filter(lambda s: "\x00" not in s)
_OPERANDS = st.one_of(_POOL, _POOL, _POOL, _POOL, _NUMBERS, _OPERAND_STRINGS)
_ORDERED = st.one_of(_POOL, _POOL, _POOL, _POOL, _NUMBERS, _OPERAND_STRINGS).filter(
    lambda x: x is not None and not isinstance(x, bool)
)
_PATHS = st.one_of(
    st.sampled_from(KEYS),
    st.sampled_from(KEYS),
    st.lists(st.sampled_from(KEYS), min_size=1, max_size=3).map(".".join),
)

_OP_SPECS = st.one_of(
    st.tuples(st.sampled_from(["$eq", "$ne", "$contains"]), _OPERANDS),
    st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), _ORDERED),
    st.tuples(st.sampled_from(["$in", "$nin"]), st.lists(_OPERANDS, max_size=4)),
    st.tuples(st.just("$exists"), st.booleans()),
)
_FIELD_SPECS = st.one_of(
    _OP_SPECS.map(lambda spec: dict([spec])),
    _OP_SPECS.map(lambda spec: dict([spec])),
    st.lists(_OP_SPECS, min_size=1, max_size=2).map(dict),
    _OPERANDS,  # shorthand equality
)
_LEAF_FILTERS = st.one_of(
    st.dictionaries(_PATHS, _FIELD_SPECS, min_size=1, max_size=1),
    st.dictionaries(_PATHS, _FIELD_SPECS, min_size=1, max_size=2),
)
FILTERS = st.recursive(
    _LEAF_FILTERS,
    lambda inner: st.one_of(
        st.builds(lambda xs: {"$and": xs}, st.lists(inner, max_size=3)),
        st.builds(lambda xs: {"$or": xs}, st.lists(inner, max_size=3)),
        st.builds(lambda x: {"$not": x}, inner),
        st.builds(lambda x, y: {**x, **y}, inner, _LEAF_FILTERS),
    ),
    max_leaves=6,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(DOCUMENTS, min_size=1, max_size=8), flt=FILTERS)
def test_sql_and_predicate_agree(docs: list[dict[str, Any]], flt: dict[str, Any]) -> None:
    by_id = dict(enumerate(docs, start=1))
    _both(by_id, flt)
    # The predicate also holds on what SQLite stores (a JSON round trip).
    pred = to_predicate(parse_filter(flt))
    for doc in docs:
        assert pred(doc) == pred(json.loads(_dumps(doc)))


@settings(max_examples=200, deadline=None)
@given(doc=DOCUMENTS, path=_PATHS)
def test_exists_matches_resolve_path(doc: dict[str, Any], path: str) -> None:
    present = resolve_path(doc, tuple(path.split("."))) is not MISSING
    assert _both({1: doc}, {path: {"$exists": True}}) == ({1} if present else set())


def test_float_literals_round_trip() -> None:
    # The compiler relies on SQLite parsing Python's float repr back to the same double.
    conn = sqlite3.connect(":memory:")
    for x in (5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 1 / 3, 1e23):
        (got,) = conn.execute("SELECT json_extract(?, '$.x')", (json.dumps({"x": x}),)).fetchone()
        assert got == x and not math.isinf(got)
    conn.close()
