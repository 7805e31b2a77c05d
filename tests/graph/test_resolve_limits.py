"""Entity name keys stay within what every backend's index holds."""

from __future__ import annotations

from remem.graph.resolve import name_key
from remem.retrieval.tokenize import MAX_TERM


def test_a_long_name_gets_a_bounded_key_that_still_meets_itself() -> None:
    long_name = "Ёж" * 2_000  # 8,000 bytes in UTF-8: past PostgreSQL's btree row size
    key = name_key(long_name)
    assert len(key) == MAX_TERM and key == name_key(long_name.upper())
    assert key != name_key(long_name[:-1] + "x")  # same beginning, another name
    assert name_key("Dr. Ada  Lovelace!") == "dr ada lovelace"  # ordinary names unchanged
