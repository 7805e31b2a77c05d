"""Memories written, changed and removed per UTC day, counted from the history events the
memory layer already keeps (:mod:`remem.memory.history`: one event per change, written in
the same batch as the change, so the counts cannot drift from the memories).

``add`` events count as *written*; ``update`` and ``restore`` (an undo) as *changed*;
``invalidate`` (superseded or soft-deleted) and ``delete`` as *removed*. A supersession is
one removal and one write. Counting reads the window's events (a filter on their time), up
to ``max_events``; past that the report says it is incomplete rather than guess.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from remem.memory.records import HISTORY_LABEL, RESERVED_LABEL
from remem.usage.records import DayWindow, day_of

__all__ = ["ActivityReport", "DayActivity", "count_events", "memory_activity"]

#: history ops and the series they count in
SERIES = {"add": "written", "update": "changed", "restore": "changed",
          "invalidate": "removed", "delete": "removed"}
#: events read per page
PAGE = 1000


@dataclass(frozen=True, slots=True)
class DayActivity:
    """Memories written, changed and removed on one UTC day."""

    day: str
    written: int = 0
    changed: int = 0
    removed: int = 0

    @property
    def total(self) -> int:
        """Every change of the day."""
        return self.written + self.changed + self.removed


@dataclass(frozen=True, slots=True)
class ActivityReport:
    """The days of a window; ``complete`` is false when more than ``max_events`` events
    fell in it (the days then count only the newest ones read)."""

    window: DayWindow
    days: tuple[DayActivity, ...]
    events: int
    complete: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"since": self.window.since.isoformat(), "until": self.window.until.isoformat(),
                "events": self.events, "complete": self.complete,
                "days": [{"day": d.day, "written": d.written, "changed": d.changed,
                          "removed": d.removed} for d in self.days]}


def count_events(events: Iterable[tuple[float, str]], window: DayWindow) -> list[DayActivity]:
    """Per-day counts of ``(at, op)`` history events: every day of the window, oldest
    first; events outside it or of an unknown op are left out."""
    counts: dict[str, dict[str, int]] = {day: {} for day in window.days()}
    for at, op in events:
        series = SERIES.get(op)
        day = counts.get(day_of(at))
        if series is not None and day is not None:
            day[series] = day.get(series, 0) + 1
    return [DayActivity(day, **c) for day, c in counts.items()]


def memory_activity(store: Any, window: DayWindow, *,
                    max_events: int = 20_000) -> ActivityReport:
    """Count the history events of ``store`` (a tenant's view on a server, or a whole
    store) in ``window``, reading at most ``max_events`` of them."""
    prefix = (RESERVED_LABEL, HISTORY_LABEL)
    when = {"at": {"$gte": window.start(), "$lt": window.end()}}
    events: list[tuple[float, str]] = []
    complete = True
    while True:
        page = store.search(prefix, filter=when, limit=min(PAGE, max_events + 1 - len(events)),
                            offset=len(events))
        events += [(float(item.value["at"]), str(item.value.get("op", ""))) for item in page]
        if len(events) > max_events:
            events, complete = events[:max_events], False
            break
        if len(page) < PAGE:
            break
    return ActivityReport(window, tuple(count_events(events, window)), len(events), complete)
