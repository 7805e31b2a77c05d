"""The inspector's pure page values: score bars, word diffs, a memory's state at a time,
the checkpoint tree, form times."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.memory.history import HistoryEvent
from remem.memory.records import MemoryRecord
from remem.memory.results import MemoryHit
from remem.store.types import SignalScore
from remem.threads.types import Checkpoint
from remem.ui.views import checkpoint_tree, hit_bars, parse_time, state_at, word_diff


def _hit(score: float | None, relevance: float | None = None,
         parts: dict[str, float] | None = None, **signals: tuple[int, float]) -> MemoryHit:
    record = MemoryRecord(id="m", namespace=("memories",), content="x")
    return MemoryHit(record, score, {k: SignalScore(*v) for k, v in signals.items()},
                     relevance, parts or {})


def test_bars_draw_relevance_and_its_parts_on_a_fixed_scale() -> None:
    hits = [_hit(0.9, 0.6, {"keyword": 0.7, "vector": 0.5}, keyword=(1, 8.0),
                 vector=(2, 0.5), recency=(1, 0.25)),
            _hit(0.3, 0.2, {"keyword": 0.4, "vector": 0.0}, keyword=(2, 2.0)),
            _hit(0.1, 0.0, {"keyword": 0.0, "vector": 0.0}, vector=(1, -0.2))]
    rows = hit_bars(hits)
    widths = [{bar.signal: bar.width for bar in row} for row in rows]
    # each bar is its own value out of 1, never scaled to the page's best
    assert widths[0] == {"keyword": 70, "vector": 50, "recency": 25, "relevance": 60}
    assert widths[1] == {"keyword": 40, "vector": 0, "recency": 0, "relevance": 20}
    assert widths[2]["vector"] == 0  # negative cosine: an empty bar, never a negative one
    assert rows[1][1].score is None and rows[1][1].rank is None  # vector did not rank it
    assert [bar.label for bar in rows[0]] == ["0.700 · BM25 8.000 · #1", "0.500 · #2",
                                              "0.250 · #1", "0.600"]
    assert rows[2][1].label == "0.000 · cosine -0.200 · #1"
    assert rows[1][2].label == "—"  # recency did not weigh this hit
    # the same hit draws the same bars on any page, whatever its neighbours
    assert hit_bars(hits[1:2]) == [[bar for bar in rows[1] if bar.signal != "recency"]]
    assert hit_bars([_hit(None)]) == [[]]  # no query: nothing to explain


@given(st.lists(st.text(alphabet="ab \n", max_size=12), min_size=2, max_size=2))
def test_a_word_diff_rebuilds_both_versions(texts: list[str]) -> None:
    old, new = texts
    parts = word_diff(old, new)
    assert "".join(p.text for p in parts if p.op != "ins") == old
    assert "".join(p.text for p in parts if p.op != "del") == new


def _event(at: float, op: str, before: str | None, after: str | None) -> HistoryEvent:
    def value(text: str | None, status: str = "current") -> dict[str, object] | None:
        return None if text is None else {"content": text, "status": status}
    after_value = value(after, "invalid" if op == "invalidate" else "current")
    return HistoryEvent(id=f"e{at}", memory_id="m", namespace=("memories",), op=op,  # type: ignore[arg-type]
                        before=value(before), after=after_value, at=at)


def test_state_at_reads_the_history() -> None:
    events = [_event(10, "add", None, "red"), _event(20, "update", "red", "blue"),
              _event(30, "invalidate", "blue", "blue"), _event(40, "delete", "blue", None)]
    assert state_at(events, 5) == (None, "not yet recorded")
    assert state_at(events, 15) == ("red", "current")
    assert state_at(events, 20) == ("blue", "current")
    assert state_at(events, 35) == ("blue", "invalid")
    assert state_at(events, 45) == ("blue", "deleted")


def _cp(cp_id: str, parent: str | None, at: float) -> Checkpoint:
    return Checkpoint(cp_id, "t", parent, 0, {}, {}, at)


def test_checkpoint_tree_indents_branches_and_marks_forks() -> None:
    tree = checkpoint_tree([_cp("c3b", "c2", 4), _cp("c3", "c2", 3), _cp("c2", "c1", 2),
                            _cp("c1", "elsewhere", 1)])
    assert [(n.checkpoint.id, n.depth, n.fork) for n in tree] == [
        ("c1", 0, True), ("c2", 0, False), ("c3", 0, False), ("c3b", 1, False)]


def test_form_times() -> None:
    assert parse_time("") is None and parse_time(None) is None
    assert parse_time("1700000000.5") == 1700000000.5
    assert parse_time("2023-11-14T22:13:20") == 1700000000.0  # naive: UTC
    assert parse_time("2023-11-14T23:13:20+01:00") == 1700000000.0
    for bad in ("yesterday", "nan", "inf"):
        with pytest.raises(ValueError, match="as_of"):
            parse_time(bad)


def test_graph_picture_places_rings_and_fits_the_view() -> None:
    from remem.graph.types import Fact, FactHit
    from remem.ui.graph_view import picture

    def hit(fact_id: int, subject: tuple[int, str], obj: tuple[int, str], ended: bool,
            distance: int) -> FactHit:
        fact = Fact(fact_id, subject[0], "knows", obj[0], None, f"{subject[1]} knows {obj[1]}",
                    0.0, 5.0 if ended else None, 0.0, 5.0 if ended else None, ())
        return FactHit(fact, 1.0, {}, distance, (), subject[1], obj[1])

    # nearest first, as Graph.expand answers
    drawn = picture(1, "Ada", [hit(10, (1, "Ada"), (2, "Bo"), False, 1),
                               hit(12, (1, "Ada"), (4, "Di"), False, 1),
                               hit(11, (2, "Bo"), (3, "Cy"), True, 2)], as_of=10.0,
                    max_nodes=3)
    assert {n.name: n.depth for n in drawn.nodes} == {"Ada": 0, "Bo": 1, "Di": 1}
    assert drawn.left_out == 1  # Cy would have been a fourth node
    assert [e.holds for e in drawn.edges] == [True, True]
    centre = next(n for n in drawn.nodes if n.depth == 0)
    assert (centre.x, centre.y) == (0.0, 0.0)
    left, top, width, height = map(float, drawn.view_box.split())
    assert all(left < n.x < left + width and top < n.y < top + height for n in drawn.nodes)
    ended = picture(1, "Ada", [hit(11, (1, "Ada"), (3, "Cy"), True, 1)], as_of=10.0)
    assert [e.holds for e in ended.edges] == [False]
