"""The PostgreSQL filter compiler selects exactly what the Python predicate selects.

Documents go through :func:`postgres_document` into a jsonb column, as the store writes them;
random filters from ``tests/store/test_filters.py`` run through :func:`to_postgres` and
:func:`to_predicate` and must agree on every document.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.errors import UsageError
from remem.store.filters import parse_filter, to_predicate
from remem.store.filters_postgres import postgres_document, to_postgres
from tests.store.test_filters import DOCUMENTS, FILTERS

_tables = itertools.count()


@pytest.fixture(scope="module")
def conn(pg_database: str) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(pg_database, autocommit=True) as connection:
        yield connection


def _pg_ids(conn: Any, docs: Mapping[int, Mapping[str, Any]], flt: Mapping[str, Any] | None
            ) -> set[int]:
    table = f"docs_{next(_tables)}"
    conn.execute(f"CREATE TEMP TABLE {table} (id int PRIMARY KEY, doc jsonb NOT NULL)")
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} (id, doc) VALUES (%s, %s::jsonb)",
                        [(i, postgres_document(d)) for i, d in docs.items()])
    text, params = to_postgres(parse_filter(flt))
    rows = conn.execute(f"SELECT id, ({text}) FROM {table}", params).fetchall()
    conn.execute(f"DROP TABLE {table}")
    assert all(flag in (True, False) for _, flag in rows), rows  # never NULL
    return {i for i, flag in rows if flag}


def _both(conn: Any, docs: Mapping[int, Mapping[str, Any]], flt: Mapping[str, Any] | None
          ) -> set[int]:
    predicate = to_predicate(parse_filter(flt))
    expected = {i for i, d in docs.items() if predicate(d)}
    assert _pg_ids(conn, docs, flt) == expected, flt
    return expected


@settings(max_examples=250, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(docs=st.lists(DOCUMENTS, min_size=1, max_size=8), flt=FILTERS)
def test_postgres_and_predicate_agree(conn: Any, docs: list[dict[str, Any]],
                                      flt: dict[str, Any]) -> None:
    _both(conn, dict(enumerate(docs, start=1)), flt)


def test_numbers_compare_exactly(conn: Any) -> None:
    # the issue LangGraph users hit (#7684): numeric filters that differ on Postgres
    docs = {1: {"n": 2**53 + 1}, 2: {"n": 2.0**53}, 3: {"n": 0.1}, 4: {"n": 1}, 5: {"n": True},
            6: {"n": "1"}, 7: {"n": 4611686018427388928.0}, 8: {"n": 1e300}}
    assert _both(conn, docs, {"n": 2.0**53}) == {2}
    assert _both(conn, docs, {"n": {"$gt": 2**53}}) == {1, 7, 8}
    assert _both(conn, docs, {"n": 1.0}) == {4}  # 1 == 1.0, but not true, not "1"
    assert _both(conn, docs, {"n": {"$lt": 0.1}}) == {4} - {4}
    assert _both(conn, docs, {"n": {"$lte": 0.1}}) == {3}
    # a float whose shortest decimal is not its exact value still orders exactly
    assert _both(conn, docs, {"n": {"$gt": 4611686018427388950}}) == {8}


def test_strings_paths_and_odd_documents(conn: Any) -> None:
    docs = {1: {"s": "a\x00b"}, 2: {"s": "a"}, 3: {"s": ["a", "x"]}, 4: {"s": {"0": "a"}},
            5: {"s": [{"0": "a"}]}, 6: {"s": "é"}, 7: {"s": "😀"}, 8: {'q"uote': 1}}
    assert _both(conn, docs, {"s": "a"}) == {1, 2}  # stored strings are cut at NUL
    assert _both(conn, docs, {"s": {"$contains": "a"}}) == {1, 2, 3}
    assert _both(conn, docs, {"s.0": "a"}) == {4}  # paths never index arrays
    assert _both(conn, docs, {"s": {"$gt": "z"}}) == {6, 7}  # code point order
    assert _both(conn, docs, {"s": {"$exists": False}}) == {8}


def test_sql_is_parameterised_and_column_checked() -> None:
    evil = "x'); DROP TABLE items; --"
    text, params = to_postgres(parse_filter({"a.b": evil}), column="i.doc")
    assert evil not in text and "i.doc" in text and params.count("a") == 1
    assert to_postgres(None) == ("true", [])
    with pytest.raises(UsageError):
        to_postgres(parse_filter({"a": 1}), column="doc; drop")
