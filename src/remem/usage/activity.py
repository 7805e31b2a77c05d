"""Memories written, changed and removed per UTC day.

Every memory change writes a history event (:mod:`remem.memory.history`), and each commit
tells the store's observer the ``(at, op)`` of the events it wrote; the observer
(:mod:`remem.background.access`) adds them, batched, to ``remem_activity`` rows per
tenant, day and op, beside the jobs. Reading a window is then one small query
(:func:`activity_report` over :meth:`~remem.usage.UsageRecorder.activity`), however many
memories there are. :func:`count_history` counts the same from the history itself (events
written before these counters existed, or to check them), reading up to ``max_events``.

``add`` events count as *written*; ``update`` and ``restore`` (an undo) as *changed*;
``invalidate`` (superseded or soft-deleted) and ``delete`` as *removed*. A supersession is
one removal and one write.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from remem.memory.history import history_events
from remem.memory.records import HISTORY_LABEL, RESERVED_LABEL
from remem.usage.records import DayWindow, day_of

__all__ = ["ActivityReport", "DayActivity", "activity_report", "count_events",
           "count_history"]

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


def _days(counted: Iterable[tuple[str, str, int]], window: DayWindow) -> list[DayActivity]:
    counts: dict[str, dict[str, int]] = {day: {} for day in window.days()}
    for day, op, n in counted:
        series = SERIES.get(op)
        found = counts.get(day)
        if series is not None and found is not None:
            found[series] = found.get(series, 0) + n
    return [DayActivity(day, **c) for day, c in counts.items()]


def count_events(events: Iterable[tuple[float, str]], window: DayWindow) -> list[DayActivity]:
    """Per-day counts of ``(at, op)`` history events: every day of the window, oldest
    first; events outside it or of an unknown op are left out."""
    return _days(((day_of(at), op, 1) for at, op in events), window)


def activity_report(rows: Iterable[tuple[str, str, str, int]],
                    window: DayWindow) -> ActivityReport:
    """The report of ``(tenant, day, op, changes)`` counter rows (tenants summed)."""
    rows = list(rows)
    days = _days(((day, op, n) for _, day, op, n in rows), window)
    return ActivityReport(window, tuple(days), sum(d.total for d in days), True)


def count_history(store: Any, window: DayWindow, *,
                  max_events: int = 20_000) -> ActivityReport:
    """Count the history events of ``store`` (a tenant's view on a server, or a whole
    store) in ``window`` from the history itself, reading at most ``max_events`` of them
    (slow on a busy store: the dashboard reads the counters instead)."""
    prefix = (RESERVED_LABEL, HISTORY_LABEL)
    when = {"at": {"$gte": window.start(), "$lt": window.end()}}
    events: list[tuple[float, str]] = []
    complete = True
    read = 0
    while True:
        page = store.search(prefix, filter=when, limit=min(PAGE, max_events + 1 - read),
                            offset=read)
        read += len(page)
        # an event that does not parse is left out (reported), never fatal to the count
        events += [(e.at, e.op) for e in history_events(page)]
        if read > max_events:
            events, complete = events[:max_events], False
            break
        if len(page) < PAGE:
            break
    return ActivityReport(window, tuple(count_events(events, window)), len(events), complete)
