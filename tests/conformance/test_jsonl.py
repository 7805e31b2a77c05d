"""Export from every backend, import into every backend: items, timestamps and TTLs survive."""

from __future__ import annotations

import io

import pytest

from remem.errors import ImportFormatError
from remem.store import InMemoryStore, SQLiteStore, export_jsonl, import_jsonl
from tests.conformance.conftest import Factory
from tests.conftest import FakeClock


@pytest.mark.parametrize("target_kind", ["memory", "sqlite"])
def test_round_trip(make_store: Factory, clock: FakeClock, target_kind: str) -> None:
    source = make_store()
    source.put(("u", "1"), "a", {"text": "北京 tea", "n": [1, {"x": None}]},
               event_at=1_600_000_000.5)
    clock.advance(5)
    source.put(("u", "2"), "b", {"v": True}, ttl=100)
    source.put(("u", "2"), "gone", {"v": 0}, ttl=1)
    clock.advance(2)
    buffer = io.StringIO()
    assert export_jsonl(source, buffer) == 2
    target = InMemoryStore(clock=clock) if target_kind == "memory" else \
        SQLiteStore(":memory:", clock=clock)
    assert import_jsonl(target, buffer.getvalue().splitlines()) == 2
    for ns, key in [(("u", "1"), "a"), (("u", "2"), "b")]:
        before = source.get(ns, key, refresh_ttl=False)
        after = target.get(ns, key, refresh_ttl=False)
        assert before == after
    clock.advance(99)
    assert target.get(("u", "2"), "b") is None  # the TTL came along
    again = io.StringIO()
    export_jsonl(target, again)
    assert [line for line in again.getvalue().splitlines() if '"a"' in line] == \
        [line for line in buffer.getvalue().splitlines() if '"a"' in line]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "line 2: not valid JSON"),
        ('{"namespace": ["a"], "key": "k"}', "line 2: missing field(s) value"),
        ('{"namespace": ["a", ""], "key": "k", "value": {}}', "line 2: namespace label 1"),
        ('{"namespace": ["a"], "key": "k", "value": {}, "created_at": "yesterday"}',
         "line 2: created_at"),
    ],
)
def test_bad_lines_name_the_line(make_store: Factory, line: str, fragment: str) -> None:
    good = '{"namespace": ["a"], "key": "ok", "value": {}}'
    with pytest.raises(ImportFormatError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        import_jsonl(make_store(), [good, line])
