"""Memories added per day, from the records themselves (their ``created_at``), so the
dashboard counts what any writer added: ``remem add`` and ``Memory.open`` on a local file as
well as the server (whose writes also keep the usage counters of :mod:`remem.usage`).

The store lists a scope newest ``updated_at`` first; a memory created in the window was
updated in it too (``updated_at >= created_at``), so reading that order until a page ends
before the window finds every one of them. At most ``max_read`` records are read: past that
the count is of the newest ones and says so (``complete`` is false).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from remem.memory.records import MemoryRecord
from remem.store import BaseStore
from remem.store.bad_records import parse_items
from remem.usage import BarChart, DayWindow, Series, stacked_bars
from remem.usage.plot import COLOURS
from remem.usage.records import day_of

__all__ = ["MAX_READ", "AddedReport", "added_chart", "added_per_day"]

#: records read at most for the count (newest first; at 100,000 memories one read of 1,000
#: costs about what the newest-first list does, 5,000 took two seconds)
MAX_READ = 1_000
_PAGE = 1_000
_MEMORIES = ("memories",)


@dataclass(frozen=True, slots=True)
class AddedReport:
    """Memories created on each day of ``window`` (``days``: ``(day, count)``, oldest
    first, every day of the window), their ``total``, and whether every record of the window
    was read (``complete``; else the newest ``read`` records were counted)."""

    window: DayWindow
    days: tuple[tuple[str, int], ...]
    total: int
    complete: bool
    read: int


def added_per_day(store: BaseStore, window: DayWindow, *,
                  max_read: int = MAX_READ) -> AddedReport:
    """Count the memories (current or not) under ``memories`` of ``store`` (a tenant's
    view) created on each day of ``window``, reading at most ``max_read`` records."""
    start, end = window.start(), window.end()
    counts: Counter[str] = Counter()
    read = 0
    complete = True
    while True:
        want = min(_PAGE, max_read - read)
        page = store.search(_MEMORIES, filter={"type": "memory"}, refresh_ttl=False,
                            limit=want, offset=read)
        read += len(page)
        for record in parse_items(page, MemoryRecord.from_item, family="memories"):
            if start <= record.created_at < end:
                counts[day_of(record.created_at)] += 1
        if len(page) < want:
            break  # the whole scope was read
        if not page or page[-1].updated_at.timestamp() < start:
            break  # the rest was last updated before the window: created before it too
        if read >= max_read:
            complete = False
            break
    days = tuple((day, counts.get(day, 0)) for day in window.days())
    return AddedReport(window, days, sum(n for _, n in days), complete, read)


def added_chart(report: AddedReport) -> BarChart:
    """The dashboard's plot of :func:`added_per_day`."""
    return stacked_bars([d for d, _ in report.days],
                        [Series("added", tuple(n for _, n in report.days), COLOURS[1])],
                        title="Memories added per day", y_label="memories")
