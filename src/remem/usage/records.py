"""Usage records as values (no I/O): UTC days, the window a report covers, and the rows
of chat model calls and tokens with their totals per day, operation and model."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from remem.errors import InvalidInputError
from remem.llm.base import Usage

__all__ = ["MAX_DAYS", "DayUsage", "DayWindow", "UsageReport", "UsageRow", "day_of",
           "day_window", "parse_day"]

#: the longest window a report covers (a year and a day: a leap year fits)
MAX_DAYS = 367


def day_of(timestamp: float) -> str:
    """The UTC day of a Unix time, as ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(timestamp, UTC).date().isoformat()


def parse_day(field: str, value: date | str) -> date:
    """``value`` as a date (a ``YYYY-MM-DD`` string, a date, or an aware datetime's UTC
    day); :class:`~remem.errors.InvalidInputError` naming ``field`` otherwise."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).date() if value.tzinfo else value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value.strip())
    except (ValueError, AttributeError):
        raise InvalidInputError(
            f"{field} must be a UTC day written YYYY-MM-DD, got {value!r}; e.g. "
            f"{field}=2026-01-31") from None


@dataclass(frozen=True, slots=True)
class DayWindow:
    """The UTC days ``since`` to ``until``, both included."""

    since: date
    until: date

    def days(self) -> list[str]:
        """Every day of the window, oldest first (``YYYY-MM-DD``)."""
        count = (self.until - self.since).days + 1
        return [(self.since + timedelta(days=n)).isoformat() for n in range(count)]

    def start(self) -> float:
        """The Unix time the window starts at (``since`` at 00:00 UTC)."""
        return datetime.combine(self.since, datetime.min.time(), UTC).timestamp()

    def end(self) -> float:
        """The Unix time the window ends at (the day after ``until``, 00:00 UTC; excluded)."""
        return self.start() + 86400.0 * len(self.days())


def day_window(since: date | str | None = None, until: date | str | None = None, *,
               days: int = 30, today: date | None = None) -> DayWindow:
    """The window from ``since`` to ``until`` (dates or ``YYYY-MM-DD``; UTC). ``until``
    defaults to today, ``since`` to ``days`` days ending at ``until``. Raises
    :class:`~remem.errors.InvalidInputError` naming the field for a malformed date, an
    ``until`` before ``since`` or a window longer than :data:`MAX_DAYS` days."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise InvalidInputError(f"days must be an integer from 1 to {MAX_DAYS}, got {days!r}")
    end = (parse_day("until", until) if until is not None
           else today or datetime.now(UTC).date())
    # (never before the first representable day: until=0001-01-01 is a short window)
    start = (parse_day("since", since) if since is not None
             else end - timedelta(days=min(days - 1, (end - date.min).days)))
    if start > end:
        raise InvalidInputError(f"since ({start.isoformat()}) is after until "
                                f"({end.isoformat()}); give since <= until")
    if (end - start).days + 1 > MAX_DAYS:
        raise InvalidInputError(
            f"since..until covers {(end - start).days + 1} days, more than {MAX_DAYS}; ask "
            "for a shorter window (several requests for longer spans)")
    return DayWindow(start, end)


@dataclass(frozen=True, slots=True)
class UsageRow:
    """Chat model calls and tokens of one tenant, UTC day, operation label and model."""

    day: str
    tenant: str
    operation: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int

    @property
    def usage(self) -> Usage:
        """The row's figures as a :class:`~remem.llm.Usage`."""
        return Usage(self.calls, self.input_tokens, self.output_tokens)

    @classmethod
    def of_storage(cls, row: tuple[str, str, str, str, int, int, int]) -> UsageRow:
        """A row as the jobs storage returns it (tenant first)."""
        tenant, day, operation, model, calls, inputs, outputs = row
        return cls(day, tenant, operation, model, calls, inputs, outputs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"day": self.day, "operation": self.operation, "model": self.model,
                "calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens}


@dataclass(frozen=True, slots=True)
class DayUsage:
    """One UTC day's calls and tokens (zeros on a day without calls)."""

    day: str
    calls: int
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


def _totals(rows: Iterable[UsageRow], key: str) -> dict[str, Usage]:
    found: dict[str, Usage] = {}
    for row in rows:
        name = getattr(row, key)
        found[name] = found.get(name, Usage()) + row.usage
    return dict(sorted(found.items()))


@dataclass(frozen=True, slots=True)
class UsageReport:
    """The usage rows of a window, with totals per day, operation and model."""

    window: DayWindow
    rows: tuple[UsageRow, ...]

    def by_day(self) -> list[DayUsage]:
        """Every day of the window, oldest first, days without calls included."""
        per_day = _totals(self.rows, "day")
        return [DayUsage(day, u.calls, u.input_tokens, u.output_tokens)
                for day in self.window.days() for u in (per_day.get(day, Usage()),)]

    def by_operation(self) -> dict[str, Usage]:
        """Totals per operation label (``extract``, ``summarize``...), sorted by label."""
        return _totals(self.rows, "operation")

    def by_model(self) -> dict[str, Usage]:
        """Totals per model name."""
        return _totals(self.rows, "model")

    def total(self) -> Usage:
        """The window's total."""
        return Usage.total(row.usage for row in self.rows)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the window, totals, days, operations, models and rows."""
        def usage(u: Usage) -> dict[str, int]:
            return {"calls": u.calls, "input_tokens": u.input_tokens,
                    "output_tokens": u.output_tokens}

        return {
            "since": self.window.since.isoformat(), "until": self.window.until.isoformat(),
            "total": usage(self.total()),
            "days": [{"day": d.day, "calls": d.calls, "input_tokens": d.input_tokens,
                      "output_tokens": d.output_tokens} for d in self.by_day()],
            "by_operation": {k: usage(v) for k, v in self.by_operation().items()},
            "by_model": {k: usage(v) for k, v in self.by_model().items()},
            "rows": [row.to_dict() for row in self.rows],
        }
