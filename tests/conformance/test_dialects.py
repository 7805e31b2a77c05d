"""The two SQL dialects, I/O-free: every statement binds exactly as many parameters as it
has placeholders, and both dialects bind the same values for the same operation (only the
filter's own parameters differ, since each engine compiles it its own way). The statements
themselves run against real databases in the rest of the conformance suite."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from remem.store.namespace_codec import decode_ns, encode_ns, prefix_range
from remem.store.postgres.sql import PostgresDialect
from remem.store.sql_dialect import Statement, StoreDialect
from remem.store.sqlite_sql import SQLiteDialect
from remem.store.types import CountOp, ListNamespacesOp, SearchOp

DIALECTS: tuple[StoreDialect, ...] = (SQLiteDialect(), PostgresDialect('"remem".'))

# what a namespace label may be: no control character, no lone surrogate, not the wildcard
_labels = st.text(st.characters(blacklist_categories=("Cs", "Cc")),
                  min_size=1, max_size=6).filter(lambda label: label != "*")
_prefixes = st.lists(_labels, max_size=3).map(tuple)
_filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"n": st.integers(-5, 5)}),
    st.fixed_dictionaries({"tag": st.fixed_dictionaries({"$in": st.lists(  # no NUL: refused
        st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=3),
        min_size=1, max_size=3)})}),
    st.fixed_dictionaries({"$or": st.just([{"a": 1}, {"b": {"$exists": False}}])}),
)
_times = st.one_of(st.none(), st.floats(0, 2e9))


@st.composite
def _searches(draw: st.DrawFn) -> SearchOp:
    return SearchOp(draw(_prefixes), draw(_filters), None, draw(st.integers(1, 50)),
                    draw(st.integers(0, 50)), None, "auto", None, draw(_times), draw(_times))


def _bound(dialect: StoreDialect, statement: Statement) -> list[Any]:
    text, params = statement
    assert text.count(dialect.p) == len(params), text
    return params


def _statements(dialect: StoreDialect, op: SearchOp, ids: list[int]) -> list[Statement]:
    now = 1.7e9
    where, params = dialect.items_where(op, now)
    scope, scope_params = dialect.scope_where(op, now)
    terms = ["tea", "茶"]
    return [
        dialect.items_where(op, now), (scope, scope_params),
        *(dialect.listing(op, now, path=path) for path in ("leaf", "scope", "newest")),
        dialect.count(CountOp(op.namespace_prefix, None, op.event_after, op.event_before), now),
        dialect.table_size(), dialect.scope_size(op.namespace_prefix or ("a",), 200),
        dialect.items_by_id(ids), dialect.addresses(ids, where, params),
        dialect.event_times(ids), dialect.refresh_ttls(ids, now),
        dialect.keyword_postings(terms, where, params, items_first=False),
        dialect.keyword_postings(terms, where, params, items_first=True),
        dialect.doc_freq(terms, scope, scope_params), *dialect.corpus_stats(op, now),
        dialect.get_item(op.namespace_prefix or ("a",), "k", now),
        dialect.current_version(("a",), "k", now), dialect.delete_item(("a",), "k"),
        dialect.ttl_of(("a",), "k"), dialect.items_page(op.namespace_prefix, ("", ""), now),
        dialect.namespaces(ListNamespacesOp(op.namespace_prefix or None), now),
        dialect.any_vector(), dialect.vector_models(),
    ]


@given(op=_searches(), ids=st.lists(st.integers(1, 10**6), max_size=5))
def test_every_statement_binds_one_value_per_placeholder(op: SearchOp, ids: list[int]) -> None:
    for dialect in DIALECTS:
        for statement in _statements(dialect, op, ids):
            _bound(dialect, statement)


@given(op=_searches())
def test_both_dialects_bind_the_same_values_outside_the_filter(op: SearchOp) -> None:
    plain = SearchOp(op.namespace_prefix, None, None, op.limit, op.offset, None, "auto", None,
                     op.event_after, op.event_before)
    sqlite, postgres = DIALECTS
    for build in (lambda d: d.items_where(plain, 5.0),
                  *(lambda d, path=path: d.listing(plain, 5.0, path=path)
                    for path in ("leaf", "scope", "newest")),
                  lambda d: d.scope_where(plain, 5.0),
                  lambda d: d.items_page(plain.namespace_prefix, ("a\x1f", "k"), 5.0)):
        assert _bound(sqlite, build(sqlite)) == _bound(postgres, build(postgres))


@given(namespace=st.lists(_labels, min_size=1, max_size=4).map(tuple), other=_prefixes)
def test_a_prefix_range_holds_exactly_the_namespaces_under_it(
        namespace: tuple[str, ...], other: tuple[str, ...]) -> None:
    assert decode_ns(encode_ns(namespace)) == namespace
    bounds = prefix_range(other)
    inside = bounds is None or bounds[0] <= encode_ns(namespace) < bounds[1]
    assert inside == (namespace[:len(other)] == other)
