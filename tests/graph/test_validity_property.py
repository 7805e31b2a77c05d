"""The bi-temporal rule in SQL (what every read filters with) agrees with the rule in Python
(:func:`remem.graph.types.holds`) on random facts and times."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from remem.graph import SQLiteGraphStorage
from remem.graph.rows import GraphRows
from remem.graph.types import holds
from remem.retrieval.tokenize import DefaultTokenizer

_time = st.integers(0, 20).map(float)
_maybe = st.none() | _time
_fact = st.tuples(_maybe, _maybe, _time, _maybe)


@settings(max_examples=60, deadline=None)
@given(facts=st.lists(_fact, min_size=1, max_size=8), as_of=_maybe, known_at=_maybe)
def test_sql_rule_is_the_python_rule(facts: list[tuple[float | None, float | None, float,
                                                       float | None]],
                                     as_of: float | None, known_at: float | None) -> None:
    storage = SQLiteGraphStorage(":memory:")
    try:
        with storage.transaction(True, "p") as tx:
            rows = GraphRows(tx, "p", DefaultTokenizer())
            ada = rows.insert_entity("Ada", "person", [], 0.0, None)
            ids = [rows.insert_fact(ada.id, "p", None, None, f"fact {i}", valid, invalid,
                                    recorded, expired, 1, None).id
                   for i, (valid, invalid, recorded, expired) in enumerate(facts)]
            found = set(rows.facts(as_of=as_of, known_at=known_at))
        expected = {i for i, (valid, invalid, recorded, expired) in zip(ids, facts, strict=True)
                    if holds(valid, invalid, recorded, expired, as_of=as_of, known_at=known_at)}
        assert found == expected
    finally:
        storage.close()
