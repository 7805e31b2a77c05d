"""What a memory server did, per UTC day: chat model calls and tokens (recorded durably as
they happen, per tenant, operation label and model) and memories written, changed and
removed (counted from the history the memory layer keeps).

See docs/usage.md. :class:`RecordingChatModel` wraps a chat model so its calls are
recorded by a :class:`UsageRecorder`; :meth:`UsageRecorder.activity` reads the memory
changes per day; :func:`stacked_bars` lays out the dashboard's plots.
"""

from remem.usage.activity import (
    ActivityReport,
    DayActivity,
    activity_report,
    count_events,
    count_history,
)
from remem.usage.plot import BarChart, Series, stacked_bars
from remem.usage.recorder import RecordingChatModel, UsageRecorder
from remem.usage.records import (
    MAX_DAYS,
    DayUsage,
    DayWindow,
    UsageReport,
    UsageRow,
    day_of,
    day_window,
    parse_day,
)

__all__ = [
    "MAX_DAYS",
    "ActivityReport",
    "BarChart",
    "DayActivity",
    "DayUsage",
    "DayWindow",
    "RecordingChatModel",
    "Series",
    "UsageRecorder",
    "UsageReport",
    "UsageRow",
    "activity_report",
    "count_events",
    "count_history",
    "day_of",
    "day_window",
    "parse_day",
    "stacked_bars",
]
